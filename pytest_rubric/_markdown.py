"""The Markdown report: the leaderboard, the gates and the failing cases.

Written to ``--rubric-markdown PATH`` (for a pull-request comment) and
appended to ``$GITHUB_STEP_SUMMARY`` when that is set. GitHub renders
Markdown with inline HTML, so every text from a rubric or a response is
escaped for both: HTML special characters become entities, Markdown
punctuation is backslash-escaped, and line breaks become spaces.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._gates import DELTA_HEADER, GateReport
from ._leaderboard import COLUMNS, interval_text
from ._result import CaseResult
from ._session_report import SessionReport, Severity

__all__ = ["escape", "render_markdown"]

_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}
_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!|~:])")
_SPACE = re.compile(r"\s+")
_MAX_TEXT = 160
_MAX_FAILURES = 50


def escape(text: str, limit: int = _MAX_TEXT) -> str:
    """``text`` as inert Markdown table-cell text: one line, at most ``limit`` characters."""
    text = _SPACE.sub(" ", text).strip()
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    # Punctuation first: the entities below carry "#" and ";" of their own.
    text = _PUNCTUATION.sub(r"\\\1", text)
    return "".join(_HTML.get(ch, ch) for ch in text)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def render_markdown(report: SessionReport, *, title: str = "pytest-rubric") -> str:
    lines = [f"## {title}", ""]
    if not report.results:
        return "\n".join([*lines, "No rubric results.", ""])
    lines += [f"{report.passed} of {len(report.results)} answers passed.", ""]
    lines += _table(
        [column.header for column in COLUMNS],
        [
            [escape(c.cell(row)) if c.text else c.cell(row) for c in COLUMNS]
            for row in report.leaderboard
        ],
    )
    for note in report.notes:
        # INFO notes are the terminal's: this page shows what a reader must act on.
        if note.severity is not Severity.INFO:
            lines += ["", f"> **{escape(note.text, limit=200)}**"]
    for group in ("suite", "tag"):
        entries = [b for b in report.breakdowns if b.group == group]
        if entries:
            lines += ["", f"### By {group}", ""]
            lines += _table(
                (group, "subject", "score", "n"),
                [
                    (escape(b.key), escape(b.subject), interval_text(b.score, b.ci), str(b.n))
                    for b in entries
                ],
            )
    if report.gates.active:
        lines += _gates(report.gates)
    failing = report.failing
    if failing:
        lines += ["", f"### Failing cases ({len(failing)})", ""]
        lines += _table(
            ("case", "subject", "status", "score", "min_score", "why"),
            [
                (
                    escape(r.nodeid or r.case),
                    escape(r.subject),
                    r.status.upper(),
                    f"{r.score:.2f}",
                    f"{r.min_score:.2f}",
                    escape("; ".join(_why(r)), limit=300),
                )
                for r in failing[:_MAX_FAILURES]
            ],
        )
        if len(failing) > _MAX_FAILURES:
            lines.append(f"\n… and {len(failing) - _MAX_FAILURES} more (see the JSON report).")
    return "\n".join(lines) + "\n"


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
    return lines


def _why(result: CaseResult) -> list[str]:
    """The criteria that went the wrong way or could not be evaluated, with reasons."""
    return [
        f"{c.id} {c.verdict}: {c.reason}"
        for c in result.criteria
        if c.went_wrong or c.verdict.value == "ERROR"
    ] or result.failure_reasons()
