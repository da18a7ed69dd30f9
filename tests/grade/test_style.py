"""Style heuristics and flags: measured, documented, and never part of the score."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_rubric import Grader, Rubric
from pytest_rubric._grade.style import (
    ASSERTIVE,
    HEDGES,
    StyleThresholds,
    confidence,
    flags,
    fluency,
    naive_score,
)
from pytest_rubric.criteria.normalize import normalize


def conf(text: str) -> float:
    """Confidence of an answer as the grader measures it (on the normalized text)."""
    return confidence(normalize(text))


# --- ranges ----------------------------------------------------------------------------------


@given(st.text())
def test_fluency_in_unit_interval(text: str) -> None:
    assert 0.0 <= fluency(text) <= 1.0


@given(st.text())
def test_confidence_in_unit_interval(text: str) -> None:
    assert 0.0 <= confidence(text) <= 1.0
    assert 0.0 <= conf(text) <= 1.0


@given(st.lists(st.sampled_from([*ASSERTIVE, *HEDGES, "the", "rate", "is", "?", "."]), max_size=40))
def test_confidence_in_unit_interval_for_marker_soup(words: list[str]) -> None:
    assert 0.0 <= conf(" ".join(words)) <= 1.0


# --- confidence ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0.5),
        ("The rate is five percent.", 0.5),  # no markers
        ("It is clearly right.", 0.75),  # 0.5 + 0.5 * 1 / max(1, 2)
        ("It is clearly and definitely right.", 1.0),  # two assertive, no hedge
        ("It is always, certainly, obviously right.", 1.0),
        ("It might be right.", 0.25),
        ("Perhaps it might be right.", 0.0),
        ("Clearly, it might be right.", 0.5),  # one of each cancels out
        ("Clearly and definitely, but it might be right.", 0.5 + 0.5 * 1 / 3),
        ("Is it right?", 0.25),  # every ? is a hedge
        ("I think so.", 0.25),
        ("I THINK so.", 0.25),  # matched on the casefolded answer
        ("I'm not sure.", 0.25),  # one marker, not also "not sure"
        ("I\u2019m not sure.", 0.25),  # curly apostrophe normalized
        ("It is 100% right.", 0.75),
        ("Mustard is the mayor's favourite.", 0.5),  # "must", "may" only as whole words
    ],
)
def test_confidence_values(text: str, expected: float) -> None:
    assert conf(text) == pytest.approx(expected)


def test_hedges_lower_confidence() -> None:
    base = "The answer is clearly and definitely five."
    assert conf(base) == 1.0
    one = conf(base + " Perhaps.")
    two = conf(base + " Perhaps, it might be.")
    assert one < 1.0
    assert two < one
    assert two == pytest.approx(0.5)


def test_every_listed_marker_is_counted() -> None:
    for marker in ASSERTIVE:
        assert conf(f"this is {marker} so") == 0.75, marker
    for marker in HEDGES:
        assert conf(f"this is {marker} so") == 0.25, marker


# --- fluency ---------------------------------------------------------------------------------


def test_fluency_empty_is_zero() -> None:
    assert fluency("") == 0.0
    assert fluency("  ...  ") == 0.0


def test_fluency_hand_computed() -> None:
    # 6 words: length 6/40; one sentence of 6 words: shape 6/8; well formed: 1;
    # variety 5 distinct ("the" twice) of 6.
    expected = (6 / 40 + 6 / 8 + 1 + 5 / 6) / 4
    assert fluency("The cat sat on the mat.") == pytest.approx(expected)


def test_fluency_badly_formed_sentence_scores_lower() -> None:
    assert fluency("the cat sat on the mat") < fluency("The cat sat on the mat.")


def test_fluency_of_a_full_answer_is_high() -> None:
    text = (
        "Value at risk estimates the loss that a portfolio should not exceed on most days. "
        "A one-day 99% VaR of one million dollars means that, on about one day in a hundred, "
        "losses are expected to be larger than that amount. It says nothing about how large "
        "those rare losses can become, which is why analysts also report expected shortfall."
    )
    assert fluency(text) > 0.85


# --- flags -----------------------------------------------------------------------------------

T = StyleThresholds()


def test_documented_default_thresholds() -> None:
    assert (T.confident, T.hedged, T.low_score, T.high_score) == (0.7, 0.35, 0.5, 0.8)


@pytest.mark.parametrize(
    ("score", "confidence_", "expected"),
    [
        (0.49, 0.7, ["confidently_wrong"]),  # at the confidence threshold
        (0.0, 1.0, ["confidently_wrong"]),
        (0.49, 0.69, []),
        (0.5, 0.7, []),  # score at low_score is not low
        (0.8, 0.35, ["hedged_but_right"]),  # both at their thresholds
        (1.0, 0.0, ["hedged_but_right"]),
        (0.79, 0.35, []),
        (0.8, 0.36, []),
        (0.6, 0.5, []),
    ],
)
def test_flags_at_thresholds(score: float, confidence_: float, expected: list[str]) -> None:
    assert flags(score=score, confidence_=confidence_, wrong_claim=False, thresholds=T) == expected


def test_known_wrong_claim_flag_and_order() -> None:
    assert flags(score=0.9, confidence_=0.5, wrong_claim=True, thresholds=T) == [
        "known_wrong_claim"
    ]
    assert flags(score=0.0, confidence_=0.9, wrong_claim=True, thresholds=T) == [
        "confidently_wrong",
        "known_wrong_claim",
    ]


def test_custom_thresholds_move_the_flags() -> None:
    strict = dataclasses.replace(T, confident=0.9, low_score=0.6)
    assert flags(score=0.55, confidence_=0.8, wrong_claim=False, thresholds=strict) == []
    assert flags(score=0.55, confidence_=0.9, wrong_claim=False, thresholds=strict) == [
        "confidently_wrong"
    ]
    loose = dataclasses.replace(T, hedged=0.5, high_score=0.6)
    assert flags(score=0.6, confidence_=0.5, wrong_claim=False, thresholds=loose) == [
        "hedged_but_right"
    ]


# --- through the grader ------------------------------------------------------------------------


def graded(text: str, *criteria: dict, thresholds: StyleThresholds | None = None):
    grader = Grader(thresholds=thresholds)
    return grader.grade(text, grader.compile(Rubric(criteria=list(criteria))))


NPV = {"id": "npv", "type": "number", "value": 1157.63, "abs_tol": 0.01}


def test_confidently_wrong_through_the_grader() -> None:
    result = graded("The NPV is clearly and definitely $2,000.", NPV)
    assert result.score == 0.0
    assert result.confidence == 1.0
    assert result.flags == ("confidently_wrong",)
    assert result.passed is False


def raises(response: str) -> bool:
    raise RuntimeError("the checker is down")


def test_an_answer_that_could_not_be_graded_is_never_flagged_on_its_score() -> None:
    """A criterion that could not be evaluated (a failed judge, a checker that raised) leaves
    the score unknown: a confident answer is an ERROR, not confidently wrong."""
    down = {"id": "down", "type": "callable", "function": "tests.grade.test_style:raises"}
    result = graded("The NPV is clearly and definitely $2,000.", NPV, down)
    assert result.status == "error" and result.flags == ()
    result = graded("I think the NPV might be about $1,157.63?", NPV, down)
    assert result.status == "error" and result.flags == ()


def test_hedged_but_right_through_the_grader() -> None:
    result = graded("I think the NPV might be about $1,157.63?", NPV)
    assert result.score == 1.0
    assert result.confidence == 0.0
    assert result.flags == ("hedged_but_right",)
    assert result.passed is True


def test_neutral_answer_has_no_flags() -> None:
    result = graded("The NPV is $1,157.63.", NPV)
    assert result.confidence == 0.5
    assert result.flags == ()


def test_known_wrong_claim_through_the_grader() -> None:
    forbidden = {"id": "f", "type": "forbidden", "phrases": ["maximum loss"]}
    assert "known_wrong_claim" in graded("It is the maximum loss. 1157.63", NPV, forbidden).flags
    assert "known_wrong_claim" not in graded("It is a loss. 1157.63", NPV, forbidden).flags


def test_grader_uses_its_thresholds() -> None:
    text = "The NPV is clearly $2,000."  # confidence 0.75, score 0
    assert graded(text, NPV).flags == ("confidently_wrong",)
    assert graded(text, NPV, thresholds=StyleThresholds(confident=0.76)).flags == ()
    assert graded(text, NPV, thresholds=StyleThresholds(confident=0.75)).flags == (
        "confidently_wrong",
    )


def test_style_does_not_change_score() -> None:
    plain = graded("1157.63", NPV)
    polished = graded("The NPV is clearly and definitely exactly $1,157.63, as computed.", NPV)
    hedged = graded("maybe 1157.63? i guess", NPV)
    assert plain.score == polished.score == hedged.score == 1.0
    assert polished.confidence > hedged.confidence


def test_naive_score_is_the_mean_of_three() -> None:
    assert naive_score(1.0, 0.5, 0.0) == 0.5
    result = graded("The NPV is clearly $2,000.", NPV)
    assert result.naive_score == pytest.approx(
        (result.score + result.fluency + result.confidence) / 3
    )
    assert result.naive_score > result.score  # the confident wrong answer reads well
