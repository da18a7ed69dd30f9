"""``any_of``: MET when any phrase occurs in the normalized answer."""

from __future__ import annotations

from typing import Literal

from .._results import Outcome
from .check import Answer, Check, CheckContext, PhraseCheck, met, quote_list, short, unmet
from .json_text import FieldScoped, on_field
from .model import Phrases
from .normalize import found


class AnyOf(FieldScoped):
    """MET when any phrase occurs in the normalized answer."""

    type: Literal["any_of"] = "any_of"
    any_of: Phrases

    def compile(self, context: CheckContext) -> Check[AnyOf]:
        return on_field(self, _AnyOfCheck(self, self.any_of))


class _AnyOfCheck(PhraseCheck[AnyOf]):
    __slots__ = ()

    def run(self, answer: Answer, case: object) -> Outcome:
        for p in self.phrases:
            if found(p, answer.folded):
                return met(f"found {short(p[1])}")
        return unmet(f"none of {quote_list(self.c.any_of)} found")
