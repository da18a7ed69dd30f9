"""Text normalization (``"Café – 12 %"`` is ``"cafe - 12 %"``: NFKD without accents,
casefolded, dashes and quotes plain, whitespace runs one space), number parsing and phrase
matching shared by the deterministic checks.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator

# Every dash (Unicode's Pd, as NFKD and NFKC leave it) and minus sign to "-", curly quotes
# to straight ones: for answers here, and for the judge's quotes (judge.evidence).
PLAIN = {
    **dict.fromkeys(
        "\u058a\u05be\u1400\u1806\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2052\u2053\u2212\u02d7"
        "\u2796\u2e17\u2e1a\u2e3a\u2e3b\u2e40\u2e5d\u301c\u3030\u30a0\ufe58\ufe63\uff0d\U00010ead",
        "-",
    ),
    **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u201f\u2e42\u2033\u00ab\u00bb", '"'),
}
_TRANSLATE = str.maketrans(PLAIN)


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
    # str.split() splits at the characters the regex \s matches (str.isspace): each run of
    # whitespace one space, none at the ends, several times quicker than re.sub and strip.
    return " ".join(folded.split())


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
# and a scale word. The words alone ignore case: a pattern that ignores case throughout
# compares every character both ways, and the lookahead turns away at once the places no
# number starts; together they parse an answer's numbers 1.4 to 2 times quicker.
_NUMBER = re.compile(
    r"""
    (?=[(+\-$\u20ac\u00a3\u00a5\d])      # what a number starts with
    (?<![\w.])(?<!\d,)             # not the tail of a word or of another number
    (?P<open>\()?
    (?P<sign>[-+])?                 # attached to the digits: "- 3" is a list bullet
    (?:[$\u20ac\u00a3\u00a5]\s?(?P<sign2>-)?)?
    (?P<int>\d{1,3}(?:,\d{3})+(?!\d)|\d+)
    (?P<frac>\.\d+)?
    (?P<exp>(?i:e)[-+]?\d+)?
    (?P<close>\))?
    (?:\s?(?P<pct>%|(?i:percent)\b))?
    (?:\s?(?P<scale>(?i:thousand|million|billion|trillion|bn|k|m))\b)?
    """,
    re.VERBOSE,
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
        # The groups in one call: a lookup by name each was a third of the parse.
        opened, sign, sign2, digits, frac, exp, closed, pct, scale = match.groups()
        value = float(digits.replace(",", "") + (frac or "") + (exp or ""))
        if sign == "-" or sign2:
            value = -value
        if opened and closed:
            # Accounting parentheses mean a negative; "(3)" may also be a list
            # number, so the written value is offered too.
            yield -value
        yield value
        if pct:
            yield value / 100
        if scale:
            yield value * _SCALES[scale.lower()]


# A phrase compiled for matching: (needle, text, must_start_word, must_end_number).
# Plain tuples of strings and bools, so the garbage collector stops tracking them.
CompiledPhrase = tuple[str, str, bool, bool]


# Cached, phrase lists and phrases alike: cases repeat them (the same forbidden claims, the
# same words to find), and every compiled check stays alive to the end of the session.
@functools.lru_cache(maxsize=4096)
def compile_phrases(items: tuple[str, ...]) -> tuple[CompiledPhrase, ...]:
    """Compile phrases for :func:`found`: each matches at a word start (``loss`` matches
    "losses", not "gloss"), and one that starts or ends with a digit a whole number (``1%``
    matches neither "11%" nor "0.1%")."""
    return tuple(_compile_phrase(text) for text in items)


@functools.lru_cache(maxsize=4096)
def _compile_phrase(text: str) -> CompiledPhrase:
    needle = normalize(text)
    head, tail = needle[:1], needle[-1:]
    return (needle, text, head.isascii() and head.isalnum(), tail.isdigit())


def found(phrase: CompiledPhrase, folded: str) -> bool:
    needle, _, left, right = phrase
    at = folded.find(needle)
    if at < 0 or not (left or right):
        return at >= 0
    digit_head = needle[0].isdigit()
    while at >= 0:
        end = at + len(needle)
        if (not left or _starts_word(folded, at, digit_head)) and (
            not right or _ends_number(folded, end)
        ):
            return True
        at = folded.find(needle, at + 1)
    return False


def _starts_word(text: str, at: int, digit_head: bool) -> bool:
    if at == 0:
        return True
    before = text[at - 1]
    if before.isascii() and before.isalnum():
        return False
    # "0.1%" and "1,5" continue a number: a digit phrase may not start there.
    return not (digit_head and before in ".," and at >= 2 and text[at - 2].isdigit())


def _ends_number(text: str, end: int) -> bool:
    if end == len(text):
        return True
    after = text[end]
    if after.isdigit():
        return False
    return not (after in ".," and end + 1 < len(text) and text[end + 1].isdigit())
