"""Evidence: a judge's MET must quote the response that earns it (``--rubric-judge-evidence``).

A per-criterion or one-shot reply that says MET carries ``"evidence": ["quote",
..]``. A quote is *found* when it is in the response up to normalization and
small slips, so a judge may fix a typo or drop a curly quote, but may not
invent a sentence, or turn what the response says around:

* a quote shorter than :data:`EXACT_BELOW` must be in the response as written
  (normalized); a longer one is searched :data:`PIECE` characters at a time,
  each piece at a partial ratio of at least :data:`THRESHOLD` (90, rapidfuzz)
  right after the one before, so its cost stays linear in the response and
  an invented passage inside a long quote is not carried by the rest;
* the negation words (``not``, ``no``, ``never``, ``n't``, ``without``,
  ``cannot``) of the quote and of the span it matched (with the word just
  before it, in the same clause) agree: "...will exceed..." is not found in
  "...will not exceed...";
* a quote longer than the response is not found, and not searched.

The search runs under ini ``rubric_check_timeout``; past it the criterion is
ERROR (:class:`~pytest_rubric._guards.engines.CheckTimeout`).

Modes:

``check`` (the default)
    a MET without a found quote keeps its verdict, with ``evidence_ok``
    false (the result is flagged ``unsupported_evidence``);
``require``
    such a MET on a positive-weight criterion counts as UNMET: no credit for
    what the answer does not say. A negative-weight criterion is only
    flagged: a penalty is never lifted on a technicality;
``off``
    quotes are not checked.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from .._defaults import DEFAULT_CHECK_TIMEOUT
from .._defaults import EVIDENCE_MODES as MODES
from .._guards.engines import CheckTimeout, Deadline
from .._results import Outcome, Verdict
from ..criteria.normalize import normalize

if TYPE_CHECKING:
    from ..criteria.extract import JudgedCriterion

__all__ = ["MODES", "NEGATIONS", "THRESHOLD", "check_evidence", "quote_found"]

THRESHOLD = 90.0
# A score is not a claim a quote supports; an extraction's outcome is its check's, not the
# judge's (the judge reads, the check decides).
_UNQUOTED = frozenset({"score", "extract"})
MIN_QUOTE = 4  # normalized characters: a shorter "quote" supports nothing
EXACT_BELOW = 12  # a quote shorter than this must be in the response as written (normalized)
# A long quote is matched this many characters at a time: rapidfuzz's partial ratio of a
# 10 KB quote against a 20 KB answer took 7 s, of a 64-character piece well under 1 ms.
PIECE = 64
_DRIFT = 16  # how far a piece may start from where the one before it ended (or the seed says)
SEED = 10  # characters of a piece looked for as written, to find where it may start
NEGATIONS = frozenset({"not", "no", "never", "without", "cannot"})
"""Words that turn a statement around; with any word ending in ``n't``."""
_WORD = re.compile(r"[\w']+")
_CLAUSE_END = re.compile(r"[.!?;:,]")


def quote_found(quote: str, response: str, *, deadline: Deadline | None = None) -> bool:
    """Whether ``quote`` is in ``response``, up to normalization and small slips, with the same
    negations. Raises :class:`~pytest_rubric._guards.engines.CheckTimeout` past ``deadline``."""
    needle, haystack = normalize(quote), normalize(response)
    if len(needle) < MIN_QUOTE or not haystack:
        return False  # "a" or "is" is in every answer: it shows nothing
    if len(needle) > len(haystack):
        # Longer than the answer: wrapping it in invented text does not make it a quote.
        return False
    deadline = deadline or Deadline(DEFAULT_CHECK_TIMEOUT)
    if len(needle) < EXACT_BELOW:
        # partial_ratio scores any short needle near 100: it must be there as written.
        spans: Iterator[tuple[int, int]] = _occurrences(needle, haystack)
    else:
        spans = _matches(needle, haystack, deadline)
    wanted = _negations(needle)
    for start, end in spans:
        deadline.check()
        if _negations_around(haystack, start, end) == wanted:
            return True
    return False


def _occurrences(needle: str, haystack: str) -> Iterator[tuple[int, int]]:
    start = haystack.find(needle)
    while start >= 0:
        yield start, start + len(needle)
        start = haystack.find(needle, start + 1)


def _pieces(needle: str) -> list[str]:
    """``needle`` in pieces of :data:`PIECE` characters; a short tail joins the last piece."""
    pieces = [needle[i : i + PIECE] for i in range(0, len(needle), PIECE)]
    if len(pieces) > 1 and len(pieces[-1]) < PIECE // 2:
        pieces[-2:] = [pieces[-2] + pieces[-1]]
    return pieces


def _matches(needle: str, haystack: str, deadline: Deadline) -> Iterator[tuple[int, int]]:
    """The spans of ``haystack`` that ``needle`` matches piece by piece: its first piece near
    each place it may start, each next piece where the one before ended."""
    pieces = _pieces(needle)
    # (piece, where it would start) known to lead nowhere: in repetitive text the first piece
    # fits in many places whose follow-ups soon run together.
    dead: set[tuple[int, int]] = set()
    for candidate in _starts(pieces[0], haystack, deadline):
        start = end = max(0, candidate)
        visited = []
        for index, piece in enumerate(pieces):
            deadline.check()
            if (index, end) in dead:
                break
            visited.append((index, end))
            found = _fit(piece, haystack, max(0, end - _DRIFT), end + len(piece) + _DRIFT)
            if found is None:
                break
            if index == 0:
                start = found[0]
            end = found[1]
        else:
            yield start, end
            continue
        dead.update(visited)


def _starts(piece: str, haystack: str, deadline: Deadline) -> Iterator[int]:
    """Where a match of ``piece`` may start: where it fits best (one search, linear in the
    response), then wherever one of its seeds (:data:`SEED` characters at a time) occurs as
    written, so a quote of a passage the response repeats is looked for at each copy."""
    from rapidfuzz import fuzz

    best = fuzz.partial_ratio_alignment(piece, haystack, score_cutoff=THRESHOLD)
    if best is not None:
        yield best.dest_start
    tried: set[int] = set()
    for offset in range(0, len(piece) - SEED + 1, SEED):
        seed = piece[offset : offset + SEED]
        found = haystack.find(seed)
        while found >= 0:
            deadline.check()
            if found - offset not in tried:
                tried.add(found - offset)
                yield found - offset
            found = haystack.find(seed, found + 1)


def _fit(piece: str, haystack: str, low: int, high: int) -> tuple[int, int] | None:
    """Where ``piece`` best fits ``haystack[low:high]`` at :data:`THRESHOLD` or more, trimmed
    to the characters it matched; None when it fits nowhere."""
    from rapidfuzz import fuzz  # imported by the first quote checked
    from rapidfuzz.distance import Indel

    window = haystack[low:high]
    if len(window) < len(piece):
        # The response ends within reach: the piece must fit what is left as a whole (partial
        # ratio would slide the window inside the piece, and text past the end would pass).
        if fuzz.ratio(piece, window) < THRESHOLD:
            return None
        start, end = 0, len(window)
    else:
        found = fuzz.partial_ratio_alignment(piece, window, score_cutoff=THRESHOLD)
        if found is None:
            return None
        start, end = found.dest_start, found.dest_end
    equal = [op for op in Indel.opcodes(piece, window[start:end]) if op.tag == "equal"]
    if equal:
        start, end = start + equal[0].dest_start, start + equal[-1].dest_end
    return low + start, low + end


def _negations(text: str) -> int:
    return sum(word in NEGATIONS or word.endswith("n't") for word in _WORD.findall(text))


def _negations_around(haystack: str, start: int, end: int) -> int:
    """The negations of ``haystack[start:end]`` widened to whole words, with the word before
    it in the same clause: a quote that starts after "not" drops it."""
    while start > 0 and _is_word(haystack[start - 1]):
        start -= 1
    while end < len(haystack) and _is_word(haystack[end]):
        end += 1
    before = haystack[max(0, start - 40) : start]
    clause = _CLAUSE_END.split(before)[-1].split()
    previous = clause[-1] if clause else ""
    return _negations(previous) + _negations(haystack[start:end])


def _is_word(char: str) -> bool:
    return char.isalnum() or char in "'_"


def check_evidence(
    outcome: Outcome,
    criterion: JudgedCriterion,
    response: str,
    *,
    mode: str,
    quotes: Sequence[str] = (),
    timeout: float = DEFAULT_CHECK_TIMEOUT,
) -> Outcome:
    """``outcome`` with its ``evidence_ok`` set (a boolean MET only), under ``mode``; ERROR
    when its quotes could not all be searched within ``timeout`` seconds."""
    if mode == "off" or outcome.verdict is not Verdict.MET or criterion.kind in _UNQUOTED:
        return outcome
    deadline = Deadline(timeout)
    try:
        found = any(quote_found(q, response, deadline=deadline) for q in quotes)
    except CheckTimeout as exc:
        return dataclasses.replace(
            outcome,
            verdict=Verdict.ERROR,
            credit=0.0,
            reason=f"{outcome.reason} [judged MET, but its evidence could not be checked: the "
            f"search for its {len(quotes)} quote(s) {exc}]",
        )
    if found:
        return dataclasses.replace(outcome, evidence_ok=True)
    if mode == "require" and criterion.effective_weight > 0:
        return dataclasses.replace(
            outcome,
            verdict=Verdict.UNMET,
            credit=0.0,
            reason=f"{outcome.reason} [judged MET, but no quote it gave is in the response: "
            "counted as UNMET under --rubric-judge-evidence require]",
            evidence_ok=False,
        )
    return dataclasses.replace(outcome, evidence_ok=False)
