"""The HTML report's answers: failing first, grouped by case, with the CSS-only filters by
subject, status and flag; past :data:`FULL` answers, lines and counts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from .._report.leaderboard import interval_text
from .._results import CaseResult, CriterionResult, mark_text
from .html_text import anchor, e, tr
from .table import trace_lines

__all__ = ["FULL", "answers"]

# Answers shown in full, failing ones first; past this many, each further failing answer is
# one line and passing ones are counted (the JSON holds every one): 200,000 answers in full
# made a 169 MB page that took Chromium minutes to open.
FULL = 5000


class _Filters:
    """The page's filters by subject, status and flag, in CSS alone (the CSP allows no
    script): a radio group per filter, and rules that hide each answer the checked radios
    exclude, and each case left with none."""

    STATUSES = ("failed", "error", "passed")

    def __init__(self, results: Sequence[CaseResult], subjects: Sequence[str]) -> None:
        self.subject = {s: i for i, s in enumerate(subjects)}
        flags = sorted({f for r in results for f in r.flags})
        self.flag = {f: i for i, f in enumerate(flags)}
        self.counts: dict[str, int] = defaultdict(int)
        for r in results:
            for key in self.keys(r):
                self.counts[key] += 1

    def keys(self, r: CaseResult) -> list[str]:
        """The classes of an answer: its subject's, its status and its flags'."""
        return [f"s{self.subject[r.subject]}", r.status, *(f"f{self.flag[f]}" for f in r.flags)]

    def classes(self, r: CaseResult) -> str:
        return " ".join(["a", *self.keys(r)])

    def _groups(self) -> list[tuple[str, str, list[tuple[str, str]]]]:
        return [
            ("subject", "fs", [(f"s{i}", s) for s, i in self.subject.items()]),
            ("status", "ft", [(s, s) for s in self.STATUSES if self.counts[s]]),
            ("flag", "ff", [(f"f{i}", f) for f, i in self.flag.items()]),
        ]

    def _ids(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """Each filter's name and its radios (id and label), "all" first."""
        return [
            (label, [(f"{name}-all", "all"), *((f"{name}-{key}", text) for key, text in options)])
            for label, name, options in self._groups()
            if options
        ]

    def form(self, listing: str) -> str:
        """``listing`` under the filters. The radios come first, siblings of the labels and of
        the listing, so each rule is a cheap ``:checked ~`` (a ``body:has()`` rule per answer
        took Chromium 11 s on 40,000 answers)."""
        inputs = "".join(
            f'<input type="radio" name="{ident.partition("-")[0]}" id="{ident}"'
            + (" checked>" if ident.endswith("-all") else ">")
            for _, radios in self._ids()
            for ident, _ in radios
        )
        rows = "".join(
            f"<p><b>{label}</b> "
            + "".join(
                f'<label for="{ident}">{e(text)}'
                + ("" if ident.endswith("-all") else f" <small>{self.counts[ident[3:]]}</small>")
                + "</label>"
                for ident, text in radios
            )
            + "</p>"
            for label, radios in self._ids()
        )
        return (
            f'<div class="answers">{inputs}<div class="filters">{rows}</div>'
            f'<div class="list">{listing}</div></div>'
        )

    def css(self) -> str:
        idents = [ident for _, radios in self._ids() for ident, _ in radios]
        rules = [
            f"#{i}:checked~.filters label[for={i}]{{background:#333;color:#fff;border-color:#333}}"
            f"#{i}:focus-visible~.filters label[for={i}]{{outline:2px solid #0072B2}}"
            for i in idents
        ]
        groups = [
            [(f"{name}-{key}", key) for key, _ in options]
            for _, name, options in self._groups()
            if options
        ]
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
        for combo in combos:
            if combo:
                checked = "~".join(f"#{ident}:checked" for ident, _ in combo)
                wanted = "".join(f".{key}" for _, key in combo)
                rules.append(f"{checked}~.list .case:not(:has(.a{wanted})){{display:none}}")
        return "\n".join(rules)


def _requirement(c: CriterionResult) -> str:
    """A judged criterion's requirement under its id (``c1`` alone does not say what was
    asked); nothing for a deterministic one."""
    if c.requirement is None:
        return ""
    return f'<br><small class="requirement">{e(c.requirement)}</small>'


def _answer(r: CaseResult, classes: str) -> str:
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
        f"{e(r.subject)}: score {r.score:.2f} ({e(mark_text(r.min_score))}){rate} {flags}</summary>"
        f'<table class="criteria"><thead><tr><th>criterion</th><th>type</th><th>verdict</th>'
        f"<th>weight</th><th>reason</th></tr></thead><tbody>{rows}</tbody></table>"
        f"<pre>{e(r.response)}</pre>{_trace(r)}</details>"
    )


def _trace(r: CaseResult) -> str:
    """The tool calls and context ids, after the response (see ``table.trace_lines``)."""
    lines = trace_lines(r.trace)
    return f'<pre class="trace">{e(chr(10).join(lines))}</pre>' if lines else ""


def _line(r: CaseResult, classes: str) -> str:
    """A failing answer past the ones in full: its node id, score and what went wrong."""
    missed = ", ".join(c.id for c in r.criteria if not c.ok)
    return (
        f'<li class="{classes}" id="{anchor(r.nodeid)}"><code>{e(r.nodeid)}</code> '
        f"{r.status} {r.score:.2f} <small>{e(missed)}</small></li>"
    )


def _by_case(results: Sequence[CaseResult]) -> list[tuple[tuple[str, str], list[CaseResult]]]:
    by_case: dict[tuple[str, str], list[CaseResult]] = defaultdict(list)
    for r in results:
        by_case[(r.suite, r.case)].append(r)
    return list(by_case.items())


def _section(groups: list[tuple[tuple[str, str], list[CaseResult]]], filters: _Filters) -> str:
    parts = []
    for (suite, case), answers in groups:
        question = answers[0].question
        parts.append(
            f'<section class="case"><h3>{e(case)} <small>{e(suite)}</small></h3>'
            + (f'<p class="question">{e(question)}</p>' if question else "")
            + "".join(_answer(a, filters.classes(a)) for a in answers)
            + "</section>"
        )
    return "".join(parts)


def answers(results: Sequence[CaseResult], subjects: Sequence[str]) -> tuple[str, str, set[str]]:
    """Every answer, failing ones first, with the filters; the filters' CSS; and the node ids
    given an id on the page (what a link may point at). See :data:`FULL` for many answers."""
    filters = _Filters(results, subjects)
    failing = [r for r in results if not r.passed]
    passing = [r for r in results if r.passed]
    full_failing, lines = failing[:FULL], failing[FULL:]
    full_passing = passing if len(results) <= FULL else []
    parts = []
    cases = [_by_case(full_failing), _by_case(full_passing)]
    if full_failing:
        parts += [f'<h3 id="failing">{len(failing)} failing</h3>', _section(cases[0], filters)]
    if lines:
        parts.append(
            f"<p>{len(lines)} more failing answers, one line each (node id, status, score, "
            "the criteria that went wrong); the JSON report holds each in full.</p>"
            f'<ul class="lines">{"".join(_line(r, filters.classes(r)) for r in lines)}</ul>'
        )
    if full_passing:
        parts += [f'<h3 id="passing">{len(passing)} passing</h3>', _section(cases[1], filters)]
    elif passing:
        counts: dict[str, int] = defaultdict(int)
        for r in passing:
            counts[r.subject] += 1
        body = "".join(tr([s, str(counts[s])]) for s in subjects if counts[s])
        parts.append(
            f'<h3 id="passing">{len(passing)} passing</h3><p>Counted, not listed: this run has '
            f"more than {FULL} answers; the JSON report (<code>--rubric-json</code>) holds "
            f"each.</p><table><thead>{tr(['subject', 'passing'], 'th')}</thead>"
            f"<tbody>{body}</tbody></table>"
        )
    shown = {r.nodeid for r in (*full_failing, *lines, *full_passing)}
    page = (
        '<h2 id="answers">Answers</h2><p>Failing answers first. Filter by subject, status and '
        "flag:</p>" + filters.form("".join(parts))
    )
    return page, filters.css(), shown
