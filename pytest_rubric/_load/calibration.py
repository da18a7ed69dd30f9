"""Calibration labels: reading a rubric file's ``calibration:`` examples (the measure of
agreement is ``_report.calibration``).

A rubric file's ``calibration:`` is a list, or a JSONL path relative to the
file, of labelled examples ``{case, criterion, response, verdict}`` (``score``
instead of ``verdict`` for a score-kind criterion: MET when it is in the upper
half of the criterion's range, as the judge's score is). Before judged items
run, the judge grades each one like the case's own answers (question and
reference included, through the cache). :class:`Calibration` holds the
agreement of a suite: ``n`` (examples the judge graded; ERRORs are counted
apart), ``accuracy``, ``kappa`` (Cohen's, :func:`~pytest_rubric._report.stats.cohen_kappa`),
``tpr`` (the share of MET labels the judge called MET) and ``tnr`` (of UNMET
labels, UNMET).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .._errors import Problem
from .._schema import CalibrationExample as Example

if TYPE_CHECKING:
    from pydantic import BaseModel

    from .._schema import Suite
    from ..criteria.judge import Requirement

M = TypeVar("M", bound="BaseModel")


def examples_of(
    suite: Suite, path: Path
) -> tuple[list[tuple[Example, Requirement, Any]], list[Problem]]:
    """The suite's calibration examples, each with its judged criterion and case, and the
    problems that make one unusable (located in the rubric file, or in the JSONL file)."""
    from ..criteria.judge import Requirement

    raw = suite.calibration
    if raw is None:
        return [], []
    problems: list[Problem] = []
    where: Path | None = None
    if isinstance(raw, str):
        where = path.parent / raw
        examples, problems = _read_jsonl(where)
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
            message, field = (
                f"{at}: criterion {example.criterion!r} needs a verdict label",
                "verdict",
            )
            hint = "write `verdict: MET` or `verdict: UNMET`"
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


def _read_jsonl(path: Path) -> tuple[list[Example], list[Problem]]:
    example = '{"case": "...", "criterion": "...", "response": "...", "verdict": "MET"}'
    rows, problems = read_labelled(
        path,
        Example,
        what="calibration example",
        field="calibration",
        example=example,
    )
    return [row for _, row in rows], problems


def read_labelled(
    path: Path,
    model: type[M],
    *,
    what: str,
    field: str,
    example: str,
) -> tuple[list[tuple[int, M]], list[Problem]]:
    """A JSONL file of labelled examples (``calibration:``, ``judge_examples:``), each
    validated as ``model`` with its line number, and a problem for each line that is not
    one (read by the one JSONL reader, ``_guards.limits.read_jsonl``)."""
    from pydantic import ValidationError

    from .._guards.limits import NotRegular, read_jsonl

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
