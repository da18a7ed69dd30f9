"""Evidence: a judge's MET must quote the response that earns it (``--rubric-judge-evidence``).

A reply that says MET carries ``"evidence": ["quote", ..]``. A quote is *found* only when it
is in the response word for word, whole words to whole words, up to case, whitespace,
punctuation (inside a word too: ``don't`` is ``dont``, ``U.S.`` is ``US``, ``1,000`` is
``1000``) and Unicode forms (NFKC, dashes and curly quotes as ASCII): a number or a word
that differs (``$1M`` for ``$9M``, ``decrease`` for ``increase``) is not found, however
similar. A quote right after a negation of its clause (``not``, ``no``, ``never``,
``without``, ``cannot``, ``...n't``) is not found either, nor a single letter (a digit is a
number: ``5`` is found). The search is linear, under ini ``rubric_check_timeout`` (past it,
ERROR).

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

import bisect
import dataclasses
import re
import unicodedata
from collections.abc import Sequence

from .._defaults import DEFAULT_CHECK_TIMEOUT
from .._guards.engines import CheckTimeout, Deadline
from .._results import Outcome, Verdict
from ..criteria.extract import JudgedCriterion
from ..criteria.normalize import PLAIN

# A score or a label is not a claim a quote supports (their replies are {"reason", "score"}
# and {"reason", "label"}); an extraction's outcome is its check's, not the judge's (the
# judge reads, the check decides).
_UNQUOTED = frozenset({"score", "label", "extract"})
NEGATIONS = frozenset({"not", "no", "never", "without", "cannot"})
"""Words that turn a statement around; with any word ending in ``n't``."""

# Dashes and curly quotes plain, as for criteria (NFKC keeps them apart); characters that
# show nothing (a soft hyphen, zero-width spaces and joiners, direction marks, a BOM)
# dropped, so that "re\u00advenue" is "revenue" as it reads.
_INVISIBLE = "\u00ad\u180e\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
_INVISIBLE += "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff"
_FOLD = str.maketrans({**dict.fromkeys(_INVISIBLE), **PLAIN})
# The words of normalized text, in one linear pass (possessive: no backtracking):
# a number, with the sign written against it and its decimal or group separators;
# a word of letters and digits, with the apostrophes inside it ("won't"); or one
# character that is neither a word's nor a space (punctuation, dropped, or a symbol, kept).
_TOKEN = re.compile(
    r"(?<![^\W_])[-+]?\d++(?:[.,]\d++)*+"
    r"|(?<![^\W_])[^\W\d_](?:\.[^\W\d_])++\.?(?![^\W_])"  # letters with dots: "u.s.", "e.g."
    r"|[^\W_]++(?:'[^\W_]++)*+"
    r"|[^\w\s]"
)
# A comma before three digits groups them: "1,000" is "1000" ("1,5" and "3.5" keep theirs).
_GROUPED = re.compile(r",(?=\d{3}(?!\d))")
# Punctuation that ends a clause: a negation before it does not reach the words after it.
_CLAUSE_END = frozenset(".!?;:,\u3002\u3001")


class Quoted:
    """A response, normalized once, that quotes are looked for in (:meth:`has`): its words
    joined by single spaces, where each starts in that string, and which of them start a
    clause."""

    __slots__ = ("clause", "negation", "starts", "text")

    def __init__(self, response: str) -> None:
        folded = unicodedata.normalize("NFKC", response).casefold().translate(_FOLD)
        words: list[str] = []
        self.starts: list[int] = []
        self.clause: list[bool] = []
        self.negation: list[bool] = []
        at, new_clause = 0, True
        for match in _TOKEN.finditer(folded):
            word = match.group()
            if len(word) == 1 and unicodedata.category(word)[0] == "P" and not word.isalnum():
                new_clause = new_clause or word in _CLAUSE_END
                continue
            self.negation.append(word in NEGATIONS or word.endswith("n't"))
            # Punctuation inside a word is not a word: "don't" is "dont", "u.s." is "us".
            if word[-1].isdigit():
                word = _GROUPED.sub("", word) if "," in word else word
            elif "'" in word or "." in word:
                word = word.replace("'", "").replace(".", "")
            words.append(word)
            self.starts.append(at)
            self.clause.append(new_clause)
            at += len(word) + 1
            new_clause = False
        self.text = " ".join(words)

    def has(self, quote: str, *, deadline: Deadline | None = None) -> bool:
        """Whether ``quote`` is in the response (see the module's docstring); raises
        :class:`~pytest_rubric._guards.engines.CheckTimeout` past ``deadline`` (checked on
        every search: many quotes never found in long passages add up too)."""
        deadline = deadline or Deadline(DEFAULT_CHECK_TIMEOUT)
        deadline.check()
        needle = Quoted(quote).text
        if (len(needle) < 2 and not needle.isdigit()) or len(needle) > len(self.text):
            # "a" is in every answer ("42", "1%", "5" and "no" are claims); a quote longer
            # than the answer was not taken from it (wrapping it in invented text is no quote).
            return False
        padded = f" {self.text} "
        start = padded.find(f" {needle} ")
        while start >= 0:  # whole words: the match starts and ends at a space
            deadline.check()
            if not self._negated_before(start):
                return True
            start = padded.find(f" {needle} ", start + 1)
        return False

    def _negated_before(self, start: int) -> bool:
        """Whether the word before the one at ``start``, in its clause, is a negation."""
        if (index := bisect.bisect_left(self.starts, start)) == 0 or self.clause[index]:
            return False
        return self.negation[index - 1]


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
        quoted = Quoted(response)
        found = any(quoted.has(q, deadline=deadline) for q in quotes)
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
