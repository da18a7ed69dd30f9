"""Label-kind criteria and score anchors: their prompts, schemas and replies."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_rubric.criteria import Requirement
from pytest_rubric.judge.prompts import holistic, one_shot, per_criterion
from pytest_rubric.judge.replies import ReplyError, read_one, read_one_shot
from tests.fake_llm import FakeLLM, Recorded, json_reply
from tests.judge.test_judge_e2e import judge_args

Write = Callable[[str, str], Path]

LABEL = Requirement(
    id="tone",
    requirement="How correct is the stated rate?",
    kind="label",
    labels=("correct", "partly correct", "wrong"),
    pass_labels=("correct",),
)
ANCHORED = Requirement(
    id="depth",
    requirement="How fully does it explain?",
    kind="score",
    scale={1: "wrong", 3: "partly right", 5: "fully right"},
)


def test_a_label_reply_earns_credit_only_for_a_pass_label() -> None:
    graded = read_one('{"reason": "it gives 5%", "label": "correct"}', LABEL)
    assert (graded.met, graded.credit, graded.reason) == (True, 1.0, "label 'correct': it gives 5%")
    graded = read_one('{"reason": "it gives 6%", "label": "partly correct"}', LABEL)
    assert (graded.met, graded.credit) == (False, 0.0)


@pytest.mark.parametrize("label", ["Correct", "right", " correct", 1, None, ["correct"]])
def test_a_label_outside_the_list_is_a_bad_reply(label: Any) -> None:
    reply = json.dumps({"reason": "because", "label": label})
    with pytest.raises(ReplyError, match="\"label\" must be exactly one of 'correct', 'partly"):
        read_one(reply, LABEL)


def test_a_one_shot_reply_mixes_labels_and_verdicts() -> None:
    plain = Requirement(id="plain", requirement="Says one day")
    reply = {
        "criteria": [
            {"id": "tone", "reason": "it gives 5%", "label": "wrong"},
            {"id": "plain", "reason": "it does", "verdict": "MET"},
        ]
    }
    found = read_one_shot(json.dumps(reply), [LABEL, plain])
    assert not found["tone"].met and found["plain"].met  # type: ignore[union-attr]
    reply["criteria"][0]["label"] = "nope"
    assert isinstance(read_one_shot(json.dumps(reply), [LABEL, plain])["tone"], ReplyError)


def test_the_prompts_list_the_labels_and_the_schemas_enumerate_them() -> None:
    prompt = per_criterion(LABEL, question="q", response="r")
    assert 'exactly one of: "correct", "partly correct", "wrong"' in prompt.system
    assert "passes as" not in prompt.system  # the judge labels; it is not told what passes
    assert prompt.schema["properties"]["label"]["enum"] == ["correct", "partly correct", "wrong"]
    assert prompt.schema["required"] == ["reason", "label"]
    # A label reply is {"reason", "label"}: it quotes nothing, so it is asked for nothing.
    assert "evidence" not in prompt.schema["properties"] and '"evidence"' not in prompt.system
    shot = one_shot([LABEL], question="q", response="r")
    assert '"label" instead of "verdict"' in shot.system
    (entry,) = shot.schema["properties"]["criteria"]["prefixItems"]
    assert entry["properties"]["label"]["enum"] == ["correct", "partly correct", "wrong"]
    assert 'it passes as "correct"' in holistic([LABEL], question="q", response="r").system


def test_prompts_without_labels_keep_their_wording() -> None:
    plain = Requirement(id="plain", requirement="Says one day")
    shot = one_shot([plain], question="q", response="r")
    assert "label" not in shot.system
    (entry,) = shot.schema["properties"]["criteria"]["prefixItems"]
    assert "label" not in entry["properties"]


def test_a_style_requirement_is_judged_on_how_the_response_reads() -> None:
    """The substance rule ("polished wording earns nothing") would have the judge score a
    style criterion low for the very thing it asks about: a style requirement gets its own."""
    clarity = Requirement(id="clarity", requirement="How clear is it?", kind="score", axis="style")
    facts = Requirement(id="facts", requirement="Says one day")
    alone = per_criterion(clarity, question="q", response="r").system
    assert "Judge substance only" not in alone and "how the response reads" in alone
    assert "Judge substance only" in per_criterion(facts, question="q", response="r").system
    both = one_shot([facts, clarity], question="q", response="r").system
    assert "- id 'clarity' (score 1-5) [style]: " in both and "- id 'facts' (verdict" in both
    assert "A requirement marked [style] is about how the response reads" in both
    assert "[style]" not in one_shot([facts], question="q", response="r").system


def test_score_anchors_are_shown_to_the_judge() -> None:
    for prompt in (
        per_criterion(ANCHORED, question="q", response="r"),
        one_shot([ANCHORED], question="q", response="r"),
        holistic([ANCHORED], question="q", response="r"),
    ):
        assert "the scale: 1 = wrong; 3 = partly right; 5 = fully right" in prompt.system


LABELLED = """
suite: labels
min_score: 0.5
cases:
  - id: q1
    question: "What is the rate?"
    response: "The rate is 5%."
    criteria:
      - {id: rate, type: judge, kind: label, labels: [correct, partly correct, wrong],
         pass_labels: [correct], requirement: "How correct is the stated rate?"}
      - {id: depth, type: judge, kind: score, requirement: "How fully does it explain?",
         scale: {1: wrong, 3: partly right, 5: fully right}}
"""


def _labeller(label: str) -> Callable[[Recorded], Any]:
    def respond(request: Recorded) -> Any:
        body = json.dumps(request.body)
        if "labels" in body or "label it" in body:
            return json_reply({"reason": "read the rate", "label": label})
        return json_reply({"reason": "explains", "score": 5})

    return respond


def _run(pytester: pytest.Pytester, write: Write, fake: FakeLLM, provider: str, label: str) -> Any:
    pytester.makeini("[pytest]\nrubric_judge_backoff = 0.01\n")
    write("labels.rubric.yaml", LABELLED)
    fake.respond_with(_labeller(label))
    return pytester.runpytest(*judge_args(fake, provider), "--rubric-json", "out.json")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_label_criterion_end_to_end(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    provider: str,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    # The reply in the contract's shape, no quotes: a pass label earns its credit, unflagged,
    # even where MET verdicts must quote the response.
    pytester.makeini("[pytest]\nrubric_judge_backoff = 0.01\nrubric_judge_evidence = require\n")
    write("labels.rubric.yaml", LABELLED)
    fake_llm.respond_with(_labeller("correct"))
    result = pytester.runpytest(*judge_args(fake_llm, provider), "--rubric-json", "out.json")
    result.assert_outcomes(passed=1)
    (graded,) = rubric_json()["results"]
    criteria = {c["id"]: c for c in graded["criteria"]}
    assert (criteria["rate"]["verdict"], criteria["rate"]["credit"]) == ("MET", 1.0)
    assert "evidence_ok" not in criteria["rate"] and graded["flags"] == []
    assert criteria["rate"]["reason"] == "label 'correct': read the rate"
    label_call = next(r for r in fake_llm.requests if "label it" in json.dumps(r.body))
    if provider == "anthropic":
        schema = label_call.body["tools"][0]["input_schema"]
    else:
        schema = label_call.body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["label"]["enum"] == ["correct", "partly correct", "wrong"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_label_outside_the_list_is_asked_again_then_error(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    provider: str,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    _run(pytester, write, fake_llm, provider, "excellent").assert_outcomes(errors=1)
    rate = next(c for c in rubric_json()["results"][0]["criteria"] if c["id"] == "rate")
    assert rate["verdict"] == "ERROR"
    assert "replied out of protocol twice" in rate["reason"]
    assert "'excellent'" in rate["reason"]
    assert sum("label it" in json.dumps(r.body) for r in fake_llm.requests) == 2


def test_a_label_or_scale_that_cannot_be_used_is_a_located_collection_error(
    pytester: pytest.Pytester, write: Write
) -> None:
    write(
        "bad.rubric.yaml",
        """
        cases:
          - id: q1
            response: "x"
            criteria:
              - {id: rate, kind: label, labels: [correct, wrong], requirement: "r"}
              - {id: s, kind: score, scale: {1: a, 9: b}, requirement: "r"}
              - {id: b, scale: {1: a}, requirement: "r"}
              - {id: c, kind: label, labels: [a, b], pass_labels: [c], requirement: "r"}
        """,
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        [
            "bad.rubric.yaml: 4 problems in rubric file",
            "  bad.rubric.yaml:5, case 'q1', criterion 'rate', field 'pass_labels': a label-kind "
            "criterion needs `pass_labels`, the labels that earn credit",
            '    -> write e.g. pass_labels: ["correct"]',
            "  bad.rubric.yaml:6, case 'q1', criterion 's', field 'scale': the anchor 9 is "
            "outside the scale 1 to 5",
            "    -> anchor scores from min_score to max_score",
            "  bad.rubric.yaml:7, case 'q1', criterion 'b', field 'scale': `scale` describes the "
            "scores of a score-kind criterion",
            "    -> add `kind: score`, or remove `scale`",
            "  bad.rubric.yaml:8, case 'q1', criterion 'c', field 'pass_labels': 'c' is not one "
            "of the labels ('a', 'b')",
        ],
        consecutive=True,
    )


@pytest.mark.parametrize(
    ("low", "high", "listed"),
    [
        (1, 5, [1, 2, 3, 4, 5]),
        (0, 10, list(range(11))),
        (0, 100, None),
        (0, 1, [0, 1]),
        (0.5, 2, None),
    ],
)
def test_a_small_whole_number_scale_is_listed_in_the_schema(
    low: float, high: float, listed: list[int] | None
) -> None:
    """llama.cpp decodes to an enum but ignores minimum/maximum: a 1-5 score is listed, so a
    small local judge cannot answer 10 (seen with SmolLM2-135M before)."""
    scored = Requirement(
        id="s", kind="score", min_score=low, max_score=high, requirement="How clear?"
    )
    for schema in (
        per_criterion(scored, question="q", response="r").schema,
        one_shot([scored], question="q", response="r").schema["properties"]["criteria"][
            "prefixItems"
        ][0],
    ):
        assert schema is not None
        assert schema["properties"]["score"].get("enum") == listed
        assert schema["properties"]["reason"]["maxLength"] == 600  # no reply runs off the end
    wording = "a whole number" if listed else "a number"
    assert f'"score", {wording} from' in per_criterion(scored, question="q", response="r").system
