"""Labelled examples a rubric file gives, as a list or a JSONL path relative to the file:
``calibration:``, which the judge is measured on (``_report.audit``), and
``judge_examples:``, which it is shown (:mod:`pytest_rubric.judge.prompts`). A judge
example whose response is also a calibration response is a collection error, so ``kappa``
stays a held-out measure.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from .._errors import Problem
from .._guards.limits import NotRegular, read_jsonl
from .._schema import CalibrationExample, JudgeExample, Suite
from ..criteria.extract import Extract
from ..criteria.judge import Requirement

if TYPE_CHECKING:
    from ..judge.prompts import Guidance
    from .locate import Locator

M = TypeVar("M", bound=BaseModel)


def examples_of(
    suite: Suite, path: Path
) -> tuple[list[tuple[CalibrationExample, Requirement, Any]], list[Problem]]:
    """The suite's calibration examples, each with its judged criterion and case, and the
    problems that make one unusable (located in the rubric file, or in the JSONL file)."""
    if (raw := suite.calibration) is None:
        return [], []
    problems: list[Problem] = []
    where: Path | None = None
    if isinstance(raw, str):
        where = path.parent / raw
        rows, problems = read_labelled(
            where,
            CalibrationExample,
            what="calibration example",
            field="calibration",
            example='{"case": "...", "criterion": "...", "response": "...", "verdict": "MET"}',
        )
        examples = [row for _, row in rows]
    else:
        examples = list(raw)
    cases = {case.id: case for case in suite.cases}
    found = []
    for index, example in enumerate(examples):
        at = f"calibration example {index + 1}"
        case = cases.get(example.case)
        judged = {
            c.id: c
            for c in (*suite.global_criteria, *(case.criteria if case else ()))
            if isinstance(c, Requirement)
        }
        criterion = judged.get(example.criterion)
        if case is None:
            message, field = f"{at}: no case {example.case!r} in this file", "case"
            hint = f"use one of {', '.join(cases) or '(no case)'}"
        elif criterion is None:
            message = f"{at}: case {example.case!r} has no judged criterion {example.criterion!r}"
            field, hint = "criterion", f"use one of {', '.join(judged) or '(none)'}"
        elif criterion.kind == "score" and (
            example.verdict is not None or example.score is None or not math.isfinite(example.score)
        ):
            message, field = f"{at}: criterion {example.criterion!r} needs a score label", "score"
            hint = f"write `score: n` ({criterion.min_score:g} to {criterion.max_score:g})"
        elif criterion.kind != "score" and (example.score is not None or example.verdict is None):
            message = f"{at}: criterion {example.criterion!r} needs a verdict label"
            field, hint = "verdict", "write `verdict: MET` or `verdict: UNMET`"
        else:
            found.append((example, criterion, case))
            continue
        problems.append(
            Problem(
                message,
                field=f"calibration.{field}" if where is None else field,
                hint=hint,
                path=where,
            )
        )
    return found, problems


def read_labelled(
    path: Path, model: type[M], *, what: str, field: str, example: str
) -> tuple[list[tuple[int, M]], list[Problem]]:
    """A JSONL file of labelled examples, each validated as ``model`` with its line number,
    and a problem for each line that is not one."""
    try:
        rows, problems = read_jsonl(path, example=example)
    except (OSError, UnicodeDecodeError, NotRegular) as exc:
        return [], [
            Problem(
                f"{field}: cannot read {path.name} ({exc})",
                field=field,
                hint="give a JSONL file's path relative to this rubric file",
            )
        ]
    found: list[tuple[int, M]] = []
    for number, row in rows:
        try:
            found.append((number, model.model_validate(row)))
        except ValidationError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            problems.append(
                Problem(
                    f"not a {what}: {first}",
                    line=number,
                    path=path,
                    hint=f"write one object a line: {example}",
                )
            )
    problems.sort(key=lambda p: p.line or 0)
    return found, problems


_EXAMPLE = '{"criterion": "...", "response": "...", "verdict": "MET", "reason": "..."}'


def _same(text: str) -> str:
    return " ".join(text.split())


def guidance_of(
    suite: Suite, path: Path, locator: Locator, calibration: list[tuple[Any, Any, Any]]
) -> tuple[Guidance, list[Problem]]:
    """The file's guidance for its judge, and the problems that make an example unusable
    (located in the rubric file, or in the JSONL file: file, line and field)."""
    from ..judge.prompts import Guidance

    problems: list[Problem] = []
    raw = suite.judge_examples
    rows: list[tuple[int | None, JudgeExample]]
    where: Path | None = None
    if isinstance(raw, str):
        where = path.parent / raw
        found, problems = read_labelled(
            where, JudgeExample, what="judge example", field="judge_examples", example=_EXAMPLE
        )
        rows = list(found)
    else:
        rows = [
            (locator.line(("judge_examples", i)), example) for i, example in enumerate(raw or ())
        ]
    judged = {
        c.id
        for c in (*suite.global_criteria, *(c for case in suite.cases for c in case.criteria))
        if isinstance(c, Requirement | Extract)
    }
    labelled = {_same(example.response) for example, _, _ in calibration}
    examples = []
    for index, (line, example) in enumerate(rows):
        at = f"judge example {index + 1}"
        if example.criterion not in judged:
            message = f"{at}: no judged criterion {example.criterion!r} in this file"
            field, hint = "criterion", f"use one of {', '.join(sorted(judged)) or '(none)'}"
        elif _same(example.response) in labelled:
            field = "response"
            message = (
                f"{at}: its response is also a calibration response of this file; the judge "
                "would be shown a label it is then measured on, and kappa would no longer be a "
                "held-out measure"
            )
            hint = "show the judge other answers than the ones you calibrate it on"
        else:
            examples.append(example)
            continue
        if where is None:
            line = locator.line(("judge_examples", index, field)) or line
        problems.append(
            Problem(
                message,
                line=line,
                field=field if where else f"judge_examples.{field}",
                hint=hint,
                path=where,
            )
        )
    problems.sort(key=lambda p: p.line or 0)
    return Guidance(suite.judge_instructions or None, tuple(examples)), problems
