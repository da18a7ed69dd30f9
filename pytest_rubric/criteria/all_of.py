"""``all_of``: MET when every phrase occurs in the normalized answer."""

from __future__ import annotations

from typing import Literal

from .._results import Outcome
from .check import Answer, Check, CheckContext, PhraseCheck, met, quote_list, unmet
from .json_text import FieldScoped, on_field
from .model import Phrases
from .normalize import found


class AllOf(FieldScoped):
    """MET when every phrase occurs in the normalized answer."""

    type: Literal["all_of"] = "all_of"
    all_of: Phrases

    def compile(self, context: CheckContext) -> Check[AllOf]:
        return on_field(self, _AllOfCheck(self, self.all_of))


class _AllOfCheck(PhraseCheck[AllOf]):
    __slots__ = ()

    def run(self, answer: Answer, case: object) -> Outcome:
        missing = [p[1] for p in self.phrases if not found(p, answer.folded)]
        if missing:
            return unmet(f"missing {quote_list(missing)}")
        return met(f"all {len(self.phrases)} phrases found")
