"""``pad``: the same answer made twice as long with neutral :data:`PADDING`, for the length
probe: sentences that claim nothing and hold no digit, negation, tone marker or domain term,
so a verdict that changes in the answer's favour changed with length alone. An answer that
is JSON as a whole is not :func:`paddable`.
"""

from __future__ import annotations

import json

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

SEPARATOR = "\n\n"  # between the answer and its padding: a paragraph of its own


def paddable(text: str) -> bool:
    """Whether padding leaves the answer's structure alone: not for an empty or a JSON one."""
    stripped = text.strip()
    if not stripped:
        return False
    if stripped[0] not in "[{":
        return True
    try:
        json.loads(stripped)
    except (ValueError, RecursionError):
        return True
    return False


def pad(text: str) -> str:
    """``text`` followed by :data:`PADDING`, repeated until it is at least as long as ``text``."""
    if not text.strip():
        return text
    added: list[str] = []
    length = 0
    index = 0
    while length < len(text):
        sentence = PADDING[index % len(PADDING)]
        added.append(sentence)
        length += len(sentence) + 1
        index += 1
    return text + SEPARATOR + " ".join(added)
