"""Labelled examples a rubric file gives, as a list or a JSONL path relative to the file:
``calibration:``, which the judge is measured on (``_report.audit``), and
``judge_examples:``, which it is shown (:mod:`pytest_rubric.judge.prompts`). A judge
example whose response is also a calibration response is a collection error, so ``kappa``
stays a held-out measure.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from .._errors import Problem
from .._guards.limits import NotRegular, kind_of, read_jsonl
from .._guards.secrets import abridged
from .._schema import CalibrationExample, Case, JudgeExample, Suite
from ..criteria.extract import Extract
from ..criteria.judge import Requirement
from ..criteria.normalize import normalize
from .locate import path_hint, run_relative

if TYPE_CHECKING:
    from ..judge.prompts import Guidance
    from .locate import Locator

M = TypeVar("M", bound=BaseModel)

_CALIBRATION = '{"case": "...", "criterion": "...", "response": "...", "verdict": "MET"}'
_EXAMPLE = '{"criterion": "...", "response": "...", "verdict": "MET", "reason": "..."}'
_LINES: dict[type[BaseModel], str] = {CalibrationExample: _CALIBRATION, JudgeExample: _EXAMPLE}
# The rubric file's key that gives them, and what a problem calls one.
_KEYS = {
    CalibrationExample: ("calibration", "calibration example"),
    JudgeExample: ("judge_examples", "judge example"),
}


def examples_of(
    suite: Suite, path: Path, locator: Locator
) -> tuple[list[tuple[CalibrationExample, Requirement, Any]], list[Problem]]:
    """The suite's calibration examples, each with its judged criterion and case, and the
    problems that make one unusable (located in the rubric file, or in the JSONL file)."""
    labels = _Labels(suite, path, locator, CalibrationExample)
    # A case id given twice is a problem of its own: a label is checked against the case of
    # that id that has its criterion, so the other one adds no false problem.
    cases: dict[str, list[Case]] = {}
    for each in suite.cases:
        cases.setdefault(each.id, []).append(each)
    written = _written(json_file=labels.where is not None)
    examples = []
    for index, line, at, example in labels:
        same = cases.get(example.case, [])
        case = next((c for c in same if example.criterion in _judged(suite, c)), None)
        case = case or next(iter(same), None)
        judged = _judged(suite, case)
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
            span = f"{criterion.min_score:g} to {criterion.max_score:g}"
            hint = f"write {written('score', None)} ({span})"
            hint += " instead of `verdict`" if example.verdict is not None else ""
        elif criterion.kind != "score" and (example.score is not None or example.verdict is None):
            message = f"{at}: criterion {example.criterion!r} needs a verdict label"
            field = "verdict"
            hint = f"write {written('verdict', 'MET')} or {written('verdict', 'UNMET')}"
            hint += " instead of `score`" if example.score is not None else ""
        else:
            examples.append((example, criterion, case))
            continue
        labels.refuse(
            index, line, message, field, hint, case=example.case, criterion=example.criterion
        )
    return examples, labels.sorted_problems()


def _judged(suite: Suite, case: Case | None) -> dict[str, Requirement]:
    """The judged criteria a calibration label of ``case`` may name: the file's, the case's."""
    return {
        c.id: c
        for c in (*suite.global_criteria, *(case.criteria if case else ()))
        if isinstance(c, Requirement)
    }


def _written(*, json_file: bool) -> Callable[[str, str | None], str]:
    """How a hint writes a field and its value (None: a number): as a line of a JSONL file
    does, or as YAML does."""
    if json_file:
        return lambda name, value: f'`"{name}": {"n" if value is None else json.dumps(value)}`'
    return lambda name, value: f"`{name}: {'n' if value is None else value}`"


def _numbers(rows: Sequence[tuple[int | None, Any]], problems: list[Problem]) -> dict[Any, int]:
    """Each JSONL line's place among the file's examples (its lines that are not blank, read
    or not), so that "example 3" is the third a reader counts."""
    lines = {n for n, _ in rows if n is not None} | {p.line for p in problems if p.line}
    return {line: place for place, line in enumerate(sorted(lines), start=1)}


class _Labels(Generic[M]):
    """The labelled examples of ``model`` a rubric file gives under its ``key``: a list, or
    the JSONL file it names (``where``, as the run names it), each with its line there; and
    their problems, located in the one or the other (a file that cannot be read is one, at
    ``key``'s line)."""

    def __init__(self, suite: Suite, rubric: Path, locator: Locator, model: type[M]) -> None:
        self.key, self.what = _KEYS[model]
        self.locator = locator
        raw: str | list[M] | None = getattr(suite, self.key)
        self.where: Path | None = None
        self.rows: list[tuple[int | None, M]] = []
        self.problems: list[Problem] = []
        if not isinstance(raw, str):
            self.rows = [(None, example) for example in raw or ()]
            return
        self.where = path = run_relative(rubric.parent / raw)
        try:
            found, self.problems = read_labelled(path, model, what=self.what)
        except NotRegular as exc:
            why = f"this is {exc}, not a regular file"
        except UnicodeDecodeError as exc:
            why = f"not UTF-8 text ({exc.reason})"
        except OSError as exc:
            why = (exc.strerror or type(exc).__name__).lower()  # str(exc) repeats the whole path
        else:
            self.rows = list(found)
            return
        otherwise = f"write the {self.what}s under `{self.key}:` as a list"
        self.problems = [
            Problem(
                f"cannot read {path}: {why}",
                line=locator.line((self.key,)),
                field=self.key,
                hint=path_hint(self.key, raw, rubric, suffix=".jsonl", otherwise=otherwise),
            )
        ]

    def __iter__(self) -> Iterator[tuple[int, int | None, str, M]]:
        """Each example with its index, its line, and how a problem names it ("judge example
        3": the third a reader counts)."""
        numbers = _numbers(self.rows, self.problems)
        for index, (line, example) in enumerate(self.rows):
            yield index, line, f"{self.what} {numbers.get(line, index + 1)}", example

    def refuse(
        self, index: int, line: int | None, message: str, field: str, hint: str, **named: str
    ) -> None:
        """A problem of example ``index`` (the one at ``line``, in a JSONL file) at its ``field``."""
        self.problems.append(
            Problem(
                message,
                line=line if self.where else self.locator.line((self.key, index, field)),
                field=field if self.where else f"{self.key}.{field}",
                hint=hint,
                path=self.where,
                **named,
            )
        )

    def sorted_problems(self) -> list[Problem]:
        return sorted(self.problems, key=lambda p: p.line or 0)


def read_labelled(
    path: Path, model: type[M], *, what: str
) -> tuple[list[tuple[int, M]], list[Problem]]:
    """A JSONL file of labelled examples, each validated as ``model`` with its line number,
    and a problem for each line that is not one; raises what reading the file raises
    (``OSError``, ``UnicodeDecodeError``, ``NotRegular``)."""
    rows, problems = read_jsonl(path, example=_LINES[model])
    numbers = _numbers(rows, problems)
    found: list[tuple[int, M]] = []
    for number, row in rows:
        try:
            found.append((number, model.model_validate(row)))
        except ValidationError as exc:
            at = f"{what} {numbers[number]}"
            problems += [
                _row_problem(error, row, at=at, line=number, path=path, model=model)
                for error in exc.errors()
            ]
    problems.sort(key=lambda p: p.line or 0)
    return found, problems


def _row_problem(
    error: Any, row: dict[str, Any], *, at: str, line: int, path: Path, model: type[BaseModel]
) -> Problem:
    """What is wrong with one field of a JSONL example, said in the file's own terms."""
    name = str(error["loc"][0]) if error["loc"] else None
    got, written = error.get("input"), _written(json_file=True)
    fields = list(model.model_fields)
    hint = f"the fields are {', '.join(fields)}"
    if error["type"] == "missing":
        message = f"{at}: missing required field `{name}`"
        hint = f"add {written(str(name), '...')}"
    elif error["type"] == "extra_forbidden":
        message = f"{at}: unknown field `{name}`"
        if close := difflib.get_close_matches(str(name), fields, n=1, cutoff=0.6):
            hint = f"did you mean `{close[0]}`? {hint}"
    elif name == "verdict":
        message = f"{at}: `verdict` is MET or UNMET, not {_shown(got)}"
        hint = f"write {written('verdict', 'MET')} or {written('verdict', 'UNMET')}"
    else:
        message = f"{at}: `{name}`: {error['msg']}, not {_shown(got)}"
        hint = f"write it as this line does: {_LINES[model]}"
    return Problem(
        message,
        line=line,
        case=_label(row.get("case")),
        criterion=_label(row.get("criterion")),
        field=name,
        hint=hint,
        path=path,
    )


def _label(value: Any) -> str | None:
    """A case or criterion id as a line gives it, to name the problem by; None if unusable."""
    return value if isinstance(value, str) and value.isprintable() and len(value) <= 60 else None


def _shown(value: Any) -> str:
    """A value read from a JSONL line as a message quotes it: as JSON, cut to 60 characters."""
    if isinstance(value, dict | list):
        return kind_of(value)
    return abridged(json.dumps(value, ensure_ascii=False))


def _same(text: str) -> str:
    """A response as a check reads it (case, accents, dashes and spaces folded): a calibration
    answer shown again with its case changed is still the answer the judge is measured on."""
    return normalize(text)


def guidance_of(
    suite: Suite, path: Path, locator: Locator, calibration: list[tuple[Any, Any, Any]]
) -> tuple[Guidance, list[Problem]]:
    """The file's guidance for its judge, and the problems that make an example unusable
    (located in the rubric file, or in the JSONL file: file, line and field)."""
    from ..judge.prompts import Guidance

    labels = _Labels(suite, path, locator, JudgeExample)
    judged = {
        c.id
        for c in (*suite.global_criteria, *(c for case in suite.cases for c in case.criteria))
        if isinstance(c, Requirement | Extract)
    }
    labelled = {_same(example.response) for example, _, _ in calibration}
    examples = []
    for index, line, at, example in labels:
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
        labels.refuse(index, line, message, field, hint, criterion=example.criterion)
    return Guidance(suite.judge_instructions or None, tuple(examples)), labels.sorted_problems()
