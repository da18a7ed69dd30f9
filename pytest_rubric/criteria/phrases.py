"""Phrase matching in normalized text, at word and number bounds.

Shared by the types that look for phrases: ``any_of``, ``all_of``,
``forbidden`` and ``metric``.
"""

from __future__ import annotations

from .normalize import normalize

# A phrase compiled for matching: (needle, text, must_start_word, must_end_number).
# Plain tuples of strings and bools, so the garbage collector stops tracking them.
CompiledPhrase = tuple[str, str, bool, bool]


def compile_phrase(text: str) -> CompiledPhrase:
    """Compile a phrase for :func:`found`.

    A phrase matches in normalized text at a word start: ``loss`` matches
    "losses" but not "gloss"; a phrase that starts or ends with a digit
    matches a whole number, so ``1%`` does not match "11%" or "0.1%" and
    ``99`` does not match "995". Matching is ``str.find`` plus a look at the
    neighbouring characters: no regex to compile per phrase.
    """
    needle = normalize(text)
    head, tail = needle[:1], needle[-1:]
    return needle, text, head.isascii() and head.isalnum(), tail.isdigit()


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


def compile_phrases(items: tuple[str, ...]) -> tuple[CompiledPhrase, ...]:
    return tuple(compile_phrase(p) for p in items)
