"""``citations``: MET when the answer cites at least ``min`` passages and every id it cites
(the ``pattern``'s first group, split at commas) names a passage of the context, by its
``id`` or its 1-based position.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from .._guards.engines import PatternError, compile_pattern
from .._results import Outcome
from .calls import context_of
from .check import Answer, Check, CheckContext, met, quote_list, unmet
from .model import Count, CriterionModel
from .regex import invalid_pattern

DEFAULT_CITATION = r"\[([^\]]+)\]"


class Citations(CriterionModel):
    """MET when the answer cites at least ``min`` passages, each one in the context."""

    type: Literal["citations"] = "citations"
    pattern: Annotated[str, Field(min_length=1)] = DEFAULT_CITATION
    min: Count = 1

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            compile_pattern(pattern)
        except PatternError as exc:
            raise invalid_pattern(pattern, exc) from None
        return pattern

    def compile(self, context: CheckContext) -> Check[Citations]:
        return _CitationsCheck(self)


def cited(compiled: Any, text: str) -> list[str]:
    """The ids ``compiled`` finds in ``text``, each once, in order."""
    ids: dict[str, None] = {}
    for match in compiled.finditer(text):
        group = match.group(1) if match.re.groups else match.group(0)
        for part in (group or "").split(","):
            if part.strip():
                ids[part.strip()] = None
    return list(ids)


class _CitationsCheck(Check[Citations]):
    __slots__ = ("compiled",)

    def __init__(self, c: Citations) -> None:
        super().__init__(c)
        self.compiled = compile_pattern(c.pattern)

    def run(self, answer: Answer, case: object) -> Outcome:
        trace = context_of(answer)
        if isinstance(trace, Outcome):
            return trace
        ids = cited(self.compiled, answer.text)
        known = set(trace.passage_ids)
        unknown = [i for i in ids if i not in known]
        if unknown:
            held = quote_list(list(trace.passage_ids)) if trace.context else None
            return unmet(
                f"cites {quote_list(unknown)}, not in the context "
                + (f"(passages {held})" if held else "(the retriever found nothing)")
            )
        if len(ids) < self.c.min:
            return unmet(f"cites {len(ids)} passage(s), fewer than min {self.c.min}")
        return met(f"cites {quote_list(ids)}, all in the context")
