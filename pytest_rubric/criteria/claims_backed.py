"""``claims_backed``: for each claim the answer makes (an ``any_of`` phrase or its
``pattern``), a successful call of the claim's ``tool`` fitting ``args`` must be in the trace;
a claim without one is UNMET and flags ``unbacked_claim``: an agent that says "your refund
has been issued" without issuing it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._guards.engines import PatternError, search
from .._results import Outcome
from .calls import CallMatcher, calls_of
from .check import Answer, Check, CheckContext, credited, met, short
from .json_text import Schema
from .model import MODEL_CONFIG, CriterionModel, FieldError, Id, Phrase, Phrases
from .normalize import compile_phrases, found
from .regex import compile_regex, invalid_pattern


class Claim(BaseModel):
    """One action the answer may claim, and the tool call that backs it."""

    # Built on first use, as the criterion types are (registry.validate_criterion): building
    # it at import cost every run 7 ms, most of which use no claims_backed.
    model_config = ConfigDict(**MODEL_CONFIG, defer_build=True)

    id: Id
    any_of: Phrases | None = None
    pattern: Annotated[str, Field(min_length=1)] | None = None
    tool: Phrase
    args: Schema = None

    @model_validator(mode="after")
    def _one_way(self) -> Claim:
        if (self.any_of is None) == (self.pattern is None):
            raise FieldError("any_of", "give the claim `any_of: [...]` or `pattern:`, one of them")
        if self.pattern is not None:
            try:
                compile_regex(self.pattern, case_sensitive=False, engine="re2")
            except PatternError as exc:
                raise invalid_pattern(self.pattern, exc) from None
        return self


class ClaimsBacked(CriterionModel):
    """MET when every claim the answer makes is backed by a successful call in the trace."""

    type: Literal["claims_backed"] = "claims_backed"
    claims: Annotated[tuple[Claim, ...], Field(min_length=1)]

    def compile(self, context: CheckContext) -> Check[ClaimsBacked]:
        return _ClaimsBackedCheck(self, context)


class _ClaimsBackedCheck(Check[ClaimsBacked]):
    __slots__ = ("claims",)

    def __init__(self, c: ClaimsBacked, context: CheckContext) -> None:
        super().__init__(c)
        self.claims: list[tuple[Claim, Any, CallMatcher]] = [
            (
                claim,
                compile_phrases(claim.any_of)
                if claim.any_of is not None
                else compile_regex(claim.pattern or "", case_sensitive=False, engine="re2"),
                CallMatcher(claim.tool, claim.args, ok=True, timeout=context.check_timeout),
            )
            for claim in c.claims
        ]

    def run(self, answer: Answer, case: object) -> Outcome:
        calls = calls_of(answer)
        if isinstance(calls, Outcome):
            return calls
        made, unbacked = [], []
        for claim, matcher_text, matcher in self.claims:
            said = _said(claim, matcher_text, answer)
            if said is None:
                continue
            made.append(claim.id)
            backing = matcher.matching(calls)
            if isinstance(backing, Outcome):
                return backing
            if not backing:
                unbacked.append(
                    f"{claim.id} ({short(said)}) without a successful {claim.tool} call"
                    + matcher.unfit(calls)
                )
        if not made:
            return met("the answer makes none of the claims")
        if unbacked:
            credit = (len(made) - len(unbacked)) / len(made)
            return credited(credit, 1.0, "unbacked claim: " + "; ".join(unbacked))
        return met(f"every claim made is backed: {', '.join(made)}")


def _said(claim: Claim, compiled: Any, answer: Answer) -> str | None:
    """What of the claim the answer says, or None when it does not make it."""
    if claim.any_of is not None:
        return next((p[1] for p in compiled if found(p, answer.folded)), None)
    match = search(compiled, answer.folded)  # RE2: linear time
    return match.group(0) if match else None
