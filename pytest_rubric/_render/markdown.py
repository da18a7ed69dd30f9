"""The Markdown report: the run's header line, the leaderboard, the gates, the failing cases
and those a missing judge left undecided.

Written to ``--rubric-markdown PATH`` and appended to ``$GITHUB_STEP_SUMMARY``. GitHub
renders Markdown with inline HTML, so every text from a rubric or a response is made inert
for both and no more: ``&``, ``<``, ``>`` become entities; ``\\ ` * _ [ ] ~ |`` and the
``:`` of ``://`` are backslash-escaped; line breaks become spaces. Node ids are code spans.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .._defaults import SHOW_QUESTION
from .._guards.outgoing import inert_mentions, outgoing
from .._guards.secrets import shorten
from .._report.gates import DELTA_HEADER, GateReport, before_and_after
from .._report.leaderboard import breakdown_tables
from .._report.leaderboard import columns as board_columns
from .._report.report import SessionReport, Severity
from .._results import CaseResult
from .table import score_text, tally, trace_lines, with_requirement

_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_PUNCTUATION = re.compile(r"([\\`*_\[\]|~]|:(?=//)|(?<=www)\.)")
_SPACE = re.compile(r"\s+")
_MAX_TEXT = 160
_MAX_FAILURES = 50
_MAX_REQUIREMENT = 300  # characters of one judged criterion's line under a failing case


def escape(text: str, limit: int = _MAX_TEXT) -> str:
    """``text`` as inert Markdown table-cell text: one line, at most ``limit`` characters,
    no mention, issue link or e-mail address live (a PR comment notifies nobody)."""
    # The boundary before the escapes, which would hide a URL's "://" from it.
    text = inert_mentions(outgoing(shorten(_SPACE.sub(" ", text).strip(), limit)))
    # Punctuation first: the entities below carry "#" and ";" of their own.
    text = _PUNCTUATION.sub(r"\\\1", text)
    return "".join(_HTML.get(ch, ch) for ch in text)


def code(text: str, limit: int = _MAX_TEXT) -> str:
    """``text`` as a code span in a table cell: shown as is, but for ``|``, which GitHub
    reads as a new cell even there."""
    text = outgoing(shorten(_SPACE.sub(" ", text).strip(), limit)).replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def render_markdown(report: SessionReport, *, title: str = "pytest-rubric") -> str:
    lines = [f"## {title}", ""]
    if report.run is not None:
        header = (f"{escape(label)} {code(value)}" for label, value in report.run.header())
        lines += [" · ".join(header), ""]
    if not report.results:
        return "\n".join([*lines, "No rubric results.", ""])
    lines += [tally(report), ""]
    passed, failed = report.assertions  # assert_rubric calls without a subject
    if passed or failed:
        lines += [f"assertions: {passed} passed, {failed} failed", ""]
    if report.leaderboard:  # none when every result is such an assertion
        shown = board_columns(report.leaderboard)
        lines += _table(
            [column.header for column in shown],
            [
                [escape(c.cell(row)) if c.text else c.cell(row) for c in shown]
                for row in report.leaderboard
            ],
        )
    for note in report.notes:
        # INFO notes are the terminal's: this page shows what a reader must act on.
        if note.severity is not Severity.INFO:
            lines += ["", f"> **{escape(note.text, limit=300)}**"]
    for group, columns, rows in breakdown_tables(report.breakdowns):
        lines += ["", f"### By {group}", ""]
        lines += _table(
            columns, [(escape(key), escape(subject), *rest) for key, subject, *rest in rows]
        )
    if report.judge_audit.shown:
        lines += ["", "### Judge audit", ""]
        lines += [f"- {escape(text, limit=300)}" for text in report.judge_audit.lines()]
    if report.gates.active:
        lines += _gates(report.gates)
        lines += _regressed(report.gates, report.show_response)
    if failing := report.failing:
        lines += ["", f"### Failing cases ({len(failing)})", ""]
        lines += _table(
            ("case", "subject", "status", "score", "min_score", "why"),
            [
                (
                    code(r.nodeid or r.case),
                    escape(r.subject),
                    r.status.upper(),
                    f"{r.score:.2f}",
                    "report-only" if r.min_score is None else f"{r.min_score:.2f}",
                    escape("; ".join(_why(r)), limit=300),
                )
                for r in failing[:_MAX_FAILURES]
            ],
        )
        if len(failing) > _MAX_FAILURES:
            lines.append(f"\n… and {len(failing) - _MAX_FAILURES} more (see the JSON report).")
        for r in failing[:_MAX_FAILURES]:
            lines += _answer(r, report.show_response)
    if undecided := report.undecided:
        lines += ["", f"### Undecided without the judge ({len(undecided)})", ""]
        lines += _table(
            ("case", "subject", "why"),
            [
                (code(r.nodeid or r.case), escape(r.subject), escape(score_text(r), limit=300))
                for r in undecided[:_MAX_FAILURES]
            ],
        )
        if len(undecided) > _MAX_FAILURES:
            lines.append(f"\n… and {len(undecided) - _MAX_FAILURES} more (see the JSON report).")
    return "\n".join(lines) + "\n"


def _answer(result: CaseResult, show_response: int) -> list[str]:
    """What the application was asked and said, under the failing case's node id, and what
    each judged criterion that went wrong asked (its id, ``c1``, does not say)."""
    shown = []
    if result.question:
        shown.append(f"- question: {escape(result.question, limit=SHOW_QUESTION)}")
    if show_response > 0:
        shown.append(f"- response: {escape(result.response, limit=show_response)}")
        if (lowest := result.lowest_sample) is not None:  # the first may have passed
            number, sample = lowest
            label = f"sample {number} of {result.n_samples} (score {sample.score:.2f})"
            shown.append(f"- {label}: {escape(sample.response, limit=show_response)}")
    shown += [f"- {escape(line.strip(), limit=300)}" for line in trace_lines(result.trace)]
    shown += [
        f"- {escape(c.id)} {c.verdict}: {escape(with_requirement(c), limit=_MAX_REQUIREMENT)}"
        for c in result.criteria
        if c.requirement is not None and (c.went_wrong or c.verdict.value == "ERROR")
    ]
    return ["", f"#### {code(result.nodeid or result.case)}", "", *shown] if shown else []


def _gates(gates: GateReport) -> list[str]:
    lines = ["", "### Gates", ""]
    if gates.baseline is not None:
        rows = [d.cells(missing="–") for d in gates.deltas]
        lines += _table(DELTA_HEADER, [(escape(subject), *rest) for subject, *rest in rows])
        lines.append("")
    if gates.failed:
        lines.append(f"**Gate failed** ({len(gates.regressions)}):")
        lines += [f"- {escape(reason, limit=300)}" for reason in gates.regressions]
    else:
        lines.append("Gate passed.")
    if notes := gates.noted:
        lines += ["", "Notes:", *(f"- {escape(note, limit=300)}" for note in notes)]
    return lines


def _regressed(gates: GateReport, show_response: int) -> list[str]:
    """With a baseline, each item that regressed, then each report-only one that scored
    lower: the verdicts that changed and the baseline's response beside today's."""
    lines = []
    for heading, title in (
        ("regressed", "Regressed since the baseline"),
        ("scored lower (report-only)", "Scored lower (report-only)"),
    ):
        if changes := [c for c in gates.changes if c.heading == heading]:
            lines += ["", f"### {title}", ""]
        for change in changes[:_MAX_FAILURES]:
            lines += [f"#### {code(change.nodeid)}", ""]
            lines += [
                f"- {escape(label)}: {escape(text, limit=max(show_response, 300))}"
                for label, text in before_and_after(change, limit=show_response)
            ]
            lines.append("")
    return lines


def _why(result: CaseResult) -> list[str]:
    """The criteria that went the wrong way or could not be evaluated, with reasons; for an
    item of several samples, the item's reasons (its criteria are only the first sample's)."""
    if result.n_samples > 1:
        return result.failure_reasons()
    return [
        f"{c.id} {c.verdict}: {c.reason}"
        for c in result.criteria
        if c.went_wrong or c.verdict.value == "ERROR"
    ] or result.failure_reasons()
