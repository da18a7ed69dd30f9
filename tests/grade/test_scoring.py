"""The substance formulas (docs/explanation/scoring.md), through the grader and through
_grade.scoring.score directly."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from pytest_rubric import CaseResult, CriterionResult, Grader, Rubric, Verdict
from pytest_rubric._grade.scoring import score
from pytest_rubric.criteria import (
    AllOf,
    AnyOf,
    Forbidden,
    Fuzzy,
    Json,
    Length,
    Metric,
    Number,
    Regex,
)
from pytest_rubric.criteria.check import Answer, CheckContext
from tests.conftest import examples

MET, UNMET, ERROR, SKIPPED = Verdict.MET, Verdict.UNMET, Verdict.ERROR, Verdict.SKIPPED


def hit(cid: str, weight: float = 1, **extra: Any) -> dict[str, Any]:
    """A criterion that is MET by the answer ``HIT``."""
    return {"id": cid, "type": "any_of", "any_of": ["hit"], "weight": weight, **extra}


def miss(cid: str, weight: float = 1, **extra: Any) -> dict[str, Any]:
    """A criterion that is UNMET by the answer ``HIT``."""
    return {"id": cid, "type": "any_of", "any_of": ["absent"], "weight": weight, **extra}


def broken(cid: str, weight: float = 1) -> dict[str, Any]:
    """A criterion that always ends in ERROR (an invalid regex)."""
    return {"id": cid, "type": "regex", "pattern": "(", "weight": weight}


def judged(cid: str, weight: float = 1) -> dict[str, Any]:
    """A judge criterion: SKIPPED, since no judge is configured here."""
    return {"id": cid, "type": "judge", "requirement": "Is right", "weight": weight}


HIT = "hit"


def grade(*criteria: dict[str, Any], min_score: float | None = None) -> CaseResult:
    grader = Grader()
    compiled = grader.compile(Rubric(criteria=list(criteria)), min_score=min_score)
    return grader.grade(HIT, compiled)


# --- the formulas ----------------------------------------------------------------------------


def test_positive_and_negative_weights_both_met() -> None:
    result = grade(hit("good", 10), hit("bad", -5))
    assert [c.verdict for c in result.criteria] == [MET, MET]
    assert result.score == 0.5  # (10 - 5) / 10
    assert result.raw_score == 5


def test_forbidden_hit_subtracts_its_penalty() -> None:
    result = grade(
        hit("a", 2),
        hit("b", 2),
        {"id": "f", "type": "forbidden", "phrases": ["hit"], "penalty": 1.5},
    )
    assert result.raw_score == 2.5
    assert result.score == pytest.approx(2.5 / 4)


def test_forbidden_miss_does_not_count() -> None:
    result = grade(hit("a", 2), miss("b", 2), {"id": "f", "type": "forbidden", "phrases": ["x"]})
    assert result.raw_score == 2
    assert result.score == 0.5


def test_all_negative_rubric_with_no_error_scores_one() -> None:
    result = grade(miss("e1", -1), miss("e2", -1), miss("e3", -1))
    assert result.score == 1.0
    assert result.raw_score == 0


def test_all_negative_rubric_one_of_three_met() -> None:
    result = grade(hit("e1", -1), miss("e2", -1), miss("e3", -1))
    assert result.score == pytest.approx(2 / 3)
    assert result.raw_score == -1


def test_all_negative_rubric_with_unequal_penalties() -> None:
    result = grade(
        hit("e1", -3),
        {"id": "e2", "type": "forbidden", "phrases": ["absent"], "penalty": 1},
    )
    assert result.score == pytest.approx(1 - 3 / 4)


def test_all_negative_rubric_every_error_scores_zero() -> None:
    assert grade(hit("e1", -1), hit("e2", -2)).score == 0.0


def test_score_is_clamped_to_zero() -> None:
    result = grade(hit("good", 1), hit("bad", -5))
    assert result.score == 0.0
    assert result.raw_score == -4  # raw_score is not clamped


def test_positive_weights_only_fraction() -> None:
    result = grade(hit("a", 3), miss("b", 1))
    assert result.score == 0.75
    assert result.raw_score == 3


def test_zero_weight_criterion_does_not_change_the_score() -> None:
    assert grade(hit("a", 1), miss("b", 1), miss("z", 0)).score == 0.5
    assert grade(hit("a", 1), miss("b", 1), hit("z", 0)).score == 0.5


def test_skipped_criteria_are_excluded_from_p() -> None:
    result = grade(hit("a", 1), judged("j", 3))
    assert result.criteria[1].verdict is SKIPPED
    assert result.score == 1.0  # not 1 / 4
    assert result.raw_score == 1
    assert result.passed is True


def test_skipped_negative_criterion_is_excluded_from_n() -> None:
    result = grade(hit("e1", -1), judged("j", -3))
    assert result.score == 0.0  # not 1 - 1/4


def test_positive_error_criteria_earn_nothing() -> None:
    result = grade(hit("a", 1), broken("r", 3))
    assert result.criteria[1].verdict is ERROR
    assert result.score == 0.25  # P = 4: what could not be checked is not credited
    assert result.raw_score == 1
    assert result.passed is False  # an ERROR fails the case on its own
    assert result.status == "error"


def test_negative_error_criteria_are_not_errors_avoided() -> None:
    result = grade(hit("e1", -1), broken("r", -3))
    assert result.score == 0.0  # N = 1, not 4: an unchecked error is not one avoided
    assert grade(broken("r", -3)).score == 0.0


def test_only_skipped_criteria_do_not_pass() -> None:
    result = grade(judged("j", 1), min_score=0)
    assert result.score == 0.0
    assert result.passed is False


def test_style_axis_never_changes_score() -> None:
    base = grade(hit("a", 1), miss("b", 1))
    for style in (
        hit("s", 100, axis="style"),
        miss("s", 100, axis="style"),
        hit("s", -100, axis="style"),
        miss("s", -100, axis="style"),
    ):
        result = grade(hit("a", 1), miss("b", 1), style)
        assert result.score == base.score == 0.5
        assert result.raw_score == base.raw_score == 1


def test_style_axis_criteria_feed_style_score() -> None:
    result = grade(hit("a"), hit("s1", axis="style"), miss("s2", axis="style"))
    assert result.style_score == 0.5
    assert grade(hit("a")).style_score is None
    # Each counts its going the right way: a negative weight's error that did not happen is a
    # good style, a forbidden phrase said a bad one.
    assert grade(hit("a"), miss("s", -1, axis="style"), hit("t", axis="style")).style_score == 1
    forbidden = {"id": "f", "type": "forbidden", "phrases": ["hit"], "axis": "style"}
    assert grade(hit("a"), forbidden).style_score == 0


def broken_style(cid: str) -> dict[str, Any]:
    return {**broken(cid), "axis": "style"}


@pytest.mark.parametrize(
    ("substance", "passed"), [((hit("a"),), True), ((hit("a"), miss("b")), False)]
)
def test_a_style_error_leaves_the_outcome_to_substance(
    substance: tuple[dict[str, Any], ...], passed: bool
) -> None:
    result = grade(*substance, broken_style("s"), hit("t", axis="style"))
    assert result.criteria[-2].verdict is ERROR
    assert result.errors == [] and result.status == ("passed" if passed else "failed")
    assert result.passed is passed
    assert "style_error" in result.flags
    assert result.style_score == 1.0  # the mean of the style criteria that were decided
    assert grade(hit("a"), broken_style("s")).style_score is None
    assert "style_error" not in grade(hit("a"), hit("t", axis="style")).flags


def test_a_substance_error_beside_a_style_error_is_still_an_error() -> None:
    result = grade(hit("a"), broken("r"), broken_style("s"))
    assert [c.id for c in result.errors] == ["r"]
    assert result.status == "error" and result.passed is False


def test_style_negative_hit_is_not_a_known_wrong_claim() -> None:
    assert "known_wrong_claim" not in grade(hit("a"), hit("s", -1, axis="style")).flags
    assert "known_wrong_claim" in grade(hit("a"), hit("e", -1)).flags


# --- required ------------------------------------------------------------------------------------


def test_required_criterion_going_wrong_fails_even_at_score_one() -> None:
    # A zero-weight required check: it cannot move the score, only fail the case.
    result = grade(hit("a", 1), miss("must", 0, required=True))
    assert result.score == 1.0
    assert result.passed is False
    assert result.status == "failed"
    assert any("required criterion 'must'" in r for r in result.failure_reasons())


def test_a_style_criterion_cannot_be_required_style_never_fails_a_case() -> None:
    with pytest.raises(ValidationError, match="style never fails a case"):
        grade(hit("a", 1), miss("tone", 1, axis="style", required=True))


def test_required_negative_criterion_that_hits_fails() -> None:
    result = grade(
        hit("a", 10),
        {"id": "f", "type": "forbidden", "phrases": ["hit"], "penalty": 0.1, "required": True},
        min_score=0.5,
    )
    assert result.score == pytest.approx(0.99)
    assert result.passed is False


def test_required_criterion_going_right_passes() -> None:
    assert grade(hit("a", 1, required=True), miss("e", -1, required=True)).passed is True


def test_required_skipped_criterion_does_not_fail() -> None:
    # SKIPPED is not decided, so it has not gone the wrong way.
    result = grade(hit("a"), {**judged("j"), "required": True})
    assert result.passed is True


# --- the pass mark -------------------------------------------------------------------------------


def test_passes_exactly_at_two_thirds() -> None:
    result = grade(hit("a"), hit("b"), miss("c"), min_score=0.6666666666666666)
    assert result.score == pytest.approx(2 / 3)
    assert result.passed is True


def test_passes_exactly_at_four_fifths() -> None:
    result = grade(hit("a"), hit("b"), hit("c"), hit("d"), miss("e"), min_score=0.8)
    assert result.score == pytest.approx(0.8)
    assert result.passed is True


def test_passes_at_float_sum_mark() -> None:
    # 0.1 + 0.2 of 0.3 + 0.2: the float sum is not exactly 0.6, the mark is.
    result = grade(hit("a", 0.1), hit("b", 0.2), miss("c", 0.2), min_score=0.6)
    assert result.passed is True


def test_fails_just_below_the_mark() -> None:
    result = grade(hit("a"), hit("b"), miss("c"), min_score=0.67)
    assert result.passed is False
    assert any("below min_score" in r for r in result.failure_reasons())


def test_default_min_score_is_0_8() -> None:
    assert grade(hit("a"), hit("b"), hit("c"), hit("d"), miss("e")).min_score == 0.8
    assert grade(hit("a"), hit("b"), hit("c"), miss("d")).passed is False  # 0.75


def test_rubric_min_score_and_override() -> None:
    grader = Grader()
    rubric = Rubric(criteria=[hit("a"), miss("b")], min_score=0.5)
    assert grader.grade(HIT, grader.compile(rubric)).passed is True
    assert grader.grade(HIT, grader.compile(rubric, min_score=0.6)).passed is False
    lenient = Grader(default_min_score=0.5)
    unmarked = lenient.compile(Rubric(criteria=[hit("a"), miss("b")]))
    assert unmarked.min_score == 0.5
    assert lenient.grade(HIT, unmarked).passed is True


# --- _grade.scoring.score directly ---------------------------------------------------------------------


def result(weight: float, verdict: Verdict, credit: float | None = None, axis: str = "substance"):
    if credit is None:
        credit = 1.0 if verdict is MET else 0.0
    return CriterionResult(
        id="c", type="any_of", axis=axis, weight=weight, verdict=verdict, credit=credit, reason=""
    )


def test_score_reports_p_and_n() -> None:
    s = score([result(10, MET), result(2, UNMET), result(-5, MET), result(-1, UNMET)])
    assert s.positive == 12
    assert s.negative == 6
    assert s.raw_score == 5
    assert s.score == pytest.approx(5 / 12)
    assert s.empty is False


def test_score_ignores_error_skipped_and_style() -> None:
    s = score(
        [
            result(1, MET),
            result(100, ERROR),
            result(100, SKIPPED),
            result(100, UNMET, axis="style"),
            result(-100, MET, axis="style"),
        ]
    )
    assert (s.score, s.raw_score, s.positive, s.negative) == (1 / 101, 1.0, 101.0, 0.0)


def test_score_of_nothing_is_empty() -> None:
    s = score([result(1, SKIPPED), result(-1, ERROR)])
    assert s.empty is True
    assert s.score == 0.0
    s = score([result(1, SKIPPED), result(1, ERROR)])
    assert (s.empty, s.score) == (False, 0.0)


def test_score_uses_fractional_credit() -> None:
    s = score([result(2, MET, credit=0.75), result(2, UNMET, credit=0.25)])
    assert s.raw_score == 2.0
    assert s.score == 0.5


weights = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
verdicts = st.sampled_from([MET, UNMET])


@given(st.lists(st.tuples(weights, verdicts), max_size=30))
def test_score_always_in_unit_interval(items: list[tuple[float, Verdict]]) -> None:
    s = score([result(w, v) for w, v in items])
    assert 0.0 <= s.score <= 1.0
    assert s.raw_score == pytest.approx(sum(w for w, v in items if v is MET), abs=1e-6)


@given(
    st.lists(
        st.tuples(
            st.one_of(weights, st.sampled_from([0.0, -0.0, 1.0, -1.0])),
            st.sampled_from(list(Verdict)),
            st.floats(min_value=0, max_value=1),
            st.sampled_from(["substance", "style"]),
        ),
        max_size=30,
    )
)
def test_score_in_unit_interval_with_fractions_and_every_verdict(
    items: list[tuple[float, Verdict, float, str]],
) -> None:
    s = score([result(w, v, credit=c, axis=a) for w, v, c, a in items])
    assert 0.0 <= s.score <= 1.0
    assert s.positive >= 0 and s.negative >= 0


@given(st.lists(st.floats(min_value=1e-6, max_value=1e6), min_size=1, max_size=10))
def test_all_met_positive_rubric_scores_one(ws: list[float]) -> None:
    assert score([result(w, MET) for w in ws]).score == pytest.approx(1.0)


@given(st.lists(st.floats(min_value=-1e6, max_value=-1e-6), min_size=1, max_size=10))
def test_all_unmet_negative_rubric_scores_one(ws: list[float]) -> None:
    assert score([result(w, UNMET) for w in ws]).score == 1.0


# --- every deterministic check on arbitrary text ------------------------------------------------

DETERMINISTIC = [
    AnyOf(id="any", any_of=["loss", "1%", "café", "long–term"]),
    AllOf(id="all", all_of=["net present value", "99"]),
    Forbidden(id="forb", phrases=["maximum loss"], penalty=2),
    Regex(id="re", pattern=r"\bloss(es)?\b"),
    Regex(id="re_cs", pattern=r"[A-Z]{2,}", case_sensitive=True, invert=True),
    Number(id="num", value=1157.63, abs_tol=0.01),
    Number(id="num_rel", value=-0.12, rel_tol=0.1),
    Fuzzy(id="fz", any_of=["net present value", "é"], threshold=80),
    Length(id="len", min_words=1, max_words=50, min_chars=1, max_chars=500),
    Json(
        id="js",
        schema={
            "type": "object",
            "properties": {"a": {"type": "array", "items": {"enum": [1, 2]}}},
            "required": ["a"],
        },
    ),
    Metric(id="m", expected=["alpha", "beta"], unexpected=["gamma"], metric="f1"),
    Metric(id="m_spec", unexpected=["gamma"], metric="specificity"),
]
CHECKS = [(c, c.compile(CheckContext())) for c in DETERMINISTIC]

texts = st.one_of(
    st.text(),
    st.text(alphabet=st.sampled_from(list("0123456789.,-−%$()e kmloss{}[]\"':`\n"))),
    st.builds(lambda body: f"```json\n{body}\n```", st.text()),
)


@settings(max_examples=examples(300))
@given(texts)
def test_deterministic_checks_never_raise_on_arbitrary_text(text: str) -> None:
    answer = Answer(text)
    for criterion, check in CHECKS:
        outcome = check(answer, None)
        assert isinstance(outcome.verdict, Verdict), criterion.id
        # A valid criterion always decides: ERROR is for criteria that cannot be evaluated.
        assert outcome.verdict in (MET, UNMET), (criterion.id, outcome.reason)
        assert 0.0 <= outcome.credit <= 1.0
        assert isinstance(outcome.reason, str) and outcome.reason


@settings(max_examples=examples(100))
@given(texts)
def test_grading_arbitrary_text_gives_a_bounded_result(text: str) -> None:
    grader = Grader()
    compiled = grader.compile(Rubric(criteria=DETERMINISTIC))
    graded = grader.grade(text, compiled)
    assert 0.0 <= graded.score <= 1.0
    assert 0.0 <= graded.fluency <= 1.0
    assert 0.0 <= graded.confidence <= 1.0
    assert [c.verdict for c in graded.criteria if c.verdict not in (MET, UNMET)] == []
