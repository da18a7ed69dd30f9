"""JSON read out of an answer (the answer, or its first fenced block, as strict JSON: no
``NaN``, which would pass every ``minimum``), the value a JSON Pointer (RFC 6901) names in
it, ``field:`` (:class:`FieldScoped`: a criterion that checks one value of a JSON answer,
UNMET naming the field when there is none) and the JSON Schemas a rubric gives, checked
when it loads (:func:`valid_schema`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import sys
from collections.abc import Iterator
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, ValidationInfo

from .._guards.limits import PlainNumber, kind_of
from .._guards.schemas import REFERENCES, SchemaProblem, draft_of, schema_problems
from .._guards.secrets import shorten
from .._results import Outcome
from .check import Answer, Check, error, unmet
from .model import CriterionModel, FieldError

# A fenced block opens with ``` or ~~~ (and an info string) and closes, as Markdown closes it,
# with the same fence on a line of its own: one inside a JSON string ('{"code": "```"}') does
# not end it. A ``` block with no such line may close at a line's end.
_OPENING = re.compile(r"(```|~~~)[^\n`~]*\n")
_CLOSING = {f: re.compile(rf"^[ \t]*{f}[ \t]*$", re.MULTILINE) for f in ("```", "~~~")}
_INDEX = re.compile(r"0|[1-9][0-9]*")


MISSING: Any = object()
"""What :func:`resolve_pointer` returns for a pointer that names nothing in the document."""


def is_pointer(pointer: str) -> bool:
    return (pointer == "" or pointer.startswith("/")) and re.search("~[^01]|~$", pointer) is None


def resolve_pointer(document: Any, pointer: str) -> Any:
    """The value ``pointer`` (RFC 6901) names in ``document``, or :data:`MISSING` (never
    raises)."""
    if pointer == "":
        return document
    if not is_pointer(pointer):
        return MISSING
    value = document
    for token in pointer[1:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and token in value:
            value = value[token]
        elif isinstance(value, list) and _INDEX.fullmatch(token) and int(token) < len(value):
            value = value[int(token)]
        else:
            return MISSING
    return value


def leaves(value: Any) -> Iterator[Any]:
    """The values in parsed JSON that are neither a list nor an object, in document order.
    Iterative: answers nest past the stack."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict | list):
            stack += reversed(item.values() if isinstance(item, dict) else item)
        else:
            yield item


NOT_FINITE = "a number that is not finite (it overflowed) fits no schema"


def first_non_finite(value: Any) -> tuple[str | int, ...] | None:
    """The path of the first number in parsed JSON that is not finite (NaN, infinite, past
    every float: 400 digits), or None. Iterative and linear: answers nest past the stack."""
    # (value, the index of its parent here, its key there); a path is built only when found.
    nodes: list[tuple[Any, int, str | int]] = [(value, -1, "")]
    index = 0
    while index < len(nodes):
        node = nodes[index][0]
        if type(node) in (int, float) and not -sys.float_info.max <= node <= sys.float_info.max:
            path: list[str | int] = []
            while index > 0:
                _, index, key = nodes[index]
                path.append(key)
            return tuple(reversed(path))
        if type(node) is dict:
            nodes += [(item, index, key) for key, item in node.items()]
        elif type(node) is list:
            nodes += [(item, index, i) for i, item in enumerate(node)]
        index += 1
    return None


def _not_a_number(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON value")


class NestedTooDeeply(Exception):
    """Well-nested JSON text deeper than the parser can follow: it may be valid JSON, so
    whether it fits is unknown (ERROR), where malformed text is simply not JSON (UNMET)."""


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_CLOSES = {"]": "[", "}": "{"}


def _well_nested(text: str) -> bool:
    """Whether the brackets of ``text``, outside its strings, open and close in order."""
    opened: list[str] = []
    for bracket in re.findall(r"[\[\]{}]", _JSON_STRING.sub("", text)):
        if bracket in "[{":
            opened.append(bracket)
        elif not opened or opened.pop() != _CLOSES[bracket]:
            return False
    return not opened


# Integer literals up to this many digits are read exactly; int() refuses longer ones (past
# sys.get_int_max_str_digits(), 4,300 by default) and would take quadratic time without that.
_EXACT_DIGITS = 4_000


def json_integer(literal: str) -> int | float:
    """A JSON integer literal: exact, or, when too long for int(), the number that is not
    finite it is as a float (``inf``, as a 400-digit literal reads in a number check): valid
    JSON is never "not JSON" for its length. The ``parse_int`` of every reader of an answer's
    JSON."""
    if len(literal) <= _EXACT_DIGITS:
        try:
            return int(literal)
        except ValueError:  # past a digit limit set lower (PYTHONINTMAXSTRDIGITS)
            pass
    return float(literal)


def _loads(text: str) -> Any:
    # NaN and Infinity are Python's extensions, not JSON: NaN would pass every `minimum`.
    try:
        return json.loads(text, parse_constant=_not_a_number, parse_int=json_integer)
    except RecursionError:
        if _well_nested(text):
            raise NestedTooDeeply from None
        raise


def parse_whole(text: str) -> tuple[Any, str | None]:
    """The whole text as JSON: (value, None) or (None, why not); :class:`NestedTooDeeply` for
    well-nested text too deep to parse."""
    try:
        return _loads(text), None
    except ValueError as exc:
        return None, f"not JSON ({exc})"
    except RecursionError:
        return None, "not JSON (nested too deeply)"


def parse_json(text: str) -> tuple[Any, str | None]:
    """The answer as JSON, or its first fenced block, as :func:`parse_whole` reads each."""
    value, problem = parse_whole(text)
    if problem is None:
        return value, None
    if (opening := _OPENING.search(text)) is None:
        return None, f"{problem} and no fenced block"
    fence, rest = opening[1], text[opening.end() :]
    closing = _CLOSING[fence].search(rest)
    end = closing.start() if closing else rest.find(fence) if fence == "```" else -1
    if end < 0:
        return None, f"{problem} and no fenced block"
    value, in_block = parse_whole(rest[:end])
    return (value, None) if in_block is None else (None, f"fenced block is {in_block}")


# --- field: one value of a JSON answer -----------------------------------------------------


def check_pointer(pointer: str) -> str:
    """A JSON Pointer (RFC 6901), a rubric file's ``field:`` and ``rubric_style_field`` alike:
    '' or '/a/b', '~' written only as '~0' or '~1'."""
    if not is_pointer(pointer):
        raise ValueError(
            f"{pointer!r} is not a JSON Pointer; write it as in RFC 6901: '/total', "
            "'/items/0/price' ('' is the whole answer; in a key, '~1' stands for '/', '~0' for '~')"
        )
    return pointer


JsonPointer = Annotated[str, AfterValidator(check_pointer)]


class FieldScoped(CriterionModel):
    """A criterion that may look at one field of a JSON answer (``field:``)."""

    field: JsonPointer | None = None


def shown_pointer(pointer: str) -> str:
    """A field's pointer as a reason names it (the empty one says what it points at)."""
    return pointer if pointer else "'' (the whole answer)"


def on_field(c: FieldScoped, check: Check[Any]) -> Check[Any]:
    """``check``, looking only at ``c.field`` of the answer when the criterion names one."""
    return check if c.field is None else _OnField(c, check)


class _OnField(Check[FieldScoped]):
    __slots__ = ("check", "pointer")

    def __init__(self, c: FieldScoped, check: Check[Any]) -> None:
        super().__init__(c)
        self.check = check
        self.pointer = c.field or ""

    def run(self, answer: Answer, case: object) -> Outcome:
        try:
            document, problem = parse_json(answer.text.strip())
        except NestedTooDeeply:
            return error(
                f"the answer nests deeper than the JSON parser can follow, so field "
                f"{self.pointer!r} could not be read"
            )
        if problem is not None:
            return unmet(f"field {self.pointer!r}: the answer is not JSON ({problem})")
        value = resolve_pointer(document, self.pointer)
        if value is MISSING:
            return unmet(f"the answer has no field {self.pointer!r}")
        outcome = self.check.on_json(value, case)
        shown = shown_pointer(self.pointer)
        return dataclasses.replace(outcome, reason=f"at {shown}: {outcome.reason}")


# --- JSON Schemas in rubric files (checked when the rubric loads) --------------------------


def valid_schema(
    schema: dict[str, Any] | bool | None, info: ValidationInfo
) -> dict[str, Any] | bool | None:
    """``schema`` when it is a valid JSON Schema that can run safely (no retrieval, guarded
    patterns); else :class:`FieldError` on its field, at the path of the problem."""
    field = str(info.field_name).removeprefix("json_")  # `json`'s is written `schema`
    declared = schema.get("$schema", "") if isinstance(schema, dict) else ""
    if not isinstance(declared, str):
        raise FieldError(
            field,
            f"`{field}` is not a valid JSON Schema: at /$schema, `$schema` is "
            f"{kind_of(declared)}, not a string (the URI of a draft)",
            hint="write a draft's URI, such as `$schema: https://json-schema.org/draft/2020-12/"
            "schema`, or leave `$schema` out (draft 2020-12)",
            path=("$schema",),
        )
    if schema is not None:
        shape = json.dumps(_shape(schema), sort_keys=True)
        problem = _schema_problem(shape)
        if problem is not None:
            path, message = problem
            raise FieldError(
                field,
                f"`{field}` is not a valid JSON Schema: at {pointer_text(path)}, {message}",
                hint="fix the schema at that path (https://json-schema.org/draft/2020-12 "
                "lists the keywords)",
                path=path,
            )
        # Cases that differ only in a `const` (the order each must have) share one check.
        unsafe = _unsafe(shape if _same_in_shape(schema) else json.dumps(schema, sort_keys=True))
        if unsafe:
            first = unsafe[0]
            listed = "; ".join(f"at {pointer_text(p.path)}, {p.message}" for p in unsafe[:3])
            more = f" (+{len(unsafe) - 3} more)" if len(unsafe) > 3 else ""
            raise FieldError(
                field, f"`{field}` cannot be used: {listed}{more}", hint=first.hint, path=first.path
            )
    return schema


def _plain_numbers(value: Any) -> Any:
    if isinstance(value, PlainNumber):
        return float(value)
    if isinstance(value, dict):
        return {key: _plain_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain_numbers(item) for item in value]
    return value


# The schemas a criterion gives, checked when the rubric loads: `json`'s and the one the
# arguments of a call must fit (`args`). An unquoted 1e3 in them is a number: see PlainNumber.
def _schema_value(value: Any) -> Any:
    if isinstance(value, str) and not isinstance(value, PlainNumber):  # its JSON text, quoted
        raise ValueError(
            "a JSON Schema is a mapping (or true or false), not text: write it unquoted, such "
            "as {type: array}"
        )
    return _plain_numbers(value)


Schema = Annotated[
    dict[str, Any] | bool | None, BeforeValidator(_schema_value), AfterValidator(valid_schema)
]


# Keywords whose value every draft's metaschema accepts whatever it is, and those whose value
# maps names to subschemas (so a property named "const" is a subschema, not the keyword).
_ANY_VALUE = frozenset({"const", "default"})
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)


def _shape(schema: Any) -> Any:
    """``schema`` with what its metaschema does not constrain blanked (``const``, ``default``,
    ``enum`` members), paths unchanged, so the check is cached across cases that differ there."""
    if not isinstance(schema, dict):
        return schema
    shaped: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _ANY_VALUE:
            shaped[key] = None
        elif key == "enum" and isinstance(value, list):
            shaped[key] = list(range(len(value)))
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            shaped[key] = {name: _shape(sub) for name, sub in value.items()}
        elif isinstance(value, list):
            shaped[key] = [_shape(item) for item in value]
        else:
            shaped[key] = _shape(value)
    return shaped


def _same_in_shape(value: Any) -> bool:
    """Whether :func:`_unsafe` finds in ``value``'s :func:`_shape` what it finds in ``value``:
    nothing in it refers (a reference could reach a blanked value), no number is infinite or
    NaN, and no value the shape blanks is a mapping or a list (the check reads their keys)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_same_in_shape(item) for item in value)
    if not isinstance(value, dict):
        return True
    if any(key in value for key in REFERENCES):
        return False
    for key, item in value.items():
        blanked = [item] if key in _ANY_VALUE else item if key == "enum" else None
        if isinstance(blanked, list):
            if not all(_same_in_shape(b) and not isinstance(b, dict | list) for b in blanked):
                return False
        elif not _same_in_shape(item):
            return False
    return True


def pointer_text(path: Any) -> str:
    """A path of keys and indices as a JSON Pointer; the root named in words."""
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "/" + "/".join(parts) if parts else "the top level"


@functools.lru_cache(maxsize=256)
def _schema_problem(text: str) -> tuple[tuple[str | int, ...], str] | None:
    """Where a schema (as canonical JSON text) breaks its draft's metaschema, and how; None
    when it is valid. Cached: checking a schema takes milliseconds, and cases share one."""
    from jsonschema.exceptions import best_match

    schema = json.loads(text)
    validator = draft_of(schema)
    found = best_match(validator(validator.META_SCHEMA).iter_errors(schema))
    if found is None:
        return None
    return tuple(found.absolute_path), shorten(found.message, 160)


@functools.lru_cache(maxsize=256)
def _unsafe(text: str) -> list[SchemaProblem]:
    """What keeps a valid schema (as canonical JSON text) from running safely (see
    :func:`~pytest_rubric._guards.schemas.schema_problems`); cached like :func:`_schema_problem`."""
    return schema_problems(json.loads(text))
