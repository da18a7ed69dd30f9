"""The HTTP machinery every built-in client shares, on httpx (no provider SDK), failing safe.

Nothing a server sends is taken on faith:

* each attempt is bounded as a whole, body included (a trickling server times out), and a
  body stops being read past :data:`MAX_REPLY_BYTES`;
* retries on 429 (``Retry-After``, capped), 5xx, connection errors, timeouts and unreadable
  replies, with exponential backoff and full jitter, a bounded number of attempts per call
  and a retry budget per client; a concurrency slot is held per attempt, never while
  waiting to retry; a redirect is an error naming its target, never a reply;
* a call that still fails raises :class:`~pytest_rubric._errors.LLMError` naming the
  provider, model and status and what to try, never holding the key (redacted, then cut).

The wires (what is posted, how the reply is read) are in :mod:`~pytest_rubric._llm.clients`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._defaults import RetryPolicy
from .._errors import LLMError
from .._guards.limits import RepeatedKey, unique_keys
from .._guards.secrets import Secret, clip, public_url, redact
from .base import CallStats, Reply, Sampling, token_count
from .providers import ModelSpec

if TYPE_CHECKING:
    # Imported on the first request: a session served from the cache never loads httpx.
    import ssl

    import httpx


MAX_REPLY_BYTES = 1024 * 1024
"""The largest reply body read: a grade is a few hundred bytes."""


def retry_delay(response: httpx.Response) -> float | None:
    """The seconds a 429's ``Retry-After`` asks for, or None (absent, or an HTTP date)."""
    if (value := response.headers.get("retry-after")) is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


async def read_capped(response: httpx.Response, cap: int = MAX_REPLY_BYTES) -> bytes | None:
    """The body, or None once it passes ``cap`` bytes (or its ``Content-Length`` says so)."""
    declared = response.headers.get("content-length", "")
    # Bounded before int(): a 5,000-digit length would raise instead of being refused.
    if declared.isdigit() and len(declared) <= 18 and int(declared) > cap:
        return None
    body = bytearray()
    # Decoded bytes are counted, so a compressed body is held to the cap too.
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > cap:
            return None
    return bytes(body)


HINTS = {
    400: "the server rejected the request: check the model name and the server's options",
    401: "check the API key in the environment",
    403: "the key lacks access to this model",
    404: "check --rubric-judge-url and the model name",
    429: "rate limited: lower --rubric-concurrency or wait",
    500: "the provider failed: try again later",
    502: "the provider's gateway failed: try again later",
    503: "the provider is overloaded: try again later or lower --rubric-concurrency",
}


def error_text(body: bytes | None, reason: str) -> str:
    """The provider's error message, whole: the caller redacts it, then cuts it."""
    if body is None:
        return f"{reason} (an error body above {MAX_REPLY_BYTES:,} bytes, not read)"
    text = body.decode("utf-8", errors="replace")
    try:
        error = json.loads(text)
        if isinstance(error, dict):
            error = error.get("error", error)
        if isinstance(error, dict):
            error = error.get("message") or error
        return str(error)
    except (ValueError, RecursionError):  # str() of a deep structure recurses too
        return text or reason


# How much of a provider's text an LLMError quotes (cut after the key is redacted).
_QUOTE_ERROR = 200
_QUOTE_BODY = 80
_WHICH_ENDPOINT = "is --rubric-judge-url an OpenAI-compatible or Anthropic endpoint?"
_NO_BATCH_API = (
    "does --rubric-judge-url serve the provider's batch API? --rubric-judge-batch needs "
    "it: judge live without the flag"
)


def _refused(exc: BaseException) -> bool:
    """Whether a transport error wraps a ConnectionRefusedError (by cause or context)."""
    seen: BaseException | None = exc
    for _ in range(8):  # a chain is a few links; never follow a cycle
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


_REDIRECT = (
    "redirects are not followed: set --rubric-judge-url to the address that answers, if you "
    "trust it"
)
# Where post() leaves the request beside its reply, for _tokens to estimate from when the
# reply's usage gives no counts.
_ASKED = "\0rubric-request"


@functools.cache
def _tls() -> ssl.SSLContext:
    """httpx's default TLS context (certifi's roots, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``),
    made once a process: loading the roots takes some 20 ms, and each session's clients (and
    every in-process run of the test suite) would load them again."""
    import httpx

    return httpx.create_ssl_context()


class HTTPClient:
    """The shared HTTP machinery: one client, retries, statistics, redaction."""

    def __init__(
        self, spec: ModelSpec, *, key: Secret | None, policy: RetryPolicy | None = None
    ) -> None:
        self.spec = spec
        self.key = key
        self.role = "judge"  # "model" for the application's (--rubric-model): what errors say
        self.policy = policy or RetryPolicy()
        self.stats = CallStats()
        # The run's concurrency bound (the transport sets it), taken per HTTP attempt.
        self.limiter: asyncio.Semaphore | None = None
        self._client: httpx.AsyncClient | None = None
        self._budget = self.policy.budget
        # --rubric-max-cost, checked in the slot before a call's first attempt.
        self.admit: Callable[[], None] | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec.name!r}, url={self.spec.public_url!r})"

    def _http(self) -> httpx.AsyncClient:
        # Created lazily inside the event loop that uses it.
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(
                verify=_tls(),
                timeout=httpx.Timeout(self.policy.timeout),
                # The cap counts decoded bytes, and a compressed chunk could swell past it.
                headers={"accept-encoding": "identity"},
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _headers(self) -> dict[str, str]:
        raise NotImplementedError

    def _endpoint(self) -> str:
        raise NotImplementedError

    async def complete(self, system: str, user: str) -> str:
        """Send the two messages; return the reply text (the hook's contract)."""
        return (await self.send(system, user)).text

    async def send(
        self,
        system: str,
        user: str,
        *,
        schema: dict[str, Any] | None = None,
        sampling: Sampling | None = None,
    ) -> Reply:
        """Send the two messages; return the reply (JSON text when ``schema`` is given)."""
        return self._read(
            await self.post(self._graded(system, user, schema, sampling)), schema is not None
        )

    async def chat(
        self, turns: Sequence[tuple[str, str]], *, sampling: Sampling | None = None
    ) -> Reply:
        """Send a conversation of ``(role, content)`` turns as it is; return the reply."""
        return self._read(await self.post(self._payload(turns, sampling)))

    def _graded(
        self, system: str, user: str, schema: dict[str, Any] | None, sampling: Sampling | None
    ) -> dict[str, Any]:
        """The payload of a judge call (a batch request's too)."""
        return self._payload((("system", system), ("user", user)), sampling, schema)

    def _payload(
        self,
        turns: Sequence[tuple[str, str]],
        sampling: Sampling | None,
        schema: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """What is posted for ``turns``: the sampling, and ``schema`` as the API asks for a
        structured reply."""
        raise NotImplementedError

    def _read(self, data: dict[str, Any], forced: bool = False) -> Reply:
        """The reply a call's JSON holds (a batch result's too), its tokens counted; ``forced``
        (the request asked for a schema): only its structured output."""
        raise NotImplementedError

    def _tokens(self, data: dict[str, Any], names: tuple[str, str]) -> tuple[int, int]:
        """The tokens ``data``'s usage reports under ``names``, counted; a reply without
        ``usage`` (or with counts that are not whole numbers a reply could have: ``{}``,
        ``"900000"``, ``-5``) would cost nothing and never bind a budget, so its tokens are
        estimated (4 characters each, request and reply) and counted in ``stats.estimated``."""
        usage = data.get("usage")
        if not isinstance(usage, dict) or any(
            token_count(count := usage.get(name)) != count for name in names
        ):
            self.stats.estimated += 1
            replied = len(json.dumps({k: v for k, v in data.items() if k != _ASKED}, default=str))
            asked = len(json.dumps(data[_ASKED], ensure_ascii=False)) if _ASKED in data else 0
            usage = {names[0]: asked // 4, names[1]: replied // 4}
        tokens_in, tokens_out = (token_count(usage.get(name)) for name in names)
        self.stats.tokens_in += tokens_in
        self.stats.tokens_out += tokens_out
        return tokens_in, tokens_out

    def _slot(self) -> contextlib.AbstractAsyncContextManager[Any]:
        return self.limiter if self.limiter is not None else contextlib.nullcontext()

    def _quote(self, text: str, limit: int) -> str:
        """A provider's text, redacted whole and then cut (no key survives as a fragment)."""
        return clip(text, self.key, limit=limit)

    def _fail(
        self,
        what: str,
        *,
        status: int | None = None,
        hint: str,
        retryable: bool = False,
        retry_after: float | None = None,
        batch_url: str | None = None,
    ) -> LLMError:
        """The error of a call (or, at ``batch_url``, of a batch API's exchange)."""
        # Whatever ``what`` quotes went through _quote; this catches the rest.
        what = redact(what, self.key)
        where = f"{'batch ' if batch_url else ''}at {public_url(batch_url or self._endpoint())}"
        if self.role == "model":  # its endpoint is the provider's variable, not the judge's flag
            hint = hint.replace("--rubric-judge-url", self.spec.entry.url_variable)
        return LLMError(
            f"{self.role} {self.spec.name} {where}: {what}; {hint}",
            what=what,
            status=status,
            retryable=retryable,
            retry_after=retry_after,
            hint=hint,
        )

    async def post(
        self, payload: dict[str, Any], *, failed: LLMError | None = None
    ) -> dict[str, Any]:
        """POST ``payload``; retry what is worth retrying; return the reply's JSON. ``failed``:
        a first attempt's error made elsewhere (an output-mode probe), retried from."""
        policy = self.policy
        last: LLMError | None = failed
        for attempt in range(1 if failed else 0, policy.attempts):
            if attempt:
                assert last is not None  # a retry follows a failure: this loop's, or ``failed``
                await self._retry(attempt, last)
            try:
                # The slot is held for this attempt only, not for the sleep above.
                async with self._slot():
                    if attempt == 0 and self.admit is not None:
                        self.admit()
                    return await self._post_once(payload)
            except LLMError as exc:
                if not exc.retryable:
                    raise
                last = exc
        assert last is not None
        raise self._fail(
            f"{last.what} (gave up after {policy.attempts} attempts)",
            status=last.status,
            # What the last failure called for: a refused connection is not a slow server.
            hint=HINTS.get(last.status or 0) or last.hint or "try again later",
        )

    async def _retry(self, attempt: int, last: LLMError, *, batch_url: str | None = None) -> None:
        """Wait before retry ``attempt`` (1: the first) of a call, or of a batch API's exchange
        at ``batch_url``, counted and paid from the session's retry budget; once that is spent,
        ``last``'s error saying so."""
        if self._budget <= 0:
            raise self._fail(
                f"{last.what}; the session's retry budget ({self.policy.budget}) is spent",
                status=last.status,
                hint="the provider is failing a lot: check its status, or lower --rubric-concurrency",
                batch_url=batch_url,
            )
        self._budget -= 1
        self.stats.retries += 1
        await asyncio.sleep(self._delay(attempt, last))

    def _delay(self, attempt: int, last: LLMError | None) -> float:
        """The wait before retry ``attempt`` (1: the first): ``last``'s Retry-After, capped,
        else the backoff with full jitter."""
        if last is not None and last.retry_after is not None:
            return min(last.retry_after, self.policy.max_retry_after)
        ceiling = min(self.policy.max_backoff, self.policy.backoff * 2 ** (attempt - 1))
        return random.uniform(0, ceiling)

    async def _post_once(self, payload: dict[str, Any]) -> dict[str, Any]:
        """One HTTP attempt (no slot taken here); return the reply's JSON object."""
        response, body = await self._request("POST", self._endpoint(), json=payload)
        status = response.status_code
        if body is None:
            raise self._fail(
                f"the reply is larger than {MAX_REPLY_BYTES:,} bytes (1 MiB) and was refused",
                status=status,
                hint="a grade is a few hundred bytes: is --rubric-judge-url a chat endpoint?",
                retryable=True,
            )
        try:
            # A key given twice (two "content" fields, two verdicts) is no reply at all.
            data = json.loads(body, object_pairs_hook=unique_keys)
        except (ValueError, RecursionError) as exc:
            # Or not JSON, nested past the recursion limit, or a number of thousands of digits.
            if isinstance(exc, RepeatedKey):
                key = self._quote(exc.key, _QUOTE_BODY)
                what = f"the reply gives the key {key!r} twice in one object"
            else:
                text = self._quote(body.decode("utf-8", errors="replace"), _QUOTE_BODY)
                what = f"the reply is not JSON ({text!r})"
            raise self._fail(what, status=status, hint=_WHICH_ENDPOINT, retryable=True) from None
        if not isinstance(data, dict):
            raise self._fail(
                "the reply is not a JSON object", hint="check the endpoint", retryable=True
            )
        data[_ASKED] = payload  # measured only if _tokens must estimate
        return data

    async def _request(
        self,
        method: str,
        url: str,
        *,
        batch: bool = False,
        cap: int = MAX_REPLY_BYTES,
        timeout: float | None = None,
        **content: Any,
    ) -> tuple[httpx.Response, bytes | None]:
        """One exchange of a live call or (``batch``) of a batch API, under the guards above
        (``timeout``: the policy's unless given); the response and its body (None: above
        ``cap``). ``content``: httpx's ``json``, ``files``, ``data``."""
        import httpx

        limit = self.policy.timeout if timeout is None else timeout
        batch_url = url if batch else None
        try:
            # httpx's timeout is per socket operation; this bounds the attempt as a whole.
            async with asyncio.timeout(limit):
                client = self._http()
                request = client.build_request(method, url, headers=self._headers(), **content)
                response = await client.send(request, stream=True)
                try:
                    redirect = 300 <= response.status_code < 400
                    body = b"" if redirect else await read_capped(response, cap)
                finally:
                    # Closing a body not read to its end drops the connection, as it should.
                    await response.aclose()
        except (TimeoutError, httpx.TimeoutException):
            raise self._fail(
                f"no complete reply within {limit:g} s",
                hint="the provider is slow: raise --rubric-judge-timeout"
                if batch
                else "the server is slow or overloaded: lower --rubric-concurrency, "
                "or raise --rubric-judge-timeout",
                retryable=True,
                batch_url=batch_url,
            ) from None
        except httpx.HTTPError as exc:
            said = f"{type(exc).__name__}: {self._quote(str(exc), _QUOTE_ERROR)}"
            hint = "check that the server is running and --rubric-judge-url is right"
            if isinstance(exc, httpx.RemoteProtocolError) and "location header" in str(exc):
                # A redirect whose Location httpx could not read (a control character in it).
                raise self._fail(
                    "a redirect to an address that is not a URL",
                    hint=_REDIRECT,
                    batch_url=batch_url,
                ) from None
            if batch:
                what = f"the exchange failed ({said})"
            elif not isinstance(exc, httpx.TransportError):  # e.g. a body that does not decode
                what, hint = f"the reply could not be read ({said})", _WHICH_ENDPOINT
            elif _refused(exc):
                what = "the server refused the connection: no server is running at that URL"
                hint = "start the server, or point --rubric-judge-url at the address it runs at"
            else:
                what = f"connection failed ({said})"
            raise self._fail(what, hint=hint, retryable=True, batch_url=batch_url) from None
        status = response.status_code
        if redirect:
            # httpx follows no redirect: say where it pointed, do not go there.
            location = response.headers.get("location")
            target = (
                f"redirected to {self._quote(public_url(location), _QUOTE_ERROR)!r}"
                if location
                else "a redirect without a Location"
            )
            raise self._fail(
                f"HTTP {status}: {target}",
                status=status,
                hint=_REDIRECT,
                batch_url=batch_url,
            )
        if status >= 400:
            default = "see the provider's error message"
            hint = _NO_BATCH_API if batch and status == 404 else HINTS.get(status, default)
            raise self._fail(
                f"HTTP {status}: {self._quote(error_text(body, response.reason_phrase), _QUOTE_ERROR)}",
                status=status,
                hint=hint,
                retryable=status == 429 or status >= 500,
                # A live call waits as Retry-After says only on a 429; a batch's poll, on any.
                retry_after=retry_delay(response) if batch or status == 429 else None,
                batch_url=batch_url,
            )
        return response, body
