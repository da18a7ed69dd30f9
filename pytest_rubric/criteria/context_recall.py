"""``context_recall``: was what the answer needs retrieved at all? The credit is the share of
``facts`` of which some phrase occurs in the context (normalized, at word bounds, as
``any_of`` matches), so a retrieval failure shows here while the answer's own criteria show
a generation failure."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .._results import Outcome
from .calls import context_of
from .check import Answer, Check, CheckContext, credited, quote_list
from .model import CriterionModel, Phrases
from .normalize import compile_phrases, found, normalize


class ContextRecall(CriterionModel):
    """Credit: the share of ``facts`` found in the context; MET when every one is."""

    type: Literal["context_recall"] = "context_recall"
    facts: Annotated[tuple[Phrases, ...], Field(min_length=1)]

    def compile(self, context: CheckContext) -> Check[ContextRecall]:
        return _ContextRecallCheck(self)


class _ContextRecallCheck(Check[ContextRecall]):
    __slots__ = ("facts",)

    def __init__(self, c: ContextRecall) -> None:
        super().__init__(c)
        self.facts = tuple(compile_phrases(fact) for fact in c.facts)

    def run(self, answer: Answer, case: object) -> Outcome:
        trace = context_of(answer)
        if isinstance(trace, Outcome):
            return trace
        # Each passage apart: a phrase must not be found across the seam of two passages.
        passages = [normalize(p.text) for p in trace.context]
        missed = [
            fact[0]
            for fact, phrases in zip(self.c.facts, self.facts, strict=True)
            if not any(found(p, text) for p in phrases for text in passages)
        ]
        total = len(self.facts)
        got = total - len(missed)
        said = f"retrieved {got} of {total} facts in {len(passages)} passage(s)"
        if missed:
            said += f"; not in the context (a retrieval failure): {quote_list(missed)}"
        return credited(got / total, 1.0, said)
