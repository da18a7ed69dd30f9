"""Every pair of subjects compared over the cases they share: wins, losses, ties, and the
mean difference with its paired interval.

``a`` is ranked above ``b`` (the leaderboard's order); cases are paired as the gates and
tiers pair them (``leaderboard.by_case``). A win: ``a`` scored higher; a tie: within
``1e-9``. ``diff`` is the mean of ``a - b``, ``ci`` its interval
(``stats.paired_difference``); with no shared case both are null.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .._results import CaseResult
from . import stats as _stats
from .leaderboard import SubjectRow, by_case, by_subject

__all__ = ["Pair", "RankNoise", "pairwise", "rank_noise"]

_TIE = 1e-9  # the leaderboard's: two scores this close are equal


@dataclass(frozen=True, slots=True)
class Pair:
    """One entry of the JSON's ``pairwise``, its fields in this order."""

    a: str
    b: str
    shared: int  # cases both subjects answered
    wins: int  # of those, cases where a scored higher than b
    losses: int
    ties: int
    diff: float | None  # the mean of a - b over the shared cases; None when none is shared
    ci: tuple[float, float] | None  # diff's paired interval at the confidence level


def compare(a: str, b: str, pairs: Sequence[tuple[float, float]], level: float) -> Pair:
    """The :class:`Pair` of ``a`` and ``b`` from their paired scores ``(a's, b's)``."""
    wins = sum(x - y > _TIE for x, y in pairs)
    losses = sum(y - x > _TIE for x, y in pairs)
    return Pair(
        a=a,
        b=b,
        shared=len(pairs),
        wins=wins,
        losses=losses,
        ties=len(pairs) - wins - losses,
        # fsum: the same pairs give the same mean byte for byte, in any order.
        diff=math.fsum(x - y for x, y in pairs) / len(pairs) if pairs else None,
        ci=_stats.paired_difference(pairs, level),
    )


def pairwise(
    rows: Sequence[SubjectRow], results: Iterable[CaseResult], *, level: float = 0.95
) -> tuple[Pair, ...]:
    """Every pair of the leaderboard's subjects (``rows``, in rank order), ``a`` before ``b``
    in that order; only ranked results count (an ``assert_rubric`` check is no subject's)."""
    grouped = by_subject(results)
    # What ``paired`` gives each pair (the same pairs, in case key order), with each
    # subject's cases keyed once and every case key numbered once: ``paired`` per pair
    # rehashes every key of both sides (10.7 s for 20 subjects of 5,000 cases; 0.6 s so).
    keyed = {row.subject: by_case(grouped[row.subject]) for row in rows}
    number = {key: i for i, key in enumerate(sorted(set().union(*keyed.values())))}
    answered = {  # each subject's (case number, score), in case order
        subject: sorted((number[key], score) for key, score in scores.items())
        for subject, scores in keyed.items()
    }
    by_number = {subject: dict(scores) for subject, scores in answered.items()}
    return tuple(
        compare(a.subject, b.subject, _shared(a.subject, b.subject, answered, by_number), level)
        for i, a in enumerate(rows)
        for b in rows[i + 1 :]
    )


def _shared(
    a: str,
    b: str,
    answered: dict[str, list[tuple[int, float]]],
    by_number: dict[str, dict[int, float]],
) -> list[tuple[float, float]]:
    """(a's, b's) scores over the cases both answered, in case order, walking the side that
    answered fewer."""
    if len(answered[a]) <= len(answered[b]):
        theirs = by_number[b]
        return [(x, theirs[i]) for i, x in answered[a] if i in theirs]
    mine = by_number[a]
    return [(mine[i], y) for i, y in answered[b] if i in mine]


@dataclass(frozen=True, slots=True)
class RankNoise:
    """Whether the correctness order and the naive order disagree, and how surely."""

    disagree: bool  # some pair is ordered oppositely and its correctness difference is resolved
    within_noise: bool  # the orders differ, but only where the difference is not resolved


def rank_noise(rows: Sequence[SubjectRow], pairs: Iterable[Pair]) -> RankNoise:
    """Compare the two orders pair by pair (``pairs`` of ``rows``): a pair strictly ordered one
    way by correctness and the other way by naive score (ties are never an order) disagrees
    for real when its paired interval excludes 0."""
    row = {r.subject: r for r in rows}
    opposite = significant = False
    for pair in pairs:
        a, b = row[pair.a], row[pair.b]
        by_correctness = _order(a.correctness, b.correctness)
        by_naive = _order(a.naive_score, b.naive_score)
        if by_correctness and by_naive and by_correctness != by_naive:
            opposite = True
            significant = significant or not _stats.contains_zero(pair.ci)
    return RankNoise(disagree=significant, within_noise=opposite and not significant)


def _order(a: float, b: float) -> int:
    if math.isclose(a, b, rel_tol=0, abs_tol=_TIE):
        return 0
    return 1 if a > b else -1
