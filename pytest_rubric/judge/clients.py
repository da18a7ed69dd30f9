"""LLM judge clients on httpx: OpenAI-compatible chat completions and the Anthropic messages API.

No provider SDK: one ``httpx.AsyncClient`` per judge, temperature 0 and a
seed where the API takes one (see :class:`Sampling` for repeated samples), structured output where the API offers it, and a
retry policy that fails safe:

* every HTTP attempt is bounded as a whole, body included, by the timeout
  (a server that trickles bytes times out), and a reply is read only up to
  :data:`MAX_REPLY_BYTES`;
* retries on 429 (honouring ``Retry-After``, capped), 5xx, connection
  errors, timeouts and replies that cannot be read, with exponential backoff
  and full jitter; a redirect is an error naming its target, never a reply;
* a bounded number of attempts per call and a retry budget per session;
  given the session's ``limiter``, a judge holds a concurrency slot for one
  attempt at a time, never while it waits to retry;
* a call that still fails raises :class:`JudgeError`, whose message names
  the provider, model and status and says what to try. It never contains
  the API key, whole or cut: text is redacted before it is cut short.

Every judge has ``async complete(system, user) -> str``; the built-in ones
also take ``schema=`` (a JSON Schema the reply must fit) and ``sampling=``,
and keep usage counts in :class:`JudgeStats`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import httpx

from .._base import RetryPolicy
from .._errors import RubricError
from .._secrets import Secret, clip, redact
from .cache import JudgeCache, cache_key
from .providers import PROVIDERS, JudgeSpec, JudgeStats, known_keys, read_key

__all__ = [
    "MAX_REPLY_BYTES",
    "PROVIDERS",
    "AnthropicJudge",
    "HTTPJudge",
    "Judge",
    "JudgeError",
    "JudgeSpec",
    "JudgeStats",
    "LiveModel",
    "OpenAIJudge",
    "RetryPolicy",
    "Sampling",
    "known_keys",
    "make_judge",
]

_ANTHROPIC_VERSION = "2023-06-01"
SEED = 1234
MAX_TOKENS = 1024
SAMPLE_TEMPERATURE = 0.7

MAX_REPLY_BYTES = 1024 * 1024
"""The largest reply body read (1 MiB): a grade is a few hundred bytes, so a
bigger body is refused as soon as it passes this, never buffered whole."""

# How much of a provider's text a JudgeError quotes: enough to see what went
# wrong, not a page of HTML. Cut only after the key is redacted.
_QUOTE_ERROR = 200
_QUOTE_BODY = 80
_QUOTE_LOCATION = 200
# A token count above this is not a count (no call reads a billion tokens).
_MAX_TOKENS = 10**9


@dataclass(frozen=True, slots=True)
class Sampling:
    """The sampling parameters of one judge call.

    One sample per criterion (the default) is greedy: temperature 0 and a
    fixed seed, as reproducible as the provider allows. With
    ``--rubric-judge-samples K`` the K samples are meant to be independent
    draws, so each one uses temperature ``SAMPLE_TEMPERATURE`` (0.7, the
    usual self-consistency setting) and its own seed ``SEED + i``; identical
    greedy calls would only agree with themselves.
    """

    temperature: float = 0.0
    seed: int = SEED
    max_tokens: int = MAX_TOKENS

    @classmethod
    def of(cls, sample: int, samples: int) -> Sampling:
        """The parameters of sample ``sample`` (0-based) out of ``samples``."""
        if samples <= 1:
            return cls()
        return cls(temperature=SAMPLE_TEMPERATURE, seed=SEED + sample)

    def as_dict(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens}


@runtime_checkable
class Judge(Protocol):
    """What ``pytest_rubric_make_judge`` must return."""

    async def complete(self, system: str, user: str) -> str: ...


class JudgeError(RubricError):
    """A judge call that failed after its retries; the criterion becomes ERROR.

    ``what`` is the failure alone (``HTTP 500: overloaded``); the message adds
    the judge, the endpoint and what to try.
    """

    def __init__(
        self,
        message: str,
        *,
        what: str = "",
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.what = what or message
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


JudgeError.__module__ = "pytest_rubric"


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def _tokens(usage: object, name: str) -> int:
    """A token count from a reply's ``usage``, or 0 when it is not a plausible one.

    The count is the provider's to report and ours to add up: a string, a
    float (``1e400`` is infinite), a dict or a 300-digit number is not
    trusted, never converted.
    """
    if not isinstance(usage, dict):
        return 0
    value = usage.get(name)
    if type(value) is not int or not 0 <= value <= _MAX_TOKENS:
        return 0
    return value


def _declared_length(response: httpx.Response) -> int | None:
    value = response.headers.get("content-length", "")
    # Bounded before int(): a 5,000-digit length would raise instead of being refused.
    return int(value) if value.isdigit() and len(value) <= 18 else None


async def _read_capped(response: httpx.Response) -> bytes | None:
    """The body, or None once it passes :data:`MAX_REPLY_BYTES` (nothing more is read)."""
    declared = _declared_length(response)
    if declared is not None and declared > MAX_REPLY_BYTES:
        return None
    chunks: list[bytes] = []
    size = 0
    # Decoded bytes are counted, so a compressed body is held to the cap too.
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


class HTTPJudge:
    """The shared HTTP machinery: one client, retries, statistics, redaction."""

    provider = ""

    def __init__(
        self,
        spec: JudgeSpec,
        *,
        key: Secret | None,
        policy: RetryPolicy | None = None,
        stats: JudgeStats | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        limiter: asyncio.Semaphore | None = None,
    ) -> None:
        self.spec = spec
        self.key = key
        self.policy = policy or RetryPolicy()
        self.stats = stats or JudgeStats()
        # The session's concurrency bound (``JudgeSession`` sets it), taken for
        # each HTTP attempt rather than for a whole call: a call waiting out a
        # Retry-After or a backoff leaves its slot to the others.
        self.limiter = limiter
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._budget = self.policy.budget

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec.name!r}, url={self.spec.url!r})"

    # --- transport --------------------------------------------------------------------------

    def _http(self) -> httpx.AsyncClient:
        # Created lazily inside the event loop that uses it.
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.policy.timeout),
                transport=self._transport,
                # The 1 MiB cap counts decoded bytes, and httpx decodes a whole
                # network chunk at once: a compressed reply could swell past the
                # cap inside one chunk. Replies are small; ask for them plain.
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

    async def complete(
        self,
        system: str,
        user: str,
        *,
        schema: dict[str, Any] | None = None,
        sampling: Sampling | None = None,
    ) -> str:
        """Send the two messages; return the reply text (JSON text when ``schema`` is given)."""
        raise NotImplementedError

    def _slot(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """A place in the concurrency bound, for one HTTP attempt."""
        return self.limiter if self.limiter is not None else contextlib.nullcontext()

    def _quote(self, text: str, limit: int) -> str:
        """A provider's text fit to quote: the key redacted from the whole text first,
        then cut, so a key the cut falls inside cannot survive as a fragment."""
        return clip(text, self.key, limit=limit)

    def _fail(
        self,
        what: str,
        *,
        status: int | None = None,
        hint: str,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> JudgeError:
        # Whatever ``what`` quotes went through _quote; this catches the rest.
        what = redact(what, self.key)
        message = f"judge {self.spec.name} at {self._endpoint()}: {what}; {hint}"
        return JudgeError(
            message, what=what, status=status, retryable=retryable, retry_after=retry_after
        )

    async def post(
        self, payload: dict[str, Any], *, failed: JudgeError | None = None
    ) -> dict[str, Any]:
        """POST ``payload``; retry what is worth retrying; return the reply's JSON.

        ``failed`` is the error of a first attempt made elsewhere (an output-mode
        probe): the retries continue from it, honouring its ``Retry-After``.
        """
        policy = self.policy
        last: JudgeError | None = failed
        for attempt in range(1 if failed else 0, policy.attempts):
            if attempt:
                if self._budget <= 0:
                    raise self._fail(
                        f"{last.what if last else 'failed'}; the session's retry budget "
                        f"({policy.budget}) is spent",
                        status=last.status if last else None,
                        hint="the provider is failing a lot: check its status, or lower --rubric-concurrency",
                    )
                self._budget -= 1
                self.stats.retries += 1
                await asyncio.sleep(self._delay(attempt, last))
            try:
                # The slot is held for this attempt only, not for the sleep above.
                async with self._slot():
                    return await self._post_once(payload)
            except JudgeError as exc:
                if not exc.retryable:
                    raise
                last = exc
        assert last is not None
        raise self._fail(
            f"{last.what} (gave up after {policy.attempts} attempts)",
            status=last.status,
            hint=_HINTS.get(last.status or 0, "try again later, or raise the timeout"),
        )

    def _delay(self, attempt: int, last: JudgeError | None) -> float:
        if last is not None and last.retry_after is not None:
            return min(last.retry_after, self.policy.max_retry_after)
        ceiling = min(self.policy.max_backoff, self.policy.backoff * 2 ** (attempt - 1))
        return random.uniform(0, ceiling)

    async def _post_once(self, payload: dict[str, Any]) -> dict[str, Any]:
        """One HTTP attempt (no slot taken here); return the reply's JSON object."""
        timeout = self.policy.timeout
        try:
            # httpx's timeout is per socket operation: a byte a second would keep
            # it from ever firing. This deadline bounds the attempt as a whole.
            async with asyncio.timeout(timeout):
                response, body = await self._exchange(payload)
        except (TimeoutError, httpx.TimeoutException):
            raise self._fail(
                f"no complete reply within {timeout:g} s",
                hint="the server is slow or overloaded: lower --rubric-concurrency, "
                "or raise --rubric-judge-timeout",
                retryable=True,
            ) from None
        except httpx.TransportError as exc:
            raise self._fail(
                f"connection failed ({type(exc).__name__}: {self._quote(str(exc), _QUOTE_ERROR)})",
                hint="check that the server is running and --rubric-judge-url is right",
                retryable=True,
            ) from None
        except httpx.RequestError as exc:  # e.g. a body that does not decode as its encoding says
            raise self._fail(
                f"the reply could not be read ({type(exc).__name__}: "
                f"{self._quote(str(exc), _QUOTE_ERROR)})",
                hint="is --rubric-judge-url an OpenAI-compatible or Anthropic endpoint?",
                retryable=True,
            ) from None
        status = response.status_code
        if 300 <= status < 400:
            # httpx follows no redirect, and a 3xx body is not the judge's reply,
            # however much it looks like one: say where it pointed, do not go there.
            location = response.headers.get("location")
            target = (
                f"redirected to {self._quote(location, _QUOTE_LOCATION)!r}"
                if location
                else "a redirect without a Location"
            )
            raise self._fail(
                f"HTTP {status}: {target}",
                status=status,
                hint="redirects are not followed: set --rubric-judge-url to the address "
                "that answers, if you trust it",
            )
        if status >= 400:
            raise self._fail(
                f"HTTP {status}: {self._quote(_error_text(body, response.reason_phrase), _QUOTE_ERROR)}",
                status=status,
                hint=_HINTS.get(status, "see the provider's error message"),
                retryable=status == 429 or status >= 500,
                retry_after=_retry_after(response) if status == 429 else None,
            )
        if body is None:
            raise self._fail(
                f"the reply is larger than {MAX_REPLY_BYTES:,} bytes (1 MiB) and was refused",
                status=status,
                hint="a grade is a few hundred bytes: is --rubric-judge-url a chat endpoint?",
                retryable=True,
            )
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            # Not JSON, or JSON nested past the recursion limit, or a number with
            # thousands of digits: a body no judge sends, read as not JSON.
            text = body.decode("utf-8", errors="replace")
            raise self._fail(
                f"the reply is not JSON ({self._quote(text, _QUOTE_BODY)!r})",
                status=status,
                hint="is --rubric-judge-url an OpenAI-compatible or Anthropic endpoint?",
                retryable=True,
            ) from None
        if not isinstance(data, dict):
            raise self._fail(
                "the reply is not a JSON object", hint="check the endpoint", retryable=True
            )
        return data

    async def _exchange(self, payload: dict[str, Any]) -> tuple[httpx.Response, bytes | None]:
        """Send ``payload``; return the response and its body (None: above the cap).

        The body is streamed so that the cap stops reading, and a redirect's
        body is not read at all.
        """
        client = self._http()
        request = client.build_request(
            "POST", self._endpoint(), json=payload, headers=self._headers()
        )
        response = await client.send(request, stream=True)
        try:
            if 300 <= response.status_code < 400:
                return response, b""
            return response, await _read_capped(response)
        finally:
            # Closing a body not read to its end drops the connection, as it should.
            await response.aclose()


# What a server answers when it does not support a response_format (llama.cpp: 500).
_REJECTIONS = frozenset({400, 404, 415, 422, 500, 501})

_HINTS = {
    400: "the server rejected the request: check the model name and the server's options",
    401: "check the API key in the environment",
    403: "the key lacks access to this model",
    404: "check --rubric-judge-url and the model name",
    429: "rate limited: lower --rubric-concurrency or wait",
    500: "the provider failed: try again later",
    502: "the provider's gateway failed: try again later",
    503: "the provider is overloaded: try again later or lower --rubric-concurrency",
}


def _error_text(body: bytes | None, reason: str) -> str:
    """The provider's error message, whole: the caller redacts it, then cuts it."""
    if body is None:
        return f"{reason} (an error body above {MAX_REPLY_BYTES:,} bytes, not read)"
    text = body.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
        if isinstance(data, dict):
            error = data.get("error", data)
            if isinstance(error, dict):
                error = error.get("message") or error
            return str(error)
        return str(data)
    except (ValueError, RecursionError):  # str() of a deep structure recurses too
        return text or reason


class OpenAIJudge(HTTPJudge):
    """Chat completions on any OpenAI-compatible server (OpenAI, Groq, vLLM, Ollama, llama.cpp...).

    Structured output goes as ``response_format`` with a JSON Schema; a server
    that rejects that gets ``json_object``, then plain text. The first mode
    that works is kept for the rest of the session.
    """

    provider = "openai"
    _MODES = ("json_schema", "json_object", "text")

    def __init__(self, spec: JudgeSpec, **kwargs: Any) -> None:
        super().__init__(spec, **kwargs)
        self._mode: str | None = None  # settled once a mode has worked

    def _endpoint(self) -> str:
        return f"{self.spec.url}/chat/completions"

    def _headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.key.reveal()}"} if self.key else {}

    def _payload(
        self,
        system: str,
        user: str,
        schema: dict[str, Any] | None,
        mode: str,
        sampling: Sampling,
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.spec.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": sampling.temperature,
            "seed": sampling.seed,
            # A grade is short; a small model that never closes its JSON would
            # otherwise generate until the context is full.
            "max_tokens": sampling.max_tokens,
        }
        if schema is not None and mode == "json_schema":
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "grade", "schema": schema, "strict": False},
            }
        elif schema is not None and mode == "json_object":
            payload["response_format"] = {"type": "json_object"}
        return payload

    async def complete(
        self,
        system: str,
        user: str,
        *,
        schema: dict[str, Any] | None = None,
        sampling: Sampling | None = None,
    ) -> str:
        sampling = sampling or Sampling()
        if schema is None:
            return self._text(await self.post(self._payload(system, user, None, "text", sampling)))
        if self._mode is None:
            data = await self._settle(system, user, schema, sampling)
            if data is not None:
                return self._text(data)
        assert self._mode is not None
        return self._text(
            await self.post(self._payload(system, user, schema, self._mode, sampling))
        )

    async def _settle(
        self, system: str, user: str, schema: dict[str, Any], sampling: Sampling
    ) -> dict[str, Any] | None:
        """Find the first output mode the server takes; None if another call settled it first.

        The modes are tried back to back in one concurrency slot: a rejection is
        answered at once, nothing is waited out in it, and calls queued behind
        find the mode settled instead of probing it again. A rate limit or an
        outage is retried as usual, outside the slot; if the retries end in a
        rejection the next mode is tried.
        """
        i = 0
        while True:
            failed: JudgeError | None = None
            async with self._slot():
                while failed is None:
                    if self._mode is not None:
                        return None
                    mode = self._MODES[i]
                    payload = self._payload(system, user, schema, mode, sampling)
                    try:
                        data = await self._post_once(payload)
                    except JudgeError as exc:
                        if self._falls_back(exc, i):
                            i += 1
                        elif exc.retryable:
                            failed = exc
                        else:
                            raise
                    else:
                        self._mode = self._mode or mode
                        return data
            try:
                data = await self.post(payload, failed=failed)
            except JudgeError as exc:
                if not self._falls_back(exc, i):
                    raise
                i += 1
                continue
            self._mode = self._mode or mode
            return data

    def _falls_back(self, exc: JudgeError, i: int) -> bool:
        """Whether mode ``i`` was rejected and a next one is left (recorded if so)."""
        if exc.status not in _REJECTIONS or i + 1 == len(self._MODES):
            return False
        self.stats.fallbacks.append(f"{self._MODES[i]} -> {self._MODES[i + 1]} (HTTP {exc.status})")
        return True

    def _text(self, data: dict[str, Any]) -> str:
        usage = data.get("usage")
        self.stats.tokens_in += _tokens(usage, "prompt_tokens")
        self.stats.tokens_out += _tokens(usage, "completion_tokens")
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise self._fail(
                "the reply has no choices[0].message.content", hint="check the endpoint"
            ) from None
        if not isinstance(content, str):
            raise self._fail("the reply's message content is not text", hint="check the endpoint")
        return content


class AnthropicJudge(HTTPJudge):
    """The Anthropic messages API; structured output through a forced tool call."""

    provider = "anthropic"

    def _endpoint(self) -> str:
        base = self.spec.url
        return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": _ANTHROPIC_VERSION}
        if self.key:
            headers["x-api-key"] = self.key.reveal()
        return headers

    async def complete(
        self,
        system: str,
        user: str,
        *,
        schema: dict[str, Any] | None = None,
        sampling: Sampling | None = None,
    ) -> str:
        sampling = sampling or Sampling()  # the messages API takes no seed
        payload: dict[str, Any] = {
            "model": self.spec.model,
            "max_tokens": sampling.max_tokens,
            "temperature": sampling.temperature,
            "system": system,
            "messages": [{"role": "user", "content": user}],
        }
        if schema is not None:
            payload["tools"] = [
                {"name": "grade", "description": "Record the grade.", "input_schema": schema}
            ]
            payload["tool_choice"] = {"type": "tool", "name": "grade"}
        data = await self.post(payload)
        usage = data.get("usage")
        self.stats.tokens_in += _tokens(usage, "input_tokens")
        self.stats.tokens_out += _tokens(usage, "output_tokens")
        blocks = data.get("content")
        if not isinstance(blocks, list):
            raise self._fail("the reply has no content blocks", hint="check the endpoint")
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                try:
                    return json.dumps(block.get("input"))
                except (ValueError, RecursionError):  # nested too deep to write back
                    raise self._fail(
                        "the tool call's input cannot be read back as JSON",
                        hint="check the endpoint",
                    ) from None
        texts = [
            b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
        ]
        return "".join(t for t in texts if isinstance(t, str))


def make_judge(
    spec: JudgeSpec,
    *,
    environ: Mapping[str, str] | None = None,
    policy: RetryPolicy | None = None,
    stats: JudgeStats | None = None,
    require_key: bool = True,
) -> HTTPJudge:
    """The built-in judge for ``spec``, its key read from the environment only."""
    key = read_key(spec, environ, require_key=require_key)
    cls: type[HTTPJudge] = OpenAIJudge if spec.provider == "openai" else AnthropicJudge
    return cls(spec, key=key, policy=policy, stats=stats)


class LiveModel:
    """``--rubric-model``: the subject is a model, asked each case's question live.

    Called with a case like a ``target``; each call gets its own client and
    event loop, so it works from any thread.

    Its answers go through the judge cache like verdicts do (same modes):
    the key holds the provider, model, endpoint, both messages and the
    sampling parameters, so a committed cache replays a model's answers too.
    """

    SYSTEM = "Answer the question accurately and concisely."

    def __init__(
        self,
        spec: JudgeSpec,
        *,
        environ: Mapping[str, str] | None = None,
        policy: RetryPolicy | None = None,
        cache: JudgeCache | None = None,
        cache_mode: str = "use",
    ) -> None:
        self.spec = spec
        self._environ = environ
        self._policy = policy
        self.cache = None if cache_mode == "off" else cache
        self.cache_mode = cache_mode
        # Fail now on a missing key; replay makes no call, so it needs none.
        make_judge(spec, environ=environ, policy=policy, require_key=cache_mode != "replay")

    @property
    def subject(self) -> str:
        return self.spec.model

    def __call__(self, case: Any) -> str:
        question = case.question or ""
        sampling = Sampling()
        key = cache_key(
            kind="response",
            judge=self.spec.name,
            endpoint=self.spec.url,
            system=self.SYSTEM,
            user=question,
            sampling=sampling.as_dict(),
        )
        if self.cache is not None and self.cache_mode in ("use", "replay"):
            cached = self.cache.get(key)
            if cached is not None:
                return cached
        if self.cache_mode == "replay":
            raise JudgeError(
                f"--rubric-cache replay: no cached response of model {self.spec.name} for case "
                f"{getattr(case, 'id', '?')!r}; run once with --rubric-cache use to record it"
            )
        # What the model under test says is kept and reported: never with a key in it.
        text = redact(asyncio.run(self._ask(question, sampling)), *known_keys(self._environ))
        if self.cache is not None:
            self.cache.put(
                key,
                provider=self.spec.provider,
                model=self.spec.model,
                raw=text,
                parsed={"response": text},
            )
        return text

    async def _ask(self, question: str, sampling: Sampling) -> str:
        client = make_judge(self.spec, environ=self._environ, policy=self._policy)
        try:
            return await client.complete(self.SYSTEM, question, sampling=sampling)
        finally:
            await client.aclose()
