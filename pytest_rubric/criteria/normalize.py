"""Text normalization and number parsing shared by every deterministic check.

Normalization is what makes ``"Café – 12 %"`` and ``"cafe - 12 %"`` the same
answer for phrase, regex and fuzzy matching: Unicode NFKD with accents
removed, casefolded, every dash and minus sign to ``-``, curly quotes to
straight ones, whitespace runs to a single space.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

# Every dash and minus sign Unicode has in common use to "-", curly quotes to straight ones.
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\u2e3a\u2e3b\ufe58\ufe63\uff0d"
_TRANSLATE = str.maketrans(
    {
        **dict.fromkeys(_DASHES, "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb", '"'),
    }
)
_WHITESPACE = re.compile(r"\s+")


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    if decomposed.isascii():
        return decomposed
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).translate(_TRANSLATE)


def normalize(text: str, *, casefold: bool = True) -> str:
    """``text`` as every phrase, regex and fuzzy check compares it (``casefold=False``: its
    case kept, for ``case_sensitive`` regex criteria)."""
    folded = _fold(text)
    if casefold:
        folded = folded.casefold()
    return _WHITESPACE.sub(" ", folded).strip()


def normalize_pattern(pattern: str, *, casefold: bool = True) -> str:
    """The literal characters of a regex pattern normalized like answer text (``é`` and ``–``
    folded). ASCII is left alone (casefolding would turn ``\\W`` into ``\\w``; the regex flag
    ignores case), but with ``casefold`` a non-ASCII letter is casefolded: ``ß`` is ``ss``."""
    folded = _fold(pattern)
    if casefold and not folded.isascii():
        folded = "".join(ch if ch.isascii() else ch.casefold() for ch in folded)
    return folded


# A number as people write it in answers: optional accounting parentheses,
# sign, currency symbol, thousands separators, decimals, exponent, percent
# and a scale word.
_NUMBER = re.compile(
    r"""
    (?<![\w.])(?<!\d,)             # not the tail of a word or of another number
    (?P<open>\()?
    (?P<sign>[-+])?                 # attached to the digits: "- 3" is a list bullet
    (?:[$\u20ac\u00a3\u00a5]\s?(?P<sign2>-)?)?
    (?P<int>\d{1,3}(?:,\d{3})+(?!\d)|\d+)
    (?P<frac>\.\d+)?
    (?P<exp>e[-+]?\d+)?
    (?P<close>\))?
    (?:\s?(?P<pct>%|percent\b))?
    (?:\s?(?P<scale>thousand|million|billion|trillion|bn|k|m)\b)?
    """,
    re.VERBOSE | re.IGNORECASE,
)
_SCALES = {
    "thousand": 1e3,
    "k": 1e3,
    "million": 1e6,
    "m": 1e6,
    "billion": 1e9,
    "bn": 1e9,
    "trillion": 1e12,
}


def parse_numbers(text: str) -> Iterator[float]:
    """Every number written in ``text``, in order: ``$1,157.63``, ``−3.5``, ``1.2e3``, ``(4.5)``
    (accounting: -4.5 and 4.5). ``12%`` gives 12 and 0.12, ``1 million`` 1 and 1000000, so a
    rubric may state the target either way."""
    for match in _NUMBER.finditer(_fold(text)):
        digits = match["int"].replace(",", "") + (match["frac"] or "") + (match["exp"] or "")
        value = float(digits)
        if match["sign"] == "-" or match["sign2"]:
            value = -value
        if match["open"] and match["close"]:
            # Accounting parentheses mean a negative; "(3)" may also be a list
            # number, so the written value is offered too.
            yield -value
        yield value
        if match["pct"]:
            yield value / 100
        if match["scale"]:
            yield value * _SCALES[match["scale"].lower()]
