"""Plain-text tables: the per-criterion failure table and the leaderboard share one renderer."""

from __future__ import annotations

from collections.abc import Sequence

from ._result import CaseResult, mark_text

__all__ = ["criteria_table", "render_table"]


def render_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, right: set[int]
) -> list[str]:
    """Columns padded to their widest cell; indexes in ``right`` are right-aligned."""
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        out = [
            str(c).rjust(w) if i in right else str(c).ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(out).rstrip()

    return [line(header), *(line(r) for r in rows)]


def _weight(value: float) -> str:
    return f"{value:g}"


def criteria_table(result: CaseResult) -> str:
    """The failure text: a headline with score against min_score, then one row per criterion.

    A row that went the wrong way is marked ``x``; ERROR and SKIPPED rows
    are marked ``!`` and ``-``.
    """
    marks = {"ERROR": "!", "SKIPPED": "-"}
    rows = [
        (
            marks.get(str(c.verdict), " " if c.ok else "x"),
            c.id,
            c.type + (" (style)" if c.axis == "style" else ""),
            str(c.verdict) + (" unstable" if c.unstable else ""),
            _weight(c.weight),
            c.reason,
        )
        for c in result.criteria
    ]
    headline = (
        f"rubric {result.case}[{result.subject}]: score {result.score:.2f} "
        f"({mark_text(result.min_score)}, raw {result.raw_score:g}) "
        f"{result.status.upper()}"
    )
    lines = [
        headline,
        *render_table(("", "criterion", "type", "verdict", "weight", "reason"), rows, right={4}),
    ]
    lines += [f"  - {reason}" for reason in result.failure_reasons()]
    skipped = result.skipped
    if skipped:
        lines.append(f"  ({len(skipped)} judged criteria SKIPPED: {skipped[0].reason})")
    return "\n".join(lines)
