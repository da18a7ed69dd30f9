"""The style-versus-substance leaderboard: its rows, and its columns defined once for every renderer.

Subjects are ranked by correctness (the mean substance score of their
answers) and, separately, by the naive score a style-weighted rubric would
have given (the mean of correctness, fluency and confidence). Equal values
share a rank (1, 2, 2, 4); ties are listed by subject name.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ._result import CaseResult

__all__ = ["COLUMNS", "Column", "SubjectRow", "leaderboard", "rankings_disagree"]

_TIE = 1e-9


@dataclass(slots=True)
class SubjectRow:
    """One subject's line; its fields, in this order, are a ``leaderboard`` entry of the JSON."""

    subject: str
    rank: int
    correctness: float
    fluency: float
    confidence: float
    naive_score: float
    naive_rank: int
    confidently_wrong: int
    passed: int
    total: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Column:
    """A leaderboard column as the terminal, Markdown and HTML tables show it."""

    header: str
    cell: Callable[[SubjectRow], str]
    text: bool = False  # a user's text: escaped by Markdown and HTML, left-aligned in the terminal
    wide_header: str | None = None  # the header where there is room for it (HTML)

    @property
    def wide(self) -> str:
        return self.wide_header or self.header


def _fixed(value: float) -> str:
    return f"{value:.3f}"


COLUMNS: tuple[Column, ...] = (
    Column("rank", lambda r: str(r.rank)),
    Column("subject", lambda r: r.subject, text=True),
    Column("correctness", lambda r: _fixed(r.correctness)),
    Column("fluency", lambda r: _fixed(r.fluency)),
    Column("confidence", lambda r: _fixed(r.confidence)),
    Column("naive", lambda r: _fixed(r.naive_score), wide_header="naive score"),
    Column("naive rank", lambda r: str(r.naive_rank)),
    Column("confidently wrong", lambda r: str(r.confidently_wrong)),
    Column("passed", lambda r: f"{r.passed}/{r.total}"),
)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _ranks(values: dict[str, float]) -> dict[str, int]:
    """Competition ranks, highest value first."""
    ordered = sorted(values.items(), key=lambda kv: (-kv[1], kv[0]))
    ranks: dict[str, int] = {}
    for position, (subject, value) in enumerate(ordered, start=1):
        previous = ordered[position - 2] if position > 1 else None
        if previous is not None and abs(previous[1] - value) <= _TIE:
            ranks[subject] = ranks[previous[0]]
        else:
            ranks[subject] = position
    return ranks


def leaderboard(results: Iterable[CaseResult]) -> list[SubjectRow]:
    """One row per subject, in rank order."""
    by_subject: dict[str, list[CaseResult]] = defaultdict(list)
    for result in results:
        by_subject[result.subject].append(result)
    correctness = {s: _mean([r.score for r in rs]) for s, rs in by_subject.items()}
    naive = {s: _mean([r.naive_score for r in rs]) for s, rs in by_subject.items()}
    rank, naive_rank = _ranks(correctness), _ranks(naive)
    rows = [
        SubjectRow(
            subject=subject,
            rank=rank[subject],
            correctness=correctness[subject],
            fluency=_mean([r.fluency for r in rs]),
            confidence=_mean([r.confidence for r in rs]),
            naive_score=naive[subject],
            naive_rank=naive_rank[subject],
            confidently_wrong=sum("confidently_wrong" in r.flags for r in rs),
            passed=sum(r.passed for r in rs),
            total=len(rs),
        )
        for subject, rs in by_subject.items()
    ]
    return sorted(rows, key=lambda row: (row.rank, row.subject))


def rankings_disagree(rows: Iterable[SubjectRow]) -> bool:
    """True when some subject's naive rank differs from its correctness rank."""
    return any(row.rank != row.naive_rank for row in rows)
