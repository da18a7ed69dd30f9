"""A fake LLM provider: a real HTTP server on 127.0.0.1, scripted per test.

Tests never use the network. The judge client is pointed at a :class:`FakeLLM`,
which speaks enough of two wire protocols to be believable:

* OpenAI chat completions: any path ending in ``/chat/completions``;
* Anthropic messages: any path ending in ``/messages``.

Each request is recorded (:attr:`FakeLLM.requests`) *before* it is answered,
then answered by the next scripted :class:`Action` (FIFO, one per request), or
by the responder function when the queue is empty, or else by an HTTP 500
saying the request was unscripted. Actions are built with the plain functions
:func:`text`, :func:`json_reply`, :func:`verdict`, :func:`score`,
:func:`status`, :func:`delay`, :func:`drop` and :func:`raw`, and are rendered
in the wire format of the endpoint that was called. Hostile servers are
scripted with :func:`trickle` (a body one byte at a time), :func:`oversize`
(a body above the client's cap, streamed), :func:`redirect` (a 3xx whose body
looks like a reply) and :func:`deep` (JSON nested N levels).

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
import json
import socket
import socketserver
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, cast

import pytest

__all__ = [
    "Action",
    "Cut",
    "Deep",
    "Delay",
    "Drop",
    "FakeLLM",
    "JsonReply",
    "Oversize",
    "Raw",
    "Recorded",
    "Redirect",
    "Status",
    "Text",
    "Trickle",
    "cut",
    "deep",
    "delay",
    "drop",
    "fake_llm",
    "json_reply",
    "oversize",
    "raw",
    "redirect",
    "score",
    "status",
    "text",
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


def _openai_message(content: str, model: Any, input_tokens: int, output_tokens: int) -> _Reply:
    return _json_reply(
        200,
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": input_tokens,
                "completion_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
            },
        },
    )


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
    return _error(500, f"FakeLLM: unknown action {action!r}")


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
        action = self.fake._record_and_pick(record)
        fake = self.fake
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
