"""What a provider's HTTP response is trusted for: its body read up to a cap, its token
counts, its ``Retry-After``, and its error message with a hint of what to try.

Nothing a server sends is taken on faith: a body stops being read once it passes
:data:`MAX_REPLY_BYTES`, and a count or a delay that is not a plausible number is not
converted. :class:`~pytest_rubric._llm.http.HTTPClient` uses these on every reply.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from .._guards.secrets import public_url

if TYPE_CHECKING:
    import httpx

__all__ = [
    "HINTS",
    "MAX_REPLY_BYTES",
    "error_text",
    "read_capped",
    "redirect_target",
    "retry_delay",
    "token_count",
]

MAX_REPLY_BYTES = 1024 * 1024
"""The largest reply body read (1 MiB): a grade is a few hundred bytes, so a
bigger body is refused as soon as it passes this, never buffered whole."""

# A token count above this is not a count (no call reads a billion tokens).
_MAX_TOKENS = 10**9


def retry_delay(response: httpx.Response) -> float | None:
    """The seconds a 429's ``Retry-After`` asks for, or None (absent, or an HTTP date)."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def token_count(usage: object, name: str) -> int:
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
    """The body's ``Content-Length``, or None when it does not declare a plausible one."""
    value = response.headers.get("content-length", "")
    # Bounded before int(): a 5,000-digit length would raise instead of being refused.
    return int(value) if value.isdigit() and len(value) <= 18 else None


async def read_capped(response: httpx.Response) -> bytes | None:
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
        data = json.loads(text)
        if isinstance(data, dict):
            error = data.get("error", data)
            if isinstance(error, dict):
                error = error.get("message") or error
            return str(error)
        return str(data)
    except (ValueError, RecursionError):  # str() of a deep structure recurses too
        return text or reason


def redirect_target(response: httpx.Response, quote: Callable[[str], str]) -> str:
    """Where a 3xx pointed, said and never followed (its body is not the judge's reply,
    however much it looks like one); ``quote`` cuts and redacts the address."""
    location = response.headers.get("location")
    if not location:
        return "a redirect without a Location"
    return f"redirected to {quote(public_url(location))!r}"
