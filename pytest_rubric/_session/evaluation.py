"""One evaluation, shared by rubric items and ``assert_rubric``: judge the answers, grade
each, combine the samples, and raise what the result calls for.

What differs between the two callers stays with them: where the answers come
from, the key of their judge work, and when a result counts for the session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

import pytest

from .._errors import RubricAssertionError, RubricEvaluationError
from .._guards.outgoing import outgoing
from .._repeat import PassWhen
from .._results import CaseResult
from ..judge.requests import JudgeKey

if TYPE_CHECKING:
    from .._grade.grader import CompiledRubric, Grader
    from ..criteria.check import Answer
    from .session import RubricSession


def evaluate(
    session: RubricSession | None,
    grader: Grader,
    compiled: CompiledRubric,
    responses: Sequence[str | Answer],
    *,
    key: JudgeKey,
    nodeid: str,
    suite: str,
    subject: str,
    case: str | None = None,
    ranked: bool = True,
    pass_when: PassWhen = "mean",
    level: float = 0.95,
) -> CaseResult:
    """The result of ``responses`` (one per sample, at least one) to ``compiled``.

    ``key`` is the judge's key of the first sample (the others are its
    ``of_sample(i)``); without a session the judged criteria are SKIPPED. A response may
    carry its trace (an :class:`~pytest_rubric.criteria.check.Answer`).
    """
    from .._grade.grader import context_of
    from ..criteria.check import Answer

    answers = [r if isinstance(r, Answer) else Answer(r) for r in responses]
    texts = [a.text for a in answers]
    judged = (
        session.judge_samples(
            [key.of_sample(i) for i in range(len(answers))],
            compiled,
            texts,
            [context_of(a.trace, compiled.rubric) for a in answers],
        )
        if session is not None
        else [None] * len(answers)
    )
    samples = [
        grader.grade(
            response,
            compiled,
            nodeid=nodeid,
            suite=suite,
            subject=subject,
            case=case,
            ranked=ranked,
            judged=verdicts,
        )
        for response, verdicts in zip(answers, judged, strict=True)
    ]
    probe = session.probe(key, compiled, texts[0], judged[0]) if session is not None else []
    result = grader.combine(samples, pass_when=pass_when, level=level, probe=probe)
    if session is not None and session.unjudged is not None:
        from .._grade.bounds import settle_unjudged

        result = settle_unjudged(result)  # graded on what can be: see _grade.bounds
    return result


def raise_for(result: CaseResult) -> None:
    """Raise :class:`RubricEvaluationError` when a criterion could not be evaluated,
    :class:`RubricAssertionError` when the result did not pass; the criterion table is the
    message, through the outgoing boundary. A result the missing judge left undecided
    (``skipped_bounds``) is skipped, its bounds in the reason."""
    __tracebackhide__ = True
    from .._render.table import criteria_table

    if result.errors:
        raise RubricEvaluationError(outgoing(criteria_table(result)), result=result)
    if result.skipped_bounds is not None:  # the missing judge could still pass or fail it
        from .._grade.bounds import skip_reason

        pytest.skip(outgoing(skip_reason(result)))
    if not result.passed:
        raise RubricAssertionError(outgoing(criteria_table(result)), result=result)


def raise_no_answer(problem: str, *, raised: BaseException | None = None) -> NoReturn:
    """Raise :class:`RubricEvaluationError` for an answer that could not be obtained: never a
    pass. Like :func:`raise_for`, the message passes the outgoing boundary here, the one
    place these errors are made (``_errors`` imports nothing of the guards). What the
    application raised, if it did, is the error's cause: its traceback is the report's."""
    __tracebackhide__ = True
    raise RubricEvaluationError(outgoing(problem), result=None) from raised
