"""``json``: the answer (or its first fenced block) parses as JSON, fits ``schema`` (any
draft, checked against its metaschema at collection, run on the bounded validator: one
that could not finish is ERROR, never UNMET) and its ``fields`` (JSON Pointers to
deterministic criterion bodies) check out; the credit is the share of fields MET.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field

from .._guards.engines import CheckTimeout, Deadline, running
from .._guards.schemas import schema_validator
from .._guards.secrets import shorten
from .._results import Outcome, Verdict
from .check import Answer, Check, CheckContext, credited, error, met, unmet
from .json_text import (
    MISSING,
    NOT_FINITE,
    JsonPointer,
    NestedTooDeeply,
    Schema,
    first_non_finite,
    parse_json,
    parse_whole,
    pointer_text,
    resolve_pointer,
    shown_pointer,
)
from .model import CriterionModel
from .registry import body_reader

FieldCheck = Annotated[
    CriterionModel,
    body_reader(
        owner="json",
        subject="a field's check",
        forbidden="a field cannot be checked with `forbidden` (MET would mean the error "
        "happened, yet MET fields earn the credit)",
        name="field",
    ),
]


class Json(CriterionModel):
    """MET when the answer (or its first fenced block) parses as JSON, fits ``schema`` and
    every check in ``fields`` is MET; the credit is the share of ``fields`` MET."""

    type: Literal["json"] = "json"
    json_schema: Schema = Field(
        default=None, validation_alias=AliasChoices("schema", "json_schema")
    )
    fields: dict[JsonPointer, FieldCheck] | None = Field(default=None, min_length=1)
    # False: only the whole answer, as written, counts (no first-fenced-block fallback, and only
    # JSON's own whitespace around it), as in tools that call JSON.parse on the output.
    fenced: bool = True

    def compile(self, context: CheckContext) -> Check[Json]:
        return _JsonCheck(self, context)


class _JsonCheck(Check[Json]):
    __slots__ = ("fields", "timeout", "validator")

    def __init__(self, c: Json, context: CheckContext) -> None:
        super().__init__(c)
        schema = c.json_schema
        # Compiled once per criterion; the schema was checked when the rubric loaded.
        self.validator = None if schema is None else schema_validator(schema)
        self.timeout = context.check_timeout
        self.fields = {pointer: body.compile(context) for pointer, body in (c.fields or {}).items()}

    def run(self, answer: Answer, case: object) -> Outcome:
        try:
            if self.c.fenced:
                value, problem = parse_json(answer.text.strip())
            else:
                value, problem = parse_whole(answer.text)
        except NestedTooDeeply:
            return error(
                "the answer nests deeper than the JSON parser can follow, so whether it fits "
                "could not be checked"
            )
        if problem is not None:
            return unmet(problem)
        if self.validator is not None and (outcome := self._validate(value)) is not None:
            return outcome
        if not self.fields:
            return met("valid JSON" if self.validator is None else "valid JSON matching the schema")
        return self._fields(value, case)

    def _validate(self, value: Any) -> Outcome | None:
        """UNMET naming where and which keyword failed, None when ``value`` fits; ERROR when
        the validation could not finish: what it did not check may be what a penalty is about."""
        from referencing.exceptions import Unresolvable

        assert self.validator is not None
        where = first_non_finite(value)
        if where is not None:
            return unmet(f"does not fit the schema at {pointer_text(where)}: {NOT_FINITE}")
        try:
            with running(Deadline(self.timeout)):
                errors = sorted(
                    self.validator.iter_errors(value),
                    key=lambda e: [str(p) for p in e.absolute_path],
                )
        except Unresolvable as exc:
            return error(
                f"the schema's $ref cannot be followed ({shorten(str(exc), 200)}); nothing is "
                "fetched: put what it names under the schema's $defs and refer to '#/$defs/...'"
            )
        except CheckTimeout as exc:
            return error(f"the schema check could not finish: {exc}")
        except (OverflowError, RecursionError) as exc:  # a deep answer, a huge integer
            return error(
                f"the schema check could not finish ({type(exc).__name__}: the answer is too "
                "deep or its numbers too large to check), so whether it fits is unknown"
            )
        except BaseException as exc:
            # A recursion inside the compiled referencing library (a $ref that refers to
            # itself, on a deep answer) surfaces as pyo3's PanicException, a BaseException.
            if type(exc).__name__ != "PanicException":
                raise
            return error(
                "the schema check could not finish (it recursed past the interpreter's limit: "
                "a $ref that refers back to itself?), so whether the answer fits is unknown"
            )
        if not errors:
            return None
        first = errors[0]
        keyword = "false" if first.validator is None else first.validator  # `false` allows nothing
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        return unmet(
            f"does not fit the schema at {pointer_text(first.absolute_path)}: "
            f"{keyword} ({shorten(first.message, 60)}){more}"
        )

    def _fields(self, value: Any, case: object) -> Outcome:
        failed: list[tuple[str, str]] = []
        for pointer, check in self.fields.items():
            found = resolve_pointer(value, pointer)
            outcome = unmet("missing") if found is MISSING else check.on_json(found, case)
            if outcome.verdict is Verdict.ERROR:
                return error(f"field {shown_pointer(pointer)}: {outcome.reason}")
            if outcome.verdict is not Verdict.MET:
                failed.append((pointer, outcome.reason))
        total = len(self.fields)
        if not failed:
            return met(f"all {total} fields check out")
        listed = "; ".join(f"{shown_pointer(pointer)}: {reason}" for pointer, reason in failed)
        passed = total - len(failed)
        return credited(passed / total, 1.0, f"{passed} of {total} fields MET; failed {listed}")
