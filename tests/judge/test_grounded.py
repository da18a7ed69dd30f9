"""The judged ``grounded`` criterion: its prompt shows the context, its reply is read
strictly, and every quote is checked against the passages, never taken on trust."""

from __future__ import annotations

import json

import pytest

from pytest_rubric._results import Verdict
from pytest_rubric._trace import Passage
from pytest_rubric.criteria.grounded import Grounded
from pytest_rubric.judge.grounding import (
    GROUNDED_SCHEMA,
    grounding,
    read_grounded,
    supported,
)
from pytest_rubric.judge.replies import ReplyError

CONTEXT = (
    Passage("Refunds are issued within 30 days of delivery.", "refunds"),
    Passage("Standard shipping does not include weekends."),
)


def test_the_prompt_fences_each_passage_with_its_id_and_asks_with_the_schema() -> None:
    prompt = grounding(
        Grounded(id="g"), question="When?", response="Within 30 days.", context=CONTEXT
    )
    token = prompt.token
    assert f'<passage-{token} id="refunds">' in prompt.user
    assert f'<passage-{token} id="2">' in prompt.user  # no id: its 1-based position
    assert prompt.user.index(f"<context-{token}>") < prompt.user.index(f"<response-{token}>")
    assert prompt.schema is GROUNDED_SCHEMA


def test_a_reply_is_read_strictly() -> None:
    reason, claims = read_grounded(
        json.dumps({"reason": "ok", "claims": [{"claim": "c", "quote": "q"}]})
    )
    assert (reason, claims) == ("ok", [("c", "q")])
    for bad in ({"reason": "ok"}, {"reason": "", "claims": []}, {"reason": "r", "claims": [1]}):
        with pytest.raises(ReplyError):
            read_grounded(json.dumps(bad))
    # The reason is read as every judged reply's is: a copy of its description is no reason.
    copied = {"reason": "how far the context supports the response", "claims": []}
    with pytest.raises(ReplyError, match="the template's placeholder"):
        read_grounded(json.dumps(copied))


def test_credit_is_the_share_of_claims_whose_quote_is_in_the_context() -> None:
    outcome = supported(
        "two claims",
        [
            ("refund window", "issued within 30 days of delivery"),
            ("weekend shipping", "standard shipping includes weekends"),  # negation flipped
            ("free label", ""),
        ],
        CONTEXT,
        timeout=5,
    )
    assert outcome.verdict is Verdict.UNMET
    assert outcome.credit == pytest.approx(1 / 3)
    assert "unsupported: 'weekend shipping'; 'free label'" in outcome.reason


def test_no_claims_is_met_and_all_supported_is_met() -> None:
    assert supported("none", [], CONTEXT, timeout=5).verdict is Verdict.MET
    outcome = supported("one", [("window", "within 30 days of delivery")], CONTEXT, timeout=5)
    assert outcome.verdict is Verdict.MET and outcome.credit == 1.0
