"""What a target returns (:data:`RETURN_SHAPES`), or a responses line holds beside
``response``, read into a :class:`~pytest_rubric._trace.Trace`; anything else is a
:class:`ShapeError` naming the field. :func:`as_fields` is the way back (``collect``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, replace
from typing import Any, TypeVar

from .._guards.limits import Limit, json_loads
from .._guards.secrets import known_keys, redact
from .._trace import (
    MAX_COST_USD,
    MAX_LATENCY_S,
    MAX_TOKENS,
    Passage,
    ToolCall,
    Trace,
    TraceSource,
    Usage,
)
from ..criteria.json_text import first_non_finite, json_integer

FIELD_SHAPES = (  # the fields beside the answer, as errors describe them
    '"context" (a list of str or of {"id", "text", "source"}), "messages" (OpenAI chat '
    'messages: assistant messages with "tool_calls", "tool" messages with "tool_call_id"), '
    '"usage" ({"input_tokens", "output_tokens", "cost_usd"}) and "metadata" (a dict)'
)

RETURN_SHAPES = (  # what a target may return, as errors list it
    "a str (the answer)",
    f'a mapping with "answer" (a str, required) and any of {FIELD_SHAPES}',
    "an object with those attributes (a dataclass, a pydantic model, a named tuple)",
)
TRACE_FIELDS = ("context", "messages", "usage", "metadata")  # beside the answer
# What each figure must be, as errors say it: the bounds of :mod:`pytest_rubric._trace`.
TOKENS = f"a whole number of tokens from 0 to {MAX_TOKENS:,}"
DOLLARS = f"a number of US dollars from 0 to {MAX_COST_USD:,.0f}"
SECONDS = f"a number of seconds from 0 to {MAX_LATENCY_S:,.0f}"
MODEL_CALLS = f"a whole number of model calls from 0 to {MAX_TOKENS:,}, or null (not known)"


class ShapeError(ValueError):
    """What a target returned (or a responses line holds) is none of :data:`RETURN_SHAPES`;
    the message names the field and says what it must be, ``field`` names it alone."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def _get(value: Any, name: str) -> Any:
    if type(value) is dict or isinstance(value, Mapping):  # a dict first: no ABC check
        return value.get(name)
    return getattr(value, name, None)


def read_returned(value: Any) -> tuple[str, Trace | None]:
    """The answer and trace (None when it has none of :data:`TRACE_FIELDS`) of what a target
    returned; :class:`ShapeError` naming what is wrong."""
    if isinstance(value, str):
        return value, None
    if isinstance(value, Mapping):
        if "answer" not in value:
            keys = ", ".join(repr(k) for k in list(value)[:6]) or "no keys"
            raise ShapeError(f'a mapping without "answer" (it has {keys})')
    elif not hasattr(value, "answer"):  # a named tuple with one is an object with the fields
        plain = value is None or isinstance(value, int | float | bytes | list | tuple | set)
        raise ShapeError(
            type(value).__name__ + ("" if plain else ", an object without an `answer` attribute")
        )
    answer = _get(value, "answer")
    if not isinstance(answer, str):
        raise ShapeError(f'"answer" is {type(answer).__name__}, not a str')
    answer = str.__str__(answer)  # an object's str subclass: the plain str it holds
    fields = {name: _get(value, name) for name in TRACE_FIELDS}
    if all(v is None for v in fields.values()):
        return answer, None
    return answer, read_trace(fields, source="returned")


def read_trace(
    fields: Mapping[str, Any], *, source: TraceSource, latency_s: float | None = None
) -> Trace:
    """A trace from :data:`TRACE_FIELDS` (each may be None), or :class:`ShapeError`."""
    no_calls: tuple[tuple[ToolCall, ...], int | None] = ((), None)
    written = functools.partial(read_messages, written=source == "responses")
    tool_calls, llm_calls = _field(fields, "messages", written, no_calls)
    return Trace(
        source=source,
        tool_calls=tool_calls,
        llm_calls=llm_calls,
        context=_field(fields, "context", read_context, ()),
        context_known=fields.get("context") is not None,
        usage=_field(fields, "usage", read_usage, Usage()),
        latency_s=latency_s,
        metadata=_field(fields, "metadata", _metadata, None),
    )


T = TypeVar("T")


def _field(fields: Mapping[str, Any], name: str, read: Callable[[Any], T], absent: T) -> T:
    """Field ``name`` of ``fields`` read by ``read`` (``absent`` when it is None); a
    :class:`ShapeError` names the field."""
    if (value := fields.get(name)) is None:
        return absent
    try:
        return read(value)
    except ShapeError as exc:
        exc.field = name
        raise


def _metadata(metadata: Any) -> dict[str, Any]:
    if not isinstance(metadata, Mapping):
        raise ShapeError(f'"metadata" is {type(metadata).__name__}, not a dict')
    try:
        kept = json.loads(json.dumps(dict(metadata), allow_nan=False, default=str))
    except (TypeError, ValueError, RecursionError) as exc:
        raise ShapeError(f'"metadata" cannot be written as JSON ({type(exc).__name__})') from None
    return dict(kept)


def _items(value: Any, name: str) -> list[Any]:
    if type(value) is list:  # what JSON and most applications give: no ABC check
        return value
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise ShapeError(f'"{name}" is {type(value).__name__}, not a list')
    return list(value)


def _text(content: Any) -> str:
    """A message's content as text: a str, or OpenAI content parts' texts joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Iterable) and not isinstance(content, bytes | Mapping):
        return "".join(str(_get(part, "text") or "") for part in content)
    return json.dumps(content, default=str) if isinstance(content, Mapping) else str(content)


def json_object(value: Any) -> dict[str, Any] | None:
    """A JSON object, given as one or as its text (span attributes hold no mappings), or
    ``None``: arguments that are not a JSON object are no arguments the criteria can read."""
    if isinstance(value, str):
        try:
            value = json.loads(value, parse_int=json_integer)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser
            return None
    return value if isinstance(value, dict) else None


def arguments(raw: Any) -> dict[str, Any] | str:
    """A call's arguments: a JSON object, or ``{}`` (none, not JSON, a list). Arguments
    holding a number that is not finite (``NaN``, ``1e999``) are kept as their JSON text:
    no ``args`` schema fits them, as no schema fits such an answer, and the trace in the
    outputs stays JSON (RFC 8259 has no NaN)."""
    parsed = dict(raw) if isinstance(raw, Mapping) else (json_object(raw) or {})
    if first_non_finite(parsed) is None:
        return parsed
    return raw if isinstance(raw, str) else json.dumps(parsed, default=str)


def within(value: Any, maximum: float) -> bool:
    """Whether ``value`` is a figure a trace may hold (tokens, a cost, a latency): a number
    (never a bool) from 0 to ``maximum`` (:data:`~pytest_rubric._trace.MAX_TOKENS`,
    ``MAX_COST_USD``, ``MAX_LATENCY_S``), so finite too (not NaN, not ``1e309``). The bound
    is what keeps a leaderboard's sums and medians of them finite."""
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= maximum


def shown(value: Any) -> str:
    """A figure as an error names it: its repr, cut short (a number of 400 digits), redacted
    of the environment's keys before the cut (what a cut leaves of a key is too short for
    the outputs' boundary to know)."""
    try:
        text = repr(value)
    except ValueError:  # an int past the digits Python will print
        return "a number of thousands of digits"
    if len(text) <= 40:
        return text
    return f"{redact(text, *known_keys())[:30]}... ({len(text)} characters)"


def _failed(content: str | None) -> bool:
    """A tool message whose content is a JSON object with an ``error`` key reports a failure
    (one whose content is null reports none)."""
    if content is None or not content.lstrip().startswith("{"):
        return False
    if '"error"' not in content and "\\u" not in content:
        return False  # no such key can be in it (unless written with escapes): not parsed
    try:
        parsed = json.loads(content, parse_int=json_integer)
    except (ValueError, RecursionError):
        return False
    return isinstance(parsed, dict) and "error" in parsed


def read_messages(messages: Any, *, written: bool = False) -> tuple[tuple[ToolCall, ...], int]:
    """The tool calls and the number of model calls (assistant messages) of an OpenAI chat
    conversation, of dicts or the SDK's objects. A call is ``ok`` when its ``tool`` message
    exists and holds no JSON object with an ``error`` key: the tool says whether it worked;
    on a responses line (``written``), a tool message's own ``ok`` (true or false), which
    ``collect`` writes where the content alone would say otherwise, says it instead. Its
    content is the call's result, none when it is null. Arguments that are not a JSON
    object (not JSON, or a list) are kept as ``{}``. A tool message answers the first call
    of its ``tool_call_id`` still unanswered (ids may repeat)."""
    requested: list[list[Any]] = []  # each call's [name, arguments, answered, ok, result]
    waiting: dict[Any, list[int]] = {}  # by call id, the calls not answered yet, in order
    llm_calls = 0
    for index, message in enumerate(_items(messages, "messages")):
        role = _get(message, "role")
        if role is None and not isinstance(message, Mapping) and not hasattr(message, "role"):
            raise ShapeError(
                f'"messages" item {index} is {type(message).__name__}, not a message with a "role"'
            )
        if role == "assistant":
            llm_calls += 1
            tool_calls = _get(message, "tool_calls") or ()
            if not isinstance(tool_calls, list | tuple):
                kind = type(tool_calls).__name__
                raise ShapeError(f'"messages" item {index}: "tool_calls" is {kind}, not a list')
            for call in tool_calls:
                function = _get(call, "function")
                name = _get(function, "name")
                if not isinstance(name, str):
                    shown = "missing" if name is None else f"{type(name).__name__}, not a str"
                    raise ShapeError(
                        f'"messages" item {index}: a tool call\'s "function.name" is {shown}'
                    )
                if (call_id := _get(call, "id")) is not None:
                    waiting.setdefault(call_id, []).append(len(requested))
                requested.append([name, arguments(_get(function, "arguments")), False, None, None])
        elif role == "tool" and (queue := waiting.get(_get(message, "tool_call_id"))):
            ok = _get(message, "ok") if written else None
            if ok is not None and type(ok) is not bool:
                kind = type(ok).__name__
                raise ShapeError(f'"messages" item {index}: "ok" is {kind}, not true or false')
            content = _get(message, "content")
            requested[queue.pop(0)][2:] = [True, ok, None if content is None else _text(content)]
    calls = [
        ToolCall(name, args, ok if ok is not None else answered and not _failed(result), result)
        for name, args, answered, ok, result in requested
    ]
    return tuple(calls), llm_calls


def read_context(context: Any) -> tuple[Passage, ...]:
    """Retrieved passages: strings, or ``{"id", "text", "source"}`` mappings or objects."""
    passages = []
    for index, item in enumerate(_items(context, "context")):
        if isinstance(item, str):
            passages.append(Passage(text=item))
            continue
        text = _get(item, "text")
        if not isinstance(text, str):
            raise ShapeError(
                f'"context" item {index} is {type(item).__name__} without a str "text"; give '
                'a str or {"id", "text", "source"}'
            )
        ident, origin = _get(item, "id"), _get(item, "source")
        passages.append(
            Passage(
                text=text,
                id=None if ident is None else str(ident),
                source=None if origin is None else str(origin),
            )
        )
    return tuple(passages)


def _count(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or not within(value, MAX_TOKENS):
        raise ShapeError(f'"usage.{name}" is {shown(value)}, not {TOKENS}')
    return value


def read_usage(usage: Any) -> Usage:
    """``{"input_tokens", "output_tokens", "cost_usd"}``, each optional."""
    if isinstance(usage, str | int | float | list | tuple):
        raise ShapeError(f'"usage" is {type(usage).__name__}, not a mapping')
    cost = _get(usage, "cost_usd")
    if cost is not None and not within(cost, MAX_COST_USD):
        raise ShapeError(f'"usage.cost_usd" is {shown(cost)}, not {DOLLARS}')
    return Usage(
        input_tokens=_count(_get(usage, "input_tokens"), "input_tokens"),
        output_tokens=_count(_get(usage, "output_tokens"), "output_tokens"),
        cost_usd=None if cost is None else float(cost),
    )


def merged(returned: Trace | None, spans: Trace | None) -> Trace | None:
    """One trace of a target call from what it returned and what its spans show
    (``--rubric-otel``): what it returned wins where it says something (its messages' calls,
    its context, an empty one too, each usage figure)."""
    if returned is None or spans is None:
        return returned or spans
    told = returned.llm_calls is not None  # it returned messages
    # It returned a context: an empty one is a retrieval that found nothing, never replaced
    # by the documents of a retriever's span.
    retrieved = bool(returned.context) or returned.context_known
    return replace(
        returned,
        tool_calls=returned.tool_calls if told else spans.tool_calls,
        llm_calls=returned.llm_calls if told else spans.llm_calls,
        context=returned.context if retrieved else spans.context,
        context_known=returned.context_known or spans.context_known,
        usage=Usage(
            input_tokens=_first(returned.usage.input_tokens, spans.usage.input_tokens),
            output_tokens=_first(returned.usage.output_tokens, spans.usage.output_tokens),
            cost_usd=_first(returned.usage.cost_usd, spans.usage.cost_usd),
        ),
        latency_s=_first(returned.latency_s, spans.latency_s),
    )


def _first(a: Any, b: Any) -> Any:
    return b if a is None else a


def as_messages(trace: Trace) -> list[dict[str, Any]]:
    """The trace's calls as OpenAI chat messages that :func:`read_messages` reads back to the
    same calls; its model calls as assistant messages, one of which holds the calls
    (:func:`as_fields` says how many there were when that count is not theirs)."""
    messages: list[dict[str, Any]] = []
    if trace.tool_calls:
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": c.name, "arguments": _text(c.arguments)},
                    }
                    for i, c in enumerate(trace.tool_calls, 1)
                ],
            }
        )
        for i, c in enumerate(trace.tool_calls, 1):
            if c.result is None and not c.ok:  # failed with no result: no tool message, as read
                continue
            message: dict[str, Any] = {
                "role": "tool",
                "tool_call_id": f"call_{i}",
                "content": c.result,
            }
            if c.ok == _failed(c.result):
                # Its result alone would read otherwise (a failure told in plain text, a
                # success whose result has an "error" key): its `ok` says which it was.
                message["ok"] = c.ok
            messages.append(message)
    more = (trace.llm_calls or 0) - (1 if trace.tool_calls else 0)
    messages += [{"role": "assistant", "content": ""} for _ in range(max(0, more))]
    return messages


def as_fields(trace: Trace) -> dict[str, Any]:
    """The trace as the fields of a responses line beside ``response``: all it knows (no
    calls made is known too), but a case's own ``context:``, which the case gives again.
    ``llm_calls`` is written when the messages' assistant messages do not count the model
    calls: calls with none known around them (tool spans and no model span)."""
    fields: dict[str, Any] = {}
    if (trace.context or trace.context_known) and trace.source != "case":
        fields["context"] = [
            {"id": p.id, "text": p.text, "source": p.source} for p in trace.context
        ]
    if trace.tool_calls or trace.llm_calls is not None:
        fields["messages"] = messages = as_messages(trace)
        if trace.llm_calls != sum(m["role"] == "assistant" for m in messages):
            fields["llm_calls"] = trace.llm_calls
    if trace.usage != Usage():
        fields["usage"] = asdict(trace.usage)
    if trace.metadata is not None:
        fields["metadata"] = trace.metadata
    if trace.latency_s is not None:
        fields["latency_s"] = trace.latency_s
    return fields


def recorded_trace(parsed: str | None) -> Trace | None:
    """The trace the response cache kept beside an answer, None when there is none. The cache
    is data from elsewhere (edited, copied in): its context, usage and metadata are read by
    the readers of what a target returns (a passage's id of 7 is "7", as a target's is), and
    a trace no target could have returned is a :class:`ShapeError`, never read as it stands."""
    try:
        data = json_loads(parsed, whole=True)[0] if parsed else None
        trace = data.get("trace") if isinstance(data, dict) else None
        if not isinstance(trace, dict):
            return None
        built = Trace(  # as the response cache wrote it: dataclasses.asdict
            source=trace["source"],
            tool_calls=tuple(ToolCall(**c) for c in trace.get("tool_calls", ())),
            llm_calls=_count(trace.get("llm_calls"), "llm_calls"),
            context=_field(trace, "context", read_context, ()),
            context_known=trace.get("context_known") is True,
            usage=_field(trace, "usage", read_usage, Usage()),
            latency_s=trace.get("latency_s"),
            metadata=_field(trace, "metadata", _metadata, None),
        )
    except (ValueError, KeyError, TypeError, AttributeError, Limit, RecursionError) as exc:
        raise ShapeError(f"its trace cannot be read ({exc})") from None
    latency = built.latency_s
    if not (
        built.source in ("returned", "otel", "responses", "case")
        and all(
            type(c.name) is str
            and type(c.ok) is bool
            and isinstance(c.arguments, dict | str)
            and first_non_finite(c.arguments) is None
            and (c.result is None or type(c.result) is str)
            for c in built.tool_calls
        )
        and (latency is None or within(latency, MAX_LATENCY_S))
    ):
        raise ShapeError("its trace holds a value no target could have returned")
    return built
