"""``field: /json/pointer`` on ``number``, ``any_of``, ``all_of``, ``regex`` and
``forbidden``: the check looks only at one value of an answer in JSON.

The answer is read as JSON (the whole text, or its first fenced block, as a ``json``
criterion reads it) and the value the pointer (RFC 6901) names is checked as a field of a
``json`` criterion is: a string as an answer would be, any other value as its JSON text. An
answer that is not JSON, or that has no value at the pointer, is UNMET with a reason that
names the field (for ``forbidden``, UNMET is the good side: the mistake was not made there).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from pydantic import AfterValidator

from .._results import Outcome
from .check import Answer, Check, error, unmet
from .json_text import MISSING, NestedTooDeeply, is_pointer, parse_json, resolve_pointer
from .model import CriterionModel


def _check_pointer(pointer: str) -> str:
    if not is_pointer(pointer):
        raise ValueError(
            f"{pointer!r} is not a JSON Pointer; write it as in RFC 6901: '/total', "
            "'/items/0/price' ('' is the whole answer; in a key, '~1' stands for '/', '~0' for '~')"
        )
    return pointer


JsonPointer = Annotated[str, AfterValidator(_check_pointer)]


class FieldScoped(CriterionModel):
    """A criterion that may look at one field of a JSON answer (``field:``)."""

    field: JsonPointer | None = None


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
        return dataclasses.replace(outcome, reason=f"at {self.pointer}: {outcome.reason}")
