"""What the application did on the way to its answer: the trace, as evidence.

A :class:`Trace` holds the tool calls an agent made, the passages a retriever gave, how
many model calls there were, what they cost and how long the target took. It is read
from what a target returns (a mapping or object with ``messages``, ``context``,
``usage``: :mod:`pytest_rubric._load.traces`), from a responses file line, from a case's
fixed ``context:``, or from the OpenTelemetry spans of the target's call
(``--rubric-otel``); ``source`` says which.

The records are frozen and stdlib only, like :mod:`pytest_rubric._results`, so they
travel with a result through xdist as plain dicts and back. The words follow the
field's own vocabularies: OpenAI's chat messages for what is returned, OpenTelemetry's
GenAI conventions and OpenInference's span attributes for what is read from spans.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

TraceSource = Literal["returned", "otel", "responses", "case"]

# The most a trace's figures may be. Past any real answer (a trillion tokens, a million
# dollars, eleven days: every call the plugin times out within a day), so a figure beyond one
# is a unit slip or a corrupt file, refused where a trace is read as NaN is (a target's
# return, a responses line, the response cache, a --rubric-json read back); and small enough
# that no aggregate of them overflows a float: a subject's summed cost over 200,000 answers
# is at most 2e11 dollars, where a float holds 1.8e308.
MAX_TOKENS = 10**12
"""Input tokens, or output tokens, of one answer."""
MAX_COST_USD = 1e6
"""US dollars one answer cost (``usage.cost_usd``)."""
MAX_LATENCY_S = 1e6
"""Seconds one call of the application took (``latency_s``)."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call of a tool: its name, its arguments (a JSON object; its text when it holds a
    number that is not finite, which no ``args`` fits), whether it succeeded, and its result
    as text (``None`` when the trace does not show one)."""

    name: str
    arguments: dict[str, Any] | str
    ok: bool
    result: str | None = None


@dataclass(frozen=True, slots=True)
class Passage:
    """One retrieved passage: its id (``None`` when the retriever gave none; criteria then
    refer to it by its 1-based position), its text and where it came from."""

    text: str
    id: str | None = None
    source: str | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens and cost of the application's model calls; each figure ``None`` when the
    trace does not give it (a limit on it is then ERROR, never MET)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None

    @property
    def tokens(self) -> int | None:
        """Input plus output tokens, or ``None`` when either is unknown."""
        if self.input_tokens is None or self.output_tokens is None:
            return None
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class Trace:
    """What one call of the application did: see the module docstring.

    ``llm_calls`` is ``None`` when the source cannot tell (a responses line with context
    only, spans with no model span); with no ``tool_calls`` it says which calls were made
    is not known either, never that none was. ``context_known`` says the source told what
    was retrieved, so an empty ``context`` is a retrieval that found nothing, not a context
    never given. ``latency_s``
    is the target call's wall time, measured by the plugin, ``None`` for written responses.
    ``metadata`` is the application's own, kept in the JSON.
    """

    source: TraceSource
    tool_calls: tuple[ToolCall, ...] = ()
    llm_calls: int | None = None
    context: tuple[Passage, ...] = ()
    context_known: bool = False
    usage: Usage = Usage()
    latency_s: float | None = None
    metadata: dict[str, Any] | None = None

    def clipped(self, cut: Callable[[str], str]) -> Trace:
        """This trace as a result keeps it: each tool result, passage text and text in its
        ``metadata`` through ``cut`` (redacted, then cut to
        :data:`pytest_rubric._guards.secrets.MAX_TEXT` characters with a count); the trace
        itself when nothing changed."""
        # A part copied only when cut changed it (most are short): 12 copies a trace took
        # longer than the cuts.
        calls = tuple(
            c
            if c.result is None or (kept := cut(c.result)) == c.result
            else replace(c, result=kept)
            for c in self.tool_calls
        )
        passages = tuple(
            p if (text := cut(p.text)) == p.text else replace(p, text=text) for p in self.context
        )
        metadata = None if self.metadata is None else _texts_cut(self.metadata, cut)
        if calls == self.tool_calls and passages == self.context and metadata == self.metadata:
            return self
        return replace(self, tool_calls=calls, context=passages, metadata=metadata)

    @property
    def passage_ids(self) -> tuple[str, ...]:
        """Each passage's id, or its 1-based position when it has none (how criteria and
        reports name passages)."""
        return tuple(p.id if p.id is not None else str(i) for i, p in enumerate(self.context, 1))


def _texts_cut(value: Any, cut: Callable[[str], str]) -> Any:
    """``value`` (parsed JSON, nested at most as deep as JSON is read) with each text
    through ``cut``."""
    if isinstance(value, str):
        return cut(value)
    if isinstance(value, dict):
        return {key: _texts_cut(item, cut) for key, item in value.items()}
    if isinstance(value, list):
        return [_texts_cut(item, cut) for item in value]
    return value
