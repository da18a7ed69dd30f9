"""``--rubric-otel``: the trace of a target call, read from the application's own spans.

An application already instrumented with OpenTelemetry needs no change: at the first target
call, :class:`SpanCapture` adds one span processor to the application's SDK tracer provider
(the global one, installed when none is set yet), so a provider the application sets when
its module is imported is the one used. Each call runs inside a root span of the plugin's
(:data:`SPAN_NAME`); every span of that span's trace is the call's, matched by trace id,
never by time, so concurrent calls and xdist workers each read their own. Only the spans
of calls in progress are kept, each call's at most :data:`MAX_SPANS`, dropped once read.
:func:`read_spans` reads them by the GenAI semantic conventions and OpenInference's
attributes (see ``docs/guides/otel.md``).

Imported only with ``--rubric-otel``: ``opentelemetry-sdk`` is the optional extra
``pytest-rubric[otel]``.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace as trace_api
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.trace import StatusCode

from ._errors import SpansUnreadable
from ._guards.secrets import shorten
from ._load.traces import arguments as call_arguments
from ._load.traces import json_object, shown, within
from ._trace import MAX_TOKENS, Passage, ToolCall, Trace, Usage

SPAN_NAME = "pytest-rubric target"
"""The plugin's span around each target call: the root of the call's trace."""

MAX_SPANS = 10_000
"""The most spans one call keeps; a call with more is ERROR (its trace would be partial)."""

# GenAI semantic conventions: the operations that are a call of a model (the inference
# span), and the one that is a tool's execution.
_INFERENCE = frozenset({"chat", "text_completion", "generate_content"})
_EXECUTE_TOOL = "execute_tool"
_DOCUMENT = re.compile(r"retrieval\.documents\.([0-9]+)\.document\.(id|content|metadata)")


class _Collector(SpanProcessor):
    """Keeps the ended spans of the traces that are open (calls in progress), no others."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._open: dict[int, list[ReadableSpan]] = {}
        self._over: set[int] = set()  # traces that ended more than `limit` spans

    def on_end(self, span: ReadableSpan) -> None:
        # The plugin's own span, the one without a parent in a trace it opened, is not the
        # application's: it ends last, and would make the limit's last span one too many.
        if (context := span.context) is None or span.parent is None:
            return
        with self._lock:
            kept = self._open.get(context.trace_id)
            if kept is None:  # another trace, or a call already read: never kept
                return
            if len(kept) < self._limit:
                kept.append(span)
            else:
                self._over.add(context.trace_id)

    def open(self, trace_id: int) -> None:
        with self._lock:
            self._open[trace_id] = []

    def close(self, trace_id: int) -> tuple[list[ReadableSpan], bool]:
        """The trace's spans and whether some were dropped; the trace is forgotten."""
        with self._lock:
            over = trace_id in self._over
            self._over.discard(trace_id)
            return self._open.pop(trace_id, []), over

    def shutdown(self) -> None:
        with self._lock:
            self._open.clear()
            self._over.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


@dataclass
class Captured:
    """What one target call left in its spans: :meth:`trace` once the call is over."""

    _spans: list[ReadableSpan] = field(default_factory=list)
    _problem: str | None = None
    _latency: float | None = None

    def trace(self) -> Trace | None:
        """The call's trace (source ``"otel"``, ``latency_s`` the plugin span's duration),
        or ``None`` when no span of either convention was read: the application is not
        instrumented, and nothing is known of its tool or model calls.

        Raises :class:`~pytest_rubric._errors.SpansUnreadable` when the spans could not be
        read whole (sampled out, more than :data:`MAX_SPANS`, a span :func:`read_spans`
        cannot read).
        """
        if self._problem is not None:
            raise SpansUnreadable(self._problem)
        return read_spans(self._spans, latency_s=self._latency)


class SpanCapture:
    """Reads each target call's spans: one per session (each xdist worker has its own).

    ``provider`` is the SDK tracer provider to read from; by default the global one, or,
    when none is set yet, one installed as the global provider.
    """

    def __init__(self, *, provider: TracerProvider | None = None, limit: int = MAX_SPANS):
        self._collector = _Collector(limit)
        self._limit = limit
        self._provider = provider
        self._tracer: trace_api.Tracer | None = None
        self._lock = threading.Lock()

    def traced(self, call: Callable[[], Any]) -> tuple[Any, Trace | None]:
        """What ``call()`` (one target call) returned, and the trace its spans show."""
        with self.capture() as got:
            value = call()
        return value, got.trace()

    @contextmanager
    def capture(self) -> Iterator[Captured]:
        """Run the block (one target call) inside a new root span; its spans are read into
        the :class:`Captured` when the block ends, whether it returned or raised."""
        tracer = self._ready()
        got = Captured()
        trace_id: int | None = None
        span: trace_api.Span | None = None
        try:
            # A root (an empty parent context): each call its own trace, even when the
            # caller is inside a span of its own.
            with tracer.start_as_current_span(SPAN_NAME, context=Context()) as span:
                if span.is_recording():
                    trace_id = span.get_span_context().trace_id
                    self._collector.open(trace_id)
                else:
                    got._problem = (
                        "--rubric-otel: the tracer provider's sampler dropped the plugin's span, "
                        "so the call's spans cannot be read; sample every trace while testing "
                        "(OTEL_TRACES_SAMPLER=always_on, or a ParentBased(ALWAYS_ON) sampler)"
                    )
                yield got
        finally:
            if trace_id is not None:
                got._spans, over = self._collector.close(trace_id)
                if isinstance(span, ReadableSpan) and span.end_time and span.start_time:
                    got._latency = (span.end_time - span.start_time) / 1e9
                if over:
                    got._problem = (
                        f"--rubric-otel: the call ended more than {self._limit:,} spans; "
                        "its trace would be partial, so it is not read"
                    )

    def close(self) -> None:
        """The session is over: forget every span. (An SDK provider cannot remove a
        processor; this one stays, keeping nothing.)"""
        self._collector.shutdown()

    def _ready(self) -> trace_api.Tracer:
        """The plugin's tracer, its processor added to the provider on first use."""
        with self._lock:
            if self._tracer is None:
                provider = self._provider or _global_provider()
                provider.add_span_processor(self._collector)
                self._tracer = provider.get_tracer("pytest_rubric")
            return self._tracer


def _global_provider() -> TracerProvider:
    """The application's SDK tracer provider, or a new one set as the global provider when
    none is set yet (a ``ProxyTracerProvider``: the API's stand-in until one is set)."""
    provider = trace_api.get_tracer_provider()
    if isinstance(provider, trace_api.ProxyTracerProvider):
        # Set only once per process: when another thread set one first, that one is used.
        trace_api.set_tracer_provider(TracerProvider())
        provider = trace_api.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        kind = f"{type(provider).__module__}.{type(provider).__qualname__}"
        raise SpansUnreadable(
            f"--rubric-otel: the global tracer provider is {kind}, not an OpenTelemetry SDK "
            "TracerProvider (opentelemetry.sdk.trace.TracerProvider), so no span processor "
            "can be added to it; set an SDK TracerProvider as the global provider"
        )
    return provider


# --- reading spans ---------------------------------------------------------------------------


def read_spans(spans: Sequence[ReadableSpan], *, latency_s: float | None = None) -> Trace | None:
    """The trace the spans of one call show, or ``None`` when none follows either convention.

    Calls are tool-execution spans only (``execute_tool``, OpenInference ``TOOL``), in the
    order they started; a tool call a model requested, recorded on its chat span, is not
    counted again. ``llm_calls`` counts inference spans (``chat``, ``text_completion``,
    ``generate_content``; OpenInference ``LLM``), and is unknown (``None``) when there is
    none: "never called" cannot be read from a model client that is not instrumented.
    Tokens are summed over the model spans (inference and embeddings; an agent's span that
    totals them is not counted twice; an embedding writes no output tokens, so its spans
    need not give that figure), and are unknown (``None``) when one of them does not give its figure (or gives one past
    :data:`~pytest_rubric._trace.MAX_TOKENS`, as the total may not be). Cost is never read
    from spans: it is known only when the application returns ``usage.cost_usd``. A span
    whose attributes cannot be read (an int of thousands of digits where text goes) is
    :class:`~pytest_rubric._errors.SpansUnreadable` naming it.
    """
    calls: list[ToolCall] = []
    passages: list[Passage] = []
    llm_calls = 0
    tokens: list[tuple[int | None, int | None]] = []
    retrieved = False
    tools_ran = False  # a model span was given a tool's result
    for span in sorted(spans, key=lambda s: (s.start_time or 0, s.end_time or 0)):
        attributes: Mapping[str, Any] = span.attributes or {}
        operation = attributes.get("gen_ai.operation.name")
        try:
            kind = str(attributes.get("openinference.span.kind", "")).upper()
            if operation == _EXECUTE_TOOL or kind == "TOOL":
                calls.append(_tool_call(span, attributes))
            elif operation in _INFERENCE or kind == "LLM":
                llm_calls += 1
                tokens.append(_tokens(attributes))
                tools_ran = tools_ran or _fed_tool_results(attributes)
            elif operation == "embeddings" or kind == "EMBEDDING":
                given, output = _tokens(attributes)  # an embedding writes no tokens
                tokens.append((given, 0 if output is None else output))
            elif kind == "RETRIEVER":
                passages.extend(_documents(attributes))
                retrieved = True
        except (ValueError, TypeError, OverflowError) as exc:
            # The application's spans are data: one that cannot be read (an int attribute
            # of 5,000 digits, past what Python prints) is the trace's problem, never a
            # crash blamed on the target.
            raise SpansUnreadable(
                f"--rubric-otel: the span {shown(span.name)} cannot be read "
                f"({type(exc).__name__}: {shorten(str(exc), 200)}); the call's trace is not read"
            ) from None
    if not (calls or tokens or retrieved):  # no span of either convention
        return None
    return Trace(
        source="otel",
        tool_calls=tuple(calls),
        # No model span: the model client is not instrumented, so the count of model calls
        # is not known (None, as a token count no span gives), never 0. With no tool span
        # either (a retriever's span alone), or with a model given a tool's result that ran
        # in no span, which calls were made is not known: None and no calls make the call
        # criteria ERROR, never "no call made". Tool spans alone are the calls, known.
        llm_calls=None if not llm_calls or (tools_ran and not calls) else llm_calls,
        context=tuple(passages),
        context_known=retrieved,
        usage=Usage(
            input_tokens=_total([t[0] for t in tokens]),
            output_tokens=_total([t[1] for t in tokens]),
        ),
        latency_s=latency_s,
    )


def _fed_tool_results(attributes: Mapping[str, Any]) -> bool:
    """Whether a model span's input holds a tool's result (a message of role ``tool``, a
    GenAI ``tool_call_response`` part): proof a tool ran. A model that only asked for a tool
    (a forced call for structured output, a call a guard refused) proves nothing ran."""
    for key, value in attributes.items():
        if value == "tool" and key.endswith(".role") and key.startswith(_INPUT_ROLES):
            return True
    given = attributes.get("gen_ai.input.messages")
    return isinstance(given, str) and (
        '"tool_call_response"' in given or '"role": "tool"' in given or '"role":"tool"' in given
    )


# Where the instrumentations write the role of each input message: OpenInference's, and
# OpenLLMetry's indexed prompts.
_INPUT_ROLES = ("llm.input_messages.", "gen_ai.prompt.")


def _tool_call(span: ReadableSpan, attributes: Mapping[str, Any]) -> ToolCall:
    name = attributes.get("gen_ai.tool.name") or attributes.get("tool.name")
    if not name:  # the span name, "execute_tool {gen_ai.tool.name}" by the conventions
        name = span.name.removeprefix(_EXECUTE_TOOL).strip() or span.name
    if "gen_ai.tool.call.arguments" in attributes:
        arguments = attributes["gen_ai.tool.call.arguments"]  # read below, its text kept
    # OpenInference records a call's arguments as its input (`input.value`, JSON); its
    # `tool.parameters` may hold them too, or the tool's JSON Schema, which is not a call.
    elif (arguments := json_object(attributes.get("input.value"))) is None:
        parameters = json_object(attributes.get("tool.parameters")) or {}
        schema = parameters.get("type") == "object" and "properties" in parameters
        arguments = None if schema else parameters
    failed = span.status.status_code is StatusCode.ERROR or "error.type" in attributes
    result = attributes.get("gen_ai.tool.call.result", attributes.get("output.value"))
    return ToolCall(
        name=str(name),
        arguments=call_arguments(arguments),
        ok=not failed,
        result=None if result is None else _text(result),
    )


def _documents(attributes: Mapping[str, Any]) -> list[Passage]:
    """OpenInference's ``retrieval.documents.N.document.{id,content,metadata}``, by N. N is
    ordered as the number it writes, never made an ``int``: an N of 5,000 digits is past
    what Python converts (the application's spans are data, whatever they hold)."""
    found: dict[str, dict[str, Any]] = {}
    for key, value in attributes.items():
        if (match := _DOCUMENT.fullmatch(key)) is not None:
            found.setdefault(match[1].lstrip("0") or "0", {})[match[2]] = value
    return [
        Passage(
            text=_text(document.get("content", "")),
            id=None if document.get("id") is None else str(document["id"]),
            source=source if isinstance(source, str) else None,
        )
        for _, document in sorted(found.items(), key=lambda item: (len(item[0]), item[0]))
        for source in [(json_object(document.get("metadata")) or {}).get("source")]
    ]


def _tokens(attributes: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """A model span's input and output tokens: GenAI's, else OpenInference's."""
    return (
        _count(attributes, "gen_ai.usage.input_tokens", "llm.token_count.prompt"),
        _count(attributes, "gen_ai.usage.output_tokens", "llm.token_count.completion"),
    )


def _count(attributes: Mapping[str, Any], *names: str) -> int | None:
    for name in names:
        value = attributes.get(name)
        if isinstance(value, int) and within(value, MAX_TOKENS):
            return value
    return None


def _total(counts: list[int | None]) -> int | None:
    """The sum, or ``None`` when one is unknown or there is none: a partial sum would
    understate what a limit on it checks; and past :data:`MAX_TOKENS`, as a span's own count
    past it is: no trace holds more."""
    if not counts or None in counts:
        return None
    total = sum(c for c in counts if c is not None)
    return total if total <= MAX_TOKENS else None


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(list(value) if isinstance(value, tuple) else value)
    except (TypeError, ValueError):
        return str(value)
