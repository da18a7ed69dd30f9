"""The one boundary text passes on its way out of the process: :func:`outgoing`, what every
renderer and error path calls last, and its forms for a document, Markdown, a command's
streams and the plugin's warnings; and the names refused before they reach a test id.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import unicodedata
import warnings
from collections.abc import Iterator, Mapping
from typing import Any, TextIO

from .._errors import RubricWarning
from .secrets import (
    MAX_TEXT,
    Secret,
    clip,
    known_keys,
    public_url,
    redact,
    shorten,
    whole_characters,
)

# Terminal control: C0 but tab and newline, DEL, C1 (an escape sequence starts with one of
# these, so escaping its first character disarms all of it).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ESCAPED = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]}
# A URL is a scheme ([A-Za-z][A-Za-z0-9+.-]*), "://", then the rest: up to a space, a quote,
# a control character or the next "http://" (and the like), since a URL pasted right after
# another is a URL of its own. The scheme is read by hand (_url_spans): a regex tries every
# start inside a run of letters, which is quadratic (a 320 KB answer took 99 s).
_SCHEME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_URL_REST = re.compile(r"(?:(?!(?i:https?|wss?|ftp)://)[^\s<>\"'`\x00-\x1f\x7f-\x9f])+")
_UNSAFE_URL = re.compile(r"^[^/]*//[^/?#]*@|[?#]")


def outgoing(text: str, *secrets: Secret | None) -> str:
    """``text`` fit to leave the process: redacted of ``secrets`` and of the providers' keys
    in the environment, its URLs public, control characters escaped, surrogates replaced."""
    return _outgoing(text, (*secrets, *known_keys()))


def as_written(text: str) -> str:
    r"""A user's phrase or pattern in quotes, as they wrote it: ``'^3\.2$'``, not ``repr``'s
    ``'^3\\.2$'``. Text that a quote or a control character would make ambiguous is
    shown as ``repr`` shows it."""
    if text.isprintable():
        if "'" not in text:
            return f"'{text}'"
        if '"' not in text:
            return f'"{text}"'
    return repr(text)


def outgoing_strings(*secrets: Secret | None) -> Mapping[str, str]:
    """:func:`outgoing` for the strings of one document, as ``fit[text]``: the environment's
    keys read once, and each distinct string made fit once (a document repeats its keys and
    short values: "name", "ok", a tool's name once per tool call of a trace)."""
    return _Fit((*secrets, *known_keys()))


class _Fit(dict[str, str]):
    __slots__ = ("_keys",)

    def __init__(self, keys: tuple[Secret | None, ...]) -> None:
        super().__init__()
        self._keys = keys

    def __missing__(self, text: str) -> str:
        found = self[text] = _outgoing(text, self._keys)
        return found


def outgoing_data(value: Any, *secrets: Secret | None) -> Any:
    """``value`` (a JSON-like document) with :func:`outgoing` applied to every string, keys
    of mappings included."""
    fit = outgoing_strings(*secrets)

    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            return fit[value]
        if isinstance(value, dict):
            return {fit[k] if isinstance(k, str) else k: scrub(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [scrub(v) for v in value]
        return value

    return scrub(value)


# What the boundary changes besides keys and URLs: a control character, a lone surrogate.
_CHANGED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _outgoing(text: str, keys: tuple[Secret | None, ...]) -> str:
    """Every step linear in the text: an answer of a megabyte passes in well under a second,
    whatever its shape (bench/bench_outgoing.py)."""
    if "://" not in text and _CHANGED.search(text) is None:  # most text (no mask adds one)
        return redact(text, *keys) if keys else text
    text = redact(whole_characters(text), *keys)
    if "://" in text:
        text = _public_urls(text)
    if _CONTROL.search(text):
        text = text.translate(_ESCAPED)
    return text


def _url_spans(text: str) -> Iterator[tuple[int, int]]:
    """The ``[start, end)`` of each URL in ``text``, left to right, none overlapping; each
    character is read once (scheme by hand, the rest one match), so the whole is linear."""
    done = 0
    colon = text.find("://")
    while colon >= 0:
        start = colon
        while start > done and text[start - 1] in _SCHEME:
            start -= 1
        while start < colon and not text[start].isalpha():  # "1http://": the scheme is "http"
            start += 1
        rest = _URL_REST.match(text, colon + 3) if start < colon else None
        if rest is None:  # no scheme, or nothing after the "://"
            colon = text.find("://", colon + 1)
            continue
        yield start, rest.end()
        done = rest.end()
        colon = text.find("://", done)


def _public_urls(text: str) -> str:
    parts: list[str] = []
    written = 0
    for start, end in _url_spans(text):
        parts += [text[written:start], _public(text[start:end])]
        written = end
    parts.append(text[written:])  # all of it when no URL was found
    return "".join(parts)


def _public(url: str) -> str:
    scheme, _, rest = url.partition("://")
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if "@" not in authority and ":" in authority and authority.endswith("…"):
        # "user:token" with its "@host" cut off (a text cut short, "…"): the host is gone, and
        # what is left may be the credential. Uncut, only what precedes an "@" is userinfo:
        # "https://api.anthropic.com: failed" keeps its host.
        url = f"{scheme}://***{rest[len(authority) :]}"
    return public_url(url) if _UNSAFE_URL.search(url) else url


# GitHub notifies @name and @org/team, links #123 to an issue and mails an address: a
# zero-width space after the sigil keeps the text and drops the link.
_MENTION = re.compile(r"(?<![\w`])([@#])(?=[A-Za-z0-9])|(?<=[\w.+-])@(?=[A-Za-z0-9-]+\.)")


def inert_mentions(text: str) -> str:
    """Markdown ``text`` in which no ``@name``, ``@org/team``, ``#123`` or e-mail address
    links or notifies anyone."""
    return _MENTION.sub(lambda m: (m.group(1) or "@") + "\u200b", text)


# --- the command line's output ------------------------------------------------------------------


class _Outgoing(io.TextIOBase):
    """A text stream that writes to ``stream`` through :func:`outgoing`, a line at a time (a
    key that one ``print`` writes in pieces is whole when it is redacted)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._pending: list[str] = []

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        # Never: a library that colours its output for a terminal (argparse does, from Python
        # 3.14) would have its escapes shown as text, as every escape here is.
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._stream.encoding

    def write(self, text: str) -> int:
        head, newline, tail = text.rpartition("\n")
        if not newline:
            self._pending.append(text)
            return len(text)
        lines = "".join([*self._pending, head])
        self._pending = [tail] if tail else []
        self._stream.write(outgoing(lines) + "\n")
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._stream.write(outgoing("".join(self._pending)))
            self._pending = []
        self._stream.flush()


@contextlib.contextmanager
def outgoing_streams() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` through :func:`outgoing` while the context lasts."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Outgoing(saved[0]), _Outgoing(saved[1])
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed pipe: nothing more to say
                stream.flush()
        sys.stdout, sys.stderr = saved


# --- the plugin's warnings ----------------------------------------------------------------------

# Where a warning says it comes from: no file (linecache never reads a name in angle
# brackets), so pytest's summary echoes no line under it.
_NO_FILE = "<pytest-rubric>"
# How much of a location (a user's path and line) a warning shows.
_WHERE = 300


def rubric_warning(message: str, *, where: str | None = None) -> RubricWarning:
    """A :class:`~pytest_rubric.RubricWarning` saying ``message``, its location ``where`` (a
    user's file and line) first: cut, then made fit to leave the process."""
    # Made fit first, then cut: a cut must not leave a piece of a key redaction would miss.
    text = outgoing(message)
    if where is not None:
        text = f"{shorten(outgoing(where), _WHERE)}: {text}"
    return RubricWarning(clip(text, limit=MAX_TEXT))


def warn(message: str, *, where: str | None = None) -> None:
    """Issue :func:`rubric_warning`, attributed to no file, so pytest's summary echoes no line
    of the file a warning is about."""
    warning = rubric_warning(message, where=where)
    warnings.warn_explicit(warning, type(warning), filename=_NO_FILE, lineno=0)


# --- names that go into test ids: subjects, case and criterion ids ------------------------------

# Characters that would break a test id (`path::case[subject]`), or a line of
# the summary table: "::" and brackets, line breaks and other control or
# format characters (a right-to-left override would reorder the table).
_BREAKS_IDS = re.compile(r"::|[\[\]]")
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def subject_problem(name: str) -> str | None:
    """Why ``name`` cannot name a subject (or be a case's or criterion's id), which goes into
    test ids and tables; None if it can."""
    if not name.strip():
        return "it is empty"
    if _BREAKS_IDS.search(name):
        return "'::', '[' and ']' break test ids"
    # What str.isprintable() passes holds none of them: most names are checked no further.
    if not name.isprintable() and any(unicodedata.category(ch) in _INVISIBLE for ch in name):
        return "a line break or another control character breaks test ids and the summary table"
    return None


def safe_subject(name: str) -> str:
    """``name`` with what :func:`subject_problem` refuses replaced by '_'."""
    name = _BREAKS_IDS.sub("_", name)
    name = "".join("_" if unicodedata.category(ch) in _INVISIBLE else ch for ch in name)
    return name.strip() or "subject"
