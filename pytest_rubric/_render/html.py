"""The HTML report: one self-contained file, inline CSS and SVG, no script, nothing fetched
(what it holds, in the order :func:`render_html` writes it: docs/guides/outputs.md).

Every text from a rubric or a response goes through :func:`html.escape`, and a
Content-Security-Policy forbids scripts and any fetch, so a hostile response is shown as
text and can do nothing.
"""

from __future__ import annotations

import hashlib
import html
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from .._grade.style import StyleThresholds
from .._report.gates import CHANGE_HEADINGS, DELTA_HEADER, CaseChange, GateReport, before_and_after
from .._report.leaderboard import Pair, SubjectRow, breakdown_tables, interval_text
from .._report.leaderboard import columns as board_columns
from .._report.report import SessionReport, Severity
from .._results import CaseResult, CriterionResult
from .table import score_text, tally, trace_lines


def e(text: object) -> str:
    return html.escape(str(text), quote=True)


def tr(cells: Sequence[str], tag: str = "td") -> str:
    return "<tr>" + "".join(f"<{tag}>{e(cell)}</{tag}>" for cell in cells) + "</tr>"


def anchor(nodeid: str) -> str:
    """The page id of an answer (a node id holds characters an id cannot)."""
    return "answer-" + hashlib.sha1(nodeid.encode("utf-8", "replace")).hexdigest()[:12]


# Answers shown in full, failing ones first; past this many, each further failing answer is
# one line and passing ones are counted (the JSON holds every one): 200,000 answers in full
# made a 169 MB page that took Chromium minutes to open.
FULL = 5000


class _Filters:
    """The page's filters by subject, status and flag, in CSS alone (the CSP allows no
    script): a radio group per filter, and rules that hide each answer the checked radios
    exclude, and each case left with none."""

    def __init__(self, results: Sequence[CaseResult], subjects: Sequence[str]) -> None:
        self.subject = {s: i for i, s in enumerate(subjects)}
        self.flag = {f: i for i, f in enumerate(sorted({f for r in results for f in r.flags}))}
        self.counts = Counter(key for r in results for key in self.keys(r))
        statuses = [(s, s) for s in ("failed", "error", "skipped", "passed") if self.counts[s]]
        groups = [
            ("subject", "fs", [(f"s{i}", s) for s, i in self.subject.items()]),
            ("status", "ft", statuses),
            ("flag", "ff", [(f"f{i}", f) for f, i in self.flag.items()]),
        ]
        # Each filter's label and radios (id, class, label), "all" (no class) first.
        self.filters: list[tuple[str, list[tuple[str, str | None, str]]]] = [
            (label, [(f"{name}-all", None, "all"), *((f"{name}-{k}", k, t) for k, t in options)])
            for label, name, options in groups
            if options
        ]

    def keys(self, r: CaseResult) -> list[str]:
        """The classes of an answer: its subject's, its status and its flags'."""
        return [f"s{self.subject[r.subject]}", r.status, *(f"f{self.flag[f]}" for f in r.flags)]

    def classes(self, r: CaseResult) -> str:
        return " ".join(["a", *self.keys(r)])

    def form(self, listing: str) -> str:
        """``listing`` under the filters. The radios come first, siblings of the labels and of
        the listing, so each rule is a cheap ``:checked ~`` (a ``body:has()`` rule per answer
        took Chromium 11 s on 40,000 answers)."""
        inputs = "".join(
            f'<input type="radio" name="{ident.partition("-")[0]}" id="{ident}"'
            + (">" if key else " checked>")
            for _, radios in self.filters
            for ident, key, _ in radios
        )
        rows = "".join(
            f"<p><b>{label}</b> "
            + "".join(
                f'<label for="{ident}">{e(text)}'
                + (f" <small>{self.counts[key]}</small>" if key else "")
                + "</label>"
                for ident, key, text in radios
            )
            + "</p>"
            for label, radios in self.filters
        )
        return (
            f'<div class="answers">{inputs}<div class="filters">{rows}</div>'
            f'<div class="list">{listing}</div></div>'
        )

    def css(self) -> str:
        rules = [
            f"#{i}:checked~.filters label[for={i}]{{background:#333;color:#fff;border-color:#333}}"
            f"#{i}:focus-visible~.filters label[for={i}]{{outline:2px solid #0072B2}}"
            for _, radios in self.filters
            for i, _, _ in radios
        ]
        groups = [[(i, key) for i, key, _ in radios if key] for _, radios in self.filters]
        rules += [
            f"#{ident}:checked~.list .a:not(.{key}){{display:none}}"
            for group in groups
            for ident, key in group
        ]
        # A case whose every answer a filter hides goes too: one rule per combination, the
        # radios in page order so each ``~`` reaches the next.
        combos: list[list[tuple[str, str]]] = [[]]
        for group in groups:
            combos = [[*c, *choice] for c in combos for choice in ([], *([o] for o in group))]
        for combo in combos[1:]:  # the first is the empty one: no radio checked
            checked = "~".join(f"#{ident}:checked" for ident, _ in combo)
            wanted = "".join(f".{key}" for _, key in combo)
            rules.append(f"{checked}~.list .case:not(:has(.a{wanted})){{display:none}}")
        return "\n".join(rules)


def _requirement(c: CriterionResult) -> str:
    """A judged criterion's requirement under its id (``c1`` alone does not say what was asked)."""
    return (
        ""
        if c.requirement is None
        else f'<br><small class="requirement">{e(c.requirement)}</small>'
    )


def _answer(r: CaseResult, classes: str) -> str:
    trace = trace_lines(r.trace)  # the tool calls and context ids, after the response
    rows = "".join(
        f'<tr class="{"ok" if c.ok else c.verdict.value.lower() if c.verdict.value in ("ERROR", "SKIPPED") else "wrong"}">'
        f"<td>{e(c.id)}{_requirement(c)}</td>"
        f"<td>{e(c.type)}{' (style)' if c.axis == 'style' else ''}</td>"
        f"<td>{e(c.verdict.value)}{' unstable' if c.unstable else ''}</td><td>{c.weight:g}</td>"
        f"<td>{e(c.reason)}</td></tr>"
        for c in r.criteria
    )
    flags = "".join(f'<span class="flag">{e(f)}</span>' for f in r.flags)
    rate = ""
    if r.n_samples > 1:
        rate = (
            f", pass rate {interval_text(r.pass_rate, r.pass_rate_ci)} over {r.n_samples} "
            f"samples (pass_when {e(r.pass_when)})"
        )
    return (
        f'<details class="{classes}" id="{anchor(r.nodeid)}"><summary><span class="status">{r.status.upper()}</span> '
        f"{e(r.subject)}: {e(score_text(r))}{rate} {flags}</summary>"
        f'<table class="criteria"><thead><tr><th>criterion</th><th>type</th><th>verdict</th>'
        f"<th>weight</th><th>reason</th></tr></thead><tbody>{rows}</tbody></table>"
        f"<pre>{e(r.response)}</pre>"
        + (f'<pre class="trace">{e(chr(10).join(trace))}</pre>' if trace else "")
        + "</details>"
    )


def _line(r: CaseResult, classes: str) -> str:
    """A failing answer past the ones in full: its node id, score and what went wrong."""
    missed = ", ".join(c.id for c in r.criteria if not c.ok)
    return (
        f'<li class="{classes}" id="{anchor(r.nodeid)}"><code>{e(r.nodeid)}</code> '
        f"{r.status} {r.score:.2f} <small>{e(missed)}</small></li>"
    )


def _section(results: Sequence[CaseResult], filters: _Filters) -> str:
    by_case: dict[tuple[str, str], list[CaseResult]] = defaultdict(list)
    for r in results:
        by_case[(r.suite, r.case)].append(r)
    return "".join(
        f'<section class="case"><h3>{e(case)} <small>{e(suite)}</small></h3>'
        + (f'<p class="question">{e(answers[0].question)}</p>' if answers[0].question else "")
        + "".join(_answer(a, filters.classes(a)) for a in answers)
        + "</section>"
        for (suite, case), answers in by_case.items()
    )


def _listed_or_counted(
    name: str, group: Sequence[CaseResult], listed: bool, subjects: Sequence[str], filters: _Filters
) -> list[str]:
    """The ``passing`` (or ``undecided``) answers under their heading: in full when
    ``listed``, else counted per subject."""
    if not group:
        return []
    heading = f'<h3 id="{name}">{len(group)} {name}</h3>'
    if listed:
        return [heading, _section(group, filters)]
    counts = Counter(r.subject for r in group)
    body = "".join(tr([s, str(counts[s])]) for s in subjects if counts[s])
    return [
        f"{heading}<p>Counted, not listed: this run has more than {FULL} answers; the JSON "
        f"report (<code>--rubric-json</code>) holds each.</p><table><thead>"
        f"{tr(['subject', name], 'th')}</thead><tbody>{body}</tbody></table>"
    ]


def answers(report: SessionReport, subjects: Sequence[str]) -> tuple[str, str, set[str]]:
    """Every answer, failing ones first, then those left undecided without the judge (see
    _grade.bounds), with the filters; the filters' CSS; and the node ids given an id on the
    page (what a link may point at). See :data:`FULL` for many answers."""
    results = report.results
    filters = _Filters(results, subjects)
    failing = report.failing  # what the terminal and the Markdown count as failing
    undecided = report.undecided
    passing = [r for r in results if r.passed]
    full_failing, lines = failing[:FULL], failing[FULL:]
    listed = len(results) <= FULL
    parts = []
    if full_failing:
        parts += [f'<h3 id="failing">{len(failing)} failing</h3>', _section(full_failing, filters)]
    if lines:
        parts.append(
            f"<p>{len(lines)} more failing answers, one line each (node id, status, score, "
            "the criteria that went wrong); the JSON report holds each in full.</p>"
            f'<ul class="lines">{"".join(_line(r, filters.classes(r)) for r in lines)}</ul>'
        )
    parts += _listed_or_counted("undecided", undecided, listed, subjects, filters)
    parts += _listed_or_counted("passing", passing, listed, subjects, filters)
    shown = {r.nodeid for r in (*full_failing, *lines, *(undecided + passing if listed else ()))}
    page = (
        '<h2 id="answers">Answers</h2><p>Failing answers first. Filter by subject, status and '
        "flag:</p>" + filters.form("".join(parts))
    )
    return page, filters.css(), shown


# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
_SHAPES = ("circle", "square", "diamond")
_W, _H = 640, 420
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 16, 16, 48


def style_of(answers: CaseResult | SubjectRow) -> float:
    """The plot's x: how an answer (or a subject's answers) reads, the mean of fluency and
    confidence."""
    return (answers.fluency + answers.confidence) / 2


def _x(value: float) -> float:
    return _LEFT + value * (_W - _LEFT - _RIGHT)


def _y(value: float) -> float:
    return _TOP + (1 - value) * (_H - _TOP - _BOTTOM)


def _frame(ident: str, title: str) -> str:
    """A plot's opening: the SVG element, its title, and the plotting area's frame."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H}" width="{_W}" '
        f'height="{_H}" role="img" aria-labelledby="{ident}"><title id="{ident}">{title}</title>'
        f'<rect x="{_LEFT}" y="{_TOP}" width="{_W - _LEFT - _RIGHT}" height="{_H - _TOP - _BOTTOM}" '
        'fill="#fff" stroke="#888"/>'
    )


def _marker(shape: str, x: float, y: float, colour: str, title: str, size: float = 1.0) -> str:
    """One mark; ``size`` scales it (a spot holding many answers is drawn larger)."""
    tip = f"<title>{e(title)}</title>"
    if shape == "square":
        half = 4.5 * size
        return (
            f'<rect x="{x - half:.1f}" y="{y - half:.1f}" width="{2 * half:g}" '
            f'height="{2 * half:g}" fill="{colour}" fill-opacity="0.85">{tip}</rect>'
        )
    if shape == "diamond":
        d = 6 * size
        points = f"{x:.1f},{y - d:.1f} {x + d:.1f},{y:.1f} {x:.1f},{y + d:.1f} {x - d:.1f},{y:.1f}"
        return f'<polygon points="{points}" fill="{colour}" fill-opacity="0.85">{tip}</polygon>'
    return (
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{5 * size:.3g}" fill="{colour}" '
        f'fill-opacity="0.85">{tip}</circle>'
    )


def _interval_bar(row: SubjectRow, colour: str, level: float) -> str:
    """A subject's correctness interval: a vertical bar with caps at its mean style."""
    if row.correctness_ci is None:
        return ""
    lo, hi = row.correctness_ci
    x = _x(style_of(row))
    title = f"{row.subject}: correctness {interval_text(row.correctness, row.correctness_ci)}"
    title += f" ({level:g} interval over {row.n_cases} cases)"
    return (
        f'<g class="interval" stroke="{colour}" stroke-width="2.5"><title>{e(title)}</title>'
        f'<line x1="{x:.1f}" y1="{_y(lo):.1f}" x2="{x:.1f}" y2="{_y(hi):.1f}"/>'
        f'<line x1="{x - 6:.1f}" y1="{_y(lo):.1f}" x2="{x + 6:.1f}" y2="{_y(lo):.1f}"/>'
        f'<line x1="{x - 6:.1f}" y1="{_y(hi):.1f}" x2="{x + 6:.1f}" y2="{_y(hi):.1f}"/>'
        f'<line x1="{x - 10:.1f}" y1="{_y(row.correctness):.1f}" x2="{x + 10:.1f}" '
        f'y2="{_y(row.correctness):.1f}" stroke-width="4"/></g>'
    )


def scatter(
    results: Sequence[CaseResult],
    subjects: Sequence[str],
    thresholds: StyleThresholds,
    rows: Sequence[SubjectRow] = (),
    level: float = 0.95,
) -> str:
    look = {
        s: (PALETTE[i % len(PALETTE)], _SHAPES[i // len(PALETTE) % len(_SHAPES)])
        for i, s in enumerate(subjects)
    }
    low = thresholds.low_score
    parts = [
        _frame("plot-title", "Substance score against style, one point per answer"),
        # The trap: reads well, scores low.
        f'<rect class="trap" x="{_x(0.5):.1f}" y="{_y(low):.1f}" width="{_x(1) - _x(0.5):.1f}" '
        f'height="{_y(0) - _y(low):.1f}" fill="#D55E00" fill-opacity="0.12"/>',
        f'<text x="{_x(0.51):.1f}" y="{_y(low) + 14:.1f}" class="trap-label">'
        "sounds right, is wrong</text>",
    ]
    for tick in (0, 0.25, 0.5, 0.75, 1):
        parts.append(
            f'<line x1="{_x(tick):.1f}" y1="{_y(0):.1f}" x2="{_x(tick):.1f}" y2="{_y(0) + 4:.1f}" stroke="#888"/>'
            f'<text x="{_x(tick):.1f}" y="{_y(0) + 16:.1f}" text-anchor="middle">{tick:g}</text>'
            f'<line x1="{_x(0) - 4:.1f}" y1="{_y(tick):.1f}" x2="{_x(0):.1f}" y2="{_y(tick):.1f}" stroke="#888"/>'
            f'<text x="{_x(0) - 7:.1f}" y="{_y(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>'
        )
    parts.append(
        f'<text x="{(_x(0) + _x(1)) / 2:.1f}" y="{_H - 8}" text-anchor="middle" class="axis">'
        "style: mean of fluency and confidence (never scored)</text>"
        f'<text transform="translate(14 {(_y(0) + _y(1)) / 2:.1f}) rotate(-90)" '
        'text-anchor="middle" class="axis">substance score</text>'
    )
    # One mark per subject per spot (a 2.5 % cell): a thousand answers on one spot are one
    # mark, sized by their count, never a thousand circles; counts are labelled where the
    # label has room, largest first, so no two labels overlap.
    spots: dict[tuple[str, int, int], list[CaseResult]] = defaultdict(list)
    for r in results:
        spots[(r.subject, round(style_of(r) * 40), round(r.score * 40))].append(r)
    labels: list[tuple[int, float, float]] = []
    for (subject, _, _), stack in spots.items():
        colour, shape = look[subject]
        sx = sum(style_of(r) for r in stack) / len(stack)
        sy = sum(r.score for r in stack) / len(stack)
        x, y = _x(sx), _y(sy)
        flagged = sum("confidently_wrong" in r.flags for r in stack)
        if len(stack) == 1:
            (r,) = stack
            title = (
                f"{r.case}[{r.subject}]: score {r.score:.2f}, fluency {r.fluency:.2f}, "
                f"confidence {r.confidence:.2f}" + (f", {', '.join(r.flags)}" if r.flags else "")
            )
        else:
            title = f"{subject}: {len(stack)} answers, score {sy:.2f}, style {sx:.2f}" + (
                f", {flagged} confidently_wrong" if flagged else ""
            )
            labels.append((len(stack), x, y))
        size = min(1 + math.log10(len(stack)) * 0.6, 3.0)
        if flagged:
            parts.append(
                f'<circle class="flagged" cx="{x:.1f}" cy="{y:.1f}" r="{4 + 5 * size:.1f}" '
                'fill="none" stroke="#C00" stroke-width="2"/>'
            )
        parts.append(_marker(shape, x, y, colour, title, size))
    parts += [_interval_bar(row, look[row.subject][0], level) for row in rows]
    placed: list[tuple[float, float, float, float]] = []
    for count, x, y in sorted(labels, key=lambda label: -label[0]):
        if count < 3:
            continue
        text = f"\u00d7{count}"
        box = (x - 10 - 7 * len(text), y - 19, x - 10, y - 6)
        if any(b[0] < box[2] and box[0] < b[2] and b[1] < box[3] and box[1] < b[3] for b in placed):
            continue
        placed.append(box)
        parts.append(
            f'<text class="stack" x="{x - 10:.1f}" y="{y - 8:.1f}" text-anchor="end">{text}</text>'
        )
    parts.append("</svg>")
    legend = "".join(
        f'<li><svg width="14" height="14" viewBox="0 0 14 14" aria-hidden="true">'
        f"{_marker(look[s][1], 7, 7, look[s][0], s)}</svg> {e(s)}</li>"
        for s in subjects
    )
    legend += (
        '<li><svg width="20" height="20" viewBox="0 0 20 20" aria-hidden="true">'
        '<circle cx="10" cy="10" r="8" fill="none" stroke="#C00" stroke-width="2"/></svg> '
        f"flagged confidently_wrong (confidence &ge; {thresholds.confident:g}, score &lt; {low:g}"
        # An agent's unhedged claim of an action its trace does not show is one too.
        + (
            f"; or an unbacked claim, confidence &gt; {thresholds.hedged:g}"
            if any("unbacked_claim" in r.flags for r in results)
            else ""
        )
        + ")</li>"
    )
    if rows:
        legend += (
            '<li><svg width="14" height="20" viewBox="0 0 14 20" aria-hidden="true">'
            '<g stroke="#333" stroke-width="2"><line x1="7" y1="2" x2="7" y2="18"/>'
            '<line x1="2" y1="10" x2="12" y2="10" stroke-width="3"/></g></svg> '
            f"a subject's correctness with its {level:g} interval</li>"
        )
    return f'<figure class="plot">{"".join(parts)}<ul class="legend">{legend}</ul></figure>'


def trend(report: SessionReport, subjects: Sequence[str]) -> str:
    """Each subject's correctness over the last runs of ``--rubric-history`` (this one
    last): one line per subject, each run's interval a vertical bar; inline SVG, no script."""
    runs = report.trend
    if len(runs) < 2:
        return ""
    # Subjects of this run first, so each keeps the colour the plot above gives it.
    named = list(dict.fromkeys([*subjects, *(s[0] for run in runs for s in run.subjects)]))
    step = (_W - _LEFT - _RIGHT) / (len(runs) - 1)
    parts = [_frame("trend-title", f"Correctness of each subject over the last {len(runs)} runs")]
    for tick in (0, 0.25, 0.5, 0.75, 1):
        parts.append(
            f'<text x="{_x(0) - 7:.1f}" y="{_y(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>'
        )
    for i, name in enumerate(named):
        hue = PALETTE[i % len(PALETTE)]
        points = [
            (_LEFT + k * step, value, low, high, run)
            for k, run in enumerate(runs)
            for subject, value, low, high in run.subjects
            if subject == name
        ]
        if not points:
            continue
        line = " ".join(f"{x:.1f},{_y(value):.1f}" for x, value, *_ in points)
        parts.append(
            f'<g class="trend" stroke="{hue}" fill="{hue}"><title>{e(name)}</title>'
            f'<polyline points="{line}" fill="none" stroke-width="2"/>'
        )
        for x, value, low, high, run in points:
            when = f"{run.started_at} {(run.git_commit or '')[:12]}".strip()
            ci = (low, high) if low is not None and high is not None else None
            if ci is not None:
                parts.append(
                    f'<line x1="{x:.1f}" y1="{_y(ci[0]):.1f}" x2="{x:.1f}" y2="{_y(ci[1]):.1f}" '
                    'stroke-width="1.5" stroke-opacity="0.6"/>'
                )
            parts.append(
                f'<circle cx="{x:.1f}" cy="{_y(value):.1f}" r="3.5">'
                f"<title>{e(f'{name}: {interval_text(value, ci)} ({when})')}</title></circle>"
            )
        parts.append("</g>")
    parts.append("</svg>")
    legend = " ".join(
        f'<span style="color:{PALETTE[i % len(PALETTE)]}">&#9632;</span> {e(name)}'
        for i, name in enumerate(named)
    )
    return (
        f'<h2 id="trend">Correctness over the last {len(runs)} runs</h2>'
        f"<p>From the history; this run is the last point. {legend}</p>" + "".join(parts)
    )


# Items listed under each kind of change since the baseline; the rest are counted.
_CHANGES_SHOWN = 100


def _leaderboard(report: SessionReport) -> str:
    shown = board_columns(report.leaderboard)
    header = tr([column.wide_header or column.header for column in shown], "th")
    body = "".join(tr([c.cell(row) for c in shown]) for row in report.leaderboard)
    table = f'<table class="board"><thead>{header}</thead><tbody>{body}</tbody></table>'
    for note in report.notes:
        # INFO notes are the terminal's: this page shows what a reader must act on.
        if note.severity is not Severity.INFO:
            table += f'<p class="notice">{e(note.text)}</p>'
    return table


def _breakdowns(report: SessionReport) -> str:
    return "".join(
        f"<h3>By {group}</h3><table><thead>{tr(header, 'th')}</thead>"
        f"<tbody>{''.join(tr(row) for row in rows)}</tbody></table>"
        for group, header, rows in breakdown_tables(report.breakdowns)
    )


def _pair_cell(pair: Pair | None, mirrored: bool) -> str:
    """One cell of the matrix: the row's subject against the column's."""
    if pair is None:
        return '<td class="self">–</td>'
    if pair.diff is None or pair.ci is None:
        return '<td class="none">no shared case</td>'
    wins, losses, diff, (lo, hi) = pair.wins, pair.losses, pair.diff, pair.ci
    if mirrored:  # the pair is (column, row): seen from the row's side
        wins, losses, diff, (lo, hi) = losses, wins, -diff, (-hi, -lo)
    shade = "better" if lo > 0 else "worse" if hi < 0 else "even"
    return (
        f'<td class="{shade}">{wins}–{losses}–{pair.ties}<br>'
        f"{diff:+.3f} [{lo:+.3f}, {hi:+.3f}]</td>"
    )


def _pairwise(report: SessionReport) -> str:
    """The matrix of ``_report.leaderboard.pairwise``, subjects in leaderboard order."""
    if not report.pairwise:
        return ""
    subjects = [row.subject for row in report.leaderboard]
    # Each pair under both orders; none for a subject against itself.
    by_pair = {(p.a, p.b): (p, False) for p in report.pairwise}
    by_pair |= {(p.b, p.a): (p, True) for p in report.pairwise}
    header = "<tr><th></th>" + "".join(f"<th>{e(s)}</th>" for s in subjects) + "</tr>"
    body = "".join(
        f"<tr><th>{e(row)}</th>"
        + "".join(_pair_cell(*by_pair.get((row, column), (None, False))) for column in subjects)
        + "</tr>"
        for row in subjects
    )
    return (
        "<h2>Pairwise</h2><p>Each cell: the row's subject against the column's over the cases "
        "both answered, as wins–losses–ties, then the mean score difference (row minus "
        f"column) with its paired {report.level:g} interval. Shaded where the interval "
        'excludes 0.</p><table class="pairwise">'
        f"<thead>{header}</thead><tbody>{body}</tbody></table>"
    )


def _items(entries: Sequence[Any], item: Callable[[Any], str] = e) -> str:
    """List items of the first :data:`_CHANGES_SHOWN` entries, each ``item(entry)``; the rest
    counted."""
    items = "".join(f"<li>{item(entry)}</li>" for entry in entries[:_CHANGES_SHOWN])
    if len(entries) > _CHANGES_SHOWN:
        items += f"<li>and {len(entries) - _CHANGES_SHOWN} more (see the JSON)</li>"
    return items


def _gates(gates: GateReport) -> str:
    """The gates' verdict and notes (a baseline's deltas are in :func:`_changes`, at the top)."""
    verdict = (
        f'<p class="bad">Gate failed:</p><ul>{_items(gates.regressions)}</ul>'
        if gates.failed
        else '<p class="good">Gate passed.</p>'
    )
    notes = f"<p>Notes:</p><ul>{_items(gates.noted)}</ul>" if gates.noted else ""
    return f"<h2>Gates</h2>{verdict}{notes}"


def _changes(report: SessionReport, shown: set[str]) -> str:
    """With a baseline, first: each subject's delta with its paired interval, then the items
    that regressed, improved, appeared or disappeared, each linked to its answer below."""
    gates = report.gates
    if gates.baseline is None:
        return ""
    parts = [
        '<h2 id="changes">Changes since the baseline</h2>',
        f"<p>Against <code>{e(gates.baseline)}</code>; each change of correctness with its "
        f"paired {gates.level:g} interval over the cases both runs graded.</p>",
        '<table class="board">',
        tr(DELTA_HEADER, "th"),
        *(tr(d.cells(missing="\u2013")) for d in gates.deltas),
        "</table>",
    ]

    def item(c: CaseChange) -> str:
        name = f"<code>{e(c.nodeid)}</code>"
        link = f'<a href="#{anchor(c.nodeid)}">{name}</a>' if c.nodeid in shown else name
        scores = " &#8594; ".join(
            "&#8211;" if v is None else f"{v:.2f}" for v in (c.before, c.after)
        )
        rows = "".join(
            f"<tr><th>{e(label)}</th><td><pre>{e(text)}</pre></td></tr>"
            for label, text in before_and_after(c, limit=report.show_response or 2000)
            if c.kind == "regressed"
        )
        return f"{link} <small>{scores}</small>" + (
            f'<table class="before-after">{rows}</table>' if rows else ""
        )

    for heading in CHANGE_HEADINGS:
        if changes := [c for c in gates.changes if c.heading == heading]:
            parts.append(
                f'<h3 class="{changes[0].kind}">{len(changes)} {heading}</h3>'
                f"<ul>{_items(changes, item)}</ul>"
            )
    return "".join(parts)


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:980px;color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px}h3{font-size:15px;margin:18px 0 4px}
small{color:#777;font-weight:normal}table{border-collapse:collapse;margin:6px 0}
th,td{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
.board td:not(:nth-child(2)){text-align:right;white-space:nowrap}
.before-after pre{white-space:pre-wrap;margin:0;font:inherit}.before-after th{white-space:nowrap}
.notice{background:#fff3e0;border-left:4px solid #D55E00;padding:6px 10px;font-weight:600}
.plot svg{font-size:11px;font-family:inherit}.axis{font-size:12px;fill:#333}.trap-label{fill:#D55E00;font-size:12px}.stack{font-size:11px;fill:#333;font-weight:600}
.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:14px}.legend li{display:flex;align-items:center;gap:4px}
details{border:1px solid #ddd;border-radius:4px;margin:4px 0;padding:2px 8px}summary{cursor:pointer}
details.failed .status{color:#b00}details.error .status{color:#fff;background:#b00;padding:0 4px}details.passed .status{color:#070}
tr.wrong td{background:#fdecea}tr.error td{background:#f9d6d5}tr.skipped td{color:#888}
.flag{background:#eee;border-radius:3px;padding:0 4px;margin-left:4px;font-size:12px}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:8px;max-height:300px;overflow:auto}
.bad{color:#b00;font-weight:600}.good{color:#070;font-weight:600}.question{color:#444}
.run{color:#555;font-size:13px;margin:0 0 12px}.run code{font-size:12px}
.pairwise td{text-align:center;white-space:nowrap;font-size:13px}.pairwise td.better{background:#e3f2e1}
.pairwise td.worse{background:#fdecea}.pairwise td.self,.pairwise td.none{color:#888}
.filters p{margin:2px 0}.answers>input{position:absolute;opacity:0;width:1px;height:1px}
.filters label{border:1px solid #bbb;border-radius:3px;padding:0 6px;margin:0 2px;cursor:pointer}
.lines{font-size:13px;padding-left:18px}
"""


def render_html(report: SessionReport, *, title: str = "pytest-rubric report") -> str:
    """The whole report as one HTML document."""
    results = report.results
    subjects = sorted({r.subject for r in results})
    body = [f"<h1>{e(title)}</h1>"]
    if report.run is not None:
        header = (f"{e(label)} <code>{e(value)}</code>" for label, value in report.run.header())
        body.append(f'<p class="run">{" · ".join(header)}</p>')
    body.append(f"<p>{e(tally(report))}</p>")
    listing, filters_css, shown = answers(report, subjects)
    body.append(_changes(report, shown))
    if results:
        # An undecided answer has bounds, not a score: it is no point of the plot.
        plotted = [r for r in results if r.skipped_bounds is None]
        unplotted = len(results) - len(plotted)
        body += [
            "<h2>Substance against style</h2>",
            "<p>Each mark is one answer, or a subject's answers on one spot: larger, and "
            "counted (&#215;N) where the count has room. Up is more correct; right reads more "
            "fluent and confident. Style never enters the score: a point in the shaded corner reads well "
            "and is wrong."
            + (
                f" The {unplotted} answer(s) left undecided without the judge have bounds, "
                'not a score, and are not plotted (see <a href="#undecided">undecided</a>).'
                if unplotted
                else ""
            )
            + "</p>",
            scatter(plotted, subjects, report.thresholds, report.leaderboard, report.level),
            "<h2>Leaderboard</h2>",
            _leaderboard(report),
            _breakdowns(report),
            _pairwise(report),
            trend(report, subjects),
        ]
    if report.judge_audit.shown:
        items = "".join(f"<li>{e(text)}</li>" for text in report.judge_audit.lines())
        body.append(f"<h2>Judge audit</h2><ul>{items}</ul>")
    if report.gates.active:
        body.append(_gates(report.gates))
    if results:
        body.append(listing)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{_CSS}{filters_css}</style></head><body>"
        + "".join(body)
        + "</body></html>\n"
    )
