"""The style-versus-substance leaderboard: its rows, and its columns defined once for every renderer.

Subjects are ranked by correctness (the mean substance score) and, apart, by the naive
score a style-weighted rubric would give (the mean of correctness, fluency and
confidence); equal values share a rank (1, 2, 2, 4). Each row carries its noise
(``stats``): ``correctness_ci``, ``passed_ci`` (Wilson), ``detectable_drop`` (what the
baseline gate catches with 80 % power) and ``tier``: in rank order, a subject joins the
current tier when the paired interval of its differences from the tier's *top* subject
contains 0 (not its neighbour's: a chain of small steps would join subjects told apart);
subjects tied on rank are each held against the same top, whatever their names.

Every pair of subjects (:func:`pairwise`) is compared over the cases both answered, paired
as the gates and tiers pair them (:func:`by_case`); :func:`rank_noise` reads from the pairs
whether the correctness and naive orders disagree beyond noise. Each subject is broken down
(:func:`breakdowns`) by suite, when there are several, and by tag (a tag's score:
docs/guides/repeats.md), each mean with its interval.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from .._grade.scoring import score
from .._results import CaseResult, Verdict, wilson, without_subject
from .._trace import MAX_COST_USD
from . import stats as _stats

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
    correctness_ci: tuple[float, float] | None = None
    n_cases: int = 0
    tier: int = 1
    detectable_drop: float | None = None
    passed_ci: tuple[float, float] | None = None
    # For a subject with traces (see ``TraceFigures``); None and left out of the JSON otherwise.
    traced: TraceFigures | None = None


@dataclass(frozen=True, slots=True)
class TraceFigures:
    """What a subject's traces add to its row: the mean number of tool calls per answer (None
    when no trace shows its calls), the median latency (None when no trace has one) and the
    summed cost (None when an answer's cost is unknown, one without a trace too: a sum over
    part of the answers would understate it).

    Each is a finite number whatever the figures, so every output writes it and strict JSON
    reads it back: the median of two latencies is ``(lo + hi) / 2``, or ``lo + (hi - lo) / 2``
    where that is inf (for 1.5e308 and 1.6e308); a cost is summed only
    when each is at most :data:`~pytest_rubric._trace.MAX_COST_USD`, which every reader of a
    trace holds it to (200,000 answers at that bound sum to 2e11), and is unknown otherwise."""

    tool_calls: float | None
    latency_s_p50: float | None
    cost_usd: float | None

    @classmethod
    def of(cls, results: Sequence[CaseResult]) -> TraceFigures | None:
        """The figures of a subject's answers with traces; None when none has one. A result
        graded once is its own sample: no Sample made to ask it."""
        answers = [s.trace for r in results for s in (r.samples or (r,))]
        if not (traces := [t for t in answers if t is not None]):
            return None
        latencies = sorted(t.latency_s for t in traces if t.latency_s is not None)
        costs = [None if t is None else t.usage.cost_usd for t in answers]
        # Only traces that show calls count (a retriever's context alone says nothing of them).
        calls = [len(t.tool_calls) for t in traces if t.tool_calls or t.llm_calls is not None]
        return cls(
            tool_calls=_stats.mean(calls) if calls else None,
            latency_s_p50=_median(latencies) if latencies else None,
            cost_usd=_total(costs),
        )


def _median(ordered: Sequence[float]) -> float:
    """The median of ``ordered`` figures (sorted, 0 or more, finite), never past the largest."""
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    low, high = ordered[middle - 1], ordered[middle]
    mean = (low + high) / 2  # statistics.median's, to the last bit
    return mean if math.isfinite(mean) else low + (high - low) / 2


def _total(costs: Sequence[float | None]) -> float | None:
    """The sum of the costs, or None when one is unknown, or is no cost a trace may hold (a
    trace built by hand): bounded, n of them sum to at most n * MAX_COST_USD."""
    if not all(c is not None and 0 <= c <= MAX_COST_USD for c in costs):
        return None
    return math.fsum(c for c in costs if c is not None)


def _seconds(value: float) -> str:
    """A latency as a person reads it: ``850.0ms``, ``2.41s``."""
    return f"{value * 1000:.1f}ms" if value < 1 else f"{value:.2f}s"


def _cell(value: float | None, text: Callable[[float], str]) -> str:
    return "-" if value is None else text(value)


@dataclass(frozen=True, slots=True)
class Column:
    """A leaderboard column as the terminal, Markdown and HTML tables show it."""

    header: str
    cell: Callable[[SubjectRow], str]
    text: bool = False  # a user's text: escaped by Markdown and HTML, left-aligned in the terminal
    ranking: bool = False  # says where a subject stands among others: nothing with one subject
    wide_header: str | None = None  # the header where there is room for it (HTML)


def fixed(value: float | None) -> str:
    """``0.827``: a figure as every output prints it; ``-`` when there is none."""
    return _cell(value, "{:.3f}".format)


def _bracket(interval: Sequence[float] | None) -> str:
    return "" if interval is None else f" [{fixed(interval[0])}, {fixed(interval[1])}]"


def interval_text(value: float, interval: Sequence[float] | None) -> str:
    """``0.827 [0.710, 0.930]``: a value with its interval, as every output prints it."""
    return fixed(value) + _bracket(interval)


COLUMNS: tuple[Column, ...] = (
    Column("rank", lambda r: str(r.rank), ranking=True),
    Column("subject", lambda r: r.subject, text=True),
    Column("correctness", lambda r: interval_text(r.correctness, r.correctness_ci)),
    Column("fluency", lambda r: fixed(r.fluency)),
    Column("confidence", lambda r: fixed(r.confidence)),
    Column("naive", lambda r: fixed(r.naive_score), wide_header="naive score"),
    Column("naive rank", lambda r: str(r.naive_rank), ranking=True),
    Column("confidently wrong", lambda r: str(r.confidently_wrong)),
    # ``3/4 [0.301, 0.954]``: the count, and the interval of the rate it estimates.
    Column("passed", lambda r: f"{r.passed}/{r.total}{_bracket(r.passed_ci)}"),
    Column("tier", lambda r: str(r.tier), ranking=True),
    Column("detectable drop", lambda r: fixed(r.detectable_drop)),
)

TRACE_COLUMNS: tuple[Column, ...] = (
    Column(
        "tool calls",
        lambda r: _cell(r.traced.tool_calls if r.traced else None, lambda v: f"{v:.1f}"),
        wide_header="tool calls per answer",
    ),
    Column("latency p50", lambda r: _cell(r.traced.latency_s_p50 if r.traced else None, _seconds)),
    Column(
        "cost",
        lambda r: _cell(r.traced.cost_usd if r.traced else None, lambda v: f"${v:.4f}"),
        wide_header="cost (USD)",
    ),
)
"""Shown after :data:`COLUMNS` when some subject has traces (see :func:`columns`)."""


def columns(rows: Sequence[SubjectRow]) -> tuple[Column, ...]:
    """The leaderboard's columns for ``rows``, in every output that shows it: no rank, naive
    rank or tier with one subject (it stands among no others), :data:`TRACE_COLUMNS` only
    when some subject has traces."""
    alone = len(rows) == 1
    shown = tuple(c for c in COLUMNS if not (c.ranking and alone))
    return shown + (TRACE_COLUMNS if any(row.traced is not None for row in rows) else ())


def _ranks(values: dict[str, float]) -> dict[str, int]:
    """Competition ranks, highest value first."""
    ordered = sorted(values.items(), key=lambda kv: (-kv[1], kv[0]))
    ranks: dict[str, int] = {}
    for position, (subject, value) in enumerate(ordered):
        tied = position > 0 and _order(ordered[position - 1][1], value) == 0
        ranks[subject] = ranks[ordered[position - 1][0]] if tied else position + 1
    return ranks


def by_case(results: Iterable[CaseResult]) -> dict[tuple[str, str, int], float]:
    """Each result's score by what pairs two subjects' results (and a baseline's): the same
    case of the same file, and its occurrence (a case answered twice: 0, then 1)."""
    seen: Counter[tuple[str, str]] = Counter()
    scores = {}
    for result in results:
        base = (without_subject(result.nodeid, result.subject), result.case)
        scores[(*base, seen[base])] = result.score
        seen[base] += 1
    return scores


def paired(first: Iterable[CaseResult], second: Iterable[CaseResult]) -> list[tuple[float, float]]:
    """(first, second) scores over the cases both sides have, in case order."""
    a, b = by_case(first), by_case(second)
    return [(a[key], b[key]) for key in sorted(a.keys() & b.keys())]


def by_subject(results: Iterable[CaseResult]) -> dict[str, list[CaseResult]]:
    """Ranked results by subject (``assert_rubric`` without ``subject=`` is no subject's)."""
    grouped: dict[str, list[CaseResult]] = defaultdict(list)
    for result in results:
        if result.ranked:
            grouped[result.subject].append(result)
    return grouped


def leaderboard(
    results: Iterable[CaseResult],
    *,
    level: float = 0.95,
    gate_confidence: float | None = None,
    max_drop: float = 0.0,
) -> list[SubjectRow]:
    """One row per subject, in rank order, with its intervals and tiers at ``level``;
    ``detectable_drop`` for the gate's paired test at ``gate_confidence`` (else ``level``)
    beyond ``max_drop``."""
    grouped = by_subject(results)
    correctness = {s: _stats.mean([r.score for r in rs]) for s, rs in grouped.items()}
    naive = {s: _stats.mean([r.naive_score for r in rs]) for s, rs in grouped.items()}
    rank, naive_rank = _ranks(correctness), _ranks(naive)
    gate_level = level if gate_confidence is None else gate_confidence
    rows = [
        SubjectRow(
            subject=subject,
            rank=rank[subject],
            correctness=correctness[subject],
            fluency=_stats.mean([r.fluency for r in rs]),
            confidence=_stats.mean([r.confidence for r in rs]),
            naive_score=naive[subject],
            naive_rank=naive_rank[subject],
            confidently_wrong=sum("confidently_wrong" in r.flags for r in rs),
            passed=passed,
            total=len(rs),
            correctness_ci=_stats.mean_interval([r.score for r in rs], level),
            n_cases=len(rs),
            detectable_drop=_stats.detectable_drop(
                [[s.score for s in r.samples or (r,)] for r in rs], gate_level, max_drop=max_drop
            ),
            passed_ci=wilson(passed, len(rs), level),
            traced=TraceFigures.of(rs),
        )
        for subject, rs in grouped.items()
        for passed in [sum(r.passed for r in rs)]
    ]
    rows.sort(key=lambda row: (row.rank, row.subject))
    top: SubjectRow | None = None  # the first subject of the current tier
    for _, tied in itertools.groupby(rows, key=lambda row: row.rank):
        # Subjects tied on rank are decided together, each against the same top: which joins
        # never depends on their names. Those that do not start the next tier together (a
        # tie's paired interval holds 0).
        later = []
        for row in tied:
            interval = (
                None
                if top is None
                else _stats.paired_interval(
                    paired(grouped[top.subject], grouped[row.subject]), level
                )
            )
            if top is not None and _stats.contains_zero(interval):
                row.tier = top.tier
            else:
                later.append(row)
        for row in later:
            row.tier = 1 if top is None else top.tier + 1
        top = later[0] if later else top
    return rows


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
        diff=_stats.mean([x - y for x, y in pairs]) if pairs else None,
        ci=_stats.paired_interval(pairs, level),
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
    answered = {  # each subject's scores by case number, in case order
        subject: dict(sorted((number[key], score) for key, score in scores.items()))
        for subject, scores in keyed.items()
    }
    return tuple(
        compare(a.subject, b.subject, _shared(answered[a.subject], answered[b.subject]), level)
        for i, a in enumerate(rows)
        for b in rows[i + 1 :]
    )


def _shared(a: dict[int, float], b: dict[int, float]) -> list[tuple[float, float]]:
    """(a's, b's) scores over the cases both answered, in case order, walking the side that
    answered fewer."""
    if len(a) <= len(b):
        return [(x, b[i]) for i, x in a.items() if i in b]
    return [(a[i], y) for i, y in b.items() if i in a]


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
        if _order(a.correctness, b.correctness) * _order(a.naive_score, b.naive_score) < 0:
            opposite = True
            significant = significant or not _stats.contains_zero(pair.ci)
    return RankNoise(disagree=significant, within_noise=opposite and not significant)


def _order(a: float, b: float) -> int:
    if math.isclose(a, b, rel_tol=0, abs_tol=_TIE):
        return 0
    return 1 if a > b else -1


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
    """The result's score over the criteria of each tag it graded with a positive weight: a tag
    whose criteria were all SKIPPED has no score here, not 0."""
    graded = [c for c in result.criteria if c.verdict is not Verdict.SKIPPED]
    tags = {tag for c in graded if c.axis == "substance" and c.weight > 0 for tag in c.tags}
    return {
        tag: _stats.mean(
            [score(c for c in s.criteria if tag in c.tags).score for s in result.sample_list]
        )
        for tag in sorted(tags)
    }


def breakdowns(
    results: Iterable[CaseResult], *, subjects: Sequence[str], level: float = 0.95
) -> tuple[Breakdown, ...]:
    """Suite entries (when there are several suites), then tag entries; within a group by
    key, and within a key in ``subjects`` order (the leaderboard's)."""
    order = {s: i for i, s in enumerate(subjects)}
    suites: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    tags: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        suites[r.suite][r.subject].append(r.score)
        for tag, value in _tag_scores(r).items():
            tags[tag][r.subject].append(value)
    return tuple(
        Breakdown(subject, group, key, _stats.mean(vs), _stats.mean_interval(vs, level), len(vs))
        for group, by_key in [*([("suite", suites)] if len(suites) > 1 else []), ("tag", tags)]
        for key in sorted(by_key)
        for subject in sorted(by_key[key], key=lambda s: order.get(s, len(order)))
        for vs in [by_key[key][subject]]  # the subject's scores of this suite or tag
    )


def breakdown_tables(
    entries: Sequence[Breakdown],
) -> Iterator[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
    """The breakdowns as every output tables them: ``(group, header, rows)`` by suite, then by
    tag, for each group that has entries; a row is key, subject, score with its interval, n."""
    for group in ("suite", "tag"):
        rows: list[tuple[str, ...]] = [
            (b.key, b.subject, interval_text(b.score, b.ci), str(b.n))
            for b in entries
            if b.group == group
        ]
        if rows:
            yield group, (group, "subject", "score", "n"), rows
