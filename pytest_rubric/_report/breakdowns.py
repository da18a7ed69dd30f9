"""Per-suite and per-tag scores of each subject, each with its interval (``stats.mean_interval``).

Group ``suite`` (only when there are several): a subject's mean score in that suite. Group
``tag``: each result scored by the usual formula over only the substance criteria with the
tag (a case's tags apply to all its criteria; with repeats, the mean over samples),
averaged over the results that have such a criterion with a positive weight.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .._grade.scoring import score
from .._results import CaseResult
from . import stats as _stats

__all__ = ["Breakdown", "breakdowns"]


@dataclass(frozen=True, slots=True)
class Breakdown:
    """One entry of the JSON's ``breakdowns``."""

    subject: str
    group: str  # "suite" or "tag"
    key: str
    score: float
    ci: tuple[float, float] | None
    n: int


def _tag_scores(result: CaseResult) -> dict[str, float]:
    """The result's score over the criteria of each tag it has with a positive weight."""
    tags = {
        tag for c in result.criteria if c.axis == "substance" and c.weight > 0 for tag in c.tags
    }
    scores = {}
    for tag in sorted(tags):
        per_sample = [
            score(c for c in sample.criteria if tag in c.tags).score
            for sample in result.sample_list
        ]
        scores[tag] = math.fsum(per_sample) / len(per_sample)
    return scores


def _entry(subject: str, group: str, key: str, values: Sequence[float], level: float) -> Breakdown:
    return Breakdown(
        subject=subject,
        group=group,
        key=key,
        score=math.fsum(values) / len(values),
        ci=_stats.mean_interval(values, level),
        n=len(values),
    )


def breakdowns(
    results: Iterable[CaseResult], *, subjects: Sequence[str], level: float = 0.95
) -> tuple[Breakdown, ...]:
    """Suite entries (when there are several suites), then tag entries; within a group by
    key, and within a key in ``subjects`` order (the leaderboard's)."""
    results = list(results)
    order = {s: i for i, s in enumerate(subjects)}
    entries: list[Breakdown] = []
    suites: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    tags: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        suites[r.suite][r.subject].append(r.score)
        for tag, value in _tag_scores(r).items():
            tags[tag][r.subject].append(value)
    if len(suites) > 1:
        for suite in sorted(suites):
            for subject in sorted(suites[suite], key=lambda s: order.get(s, len(order))):
                entries.append(_entry(subject, "suite", suite, suites[suite][subject], level))
    for tag in sorted(tags):
        for subject in sorted(tags[tag], key=lambda s: order.get(s, len(order))):
            entries.append(_entry(subject, "tag", tag, tags[tag][subject], level))
    return tuple(entries)
