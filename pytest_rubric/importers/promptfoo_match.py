"""promptfoo's string checks as the patterns a person would write in a rubric file.

Each pattern is for a ``regex`` criterion, which matches the normalized answer
(accents, dashes, curly quotes and whitespace runs folded; casefolded unless
``case_sensitive``). So ``icontains: FRANCE`` is ``pattern: FRANCE`` with
``case_sensitive: false``, and ``contains: "30 days"`` is ``pattern: 30 days``
with ``case_sensitive: true``: as strict as promptfoo about wording and case,
forgiving about typography. A value or pattern whose meaning cannot be kept
raises :class:`Unmappable` with the reason.
"""

from __future__ import annotations

import re

__all__ = [
    "Unmappable",
    "all_pattern",
    "any_pattern",
    "js_regex",
    "levenshtein_pattern",
    "literal",
]

# What RE2 and Python's `regex` read as syntax outside a character class.
_META = frozenset("\\.^$|?*+()[]{}")
_SPACES = re.compile(r"\s+")


class Unmappable(ValueError):
    """No criterion keeps promptfoo's meaning; the message says why."""


def _char(ch: str) -> str:
    if ch in _META:
        return "\\" + ch
    if ch.isprintable():
        return ch
    return f"\\x{{{ord(ch):x}}}"


def literal(text: str) -> str:
    """A pattern matching ``text`` where the normalized answer holds it: metacharacters
    escaped, whitespace runs written as one space (the answer's are folded so)."""
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        raise Unmappable("the value holds a lone surrogate, which UTF-8 text cannot hold")
    folded = _SPACES.sub(" ", text)
    if not folded.strip():
        raise Unmappable("the value is only whitespace, which this plugin folds away")
    return "".join(_char(ch) for ch in folded)


def any_pattern(values: list[str]) -> str:
    """Some value occurs (``contains-any``, ``icontains-any``)."""
    return "|".join(literal(v) for v in values)


def all_pattern(values: list[str]) -> str:
    """Every value occurs, anywhere, overlaps allowed (``contains-all``): lookaheads, so the
    criterion needs ``engine: python``. The normalized answer is one line, so ``.`` reaches
    all of it."""
    return "".join(f"(?=.*{literal(v)})" for v in values)


def levenshtein_pattern(value: str, distance: int) -> str:
    """The whole answer within ``distance`` edits (insertions, deletions, substitutions) of
    ``value``: the ``regex`` package's fuzzy matching, so ``engine: python``."""
    return f"^(?:{literal(value)}){{e<={distance}}}$"


# --- JavaScript regex (no flags, as promptfoo builds it: `new RegExp(value)`) ---------------------

_JS_ONLY = (
    (re.compile(r"\[\^?\]"), "an empty class `[]` or `[^]`, which only JavaScript accepts"),
    (re.compile(r"(?<!\\)(?:\\\\)*\\c"), "a control escape `\\c`"),
    (
        re.compile(r"(?<!\\)(?:\\\\)*\\u\{"),
        "a `\\u{...}` escape (JavaScript reads it only with /u)",
    ),
)
_LINE_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\[nrtfv]")
_UNICODE_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u([0-9a-fA-F]{4})")


def js_regex(source: str) -> tuple[str, str]:
    """The pattern, as written where it means the same here, and the engine that runs it
    (``re2``, or ``python`` for lookaround and backreferences); else :class:`Unmappable`."""
    from .._guards.engines import PatternError
    from ..criteria.regex import compile_regex

    if not source:
        raise Unmappable("an empty regex is refused by promptfoo")
    for found, what in _JS_ONLY:
        if found.search(source):
            raise Unmappable(f"regex {source!r} uses {what}")
    if _LINE_ESCAPE.search(source) or "\n" in source or "\t" in source:
        raise Unmappable(
            f"regex {source!r} matches line breaks or tabs, which this plugin folds into "
            "single spaces before it matches"
        )
    # \uXXXX as the character itself, so that it is normalized as the answer is (é, –).
    pattern = _UNICODE_ESCAPE.sub(lambda m: m[1] + _char(chr(int(m[2], 16))), source)
    for engine in ("re2", "python"):
        try:
            compile_regex(pattern, case_sensitive=True, engine=engine)
        except PatternError:
            continue
        return pattern, engine
    raise Unmappable(f"regex {source!r} does not compile here (is it valid JavaScript?)")
