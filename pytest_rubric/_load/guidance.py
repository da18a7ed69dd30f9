"""A rubric file's words to its judge: ``judge_instructions:`` and ``judge_examples:``.

``judge_instructions:`` is text added to the judge's system prompt, fenced as the rubric
author's (:mod:`pytest_rubric.judge.prompts`). ``judge_examples:`` is a list, or a JSONL
path relative to the file (read by the one JSONL reader, ``_guards.limits.read_jsonl``), of
labelled examples ``{criterion, response, verdict, reason}`` shown to the judge before the
answer, in the calls that grade that criterion.

Calibration labels are never shown to the judge: an example whose response is also a
calibration response of the same file (compared with runs of whitespace made one space)
is a collection error, so ``kappa`` stays a measure on answers the judge was not shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import Problem
from .._schema import JudgeExample

if TYPE_CHECKING:
    from .._schema import Suite
    from ..judge.prompts import Guidance
    from .locate import Locator

_EXAMPLE = '{"criterion": "...", "response": "...", "verdict": "MET", "reason": "..."}'


def _same(text: str) -> str:
    return " ".join(text.split())


def guidance_of(
    suite: Suite, path: Path, locator: Locator, calibration: list[tuple[Any, Any, Any]]
) -> tuple[Guidance, list[Problem]]:
    """The file's guidance for its judge, and the problems that make an example unusable
    (located in the rubric file, or in the JSONL file: file, line and field)."""
    from ..criteria.extract import Extract
    from ..criteria.judge import Requirement
    from ..judge.prompts import Guidance, GuidanceExample

    problems: list[Problem] = []
    raw = suite.judge_examples
    rows: list[tuple[int | None, JudgeExample]]
    where: Path | None = None
    if isinstance(raw, str):
        where = path.parent / raw
        rows, problems = _read_jsonl(where)
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
        if where is None:
            line = locator.line(("judge_examples", index, "criterion")) or line
        if example.criterion not in judged:
            problems.append(
                Problem(
                    f"{at}: no judged criterion {example.criterion!r} in this file",
                    line=line,
                    field="criterion" if where else "judge_examples.criterion",
                    hint=f"use one of {', '.join(sorted(judged)) or '(none)'}",
                    path=where,
                )
            )
            continue
        if _same(example.response) in labelled:
            if where is None:
                line = locator.line(("judge_examples", index, "response")) or line
            problems.append(
                Problem(
                    f"{at}: its response is also a calibration response of this file; the "
                    "judge would be shown a label it is then measured on, and kappa would no "
                    "longer be a held-out measure",
                    line=line,
                    field="response" if where else "judge_examples.response",
                    hint="show the judge other answers than the ones you calibrate it on",
                    path=where,
                )
            )
            continue
        examples.append(
            GuidanceExample(example.criterion, example.response, example.verdict, example.reason)
        )
    problems.sort(key=lambda p: p.line or 0)
    return Guidance(suite.judge_instructions or None, tuple(examples)), problems


def _read_jsonl(path: Path) -> tuple[list[tuple[int | None, JudgeExample]], list[Problem]]:
    from .calibration import read_labelled

    rows, problems = read_labelled(
        path,
        JudgeExample,
        what="judge example",
        field="judge_examples",
        example=_EXAMPLE,
    )
    return list(rows), problems
