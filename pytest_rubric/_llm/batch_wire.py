"""What a batch is made of (:class:`BatchRequest`, :class:`BatchFailure`), its limits, and
the exchange every provider's batch API shares (:class:`_Wire`: guarded requests, polling
status); the providers' own shapes are ``batch_providers``."""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._defaults import PROVIDERS
from .._guards.secrets import clip, public_url, redact
from .base import JudgeError, Reply, Sampling
from .http import _QUOTE_ERROR, HTTPClient
from .responses import HINTS, error_text, redirect_target, retry_delay

if TYPE_CHECKING:
    import httpx


__all__ = [
    "BATCH_PROVIDERS",
    "DEFAULT_TIMEOUT",
    "MAX_BATCH_CHARACTERS",
    "MAX_BATCH_REQUESTS",
    "MAX_RESULTS_BYTES",
    "BatchFailure",
    "BatchRequest",
    "BatchResult",
]


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
"""The largest results file read (256 MiB); a control reply (a batch's status) is held to
the live calls' 1 MiB."""

FIRST_POLL = 1.0
MAX_POLL = 30.0
# An upload or a download may be large: its deadline is at least this, whatever the judge's.
_TRANSFER_TIMEOUT = 300.0
# The ids the provider gives, put in a URL path: nothing that could reach another path.
_ID = re.compile(r"[A-Za-z0-9_.-]{1,200}")
_BATCH_HINTS = {
    404: "does --rubric-judge-url serve the provider's batch API? --rubric-judge-batch needs "
    "it: judge live without the flag",
}
# How long a timed-out batch's cancellation is waited for.
_CANCEL_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class BatchRequest:
    """One judge call of a batch: the two messages, the reply's schema, the sampling."""

    custom_id: str
    system: str
    user: str
    schema: dict[str, Any] | None = None
    sampling: Sampling = field(default_factory=Sampling)


@dataclass(frozen=True, slots=True)
class BatchFailure:
    """Why a request of a batch has no reply; ``retry_live``: one live call may still get it
    (its result was missing or errored), not when the batch failed or did not end in time."""

    reason: str
    retry_live: bool


BatchResult = Reply | BatchFailure


@dataclass(frozen=True, slots=True)
class _Status:
    """A batch as one poll saw it: ``ended``, and why it failed as a whole, if it did."""

    ended: bool
    failed: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)


class _Wire:
    """One provider's batch API on a built-in client's endpoint, key and headers."""

    def __init__(self, client: HTTPClient) -> None:
        self.client = client

    # --- what each provider does -------------------------------------------------------------

    async def submit(self, requests: Sequence[BatchRequest]) -> str:
        raise NotImplementedError

    async def poll(self, batch_id: str) -> tuple[_Status, float | None]:
        raise NotImplementedError

    async def cancel(self, batch_id: str) -> None:
        raise NotImplementedError

    async def results(
        self, batch_id: str, status: _Status, ids: set[str]
    ) -> dict[str, BatchResult]:
        raise NotImplementedError

    # --- shared ------------------------------------------------------------------------------

    def failure(self, what: str, *, hint: str) -> str:
        """A failure's text: the judge, the batch endpoint, what happened, what to do."""
        spec = self.client.spec
        return redact(
            f"judge {spec.name} batch at {spec.public_url}: {what}; {hint}", self.client.key
        )

    def _fail(
        self,
        url: str,
        what: str,
        *,
        hint: str,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> JudgeError:
        what = redact(what, self.client.key)
        message = f"judge {self.client.spec.name} batch at {public_url(url)}: {what}; {hint}"
        return JudgeError(
            message, what=what, status=status, retryable=retryable, retry_after=retry_after
        )

    def _quote(self, text: str) -> str:
        return clip(text, self.client.key, limit=_QUOTE_ERROR)

    def _id(self, url: str, value: object, what: str) -> str:
        """An id the provider gave, checked before it goes into a URL path."""
        if not isinstance(value, str) or not _ID.fullmatch(value):
            shown = self._quote(repr(value))
            raise self._fail(
                url, f"the reply's {what} is {shown}, not an id", hint="check the endpoint"
            )
        return value

    async def request(
        self,
        method: str,
        url: str,
        *,
        json_body: Any = None,
        files: Mapping[str, tuple[str, bytes, str]] | None = None,
        data: Mapping[str, str] | None = None,
        cap: int = 1024 * 1024,
        timeout: float | None = None,
    ) -> tuple[bytes, float | None]:
        """One HTTP exchange under the live calls' guards; the body and any ``Retry-After``."""
        import httpx

        http = self.client._http()
        limit = timeout if timeout is not None else self.client.policy.timeout
        try:
            async with asyncio.timeout(limit):
                request = http.build_request(
                    method,
                    url,
                    json=json_body,
                    files=files,
                    data=data,
                    headers=self.client._headers(),
                )
                response = await http.send(request, stream=True)
                try:
                    redirected = 300 <= response.status_code < 400
                    body = b"" if redirected else await _read_up_to(response, cap)
                finally:
                    await response.aclose()
        except (TimeoutError, httpx.TimeoutException):
            raise self._fail(
                url,
                f"no complete reply within {limit:g} s",
                hint="the provider is slow: raise --rubric-judge-timeout",
                retryable=True,
            ) from None
        except httpx.HTTPError as exc:
            raise self._fail(
                url,
                f"the exchange failed ({type(exc).__name__}: {self._quote(str(exc))})",
                hint="check that the server is running and --rubric-judge-url is right",
                retryable=True,
            ) from None
        status = response.status_code
        if 300 <= status < 400:
            target = redirect_target(response, self._quote)
            raise self._fail(
                url,
                f"HTTP {status}: {target}",
                status=status,
                hint="redirects are not followed: set --rubric-judge-url to the address "
                "that answers, if you trust it",
            )
        if status >= 400:
            raise self._fail(
                url,
                f"HTTP {status}: {self._quote(error_text(body, response.reason_phrase))}",
                status=status,
                hint=_BATCH_HINTS.get(status) or HINTS.get(status, "see the provider's error"),
                retryable=status == 429 or status >= 500,
                retry_after=retry_delay(response),
            )
        if body is None:
            raise self._fail(
                url,
                f"the reply is larger than {cap:,} bytes and was refused",
                status=status,
                hint="send fewer judge calls per run, or judge live without --rubric-judge-batch",
            )
        return body, retry_delay(response)

    async def json(
        self, method: str, url: str, **kwargs: Any
    ) -> tuple[dict[str, Any], float | None]:
        """:meth:`request` whose reply is one JSON object."""
        body, retry_after = await self.request(method, url, **kwargs)
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            text = self._quote(body.decode("utf-8", errors="replace"))
            raise self._fail(
                url, f"the reply is not JSON ({text!r})", hint="check the endpoint"
            ) from None
        if not isinstance(data, dict):
            raise self._fail(url, "the reply is not a JSON object", hint="check the endpoint")
        return data, retry_after

    async def submitted(self, send: Callable[[], Any], *, resend: bool = True) -> Any:
        """``send()`` retried as a live call is: a rate limit or an outage, with backoff.

        Without ``resend`` (a batch's creation, which a second time could be billed twice)
        only a request the server refused unread (429, 503) is sent again.
        """
        policy = self.client.policy
        for attempt in range(policy.attempts):
            try:
                return await send()
            except JudgeError as exc:
                again = exc.retryable and (resend or exc.status in (429, 503))
                if not again or attempt + 1 == policy.attempts:
                    raise
                wait = exc.retry_after
                if wait is None:
                    wait = random.uniform(0, min(policy.max_backoff, policy.backoff * 2**attempt))
                await asyncio.sleep(min(wait, policy.max_retry_after))
        raise AssertionError("unreachable")  # pragma: no cover

    def lines(self, body: bytes) -> list[dict[str, Any]]:
        """A JSONL results file's objects (a line that is not one is skipped: its request
        counts as missing). Lines end at ``\n`` only: a raw U+2028 (or U+0085, a form feed)
        inside a JSON string is part of the string, never a line break."""
        found: list[dict[str, Any]] = []
        for line in body.decode("utf-8", errors="replace").split("\n"):
            try:
                data = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(data, dict):
                found.append(data)
        return found

    def read_reply(self, read: Callable[[dict[str, Any]], Reply], body: object) -> BatchResult:
        """A succeeded result's body read as the live reply is (a bad one: errored)."""
        if not isinstance(body, dict):
            return BatchFailure(
                self.failure("a result's body is not a JSON object", hint="it was asked live"),
                retry_live=True,
            )
        try:
            return read(body)
        except JudgeError as exc:
            return BatchFailure(str(exc), retry_live=True)


async def _read_up_to(response: httpx.Response, cap: int) -> bytes | None:
    """The body, or None once it passes ``cap`` decoded bytes (nothing more is read)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > cap:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
