"""``json``: MET when the answer (or its first fenced block) parses as JSON and fits ``schema``."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import AliasChoices, Field, field_validator

from .._result import Outcome
from .check import Answer, Check, CheckContext, met, unmet
from .model import CriterionModel

__all__ = ["Json"]

_FENCED = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)
_JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_JSON_KEYWORDS = frozenset(
    {"type", "properties", "required", "items", "enum", "description", "title"}
)


class Json(CriterionModel):
    """MET when the answer (or its first fenced block) parses as JSON and fits ``schema``."""

    type: Literal["json"] = "json"
    json_schema: dict[str, Any] | None = Field(
        default=None, validation_alias=AliasChoices("schema", "json_schema")
    )

    @field_validator("json_schema")
    @classmethod
    def _subset(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is not None:
            _check_schema(schema, "schema")
        return schema

    def compile(self, context: CheckContext) -> Check[Json]:
        return _JsonCheck(self)


def _check_schema(schema: Any, where: str) -> None:
    """Reject JSON Schema outside the supported subset, so it is never half-applied."""
    if not isinstance(schema, dict):
        raise ValueError(f"{where} must be a mapping, got {type(schema).__name__}")
    unknown = sorted(set(schema) - _JSON_KEYWORDS)
    if unknown:
        raise ValueError(
            f"{where} uses {', '.join(map(repr, unknown))}, outside the supported JSON Schema "
            f"subset ({', '.join(sorted(_JSON_KEYWORDS))}); use a `callable` criterion for more"
        )
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
    for k in kinds:
        if not isinstance(k, str) or k not in _JSON_TYPES:
            raise ValueError(
                f"{where}.type {k!r} is not a JSON type; use one of {', '.join(sorted(_JSON_TYPES))}"
            )
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise ValueError(f"{where}.properties must be a mapping of property name to schema")
    for name, sub in properties.items():
        _check_schema(sub, f"{where}.properties.{name}")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise ValueError(f"{where}.required must be a list of property names")
    if "items" in schema:
        _check_schema(schema["items"], f"{where}.items")
    if "enum" in schema and not isinstance(schema["enum"], list):
        raise ValueError(f"{where}.enum must be a list of allowed values")


def _schema_errors(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not any(_is_type(value, k) for k in kinds):
            return [f"{path}: expected {' or '.join(kinds)}, got {_json_type(value)}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{path}: {value!r} is not one of {schema['enum']!r}"]
    errors: list[str] = []
    if isinstance(value, dict):
        errors += [
            f"{path}: missing {key!r}" for key in schema.get("required", []) if key not in value
        ]
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                errors += _schema_errors(value[key], sub, f"{path}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += _schema_errors(item, schema["items"], f"{path}[{i}]")
    return errors


def _is_type(value: Any, kind: str) -> bool:
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    return _json_type(value) == kind or (kind == "number" and _json_type(value) == "integer")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _parse_json(text: str) -> tuple[Any, str | None]:
    """The answer as JSON, or its first fenced block; (value, None) or (None, why not).

    An answer nested too deeply for the parser does not parse, like any other
    malformed answer: UNMET, not ERROR.
    """
    try:
        return json.loads(text), None
    except (ValueError, RecursionError) as exc:
        first_error = str(exc) if isinstance(exc, ValueError) else "nested too deeply"
    block = _FENCED.search(text)
    if block is None:
        return None, f"not JSON ({first_error}) and no fenced block"
    try:
        return json.loads(block.group(1)), None
    except ValueError as exc:
        return None, f"fenced block is not JSON ({exc})"
    except RecursionError:
        return None, "fenced block is not JSON (nested too deeply)"


class _JsonCheck(Check[Json]):
    __slots__ = ()

    def run(self, answer: Answer, case: object) -> Outcome:
        value, problem = _parse_json(answer.text.strip())
        if problem is not None:
            return unmet(problem)
        schema = self.c.json_schema
        if schema is None:
            return met("valid JSON")
        errors = _schema_errors(value, schema, "$")
        if errors:
            return unmet("; ".join(errors[:3]))
        return met("valid JSON matching the schema")
