"""A merged promptfoo test into rubric cases: one case per combination of its vars and
prompt, each prompt rendered with the vars, and the test's assertions as criteria (see
:mod:`.promptfoo_assert`). A test is written when one case is; else it is listed once,
with why. A case that lost some assertions is tagged :data:`PARTIAL_TAG`.
"""

from __future__ import annotations

import re
from typing import Any

from . import promptfoo_assert
from ._common import is_number
from .promptfoo_config import Conversion, shown_value, var_names
from .promptfoo_match import Unmappable
from .promptfoo_merge import Assertion, Test
from .promptfoo_read import Prompt, is_file_ref
from .promptfoo_render import combinations, prepare, render, render_prompt

__all__ = ["PARTIAL_TAG", "cases_of"]

PARTIAL_TAG = "promptfoo:partial"
# Test options that change what is asked or how the answer is read before grading.
_OPTIONS_NOT_KEPT = {
    "transform": "transforms the output with code before grading",
    "postprocess": "transforms the output with code before grading",
    "transformVars": "transforms the vars with code before asking",
    "storeOutputAs": "feeds its output to later tests",
}
_OPTIONS_QUIET = {
    "prefix",
    "suffix",
    "disableVarExpansion",
    "disableConversationVar",
    "runSerially",
}


def cases_of(ctx: Conversion, test: Test, prompts: list[Prompt]) -> list[dict[str, Any]]:
    """The test's cases (each vars combination x each prompt); the test is counted as
    written when one case is, else listed once with the reason."""
    problems = len(ctx.problems)
    why = _test_not_kept(ctx, test)
    if why is not None:
        _list_unmappable(ctx, test)
    if why is None and not prompts:
        why = "no prompt of the config could be read (see above)"
    combos: list[dict[str, Any]] = []
    if why is None:
        try:
            combos = combinations(
                test.vars, ctx.tree, expand=not test.options.get("disableVarExpansion")
            )
        except Unmappable as exc:
            why = f"vars: {exc}"
    cases: list[dict[str, Any]] = []
    for k, combo in enumerate(combos):
        which = f"{test.label}, vars combination {k + 1}" if len(combos) > 1 else test.label
        ctx.budget.spend(cases=len(prompts))  # before any of them is made
        try:
            vars_ = prepare(combo, ctx.tree, ctx.budget)
        except Unmappable as exc:
            why = f"vars: {exc}"
            if len(combos) > 1:
                ctx.unmapped(test.where, which, f"{why}; its cases are not written")
            continue
        criteria, lost = _criteria(ctx, test, vars_)
        if criteria is None:
            why = "no assertion has a positive weight"
            if lost:
                why = "no assertion could be mapped (see above)"
            continue
        for j, prompt in enumerate(prompts):
            case = _case(ctx, test, prompt, vars_, criteria, lost, len(prompts) > 1)
            if case is not None:
                case["id"] = _case_id(test, k, len(combos), j, len(prompts))
                ctx.budget.spend_on(case)  # the text it is written as
                cases.append(case)
    if cases:
        ctx.stats.written += 1
        ctx.stats.cases += len(cases)
    elif len(ctx.problems) == problems:  # else the config is refused anyway
        ctx.skip(
            test.where, test.label, why or "no prompt could be asked with its vars (see above)"
        )
    return cases


def _test_not_kept(ctx: Conversion, test: Test) -> str | None:
    for key, why in _OPTIONS_NOT_KEPT.items():
        if test.options.get(key) is not None:
            return f"options.{key} {why}"
    if test.scoring_function is not None:
        return "assertScoringFunction replaces promptfoo's weighted mean with code"
    if not test.asserts:
        return "it has no assertion (promptfoo passes it whatever the answer); nothing to grade"
    threshold = test.threshold
    if threshold is not None and not is_number(threshold):
        return f"threshold {threshold!r} is not a number"
    if is_number(threshold) and threshold and not 0 < threshold <= 1:
        return (
            f"threshold {threshold:g} is outside (0, 1]: promptfoo decides the test "
            "whatever the answer"
        )
    for key in sorted(set(test.options) - set(_OPTIONS_NOT_KEPT) - _OPTIONS_QUIET):
        if key == "provider":
            ctx.note(
                f"{ctx.path}: the grader named by options.provider is not kept: "
                "--rubric-judge grades"
            )
        elif key != "rubricPrompt":
            ctx.note(f"{test.where}: {test.label}: options.{key} is not imported")
    return None


def _list_unmappable(ctx: Conversion, test: Test) -> None:
    """Every assertion of a test left out whole that could not be mapped anyway, listed by
    file, line, test and type: removing the reason the test is left out is not enough."""
    for a in test.asserts:
        if a.item is None:  # a problem, already reported
            continue
        kind = _kind(a.item)
        try:
            _mappable(a, kind)
        except Unmappable as exc:
            ctx.unmapped(a.where, _what(test, a, kind), str(exc))


def _mappable(a: Assertion, kind: str) -> None:
    """Raise :class:`Unmappable` for an assertion that no value or option could map."""
    if isinstance(a.item, Unmappable):
        raise a.item
    promptfoo_assert.check_type(kind)


def _kind(item: Any) -> str:
    return item.get("type", "?") if isinstance(item, dict) else "?"


def _what(test: Test, a: Assertion, kind: str) -> str:
    """How a listing names an assertion: a defaultTest assertion is listed once, for every
    test, unless its reason is the test's own."""
    return (
        f"{a.label} ({kind}), in every test" if a.default else f"{test.label}, {a.label} ({kind})"
    )


def _criteria(
    ctx: Conversion, test: Test, vars_: dict[str, Any]
) -> tuple[list[dict[str, Any]] | None, int]:
    criteria: list[dict[str, Any]] = []
    lost: list[tuple[str, str, str]] = []  # (where, what, why) of each assertion left out
    for a in test.asserts:
        if a.item is None:  # a problem, already reported
            return None, 0
        kind = _kind(a.item)
        what = _what(test, a, kind)
        try:
            _mappable(a, kind)
            if (
                test.options.get("rubricPrompt") is not None
                and kind in promptfoo_assert.MODEL_GRADED
            ):
                raise Unmappable("the test grades it with its own rubricPrompt")
            mapped = promptfoo_assert.criterion(_values(ctx, a.item, vars_))
        except Unmappable as exc:
            lost.append((a.where, what, str(exc)))
            continue
        except ValueError as exc:  # promptfoo fails the test on it (an invariant)
            lost.append((a.where, what, f"promptfoo refuses it: {exc}"))
            continue
        for text in mapped.notes:
            ctx.note(f"{a.where}: {what}: {text}")
        criteria.append(mapped.criterion)
    written = any(c.get("weight", 1) > 0 for c in criteria)
    for where, what, why in lost:
        if written and not what.endswith("in every test"):
            why += "; the test is written without it"
        ctx.unmapped(where, what, why)
    if not written:
        return None, len(lost)
    _unique_ids(criteria)
    return criteria, len(lost)


def _values(ctx: Conversion, item: dict[str, Any], vars_: dict[str, Any]) -> dict[str, Any]:
    """The assertion with its value read from its file, or rendered with the vars."""
    value = item.get("value")
    missing: set[str] = set()
    if isinstance(value, str):
        value = (
            _file_value(ctx, value)
            if is_file_ref(value)
            else render(value, vars_, missing, ctx.budget)
        )
    elif isinstance(value, list):
        value = [
            _file_value(ctx, v)
            if is_file_ref(v)
            else render(v, vars_, missing, ctx.budget)
            if isinstance(v, str)
            else v
            for v in value
        ]
    if missing:
        ctx.note(
            f"{ctx.path}: an assertion's value uses {var_names(missing)}, which no var sets; "
            "promptfoo renders it as empty text, and so does this import"
        )
    return {**item, "value": value} if "value" in item else item


def _file_value(ctx: Conversion, ref: str) -> Any:
    """assertions/utils.ts, processFileReference: YAML and JSON parsed, text trimmed."""
    path = ctx.tree.path(ref)
    suffix = path.suffix.lower()
    if suffix in (".json", ".yaml", ".yml"):
        return ctx.tree.document(path, ref).data
    if suffix == ".txt":
        return ctx.tree.text(path, ref).strip()
    if suffix in (".js", ".cjs", ".mjs", ".ts", ".py"):
        raise Unmappable(f"its value comes from running {ref}")
    raise Unmappable(f"{ref}: promptfoo reads assertion values from .txt, .json and .yaml files")


def _case(
    ctx: Conversion,
    test: Test,
    prompt: Prompt,
    vars_: dict[str, Any],
    criteria: list[dict[str, Any]],
    lost: int,
    several_prompts: bool,
) -> dict[str, Any] | None:
    template = (
        f"{test.options.get('prefix') or ''}{prompt.template}{test.options.get('suffix') or ''}"
    )
    try:
        rendered = render_prompt(template, vars_, ctx.budget)
    except Unmappable as exc:
        ctx.unmapped(prompt.where, f"prompt {shown_value(prompt.label)}", f"{exc}; no case asks it")
        return None
    if rendered.missing:
        ctx.note(
            f"{test.where}: {test.label}: prompt {shown_value(prompt.label)} uses "
            f"{var_names(rendered.missing)}, which no var sets; promptfoo renders it as empty "
            "text, and so does this import"
        )
    case: dict[str, Any] = {"id": ""}
    if rendered.messages is not None:
        case["messages"] = rendered.messages
    else:
        case["question"] = rendered.question
    if is_number(test.threshold) and test.threshold:
        case["min_score"] = test.threshold
        if any(c["type"] == "judge" for c in criteria):
            ctx.note(
                f"{test.where}: {test.label}: with a threshold, promptfoo adds llm-rubric's "
                "0-1 score; here a judged criterion earns 1 or 0"
            )
    metadata = dict(test.metadata)
    if test.description:
        metadata["description"] = test.description
    if several_prompts:
        metadata["prompt"] = prompt.label
    if metadata:
        case["metadata"] = metadata
    if lost:
        case["tags"] = [PARTIAL_TAG]
    case["criteria"] = [dict(c) for c in criteria]
    return case


def _unique_ids(criteria: list[dict[str, Any]]) -> None:
    seen: dict[str, int] = {}
    for c in criteria:
        base = c["id"]
        seen[base] = seen.get(base, 0) + 1
        if seen[base] > 1:
            c["id"] = f"{base}-{seen[base]}"


def _case_id(test: Test, k: int, n_combos: int, j: int, n_prompts: int) -> str:
    slug = ""
    if test.description:
        slug = re.sub(r"[^a-z0-9]+", "-", test.description.lower()).strip("-")[:40].strip("-")
    base = f"t{test.number}" + (f"-{slug}" if slug else "")
    return base + (f"-v{k + 1}" if n_combos > 1 else "") + (f"-p{j + 1}" if n_prompts > 1 else "")
