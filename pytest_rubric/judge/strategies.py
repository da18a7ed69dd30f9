"""How the judged criteria of one answer are put to the judge: the ``--rubric-grader`` strategies.

:data:`STRATEGIES` is the registry; each strategy pairs its prompt
(:mod:`~pytest_rubric.judge.prompts`) with its reply reader (:mod:`~pytest_rubric.judge.replies`):

``per-criterion``
    one call per judged criterion (these run concurrently too);
``one-shot``
    one call for all judged criteria of a case, keyed by criterion id;
``holistic``
    one call, one 0-100 score s for the judged criteria together, shared among them as
    docs/explanation/scoring.md states.

A reply that does not fit the protocol is asked again once with the error fed back
(:func:`ask`); a failed call, or a second bad reply, makes the criterion ERROR, never MET or
UNMET.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from .._defaults import GRADERS
from .._errors import LLMError
from .._guards.calls import resolve_import
from .._guards.secrets import clip
from .._llm.base import Judged, Reply
from .._results import Outcome, Verdict
from ..criteria.judge import Requirement
from .prompts import Prompt, holistic, injection_suspected, one_shot, per_criterion
from .replies import Graded, ReplyError, read_holistic, read_one, read_one_shot
from .transport import Transport, UnusableReplay

if TYPE_CHECKING:
    from ..criteria.extract import JudgedCriterion
    from .requests import JudgeRequest


T = TypeVar("T")

_FEEDBACK = (
    "\n\nYour previous reply could not be used: {error}. Reply again with only the JSON object "
    "the instructions ask for."
)


@dataclass(frozen=True, slots=True)
class Strategy:
    """One ``--rubric-grader``: how one vote is graded, and how votes are combined."""

    grade: Callable[[Transport, JudgeRequest, int], Awaitable[Judged]]
    """``grade(transport, request, vote)``: one vote's outcomes of ``request.criteria``."""
    mean: bool = False
    """Combine votes by their mean credit for every criterion (not only score kind)."""


async def ask(
    transport: Transport,
    prompt: Prompt,
    read: Callable[[Reply], Any],
    *,
    label: str,
    vote: int,
    feedback: str = "",
    again: bool = True,
) -> Any:
    """Call, read, store; on a reply that does not fit, once more with the error fed back
    (without ``again``, the :class:`ReplyError` is raised).

    A reply that does not fit is never stored, but the cache records why, so
    ``--rubric-cache replay`` replays it as it happened: the same error fed back, then the
    retry's recorded reply.
    """
    try:
        reply, parsed = await _attempt(transport, prompt, read, feedback, label, vote)
    except ReplyError as exc:
        if not again:
            raise
        retry = _FEEDBACK.format(error=exc)
        try:
            reply, parsed = await _attempt(transport, prompt, read, retry, label, vote)
        except (ReplyError, LLMError) as second:
            if isinstance(second, ReplyError):
                # No usable reply: the usage line counts the call as an error.
                transport.stats.errors += 1
            if isinstance(exc, UnusableReplay):
                raise LLMError(exc.message) from None
            if isinstance(second, LLMError):
                raise
            # What to try next: never the grader in use.
            better = "a larger model, or --rubric-grader per-criterion,"
            if transport.strategy == "per-criterion":
                better = "a larger model"
            raise LLMError(
                f"judge {transport.name} replied out of protocol twice: {second}; "
                f"{better} may follow the protocol better"
            ) from None
    if (problems := _problems(parsed)) is None:
        transport.store(reply, parsed)
    else:
        transport.unusable(reply, problems)
    return parsed


async def _attempt(
    transport: Transport,
    prompt: Prompt,
    read: Callable[[Reply], Any],
    feedback: str,
    label: str,
    vote: int,
) -> tuple[Reply, Any]:
    """One call and its reading; a reply that does not fit (whatever ``read`` raises) is
    recorded as unusable and raised as ReplyError, never a crash."""
    reply = await transport.call(prompt, feedback=feedback, label=label, vote=vote)
    try:
        parsed = read(reply)
    except Exception as exc:
        if not isinstance(exc, ReplyError):
            # Short: the message is fed back to the judge, and may end up in a reason.
            message = f"the reply could not be read ({type(exc).__name__}: {exc})"
            exc = ReplyError(clip(message, *transport.secrets, limit=200))
        transport.unusable(reply, str(exc))
        raise exc from None
    return reply, parsed


def _problems(parsed: Any) -> str | None:
    """What a one-shot reply got wrong, as its retry is told; None for a whole reply."""
    if not isinstance(parsed, dict):
        return None
    errors = [str(v) for v in parsed.values() if isinstance(v, ReplyError)]
    return "; ".join(errors) if errors else None


def reader(
    transport: Transport, response: str, read: Callable[..., T], *args: Any
) -> Callable[[Reply], T]:
    """``read(text, *args)`` of a reply about ``response``: keys redacted, held to the
    structured part, never taking the response's objects."""
    return lambda reply: read(
        reply.text, *args, secrets=transport.secrets, structured=reply.structured, answer=response
    )


def _outcome(graded: Graded) -> Outcome:
    if graded.error:  # an extract criterion's check could not be evaluated
        return Outcome(Verdict.ERROR, 0.0, graded.reason)
    return Outcome(
        Verdict.MET if graded.met else Verdict.UNMET,
        graded.credit,
        graded.reason,
        evidence=graded.evidence,
    )


def _errors(criteria: Sequence[JudgedCriterion], reason: str) -> dict[str, Outcome]:
    return {c.id: Outcome(Verdict.ERROR, 0.0, reason) for c in criteria}


def _asked(request: JudgeRequest) -> dict[str, Any]:
    """What every prompt shows beside the criteria."""
    return {
        "question": request.question,
        "response": request.response,
        "reference": request.reference,
        "guidance": request.guidance,
    }


async def _per_criterion(transport: Transport, request: JudgeRequest, vote: int) -> Judged:
    criteria, response = request.criteria, request.response
    prompts = [per_criterion(c, **_asked(request)) for c in criteria]

    async def one(criterion: JudgedCriterion, prompt: Prompt) -> Outcome:
        try:
            graded = await ask(
                transport,
                prompt,
                reader(transport, response, read_one, criterion),
                label=f"criterion {criterion.id!r}",
                vote=vote,
            )
        except LLMError as exc:
            return Outcome(Verdict.ERROR, 0.0, str(exc))
        return _outcome(graded)

    outcomes = await asyncio.gather(*(one(c, p) for c, p in zip(criteria, prompts, strict=True)))
    return Judged(
        dict(zip((c.id for c in criteria), outcomes, strict=True)),
        injection_suspected=any(injection_suspected(response, p.token) for p in prompts),
    )


async def _one_shot(transport: Transport, request: JudgeRequest, vote: int) -> Judged:
    criteria, response = request.criteria, request.response
    prompt = one_shot(criteria, **_asked(request))
    suspected = injection_suspected(response, prompt.token)

    read = reader(transport, response, read_one_shot, criteria)
    label = "criteria " + ", ".join(repr(c.id) for c in criteria)
    try:
        first = await ask(transport, prompt, read, label=label, vote=vote)
    except LLMError as exc:
        return Judged(_errors(criteria, str(exc)), injection_suspected=suspected)
    if (problems := _problems(first)) is not None:
        # One more try for the criteria the reply left out or got wrong.
        try:
            second = await ask(
                transport,
                prompt,
                read,
                label=label,
                vote=vote,
                feedback=_FEEDBACK.format(error=problems),
                again=False,
            )
        except (LLMError, ReplyError):
            second = {}
        for cid, graded in first.items():
            if isinstance(graded, ReplyError) and isinstance(second.get(cid), Graded):
                first[cid] = second[cid]
    if any(not isinstance(first[c.id], Graded) for c in criteria):
        transport.stats.errors += 1  # the reply never gave them: the call ended in ERRORs
    outcomes = {
        c.id: _outcome(first[c.id])
        if isinstance(first[c.id], Graded)
        else Outcome(
            Verdict.ERROR,
            0.0,
            f"judge {transport.name}: {first[c.id]} (after one retry); try --rubric-grader "
            "per-criterion",
        )
        for c in criteria
    }
    return Judged(outcomes, injection_suspected=suspected)


async def _holistic(
    transport: Transport, criteria: Sequence[Requirement], request: JudgeRequest, vote: int
) -> Judged:
    prompt = holistic(criteria, **_asked(request))
    suspected = injection_suspected(request.response, prompt.token)
    try:
        score, reason = await ask(
            transport,
            prompt,
            reader(transport, request.response, read_holistic),
            label="the holistic score",
            vote=vote,
        )
    except LLMError as exc:
        return Judged(_errors(criteria, str(exc)), injection_suspected=suspected)
    credit = score / 100
    # Judged criteria that are all errors to avoid have no positive weight to earn s/100 of:
    # each then earns 1 - s/100 of its negative weight (the share of the error the score
    # says was made), so a rubric of them alone still scores s/100.
    errors_only = not any(c.effective_weight > 0 for c in criteria if c.axis == "substance")
    outcomes = {}
    for c in criteria:
        if c.effective_weight < 0 and not errors_only:
            # An error criterion is folded into the one score, never counted twice.
            outcomes[c.id] = Outcome(
                Verdict.UNMET, 0.0, f"holistic: folded into the score {score:g}/100"
            )
        else:
            given = 1 - credit if c.effective_weight < 0 else credit
            verdict = Verdict.MET if given >= 0.5 else Verdict.UNMET
            outcomes[c.id] = Outcome(verdict, given, f"holistic {score:g}/100: {reason}")
    return Judged(outcomes, injection_suspected=suspected, llm_raw_score=score)


def _apart(c: JudgedCriterion) -> bool:
    """Whether one score for the answer cannot stand for ``c``: an ``extract`` (its check
    decides), a style criterion (style is never part of the score) and a ``required`` error
    (its own verdict fails the case), each judged on its own call, as per-criterion does."""
    return c.kind == "extract" or c.axis == "style" or (c.required and c.effective_weight < 0)


async def _holistic_and_apart(transport: Transport, request: JudgeRequest, vote: int) -> Judged:
    """One holistic score for the judged substance criteria; those :func:`_apart` says, each
    on its own call."""
    reads = [c for c in request.criteria if _apart(c)]
    scored = [c for c in request.criteria if isinstance(c, Requirement) and not _apart(c)]
    parts = [_per_criterion(transport, replace(request, criteria=reads), vote)] if reads else []
    if scored or not reads:
        parts.append(_holistic(transport, scored, request, vote))
    done = await asyncio.gather(*parts)
    return Judged(
        {cid: o for part in done for cid, o in part.outcomes.items()},
        injection_suspected=any(part.injection_suspected for part in done),
        llm_raw_score=done[-1].llm_raw_score if scored else None,
    )


PER_CRITERION = Strategy(_per_criterion)
ONE_SHOT = Strategy(_one_shot)
HOLISTIC = Strategy(_holistic_and_apart, mean=True)


STRATEGIES: dict[str, Strategy] = {name: resolve_import(path) for name, path in GRADERS.items()}
"""The ``--rubric-grader`` strategies, by name, as the one table (``_defaults.GRADERS``) names
them."""
