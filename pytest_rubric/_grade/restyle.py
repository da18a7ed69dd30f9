"""The judge's probes rewrite an answer's style, never what it says. :func:`restyle`: the same
answer in another tone, for the tone probe, built on the style heuristics' markers
(:mod:`pytest_rubric._grade.style`), so the probe changes exactly what ``confidence``
measures; every other word stays, and rewriting twice is rewriting once. :func:`pad`: the
same answer made twice as long with neutral :data:`PADDING`, for the length probe:
sentences that claim nothing and hold no digit, negation, tone marker or domain term, so a
verdict that changes in the answer's favour changed with length alone. An answer that is
JSON as a whole is not :func:`paddable`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Literal

from ..criteria.json_text import json_integer
from .style import ASSERTIVE, HEDGES

OPENING = "Without question: "

# What each marker becomes in the other tone (markers kept as they are left out).
_TO_CONFIDENT = {marker: new for marker, new in HEDGES.items() if new != marker}
_TO_HEDGED = {marker: new for marker, new in ASSERTIVE.items() if new != marker}


def _pattern(markers: Mapping[str, str]) -> re.Pattern[str]:
    # The style heuristics' boundaries, on the raw text: any case, either apostrophe. A
    # removed marker takes the spaces before it, and one comma after it, along.
    alternatives = sorted(markers, key=len, reverse=True)
    body = "|".join(re.escape(m).replace("'", "['’]") for m in alternatives)
    return re.compile(
        r"(?P<pre>[ \t]*)(?<![\w'’])(?P<m>" + body + r")(?![\w'’])(?P<comma>,?)", re.IGNORECASE
    )


_CONFIDENT = _pattern(_TO_CONFIDENT)
_HEDGED = _pattern(_TO_HEDGED)
_APOSTROPHE = re.compile(r"['’]")
_SENTENCE_ENDS = (".", "!", "?", ":", "\n")
_ANY_WORD = re.compile(r"\w")
_OPENED = re.compile(re.escape(OPENING[:-2]) + r"(?!\w)", re.IGNORECASE)
_HEDGE_ALONE = re.compile(r"[.!?]+[ \t]*")  # what ends a sentence that was only a marker


def _rewrite(text: str, pattern: re.Pattern[str], table: Mapping[str, str]) -> str:
    out: list[str] = []
    last = 0
    capitalize = False  # a marker that opened a sentence was removed: its next word opens it
    for match in pattern.finditer(text):
        out.append(_opened(text[last : match.start()], capitalize))
        last = match.end()
        found = match["m"]
        before = "".join(out)
        opens = not before.strip() or before.rstrip().endswith(_SENTENCE_ENDS)
        capitalize = False
        key = _APOSTROPHE.sub("'", found).casefold()
        if found[:1].isupper() and not opens and not key.startswith(("i ", "i'")):
            # "May" inside a sentence is a month or a name, not a hedge ("I think" is one).
            out.append(match.group())
            continue
        # The space before a marker is kept once, and the text's own indent: "I think
        # perhaps it" loses both markers and the space between them.
        spaced = match.start() == 0 or before[-1:] not in ("", " ", "\t")
        pre = match["pre"] if spaced else ""
        if not (new := table[key]):
            out.append(pre if opens else "")
            capitalize = opens
            if opens and (alone := _HEDGE_ALONE.match(text, last)):  # "Maybe." goes whole
                last = alone.end()
                continue
            if not opens and text[last : last + 1] in (".", "!", "?") and out[-2].endswith(","):
                out[-2] = out[-2][:-1]  # "One day, I think." -> "One day.", not "One day,."
            continue
        if found[:1].isupper():
            new = new[:1].upper() + new[1:]
        out.append(pre + new + match["comma"])
    out.append(_opened(text[last:], capitalize))
    return "".join(out)


def _opened(segment: str, capitalize: bool) -> str:
    """``segment`` as the start of a sentence when ``capitalize``."""
    if not capitalize:
        return segment
    segment = segment.lstrip(" \t")
    return segment[:1].upper() + segment[1:]


def restyle(text: str, *, to: Literal["confident", "hedged"]) -> str:
    """``text`` in the tone ``to``, every word that is not a tone marker unchanged."""
    if to == "confident":
        body = _rewrite(text, _CONFIDENT, _TO_CONFIDENT)
        lead = len(body) - len(body.lstrip())
        if not _ANY_WORD.search(body):  # only markers ("Maybe."): nothing to say surely
            return text
        # An opening of its own, in any case or punctuation, is not said twice.
        if _OPENED.match(body, lead):
            return body
        return body[:lead] + OPENING + body[lead:]
    if to == "hedged":
        return _rewrite(text, _HEDGED, _TO_HEDGED)
    raise ValueError(f"restyle: to={to!r}; use one of confident, hedged")


PADDING: tuple[str, ...] = (
    "This sentence is padding.",
    "It was added to make the text longer.",
    "It leaves the answer above as it was.",
    "Read the answer above for its content.",
    "The sentences that follow are padding as well.",
    "Padding of this kind is only filler.",
    "It is here for length alone.",
    "The layout of this text is plain.",
)


def paddable(text: str) -> bool:
    """Whether padding leaves the answer's structure alone: not for an empty or a JSON one."""
    if not (stripped := text.strip()):
        return False
    if stripped[0] not in "[{":
        return True
    try:
        json.loads(stripped, parse_int=json_integer)
    except (ValueError, RecursionError):
        return True
    return False


def pad(text: str) -> str:
    """``text`` followed by :data:`PADDING`, repeated until it is at least as long as ``text``."""
    if not text.strip():
        return text
    added: list[str] = []
    length = 0
    while length < len(text):
        sentence = PADDING[len(added) % len(PADDING)]
        added.append(sentence)
        length += len(sentence) + 1
    return text + "\n\n" + " ".join(added)  # the padding: a paragraph of its own
