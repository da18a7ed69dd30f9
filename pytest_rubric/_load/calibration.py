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

__all__ = ["Example", "examples_of", "read_labelled"]

M = TypeVar("M", bound="BaseModel")

# A calibration file is read whole, like a rubric file; past this it is a mistake.
_MAX_EXAMPLES = 10_000


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
        if case is None:
            problems.append(
                _problem(
                    f"{at}: no case {example.case!r} in this file",
                    where,
                    "case",
                    f"use one of {', '.join(cases) or '(no case)'}",
                )
            )
            continue
        judged = {
            c.id: c for c in (*suite.global_criteria, *case.criteria) if isinstance(c, Requirement)
        }
        criterion = judged.get(example.criterion)
        if criterion is None:
            problems.append(
                _problem(
                    f"{at}: case {example.case!r} has no judged criterion {example.criterion!r}",
                    where,
                    "criterion",
                    f"use one of {', '.join(judged) or '(none)'}",
                )
            )
            continue
        wants = "score" if criterion.kind == "score" else "verdict"
        if wants == "score":
            usable = (
                example.verdict is None
                and example.score is not None
                and math.isfinite(example.score)
            )
        else:
            usable = example.score is None and example.verdict is not None
        if not usable:
            hint = (
                f"write `score: n` ({criterion.min_score:g} to {criterion.max_score:g})"
                if wants == "score"
                else "write `verdict: MET` or `verdict: UNMET`"
            )
            problems.append(
                _problem(
                    f"{at}: criterion {example.criterion!r} needs a {wants} label",
                    where,
                    wants,
                    hint,
                )
            )
            continue
        found.append((example, criterion, case))
    return found, problems


def _problem(message: str, where: Path | None, field: str, hint: str) -> Problem:
    return Problem(
        message, field=f"calibration.{field}" if where is None else field, hint=hint, path=where
    )


def _read_jsonl(path: Path) -> tuple[list[Example], list[Problem]]:
    example = '{"case": "...", "criterion": "...", "response": "...", "verdict": "MET"}'
    rows, problems = read_labelled(
        path,
        Example,
        what="calibration example",
        field="calibration",
        example=example,
        limit=_MAX_EXAMPLES,
        too_many="calibrate on a sample",
    )
    return [row for _, row in rows], problems


def read_labelled(
    path: Path,
    model: type[M],
    *,
    what: str,
    field: str,
    example: str,
    limit: int,
    too_many: str,
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
        if len(found) >= limit:
            problems.append(
                Problem(f"more than {limit:,} examples", line=number, path=path, hint=too_many)
            )
            break
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
