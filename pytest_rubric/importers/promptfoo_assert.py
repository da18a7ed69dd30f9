"""How one promptfoo assertion becomes one criterion, and how ``{{ var }}`` is rendered.

Split from :mod:`.promptfoo` (which reads configs and builds cases): everything here
works on one assertion or one template string. What cannot be kept exactly raises
:class:`~.promptfoo_match.Unmappable` with the reason.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ._common import is_number
from .promptfoo_match import (
    Unmappable,
    all_pattern,
    any_pattern,
    equals_pattern,
    icontains_pattern,
    js_regex,
    literal,
    starts_pattern,
)

__all__ = ["TEMPLATE", "criterion", "render"]

_VAR = re.compile(r"\{\{-?\s*([A-Za-z_][A-Za-z0-9_]*)\s*-?\}\}")
TEMPLATE = re.compile(r"\{\{|\{%|\{#")
_DRAFT7 = "http://json-schema.org/draft-07/schema#"
# Assertion keys that change nothing this importer writes.
_QUIET_KEYS = {"type", "value", "weight", "metric", "$ref"}
_STRING_TYPES = {
    "contains",
    "icontains",
    "contains-any",
    "icontains-any",
    "contains-all",
    "icontains-all",
    "equals",
    "starts-with",
    "regex",
}
_WHY_NOT = {
    "levenshtein": "promptfoo bounds an edit distance; this plugin's `fuzzy` is a 0-100 "
    "similarity ratio over spans, which passes and fails different answers",
    "javascript": "runs JavaScript code, which this plugin cannot run",
    "python": "runs promptfoo's Python hook (output, context); rewrite it as a `callable` "
    "criterion (function(response, case))",
    "similar": "needs an embedding model; no criterion here compares embeddings",
    "cost": "checks the provider's cost, which a rubric file does not see",
    "latency": "checks the provider's latency, which a rubric file does not see",
    "assert-set": "nested assertion sets with their own threshold are not mapped",
    "contains-json": "extracts JSON objects from anywhere in the text; `json` reads the whole "
    "answer or its first fenced block",
}


def _js_string(value: Any) -> str | None:
    """``String(value)`` as JavaScript writes it, or None where it would be unsure."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        if 1e-6 <= abs(value) < 1e21:
            return repr(value)
    return None


def render(text: str, vars_: dict[str, Any]) -> str:
    """``{{ name }}`` replaced by the var; anything else of Nunjucks is Unmappable."""

    def var(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in vars_:
            raise KeyError(name)
        value = _js_string(vars_[name])
        if value is None or (
            isinstance(vars_[name], str)
            and (vars_[name].startswith("file://") or TEMPLATE.search(vars_[name]))
        ):
            raise Unmappable(
                f"var {name!r} is {vars_[name]!r}: lists expand into several tests in promptfoo, "
                "and files, objects and unusual numbers render differently"
            )
        return value

    rendered = _VAR.sub(var, text)
    left = _VAR.sub("", text)
    if TEMPLATE.search(left):
        raise Unmappable(
            "the template uses Nunjucks beyond {{ var }} (filters, tags or expressions)"
        )
    return rendered


def _render_value(value: Any, vars_: dict[str, Any]) -> Any:
    if isinstance(value, str):
        return render(value, vars_)
    if isinstance(value, list):
        return [_render_value(v, vars_) for v in value]
    return value


def criterion(item: dict[str, Any], vars_: dict[str, Any], number: int) -> dict[str, Any]:
    kind: str = item["type"]
    inverse = kind.startswith("not-")
    base = kind[4:] if inverse else kind
    extra = sorted(set(item) - _QUIET_KEYS - ({"threshold"} if base == "levenshtein" else set()))
    if base in _WHY_NOT:
        raise Unmappable(_WHY_NOT[base])
    weight = item.get("weight", 1)
    if not is_number(weight):
        raise ValueError(f"`weight` must be a number, got {weight!r}")
    if weight < 0:
        raise Unmappable(
            "a negative weight lowers promptfoo's total weight; no rubric weight does that"
        )
    if extra:
        raise Unmappable(
            f"{', '.join(extra)} on the assertion changes how it is graded and is not mapped"
        )
    value = _render_value(item.get("value"), vars_)
    criterion: dict[str, Any] = {"id": f"a{number}-{kind}", "type": None, "weight": weight}
    if base in _STRING_TYPES:
        pattern, engine = _string_pattern(base, value)
        criterion.update(
            type="regex", pattern=pattern, case_sensitive=True, normalize=False, invert=inverse
        )
        if engine != "re2":
            criterion["engine"] = engine
    elif base == "is-json":
        if inverse:
            raise Unmappable("not-is-json has no `json` counterpart (json cannot be inverted)")
        criterion.update(type="json", fenced=False)
        if value not in (None, ""):
            criterion["schema"] = _schema(value)
    elif base == "llm-rubric":
        if inverse:
            raise Unmappable(
                "not-llm-rubric inverts the grader's verdict; a judge criterion cannot"
            )
        if not isinstance(value, str) or not value.strip():
            raise ValueError("llm-rubric needs the rubric text as `value`")
        criterion.update(type="judge", requirement=value)
    else:
        raise Unmappable(f"assertion type {kind!r} has no mapping here")
    return criterion


def _strings(value: Any, kind: str) -> list[str]:
    if isinstance(value, str):
        if '"' in value or not value.isascii() or not value.isprintable():
            raise Unmappable(
                "a comma-separated string with quotes or non-ASCII text is split by promptfoo's "
                "own rules; write the value as a YAML list"
            )
        items = [v.strip(" \t") for v in value.split(",")]
        items = [v for v in items if v]
    elif isinstance(value, list):
        items = []
        for v in value:
            text = _js_string(v)
            if text is None or isinstance(v, bool | float):
                raise Unmappable(f"list item {v!r} renders differently in JavaScript")
            items.append(text)
    else:
        raise ValueError(f"{kind} needs a list of strings as `value`")
    if not items:
        raise ValueError(f"{kind} needs at least one string in `value`")
    if "" in items:
        raise Unmappable("an empty string in the list (promptfoo finds it in every answer)")
    return items


def _string_pattern(kind: str, value: Any) -> tuple[str, str]:
    if kind in ("contains-any", "icontains-any", "contains-all", "icontains-all"):
        items = _strings(value, kind)
        if kind == "contains-any":
            return any_pattern(items), "re2"
        if kind == "contains-all":
            return all_pattern(items), "python"
        patterns = [icontains_pattern(v) for v in items]
        if kind == "icontains-any":
            return "|".join(f"(?:{p})" for p in patterns), "re2"
        raise Unmappable(
            "icontains-all would need lookaheads over case classes; list the values as "
            "separate icontains assertions"
        )
    if kind == "regex":
        if not isinstance(value, str):
            raise ValueError("regex needs the pattern as a string `value`")
        return js_regex(value), "re2"
    if kind in ("contains", "icontains"):
        text = _js_string(value) if not isinstance(value, bool) else None
        if text is None or text == "":
            raise ValueError(f"{kind} needs a non-empty string or number as `value`")
        return (literal(text) if kind == "contains" else icontains_pattern(text)), "re2"
    if kind == "equals":
        if isinstance(value, dict | list):
            raise Unmappable("equals with an object compares parsed JSON deeply; not mapped")
        if not isinstance(value, str) or value == "":
            raise Unmappable("equals with a non-string or empty value is not mapped")
        return equals_pattern(value), "re2"
    if not isinstance(value, str) or value == "":  # starts-with
        raise ValueError("starts-with needs a non-empty string `value`")
    return starts_pattern(value), "re2"


def _schema(value: Any) -> Any:
    if isinstance(value, str):
        if value.startswith("file://"):
            raise Unmappable("a JSON schema read from a file is not mapped; inline it")
        import yaml

        try:
            value = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise ValueError(f"the schema is not YAML or JSON: {exc}") from None
    if not isinstance(value, dict | bool):
        raise ValueError("is-json's value must be a JSON schema (a mapping)")
    if _has_key(value, "format"):
        raise Unmappable(
            "the schema uses `format`, which promptfoo's validator (ajv) checks and this "
            "plugin's does not"
        )
    if isinstance(value, dict) and "$schema" not in value:
        value = {"$schema": _DRAFT7, **value}  # ajv's default draft
    return value


def _has_key(value: Any, key: str) -> bool:
    if isinstance(value, dict):
        return key in value or any(_has_key(v, key) for v in value.values())
    if isinstance(value, list):
        return any(_has_key(v, key) for v in value)
    return False
