"""``tool_sequence``: the names of the calls in the trace, in order, against a list, by one
of agentevals' trajectory match modes or ``subsequence`` (the default).

- ``subsequence``: the listed tools appear in this order; other calls may come between.
- ``exact``: the calls are the listed tools, in this order, and nothing else.
- ``unordered``: the same calls as listed, in any order (each as many times).
- ``subset``: every call is one of the listed (no call beyond them, counted with repeats).
- ``superset``: every listed tool is called (as many times as listed), others may be too.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Literal

from pydantic import Field

from .._results import Outcome
from .calls import calls_of
from .check import Answer, Check, CheckContext, met, unmet
from .model import CriterionModel, Phrase

MatchMode = Literal["subsequence", "exact", "unordered", "subset", "superset"]


class ToolSequence(CriterionModel):
    """MET when the trace's calls, by name in order, match ``tools`` as ``match`` says."""

    type: Literal["tool_sequence"] = "tool_sequence"
    tools: Annotated[tuple[Phrase, ...], Field(min_length=1)]
    match: MatchMode = "subsequence"

    def compile(self, context: CheckContext) -> Check[ToolSequence]:
        return _ToolSequenceCheck(self)


def sequence_matches(names: list[str], tools: tuple[str, ...], match: MatchMode) -> bool:
    """Whether the called ``names`` match ``tools`` in mode ``match`` (see the module)."""
    if match == "exact":
        return list(names) == list(tools)
    if match == "subsequence":
        remaining = iter(names)
        return all(any(name == tool for name in remaining) for tool in tools)
    called, listed = Counter(names), Counter(tools)
    if match == "unordered":
        return called == listed
    if match == "subset":
        return not called - listed
    return not listed - called  # superset


class _ToolSequenceCheck(Check[ToolSequence]):
    __slots__ = ()

    def run(self, answer: Answer, case: object) -> Outcome:
        calls = calls_of(answer)
        if isinstance(calls, Outcome):
            return calls
        names = [c.name for c in calls]
        shown = " -> ".join(names) or "no tool calls"
        wanted = " -> ".join(self.c.tools)
        if sequence_matches(names, self.c.tools, self.c.match):
            return met(f"{shown} ({self.c.match} of {wanted})")
        article = "an" if self.c.match[0] in "aeiou" else "a"
        return unmet(f"{shown}: not {article} {self.c.match} match of {wanted}")
