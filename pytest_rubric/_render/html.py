"""The HTML report: one self-contained file, inline CSS and SVG, no script, nothing fetched.

It shows, in order:

* the run's header line: the plugin's version, the judges with their
  endpoints, the commit, when it started and how long it took;
* with ``--rubric-baseline``, the changes since the baseline, each linked to its
  answer below;
* the style-versus-substance scatter plot: x = style (the mean of fluency and
  confidence), y = substance score, one colour per subject, one mark per subject
  per spot (a 2.5 % cell), sized and counted by the answers it holds, so 200,000
  answers draw at most a few thousand marks. The low-score, high-style corner is
  shaded, and every spot holding an answer flagged ``confidently_wrong`` is ringed
  in red, so a confident wrong answer stands out at a glance;
* each subject's correctness interval on the same plot: a bar in its colour
  at its mean style, from the interval's low to its high end, marked at its
  correctness;
* the leaderboard with both ranks, tiers and the disagreement notice, and
  the per-suite and per-tag breakdown when there is one;
* with two subjects or more, the pairwise matrix: the row's subject against the
  column's over the cases they share, wins-losses-ties and the mean difference with
  its paired interval, shaded where the interval excludes 0 (``_report.pairwise``);
* the gates, when ``--rubric-baseline`` or ``--rubric-fail-under`` is set;
* the answers, failing ones first, each with its score, criteria with verdicts
  and reasons, and the response text; filters by subject, status and flag work by
  CSS alone (radio inputs and ``:checked ~`` sibling rules). Past :data:`FULL` answers, further
  failing ones are one line each and passing ones are counted: the JSON holds
  every one.

Every text from a rubric or a response goes through :func:`html.escape`,
and a Content-Security-Policy forbids scripts and any fetch, so a hostile
response is shown as text and can do nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._report.baseline import before_and_after
from .._report.gates import CHANGE_KINDS, DELTA_HEADER, GateReport
from .._report.leaderboard import columns as board_columns
from .._report.leaderboard import interval_text
from .._report.pairwise import Pair
from .._report.report import SessionReport, Severity
from .html_answers import FULL, answers
from .html_plot import PALETTE, scatter, style_of, trend
from .html_text import anchor, e, tr

__all__ = ["FULL", "PALETTE", "render_html", "style_of"]


# Items listed under each kind of change since the baseline; the rest are counted.
_CHANGES_SHOWN = 100


def _leaderboard(report: SessionReport) -> str:
    shown = board_columns(report.leaderboard)
    header = tr([column.wide for column in shown], "th")
    body = "".join(tr([c.cell(row) for c in shown]) for row in report.leaderboard)
    table = f'<table class="board"><thead>{header}</thead><tbody>{body}</tbody></table>'
    for note in report.notes:
        # INFO notes are the terminal's: this page shows what a reader must act on.
        if note.severity is not Severity.INFO:
            table += f'<p class="notice">{e(note.text)}</p>'
    return table


def _breakdowns(report: SessionReport) -> str:
    parts = []
    for group in ("suite", "tag"):
        entries = [b for b in report.breakdowns if b.group == group]
        if entries:
            body = "".join(
                tr([b.key, b.subject, interval_text(b.score, b.ci), str(b.n)]) for b in entries
            )
            parts.append(
                f"<h3>By {group}</h3><table><thead>{tr([group, 'subject', 'score', 'n'], 'th')}"
                f"</thead><tbody>{body}</tbody></table>"
            )
    return "".join(parts)


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
    """The pairwise matrix, subjects in leaderboard order (see the module docstring)."""
    if not report.pairwise:
        return ""
    subjects = [row.subject for row in report.leaderboard]
    by_pair = {(p.a, p.b): p for p in report.pairwise}
    header = "<tr><th></th>" + "".join(f"<th>{e(s)}</th>" for s in subjects) + "</tr>"
    body = ""
    for row in subjects:
        cells = "".join(
            _pair_cell(None, False)
            if row == column
            else _pair_cell(by_pair[(row, column)], False)
            if (row, column) in by_pair
            else _pair_cell(by_pair[(column, row)], True)
            for column in subjects
        )
        body += f"<tr><th>{e(row)}</th>{cells}</tr>"
    return (
        "<h2>Pairwise</h2><p>Each cell: the row's subject against the column's over the cases "
        "both answered, as wins–losses–ties, then the mean score difference (row minus "
        f"column) with its paired {report.level:g} interval. Shaded where the interval "
        'excludes 0.</p><table class="pairwise">'
        f"<thead>{header}</thead><tbody>{body}</tbody></table>"
    )


def _items(texts: Sequence[str]) -> str:
    """List items, the first :data:`_CHANGES_SHOWN` of them; the rest counted."""
    items = "".join(f"<li>{e(text)}</li>" for text in texts[:_CHANGES_SHOWN])
    if len(texts) > _CHANGES_SHOWN:
        items += f"<li>and {len(texts) - _CHANGES_SHOWN} more (see the JSON)</li>"
    return items


def _gates(gates: GateReport) -> str:
    parts = ["<h2>Gates</h2>"]
    if gates.baseline is not None:
        rows = "".join(tr(d.cells(missing="–")) for d in gates.deltas)
        parts.append(
            f"<p>Baseline <code>{e(gates.baseline)}</code>.</p><table><thead>"
            f"{tr(DELTA_HEADER, 'th')}</thead><tbody>{rows}</tbody></table>"
        )
    if gates.failed:
        parts.append(f'<p class="bad">Gate failed:</p><ul>{_items(gates.regressions)}</ul>')
    else:
        parts.append('<p class="good">Gate passed.</p>')
    notes = gates.noted
    if notes:
        parts.append(f"<p>Notes:</p><ul>{_items(notes)}</ul>")
    return "".join(parts)


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
    for kind in CHANGE_KINDS:
        changes = [c for c in gates.changes if c.kind == kind]
        if not changes:
            continue
        items = []
        for c in changes[:_CHANGES_SHOWN]:
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
            shown_change = f'<table class="before-after">{rows}</table>' if rows else ""
            items.append(f"<li>{link} <small>{scores}</small>{shown_change}</li>")
        if len(changes) > _CHANGES_SHOWN:
            items.append(f"<li>and {len(changes) - _CHANGES_SHOWN} more (see the JSON)</li>")
        parts.append(f'<h3 class="{kind}">{len(changes)} {kind}</h3><ul>{"".join(items)}</ul>')
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
    body.append(f"<p>{report.passed} of {len(results)} answers passed.</p>")
    listing, filters_css, shown = answers(results, subjects)
    body.append(_changes(report, shown))
    if results:
        body += [
            "<h2>Substance against style</h2>",
            "<p>Each mark is one answer, or a subject's answers on one spot: larger, and "
            "counted (&#215;N) where the count has room. Up is more correct; right reads more "
            "fluent and confident. Style never enters the score: a point in the shaded corner reads well "
            "and is wrong.</p>",
            scatter(results, subjects, report.thresholds, report.leaderboard, report.level),
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
