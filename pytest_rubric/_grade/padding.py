"""``pad``: the same answer made twice as long with neutral padding, for the length probe.

The judge's length probe (``--rubric-judge-probe-kinds length``) judges an answer again
with :data:`PADDING` appended: sentences that restate nothing of the answer and claim
nothing about its subject, only that they are filler. A verdict that then changes in the
answer's favour changed with length alone. The sentences hold no digit, no negation, no
tone marker (no hedge, nothing assertive: the style heuristics and the tone probe's word
lists see none) and no term of any domain, so a deterministic criterion gives the same
verdict on the padded answer as on the answer (``tests/judge/test_probe_kinds.py`` checks this
on every criterion of the bundled examples).

``pad`` is a pure function of its input: the sentences are taken in order, from the first,
until the padding is at least as long as the answer; an empty answer stays empty.

Two things padding cannot leave alone, so the probe leaves them out:

* an answer that is JSON as a whole (:func:`paddable` is false): prose after it would make
  it invalid, and a ``json`` criterion's verdict would change with the answer, not the
  judge; the length probe does not judge such an answer again;
* a ``length`` criterion (``max_words``, ``max_chars``) counts what padding adds; it is
  deterministic, so the probe, which judges only judged criteria again, never asks it.
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
"""The padding sentences, in the order they are appended (then again from the first)."""

SEPARATOR = "\n\n"  # between the answer and its padding: a paragraph of its own


def paddable(text: str) -> bool:
    """Whether padding leaves the answer's structure alone: false for an empty answer and
    for one that is JSON as a whole (an object or a list)."""
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
    """``text`` followed by padding at least as long as itself (about twice its length)."""
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
