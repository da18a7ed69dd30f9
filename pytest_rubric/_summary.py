"""The style-versus-substance leaderboard: computed as data here, rendered by thin printers.

Subjects are ranked by correctness (the mean substance score of their
answers) and, separately, by the naive score a style-weighted rubric would
have given (the mean of correctness, fluency and confidence). Equal values
share a rank (1, 2, 2, 4); ties are listed by subject name.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ._result import CaseResult
from ._table import render_table

__all__ = ["DISAGREE_LINE", "SubjectRow", "leaderboard", "rankings_disagree", "summary_lines"]

DISAGREE_LINE = "! A style-weighted rubric would rank these subjects differently."
_TIE = 1e-9
_SHOWN = 10


@dataclass(slots=True)
class SubjectRow:
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


def summary_lines(results: Sequence[CaseResult]) -> list[str]:
    """The ``rubric summary`` section: the leaderboard, then what a reader must know."""
    rows = leaderboard(results)
    header = (
        "rank",
        "subject",
        "correctness",
        "fluency",
        "confidence",
        "naive",
        "naive rank",
        "confidently wrong",
        "passed",
    )
    cells = [
        (
            str(r.rank),
            r.subject,
            f"{r.correctness:.3f}",
            f"{r.fluency:.3f}",
            f"{r.confidence:.3f}",
            f"{r.naive_score:.3f}",
            str(r.naive_rank),
            str(r.confidently_wrong),
            f"{r.passed}/{r.total}",
        )
        for r in rows
    ]
    lines = render_table(header, cells, right={0, 2, 3, 4, 5, 6, 7, 8})
    if rankings_disagree(rows):
        lines.append(DISAGREE_LINE)
    errored = sum(1 for r in results if r.errors)
    if errored:
        lines.append(
            f"{errored} answer(s) could not be fully evaluated (ERROR); they count as not passed."
        )
    lines += _unstable_lines(results)
    skipped = sum(len(r.skipped) for r in results)
    if skipped:
        lines.append(
            f"{skipped} judged criteria SKIPPED (no judge configured); scores count only what ran. "
            "Set --rubric-judge PROVIDER:MODEL to grade them."
        )
    return lines


def _unstable_lines(results: Sequence[CaseResult]) -> list[str]:
    """Judged criteria whose samples disagreed (``--rubric-judge-samples``), worst first."""
    unstable = sorted(
        (
            (c.agreement or 0.0, r.nodeid or f"{r.case}[{r.subject}]", c.id)
            for r in results
            for c in r.criteria
            if c.unstable
        ),
    )
    if not unstable:
        return []
    lines = [
        f"{len(unstable)} judged criteria unstable (their judge samples disagreed); "
        "the verdicts below are majority votes or means:"
    ]
    lines += [
        f"  {where} {cid}: agreement {agreement:.2f}" for agreement, where, cid in unstable[:_SHOWN]
    ]
    if len(unstable) > _SHOWN:
        lines.append(f"  ... and {len(unstable) - _SHOWN} more (see --rubric-json)")
    return lines
