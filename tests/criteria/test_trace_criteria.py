"""The six deterministic criteria over a trace: each mode, each bound, and ERROR where the
trace lacks what a criterion needs (never MET)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from pytest_rubric._render.table import trace_lines
from pytest_rubric._results import Outcome, Verdict
from pytest_rubric._schema import Case
from pytest_rubric._trace import Passage, ToolCall, Trace, Usage
from pytest_rubric.criteria.check import Answer, CheckContext
from pytest_rubric.criteria.tool_sequence import sequence_matches

LOOKUP = ToolCall("lookup_order", {"order_id": "42"}, True, "{}")
REFUND = ToolCall("issue_refund", {"order_id": "42", "amount": 30}, True, "{}")
FAILED = ToolCall("issue_refund", {"order_id": "42"}, False, '{"error": "declined"}')


def run(criterion: dict[str, Any], text: str = "", trace: Trace | None = None) -> Outcome:
    case = Case.model_validate({"id": "q", "criteria": [{"id": "c", **criterion}]})
    check = case.criteria[0].compile(CheckContext())
    return check(Answer(text, trace), case)


def calls(*made: ToolCall) -> Trace:
    return Trace("returned", tuple(made), llm_calls=len(made) + 1)


# --- tool_called -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given_", "trace", "verdict"),
    [
        ({}, calls(LOOKUP), Verdict.MET),
        ({}, calls(), Verdict.UNMET),
        ({"times": 0}, calls(), Verdict.MET),
        ({"times": 0}, calls(LOOKUP), Verdict.UNMET),
        ({"max_times": 1}, calls(LOOKUP, LOOKUP), Verdict.UNMET),
        ({"min_times": 2, "max_times": 3}, calls(LOOKUP, LOOKUP), Verdict.MET),
        ({"args": {"properties": {"order_id": {"const": "42"}}}}, calls(LOOKUP), Verdict.MET),
        ({"args": {"properties": {"order_id": {"const": "7"}}}}, calls(LOOKUP), Verdict.UNMET),
    ],
)
def test_tool_called_counts_the_matching_calls(
    given_: dict[str, Any], trace: Trace, verdict: Verdict
) -> None:
    assert (
        run({"type": "tool_called", "tool": "lookup_order", **given_}, trace=trace).verdict
        is verdict
    )


def test_tool_called_with_ok_counts_only_the_calls_that_succeeded() -> None:
    criterion = {"type": "tool_called", "tool": "issue_refund"}
    assert run(criterion, trace=calls(FAILED)).verdict is Verdict.MET
    assert run({**criterion, "ok": True}, trace=calls(FAILED)).verdict is Verdict.UNMET


def test_times_with_a_range_is_a_load_error() -> None:
    with pytest.raises(ValidationError, match="give `times` alone"):
        Case.model_validate(
            {
                "id": "q",
                "criteria": [
                    {"id": "c", "type": "tool_called", "tool": "t", "times": 1, "min_times": 1}
                ],
            }
        )


def test_an_args_schema_that_would_fetch_is_a_load_error() -> None:
    with pytest.raises(ValidationError, match="`args` cannot be used"):
        Case.model_validate(
            {
                "id": "q",
                "criteria": [
                    {
                        "id": "c",
                        "type": "tool_called",
                        "tool": "t",
                        "args": {"$ref": "https://example.com/s.json"},
                    }
                ],
            }
        )


@pytest.mark.parametrize(
    "criterion",
    [
        {"type": "tool_called", "tool": "t"},
        {"type": "tool_sequence", "tools": ["t"]},
        {"type": "trace_limits", "max_tool_calls": 3},
        {"type": "claims_backed", "claims": [{"id": "x", "any_of": ["done"], "tool": "t"}]},
    ],
)
def test_a_trace_criterion_without_a_trace_is_error(criterion: dict[str, Any]) -> None:
    outcome = run(criterion, "done")
    assert outcome.verdict is Verdict.ERROR and "no trace" in outcome.reason


def test_a_trace_that_does_not_show_its_calls_is_error_for_call_criteria() -> None:
    context_only = Trace("responses", context=(Passage("p"),))
    outcome = run({"type": "tool_called", "tool": "t", "times": 0}, trace=context_only)
    assert outcome.verdict is Verdict.ERROR and "does not show its calls" in outcome.reason


# --- tool_sequence -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "tools", "match", "expected"),
    [
        (["a", "x", "b"], ["a", "b"], "subsequence", True),
        (["b", "a"], ["a", "b"], "subsequence", False),
        (["a", "b"], ["a", "b"], "exact", True),
        (["a", "x", "b"], ["a", "b"], "exact", False),
        (["b", "a"], ["a", "b"], "unordered", True),
        (["a", "a", "b"], ["a", "b"], "unordered", False),
        (["a"], ["a", "b"], "subset", True),
        (["a", "c"], ["a", "b"], "subset", False),
        (["a", "b", "c"], ["a", "b"], "superset", True),
        (["a"], ["a", "b"], "superset", False),
    ],
)
def test_tool_sequence_modes(
    names: list[str], tools: list[str], match: str, expected: bool
) -> None:
    trace = calls(*(ToolCall(n, {}, True) for n in names))
    outcome = run({"type": "tool_sequence", "tools": tools, "match": match}, trace=trace)
    assert (outcome.verdict is Verdict.MET) is expected
    if not expected:  # "not an exact match", "not a subset match"
        article = "an" if match in ("exact", "unordered") else "a"
        assert f": not {article} {match} match of " in outcome.reason


word = st.sampled_from("abcd")


@given(st.lists(word, max_size=6), st.lists(word, min_size=1, max_size=4))
def test_the_modes_agree_with_their_definitions(names: list[str], tools: list[str]) -> None:
    t = tuple(tools)
    assert sequence_matches(names, t, "exact") == (names == tools)
    assert sequence_matches(names, t, "unordered") == (Counter(names) == Counter(tools))
    assert sequence_matches(names, t, "superset") == (not Counter(tools) - Counter(names))
    assert sequence_matches(names, t, "subset") == (not Counter(names) - Counter(tools))
    # exact implies every other mode
    if names == tools:
        assert all(sequence_matches(names, t, m) for m in ("subsequence", "unordered", "superset"))
    # a subsequence match is a superset match
    if sequence_matches(names, t, "subsequence"):
        assert sequence_matches(names, t, "superset")


# --- trace_limits ------------------------------------------------------------------------------


def test_trace_limits_holds_or_names_the_broken_limit() -> None:
    trace = Trace("returned", (LOOKUP, REFUND), 3, usage=Usage(100, 50, 0.02), latency_s=1.5)
    assert (
        run({"type": "trace_limits", "max_tool_calls": 2, "max_tokens": 150}, trace=trace).verdict
        is Verdict.MET
    )
    outcome = run({"type": "trace_limits", "max_llm_calls": 2, "max_latency_s": 2}, trace=trace)
    assert outcome.verdict is Verdict.UNMET and "model calls 3 > max_llm_calls 2" in outcome.reason


@pytest.mark.parametrize(
    ("limit", "lacking"),
    [
        ("max_cost_usd", "cost"),
        ("max_tokens", "tokens"),
        ("max_latency_s", "latency_s"),
        ("max_llm_calls", "model calls"),
    ],
)
def test_a_limit_whose_figure_the_trace_lacks_is_error_never_met(limit: str, lacking: str) -> None:
    trace = Trace("otel", (LOOKUP,), usage=Usage(10, None, None))
    outcome = run({"type": "trace_limits", limit: 1000}, trace=trace)
    assert outcome.verdict is Verdict.ERROR and f"the trace has no {lacking}" in outcome.reason


# --- context_recall and citations --------------------------------------------------------------

CONTEXT = Trace(
    "returned", context=(Passage("Refunds within 30 days.", "refunds"), Passage("Ships in 5 days."))
)


def test_context_recall_is_the_share_of_facts_retrieved() -> None:
    outcome = run(
        {"type": "context_recall", "facts": [["30 days", "a month"], ["receipt"]]}, trace=CONTEXT
    )
    assert outcome.verdict is Verdict.UNMET and outcome.credit == 0.5
    assert "'receipt'" in outcome.reason
    assert (
        run(
            {"type": "context_recall", "facts": [["thirty days", "30 days"]]}, trace=CONTEXT
        ).verdict
        is Verdict.MET
    )


@pytest.mark.parametrize(
    ("answer", "given_", "verdict"),
    [
        ("Within 30 days [refunds].", {}, Verdict.MET),
        ("Within 30 days [2].", {}, Verdict.MET),  # the second passage has no id: its position
        ("Within 30 days [refunds, 2].", {"min": 2}, Verdict.MET),
        ("Within 30 days.", {}, Verdict.UNMET),
        ("Within 30 days [9].", {}, Verdict.UNMET),
        ("Within 30 days (refunds).", {"pattern": r"\(([^)]+)\)"}, Verdict.MET),
        ("Within 30 days.", {"min": 0}, Verdict.MET),
    ],
)
def test_citations_name_passages_by_id_or_position(
    answer: str, given_: dict[str, Any], verdict: Verdict
) -> None:
    assert run({"type": "citations", **given_}, answer, CONTEXT).verdict is verdict


def test_context_criteria_without_a_context_are_error() -> None:
    for criterion in ({"type": "citations"}, {"type": "context_recall", "facts": [["x"]]}):
        outcome = run(criterion, "x [1]", calls(LOOKUP))
        assert outcome.verdict is Verdict.ERROR and "no context" in outcome.reason


def test_a_retrieval_that_found_nothing_is_a_retrieval_failure_not_a_missing_context() -> None:
    """``"context": []`` returned: the retriever was asked and found nothing, so nothing
    needed was retrieved (UNMET), where a trace that never said is ERROR."""
    from pytest_rubric._load.traces import read_returned

    _, empty = read_returned({"answer": "Within 30 days [1].", "context": []})
    assert empty is not None and empty.context == () and empty.context_known
    recall = run({"type": "context_recall", "facts": [["30 days"]]}, trace=empty)
    assert recall.verdict is Verdict.UNMET and recall.credit == 0.0
    assert "a retrieval failure" in recall.reason
    cites = run({"type": "citations"}, "Within 30 days [1].", empty)
    assert cites.verdict is Verdict.UNMET
    assert cites.reason == "cites '1', not in the context (the retriever found nothing)"
    assert trace_lines(empty) == ["context (0): the retriever found nothing"]


# --- claims_backed -----------------------------------------------------------------------------

CLAIMS = {
    "type": "claims_backed",
    "claims": [
        {
            "id": "refund",
            "any_of": ["refund has been issued"],
            "tool": "issue_refund",
            "args": {"required": ["amount"]},
        },
        {"id": "email", "pattern": r"emailed you", "tool": "send_email"},
    ],
}


def test_a_claim_without_its_call_is_unmet_and_named() -> None:
    outcome = run(CLAIMS, "Your refund has been issued.", calls(LOOKUP))
    assert outcome.verdict is Verdict.UNMET
    assert "refund ('refund has been issued') without a successful issue_refund" in outcome.reason


def test_a_failed_call_or_one_whose_args_do_not_fit_backs_nothing() -> None:
    assert run(CLAIMS, "Your refund has been issued.", calls(FAILED)).verdict is Verdict.UNMET
    no_amount = ToolCall("issue_refund", {"order_id": "42"}, True)
    assert run(CLAIMS, "Your refund has been issued.", calls(no_amount)).verdict is Verdict.UNMET
    assert run(CLAIMS, "Your refund has been issued.", calls(REFUND)).verdict is Verdict.MET


def test_claims_not_made_need_no_call_and_credit_is_the_backed_share() -> None:
    assert run(CLAIMS, "We are looking into it.", calls()).verdict is Verdict.MET
    outcome = run(CLAIMS, "Your refund has been issued and we emailed you.", calls(REFUND))
    assert outcome.verdict is Verdict.UNMET and outcome.credit == 0.5


def test_a_claim_gives_phrases_or_a_pattern() -> None:
    with pytest.raises(ValidationError, match=r"`any_of: \[\.\.\.\]` or `pattern:`"):
        Case.model_validate(
            {
                "id": "q",
                "criteria": [
                    {"id": "c", "type": "claims_backed", "claims": [{"id": "x", "tool": "t"}]}
                ],
            }
        )


def test_an_unbacked_claim_flags_the_result_and_a_plain_one_is_confidently_wrong() -> None:
    from pytest_rubric._grade.grader import Grader
    from pytest_rubric._grade.style import StyleThresholds

    case = Case.model_validate(
        {
            "id": "q",
            "criteria": [
                {"id": "c", **CLAIMS},
                {"id": "d", "type": "any_of", "any_of": ["refund"]},
            ],
        }
    )
    # The default thresholds: a plain statement (no marker either way, confidence 0.5) of
    # an action the trace lacks is confidently wrong, though the score (0.5) is not low.
    grader = Grader(thresholds=StyleThresholds())
    compiled = grader.compile(case)
    claimed = Answer("Your refund has been issued.", calls(LOOKUP))
    sure = grader.grade(claimed, compiled)
    assert (sure.score, sure.confidence) == (0.5, 0.5)
    assert {"unbacked_claim", "confidently_wrong"} <= set(sure.flags)
    backed = grader.grade(Answer("Your refund has been issued.", calls(REFUND)), compiled)
    assert not {"unbacked_claim", "confidently_wrong"} & set(backed.flags)
    unsure = Answer("I think your refund has been issued, but I am not sure.", calls(LOOKUP))
    hedged = grader.grade(unsure, compiled)
    assert hedged.confidence <= StyleThresholds().hedged
    assert "unbacked_claim" in hedged.flags and "confidently_wrong" not in hedged.flags
