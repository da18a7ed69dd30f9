"""A fake LLM provider: a real HTTP server on 127.0.0.1, scripted per test.

Tests never use the network. The judge client is pointed at a :class:`FakeLLM`,
which speaks enough of two wire protocols to be believable:

* OpenAI chat completions: any path ending in ``/chat/completions``;
* Anthropic messages: any path ending in ``/messages``.

Each request is recorded (:attr:`FakeLLM.requests`) *before* it is answered,
then answered by the next scripted :class:`Action` (FIFO, one per request), or
by the responder function when the queue is empty, or else by an HTTP 500
saying the request was unscripted. Actions are built with the plain functions
:func:`text`, :func:`json_reply`, :func:`tool_calls` (an assistant turn that calls
tools), :func:`verdict`, :func:`score`,
:func:`status`, :func:`delay`, :func:`drop` and :func:`raw`, and are rendered
in the wire format of the endpoint that was called. Hostile servers are
scripted with :func:`trickle` (a body one byte at a time), :func:`oversize`
(a body above the client's cap, streamed), :func:`redirect` (a 3xx whose body
looks like a reply) and :func:`deep` (JSON nested N levels).

Batches: the two batch APIs are served too, in their real shapes (ids, fields,
statuses), so a client that works here works against the provider:

* OpenAI: ``POST /v1/files`` (multipart, ``purpose=batch``, a JSONL file of
  ``{custom_id, method, url, body}`` lines), ``POST /v1/batches``
  (``{input_file_id, endpoint: "/v1/chat/completions", completion_window: "24h"}``),
  ``GET /v1/batches/{id}`` (``status`` validating, in_progress, then completed,
  failed, expired or cancelled, with ``output_file_id`` and ``error_file_id``),
  ``GET /v1/files/{id}/content`` (JSONL lines ``{id, custom_id, response:
  {status_code, request_id, body}, error}``) and ``POST /v1/batches/{id}/cancel``;
* Anthropic: ``POST /v1/messages/batches`` (``{requests: [{custom_id, params}]}``),
  ``GET /v1/messages/batches/{id}`` (``processing_status`` in_progress, canceling or
  ended, with an absolute ``results_url`` once ended), ``GET
  /v1/messages/batches/{id}/results`` (JSONL lines ``{custom_id, result: {type:
  succeeded|errored|canceled|expired, message|error}}``) and ``POST .../cancel``.

Each batched request is answered, when the batch is created, by the same scripted
actions or responder as a live one (recorded in :attr:`FakeLLM.batched`, not in
``requests``, which holds the HTTP requests to the batch routes). Scripting:
:func:`missing` leaves a request's result out; :func:`errored` (or any
:func:`status`) makes it an errored result; :meth:`FakeLLM.script_batch` sets how
the batches created next behave (``polls=N`` reads in progress before the end,
``end="failed"|"expired"|"cancelled"``, ``never_ends=True``, ``poll_after=`` a
``Retry-After`` on every read); :meth:`FakeLLM.script_batch_control` answers the
next requests to the batch routes themselves (a 401 on the upload, say).

Only the standard library is used: ``http.server.ThreadingHTTPServer`` with
daemon threads, so requests in flight are served concurrently.

Example::

    def test_judge(fake_llm: FakeLLM) -> None:
        fake_llm.script(status(429, headers={"Retry-After": "0"}), verdict("pass"))
        client = Judge(base_url=fake_llm.openai_url)
        ...
        assert len(fake_llm.requests) == 2
"""

from __future__ import annotations

import contextlib
import email.parser
import email.policy
import json
import re
import socket
import socketserver
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, cast

import pytest

__all__ = [
    "Action",
    "BatchPlan",
    "Cut",
    "Deep",
    "Delay",
    "Drop",
    "FakeLLM",
    "JsonReply",
    "Missing",
    "Oversize",
    "Raw",
    "Recorded",
    "Redirect",
    "Status",
    "Text",
    "ToolCalls",
    "Trickle",
    "cut",
    "deep",
    "delay",
    "drop",
    "errored",
    "fake_llm",
    "json_reply",
    "missing",
    "oversize",
    "raw",
    "redirect",
    "score",
    "status",
    "text",
    "tool_calls",
    "trickle",
    "verdict",
]

Wire = Literal["openai", "anthropic", "unknown"]


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Recorded:
    """One request the server received.

    ``path`` is the request target as sent (query string included);
    ``headers`` has lower-cased names (repeated headers joined with ``", "``);
    ``body`` is the parsed JSON, or the raw text when it is not JSON (``""``
    when empty); ``received_at`` is ``time.monotonic()`` on arrival.
    """

    path: str
    headers: dict[str, str]
    body: Any
    received_at: float
    method: str = "POST"


# --------------------------------------------------------------------------- actions


class Action:
    """What the server does with one request. Build one with the functions below."""

    __slots__ = ()


@dataclass(frozen=True)
class Text(Action):
    """A normal assistant reply whose message text is ``content``."""

    content: str
    input_tokens: int = 10
    output_tokens: int = 5


@dataclass(frozen=True)
class ToolCalls(Action):
    """An assistant turn that calls tools (OpenAI ``tool_calls``, ``finish_reason`` tool_calls;
    Anthropic ``tool_use`` blocks): each ``(name, arguments)``, its id ``call_<n>``."""

    calls: tuple[tuple[str, Any], ...]
    input_tokens: int = 10
    output_tokens: int = 5


@dataclass(frozen=True)
class JsonReply(Action):
    """A structured reply: JSON text (OpenAI), or a forced tool call (Anthropic)."""

    obj: Any
    input_tokens: int = 10
    output_tokens: int = 5


@dataclass(frozen=True)
class Status(Action):
    """An HTTP error reply with a provider-style error body unless ``body`` is given."""

    code: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None


@dataclass(frozen=True)
class Delay(Action):
    """Wait ``seconds``, then perform ``then``."""

    seconds: float
    then: Action


@dataclass(frozen=True)
class Drop(Action):
    """Close the connection without sending any HTTP response."""


@dataclass(frozen=True)
class Cut(Action):
    """Perform ``then``, but close the connection after part of its body is sent."""

    then: Action
    keep: float = 0.5


@dataclass(frozen=True)
class Raw(Action):
    """Send exactly ``body`` (e.g. malformed or truncated JSON)."""

    body: str
    status: int = 200
    content_type: str = "application/json"


@dataclass(frozen=True)
class Trickle(Action):
    """Send the headers of ``then`` at once, then its body one byte per ``interval``."""

    then: Action
    interval: float = 0.1


@dataclass(frozen=True)
class Oversize(Action):
    """``then`` padded to ``size`` body bytes, written in chunks as it goes."""

    then: Action
    size: int = 2 * 1024 * 1024
    chunked: bool = False


@dataclass(frozen=True)
class Redirect(Action):
    """A 3xx to ``location`` whose body is what ``then`` would send."""

    location: str
    then: Action
    code: int = 307


@dataclass(frozen=True)
class Deep(Action):
    """``then`` with one more field holding ``depth`` nested JSON arrays."""

    depth: int
    then: Action


def text(content: str, *, input_tokens: int = 10, output_tokens: int = 5) -> Action:
    """A normal assistant reply whose message text is ``content``."""
    return Text(content, input_tokens, output_tokens)


def json_reply(obj: Any, *, input_tokens: int = 10, output_tokens: int = 5) -> Action:
    """Reply with ``obj`` as structured output.

    OpenAI: exactly like ``text(json.dumps(obj))``. Anthropic: if the request
    had ``tools`` and a ``tool_choice`` naming a tool, a ``tool_use`` block
    for that tool with ``input=obj`` and ``stop_reason="tool_use"``; otherwise
    a text block holding ``json.dumps(obj)``.
    """
    return JsonReply(obj, input_tokens, output_tokens)


def tool_calls(*calls: tuple[str, Any], input_tokens: int = 10, output_tokens: int = 5) -> Action:
    """An assistant reply asking for tool calls, e.g. ``tool_calls(("refund", {"order": "A1"}))``:
    OpenAI's ``message.tool_calls`` (``arguments`` as JSON text unless a ``str`` is given,
    so malformed arguments can be scripted) with ``finish_reason: "tool_calls"``; on the
    Anthropic wire, ``tool_use`` blocks."""
    return ToolCalls(tuple(calls), input_tokens, output_tokens)


def verdict(
    verdict: str, reason: str = "because", *, input_tokens: int = 10, output_tokens: int = 5
) -> Action:
    """``json_reply({"reason": reason, "verdict": verdict})``."""
    return json_reply(
        {"reason": reason, "verdict": verdict},
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )


def score(
    s: float, reason: str = "because", *, input_tokens: int = 10, output_tokens: int = 5
) -> Action:
    """``json_reply({"reason": reason, "score": s})``."""
    return json_reply(
        {"reason": reason, "score": s}, input_tokens=input_tokens, output_tokens=output_tokens
    )


def status(code: int, *, headers: dict[str, str] | None = None, body: Any = None) -> Action:
    """An HTTP error reply, e.g. ``status(429, headers={"Retry-After": "1"})``.

    Without ``body`` the body is provider-style error JSON:
    ``{"error": {"message": "fake <code>"}}`` (OpenAI) or
    ``{"type": "error", "error": {"type": "api_error", "message": "fake <code>"}}``
    (Anthropic). A ``str`` body is sent verbatim, anything else as JSON.
    ``headers`` may override ``Content-Type``.
    """
    return Status(code, dict(headers or {}), body)


def schema_in_json_object_only(
    then: Callable[[Recorded], Action],
) -> Callable[[Recorded], Action]:
    """A responder for ``respond_with`` that behaves like llama-cpp-python's server with a
    small model: ``json_schema`` is refused with a 500 naming ``response_format``; a bare
    ``json_object`` gets JSON of the wrong shape (the model writes what it likes); only
    ``json_object`` with a ``schema`` (decoding constrained to it) gets ``then``'s reply.
    Plain text gets the wrong shape too."""

    def respond(request: Recorded) -> Action:
        form = request.body.get("response_format") or {}
        if form.get("type") == "json_schema":
            return status(
                500,
                body={
                    "error": {
                        "message": "1 validation error for CreateChatCompletionRequest\n"
                        "response_format.type: Input should be 'text' or 'json_object'"
                    }
                },
            )
        if form.get("type") == "json_object" and "schema" in form:
            return then(request)
        return text('{"answer": "The capital of France is Paris."}')

    return respond


def delay(seconds: float, then: Action) -> Action:
    """Sleep ``seconds``, then perform ``then`` (for client timeouts).

    If the client has gone by then, the failed write is swallowed. Stopping the
    server cuts the sleep short.
    """
    return Delay(seconds, then)


def drop() -> Action:
    """Close the connection without any HTTP response (a client connection error)."""
    return Drop()


def cut(then: Action, *, keep: float = 0.5) -> Action:
    """Reply as ``then`` would, with its full Content-Length, but close the connection
    after the first ``keep`` fraction of the body (a reply truncated in transit)."""
    return Cut(then, keep)


def raw(body: str, *, status: int = 200, content_type: str = "application/json") -> Action:
    """Send exactly ``body`` (UTF-8) with a correct Content-Length."""
    return Raw(body, status, content_type)


def trickle(then: Action, *, interval: float = 0.1) -> Action:
    """Reply as ``then`` would, headers at once and then the body one byte every
    ``interval`` seconds: each read gets data in time, the whole reply never does.

    Stops when the client goes away or the server stops.
    """
    return Trickle(then, interval)


def oversize(then: Action, *, size: int = 2 * 1024 * 1024, chunked: bool = False) -> Action:
    """Reply as ``then`` would, its JSON object padded at the front with a
    ``"padding"`` string so that the body is ``size`` bytes; still valid JSON,
    still the same reply.

    The padding is written in 64 KiB chunks, never built whole, so ``size`` may
    be hundreds of megabytes. With ``chunked`` the body goes out with
    ``Transfer-Encoding: chunked`` and no Content-Length, so only counting
    what arrives can tell its size. :attr:`FakeLLM.streamed` counts what was
    written before the client stopped reading.
    """
    return Oversize(then, size, chunked)


def redirect(location: str, then: Action | None = None, *, code: int = 307) -> Action:
    """A ``code`` redirect to ``location`` whose body is ``then`` (default: a MET verdict),
    so a client that reads a 3xx body as the reply gets a believable grade."""
    return Redirect(location, then if then is not None else verdict("MET"), code)


def deep(depth: int, then: Action | None = None) -> Action:
    """Reply as ``then`` would (default: ``text("deep")``), with a ``"deep"`` field
    first in its JSON object holding ``depth`` nested arrays (``[[[...]]]``)."""
    return Deep(depth, then if then is not None else text("deep"))


@dataclass(frozen=True)
class Missing(Action):
    """In a batch, the request's result is left out of the results; live, an HTTP 500."""


def missing() -> Action:
    """The batched request's result is left out of the batch's results (as if the provider
    lost it); a live request gets an HTTP 500 instead."""
    return Missing()


def errored(code: int = 500) -> Action:
    """An errored result: ``status(code)``. In a batch, an OpenAI line in the error file
    with ``response.status_code`` ``code``, or an Anthropic ``errored`` result."""
    return status(code)


# --------------------------------------------------------------------------- rendering


@dataclass(frozen=True)
class _Reply:
    status: int
    headers: dict[str, str]
    body: bytes


def _json_bytes(obj: Any) -> bytes:
    return json.dumps(obj).encode("utf-8")


def _json_reply(code: int, obj: Any) -> _Reply:
    return _Reply(code, {"Content-Type": "application/json"}, _json_bytes(obj))


def _error(code: int, message: str) -> _Reply:
    return _json_reply(code, {"error": {"message": message}})


def _wire(path: str) -> Wire:
    route = path.split("?", 1)[0].rstrip("/")
    if route.endswith("/chat/completions"):
        return "openai"
    if route.endswith("/messages"):
        return "anthropic"
    return "unknown"


def _model(body: Any) -> Any:
    if isinstance(body, dict) and "model" in body:
        return body["model"]
    return "fake-model"


def _forced_tool(body: Any) -> str | None:
    """The tool an Anthropic request forces with ``tools`` + ``tool_choice``, if any."""
    if not isinstance(body, dict) or not body.get("tools"):
        return None
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and isinstance(choice.get("name"), str):
        return cast(str, choice["name"])
    return None


def _openai_message(
    content: str | None,
    model: Any,
    input_tokens: int,
    output_tokens: int,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
) -> _Reply:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return _json_reply(
        200,
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if tool_calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": input_tokens,
                "completion_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
            },
        },
    )


def _tool_calls(action: ToolCalls, wire: Wire, record: Recorded) -> _Reply:
    """A turn that calls tools, in the wire's shape: what an agent loop reads and answers."""
    model = _model(record.body)
    tokens = (action.input_tokens, action.output_tokens)
    ids = [f"call_{i}" for i in range(1, len(action.calls) + 1)]
    if wire == "anthropic":
        blocks = [
            {"type": "tool_use", "id": ident, "name": name, "input": arguments}
            for ident, (name, arguments) in zip(ids, action.calls, strict=True)
        ]
        reply = _anthropic_message(blocks[0], "tool_use", model, *tokens)
        body = json.loads(reply.body)
        body["content"] = blocks
        return _json_reply(200, body)
    if wire != "openai":
        return _error(404, f"FakeLLM: no such endpoint {record.path}")
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": ident,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
            for ident, (name, arguments) in zip(ids, action.calls, strict=True)
        ],
    }
    reply = _openai_message("", model, *tokens)
    body = json.loads(reply.body)
    body["choices"][0].update(message=message, finish_reason="tool_calls")
    return _json_reply(200, body)


def _anthropic_message(
    block: dict[str, Any], stop_reason: str, model: Any, input_tokens: int, output_tokens: int
) -> _Reply:
    return _json_reply(
        200,
        {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [block],
            "stop_reason": stop_reason,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        },
    )


def _with_field(body: bytes, name: str, value: bytes) -> bytes:
    """``body``, a JSON object, with ``name: value`` put first."""
    if not body.startswith(b"{"):
        raise ValueError("the reply is not a JSON object")
    rest = body[1:].lstrip()
    sep = b"" if rest.startswith(b"}") else b", "
    return b"{" + _json_bytes(name) + b": " + value + sep + rest


def _render(action: Action, wire: Wire, record: Recorded) -> _Reply:
    """The HTTP reply for a non-control action (not Delay, Drop, Trickle or Oversize)."""
    if isinstance(action, Redirect):
        inner = _render(action.then, wire, record)
        return _Reply(action.code, {**inner.headers, "Location": action.location}, inner.body)
    if isinstance(action, Deep):
        inner = _render(action.then, wire, record)
        nested = b"[" * action.depth + b"]" * action.depth
        return _Reply(inner.status, inner.headers, _with_field(inner.body, "deep", nested))
    if isinstance(action, Raw):
        return _Reply(action.status, {"Content-Type": action.content_type}, action.body.encode())
    if isinstance(action, Status):
        if action.body is None:
            message = f"fake {action.code}"
            body: Any = (
                {"type": "error", "error": {"type": "api_error", "message": message}}
                if wire == "anthropic"
                else {"error": {"message": message}}
            )
        else:
            body = action.body
        payload = body.encode() if isinstance(body, str) else _json_bytes(body)
        return _Reply(action.code, {"Content-Type": "application/json", **action.headers}, payload)
    if isinstance(action, Text | JsonReply):
        if wire == "unknown":
            return _error(404, f"FakeLLM: no such endpoint {record.path}")
        model = _model(record.body)
        tokens = (action.input_tokens, action.output_tokens)
        if isinstance(action, Text):
            content = action.content
        else:
            tool = _forced_tool(record.body) if wire == "anthropic" else None
            if tool is not None:
                block = {"type": "tool_use", "id": "toolu_fake", "name": tool, "input": action.obj}
                return _anthropic_message(block, "tool_use", model, *tokens)
            content = json.dumps(action.obj)
        if wire == "openai":
            return _openai_message(content, model, *tokens)
        return _anthropic_message({"type": "text", "text": content}, "end_turn", model, *tokens)
    if isinstance(action, ToolCalls):
        return _tool_calls(action, wire, record)
    if isinstance(action, Missing):
        return _error(500, "FakeLLM: missing() leaves out a batched request's result; live, a 500")
    return _error(500, f"FakeLLM: unknown action {action!r}")


# --------------------------------------------------------------------------- batches

# The batch routes, matched on the path's end (so that a gateway's prefix is kept), before
# the live routes: ``/messages/batches`` must not read as ``/messages``.
_BATCH_ROUTES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("openai_files", re.compile(r"/files$")),
    ("openai_file_content", re.compile(r"/files/(?P<id>[^/]+)/content$")),
    ("anthropic_batches", re.compile(r"/messages/batches$")),
    ("anthropic_batch", re.compile(r"/messages/batches/(?P<id>[^/]+)$")),
    ("anthropic_results", re.compile(r"/messages/batches/(?P<id>[^/]+)/results$")),
    ("anthropic_cancel", re.compile(r"/messages/batches/(?P<id>[^/]+)/cancel$")),
    ("openai_batches", re.compile(r"/batches$")),
    ("openai_batch", re.compile(r"/batches/(?P<id>[^/]+)$")),
    ("openai_cancel", re.compile(r"/batches/(?P<id>[^/]+)/cancel$")),
)

BatchEnd = Literal["completed", "failed", "expired", "cancelled"]


@dataclass(frozen=True)
class BatchPlan:
    """How the batches created from now on behave (see :meth:`FakeLLM.script_batch`)."""

    polls: int = 0
    end: BatchEnd = "completed"
    never_ends: bool = False
    poll_after: float | None = None


@dataclass
class _Batch:
    id: str
    wire: Literal["openai", "anthropic"]
    plan: BatchPlan
    created_at: int
    # custom_id -> the rendered reply (None: missing from the results)
    results: dict[str, _Reply | None]
    input_file_id: str | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)  # an OpenAI batch that failed
    polled: int = 0
    cancelled: bool = False
    output_file_id: str | None = None
    error_file_id: str | None = None


def _route(path: str) -> tuple[str, str | None] | None:
    route = path.split("?", 1)[0].rstrip("/")
    for name, pattern in _BATCH_ROUTES:
        match = pattern.search(route)
        if match is not None:
            return name, match.groupdict().get("id")
    return None


def _multipart(headers: dict[str, str], data: bytes) -> dict[str, tuple[str | None, bytes]]:
    """A ``multipart/form-data`` body's parts: name -> (filename, content)."""
    head = f"Content-Type: {headers.get('content-type', '')}\r\nMIME-Version: 1.0\r\n\r\n"
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head.encode() + data)
    parts: dict[str, tuple[str | None, bytes]] = {}
    if not message.is_multipart():
        return parts
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            parts[name] = (part.get_filename(), payload)
    return parts


def _openai_error(code: int, message: str, kind: str = "invalid_request_error") -> _Reply:
    return _json_reply(
        code, {"error": {"message": message, "type": kind, "param": None, "code": None}}
    )


def _anthropic_error(code: int, message: str, kind: str = "invalid_request_error") -> _Reply:
    return _json_reply(code, {"type": "error", "error": {"type": kind, "message": message}})


def _jsonl(lines: list[Any]) -> _Reply:
    body = "".join(json.dumps(line) + "\n" for line in lines).encode("utf-8")
    return _Reply(200, {"Content-Type": "application/binary"}, body)


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


class _Batches:
    """The batch APIs' state: files and batches, by id (guarded by the fake's lock)."""

    def __init__(self, fake: FakeLLM) -> None:
        self.fake = fake
        self.plan = BatchPlan()
        self.files: dict[str, tuple[dict[str, Any], bytes]] = {}
        self.batches: dict[str, _Batch] = {}

    def serve(self, record: Recorded, data: bytes, route: str, ident: str | None) -> _Reply:
        handler = getattr(self, f"_{route}")
        return cast(_Reply, handler(record, data, ident))

    # -- OpenAI: files, then batches over them

    def _openai_files(self, record: Recorded, data: bytes, ident: str | None) -> _Reply:
        if record.method != "POST":
            return _openai_error(405, "FakeLLM: only POST /v1/files is served")
        parts = _multipart(record.headers, data)
        if "file" not in parts:
            return _openai_error(400, "'file' is a required property (multipart/form-data)")
        purpose = parts.get("purpose", (None, b""))[1].decode("utf-8", errors="replace")
        if purpose != "batch":
            return _openai_error(400, f"FakeLLM serves purpose 'batch' only, not {purpose!r}")
        filename, content = parts["file"]
        file_id = f"file-{uuid.uuid4().hex[:24]}"
        obj = {
            "id": file_id,
            "object": "file",
            "bytes": len(content),
            "created_at": int(time.time()),
            "filename": filename or "upload",
            "purpose": "batch",
        }
        with self.fake._lock:
            self.files[file_id] = (obj, content)
        return _json_reply(200, obj)

    def _openai_file_content(self, record: Recorded, data: bytes, ident: str | None) -> _Reply:
        with self.fake._lock:
            found = self.files.get(ident or "")
        if found is None:
            return _openai_error(404, f"No such File object: {ident}")
        return _Reply(200, {"Content-Type": "application/binary"}, found[1])

    def _openai_batches(self, record: Recorded, data: bytes, ident: str | None) -> _Reply:
        if record.method != "POST":
            return _openai_error(405, "FakeLLM: only POST /v1/batches is served")
        body = record.body if isinstance(record.body, dict) else {}
        file_id = body.get("input_file_id")
        with self.fake._lock:
            found = self.files.get(file_id) if isinstance(file_id, str) else None
        if found is None:
            return _openai_error(400, f"No such File object: {file_id}")
        if body.get("endpoint") != "/v1/chat/completions":
            return _openai_error(
                400,
                f"FakeLLM serves endpoint /v1/chat/completions only, not {body.get('endpoint')!r}",
            )
        if body.get("completion_window") != "24h":
            return _openai_error(400, "completion_window must be '24h'")
        batch = self._new("openai", f"batch_{uuid.uuid4().hex[:24]}")
        batch.input_file_id = file_id
        text = found[1].decode("utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), start=1):
            try:
                entry = json.loads(line)
                custom_id, url, request = entry["custom_id"], entry["url"], entry["body"]
                ok = entry["method"] == "POST" and url == "/v1/chat/completions"
            except (ValueError, KeyError, TypeError):
                ok, custom_id = False, None
            if not ok or not isinstance(custom_id, str) or custom_id in batch.results:
                batch.errors.append(
                    {
                        "code": "invalid_request",
                        "message": f"line {number} is not a request "
                        "{custom_id, method: POST, url: /v1/chat/completions, body}, or repeats a "
                        "custom_id",
                        "param": None,
                        "line": number,
                    }
                )
                continue
            batch.results[custom_id] = self._answer(record, "/v1/chat/completions", request)
        if batch.errors:
            batch.results.clear()
        return _json_reply(200, self._openai_object(batch, status="validating"))

    def _openai_batch(self, record: Recorded, data: bytes, ident: str | None) -> _Reply:
        batch = self._find(ident)
        if batch is None or batch.wire != "openai":
            return _openai_error(404, f"No batch found with id '{ident}'.")
        status = self._poll(batch)
        return self._polled(batch, self._openai_object(batch, status=status))

    def _openai_cancel(self, record: Recorded, data: bytes, ident: str | None) -> _Reply:
        batch = self._find(ident)
        if batch is None or batch.wire != "openai":
            return _openai_error(404, f"No batch found with id '{ident}'.")
        batch.cancelled = True
        return _json_reply(200, self._openai_object(batch, status="cancelling"))

    def _openai_object(self, batch: _Batch, *, status: str) -> dict[str, Any]:
        failed = sum(r is not None and r.status >= 400 for r in batch.results.values())
        errors = batch.errors or (
            [
                {
                    "code": "batch_failed",
                    "message": "FakeLLM: the batch failed",
                    "param": None,
                    "line": None,
                }
            ]
            if status == "failed"
            else []
        )
        done = status in ("completed", "expired", "cancelled")
        if done and batch.output_file_id is None and batch.error_file_id is None:
            self._openai_files_of(batch, status)
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "errors": {"object": "list", "data": errors} if errors else None,
            "input_file_id": batch.input_file_id,
            "completion_window": "24h",
            "status": status,
            "output_file_id": batch.output_file_id if done else None,
            "error_file_id": batch.error_file_id if done else None,
            "created_at": batch.created_at,
            "in_progress_at": batch.created_at if status != "validating" else None,
            "expires_at": batch.created_at + 86400,
            "completed_at": int(time.time()) if status == "completed" else None,
            "failed_at": int(time.time()) if status == "failed" else None,
            "expired_at": int(time.time()) if status == "expired" else None,
            "cancelled_at": int(time.time()) if status == "cancelled" else None,
            "request_counts": {
                "total": len(batch.results),
                "completed": len(batch.results) - failed if done else 0,
                "failed": failed if done else 0,
            },
            "metadata": None,
        }

    def _openai_files_of(self, batch: _Batch, status: str) -> None:
        """Write the output and error files of a batch that has ended."""
        output: list[Any] = []
        errors: list[Any] = []
        for custom_id, reply in batch.results.items():
            line_id = f"batch_req_{uuid.uuid4().hex[:24]}"
            if reply is None:
                continue
            if status != "completed":
                code = "batch_expired" if status == "expired" else "batch_cancelled"
                what = "expired" if status == "expired" else "cancelled"
                errors.append(
                    {
                        "id": line_id,
                        "custom_id": custom_id,
                        "response": None,
                        "error": {
                            "code": code,
                            "message": f"This request was not executed: the batch {what}.",
                        },
                    }
                )
                continue
            try:
                body = json.loads(reply.body)
            except ValueError:
                body = reply.body.decode("utf-8", errors="replace")
            line = {
                "id": line_id,
                "custom_id": custom_id,
                "response": {
                    "status_code": reply.status,
                    "request_id": uuid.uuid4().hex,
                    "body": body,
                },
                "error": None,
            }
            (errors if reply.status >= 400 else output).append(line)
        with self.fake._lock:
            for lines, name in ((output, "output"), (errors, "error")):
                if not lines:
                    continue
                file_id = f"file-{uuid.uuid4().hex[:24]}"
                content = _jsonl(lines).body
                self.files[file_id] = (
                    {
                        "id": file_id,
                        "object": "file",
                        "bytes": len(content),
                        "created_at": int(time.time()),
                        "filename": f"batch_{name}.jsonl",
                        "purpose": f"batch_{name}",
                    },
                    content,
                )
                if name == "output":
                    batch.output_file_id = file_id
                else:
                    batch.error_file_id = file_id

    # -- Anthropic: one request holds the batch

    def _anthropic_batches(self, record: Recorded, data: bytes, ident: str | None) -> _Reply:
        if record.method != "POST":
            return _anthropic_error(405, "FakeLLM: only POST /v1/messages/batches is served")
        body = record.body if isinstance(record.body, dict) else {}
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            return _anthropic_error(400, "requests: Field required (a non-empty list)")
        batch = self._new("anthropic", f"msgbatch_{uuid.uuid4().hex[:24]}")
        for i, entry in enumerate(requests):
            custom_id = entry.get("custom_id") if isinstance(entry, dict) else None
            params = entry.get("params") if isinstance(entry, dict) else None
            if not isinstance(custom_id, str) or not re.fullmatch(
                r"[a-zA-Z0-9_-]{1,64}", custom_id
            ):
                return _anthropic_error(
                    400, f"requests.{i}.custom_id: must match ^[a-zA-Z0-9_-]{{1,64}}$"
                )
            if custom_id in batch.results:
                return _anthropic_error(400, f"requests.{i}.custom_id: {custom_id!r} is repeated")
            if not isinstance(params, dict):
                return _anthropic_error(400, f"requests.{i}.params: Field required")
            batch.results[custom_id] = self._answer(record, "/v1/messages", params)
        with self.fake._lock:
            self.batches[batch.id] = batch
        return _json_reply(200, self._anthropic_object(batch, record, status="in_progress"))

    def _anthropic_batch(self, record: Recorded, data: bytes, ident: str | None) -> _Reply:
        batch = self._find(ident)
        if batch is None or batch.wire != "anthropic":
            return _anthropic_error(404, f"message batch {ident} not found", "not_found_error")
        status = self._poll(batch)
        status = {
            "completed": "ended",
            "expired": "ended",
            "cancelled": "ended",
            "failed": "ended",
            "cancelling": "canceling",
        }.get(status, "in_progress")
        return self._polled(batch, self._anthropic_object(batch, record, status=status))

    def _anthropic_cancel(self, record: Recorded, data: bytes, ident: str | None) -> _Reply:
        batch = self._find(ident)
        if batch is None or batch.wire != "anthropic":
            return _anthropic_error(404, f"message batch {ident} not found", "not_found_error")
        batch.cancelled = True
        return _json_reply(200, self._anthropic_object(batch, record, status="canceling"))

    def _anthropic_results(self, record: Recorded, data: bytes, ident: str | None) -> _Reply:
        batch = self._find(ident)
        if batch is None or batch.wire != "anthropic":
            return _anthropic_error(404, f"message batch {ident} not found", "not_found_error")
        if self._state(batch) not in ("completed", "expired", "cancelled", "failed"):
            return _anthropic_error(
                400, f"message batch {ident} has not ended: its results are not ready"
            )
        end = self._state(batch)
        lines: list[Any] = []
        for custom_id, reply in batch.results.items():
            if reply is None:
                continue
            result: dict[str, Any]
            if end in ("expired", "cancelled"):
                result = {"type": "expired" if end == "expired" else "canceled"}
            elif reply.status >= 400 or end == "failed":
                try:
                    error = json.loads(reply.body)
                except ValueError:
                    error = {
                        "type": "error",
                        "error": {
                            "type": "api_error",
                            "message": reply.body.decode("utf-8", errors="replace"),
                        },
                    }
                result = {"type": "errored", "error": error}
            else:
                result = {"type": "succeeded", "message": json.loads(reply.body)}
            lines.append({"custom_id": custom_id, "result": result})
        return _jsonl(lines)

    def _anthropic_object(self, batch: _Batch, record: Recorded, *, status: str) -> dict[str, Any]:
        ended = status == "ended"
        end = self._state(batch)
        counts = {
            "processing": 0 if ended else len(batch.results),
            "succeeded": 0,
            "errored": 0,
            "canceled": 0,
            "expired": 0,
        }
        if ended:
            for reply in batch.results.values():
                if reply is None:
                    continue
                kind = {"expired": "expired", "cancelled": "canceled"}.get(end) or (
                    "errored" if reply.status >= 400 or end == "failed" else "succeeded"
                )
                counts[kind] += 1
        # The results' address is absolute, on the host the client called (as the real API's is).
        host = record.headers.get("host", "127.0.0.1")
        prefix = record.path.split("?", 1)[0].rstrip("/")
        if not prefix.endswith("/messages/batches"):
            prefix = prefix.rsplit("/", 2 if prefix.endswith("/cancel") else 1)[0]
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": status,
            "request_counts": counts,
            "ended_at": _iso(time.time()) if ended else None,
            "created_at": _iso(batch.created_at),
            "expires_at": _iso(batch.created_at + 86400),
            "archived_at": None,
            "cancel_initiated_at": _iso(time.time()) if batch.cancelled else None,
            "results_url": f"http://{host}{prefix}/{batch.id}/results" if ended else None,
        }

    # -- shared

    def _new(self, wire: Literal["openai", "anthropic"], batch_id: str) -> _Batch:
        with self.fake._lock:
            plan = self.plan
        batch = _Batch(batch_id, wire, plan, int(time.time()), {})
        if wire == "openai":
            with self.fake._lock:
                self.batches[batch_id] = batch
        return batch

    def _find(self, ident: str | None) -> _Batch | None:
        with self.fake._lock:
            return self.batches.get(ident or "")

    def _answer(self, record: Recorded, path: str, body: Any) -> _Reply | None:
        """One batched request answered as the live one would be (None: left out)."""
        request = Recorded(path, record.headers, body, time.monotonic(), "POST")
        action = self.fake._pick_batched(request)
        if action is None:
            return _error(500, "FakeLLM: unscripted request")
        if isinstance(action, _Reply):
            return action
        while isinstance(action, Delay | Cut | Trickle | Oversize):
            action = action.then
        if isinstance(action, Missing):
            return None
        if isinstance(action, Drop):
            return _error(500, "FakeLLM: the request was dropped")
        wire: Wire = "openai" if path.endswith("/chat/completions") else "anthropic"
        try:
            return _render(action, wire, request)
        except Exception as exc:
            return _error(500, f"FakeLLM: could not render {action!r}: {exc!r}")

    def _state(self, batch: _Batch) -> str:
        """Where the batch stands now, without counting a poll."""
        if batch.wire == "openai" and batch.errors:
            return "failed"
        if batch.cancelled:
            return "cancelled"
        if batch.plan.never_ends or batch.polled <= batch.plan.polls:
            return "in_progress"
        return batch.plan.end

    def _poll(self, batch: _Batch) -> str:
        with self.fake._lock:
            batch.polled += 1
        return self._state(batch)

    def _polled(self, batch: _Batch, obj: dict[str, Any]) -> _Reply:
        reply = _json_reply(200, obj)
        if batch.plan.poll_after is not None:
            reply.headers["Retry-After"] = f"{batch.plan.poll_after:g}"
        return reply


# --------------------------------------------------------------------------- server


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(self, fake: FakeLLM) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls socket.getfqdn(), a name lookup; skip it.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that went away is normal here; anything else is a real bug.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeLLM/1.0"
    sys_version = ""

    @property
    def fake(self) -> FakeLLM:
        return cast(_Server, self.server).fake

    def setup(self) -> None:
        super().setup()
        # The headers and the body go out in two writes; without TCP_NODELAY the
        # second waits for the client's delayed ACK (about 40 ms on Linux) on every
        # reused connection, a latency no real provider adds.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.fake._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.fake._track(self.connection, add=False)

    def handle(self) -> None:
        try:
            super().handle()
        except OSError:  # BrokenPipeError, ConnectionResetError, shut down by stop()
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: normal requests never write to stderr."""

    def do_POST(self) -> None:
        self._counted()

    def do_GET(self) -> None:
        self._counted()

    def _counted(self) -> None:
        self.fake._enter()
        try:
            self._serve()
        finally:
            self.fake._leave()

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _serve(self) -> None:
        data = self._read_body()
        decoded = data.decode("utf-8", errors="replace")
        try:
            body: Any = json.loads(decoded)
        except ValueError:
            body = decoded
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        record = Recorded(self.path, headers, body, time.monotonic(), self.command)
        route = _route(self.path)
        if route is not None:
            self._send(self.fake._serve_batch(record, data, *route))
            return
        action = self.fake._record_and_pick(record)
        fake = self.fake
        fake._gathered()
        if fake.latency > 0 and fake._stopping.wait(fake.latency):
            self.close_connection = True
            return
        if action is None:
            reply = _error(500, "FakeLLM: unscripted request")
        elif isinstance(action, _Reply):
            reply = action
        else:
            wire = _wire(self.path)
            while isinstance(action, Delay):
                if fake._stopping.wait(action.seconds):
                    self.close_connection = True
                    return
                action = action.then
            if isinstance(action, Drop):
                self.close_connection = True
                return
            keep = None
            if isinstance(action, Cut):
                keep = action.keep
                action = action.then
            streamed = action if isinstance(action, Trickle | Oversize) else None
            if streamed is not None:
                action = streamed.then
            try:
                reply = _render(action, wire, record)
            except Exception as exc:
                reply = _error(500, f"FakeLLM: could not render {action!r}: {exc!r}")
            if keep is not None:
                self._send(reply, sent=int(len(reply.body) * keep))
                self.close_connection = True
                return
            if isinstance(streamed, Trickle):
                self._trickle(reply, streamed.interval)
                return
            if isinstance(streamed, Oversize):
                self._oversize(reply, streamed.size, chunked=streamed.chunked)
                return
        self._send(reply)

    def _head(self, reply: _Reply, length: int | None) -> None:
        """Status line and headers; ``length`` None sends the body chunked."""
        self.send_response(reply.status)
        headers = {"Content-Type": "application/json", **reply.headers}
        for name, value in headers.items():
            if name.lower() not in ("content-length", "transfer-encoding"):
                self.send_header(name, value)
        if length is None:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(length))
        self.end_headers()

    def _send(self, reply: _Reply, *, sent: int | None = None) -> None:
        try:
            self._head(reply, len(reply.body))
            self.wfile.write(reply.body if sent is None else reply.body[:sent])
            self.wfile.flush()
        except OSError:  # the client has gone (timed out, closed)
            self.close_connection = True

    def _trickle(self, reply: _Reply, interval: float) -> None:
        fake = self.fake
        try:
            self._head(reply, len(reply.body))
            for i in range(len(reply.body)):
                if fake._stopping.wait(interval):
                    self.close_connection = True
                    return
                # TCP_NODELAY is set: every byte leaves as its own segment.
                self.wfile.write(reply.body[i : i + 1])
                fake._count_streamed(1)
        except OSError:  # the client gave up on it, as it should
            self.close_connection = True

    def _oversize(self, reply: _Reply, size: int, *, chunked: bool) -> None:
        fake = self.fake
        try:
            template = _with_field(reply.body, "padding", b'""')
        except ValueError as exc:
            self._send(_error(500, f"FakeLLM: cannot pad {reply.body[:40]!r}: {exc}"))
            return
        split = len(b'{"padding": "')  # the padding goes between these quotes
        prefix, suffix = template[:split], template[split:]
        pad = max(0, size - len(template))
        block = b"x" * 65536

        def write(data: bytes) -> None:
            self.wfile.write(b"%x\r\n%b\r\n" % (len(data), data) if chunked else data)
            fake._count_streamed(len(data))

        try:
            self._head(reply, None if chunked else len(template) + pad)
            write(prefix)
            while pad > 0:
                if fake._stopping.is_set():
                    self.close_connection = True
                    return
                write(block[: min(pad, len(block))])
                pad -= min(pad, len(block))
            write(suffix)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client stopped reading, as it should
            self.close_connection = True


class FakeLLM:
    """An OpenAI-compatible and Anthropic-compatible server on 127.0.0.1, scripted per test.

    ``latency`` is a fixed delay added before every reply. Use it as a context
    manager or through the :func:`fake_llm` fixture; :meth:`stop` is idempotent.
    ``max_in_flight`` is the most requests that were being served at once;
    ``streamed`` the body bytes written by :func:`trickle` and :func:`oversize`
    replies, so a test can see where a client stopped reading.
    """

    def __init__(self, *, latency: float = 0.0) -> None:
        self.latency = latency
        self.requests: list[Recorded] = []
        self.max_in_flight = 0
        self.streamed = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._queue: deque[Action] = deque()
        self._responder: Callable[[Recorded], Action] | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._connections: dict[socket.socket, threading.Thread] = {}
        self.batched: list[Recorded] = []
        self._batches = _Batches(self)
        self._control: deque[Action] = deque()
        self._gathering: threading.Barrier | None = None
        self._to_gather = 0

    # -- lifecycle

    def start(self) -> FakeLLM:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread; returns ``self``."""
        if self._server is not None:
            raise RuntimeError("FakeLLM is already running")
        self._stopping.clear()
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"FakeLLM:{self._server.server_port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Shut down, cut delays short, close open connections and join threads (idempotent)."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        if self._gathering is not None:
            self._gathering.abort()
        server.shutdown()
        with self._lock:
            connections = dict(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for handler_thread in connections.values():
            if handler_thread is not threading.current_thread():
                handler_thread.join(timeout=5)
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- addresses

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``; clients append ``/v1/chat/completions`` or ``/v1/messages``."""
        if self._server is None:
            raise RuntimeError("FakeLLM is not running; call start() first")
        return f"http://127.0.0.1:{self._server.server_port}"

    @property
    def openai_url(self) -> str:
        """``url + "/v1"``, the base URL OpenAI-style clients expect."""
        return self.url + "/v1"

    # -- scripting

    def script(self, *actions: Action) -> None:
        """Queue actions, consumed one per request in arrival order (FIFO)."""
        for action in actions:
            if not isinstance(action, Action):
                raise TypeError(f"not a FakeLLM action: {action!r}")
        with self._lock:
            self._queue.extend(actions)

    def respond_with(self, fn: Callable[[Recorded], Action] | None) -> None:
        """Answer with ``fn(request)`` whenever the queue is empty (``None`` to unset)."""
        with self._lock:
            self._responder = fn

    def script_batch(
        self,
        *,
        polls: int = 0,
        end: BatchEnd = "completed",
        never_ends: bool = False,
        poll_after: float | None = None,
    ) -> None:
        """How the batches created from now on behave: ``polls`` reads of the batch say it is
        in progress before it ends as ``end``, or never with ``never_ends``; ``poll_after``
        sends ``Retry-After`` on every read (so a client may poll fast)."""
        with self._lock:
            self._batches.plan = BatchPlan(polls, end, never_ends, poll_after)

    def script_batch_control(self, *actions: Action) -> None:
        """Queue actions answering the next requests to the batch routes themselves (an
        upload, a creation, a poll, a download), before the batch API sees them."""
        with self._lock:
            self._control.extend(actions)

    def gather(self, count: int, *, within: float = 30.0) -> None:
        """Hold the next ``count`` requests until all ``count`` have arrived, then answer them.

        A test of concurrency counts instead of timing: a client that keeps ``count``
        calls in flight makes ``max_in_flight`` reach ``count`` however busy the machine
        is (a latency only makes that likely). One that cannot leaves it below, each held
        request answered after ``within`` seconds.
        """
        with self._lock:
            self._gathering = threading.Barrier(count, timeout=within)
            self._to_gather = count

    def _gathered(self) -> None:
        """Hold this request while a :meth:`gather` is under way."""
        with self._lock:
            barrier = self._gathering if self._to_gather > 0 else None
            self._to_gather -= barrier is not None
        if barrier is not None:
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait()

    @property
    def in_flight(self) -> int:
        """How many requests are being served now."""
        with self._lock:
            return self._in_flight

    @property
    def pending(self) -> int:
        """How many scripted actions have not been consumed yet."""
        with self._lock:
            return len(self._queue)

    # -- used by the handler

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections[conn] = threading.current_thread()
            else:
                self._connections.pop(conn, None)

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _count_streamed(self, n: int) -> None:
        with self._lock:
            self.streamed += n

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _serve_batch(self, record: Recorded, data: bytes, route: str, ident: str | None) -> _Reply:
        """Record a request to a batch route and answer it (a scripted control action first)."""
        with self._lock:
            self.requests.append(record)
            control = self._control.popleft() if self._control else None
        if control is not None:
            return _render(
                control, "anthropic" if "/messages/" in record.path else "openai", record
            )
        return self._batches.serve(record, data, route, ident)

    def _pick_batched(self, record: Recorded) -> Action | _Reply | None:
        """Record one request of a batch and take its action, as a live request's is taken."""
        with self._lock:
            self.batched.append(record)
            if self._queue:
                return self._queue.popleft()
            responder = self._responder
        if responder is None:
            return None
        try:
            return responder(record)
        except Exception as exc:
            return _error(500, f"FakeLLM: responder raised {exc!r}")

    def _record_and_pick(self, record: Recorded) -> Action | _Reply | None:
        """Record the request and take its action, atomically (so ``requests[i]`` got action i)."""
        with self._lock:
            self.requests.append(record)
            if self._queue:
                return self._queue.popleft()
            responder = self._responder
        if responder is None:
            return None
        try:
            return responder(record)
        except Exception as exc:
            return _error(500, f"FakeLLM: responder raised {exc!r}")


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A started :class:`FakeLLM`, stopped after the test."""
    with FakeLLM() as server:
        yield server
