"""Evidence: a judge's MET must quote the response that earns it (``--rubric-judge-evidence``).

A per-criterion or one-shot reply that says MET carries ``"evidence": ["quote",
..]``. A quote is *found* when rapidfuzz's partial ratio of the normalized
quote against the normalized response is at least :data:`THRESHOLD` (90), so
a judge may fix a typo or drop a curly quote, but may not invent a sentence.

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
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._base import EVIDENCE_MODES as MODES
from .._normalize import normalize
from .._result import Outcome, Verdict

if TYPE_CHECKING:
    from ..criteria.extract import JudgedCriterion

__all__ = ["MODES", "THRESHOLD", "check_evidence", "quote_found"]

THRESHOLD = 90.0
# A score is not a claim a quote supports; an extraction's outcome is its check's, not the
# judge's (the judge reads, the check decides).
_UNQUOTED = frozenset({"score", "extract"})
MIN_QUOTE = 4  # normalized characters: a shorter "quote" supports nothing
EXACT_BELOW = 12  # a quote shorter than this must be in the response as written (normalized)


def quote_found(quote: str, response: str) -> bool:
    """Whether ``quote`` is in ``response``, up to normalization and small slips."""
    from rapidfuzz import fuzz  # imported by the first quote checked

    needle, haystack = normalize(quote), normalize(response)
    if len(needle) < MIN_QUOTE or not haystack:
        return False  # "a" or "is" is in every answer: it shows nothing
    if len(needle) < EXACT_BELOW:
        return needle in haystack  # partial_ratio scores any short needle near 100
    if len(needle) > len(haystack):
        # partial_ratio slides the shorter string: a "quote" that wraps the whole answer in
        # invented text would match it whole. A quote longer than the answer must be the answer.
        return bool(fuzz.ratio(needle, haystack) >= THRESHOLD)
    return bool(fuzz.partial_ratio(needle, haystack) >= THRESHOLD)


def check_evidence(
    outcome: Outcome,
    criterion: JudgedCriterion,
    response: str,
    *,
    mode: str,
    quotes: Sequence[str] = (),
) -> Outcome:
    """``outcome`` with its ``evidence_ok`` set (a boolean MET only), under ``mode``."""
    if mode == "off" or outcome.verdict is not Verdict.MET or criterion.kind in _UNQUOTED:
        return outcome
    if any(quote_found(q, response) for q in quotes):
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
