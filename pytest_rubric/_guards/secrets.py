"""API keys held so that they cannot leak into output, reports, caches or exception text:
a run of 12 or more characters of a key is masked too (a key cut by someone's ``[:200]`` is
still a key), and text is redacted *before* it is cut.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from .._defaults import PROVIDERS

_MASK = "***"
# A run of a key this long is treated as the key: shorter runs are common
# substrings ("sk-proj-", "-api03-") that say nothing about the key.
FRAGMENT = 12
# Every run of FRAGMENT characters of a key contains, aligned with the key, one
# of the key's pieces key[0:6], key[6:12], ...: those are what the text is searched for.
_ANCHOR = FRAGMENT // 2
# Text copied into a result (a reason, a repr, a reply) keeps this many characters.
MAX_TEXT = 2_000
# Keys shorter than this are not masked at all: "***" for "ab" would mask prose.
_MIN_KEY = 4


class Secret:
    """A key from the environment. Its ``repr`` and ``str`` never show the value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The value, for the one place that sends it: an HTTP header."""
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __reduce__(self) -> tuple[object, ...]:  # never pickled with its value (xdist, caches)
        raise TypeError("a Secret cannot be pickled")


def redact(text: str, *secrets: Secret | None) -> str:
    """``text`` with every secret's value replaced by ``***``, in whatever letter case; for a
    key of 12 characters or more every run of 12 or more of its characters too (one ``***``
    per run). Keys of 4 to 11 characters are replaced only whole. A key written with JSON
    escapes (``sk-\u0031...``, a judge's reply kept as its text in the recordings and the
    cache) is a key: where one is found only so, those escapes are written as the characters
    they stand for, which JSON reads the same, and the key masked."""
    keys = [_caseless(s.reveal()) for s in secrets if s is not None and len(s.reveal()) >= _MIN_KEY]
    if not keys:
        return text
    masked = _redacted(text, keys)
    if (
        "\\u" in text
        and (unescaped := _ESCAPE.sub(_unescaped, text)) != text
        and (found := _redacted(unescaped, keys)) != unescaped
    ):
        return found
    return masked


# A JSON escape of a printable ASCII character other than a quote or a backslash, which may
# be written in its place: "\\u0031" (an escaped backslash, then text) is left as it is.
# A match starts only where a run of backslashes starts: tried from inside the run, the
# pattern would rescan the rest of it at each backslash, quadratic in the run's length.
_ESCAPE = re.compile(r"(?<!\\)(\\+)u(00[2-7][0-9a-fA-F])")


def _unescaped(match: re.Match[str]) -> str:
    slashes, code = match[1], chr(int(match[2], 16))
    if len(slashes) % 2 == 0 or code in '"\\\x7f':
        return match[0]
    return slashes[:-1] + code


def _redacted(text: str, keys: list[str]) -> str:
    long_keys = [k for k in keys if len(k) >= FRAGMENT]
    short_keys = [k for k in keys if len(k) < FRAGMENT]
    # A key that contains "*" could re-form around a mask; only then is a second
    # pass needed, and each pass shortens the text, so the loop ends.
    again = any("*" in k for k in keys)
    while True:
        before = text
        caseless = _caseless(text)  # one character for one: its spans are the text's
        spans = [span for key in long_keys for span in _runs(caseless, key)]
        spans += [m.span() for key in short_keys for m in re.finditer(re.escape(key), caseless)]
        if spans:
            text = _masked(text, spans)
        if not again or text == before:
            return text


def _caseless(text: str) -> str:
    """``text`` lower-cased one character for one, so that a span of it is one of ``text``."""
    lowered = text.lower()
    if len(lowered) == len(text):  # lower() only ever lengthens: then nothing did
        return lowered
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def clip(text: str, *secrets: Secret | None, limit: int = MAX_TEXT) -> str:
    """``text`` redacted of ``secrets``, then cut to ``limit`` characters with a count of the
    rest; a lone surrogate becomes U+FFFD, so a result travels between xdist processes."""
    text = whole_characters(redact(text, *secrets))
    if len(text) <= limit:
        return text
    hidden = 0
    # A stored answer, cut at MAX_TEXT before: what that cut hid is counted on.
    if (cut := _CLIPPED.match(text, MAX_TEXT)) is not None:
        text, hidden = text[:MAX_TEXT], int(cut.group(1).replace(",", ""))
    return f"{text[:limit]}… [{max(len(text) - limit, 0) + hidden:,} more characters]"


_CLIPPED = re.compile(r"… \[([1-9][0-9]{0,2}(?:,[0-9]{3}){0,4}) more characters\]\Z")


_SURROGATE = re.compile("[\ud800-\udfff]")


def whole_characters(text: str) -> str:
    """``text`` with every lone surrogate (half an emoji, which UTF-8 cannot write) replaced
    by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def shorten(text: str, limit: int, *secrets: Secret | None) -> str:
    """``text`` redacted of ``secrets``, then cut to at most ``limit`` characters, the last
    one "…" when it was cut: a value quoted in a one-line message or a table cell. A cut leaves
    runs of a key too short for the outputs' boundary to mask: text cut is redacted of the
    environment's keys as well."""
    text = redact(text, *secrets, *known_keys()) if len(text) > limit else redact(text, *secrets)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def abridged(text: str) -> str:
    """``text`` cut to 60 characters, "..." its last three, as a located message quotes a
    value; redacted of the environment's keys before the cut, as :func:`shorten` is."""
    return text if len(text) <= 60 else redact(text, *known_keys())[:57] + "..."


# RFC 3986's split (as urllib's and httpx's): scheme, then "//" and the authority up to the
# first "/", "?" or "#", then the path up to the query or fragment. Every part may be
# missing, so it matches any text, from its start.
_URL = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*:)?(?://(?P<authority>[^/?#]*))?(?P<path>[^?#]*)"
)


def public_url(url: str) -> str:
    """``url`` without userinfo (``user:token@``), query string (``?api-key=...``) or
    fragment, which may hold a credential: the one place an endpoint is made fit to show."""
    match = _URL.match(url)
    assert match is not None  # every part is optional
    authority = match["authority"]
    host = "" if authority is None else "//" + authority.rpartition("@")[2]
    return f"{match['scheme'] or ''}{host}{match['path']}"


def _runs(text: str, key: str) -> list[tuple[int, int]]:
    """The spans of ``text`` that are runs of ``FRAGMENT`` or more characters of ``key``:
    ``len(key) / 6`` searches at C speed, each hit extended along the key, a hit inside a run
    already found at its alignment skipped, so copies of the key stay linear."""
    spans: list[tuple[int, int]] = []
    reached: dict[int, int] = {}  # alignment (text index - key index) -> end of its last run
    n, k = len(text), len(key)
    for j in range(0, k - _ANCHOR + 1, _ANCHOR):
        anchor = key[j : j + _ANCHOR]
        t = text.find(anchor)
        while t >= 0:
            shift = t - j
            if reached.get(shift, -1) < t + _ANCHOR:
                start, end = t, t + _ANCHOR
                while start > 0 and start - shift > 0 and text[start - 1] == key[start - 1 - shift]:
                    start -= 1
                while end < n and end - shift < k and text[end] == key[end - shift]:
                    end += 1
                reached[shift] = end
                if end - start >= FRAGMENT:
                    spans.append((start, end))
            t = text.find(anchor, t + 1)
    return spans


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each union of overlapping or touching ``spans`` replaced by one mask."""
    spans.sort()
    parts: list[str] = []
    done = 0  # end of the last mask written
    start, end = spans[0]
    for s, e in spans[1:]:
        if s <= end:
            end = max(end, e)
            continue
        parts += [text[done:start], _MASK]
        done = end
        start, end = s, e
    parts += [text[done:start], _MASK, text[end:]]
    return "".join(parts)


# The variables a provider's key is read from (one per provider of the table in _defaults):
# every output is redacted of their values.
KEY_VARIABLES = tuple(provider.key_variable for provider in PROVIDERS.values())


def known_keys(environ: Mapping[str, str] | None = None) -> list[Secret]:
    """The providers' API keys set in the environment: what every output is redacted of."""
    environ = os.environ if environ is None else environ
    return [Secret(environ[v]) for v in KEY_VARIABLES if environ.get(v)]
