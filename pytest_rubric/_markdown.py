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

from ._gates import GateReport
from ._result import CaseResult
from ._summary import DISAGREE_LINE, leaderboard, rankings_disagree

__all__ = ["escape", "markdown_report"]

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


def markdown_report(
    results: Sequence[CaseResult], *, gates: GateReport | None = None, title: str = "pytest-rubric"
) -> str:
    rows = leaderboard(results)
    lines = [f"## {title}", ""]
    if not results:
        return "\n".join([*lines, "No rubric results.", ""])
    passed = sum(r.passed for r in results)
    lines += [f"{passed} of {len(results)} answers passed.", ""]
    lines += _table(
        (
            "rank",
            "subject",
            "correctness",
            "fluency",
            "confidence",
            "naive",
            "naive rank",
            "confidently wrong",
            "passed",
        ),
        [
            (
                str(r.rank),
                escape(r.subject),
                f"{r.correctness:.3f}",
                f"{r.fluency:.3f}",
                f"{r.confidence:.3f}",
                f"{r.naive_score:.3f}",
                str(r.naive_rank),
                str(r.confidently_wrong),
                f"{r.passed}/{r.total}",
            )
            for r in rows
        ],
    )
    if rankings_disagree(rows):
        lines += ["", f"> **{escape(DISAGREE_LINE.lstrip('! '), limit=200)}**"]
    if gates is not None and gates.active:
        lines += ["", "### Gates", ""]
        if gates.baseline is not None:
            lines += _table(
                ("subject", "baseline", "now", "change"),
                [
                    (
                        escape(d.subject),
                        "–" if d.before is None else f"{d.before:.3f}",
                        "–" if d.after is None else f"{d.after:.3f}",
                        "–" if d.delta is None else f"{d.delta:+.3f}",
                    )
                    for d in gates.deltas
                ],
            )
            lines.append("")
        if gates.failed:
            lines.append(f"**Gate failed** ({len(gates.regressions)}):")
            lines += [f"- {escape(reason, limit=300)}" for reason in gates.regressions]
        else:
            lines.append("Gate passed.")
    failing = [r for r in results if not r.passed]
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


def _why(result: CaseResult) -> list[str]:
    """The criteria that went the wrong way or could not be evaluated, with reasons."""
    return [
        f"{c.id} {c.verdict}: {c.reason}"
        for c in result.criteria
        if c.went_wrong or c.verdict.value == "ERROR"
    ] or result.failure_reasons()
