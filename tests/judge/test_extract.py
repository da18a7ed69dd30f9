"""``extract`` criteria: the judge reads a value, a deterministic check decides."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_rubric.criteria import Extract
from pytest_rubric.judge.prompts import extraction, one_shot
from pytest_rubric.judge.replies import ReplyError, read_one, read_one_shot
from tests.fake_llm import FakeLLM, Recorded, json_reply
from tests.judge.test_judge_e2e import judge_args

Write = Callable[[str, str], Path]

RATE = Extract.model_validate(
    {
        "id": "rate",
        "extract": "the annual interest rate, as a fraction",
        "returns": "number",
        "check": {"type": "number", "value": 0.05, "abs_tol": 0.001},
    }
)


def _reply(value: Any, **extra: Any) -> str:
    return json.dumps({"reason": "it says so", "value": value, "evidence": ["5%"], **extra})


def test_the_check_decides_on_the_extracted_value() -> None:
    graded = read_one(_reply(0.05), RATE)
    assert (graded.met, graded.credit) == (True, 1.0)
    assert graded.reason == "value 0.05: 0.05 (target 0.05 ± 0.001) (read: it says so)"
    assert not read_one(_reply(0.06), RATE).met


def test_a_verdict_the_judge_volunteers_is_ignored() -> None:
    assert not read_one(_reply(0.06, verdict="MET", score=5), RATE).met
    assert read_one(_reply(0.05, verdict="UNMET"), RATE).met


def test_a_reply_without_evidence_is_read_for_its_value() -> None:
    assert read_one(json.dumps({"reason": "it says 5%", "value": 0.05}), RATE).met


def test_no_value_is_unmet_never_an_invented_one() -> None:
    graded = read_one(_reply(None), RATE)
    assert (graded.met, graded.error) == (False, False)
    assert graded.reason.startswith("no value: the judge found no value in the response")


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ({"reason": "r", "evidence": []}, 'missing "value" (a number, or null'),
        (
            {"reason": "r", "value": "5%", "evidence": []},
            "\"value\" must be a number or null, got '5%'",
        ),
        ({"reason": "r", "value": True, "evidence": []}, '"value" must be a number or null'),
        ({"reason": "r", "value": 0.05, "evidence": "5%"}, '"evidence" must be a list of exact'),
        ({"reason": "r", "value": 0.05, "evidence": [1]}, '"evidence" must be a list of exact'),
        ({"value": 0.05, "evidence": []}, 'missing "reason"'),
        ({"reason": "r", "verdict": "MET"}, 'missing "value"'),
    ],
)
def test_a_reply_that_does_not_fit_is_a_bad_reply(reply: dict[str, Any], message: str) -> None:
    with pytest.raises(ReplyError) as info:
        read_one(json.dumps(reply), RATE)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("returns", "check", "value", "met"),
    [
        ("string", {"type": "any_of", "any_of": ["paris"]}, "Paris, France", True),
        ("boolean", {"type": "regex", "pattern": "^true$"}, True, True),
        ("boolean", {"type": "regex", "pattern": "^true$"}, False, False),
        ("list", {"type": "all_of", "all_of": ["a", "b"]}, ["a", "b"], True),
        ("list", {"type": "length", "max_chars": 5}, ["a", "b", "c"], False),
    ],
)
def test_every_kind_of_value_reaches_its_check(
    returns: str, check: dict[str, Any], value: Any, met: bool
) -> None:
    criterion = Extract.model_validate(
        {"id": "x", "extract": "it", "returns": returns, "check": check}
    )
    assert read_one(_reply(value), criterion).met is met
    with pytest.raises(ReplyError, match='"value" must be'):
        read_one(_reply({"an": "object"}), criterion)


def test_the_prompt_asks_for_a_reading_and_the_schema_types_the_value() -> None:
    prompt = extraction(RATE, question="q", response="r")
    assert "You do not grade the response" in prompt.system
    assert "What to extract: the annual interest rate, as a fraction" in prompt.system
    assert "MET" not in prompt.system
    assert prompt.schema["properties"]["value"] == {"type": ["number", "null"]}
    assert prompt.schema["required"] == ["reason", "value", "evidence"]
    shot = one_shot([RATE], question="q", response="r")
    assert "extract a value: a JSON number" in shot.system
    assert {"value", "evidence"} <= set(
        shot.schema["properties"]["criteria"]["prefixItems"][0]["properties"]
    )
    found = read_one_shot(
        json.dumps({"criteria": [{"id": "rate", "reason": "r", "value": 0.05, "evidence": []}]}),
        [RATE],
    )
    assert found["rate"].met  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("check", "message"),
    [
        ("{type: number, value: 0.05, id: x}", "`check` takes no `id`"),
        ("{type: number, value: 0.05, weight: 2}", "`check` takes no `weight`"),
        ("{type: forbidden, phrases: [x]}", "`check` cannot be `forbidden`"),
        ("{type: judge, requirement: x}", "*"),
    ],
)
def test_a_check_that_is_not_a_deterministic_body_is_a_collection_error(
    pytester: pytest.Pytester, write: Write, check: str, message: str
) -> None:
    write(
        "bad.rubric.yaml",
        f"""
        cases:
          - id: q1
            response: "x"
            criteria:
              - {{id: rate, type: extract, extract: "the rate", returns: number, check: {check}}}
        """,
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines([f"  bad.rubric.yaml:5, case 'q1', criterion 'rate'*{message}*"])


# --- end to end -------------------------------------------------------------------------------

FLUENT = """
suite: loans
min_score: 1
cases:
  - id: rate
    question: "What annual rate does the loan charge?"
    responses:
      fluent: "Great question! The loan charges a highly competitive annual rate of 6%, which is
        clearly among the best deals available and makes it an excellent choice for borrowers."
      plain: "5% a year."
    criteria:
      - {id: rate, type: extract, extract: "the annual rate the response states, as a fraction",
         returns: number, check: {type: number, value: 0.05, abs_tol: 0.001}}
"""


def _reader(request: Recorded) -> Any:
    """A style-swayed judge that reads correctly but volunteers a verdict for the fluent one."""
    body = json.dumps(request.body)
    value = 0.06 if "6%" in body else 0.05
    entry = {"reason": "it states a rate", "value": value, "evidence": ["rate"], "verdict": "MET"}
    if "each requirement" in body:  # one-shot
        return json_reply({"criteria": [{"id": "rate", **entry}]})
    return json_reply(entry)


@pytest.mark.parametrize(
    ("provider", "grader"),
    [("openai", "per-criterion"), ("anthropic", "per-criterion"), ("openai", "one-shot")],
)
def test_the_check_catches_a_fluent_answer_with_the_wrong_rate(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
    provider: str,
    grader: str,
) -> None:
    pytester.makeini("[pytest]\nrubric_judge_backoff = 0.01\n")
    write("loans.rubric.yaml", FLUENT)
    fake_llm.respond_with(_reader)
    result = pytester.runpytest(
        *judge_args(fake_llm, provider),
        f"--rubric-grader={grader}",
        "--rubric-json",
        "out.json",
    )
    result.assert_outcomes(passed=1, failed=1)
    by_subject = {r["subject"]: r["criteria"][0] for r in rubric_json()["results"]}
    assert by_subject["plain"]["verdict"] == "MET"
    assert by_subject["fluent"]["verdict"] == "UNMET"
    assert by_subject["fluent"]["reason"].startswith("value 0.06: 0.06 is not within")
    assert by_subject["fluent"]["type"] == "extract"
    body = fake_llm.requests[0].body
    schema = (
        body["tools"][0]["input_schema"]
        if provider == "anthropic"
        else body["response_format"]["json_schema"]["schema"]
    )
    if grader == "one-shot":
        schema = schema["properties"]["criteria"]["prefixItems"][0]
    assert {"value", "evidence"} <= set(schema["properties"])


MIXED = """
suite: mixed
min_score: 0.5
cases:
  - id: rate
    question: "What annual rate does the loan charge?"
    response: "5% a year."
    criteria:
      - {id: rate, type: extract, extract: "the annual rate", returns: number,
         check: {type: number, value: 0.05, abs_tol: 0.001}}
      - {id: clear, requirement: "Answers the question"}
"""


def _mixed(request: Recorded) -> Any:
    if "What to extract" in json.dumps(request.body):
        return json_reply({"reason": "it says 5%", "value": 0.05, "evidence": ["5%"]})
    return json_reply({"reason": "fine", "score": 40})


def test_holistic_scores_the_judged_criteria_and_reads_the_extraction_on_its_own(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    pytester.makeini("[pytest]\nrubric_judge_backoff = 0.01\n")
    write("mixed.rubric.yaml", MIXED)
    fake_llm.respond_with(_mixed)
    result = pytester.runpytest(
        *judge_args(fake_llm),
        "--rubric-grader=holistic",
        "--rubric-json",
        "out.json",
    )
    result.assert_outcomes(passed=1)
    criteria = {c["id"]: c for c in rubric_json()["results"][0]["criteria"]}
    assert (criteria["rate"]["verdict"], criteria["rate"]["credit"]) == ("MET", 1.0)
    assert criteria["clear"]["credit"] == 0.4
    assert len(fake_llm.requests) == 2


def test_samples_take_the_majority_of_the_checked_outcomes(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    pytester.makeini("[pytest]\nrubric_judge_backoff = 0.01\n")
    write(
        "mixed.rubric.yaml",
        MIXED.replace('      - {id: clear, requirement: "Answers the question"}\n', ""),
    )
    values = iter([0.05, 0.06, 0.05])

    def respond(request: Recorded) -> Any:
        return json_reply({"reason": "read", "value": next(values), "evidence": []})

    fake_llm.respond_with(respond)
    result = pytester.runpytest(
        *judge_args(fake_llm),
        "--rubric-judge-samples=3",
        "--rubric-concurrency=1",
        "--rubric-grader=holistic",
        "--rubric-json",
        "out.json",
    )
    result.assert_outcomes(passed=1)
    rate = rubric_json()["results"][0]["criteria"][0]
    assert (rate["verdict"], rate["credit"]) == ("MET", 1.0)
    assert rate["reason"].endswith("(2 of 3 votes MET)")


def test_the_bundled_example_catches_the_fluent_wrong_rate(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    from tests.conftest import EXAMPLES

    pytester.makeini("[pytest]\nrubric_judge_backoff = 0.01\n")
    write("judged.rubric.yaml", (EXAMPLES / "judged" / "judged.rubric.yaml").read_text())

    def swayed(request: Recorded) -> Any:
        """Reads what the answer states; passes every requirement of a fluent answer."""
        body = json.dumps(request.body)
        if "What to extract" in body:
            value = 0.06 if "6%" in body else 0.05
            return json_reply({"reason": "it states it", "value": value, "evidence": ["rate"]})
        if "kind" in body and '"score"' in body and "verdict" not in body:
            return json_reply({"reason": "fine", "score": 5})
        return json_reply({"reason": "sounds right", "verdict": "MET"})

    fake_llm.respond_with(swayed)
    pytester.runpytest(
        *judge_args(fake_llm), "-k", "savings_rate", "--rubric-json", "out.json"
    ).assert_outcomes(passed=1, failed=1)
    results = {r["subject"]: r for r in rubric_json()["results"]}
    assert not results["overconfident"]["passed"]
    rate = next(c for c in results["overconfident"]["criteria"] if c["id"] == "rate")
    explains = next(c for c in results["overconfident"]["criteria"] if c["id"] == "explains")
    assert (rate["verdict"], explains["verdict"]) == ("UNMET", "MET")
