"""The statistics module against hand-checked values, and its properties."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rubric import _stats


def test_z_of_the_usual_levels() -> None:
    assert _stats.z_of(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert _stats.z_of(0.90) == pytest.approx(1.644854, abs=1e-6)
    with pytest.raises(ValueError, match="between 0 and 1"):
        _stats.z_of(1.0)


def test_wilson_known_values() -> None:
    # 8 of 10 at 95 %: the textbook (0.490, 0.943).
    lo, hi = _stats.wilson(8, 10, 0.95)
    assert (lo, hi) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    # All pass: the upper bound is 1, the lower one n / (n + z^2).
    lo, hi = _stats.wilson(5, 5, 0.95)
    assert hi == 1.0
    assert lo == pytest.approx(5 / (5 + 1.959964**2), abs=1e-6)
    assert _stats.wilson(0, 0) == (0.0, 1.0)


def test_bootstrap_hand_checked() -> None:
    # Two cases, 0 and 1: a resample's mean is 0, 0.5 or 1 with probability 1/4, 1/2,
    # 1/4, so the 2.5th and 97.5th percentiles are 0 and 1.
    assert _stats.bootstrap_mean([0.0, 1.0]) == (0.0, 1.0)
    # Four cases, one of them 1: the resampled mean is k/4, k ~ Binomial(4, 1/4);
    # P(k = 0) = 0.32 > 0.025, P(k <= 2) = 0.949 < 0.975 <= P(k <= 3) = 0.996.
    assert _stats.bootstrap_mean([0.0, 0.0, 0.0, 1.0]) == (0.0, 0.75)


def test_bootstrap_degenerate_inputs() -> None:
    assert _stats.bootstrap_mean([]) is None
    assert _stats.bootstrap_mean([0.4]) == (0.4, 0.4)
    assert _stats.bootstrap_mean([0.5, 0.5, 0.5]) == (0.5, 0.5)


def test_bootstrap_is_reproducible_byte_for_byte() -> None:
    draw = random.Random(3)
    values = [draw.random() for _ in range(50)]
    first = _stats.bootstrap_mean(values)
    assert repr(_stats.bootstrap_mean(list(values))) == repr(first)


def test_paired_difference_and_zero() -> None:
    better = [(1.0, 0.0)] * 8 + [(0.0, 0.0)] * 2
    interval = _stats.paired_difference(better)
    assert interval is not None and interval[0] > 0
    assert not _stats.contains_zero(interval)
    assert _stats.contains_zero(_stats.paired_difference([(1.0, 1.0), (0.5, 0.5)]))
    assert _stats.contains_zero(None)


def test_detectable_drop_formula() -> None:
    # Five 0s and five 1s: SE = sqrt((10 x 0.25 / 9) / 10) = 1/6.
    values = [0.0, 1.0] * 5
    assert _stats.standard_error(values) == pytest.approx(1 / 6)
    expected = (1.959964 + 0.8416) / 6
    assert _stats.detectable_drop(values) == pytest.approx(expected, abs=1e-6)
    assert _stats.detectable_drop([0.5]) is None
    # A wider level needs a larger drop.
    assert _stats.detectable_drop(values, 0.99) > _stats.detectable_drop(values, 0.95)  # type: ignore[operator]


scores = st.lists(st.floats(min_value=0, max_value=1, allow_nan=False), min_size=1, max_size=40)


@settings(max_examples=40, deadline=None)
@given(scores)
def test_interval_contains_the_estimate(values: list[float]) -> None:
    lo, hi = _stats.bootstrap_mean(values)  # type: ignore[misc]
    mean = math.fsum(values) / len(values)
    assert lo <= mean <= hi
    assert 0 <= lo <= hi <= 1


@settings(max_examples=40, deadline=None)
@given(scores, st.randoms(use_true_random=False))
def test_interval_is_invariant_to_result_order(values: list[float], rnd: random.Random) -> None:
    shuffled = list(values)
    rnd.shuffle(shuffled)
    assert _stats.bootstrap_mean(shuffled) == _stats.bootstrap_mean(values)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=4, max_size=12).filter(
        lambda v: len(set(v)) > 1
    )
)
def test_interval_narrows_as_cases_grow(values: list[float]) -> None:
    lo, hi = _stats.bootstrap_mean(values)  # type: ignore[misc]
    big_lo, big_hi = _stats.bootstrap_mean(values * 16)  # type: ignore[misc]
    assert big_hi - big_lo < hi - lo


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=50), st.integers(min_value=1, max_value=50))
def test_wilson_contains_the_rate(k: int, n: int) -> None:
    k = min(k, n)
    lo, hi = _stats.wilson(k, n)
    assert 0 <= lo <= k / n <= hi <= 1
    lo4, hi4 = _stats.wilson(4 * k, 4 * n)
    assert hi4 - lo4 < hi - lo


# --- agreement: Cohen's and Fleiss' kappa, against values worked by hand ---------------------


def test_cohen_kappa_of_a_two_by_two_table() -> None:
    # 20 both yes, 5 yes/no, 10 no/yes, 15 both no: p_o = 35/50 = 0.7; the first rater says
    # yes 25/50, the second 30/50, so p_e = 0.5 x 0.6 + 0.5 x 0.4 = 0.5; kappa = 0.2 / 0.5.
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert _stats.cohen_kappa(a, b) == pytest.approx(0.4)
    assert _stats.cohen_kappa(b, a) == pytest.approx(0.4)
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
