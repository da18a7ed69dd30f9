"""The statistics behind every interval the plugin prints, as pure functions.

* :func:`wilson`: the Wilson score interval of a pass rate (k passes of n samples).
* :func:`bootstrap_mean`: the percentile bootstrap interval of a mean over
  cases. Each case enters as one value (the mean of its samples), so samples
  stay inside their case: a clustered bootstrap.
* :func:`paired_difference`: the same interval for the mean per-case
  difference between two sides graded on the same cases.
* :func:`detectable_drop`: the smallest drop the suite would detect with
  80 % power: ``(z + 0.8416) x SE``, SE the standard error of the mean.
* :func:`cohen_kappa`: agreement of two raters beyond chance,
  ``(p_o - p_e) / (1 - p_e)``; :func:`fleiss_kappa`: the same for several
  raters rating every item. Both are None where chance explains everything
  (``p_e = 1``: a single category), since nothing can be said there.

Every bootstrap draws ``RESAMPLES`` (2,000) resamples from
``numpy.random.default_rng(SEED)`` (seed 0), after sorting its input, so the
same values give the same interval byte for byte, in any order, in any
process. numpy is imported on first use: a session without results never
loads it. (Pure Python draws the 2,000 x 10,000 indices of a large suite in
seconds, numpy in a fraction of one; see ``bench/bench_stats.py``.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = [
    "POWER_Z",
    "RESAMPLES",
    "SEED",
    "bootstrap_mean",
    "cohen_kappa",
    "contains_zero",
    "detectable_drop",
    "fleiss_kappa",
    "paired_difference",
    "standard_error",
    "wilson",
    "z_of",
]

RESAMPLES = 2000
SEED = 0
POWER_Z = 0.8416  # the standard normal quantile of 0.80: 80 % power

# Resamples drawn per block: a 10,000-case suite would otherwise hold 2,000 x
# 10,000 indices (160 MB) at once. The block size depends on nothing but this
# constant, so the draws are the same on every machine.
_BLOCK_CELLS = 2_000_000

Interval = tuple[float, float]


def z_of(level: float) -> float:
    """The two-sided standard normal quantile of ``level`` (1.96 at 0.95)."""
    if not 0 < level < 1:
        raise ValueError(f"a confidence level is a number between 0 and 1, not {level!r}")
    from statistics import NormalDist  # on first use: pytest -VV imports this module

    return NormalDist().inv_cdf(1 - (1 - level) / 2)


def wilson(passes: int, n: int, level: float = 0.95) -> Interval:
    """The Wilson score interval of ``passes`` out of ``n`` at ``level``; (0, 1) when n is 0."""
    if n <= 0:
        return (0.0, 1.0)
    z = z_of(level)
    p = passes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # At p = 0 or 1 the bound is exactly 0 or 1; rounding must not move it off.
    lo = 0.0 if passes == 0 else min(p, centre - half)
    hi = 1.0 if passes == n else max(p, centre + half)
    return (lo, hi)


def standard_error(values: Sequence[float]) -> float | None:
    """The standard error of the mean of ``values`` (sample standard deviation / sqrt(n));
    None for fewer than two values."""
    n = len(values)
    if n < 2:
        return None
    mean = math.fsum(values) / n
    variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return math.sqrt(variance / n)


def detectable_drop(values: Sequence[float], level: float = 0.95) -> float | None:
    """The smallest drop in the mean of ``values`` a suite of these cases would detect with
    80 % power at ``level``: ``(z + 0.8416) x SE``. None for fewer than two cases."""
    se = standard_error(values)
    return None if se is None else (z_of(level) + POWER_Z) * se


def _percentile_interval(means: Any, level: float) -> Interval:
    import numpy as np

    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return (float(lo), float(hi))


def _resampled_means(values: Sequence[float], resamples: int, seed: int) -> Any:
    """The mean of each of ``resamples`` resamples (with replacement) of ``values``."""
    import numpy as np

    data = np.sort(np.asarray(values, dtype=np.float64))
    n = data.size
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_CELLS // n)
    means = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        # int32 draws: half the bits of the default int64, twice as fast, same law.
        picks = rng.integers(0, n, size=(stop - start, n), dtype=np.int32)
        means[start:stop] = np.take(data, picks).sum(axis=1) / n
    return means


def bootstrap_mean(
    values: Sequence[float],
    level: float = 0.95,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Interval | None:
    """The percentile bootstrap interval at ``level`` of the mean of ``values`` (one value per
    case); None when there is no value. The interval always contains the mean."""
    if not values:
        return None
    mean = math.fsum(values) / len(values)  # exact, so the same in any order
    if min(values) == max(values):
        return (mean, mean)
    lo, hi = _percentile_interval(_resampled_means(values, resamples, seed), level)
    # A percentile interval of a very skewed few cases can miss the mean by a
    # rounding step; the reported interval never excludes its own estimate.
    return (min(lo, mean), max(hi, mean))


def paired_difference(
    pairs: Sequence[tuple[float, float]],
    level: float = 0.95,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Interval | None:
    """The bootstrap interval of the mean of ``a - b`` over paired cases ``(a, b)``."""
    return bootstrap_mean([a - b for a, b in pairs], level, resamples=resamples, seed=seed)


def contains_zero(interval: Interval | None) -> bool:
    """Whether ``interval`` fails to resolve a difference (no interval resolves nothing)."""
    return interval is None or interval[0] <= 0 <= interval[1]


def cohen_kappa(a: Sequence[object], b: Sequence[object]) -> float | None:
    """Cohen's kappa of two raters' labels of the same items (any hashable categories).

    ``p_o`` is the share of items they label alike, ``p_e`` the share expected
    by chance from each rater's own frequencies: the sum over categories of
    ``p_a(k) x p_b(k)``. None with no items, or when ``p_e`` is 1.
    """
    if len(a) != len(b):
        raise ValueError(f"cohen_kappa: {len(a)} labels against {len(b)}")
    n = len(a)
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    categories = set(a) | set(b)
    expected = math.fsum((list(a).count(k) / n) * (list(b).count(k) / n) for k in categories)
    if expected >= 1:
        return None
    return (observed - expected) / (1 - expected)


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
    m = len(ratings[0])
    if m < 2 or any(len(row) != m for row in ratings):
        raise ValueError("fleiss_kappa: every item needs the same number (>= 2) of ratings")
    n = len(ratings)
    totals: dict[object, int] = {}
    agreement = []
    for row in ratings:
        counts: dict[object, int] = {}
        for label in row:
            counts[label] = counts.get(label, 0) + 1
            totals[label] = totals.get(label, 0) + 1
        agreement.append(sum(c * (c - 1) for c in counts.values()) / (m * (m - 1)))
    p_bar = math.fsum(agreement) / n
    p_e = math.fsum((t / (n * m)) ** 2 for t in totals.values())
    if p_e >= 1:
        return None
    return (p_bar - p_e) / (1 - p_e)
