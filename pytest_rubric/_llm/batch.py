"""Batch judging (``--rubric-judge-batch``): judge calls sent through the provider's batch API.

:func:`run_batch` sends :class:`BatchRequest` s as one batch, on the client's own endpoint,
key and headers:

* OpenAI: the requests as a JSONL file to ``POST /files`` (``purpose=batch``), then
  ``POST /batches`` over it; ``GET /batches/{id}`` until it ends; the replies from
  ``GET /files/{output_file_id}/content`` and the failures from the ``error_file_id``;
* Anthropic: ``POST /v1/messages/batches``; ``GET .../{id}`` until its
  ``processing_status`` is ``ended``; the replies from its ``results_url``.

It polls with backoff (1 s doubling to 30 s, or ``Retry-After``, never below
:data:`MIN_RETRY_AFTER`) up to a timeout, then cancels the batch. Every exchange is the live
calls' (:meth:`~pytest_rubric._llm.http.HTTPClient._request`, with its guards); an Anthropic
``results_url`` on another host is refused (the key goes only where ``--rubric-judge-url``
points). :class:`BatchQueue` gathers a run's judge calls into batches.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any
from urllib.parse import urlsplit

from .._defaults import PROVIDERS
from .._errors import BudgetSpent, LLMError
from .._guards.limits import RepeatedKey, unique_keys
from .._guards.secrets import public_url, redact
from .base import Reply, Sampling
from .clients import AnthropicClient, OpenAIClient
from .http import _QUOTE_ERROR, MAX_REPLY_BYTES, HTTPClient, error_text, retry_delay

BATCH_PROVIDERS = tuple(name for name, provider in PROVIDERS.items() if provider.batch)
"""The providers (:data:`~pytest_rubric._defaults.PROVIDERS`) whose batch API is spoken."""

DEFAULT_TIMEOUT = 3600.0
"""How long a batch is waited for (``--rubric-judge-batch-timeout``), from its submission."""

MAX_BATCH_REQUESTS = 10_000
"""The most requests in one batch: well inside both providers' limits (50,000 and 100,000),
and a results file of that many grades stays far below :data:`MAX_RESULTS_BYTES`."""

MAX_BATCH_CHARACTERS = 64 * 1024 * 1024
"""The most characters of messages in one batch: a batch is one upload, which both providers
cap (200 MB for OpenAI's file, 256 MB for Anthropic's request), and a request adds its
settings and the reply's schema to its messages."""

MAX_RESULTS_BYTES = 256 * 1024 * 1024
"""The largest results file read; a control reply (a batch's status) is held to 1 MiB."""

FIRST_POLL = 1.0
MAX_POLL = 30.0
# An upload or a download may be large: its deadline is at least this, whatever the judge's.
_TRANSFER_TIMEOUT = 300.0
# The ids the provider gives, put in a URL path: nothing that could reach another path.
_ID = re.compile(r"[A-Za-z0-9_.-]{1,200}")
# How long a timed-out batch's cancellation is waited for.
_CANCEL_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class BatchRequest:
    custom_id: str
    system: str
    user: str
    schema: dict[str, Any] | None = None
    sampling: Sampling = field(default_factory=Sampling)


@dataclass(frozen=True, slots=True)
class BatchFailure:
    """Why a request of a batch has no reply; ``retry_live``: one live call may still get it
    (its result was missing or errored, or the batch ended without results), not when the
    run ended first or the batch could not be sent."""

    reason: str
    retry_live: bool


BatchResult = Reply | BatchFailure


@dataclass(frozen=True, slots=True)
class _Status:
    """A batch as one poll saw it: ``ended``, and why it failed as a whole, if it did."""

    ended: bool
    failed: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Wire:
    """One provider's batch API on a built-in client's endpoint, key and headers."""

    client: HTTPClient

    def asked_live(self, what: str, *, hint: str = "it was asked live once more") -> BatchFailure:
        """The failure of a request that one live call may still get a reply to: the judge,
        the batch endpoint, what happened, what to do."""
        return BatchFailure(str(self._fail(self.client.spec.url, what, hint=hint)), retry_live=True)

    def _fail(self, url: str, what: str, **kwargs: Any) -> LLMError:
        return self.client._fail(what, batch_url=url, **kwargs)

    def _quote(self, text: str) -> str:
        return self.client._quote(text, _QUOTE_ERROR)

    def _id(self, url: str, value: object, what: str) -> str:
        """An id the provider gave, checked before it goes into a URL path."""
        if not isinstance(value, str) or not _ID.fullmatch(value):
            shown = self._quote(repr(value))
            raise self._fail(
                url, f"the reply's {what} is {shown}, not an id", hint="check the endpoint"
            )
        return value

    async def request(
        self, method: str, url: str, *, cap: int = MAX_REPLY_BYTES, **kwargs: Any
    ) -> tuple[bytes, float | None]:
        """One HTTP exchange under the live calls' guards (``kwargs``: ``timeout`` and httpx's
        ``json``, ``files``, ``data``); the body and any ``Retry-After``."""
        response, body = await self.client._request(method, url, batch=True, cap=cap, **kwargs)
        if body is None:
            raise self._fail(
                url,
                f"the reply is larger than {cap:,} bytes and was refused",
                status=response.status_code,
                hint="send fewer judge calls per run, or judge live without --rubric-judge-batch",
            )
        return body, retry_delay(response)

    async def json(
        self, method: str, url: str, **kwargs: Any
    ) -> tuple[dict[str, Any], float | None]:
        body, retry_after = await self.request(method, url, **kwargs)
        try:
            # A key given twice (two statuses, two ids) is no reply, as a live one's.
            data = json.loads(body, object_pairs_hook=unique_keys)
        except (ValueError, RecursionError) as exc:
            if isinstance(exc, RepeatedKey):
                what = f"the reply gives the key {self._quote(exc.key)!r} twice in one object"
            else:
                text = self._quote(body.decode("utf-8", errors="replace"))
                what = f"the reply is not JSON ({text!r})"
            raise self._fail(url, what, hint="check the endpoint") from None
        if not isinstance(data, dict):
            raise self._fail(url, "the reply is not a JSON object", hint="check the endpoint")
        return data, retry_after

    async def submitted(self, url: str, send: Callable[[], Any], *, resend: bool = True) -> Any:
        """``send()`` (an exchange with ``url``) retried as a live call is, from the same retry
        budget; without ``resend`` (a batch's creation, which could be billed twice) only a
        request refused unread (429, 503) is sent again."""
        policy = self.client.policy
        for attempt in range(policy.attempts):
            try:
                return await send()
            except LLMError as exc:
                again = exc.retryable and (resend or exc.status in (429, 503))
                if not again or attempt + 1 == policy.attempts:
                    raise
                await self.client._retry(attempt + 1, exc, batch_url=url)
        raise AssertionError("unreachable")  # pragma: no cover

    def lines(self, body: bytes) -> list[dict[str, Any]]:
        """A JSONL results file's objects (a line that is not one is skipped: its request
        counts as missing). Lines end at ``\n`` only: a raw U+2028 (or U+0085, a form feed)
        inside a JSON string is part of the string, never a line break."""
        found: list[dict[str, Any]] = []
        for line in body.decode("utf-8", errors="replace").split("\n"):
            try:
                # A key given twice (limits.RepeatedKey) is no result either.
                data = json.loads(line, object_pairs_hook=unique_keys)
            except (ValueError, RecursionError):
                continue
            if isinstance(data, dict):
                found.append(data)
        return found

    async def download(self, url: str) -> bytes:
        body: bytes
        body, _ = await self.submitted(
            url,
            lambda: self.request("GET", url, cap=MAX_RESULTS_BYTES, timeout=self.transfer_timeout),
        )
        return body

    @property
    def transfer_timeout(self) -> float:
        return max(self.client.policy.timeout, _TRANSFER_TIMEOUT)

    def _result(self, batch_id: str, custom_id: str, line: Mapping[str, Any]) -> BatchResult:
        raise NotImplementedError  # each provider's result line

    async def collect(
        self, urls: Iterable[str], batch_id: str, ids: set[str]
    ) -> dict[str, BatchResult]:
        """Each result of the results files at ``urls``, by ``custom_id`` (the first of each
        of ``ids``; a line naming another is not ours)."""
        found: dict[str, BatchResult] = {}
        for url in urls:
            for line in self.lines(await self.download(url)):
                custom_id = line.get("custom_id")
                if isinstance(custom_id, str) and custom_id in ids and custom_id not in found:
                    found[custom_id] = self._result(batch_id, custom_id, line)
        return found

    def read_reply(self, body: object) -> BatchResult:
        """A succeeded result's body, read as a live reply."""
        if not isinstance(body, dict):
            return self.asked_live("a result's body is not a JSON object", hint="it was asked live")
        try:
            return self.client._read(body, True)  # a batched call is a judge's, with its schema
        except LLMError as exc:
            return BatchFailure(str(exc), retry_live=True)


class _OpenAIBatch(_Wire):
    """``/files`` and ``/batches`` of an OpenAI-compatible endpoint."""

    async def submit(self, requests: Sequence[BatchRequest]) -> str:
        lines = "".join(
            json.dumps(
                {
                    "custom_id": r.custom_id,
                    "method": "POST",
                    "url": "/v1/chat/completions",
                    "body": self.client._graded(r.system, r.user, r.schema, r.sampling),
                },
                ensure_ascii=False,
            )
            + "\n"
            for r in requests
        ).encode("utf-8")
        files_url = self.client.spec.endpoint("/files")
        uploaded, _ = await self.submitted(
            files_url,
            lambda: self.json(
                "POST",
                files_url,
                files={"file": ("rubric-judge-batch.jsonl", lines, "application/jsonl")},
                data={"purpose": "batch"},
                timeout=self.transfer_timeout,
            ),
        )
        file_id = self._id(files_url, uploaded.get("id"), "file id")
        batches_url = self.client.spec.endpoint("/batches")
        created, _ = await self.submitted(
            batches_url,
            lambda: self.json(
                "POST",
                batches_url,
                json={
                    "input_file_id": file_id,
                    "endpoint": "/v1/chat/completions",
                    "completion_window": "24h",
                },
            ),
            resend=False,
        )
        return self._id(batches_url, created.get("id"), "batch id")

    async def poll(self, batch_id: str) -> tuple[_Status, float | None]:
        data, retry_after = await self.json(
            "GET", self.client.spec.endpoint(f"/batches/{batch_id}")
        )
        status = data.get("status")
        if status == "failed":
            return _Status(True, f"failed ({self._errors(data)})", data), retry_after
        return _Status(status in ("completed", "expired", "cancelled"), raw=data), retry_after

    def _errors(self, data: Mapping[str, Any]) -> str:
        errors = data.get("errors")
        listed = errors.get("data") if isinstance(errors, dict) else None
        if not isinstance(listed, list) or not listed:
            return "the provider gave no reason"
        first = listed[0] if isinstance(listed[0], dict) else {}
        text = f"{first.get('code', 'error')}: {first.get('message', '')}"
        return self._quote(text) + (f" and {len(listed) - 1} more" if len(listed) > 1 else "")

    async def cancel(self, batch_id: str) -> None:
        await self.json("POST", self.client.spec.endpoint(f"/batches/{batch_id}/cancel"))

    async def results(
        self, batch_id: str, status: _Status, ids: set[str]
    ) -> dict[str, BatchResult]:
        files = self.client.spec.endpoint("/files")
        urls = (  # each id checked before its file is asked for
            self.client.spec.endpoint(f"/files/{self._id(files, status.raw[name], name)}/content")
            for name in ("output_file_id", "error_file_id")
            if status.raw.get(name) is not None
        )
        return await self.collect(urls, batch_id, ids)

    def _result(self, batch_id: str, custom_id: str, line: Mapping[str, Any]) -> BatchResult:
        response = line.get("response")
        if isinstance(response, dict) and response.get("status_code") == 200:
            return self.read_reply(response.get("body"))
        error = line.get("error")
        if isinstance(error, dict) and error.get("message"):
            why = f"{error.get('code', 'error')}: {error.get('message')}"
        elif isinstance(response, dict):
            body = response.get("body")
            text = json.dumps(body) if not isinstance(body, str) else body
            why = f"HTTP {response.get('status_code')}: {error_text(text.encode(), '')}"
        else:
            why = "no response and no error"
        return self.asked_live(
            f"request {custom_id} of batch {batch_id} errored ({self._quote(why)})"
        )


class _AnthropicBatch(_Wire):
    """``/v1/messages/batches`` of the Anthropic API."""

    client: AnthropicClient

    def _url(self, path: str = "") -> str:
        return self.client._endpoint("/batches" + path)

    async def submit(self, requests: Sequence[BatchRequest]) -> str:
        url = self._url()
        created, _ = await self.submitted(
            url,
            lambda: self.json(
                "POST",
                url,
                json={
                    "requests": [
                        {
                            "custom_id": r.custom_id,
                            "params": self.client._graded(r.system, r.user, r.schema, r.sampling),
                        }
                        for r in requests
                    ]
                },
                timeout=self.transfer_timeout,
            ),
            resend=False,
        )
        return self._id(url, created.get("id"), "batch id")

    async def poll(self, batch_id: str) -> tuple[_Status, float | None]:
        data, retry_after = await self.json("GET", self._url(f"/{batch_id}"))
        return _Status(data.get("processing_status") == "ended", raw=data), retry_after

    async def cancel(self, batch_id: str) -> None:
        await self.json("POST", self._url(f"/{batch_id}/cancel"))

    async def results(
        self, batch_id: str, status: _Status, ids: set[str]
    ) -> dict[str, BatchResult]:
        own = self._url(f"/{batch_id}/results")
        given = status.raw.get("results_url")
        url = given if isinstance(given, str) and given else own
        if _origin(url) != _origin(own):
            raise self._fail(
                own,
                f"the batch's results_url is on another host ({self._quote(public_url(url))!r})",
                hint="the key is sent only where --rubric-judge-url points: check the endpoint",
            )
        return await self.collect([url], batch_id, ids)

    def _result(self, batch_id: str, custom_id: str, line: Mapping[str, Any]) -> BatchResult:
        result = line.get("result")
        kind = result.get("type") if isinstance(result, dict) else None
        if isinstance(result, dict) and kind == "succeeded":
            return self.read_reply(result.get("message"))
        why = str(kind or "no result type")
        if isinstance(result, dict) and kind == "errored":
            why = f"errored: {error_text(json.dumps(result.get('error')).encode(), '')}"
        return self.asked_live(f"request {custom_id} of batch {batch_id} was {self._quote(why)}")


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.rpartition("@")[2].lower()


async def run_batch(
    client: HTTPClient,
    requests: Sequence[BatchRequest],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    first_poll: float = FIRST_POLL,
    max_poll: float = MAX_POLL,
) -> dict[str, BatchResult]:
    """Send ``requests`` (unique custom ids) as one batch through ``client``'s provider;
    return each ``custom_id``'s reply or failure. Raises
    :class:`~pytest_rubric._errors.LLMError` when the batch could not be submitted."""
    if not requests:
        return {}
    ids = [r.custom_id for r in requests]
    wire: _OpenAIBatch | _AnthropicBatch
    wire = _OpenAIBatch(client) if isinstance(client, OpenAIClient) else _AnthropicBatch(client)
    deadline = asyncio.get_running_loop().time() + timeout
    batch_id = await wire.submit(requests)
    try:
        ended = await _wait(wire, batch_id, deadline, first_poll=first_poll, max_poll=max_poll)
    except asyncio.CancelledError:
        # The session is closing (interrupted, -x): a batch left running is still billed.
        await _cancel(wire, batch_id)
        raise
    # A batch that ends with no results (it failed, or was cancelled past the timeout) left
    # every request missing from them: each is asked live once, as a missing one is.
    if ended is None:
        await _cancel(wire, batch_id)
        failure = wire.asked_live(
            f"batch {batch_id} did not end within {timeout:g} s and was cancelled",
            hint="it was asked live; raise --rubric-judge-batch-timeout to wait longer",
        )
    elif ended.failed is not None:
        failure = wire.asked_live(
            f"batch {batch_id} {ended.failed}",
            hint="it was asked live; see the provider's batch page",
        )
    else:
        results = await wire.results(batch_id, ended, set(ids))
        for custom_id in ids:
            results.setdefault(
                custom_id,
                wire.asked_live(f"batch {batch_id} ended without a result for request {custom_id}"),
            )
        return results
    return dict.fromkeys(ids, failure)


MIN_RETRY_AFTER = 1.0  # seconds: the least a poll waits when the server says how long


async def _wait(
    wire: _OpenAIBatch | _AnthropicBatch,
    batch_id: str,
    deadline: float,
    *,
    first_poll: float,
    max_poll: float,
) -> _Status | None:
    """Poll until the batch ends (its status) or the deadline passes (None)."""
    loop = asyncio.get_running_loop()
    delay = first_poll
    while True:
        try:
            status, retry_after = await wire.poll(batch_id)
        except LLMError as exc:
            if not exc.retryable:
                raise
            status, retry_after = None, exc.retry_after  # an outage: keep waiting
        if status is not None and status.ended:
            return status
        if (remaining := deadline - loop.time()) <= 0:
            return None
        wait = delay if retry_after is None else max(retry_after, MIN_RETRY_AFTER)
        await asyncio.sleep(max(0.0, min(wait, max_poll, remaining)))
        delay = min(delay * 2, max_poll)


async def _cancel(wire: _OpenAIBatch | _AnthropicBatch, batch_id: str) -> None:
    """Ask the provider to cancel the batch; a failure to is not waited out."""
    with contextlib.suppress(LLMError, TimeoutError):
        async with asyncio.timeout(_CANCEL_TIMEOUT):
            await wire.cancel(batch_id)


@dataclass(eq=False)  # a queue is itself, never equal to another
class BatchQueue:
    """The judge calls of a run, gathered into batches: what ``--rubric-judge-batch`` sends.

    :meth:`send` has the built-in client's signature. A batch is sent once no call has
    joined it for ``quiet`` seconds (the session schedules its work all at once) or once it
    holds :data:`MAX_BATCH_REQUESTS` or :data:`MAX_BATCH_CHARACTERS`. A call whose result is
    missing or errored is made once live; any other failure is a
    :class:`~pytest_rubric._errors.LLMError`.
    """

    client: HTTPClient
    _: KW_ONLY
    timeout: float = DEFAULT_TIMEOUT
    quiet: float = 0.5
    first_poll: float = FIRST_POLL
    max_poll: float = MAX_POLL
    _ids: Iterator[int] = field(default_factory=itertools.count, init=False)
    _gathered: list[tuple[BatchRequest, asyncio.Future[BatchResult]]] = field(
        default_factory=list, init=False
    )
    _characters: int = field(default=0, init=False)  # of the gathered calls' messages
    _timer: asyncio.TimerHandle | None = field(default=None, init=False)
    _running: set[asyncio.Task[None]] = field(default_factory=set, init=False)

    async def send(
        self,
        system: str,
        user: str,
        *,
        schema: dict[str, Any] | None = None,
        sampling: Sampling | None = None,
    ) -> Reply:
        """The reply to one judge call, through the next batch."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[BatchResult] = loop.create_future()
        request = BatchRequest(
            f"rubric-{next(self._ids)}", system, user, schema, sampling or Sampling()
        )
        self._gathered.append((request, future))
        self._characters += len(system) + len(user)
        if self._timer is not None:
            self._timer.cancel()
        if self._characters >= MAX_BATCH_CHARACTERS or len(self._gathered) >= MAX_BATCH_REQUESTS:
            self._flush()
        else:
            self._timer = loop.call_later(self.quiet, self._flush)
        result = await future
        if isinstance(result, Reply):
            return result
        if not result.retry_live:
            raise LLMError(result.reason)
        try:
            reply = await self.client.send(system, user, schema=schema, sampling=sampling)
        except BudgetSpent:
            raise  # the call did not start: the budget's own words, as for any call
        except LLMError as exc:
            raise LLMError(f"{exc} (asked live after: {result.reason})") from None
        self.client.stats.live_in += reply.tokens_in  # at the live price, not the batch's
        self.client.stats.live_out += reply.tokens_out
        return reply

    async def aclose(self) -> None:
        """The run is over: cancel the batches still running (the provider's too, see
        :func:`run_batch`); the calls waiting for them fail."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        running = list(self._running)
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)

    def _flush(self) -> None:
        self._timer = None
        gathered, self._gathered = self._gathered, []
        self._characters = 0
        if gathered:
            task = asyncio.get_running_loop().create_task(self._run(gathered))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _run(self, gathered: list[tuple[BatchRequest, asyncio.Future[BatchResult]]]) -> None:
        requests = [request for request, _ in gathered]
        try:
            results = await run_batch(
                self.client,
                requests,
                timeout=self.timeout,
                first_poll=self.first_poll,
                max_poll=self.max_poll,
            )
        except asyncio.CancelledError:  # aclose: the run is over
            failure = BatchFailure(
                f"judge {self.client.spec.name}: the run ended before its batch did",
                retry_live=False,
            )
            for _, future in gathered:
                if not future.done():
                    future.set_result(failure)
            raise
        except Exception as exc:  # no call may be left waiting
            reason = str(exc)
            if not isinstance(exc, LLMError):
                failed = f"the batch failed ({type(exc).__name__}: {exc})"
                reason = redact(f"judge {self.client.spec.name}: {failed}", self.client.key)
            results = {r.custom_id: BatchFailure(reason, retry_live=False) for r in requests}
        for request, future in gathered:
            if not future.done():
                future.set_result(results[request.custom_id])
