"""The statistics behind every interval, tier and noise-aware gate, as pure functions.

:func:`mean_interval` is Agresti-Coull carried over to mean scores in [0, 1] (``z^2 / 2``
pseudo-cases at 0 and as many at 1), :func:`paired_difference` the adjusted Wald interval
of Bonett and Price (2012) for paired differences (``z^2 / 4`` pseudo-pairs at -1 and at
+1), :func:`paired_interval` that one as the leaderboard reports it (tiers, pairwise);
why, and the coverage ``bench/bench_promises.py`` measures:
docs/explanation/statistics.md. Every figure is a closed form over exactly rounded sums
(``math.fsum``): the same values give the same interval byte for byte, in any order, in any
process.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Callable, Sequence
from fractions import Fraction
from itertools import accumulate

from .._results import z_of

POWER_Z = 0.8416  # the standard normal quantile of 0.80: 80 % power

Interval = tuple[float, float]


def mean(values: Sequence[float]) -> float:
    """The mean of ``values``, from their exactly rounded sum: the same values give the same
    mean byte for byte, in any order."""
    return math.fsum(values) / len(values)


def _augmented(
    values: Sequence[float], pseudo: Sequence[tuple[float, float]], z: float, bounds: Interval
) -> Interval:
    """The mean of ``values`` joined by weighted ``pseudo`` values ``(value, weight)``, plus
    or minus ``z`` standard errors of that augmented sample; clipped to ``bounds`` and
    widened to hold the plain mean of ``values``."""
    plain = mean(values)
    total = len(values) + math.fsum(w for _, w in pseudo)
    centre = math.fsum([*values, *(v * w for v, w in pseudo)]) / total
    spread = math.fsum(
        [*((v - centre) ** 2 for v in values), *(w * (v - centre) ** 2 for v, w in pseudo)]
    )
    half = z * math.sqrt(spread / total / total)
    lo, hi = bounds
    return (max(lo, min(centre - half, plain)), min(hi, max(centre + half, plain)))


def covering(level: float) -> float:
    """The level :func:`mean_interval` and :func:`paired_interval` are computed at to cover
    at least ``level - 0.05`` at every true mean: below 0.95 the one that halves the chance
    of a miss, at most 0.95 (both dip under the promise there, computed exactly:
    Agresti-Coull to 0.848 at 0.9 and 0.68 at 0.8, Bonett-Price to 0.71 at 0.8);
    ``level`` itself from 0.95 up."""
    return max(level, min(0.95, 1 - (1 - level) / 2))


def mean_interval(values: Sequence[float], level: float = 0.95) -> Interval | None:
    """The interval at ``level`` of the mean of ``values`` (one score in [0, 1] per case),
    at least as wide as its promise needs (:func:`covering`); None when there is no value.
    It holds the mean and is never zero-width."""
    if not values:
        return None
    z = z_of(covering(level))
    return _augmented(values, ((0.0, z * z / 2), (1.0, z * z / 2)), z, (0.0, 1.0))


def paired_difference(pairs: Sequence[tuple[float, float]], level: float = 0.95) -> Interval | None:
    """The interval at ``level`` of the mean of ``a - b`` over paired cases ``(a, b)``;
    None when there is no pair."""
    if not pairs:
        return None
    z = z_of(level)
    pseudo = ((-1.0, z * z / 4), (1.0, z * z / 4))
    return _augmented([a - b for a, b in pairs], pseudo, z, (-1.0, 1.0))


def paired_interval(pairs: Sequence[tuple[float, float]], level: float = 0.95) -> Interval | None:
    """The interval at ``level`` of the mean of ``a - b`` over paired cases ``(a, b)`` that
    the leaderboard reports and reads (``pairwise``, tiers, ranks that disagree): as wide
    as the coverage promise needs (:func:`covering`), like :func:`mean_interval`. The
    baseline gate's test stays :func:`paired_difference` at its own level: its promise is
    a false-alarm rate, and :func:`detectable_drop` models that interval."""
    return paired_difference(pairs, covering(level))


def _variance(values: Sequence[float]) -> float:
    """The sample variance (n - 1 in the denominator) of at least two values."""
    centre = mean(values)
    return math.fsum([(v - centre) ** 2 for v in values]) / (len(values) - 1)


def _binomial_moments(p: float, k: float) -> tuple[float, float, float]:
    """The 2nd, 3rd and 4th central moments of a mean of ``k`` coin flips of rate ``p``."""
    pq = p * (1 - p)
    return pq / k, pq * (1 - 2 * p) / k**2, pq * (1 + 3 * (k - 2) * pq) / k**3


def _gate_margin(
    sums: tuple[float, float, float, float, float],
    n: int,
    z: float,
    max_drop: float,
    *,
    curvature: bool = False,
) -> float:
    """How far below ``-max_drop`` the 80th percentile of the gate's upper end lies, given
    ``sums``: the expected sum ``s`` and sum of squares ``q`` of the ``n`` differences
    (new run - baseline), the variance of each and their covariance. With ``curvature``
    the upper end's mean takes the second-order term of the delta method too (the square
    root is concave: the upper end sits lower on average than at the expected sums)."""
    s, q, var_s, var_q, cov = sums
    w = z * z / 4  # the pseudo-pairs of paired_difference: w at -1, w at +1
    total = n + 2 * w
    root = math.sqrt(max(q + 2 * w - s * s / total, 1e-12))
    upper = s / total + z * root / total
    d_s = 1 / total - z * s / (total * total * root)
    d_q = z / (2 * total * root)
    spread = d_s * d_s * var_s + d_q * d_q * var_q + 2 * d_s * d_q * cov
    if curvature:
        cube = total * root**3
        d_ss = -z / (total * total * root) - z * s * s / (total * total * cube)
        d_sq = z * s / (2 * total * cube)
        d_qq = -z / (4 * cube)
        upper += (d_ss * var_s + 2 * d_sq * cov + d_qq * var_q) / 2
    return -max_drop - (upper + POWER_Z * math.sqrt(max(spread, 0.0)))


def _case_moments(p: float, flips: float, extra: float) -> tuple[float, float, float]:
    """The 2nd, 3rd and 4th central moments of a case's score modelled as a mean of
    ``flips`` coin flips of rate ``p`` plus an independent symmetric noise of variance
    ``extra`` (normal-tailed: it adds ``6 v extra + 3 extra^2`` to the 4th moment)."""
    v, m3, m4 = _binomial_moments(p, flips)
    return v + extra, m3, m4 + 6 * v * extra + 3 * extra * extra


def _dropping_terms(
    p: float, flips: float, extra: float, b2: float, b3: float, b4: float
) -> tuple[float, ...]:
    """A case's terms of the sums :func:`_gate_margin` reads, when a cut ``c`` below its
    rate ``p`` lowers it to ``x = p - c``: its difference d = new - baseline has mean
    ``-c`` and the central moments of both runs' (the new run's from
    :func:`_case_moments` at ``x``, the baseline's ``b2, b3, b4``), each a polynomial in
    ``c``. Returned as coefficients, lowest power first: ``Var d`` (3), ``Var d^2`` (5)
    and ``Cov(d, d^2)`` (4)."""
    u, t = p * (1 - p), 2 * p - 1  # x (1 - x) = u + t c - c^2
    g = 1 / flips
    g2, g3 = g * g, g * g * g
    h = 3 * (flips - 2) * g3
    v0, v1, v2 = g * u + extra + b2, g * t, -g  # Var d
    m0, m1, m2, m3 = -g2 * u * t - b3, g2 * (2 * u - t * t), 3 * g2 * t, -2 * g2  # its 3rd
    k6 = 6 * (extra + b2) * g
    f0 = g3 * u + h * u * u + k6 * u + 3 * extra * extra + b4 + 6 * b2 * extra  # its 4th
    f1 = g3 * t + 2 * h * u * t + k6 * t
    f2 = -g3 + h * (t * t - 2 * u) - k6
    f3, f4 = -2 * h * t, h
    return (
        *(v0, v1, v2),
        # Var d^2 = 4 mu^2 Var d + 4 mu m3 + m4 - (Var d)^2, mu = -c
        f0 - v0 * v0,
        -4 * m0 + f1 - 2 * v0 * v1,
        4 * v0 - 4 * m1 + f2 - v1 * v1 - 2 * v0 * v2,
        4 * v1 - 4 * m2 + f3 - 2 * v1 * v2,
        4 * v2 - 4 * m3 + f4 - v2 * v2,
        # Cov(d, d^2) = 2 mu Var d + m3
        *(m0, -2 * v0 + m1, -2 * v1 + m2, -2 * v2 + m3),
    )


def _polynomial(coefficients: Sequence[float], x: float) -> float:
    """The polynomial of ``coefficients`` (lowest power first) at ``x`` (Horner)."""
    out = 0.0
    for a in reversed(coefficients):
        out = out * x + a
    return out


def _bisect_drop(margin: Callable[[float], float], top: float) -> float:
    """The smallest ``delta`` in [0, ``top``] whose ``margin`` is at least 0 (it grows with
    ``delta``): bisection, the same steps, so the same figure, everywhere."""
    lo, hi = 0.0, top
    for _ in range(60):
        mid = (lo + hi) / 2
        if margin(mid) < 0:
            lo = mid
        else:
            hi = mid
    return hi


def detectable_drop(
    cases: Sequence[Sequence[float]], level: float = 0.95, *, max_drop: float = 0.0
) -> float | None:
    """The drop in mean score that the paired gate catches 80 % of the time; each case given
    as its samples' scores.

    The gate fails a subject when :func:`paired_difference` of (new run - baseline) at
    ``level`` lies wholly below ``-max_drop``. Between two independent runs of the same
    cases only the noise *within* each case remains.

    With ``repeat`` (every case two samples or more) each case is modelled at its own rate
    ``p_i``, its samples' mean, from its ``k_i`` samples. A drop of ``delta`` lowers every
    rate by one cut, none below 0, with ``mean(min(p_i, cut)) = delta`` (solved on the
    sorted rates): a case near 1 gains noise as it falls, which one common rate does not
    show. A case's score in a run at rate ``x`` is a mean of ``k_i / phi`` coin flips of
    rate ``x``, plus ``phi p_i (1 - p_i) / (k_i (k_i - 1))`` of variance: for pass/fail
    samples (``phi`` = 1) that makes both runs' variances unbiased estimates of the true
    ones, ``p (1 - p) / k_i`` at the baseline and ``(p - cut)(1 - p + cut) / k_i`` after
    the drop (``p`` the case's true rate; a rate read from few samples would state the
    second too high for cases near 1, too low near 0). ``phi`` (at most 1) is the
    within-case variance pooled over cases against its pass/fail figure, for scores that
    vary less than pass or fail. A case at or below the cut goes to 0 and no longer varies.
    Cases are grouped by rate and samples, and each sum below is, between two sorted rates,
    a polynomial in the cut: prefix and suffix sums make each step of the search one
    evaluation, not one per case (5,000 cases of distinct rates in about 50 ms). The upper
    end's mean takes the delta method's second-order term too (its square root is
    concave; at n = 10 the first-order figure was caught 0.83 to 0.84 of the time).

    With one sample per case the noise is taken from the spread over cases (which also
    holds case difficulty, so the figure then errs large): every case at the mean ``m`` as
    a mean of ``1 / phi`` coin flips, ``phi`` that variance over ``m (1 - m)``, and a drop
    of ``delta`` moves the rate to ``m - delta``.

    Either way the upper end of the gate's interval is approximated in the sum and the sum
    of squares of the differences (delta method, with their covariance, from each case's
    central moments up to the 4th; its spread to first order), and the drop is the
    ``delta`` where that end lies below ``-max_drop`` with probability 0.8.

    None for fewer than two cases, or when no drop down to 0 is caught that often.
    """
    if (n := len(cases)) < 2:
        return None
    means = [mean(c) for c in cases]
    m = mean(means)
    z = z_of(level)
    if all(len(c) >= 2 for c in cases):
        margin = _per_case_margin(cases, means, n, z, max_drop)
    else:
        margin = _common_rate_margin(cases, means, m, n, z, max_drop)
    if m <= max_drop or margin(m) < 0:
        return None
    return _bisect_drop(margin, m)


def _per_case_margin(
    cases: Sequence[Sequence[float]],
    means: Sequence[float],
    n: int,
    z: float,
    max_drop: float,
) -> Callable[[float], float]:
    """The gate's margin at a drop, each case at its own rate (``detectable_drop``)."""
    within = math.fsum([_variance(c) / len(c) for c in cases])
    flipping = math.fsum([p * (1 - p) / (len(c) - 1) for c, p in zip(cases, means, strict=True)])
    # Every case at 0 or at 1 shows no noise at all: assume each sample a coin flip.
    phi = min(1.0, within / flipping) if flipping > 0 else 1.0
    groups = sorted(Counter(zip(means, (len(c) for c in cases), strict=True)).items())
    rates = [p for (p, _), _ in groups]
    # Per group, weighted by its count: the terms of a case the cut takes to 0 (d = -p, the
    # baseline's noise alone), and the count and terms of one the cut lowers (_dropping_terms).
    cut_to_zero, lowered = [], []
    for (p, k), count in groups:
        flips = min(1e9, k / phi) if phi > 0 else 1e9  # samples that never vary: no noise
        extra = phi * p * (1 - p) / (k * (k - 1))
        b2, b3, b4 = _case_moments(p, flips, extra)  # the baseline's
        zeroed = (-p, b2 + p * p, b2, max(4 * p * p * b2 + 4 * p * b3 + b4 - b2 * b2, 0.0))
        cut_to_zero.append([count * term for term in (*zeroed, -2 * p * b2 - b3)])
        lowered.append(
            [count, *(count * term for term in _dropping_terms(p, flips, extra, b2, b3, b4))]
        )
    # Each term summed over the groups below an index (prefix) and from it up (suffix), in
    # sorted order: the same figures in any order of cases.
    below = [list(accumulate(column, initial=0.0)) for column in zip(*cut_to_zero, strict=True)]
    above = [
        list(accumulate(reversed(column), initial=0.0))[::-1]
        for column in zip(*lowered, strict=True)
    ]
    # mean(min(p_i, cut)) is linear between sorted rates: at the rate of group j it is
    # (sum of the rates below + the count from j up x p_j) / n.
    reach = [-below[0][j] + above[0][j] * p for j, p in enumerate(rates)]

    def margin(delta: float) -> float:
        target = n * delta
        j = min(bisect.bisect_left(reach, target), len(rates) - 1)
        cut = delta if j == 0 else (target + below[0][j]) / above[0][j]
        split = bisect.bisect_right(rates, cut)  # the groups the cut takes to 0: below it
        s, q, var_s, var_q, cov = (column[split] for column in below)
        count, *terms = (column[split] for column in above)
        v = _polynomial(terms[0:3], cut)
        sums = (
            s - count * cut,
            q + v + count * cut * cut,
            var_s + v,
            var_q + _polynomial(terms[3:8], cut),
            cov + _polynomial(terms[8:12], cut),
        )
        return _gate_margin(sums, n, z, max_drop, curvature=True)

    return margin


def _common_rate_margin(
    cases: Sequence[Sequence[float]],
    means: Sequence[float],
    m: float,
    n: int,
    z: float,
    max_drop: float,
) -> Callable[[float], float]:
    """The gate's margin at a drop, every case at the mean rate (one sample per case)."""
    within = _variance(means)
    bernoulli = m * (1 - m)
    # Every case at 0 or every case at 1 shows no spread: assume each sample a coin flip.
    phi = min(1.0, within / bernoulli) if bernoulli > 0 else n / sum(len(c) for c in cases)
    flips = 1 / max(phi, 1e-9)
    b2, b3, b4 = _binomial_moments(m, flips)  # the baseline's

    def margin(delta: float) -> float:
        a2, a3, a4 = _binomial_moments(max(m - delta, 0.0), flips)  # the new run's
        v, mu3, mu4 = a2 + b2, a3 - b3, a4 + b4 + 6 * a2 * b2
        mu = -delta
        square = v + mu * mu  # E[d^2]
        sums = (
            n * mu,
            n * square,
            n * v,
            n * max(4 * mu * mu * v + 4 * mu * mu3 + mu4 - v * v, 0.0),
            n * (2 * mu * v + mu3),
        )
        return _gate_margin(sums, n, z, max_drop)

    return margin


def fisher_decline(before: tuple[int, int], now: tuple[int, int]) -> float:
    """The one-sided Fisher exact p-value that a case's pass rate fell: ``before`` and
    ``now`` are ``(passing samples, samples)``. The chance, were both runs one process,
    that the baseline's samples would hold at least this many of the passes."""
    (a, k1), (b, k2) = before, now
    t = a + b
    tail = sum(math.comb(k1, x) * math.comb(k2, t - x) for x in range(a, min(k1, t) + 1))
    return tail / math.comb(k1 + k2, t)  # exact integers, one correctly rounded division


def fisher_floor(before: tuple[int, int], now: tuple[int, int]) -> float:
    """The smallest p-value :func:`fisher_decline` can give with these margins (the passes
    all in the baseline): a case whose floor is above a threshold can never reach it."""
    (a, k1), (b, k2) = before, now
    top = min(k1, a + b)
    return fisher_decline((top, k1), (a + b - top, k2))


def tarone_threshold(floors: Sequence[float], alpha: float) -> float:
    """The per-case threshold that keeps the chance of any false alarm among these cases
    within ``alpha`` (Tarone's Bonferroni for discrete tests, 1990): ``alpha / K``, K the
    smallest count with at most K cases whose :func:`fisher_floor` reaches ``alpha / K``.
    Cases that cannot reach it (every sample passing in both runs, one sample a side)
    do not dilute the others."""
    ordered = sorted(floors)
    for k in range(1, len(ordered) + 1):
        if bisect.bisect_right(ordered, alpha / k) <= k:
            return alpha / k
    return alpha  # no case at all


def contains_zero(interval: Interval | None) -> bool:
    """Whether ``interval`` fails to resolve a difference (no interval resolves nothing)."""
    return interval is None or interval[0] <= 0 <= interval[1]


def cohen_kappa(a: Sequence[object], b: Sequence[object]) -> float | None:
    """Cohen's kappa of two raters' labels of the same items (any hashable categories).

    ``p_o`` is the share of items they label alike, ``p_e`` the share expected
    by chance from each rater's own frequencies: the sum over categories of
    ``p_a(k) x p_b(k)``. None with no items, or when ``p_e`` is 1. Computed in exact
    fractions (counts over counts), so a kappa of 0.4 is 0.4 and meets a gate of 0.4.
    """
    if len(a) != len(b):
        raise ValueError(f"cohen_kappa: {len(a)} labels against {len(b)}")
    if (n := len(a)) == 0:
        return None
    observed = Fraction(sum(x == y for x, y in zip(a, b, strict=True)), n)
    counts_a, counts_b = Counter(a), Counter(b)
    expected = Fraction(sum(counts_a[k] * counts_b[k] for k in counts_a), n * n)
    return None if expected >= 1 else float((observed - expected) / (1 - expected))


def fleiss_kappa(ratings: Sequence[Sequence[object]]) -> float | None:
    """Fleiss' kappa of ``ratings``: one row per item, each row the labels its raters gave
    (every row the same number of raters, at least two).

    ``P_i`` = (sum over categories of n_ik (n_ik - 1)) / (m (m - 1)) for an item
    rated by m raters, ``P_bar`` their mean, ``p_k`` the share of all labels in
    category k, ``P_e`` = sum of ``p_k^2``; kappa = (P_bar - P_e) / (1 - P_e).
    None with no items, or when ``P_e`` is 1.
    """
    if not ratings:
        return None
    if (m := len(ratings[0])) < 2 or any(len(row) != m for row in ratings):
        raise ValueError("fleiss_kappa: every item needs the same number (>= 2) of ratings")
    n = len(ratings)
    totals: Counter[object] = Counter()
    agreeing = 0  # pairs of raters of one item who agree, over every item; exact, as above
    for row in ratings:
        counts = Counter(row)
        totals.update(counts)
        agreeing += sum(c * (c - 1) for c in counts.values())
    p_bar = Fraction(agreeing, n * m * (m - 1))
    p_e = Fraction(sum(t * t for t in totals.values()), (n * m) ** 2)
    return None if p_e >= 1 else float((p_bar - p_e) / (1 - p_e))
