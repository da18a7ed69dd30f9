"""``assert_rubric``: grade a response inside any test, and let the result join the summary."""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from .._errors import Problem, RubricLoadError
from .._grade.bounds import nothing_graded, settle_unjudged
from .._grade.grader import CompiledRubric, Grader
from .._guards.calls import make_importable
from .._llm.base import Judged
from .._load.loader import load_suite
from .._load.locate import Locator, validation_problems
from .._load.semantics import semantic_problems
from .._load.traces import RETURN_SHAPES, ShapeError, read_returned
from .._render.table import since_baseline
from .._results import CaseResult, without_subject
from .._schema import Criterion, Mark, Rubric, Suite, own_mark
from ..criteria.check import Answer
from ..criteria.registry import CONTEXT_KEY
from ..judge.requests import JudgeKey
from .collect import added_criterion_types, evaluate, raise_for
from .items import current_item, next_call, record
from .started import session_of

# What ``assert_rubric`` and the ``rubric`` fixture accept as a rubric.
RubricSpec = Rubric | Sequence[dict[str, Any]] | dict[str, Any] | str | os.PathLike[str]


def _find(path_text: str, item: pytest.Item | None) -> Path:
    """A relative path is looked for under the rootdir, then in the calling test's folder
    (outside a test: the current directory), so it does not depend on where pytest runs."""
    path = Path(path_text)
    if path.is_absolute() and path.is_file():
        return path
    bases = [item.config.rootpath, item.path.parent] if item is not None else [Path.cwd()]
    for base in dict.fromkeys(bases):
        if (base / path).is_file():
            return base / path
    where = " or ".join(f"{str(b)!r}" for b in dict.fromkeys(bases))
    raise RubricLoadError(
        path_text,
        [
            Problem(
                "no such rubric file" + ("" if path.is_absolute() else f" under {where}"),
                hint="give the path relative to the rootdir (the folder of pytest.ini), for "
                "example 'evals/faq.rubric.yaml::q1', or relative to the test's folder",
            )
        ],
    )


def _rubric_from_path(
    spec: str | os.PathLike[str], item: pytest.Item | None
) -> tuple[Rubric, Sequence[Any], Mark, str, str | None]:
    path_text, _, case_id = os.fspath(spec).partition("::")
    path = _find(path_text, item)
    make_importable(path.parent)
    loaded = load_suite(path, added=() if item is None else added_criterion_types(item, path))
    cases = loaded.suite.cases
    if case_id:
        if not (matches := [c for c in cases if c.id == case_id]):
            known = ", ".join(c.id for c in cases)
            raise RubricLoadError(
                path, [Problem(f"no case {case_id!r}", hint=f"name one of its cases: {known}")]
            )
        case = matches[0]
    elif len(cases) == 1:
        case = cases[0]
    else:
        raise RubricLoadError(
            path,
            [
                Problem(
                    f"{len(cases)} cases, and no case named",
                    hint=f"name one as '{path_text}::<case id>' (for example "
                    f"'{path_text}::{cases[0].id}')",
                )
            ],
        )
    suite = loaded.suite
    return case, suite.global_criteria, own_mark(case, suite), loaded.name, suite.style_field


def _to_rubric(
    rubric: RubricSpec, item: pytest.Item | None, min_score: float | None
) -> tuple[Rubric, Sequence[Any], Mark, str | None, str | None]:
    """The rubric, its global criteria, its own pass mark, its suite's name and its
    ``style_field`` (the last three a rubric file's, when ``rubric`` names one)."""
    mark = {} if min_score is None else {"min_score": min_score}
    if isinstance(rubric, str | os.PathLike):
        case, global_criteria, own, suite, style_field = _rubric_from_path(rubric, item)
        _checked({"id": case.id, **mark}, item, given=case, global_criteria=global_criteria)
        return case, global_criteria, own, suite, style_field
    if isinstance(rubric, Rubric):
        checked = _checked({"id": rubric.id, **mark}, item, given=rubric)
        return checked, (), own_mark(rubric), None, None
    data = rubric if isinstance(rubric, dict) else {"criteria": list(rubric)}
    parsed = _checked({**data, **mark}, item)
    return parsed, (), own_mark(parsed), None, None


def _checked(
    data: dict[str, Any],
    item: pytest.Item | None,
    *,
    given: Rubric | None = None,
    global_criteria: Sequence[Criterion] = (),
) -> Rubric:
    """``data`` validated, then checked as a rubric file's case is (the same problems in the
    same words: a pass mark above 1, no substance criterion...). With ``given``, ``data`` holds
    what this call adds to that rubric (its pass mark), and ``given`` is checked."""
    locator = Locator("", None, bare_list=False, top=Rubric)
    problems, parsed = [], given
    try:
        added = () if item is None else tuple(added_criterion_types(item))
        validated = Rubric.model_validate(data, context={CONTEXT_KEY: added})
        parsed = given or validated
    except ValidationError as exc:
        problems = validation_problems(exc, data, locator)
    suite = None
    if parsed is not None:
        suite = Suite.model_construct(global_criteria=global_criteria, cases=[parsed])
    problems += semantic_problems(
        {"cases": [{"id": "rubric", **data}]}, suite, locator, failed=bool(problems)
    )
    if problems or parsed is None:
        raise RubricLoadError("<assert_rubric>", problems)
    return parsed


def _answer(response: Any) -> Answer:
    """The answer and its trace, as a target's return is read (``_load.traces``)."""
    try:
        text, trace = read_returned(response)
    except ShapeError as exc:
        raise TypeError(
            f"assert_rubric: the response is {exc}; give one of: {'; '.join(RETURN_SHAPES)}"
        ) from None
    return Answer(text, trace)


def assert_rubric(
    response: str | Any,
    rubric: RubricSpec,
    *,
    min_score: float | None = None,
    query: str | None = None,
    subject: str | None = None,
) -> CaseResult:
    """Grade ``response`` against ``rubric`` and fail the test if it does not pass.

    :param response: the answer under test: a str, or what a target may return, a mapping
        (or an object) with ``answer`` and the trace of how the application got there
        (``context``, ``messages``, ``usage``, ``metadata``), which the trace criteria
        read (``tool_called``, ``claims_backed``...). Any other value is a :class:`TypeError`
        that lists the shapes.
    :param rubric: the criteria, as any of: a list of criterion dicts in the
        rubric-file format (``[{"id": "npv", "type": "any_of", "any_of":
        ["$157.63"]}]``); a mapping with ``criteria`` (and optionally
        ``min_score``, ``question``); a :class:`~pytest_rubric.Rubric` or
        :class:`~pytest_rubric.Case`; or the path of a rubric file, with the
        case named as ``"evals/finance.rubric.yaml::q02_var"`` (the case may
        be left out when the file has one). A file's ``global`` criteria,
        ``min_score`` and ``style_field`` apply.
    :param min_score: the pass mark. Default: the rubric's own ``min_score``,
        else 0.8 (or the ini option ``rubric_min_score``).
    :param query: the question the response answers (shown in reports, given
        to the judge).
    :param subject: who wrote the response: the result joins the leaderboard
        under that name. Without it the result is a plain assertion (subject
        ``inline`` in the outputs), counted in the summary's ``assertions: P
        passed, F failed`` line and never ranked.
    :returns: the :class:`~pytest_rubric.CaseResult`, when the response passes.
    :raises RubricAssertionError: (an ``AssertionError``) when the score is
        below ``min_score`` or a ``required`` criterion went the wrong way; its
        message is the per-criterion table and ``.result`` the result.
    :raises RubricEvaluationError: when a criterion could not be evaluated
        (ERROR): the test fails, it never passes.
    :raises RubricLoadError: when the rubric is one a rubric file could not hold (malformed,
        no substance criterion to score, a ``min_score`` outside 0 to 1), in the same words.

    Inside a pytest test the result also joins the session's ``rubric
    summary``, JSON and other outputs; the node id is the test's.
    """
    __tracebackhide__ = True  # the failure is the table, not this function's frame
    bound = RubricFixture(current_item())
    return bound(response, rubric, min_score=min_score, query=query, subject=subject)


class RubricFixture:
    """:func:`assert_rubric` bound to a test (None: outside a test, nothing is recorded).

    What the ``rubric`` fixture gives a test: its results join the session's
    outputs under the test's node id, and it holds the node itself, so it
    needs no context from the running test.
    """

    def __init__(self, item: pytest.Item | None) -> None:
        self.item = item

    def __repr__(self) -> str:
        return f"RubricFixture({self.item.nodeid if self.item else None!r})"

    def __call__(
        self,
        response: str | Any,
        rubric: RubricSpec,
        *,
        min_score: float | None = None,
        query: str | None = None,
        subject: str | None = None,
    ) -> CaseResult:
        """Grade ``response`` against ``rubric``; see :func:`assert_rubric`."""
        __tracebackhide__ = True
        item = self.item
        answer = _answer(response)
        if item is not None:
            make_importable(item.config.rootpath)  # for `callable:` criteria, as in rubric files
        parsed, global_criteria, own_mark, suite, style_field = _to_rubric(rubric, item, min_score)
        if query is not None:
            parsed = parsed.model_copy(update={"question": query})
        session = session_of(item.config) if item is not None else None
        grader = session.grader if session is not None else Grader()
        compiled: CompiledRubric = grader.compile(
            parsed,
            global_criteria=global_criteria,
            min_score=min_score if min_score is not None else own_mark,
            style_field=style_field,  # a rubric file's wins over the ini's, as for its items
        )
        nodeid = item.nodeid if item is not None else ""
        case = None
        if item is not None and parsed.id == "rubric":
            # The test's n-th call for this subject: subjects graded on one question in one
            # test, or in a test parametrized over them, share its case, so they are compared
            # on it.
            mine = subject or "inline"
            count = next_call(item, mine)
            name = without_subject(item.name, mine)
            case = name if count == 1 else f"{name}#{count}"
        result = evaluate(
            session,
            grader,
            compiled,
            [answer],
            # A key of its own per call: several calls in one test must not share a verdict.
            key=JudgeKey("", nodeid, call=uuid.uuid4().hex),
            nodeid=nodeid,
            suite=suite or (item.path.stem if item is not None else ""),
            subject=subject or "inline",
            case=case,
            ranked=subject is not None,
        )
        if item is not None:
            if result.skipped and (ungraded := nothing_graded(result)) is not None:
                if ungraded.skipped_bounds is not None:  # in the outputs as undecided
                    record(item, ungraded, raised=False)
                pytest.skip(f"nothing graded: {result.skipped[0].reason}")
            # An undecided result is skipped, not raised: it is in the outputs with its bounds.
            raised = result.skipped_bounds is None and (bool(result.errors) or not result.passed)
            record(item, result, raised=raised)
        # With --rubric-baseline, a case that regressed: its before and after, as an item's.
        after = (
            since_baseline(result, session.results.baseline, session.settings.show_response)
            if session is not None
            else []
        )
        raise_for(result, after)
        return result


def grader_for(item: pytest.Item) -> Grader:
    """The ``rubric_grader`` fixture's grader in ``item``: the session's, whose ``grade()``
    judges with the session's judge when there is one, as ``assert_rubric`` does (each call
    with a judge key of its own; without a judge the judged criteria are SKIPPED, saying
    why)."""
    session = session_of(item.config)

    def judge(compiled: CompiledRubric, response: str) -> Judged | None:
        key = JudgeKey("", item.nodeid, call=uuid.uuid4().hex)
        (judged,) = session.judge_samples([key], compiled, [response])
        return judged

    # A judge without its key: a result the judge could still pass or fail is not passed.
    settle = settle_unjudged if session.unjudged is not None else None
    return session.grader.with_judge(judge, settle=settle)
