"""The ``--rubric-json`` document, described once as pydantic models, and read back with them.

A run writes the document (``_render.json.json_chunks``); ``--rubric-baseline`` and
``merge`` read one back. A document read back is input like any other: it may
have been edited by hand, cut short, or written by something else. So it is
validated field by field before anything uses it:

* strict types: ``"0.8"`` is not a number and ``true`` is not 1;
* finite numbers: a NaN score would compare false with everything and silently
  turn a gate off;
* every field a run writes is present;
* fields this version does not know are allowed and ignored, so a document from
  a newer version (``samples``, ``pass_rate``, ``possible``, ...) still reads.

A failure is a :class:`DocumentError` that names the file and each bad field,
e.g. ``base.json: results[3].score: expected a number, got 'high'``.

``passed`` is never taken from the document: it is recomputed from the
criteria with the rule a run uses (:func:`pytest_rubric._grade.scoring.passes`), so
a shard cannot claim a pass its criteria do not show.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from .._grade.scoring import item_passes, passes, score
from .._guards.secrets import known_keys, shorten
from .._llm.base import mean_raw_score
from .._results import CaseResult, CriterionResult, Sample, Verdict
from .._trace import Trace
from .document_format import VERSION, DocumentError
from .document_models import (
    CriterionModel,
    DocumentModel,
    LeaderboardRowModel,
    ResultModel,
    SampleModel,
    TraceModel,
)
from .run import RunInfo

__all__ = [
    "VERSION",
    "CriterionModel",
    "Document",
    "DocumentError",
    "DocumentModel",
    "LeaderboardRowModel",
    "ResultModel",
    "parse_document",
]

# How many bad fields one error lists: enough to fix a hand-edited file in one go,
# few enough that a file of garbage does not flood the terminal.
_SHOWN_ERRORS = 5
# A wrong value is quoted so the user can find it, never at full length: it may be
# a megabyte of anything.
_QUOTED = 40


@dataclass(slots=True)
class Document:
    """A document read back: its results, and what was recomputed rather than trusted."""

    results: list[CaseResult]
    recomputed: list[str] = field(default_factory=list)  # one line per ``passed`` overruled
    calibration: list[dict[str, Any]] = field(default_factory=list)  # judge_audit's, as read
    run: RunInfo | None = None  # None: a document of an older version, which had no ``run``
    gates: list[dict[str, Any]] = field(default_factory=list)  # the gates' outcomes, as read


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object hook for json.loads: two values for one key is an ambiguity, not the last one."""
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise DocumentError(f"the key {_got(key)} appears twice in one object")
        data[key] = value
    return data


def _where(loc: tuple[int | str, ...]) -> str:
    """``("results", 3, "score")`` as ``results[3].score``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "the document"


def _got(value: Any) -> str:
    """A wrong value as the user wrote it in JSON, cut short and redacted."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return shorten(repr(value), _QUOTED, *known_keys())  # redacted before the cut


_EXPECTED = {
    "float_type": "a number",
    "finite_number": "a finite number",
    "int_type": "a whole number",
    "bool_type": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "model_type": "an object",
    "dict_type": "an object",
}


def _problem(error: Any) -> str:
    """One pydantic error as ``where: expected what, got what``."""
    where, kind, ctx = _where(tuple(error["loc"])), error["type"], error.get("ctx") or {}
    if kind == "missing":
        return f"{where}: missing"
    if kind in _EXPECTED:
        expected = _EXPECTED[kind]
    elif kind == "literal_error":
        expected = f"one of {ctx.get('expected')}"
    elif kind == "greater_than_equal":
        expected = f"at least {ctx.get('ge')}"
    elif kind == "less_than_equal":
        expected = f"at most {ctx.get('le')}"
    else:  # a kind this version does not phrase itself: pydantic's own words
        message = str(error["msg"])
        expected = message[:1].lower() + message[1:]
        return f"{where}: {expected}, got {_got(error.get('input'))}"
    return f"{where}: expected {expected}, got {_got(error.get('input'))}"


def _invalid(name: str, exc: ValidationError) -> DocumentError:
    errors = exc.errors(include_url=False)
    lines = [f"{name}: {_problem(e)}" for e in errors[:_SHOWN_ERRORS]]
    if len(errors) > _SHOWN_ERRORS:
        lines.append(f"{name}: ... and {len(errors) - _SHOWN_ERRORS} more")
    lines.append(
        f"{name} is not a valid --rubric-json document; write it again with --rubric-json "
        "(or fix the fields above)"
    )
    return DocumentError("\n".join(lines))


def _criteria(models: list[CriterionModel]) -> list[CriterionResult]:
    return [
        CriterionResult(
            id=c.id,
            type=c.type,
            axis=c.axis,
            weight=c.weight,
            verdict=Verdict(c.verdict),
            credit=c.credit,
            reason=c.reason,
            required=c.required,
            agreement=c.agreement,
            votes=[{"verdict": s.verdict, "credit": s.credit} for s in c.samples]
            if c.samples is not None
            else None,
            tags=tuple(c.tags),
            evidence_ok=c.evidence_ok,
            judges=dict(c.judges) if c.judges is not None else None,
            requirement=c.requirement,
        )
        for c in models
    ]


def _sample(model: SampleModel, min_score: float | None) -> Sample:
    criteria = _criteria(model.criteria)
    graded = score(criteria)
    return Sample(
        score=graded.score,
        raw_score=graded.raw_score,
        passed=passes(criteria, case_score=graded.score, min_score=min_score),
        criteria=criteria,
        response=model.response,
        llm_raw_score=model.llm_raw_score,
        trace=_trace(model.trace),
    )


def _trace(model: TraceModel | None) -> Trace | None:
    return None if model is None else Trace.from_dict(model.model_dump())


def _case_result(model: ResultModel) -> CaseResult:
    criteria = _criteria(model.criteria)
    # The score is recomputed from the criteria, like `passed`: a shard's figures are
    # what it claims, the criteria are what was graded. With several samples, from
    # each sample's criteria, and the item's verdict from its pass_when rule.
    graded = score(criteria)
    samples = [_sample(s, model.min_score) for s in model.samples or ()]
    first = model.samples[0] if model.samples else None
    if len(samples) > 1:
        item_score = math.fsum(s.score for s in samples) / len(samples)
        raw_score = math.fsum(s.raw_score for s in samples) / len(samples)
        passed = item_passes(
            samples, pass_when=model.pass_when, min_score=model.min_score, score=item_score
        )
        criteria = samples[0].criteria
    else:
        samples = []
        item_score, raw_score = graded.score, graded.raw_score
        passed = item_passes(
            [
                Sample(
                    graded.score,
                    graded.raw_score,
                    _passes_one(criteria, graded.score, model),
                    criteria,
                )
            ],
            pass_when=model.pass_when,
            min_score=model.min_score,
            score=graded.score,
        )
    # Undecided without the judge (see _grade.bounds): never read back as a pass.
    bounds = (
        None if model.skipped_bounds is None else (model.skipped_bounds[0], model.skipped_bounds[1])
    )
    passed = passed and bounds is None
    return CaseResult(
        nodeid=model.nodeid,
        suite=model.suite,
        case=model.case,
        subject=model.subject,
        score=item_score,
        raw_score=raw_score,
        min_score=model.min_score,
        passed=passed,
        criteria=criteria,
        fluency=model.fluency,
        confidence=model.confidence,
        naive_score=model.naive_score,
        style_score=model.style_score,
        flags=list(model.flags),
        question=model.question,
        response=model.response,
        possible=graded.positive,
        tags=list(model.tags),
        pass_when=model.pass_when,
        level=model.level,
        samples=samples,
        probe=[dict(record) for record in model.probe],
        ranked=model.ranked,
        llm_raw_score=mean_raw_score(s.llm_raw_score for s in samples)
        if samples
        else model.llm_raw_score,
        trace=samples[0].trace if samples else _trace(first.trace if first else None),
        skipped_bounds=bounds,
    )


def _passes_one(criteria: list[CriterionResult], case_score: float, model: ResultModel) -> bool:
    return passes(criteria, case_score=case_score, min_score=model.min_score)


def parse_document(text: str, *, name: str) -> Document:
    """The results of a ``--rubric-json`` document's ``text``; ``name`` (the file) is in
    every error. Raises :class:`DocumentError`, and nothing else, for any text."""
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates)
    except DocumentError as exc:
        raise DocumentError(f"{name}: {exc}; pass a file written by --rubric-json") from None
    except RecursionError:
        raise DocumentError(
            f"{name}: nested too deeply to be a --rubric-json document; pass a file written by "
            "--rubric-json"
        ) from None
    except ValueError as exc:
        raise DocumentError(
            f"{name}: not JSON ({exc}); pass a file written by --rubric-json"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise DocumentError(
            f'{name}: not a --rubric-json document (no "results" list); pass a file written by '
            "--rubric-json"
        )
    version = data.get("version")
    if type(version) is not int or version != VERSION:  # true == 1 in Python, not here
        what = f"version {_got(version)} is not {VERSION}" if "version" in data else "no version"
        raise DocumentError(f"{name}: {what}; write it again with this pytest-rubric")
    try:
        document = DocumentModel.model_validate(data)
    except ValidationError as exc:
        raise _invalid(name, exc) from None
    results, recomputed = [], []
    for index, model in enumerate(document.results):
        result = _case_result(model)
        if not math.isclose(model.score, result.score, abs_tol=1e-9):
            recomputed.append(
                f"{name}: results[{index}] ({model.nodeid}) says score {model.score:.4g}, but "
                f"its criteria give {result.score:.4g}; counted as {result.score:.4g}"
            )
        if model.passed and not result.passed:
            reasons = result.failure_reasons()
            why = shorten(reasons[0], _QUOTED * 3) if reasons else "nothing weighted was graded"
            recomputed.append(
                f"{name}: results[{index}] ({model.nodeid}) says passed, but its criteria do "
                f"not: {why}; counted as not passed"
            )
        results.append(result)
    audit = document.judge_audit
    calibration = [c.model_dump() for c in audit.calibration] if audit is not None else []
    run = RunInfo.from_dict(document.run.model_dump()) if document.run is not None else None
    fields = {"gate", "subject", "nodeid", "failed", "message"}
    gates = [g.model_dump(include=fields) for g in document.gates]
    return Document(results, recomputed, calibration, run=run, gates=gates)
