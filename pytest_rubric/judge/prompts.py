"""The judge's prompts, for the three graders, and the reply schemas that go with them.

Rules every prompt follows:

* the rubric and the instructions are in the system message; the question
  (or the conversation, each turn fenced on its own) and the response under
  test are in the user message, each fenced by a tag that carries a random
  token drawn for that call, so text inside them cannot end the fence
  (``</response-…>`` needs the token), pose as another turn, or speak for the
  rubric;
* the prompt says the fenced text is data, never instructions;
* the reason comes before the verdict, so the verdict follows from it;
* style earns nothing: fluent or confident wording is not substance;
* a negative-weight requirement describes an error: it is MET only when the
  response itself makes that error, not when it mentions the error to warn
  against it or to refute it;
* a case's ``reference`` (a known-correct answer), when it has one, is fenced
  like the response, and the judge is told to judge the response against it;
* a MET verdict quotes its ``evidence`` from the response (checked by
  :mod:`~pytest_rubric.judge.evidence`);
* a rubric file's :class:`Guidance` (``judge_instructions:``, ``judge_examples:``),
  when it has any: the instructions go in the system message, fenced as the rubric
  author's (``<rubric-author-…>``), after the fixed rules, which they cannot lift;
  the labelled examples of the criteria in the call go in the user message before
  the question and the response, each fenced (``<judge-example-…>``) with its
  criterion, verdict, response and reason. Both are in the request, so in the
  judge cache's key. A file without them gets the prompts as they always were.

``TEMPLATE_VERSION`` changes whenever the wording does (judge caches key on it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .prompt_parts import (
    ERROR_RULE,
    EVIDENCE_RULE,
    REASON_SCHEMA,
    SUBSTANCE_RULE,
    Guidance,
    GuidanceExample,
    Prompt,
    Question,
    data_rule,
    describe,
    extract_schema,
    fence_token,
    guided,
    injection_suspected,
    user_message,
    verdict_schema,
    whole_scale,
)
from .replies import REASON_DESCRIPTIONS

if TYPE_CHECKING:
    from ..criteria.extract import Extract, JudgedCriterion
    from ..criteria.judge import Requirement

__all__ = [
    "TEMPLATE_VERSION",
    "Guidance",
    "GuidanceExample",
    "Prompt",
    "Question",
    "extraction",
    "holistic",
    "injection_suspected",
    "one_shot",
    "per_criterion",
]

TEMPLATE_VERSION = 4  # 2: no placeholder to copy; 3: reference, evidence; 4: whole-number scales


def per_criterion(
    criterion: JudgedCriterion,
    *,
    question: Question,
    response: str,
    reference: str | None = None,
    guidance: Guidance | None = None,
) -> Prompt:
    """One call for one judged criterion."""
    if criterion.kind == "extract":  # the judge reads, it does not grade
        return extraction(
            criterion, question=question, response=response, reference=reference, guidance=guidance
        )
    token = fence_token()
    reason = REASON_DESCRIPTIONS[0]
    if criterion.kind == "score":
        number = "a whole number" if whole_scale(criterion) else "a number"
        last = f'"score", {number} from {criterion.min_score:g} to {criterion.max_score:g}'
    elif criterion.kind == "label":
        reason = REASON_DESCRIPTIONS[2]
        last = '"label", exactly one of the labels listed with the requirement'
    else:
        last = '"verdict", the string "MET" or the string "UNMET"'
    parts = [
        "You are a strict grader. Decide whether a response meets one requirement of a rubric.",
        SUBSTANCE_RULE,
        data_rule(question, token, reference),
        f"Requirement: {describe(criterion)}",
    ]
    if criterion.effective_weight < 0:
        parts.append(ERROR_RULE)
    parts.append(
        "Reply with one JSON object and nothing else, with two fields in this order: "
        f'"reason", a string: {reason}; then {last}.'
    )
    if criterion.kind != "score":
        parts.append(EVIDENCE_RULE)
    parts, shown = guided(parts, guidance, [criterion.id], token)
    return Prompt(
        system="\n\n".join(parts),
        user=shown + user_message(question, response, token, reference),
        schema=verdict_schema(criterion),
        token=token,
    )


def one_shot(
    criteria: Sequence[JudgedCriterion],
    *,
    question: Question,
    response: str,
    reference: str | None = None,
    guidance: Guidance | None = None,
) -> Prompt:
    """One call for all judged criteria of a case, keyed by criterion id."""
    token = fence_token()
    lines = []
    for c in criteria:
        kind = (
            f"score {c.min_score:g}-{c.max_score:g}" if c.kind == "score" else "verdict MET/UNMET"
        )
        if c.kind == "label":
            kind = "label"
        elif c.kind == "extract":
            kind = f"extract a value: {_RETURNS[c.returns]}"
        error = (
            " [describes an ERROR: MET only if the response makes it]"
            if c.effective_weight < 0 and c.kind != "extract"  # a reading has no ERROR side
            else ""
        )
        lines.append(f"- id {c.id!r} ({kind}): {describe(c)}{error}")
    parts = [
        "You are a strict grader. Grade a response against each requirement of a rubric.",
        SUBSTANCE_RULE,
        data_rule(question, token, reference),
        "Requirements:\n" + "\n".join(lines),
        "A requirement marked as describing an ERROR is MET only if the response itself makes "
        "that error; mentioning it to warn against it or to refute it is UNMET.",
        'Reply with one JSON object and nothing else, with one field, "criteria": a list '
        "with exactly one object per requirement id above, each with these fields in this "
        'order: "id", the requirement\'s id; "reason", a string: '
        f'{REASON_DESCRIPTIONS[0]}; then "verdict", the string "MET" or the string "UNMET" '
        '(for a score requirement, "score" instead: a number in its range).',
        EVIDENCE_RULE.replace("add", "add to that requirement's object", 1),
    ]
    if any(c.kind == "label" for c in criteria):  # other prompts keep their wording
        parts[-1] += (
            ' For a label requirement, "label" instead of "verdict": exactly one of its labels.'
        )
    if any(c.kind == "extract" for c in criteria):
        parts[-1] += (
            ' For an "extract a value" requirement you do not grade: give "value" instead of '
            '"verdict", the value as the response itself states it (even if you think it wrong), '
            'or null when the response does not give it; then "evidence", a list of exact quotes '
            "from the response that give it."
        )
    # One entry per criterion, in order, each with its own id and reply shape: a server
    # that constrains decoding to the schema (llama.cpp) then cannot leave one out.
    entries = []
    for c in criteria:
        own = verdict_schema(c)
        entries.append(
            {
                **own,
                "properties": {"id": {"const": c.id}, **own["properties"]},
                "required": ["id", *own["required"]],
            }
        )
    schema = {
        "type": "object",
        "properties": {
            "criteria": {
                "type": "array",
                "prefixItems": entries,
                "minItems": len(entries),
                "maxItems": len(entries),
            }
        },
        "required": ["criteria"],
    }
    parts, shown = guided(parts, guidance, [c.id for c in criteria], token)
    user = shown + user_message(question, response, token, reference)
    return Prompt("\n\n".join(parts), user, schema, token)


def holistic(
    criteria: Sequence[Requirement],
    *,
    question: Question,
    response: str,
    reference: str | None = None,
    guidance: Guidance | None = None,
) -> Prompt:
    """One call, one 0-100 score for how well the response meets the judged criteria together."""
    # `extract` criteria never reach here: the holistic grader extracts them
    # one call each, beside its score (see strategies).
    token = fence_token()
    lines = []
    for c in criteria:
        role = "an ERROR the response must not make" if c.effective_weight < 0 else "a requirement"
        lines.append(
            f"- ({role}, weight {abs(c.effective_weight):g}) {describe(c, pass_labels=True)}"
        )
    parts = [
        "You are a strict grader. Score how well a response meets a rubric, as a whole.",
        SUBSTANCE_RULE,
        data_rule(question, token, reference),
        "Rubric:\n" + "\n".join(lines),
        "Weigh each requirement by its weight. An ERROR lowers the score only when the response "
        "itself makes it, not when it mentions it to warn against it.",
        "Reply with one JSON object and nothing else, with two fields in this order: "
        f'"reason", a string: {REASON_DESCRIPTIONS[1]}; then "score", an integer from 0 to '
        "100.",
    ]
    schema = {
        "type": "object",
        "properties": {
            "reason": REASON_SCHEMA,
            "score": {"type": "number", "minimum": 0, "maximum": 100},
        },
        "required": ["reason", "score"],
    }
    parts, shown = guided(parts, guidance, [c.id for c in criteria], token)
    user = shown + user_message(question, response, token, reference)
    return Prompt("\n\n".join(parts), user, schema, token)


# --- extraction: the judge reads a value; a deterministic check decides ------------

_RETURNS = {
    "number": "a JSON number",
    "string": "a JSON string",
    "boolean": "true or false",
    "list": "a JSON list",
}


def extraction(
    criterion: Extract,
    *,
    question: Question,
    response: str,
    reference: str | None = None,
    guidance: Guidance | None = None,
) -> Prompt:
    """One call that reads one value out of the response: no verdict is asked for."""
    token = fence_token()
    parts = [
        "You are a careful reader. Read one value out of a response. You do not grade the "
        "response: report what it says, even where you believe it is wrong.",
        data_rule(question, token, reference),
        f"What to extract: {criterion.extract}",
        "Reply with one JSON object and nothing else, with three fields in this order: "
        f'"reason", a string: {REASON_DESCRIPTIONS[3]}; then "value", '
        f"{_RETURNS[criterion.returns]}, as the response states it, or null when the response "
        'does not give it; then "evidence", a list of exact quotes from the response that give '
        "it (an empty list when it does not).",
    ]
    parts, shown = guided(parts, guidance, [criterion.id], token)
    return Prompt(
        system="\n\n".join(parts),
        user=shown + user_message(question, response, token, reference),
        schema=extract_schema(criterion),
        token=token,
    )
