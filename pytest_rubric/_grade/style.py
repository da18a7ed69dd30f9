"""Style heuristics: how an answer reads, measured so that it can be kept out of the score.
``fluency`` and ``confidence`` are in [0, 1]; docs/explanation/style.md gives their
formulas and the flags' rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The tone markers, each with what the tone probe's rewrite (``_grade.restyle``) makes of it
# in the other tone: an assertive marker's hedged form, a hedge's confident form ("" removes
# it). A marker that may carry substance (a quantity, a negation, a condition) is its own
# form: never rewritten.
ASSERTIVE: dict[str, str] = {
    "absolutely": "perhaps",
    "always": "usually",
    "certainly": "probably",
    "clearly": "perhaps",
    "definitely": "probably",
    "exactly": "roughly",
    "guaranteed": "likely",
    "guarantees": "suggests",
    "indisputably": "arguably",
    "obviously": "apparently",
    "of course": "perhaps",
    "precisely": "approximately",
    "simply": "perhaps",
    "surely": "probably",
    "undoubtedly": "probably",
    "unquestionably": "arguably",
    "without doubt": "perhaps",
    "without question": "perhaps",
    "never": "never",
    "must": "should probably",
    "100%": "100%",
}
HEDGES: dict[str, str] = {
    "apparently": "",
    "approximately": "",
    "arguably": "",
    "as far as i know": "",
    "could": "can",
    "i believe": "",
    "i guess": "",
    "i think": "",
    "i'm not sure": "",
    "i am not sure": "",
    "i'm not certain": "",
    "it depends": "it depends",
    "likely": "",
    "may": "will",
    "maybe": "",
    "might": "will",
    "not sure": "not sure",  # "is not sure to be 5": its negation is what it says
    "perhaps": "",
    "possibly": "",
    "presumably": "",
    "probably": "",
    "roughly": "",
    "seems": "is",
    "somewhat": "",
    "suggests": "shows",
    "unclear": "unclear",  # "clear" would say the opposite
    "unsure": "",
    "if i recall": "",
    "i suppose": "",
}


def _marker_regex(words: dict[str, str]) -> re.Pattern[str]:
    alternatives = sorted((re.escape(w) for w in words), key=len, reverse=True)
    return re.compile(r"(?<![\w'])(?:" + "|".join(alternatives) + r")(?![\w'])")


_ASSERTIVE = _marker_regex(ASSERTIVE)
_HEDGES = _marker_regex(HEDGES)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[\w'’-]+")
_ENDS_WELL = (".", "!", "?", ")", '"', "'", "”", "’", "`")


def style_text(text: str, pointer: str | None = None) -> str:
    """What fluency and confidence are measured on: the answer, or a JSON object's string
    values (at ``pointer``, ``style_field``, when it names one), one a line."""
    if not text.lstrip().startswith("{"):
        return text
    from ..criteria.json_text import MISSING, NestedTooDeeply, leaves, parse_whole, resolve_pointer

    try:
        document, problem = parse_whole(text)
    except NestedTooDeeply:
        return text
    if problem is not None:  # else an object: the text starts with "{"
        return text
    if pointer is not None:
        found = resolve_pointer(document, pointer)
        document = document if found is MISSING else found
    return "\n".join(leaf for leaf in leaves(document) if isinstance(leaf, str))


def fluency(text: str) -> float:
    """How well-formed an answer reads: the mean of length, shape, punctuation and variety."""
    if not (words := _WORD.findall(text)):
        return 0.0
    length = min(len(words) / 40, 1.0)
    sentences = [p for p in _SENTENCE_END.split(text.strip()) if p]
    mean_len = len(words) / max(len(sentences), 1)
    if mean_len < 8:
        shape = mean_len / 8
    elif mean_len <= 30:
        shape = 1.0
    else:
        shape = max(0.0, (60 - mean_len) / 30)
    well_formed = sum(
        1
        for p in sentences
        if (p[0].isupper() or p[0].isdigit()) and p.rstrip().endswith(_ENDS_WELL)
    )
    punctuation = well_formed / len(sentences) if sentences else 0.0
    head = words[:100]
    variety = len(set(map(str.casefold, head))) / len(head)
    return (length + shape + punctuation + variety) / 4


def confidence(folded: str) -> float:
    """How assertive an answer sounds, in [0, 1]; ``folded`` is the normalized answer."""
    assertive = len(_ASSERTIVE.findall(folded))
    hedges = len(_HEDGES.findall(folded)) + folded.count("?")
    return min(1.0, max(0.0, 0.5 + 0.5 * (assertive - hedges) / max(assertive + hedges, 2)))


def naive_score(score: float, fluency_: float, confidence_: float) -> float:
    """Mean of correctness, fluency and confidence: what a style-weighted rubric gives."""
    return (score + fluency_ + confidence_) / 3


@dataclass(frozen=True, slots=True)
class StyleThresholds:
    """Where the style flags switch on (ini ``rubric_confident_threshold`` etc.)."""

    confident: float = 0.7
    hedged: float = 0.35
    low_score: float = 0.5
    high_score: float = 0.8


def flags(
    *,
    score: float | None,
    confidence_: float,
    wrong_claim: bool,
    thresholds: StyleThresholds,
    unbacked_claim: bool = False,
) -> list[str]:
    """The style flags of one answer, in a fixed order; ``score`` None when it is not known
    (a substance criterion could not be evaluated: a failed judge says nothing of the
    answer). An answer that claims an action its trace does not show is confidently wrong
    unless it hedges: stating "your refund has been issued" plainly is already asserting it."""
    assertive = confidence_ >= thresholds.confident
    low = score is not None and score < thresholds.low_score
    high = score is not None and score >= thresholds.high_score
    found = {
        "confidently_wrong": (assertive and low)
        or (unbacked_claim and confidence_ > thresholds.hedged),
        "hedged_but_right": confidence_ <= thresholds.hedged and high,
        "known_wrong_claim": wrong_claim,
        "unbacked_claim": unbacked_claim,
    }
    return [flag for flag, on in found.items() if on]
