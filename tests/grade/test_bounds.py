"""The bounds rule (``_grade.bounds``): a case whose judged criteria could not be asked.

The property: the verdict the rule gives is the one every answer of the judge
would give (PASSED, FAILED), or the answers disagree (undecided), and the bounds
are the lowest and highest score any answer gives, for any weights (negative
judged criteria, all-negative rubrics), ``required`` criteria, report-only
cases, and repeats under every ``pass_when`` rule.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_rubric._grade.bounds import bounds, settle_unjudged, skip_reason
from pytest_rubric._grade.scoring import item_passes, passes, score
from pytest_rubric._results import CaseResult, CriterionResult, Sample, Verdict


def criterion(
    cid: str, weight: float, verdict: Verdict, *, required: bool = False, axis: str = "substance"
) -> CriterionResult:
    credit = 1.0 if verdict is Verdict.MET else 0.0
    return CriterionResult(
        id=cid,
        type="judge" if verdict is Verdict.SKIPPED else "any_of",
        axis=axis,
        weight=weight,
        verdict=verdict,
        credit=credit,
        reason="no key for judge openai:x (ini rubric_judge in pytest.ini): set OPENAI_API_KEY"
        if verdict is Verdict.SKIPPED
        else "",
        required=required,
    )


def sample_of(criteria: list[CriterionResult], min_score: float | None) -> Sample:
    scored = score(criteria)
    ok = passes(criteria, case_score=scored.score, min_score=min_score, scored=scored)
    return Sample(scored.score, scored.raw_score, ok, criteria)


def case(
    samples: list[list[CriterionResult]],
    *,
    min_score: float | None = 0.8,
    pass_when: str | float = "mean",
) -> CaseResult:
    graded = [sample_of(s, min_score) for s in samples]
    mean = math.fsum(s.score for s in graded) / len(graded)
    passed = (
        graded[0].passed
        if len(graded) == 1
        else item_passes(graded, pass_when=pass_when, min_score=min_score, score=mean)  # type: ignore[arg-type]
    )
    return CaseResult(
        nodeid="evals/wine.rubric.yaml::q[bot]",
        suite="wine",
        case="q",
        subject="bot",
        score=mean,
        raw_score=0.0,
        min_score=min_score,
        passed=passed,
        criteria=samples[0],
        fluency=0.5,
        confidence=0.5,
        naive_score=0.5,
        pass_when=pass_when,
        samples=graded if len(graded) > 1 else [],
    )


def every_answer(result: CaseResult) -> list[tuple[float, bool]]:
    """The item's score and verdict for every verdict the judge could give each skipped
    criterion of each sample (MET or UNMET; a score criterion's credits lie between)."""
    slots = [
        (i, j)
        for i, s in enumerate(result.sample_list)
        for j, c in enumerate(s.criteria)
        if c.verdict is Verdict.SKIPPED
    ]
    outcomes = []
    for choice in itertools.product((Verdict.MET, Verdict.UNMET), repeat=len(slots)):
        samples = [list(s.criteria) for s in result.sample_list]
        for (i, j), verdict in zip(slots, choice, strict=True):
            c = samples[i][j]
            samples[i][j] = replace(
                c, verdict=verdict, credit=1.0 if verdict is Verdict.MET else 0.0
            )
        judged = case(samples, min_score=result.min_score, pass_when=result.pass_when)
        outcomes.append((judged.score, judged.passed))
    return outcomes


weights = st.sampled_from([-3.0, -1.0, -0.5, 0.5, 1.0, 2.0, 5.0])
criteria_lists = st.lists(
    st.tuples(
        weights,
        st.sampled_from([Verdict.MET, Verdict.UNMET, Verdict.SKIPPED]),
        st.booleans(),  # required
        st.sampled_from(["substance", "substance", "style"]),
    ),
    min_size=1,
    max_size=5,
)


@given(
    shapes=st.lists(criteria_lists, min_size=1, max_size=1),
    repeat=st.integers(1, 3),
    min_score=st.sampled_from([None, 0.0, 0.5, 0.8, 1.0]),
    pass_when=st.sampled_from(["mean", "all", "any", 0.5]),
    data=st.data(),
)
def test_the_verdict_and_bounds_hold_for_every_answer_the_judge_could_give(
    shapes: list[list[tuple[float, Verdict, bool, str]]],
    repeat: int,
    min_score: float | None,
    pass_when: str | float,
    data: st.DataObject,
) -> None:
    shape = shapes[0]
    # Every sample has the same criteria; the deterministic ones may go either way in each.
    samples = []
    for index in range(repeat):
        samples.append(
            [
                criterion(
                    f"c{k}",
                    w,
                    v
                    if v is Verdict.SKIPPED or index == 0
                    else data.draw(st.sampled_from([Verdict.MET, Verdict.UNMET])),
                    required=r,
                    axis=a,
                )
                for k, (w, v, r, a) in enumerate(shape)
            ]
        )
    skipped = sum(v is Verdict.SKIPPED for _, v, _, _ in shape) * repeat
    if skipped > 8:
        return
    result = case(samples, min_score=min_score, pass_when=pass_when)
    found = bounds(result)
    if skipped == 0:
        assert found is None
        return
    assert found is not None
    outcomes = every_answer(result)
    scores = [s for s, _ in outcomes]
    verdicts = {p for _, p in outcomes}
    assert found.low == pytest.approx(min(scores), abs=1e-9)
    assert found.high == pytest.approx(max(scores), abs=1e-9)
    expected = {frozenset({True}): "passed", frozenset({False}): "failed"}.get(
        frozenset(verdicts), "undecided"
    )
    assert found.verdict == expected
    settled = settle_unjudged(result)
    assert settled.passed is (expected == "passed")
    assert (settled.skipped_bounds is not None) is (expected == "undecided")


def test_six_failed_points_beside_one_judged_fail_whatever_the_judge_says() -> None:
    result = case(
        [
            [criterion(f"d{i}", 1, Verdict.UNMET) for i in range(6)]
            + [criterion("j", 1, Verdict.SKIPPED)]
        ]
    )
    settled = settle_unjudged(result)
    assert (settled.passed, settled.skipped_bounds) == (False, None)
    found = bounds(result)
    assert found is not None and found.high == pytest.approx(1 / 7)


def test_the_reason_gives_the_bounds_as_written_in_the_docs() -> None:
    result = case(
        [
            [criterion(f"d{i}", 1, Verdict.MET) for i in range(4)]
            + [criterion("d4", 1, Verdict.UNMET), criterion("j", 5, Verdict.SKIPPED)]
        ]
    )
    settled = settle_unjudged(result)
    assert settled.skipped_bounds == pytest.approx((0.4, 0.9))
    assert skip_reason(settled).startswith(
        "score between 0.40 and 0.90 whatever the judge says; min_score 0.80 (no key for judge"
    )


def test_a_required_judged_criterion_keeps_a_high_scoring_case_undecided() -> None:
    result = case(
        [[criterion("d", 9, Verdict.MET), criterion("j", 1, Verdict.SKIPPED, required=True)]]
    )
    settled = settle_unjudged(result)
    assert settled.skipped_bounds == pytest.approx((0.9, 1.0))
    assert "required criterion 'j' needs the judge" in skip_reason(settled)


def test_a_report_only_case_passes_unless_a_required_criterion_needs_the_judge() -> None:
    plain = case(
        [[criterion("d", 1, Verdict.UNMET), criterion("j", 1, Verdict.SKIPPED)]], min_score=None
    )
    assert settle_unjudged(plain).passed is True
    required = case(
        [[criterion("d", 1, Verdict.UNMET), criterion("j", 1, Verdict.SKIPPED, required=True)]],
        min_score=None,
    )
    settled = settle_unjudged(required)
    assert settled.skipped_bounds == pytest.approx((0.0, 0.5))
    assert "min_score none (report-only)" in skip_reason(settled)


def test_an_error_stays_an_error_whatever_the_judge_says() -> None:
    result = case(
        [
            [
                criterion("d", 1, Verdict.MET),
                replace(criterion("e", 1, Verdict.UNMET), verdict=Verdict.ERROR),
                criterion("j", 1, Verdict.SKIPPED),
            ]
        ]
    )
    assert settle_unjudged(result) is result
