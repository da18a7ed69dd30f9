"""The statistics module against hand-checked values, and its properties."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rubric._report import stats as _stats
from pytest_rubric._results import wilson
from tests.conftest import examples


def test_z_of_the_usual_levels() -> None:
    assert _stats.z_of(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert _stats.z_of(0.90) == pytest.approx(1.644854, abs=1e-6)
    with pytest.raises(ValueError, match="between 0 and 1"):
        _stats.z_of(1.0)


def test_wilson_known_values() -> None:
    # 8 of 10 at 95 %: the textbook (0.490, 0.943).
    lo, hi = wilson(8, 10, 0.95)
    assert (lo, hi) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    # All pass: the upper bound is 1, the lower one n / (n + z^2).
    lo, hi = wilson(5, 5, 0.95)
    assert hi == 1.0
    assert lo == pytest.approx(5 / (5 + 1.959964**2), abs=1e-6)
    assert wilson(0, 0) == (0.0, 1.0)


def _agresti_coull(k: int, n: int, level: float) -> tuple[float, float]:
    """The textbook Agresti-Coull interval, clipped to [0, 1]."""
    z = _stats.z_of(level)
    total = n + z * z
    centre = (k + z * z / 2) / total
    half = z * math.sqrt(centre * (1 - centre) / total)
    return (max(0.0, min(centre - half, k / n)), min(1.0, max(centre + half, k / n)))


def test_the_mean_interval_of_pass_fail_cases_is_agresti_coull() -> None:
    for n in (1, 2, 10, 37):
        for k in range(n + 1):
            got = _stats.mean_interval([1.0] * k + [0.0] * (n - k), 0.95)
            assert got == pytest.approx(_agresti_coull(k, n, 0.95), abs=1e-12)
    # Ten cases, all passed: not "certain". The lower end is 0.679, far below 1.
    lo, hi = _stats.mean_interval([1.0] * 10)  # type: ignore[misc]
    assert (lo, hi) == (pytest.approx(0.679113, abs=1e-6), 1.0)
    assert _stats.mean_interval([]) is None
    # Below 0.95 it is computed at the level that halves the chance of a miss (at most 0.95).
    assert _stats.mean_interval([1.0] * 6 + [0.0] * 6, 0.8) == pytest.approx(
        _agresti_coull(6, 12, 0.9), abs=1e-12
    )
    assert _stats.covering(0.99) == 0.99 and _stats.covering(0.9) == 0.95


def _binomial_coverage(n: int, level: float, grid: int = 400) -> list[float]:
    """The exact chance that the interval of n pass/fail cases holds p, for p on a grid of
    (0, 1): computed from the binomial, not sampled."""
    intervals = [_stats.mean_interval([1.0] * k + [0.0] * (n - k), level) for k in range(n + 1)]
    coverage = []
    for i in range(1, grid):
        p = i / grid
        coverage.append(
            math.fsum(
                math.comb(n, k) * p**k * (1 - p) ** (n - k)
                for k, (lo, hi) in enumerate(intervals)  # type: ignore[misc]
                if lo <= p <= hi
            )
        )
    return coverage


@pytest.mark.parametrize("level", [0.5, 0.8, 0.9, 0.95, 0.99])
@pytest.mark.parametrize("n", [10, 11, 12, 13, 20, 30])
def test_exact_binomial_coverage_keeps_the_promise(n: int, level: float) -> None:
    # docs/explanation/statistics.md: at least level - 0.05 at every true
    # mean, level - 0.02 on average over true means, from n = 10 cases.
    coverage = _binomial_coverage(n, level)
    assert min(coverage) >= level - 0.05
    assert math.fsum(coverage) / len(coverage) >= level - 0.02


def test_exact_binomial_coverage_near_one_at_ten_cases() -> None:
    # The percentile bootstrap this replaced covered 0.95 about 40 % of the time at n = 10
    # (all ten passing gives [1, 1] with probability 0.60); here p = 0.95 and 0.99 are held.
    intervals = [_stats.mean_interval([1.0] * k + [0.0] * (10 - k)) for k in range(11)]
    for p, least in ((0.95, 0.98), (0.99, 0.99)):
        covered = math.fsum(
            math.comb(10, k) * p**k * (1 - p) ** (10 - k)
            for k, (lo, hi) in enumerate(intervals)  # type: ignore[misc]
            if lo <= p <= hi
        )
        assert covered >= least


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_pass_rate_ci_is_wilson_with_its_known_oscillation(k: int) -> None:
    # pass_rate_ci over k samples: 0.95 on average, but down to 0.82-0.83 for rates near 0
    # or 1 (what the docs say; the correctness interval promises more).
    intervals = [wilson(x, k) for x in range(k + 1)]
    coverage = [
        math.fsum(
            math.comb(k, x) * p**x * (1 - p) ** (k - x)
            for x, (lo, hi) in enumerate(intervals)
            if lo <= p <= hi
        )
        for p in (i / 400 for i in range(1, 400))
    ]
    assert math.fsum(coverage) / len(coverage) >= 0.95
    assert 0.82 <= min(coverage) < 0.85


def _paired_coverage(n: int, level: float, a: float, b: float) -> float:
    """The exact chance the paired interval the leaderboard reports, of two independent
    pass/fail subjects of true rates ``a`` and ``b``, holds ``a - b`` over n shared cases."""
    up, down = a * (1 - b), (1 - a) * b  # d = +1, d = -1
    covered = 0.0
    for ups in range(n + 1):
        for downs in range(n - ups + 1):
            pairs = [(1.0, 0.0)] * ups + [(0.0, 1.0)] * downs + [(0.0, 0.0)] * (n - ups - downs)
            lo, hi = _stats.paired_interval(pairs, level)  # type: ignore[misc]
            if lo <= a - b <= hi:
                zeros = n - ups - downs
                covered += (
                    math.comb(n, ups) * math.comb(n - ups, downs)
                    * up**ups * down**downs * (1 - up - down) ** zeros
                )  # fmt: skip
    return covered


@pytest.mark.parametrize("level", [0.7, 0.8, 0.85, 0.95, 0.99])
def test_exact_paired_coverage_keeps_the_promise(level: float) -> None:
    # At level - 0.05 at every pair of true rates, level - 0.02 on average; two equal
    # subjects (the interval holds 0: they share a tier) at least level - 0.02. Computed at
    # the level asked for, 0.8 gave 0.71 and equal subjects 0.77 (n = 13 and 14), 0.85 gave 0.79.
    rates = (0.02, 0.2, 0.5, 0.8, 0.85, 0.9, 0.95, 0.99)
    for n in (10, 13, 14):
        coverage = {(a, b): _paired_coverage(n, level, a, b) for a in rates for b in rates}
        assert min(coverage.values()) >= level - 0.05
        assert math.fsum(coverage.values()) / len(coverage) >= level - 0.02
        assert min(coverage[a, a] for a in rates) >= level - 0.02


def test_the_reported_paired_interval_is_computed_at_the_covering_level() -> None:
    pairs = [(1.0, 0.0)] * 3 + [(0.0, 1.0)] + [(0.0, 0.0)] * 6
    assert _stats.paired_interval(pairs, 0.8) == _stats.paired_difference(pairs, 0.9)
    assert _stats.paired_interval(pairs, 0.8) != _stats.paired_difference(pairs, 0.8)
    # From 0.95 up, the level itself: the default's figures stay byte for byte.
    for level in (0.95, 0.99):
        assert repr(_stats.paired_interval(pairs, level)) == repr(
            _stats.paired_difference(pairs, level)
        )
    assert _stats.paired_interval([]) is None


def test_paired_difference_and_zero() -> None:
    better = [(1.0, 0.0)] * 8 + [(0.0, 0.0)] * 2
    interval = _stats.paired_difference(better)
    assert interval is not None and interval[0] > 0
    assert not _stats.contains_zero(interval)
    # Two identical runs: centred on 0, but not zero-width (ten cases are not infinite).
    lo, hi = _stats.paired_difference([(1.0, 1.0), (0.5, 0.5)] * 5)  # type: ignore[misc]
    assert lo == -hi and lo < 0 < hi
    assert _stats.paired_difference([]) is None
    assert _stats.contains_zero(None)


def test_detectable_drop_grows_with_level_and_max_drop_and_shrinks_with_cases() -> None:
    cases = [[0.0], [1.0], [1.0], [1.0], [1.0]] * 6  # 30 cases at 0.8
    drop = _stats.detectable_drop(cases)
    assert drop is not None and 0 < drop < 0.8
    assert _stats.detectable_drop(cases, 0.99) > drop  # type: ignore[operator]
    assert _stats.detectable_drop(cases, max_drop=0.05) > drop  # type: ignore[operator]
    assert _stats.detectable_drop(cases * 4) < drop  # type: ignore[operator]
    # Repeats that agree within each case leave less noise between two runs.
    steady = [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0] * 3] * 6
    assert _stats.detectable_drop(steady) < drop  # type: ignore[operator]
    assert _stats.detectable_drop([[0.5]]) is None


def test_detectable_drop_with_one_sample_per_case_is_the_common_rate_figure() -> None:
    # Pinned: one sample per case (or any case with one) keeps the common-rate model.
    assert repr(_stats.detectable_drop([[0.0], [1.0], [1.0], [1.0], [1.0]] * 6)) == (
        "0.35352961329953414"
    )
    assert repr(_stats.detectable_drop([[0.25], [0.5], [1.0]] * 10, 0.9, max_drop=0.02)) == (
        "0.23872891467744722"
    )
    assert repr(_stats.detectable_drop([[1.0, 0.0], [1.0]] * 10)) == "0.2985722304045292"


@pytest.mark.parametrize(
    ("cases", "before"),
    [
        ([[1.0, 1.0, 1.0, 1.0, 0.0]] * 30, 0.19532283498282574),
        ([[1.0, 1.0, 0.0]] * 30, 0.2732034798860886),
        ([[0.5, 0.75, 1.0]] * 20, 0.21041761176605703),
        ([[1.0] * 5] * 30, 0.1262891632284071),
        ([[0.5] * 3] * 10, 0.2804555571861758),
    ],
)
def test_detectable_drop_when_every_case_has_the_same_samples(
    cases: list[list[float]], before: float
) -> None:
    # Every case alike: the per-case model is the common-rate one it replaced, but for the
    # new run's noise read without bias from k samples (not as k - 1 coin flips) and the
    # gate's upper end taken to second order; the figure moves by under 3 %, never up.
    drop = _stats.detectable_drop(cases)
    assert drop is not None
    assert drop == pytest.approx(before, rel=0.03)
    assert drop <= before


def _caught(rates: list[float], k: int, drop: float, rng: random.Random) -> bool:
    """Whether the paired gate at 0.95 fails a run of ``rates`` lowered by a common cut to
    a mean drop of ``drop``, against an independent baseline run (``k`` samples a case)."""
    ordered, n = sorted(rates), len(rates)
    below = 0.0  # mean(min(r, cut)) = drop, solved on the sorted rates
    for j, r in enumerate(ordered):
        if below + (n - j) * r >= n * drop:
            cut = (n * drop - below) / (n - j)
            break
        below += r
    else:
        cut = ordered[-1]

    def run(of: list[float]) -> list[float]:
        return [sum(rng.random() < r for _ in range(k)) / k for r in of]

    pairs = zip(run([max(r - cut, 0.0) for r in rates]), run(rates), strict=True)
    interval = _stats.paired_difference(list(pairs))
    return interval is not None and interval[1] < 0


@pytest.mark.parametrize(("a", "b"), [(0.4, 0.1), (1.6, 0.4)])
def test_a_detectable_drop_with_repeat_is_caught_four_times_in_five(a: float, b: float) -> None:
    # Thirty cases of widely spread difficulty (Beta, mean 0.8), five samples each: the
    # figure read from one run, then a true drop of that size against a new baseline.
    rng = random.Random(7)
    caught = tried = 0
    for _ in range(300):
        rates = [rng.betavariate(a, b) for _ in range(30)]
        drop = _stats.detectable_drop(
            [[1.0 if rng.random() < r else 0.0 for _ in range(5)] for r in rates]
        )
        if drop is None or drop >= sum(rates) / len(rates):
            continue
        tried += 1
        caught += _caught(rates, 5, drop, rng)
    assert 0.72 <= caught / tried <= 0.88


def _gate_power(n: int, m: float, drop: float, level: float) -> float:
    """The exact chance the paired gate fails a subject whose pass/fail cases, each at rate
    ``m`` in the baseline, are each at ``m - drop`` now (independent runs)."""
    up, down = (m - drop) * (1 - m), m * (1 - m + drop)  # d = now - baseline = +1 / -1
    power = 0.0
    for ups in range(n + 1):
        for downs in range(n - ups + 1):
            zeros = n - ups - downs
            pairs = [(1.0, 0.0)] * ups + [(0.0, 1.0)] * downs + [(0.0, 0.0)] * zeros
            interval = _stats.paired_difference(pairs, level)
            if interval is not None and interval[1] < 0:
                power += (
                    math.comb(n, ups) * math.comb(n - ups, downs)
                    * up**ups * down**downs * (1 - up - down) ** zeros
                )  # fmt: skip
    return power


@pytest.mark.parametrize(("n", "m"), [(30, 0.5), (30, 0.8), (40, 0.95)])
def test_a_detectable_drop_is_detected_four_times_in_five(n: int, m: float) -> None:
    # Cases at rate m, pass/fail: the drop computed from the figures such a run shows,
    # then the gate's power against a drop of exactly that size, computed exactly.
    passes = round(n * m)
    drop = _stats.detectable_drop([[1.0]] * passes + [[0.0]] * (n - passes))
    assert drop is not None
    assert 0.75 <= _gate_power(n, passes / n, drop, 0.95) <= 0.85


def test_fisher_decline_hand_checked() -> None:
    # Five of five, then none of five: the baseline holds all five passes, 1 / C(10, 5).
    assert _stats.fisher_decline((5, 5), (0, 5)) == 1 / 252
    # One sample a side: a flip is as likely as not, never significant.
    assert _stats.fisher_decline((1, 1), (0, 1)) == 0.5
    # Three of three, then none: 1 / C(6, 3).
    assert _stats.fisher_decline((3, 3), (0, 3)) == 1 / 20
    # No fall, two of five each time: P(X >= 2), X hypergeometric (10, 4, 5) = 155 / 210.
    assert _stats.fisher_decline((2, 5), (2, 5)) == 155 / 210
    assert _stats.fisher_floor((5, 5), (0, 5)) == 1 / 252
    assert _stats.fisher_floor((5, 5), (5, 5)) == 1.0  # every sample passed: nothing to find


def test_tarone_threshold_counts_only_cases_that_could_be_significant() -> None:
    # Ten cases that passed every sample in both runs cannot fail: the one case that could
    # gets the whole budget.
    assert _stats.tarone_threshold([1.0] * 10 + [1 / 252], 0.025) == 0.025
    # Three cases that could: the budget split three ways.
    assert _stats.tarone_threshold([1 / 252] * 3 + [1.0] * 7, 0.025) == pytest.approx(0.025 / 3)
    assert _stats.tarone_threshold([], 0.025) == 0.025


scores = st.lists(st.floats(min_value=0, max_value=1, allow_nan=False), min_size=1, max_size=40)


@settings(max_examples=examples(60), deadline=None)
@given(scores)
def test_interval_holds_the_mean_is_never_zero_width_and_stays_in_bounds(
    values: list[float],
) -> None:
    lo, hi = _stats.mean_interval(values)  # type: ignore[misc]
    mean = math.fsum(values) / len(values)
    assert 0 <= lo <= mean <= hi <= 1
    assert lo < hi
    if all(v == 1.0 for v in values):
        assert lo < 1 and hi == 1


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=30))
def test_paired_interval_holds_the_mean_difference_and_stays_in_bounds(
    pairs: list[tuple[float, float]],
) -> None:
    lo, hi = _stats.paired_difference(pairs)  # type: ignore[misc]
    mean = math.fsum(a - b for a, b in pairs) / len(pairs)
    assert -1 <= lo <= mean <= hi <= 1
    assert lo < hi


@settings(max_examples=examples(40), deadline=None)
@given(scores, st.randoms(use_true_random=False))
def test_intervals_are_invariant_to_result_order_byte_for_byte(
    values: list[float], rnd: random.Random
) -> None:
    shuffled = list(values)
    rnd.shuffle(shuffled)
    assert repr(_stats.mean_interval(shuffled)) == repr(_stats.mean_interval(values))
    pairs = list(zip(values, reversed(values), strict=True))
    moved = list(pairs)
    rnd.shuffle(moved)
    assert repr(_stats.paired_difference(moved)) == repr(_stats.paired_difference(pairs))
    cases = [[v, 1 - v] for v in values]
    rnd.shuffle(cases)
    assert repr(_stats.detectable_drop(cases)) == repr(
        _stats.detectable_drop([[v, 1 - v] for v in values])
    )


@settings(max_examples=examples(25), deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=4, max_size=12).filter(
        lambda v: len(set(v)) > 1
    )
)
def test_interval_narrows_as_cases_grow(values: list[float]) -> None:
    lo, hi = _stats.mean_interval(values)  # type: ignore[misc]
    big_lo, big_hi = _stats.mean_interval(values * 16)  # type: ignore[misc]
    assert big_hi - big_lo < hi - lo


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(min_value=0, max_value=50), st.integers(min_value=1, max_value=50))
def test_wilson_contains_the_rate(k: int, n: int) -> None:
    k = min(k, n)
    lo, hi = wilson(k, n)
    assert 0 <= lo <= k / n <= hi <= 1
    lo4, hi4 = wilson(4 * k, 4 * n)
    assert hi4 - lo4 < hi - lo


# --- agreement: Cohen's and Fleiss' kappa, against values worked by hand ---------------------


def test_cohen_kappa_of_a_two_by_two_table() -> None:
    # 20 both yes, 5 yes/no, 10 no/yes, 15 both no: p_o = 35/50 = 0.7; the first rater says
    # yes 25/50, the second 30/50, so p_e = 0.5 x 0.6 + 0.5 x 0.4 = 0.5; kappa = 0.2 / 0.5.
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    # Exactly: in floats 0.7 - 0.5 is 0.19999999999999996, and a kappa gate of 0.4 failed it.
    assert _stats.cohen_kappa(a, b) == 0.4
    assert _stats.cohen_kappa(b, a) == 0.4
    assert _stats.cohen_kappa(a, a) == 1.0
    # Always the opposite of a balanced rater: p_o = 0, p_e = 0.5, kappa = -1.
    assert _stats.cohen_kappa(["y", "n"], ["n", "y"]) == pytest.approx(-1.0)
    # One category only: chance explains everything, kappa says nothing.
    assert _stats.cohen_kappa(["y", "y"], ["y", "y"]) is None
    assert _stats.cohen_kappa([], []) is None
    with pytest.raises(ValueError, match="2 labels against 1"):
        _stats.cohen_kappa(["y", "n"], ["y"])


def test_fleiss_kappa_worked_by_hand() -> None:
    # Three raters, three items: P_i = 1, 1/3, 1, so P_bar = 7/9; 5 of 9 labels are M, so
    # P_e = (5/9)^2 + (4/9)^2 = 41/81; kappa = (63/81 - 41/81) / (40/81) = 22/40.
    ratings = [["M", "M", "M"], ["M", "M", "U"], ["U", "U", "U"]]
    assert _stats.fleiss_kappa(ratings) == pytest.approx(0.55)
    # Two raters: Fleiss' kappa is Scott's pi. 1 agreement of 2, labels M 1/4, U 3/4:
    # P_bar = 1/2, P_e = 1/16 + 9/16 = 5/8, kappa = (1/2 - 5/8) / (3/8) = -1/3.
    assert _stats.fleiss_kappa([["M", "U"], ["U", "U"]]) == pytest.approx(-1 / 3)
    assert _stats.fleiss_kappa([["M", "M"], ["M", "M"]]) is None
    assert _stats.fleiss_kappa([]) is None
    with pytest.raises(ValueError, match="same number"):
        _stats.fleiss_kappa([["M", "M"], ["M"]])


def test_fleiss_kappa_of_the_textbook_table() -> None:
    # Fleiss (1971) as tabulated on Wikipedia: 10 items, 14 raters, 5 categories; kappa 0.210.
    counts = [
        [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
    ]  # fmt: skip
    ratings = [[k for k, c in enumerate(row) for _ in range(c)] for row in counts]
    assert _stats.fleiss_kappa(ratings) == pytest.approx(0.20993, abs=1e-5)
