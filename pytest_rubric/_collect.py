"""Rubric files as pytest collectors, (case, subject) pairs as pytest items.

An item's ``runtest`` obtains the response (inline, from a responses file,
or by calling the target), grades it and asserts the grade; an answer that
could not be evaluated is reported as an error, never as a pass, and
``repr_failure`` prints the per-criterion table.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._base import RESULTS_KEY
from ._calls import CallRunner, CallTimeout, make_importable, resolve_import, run_sync
from ._errors import Problem, RubricAssertionError, RubricEvaluationError, RubricLoadError
from ._grader import CompiledRubric
from ._loader import LoadedSuite, load_suite, paused_gc
from ._result import CaseResult, Recorded, Verdict
from ._schema import own_mark
from ._scoring import score as score_results
from ._table import criteria_table

if TYPE_CHECKING:
    from ._session import RubricSession, _ResponseDir

__all__ = [
    "RubricFile",
    "RubricItem",
    "junit_properties",
    "record",
    "settle",
]


def record(item: pytest.Item, result: CaseResult, *, raised: bool = False) -> None:
    """Keep ``result`` for the item's report (see :func:`settle`)."""
    item.stash.setdefault(RESULTS_KEY, []).append(Recorded(result, raised))


def settle(recorded: list[Recorded], escaped: BaseException | None) -> list[CaseResult]:
    """The results of a test phase that count in the session's outputs and gates.

    A result ``assert_rubric`` raised counts only when its exception escaped
    the test: a test that catches ``RubricAssertionError`` (``pytest.raises``)
    expected the answer to fail, and that failure is not the subject's.
    """
    return [
        r.result for r in recorded if not r.raised or getattr(escaped, "result", None) is r.result
    ]


def junit_properties(result: CaseResult) -> list[tuple[str, str]]:
    """What ``--junitxml`` carries of a result: ``rubric_case``, ``rubric_subject``,
    ``rubric_score``, ``rubric_min_score``, ``rubric_passed`` and, when some went the
    wrong way or could not be evaluated, ``rubric_failed_criteria`` (comma-separated ids)."""
    properties = [
        ("rubric_case", result.case),
        ("rubric_subject", result.subject),
        ("rubric_score", f"{result.score:.4f}"),
        # "none": a report-only case, which has no pass mark
        ("rubric_min_score", "none" if result.min_score is None else f"{result.min_score:.4f}"),
        ("rubric_passed", str(result.passed).lower()),
    ]
    failed = [c.id for c in result.criteria if c.went_wrong or c.verdict is Verdict.ERROR]
    if failed:
        properties.append(("rubric_failed_criteria", ",".join(failed)))
    return properties


@dataclass(frozen=True, slots=True)
class _Source:
    """Where one subject's response to one case comes from."""

    text: str | None = None
    target: Any = None
    target_name: str | None = None
    unavailable: str | None = None  # why there is no response
    timeout: float | None = None  # a user's target is bounded; a live model has its own
    runner: CallRunner | None = None  # what runs a bounded target

    def fetch(self, case: Any) -> tuple[str, None] | tuple[None, str]:
        """The response text, or None and why there is none."""
        if self.unavailable is not None:
            return None, self.unavailable
        if self.text is not None:
            return self.text, None
        try:
            if self.runner is None or self.timeout is None:
                value = run_sync(self.target(case))
            else:
                value = self.runner.call(self.target, case, timeout=self.timeout)
        except CallTimeout as exc:
            return None, f"target {self.target_name} {exc}"
        except Exception as exc:
            return None, f"target {self.target_name} raised {type(exc).__name__}: {exc}"
        if not isinstance(value, str):
            return None, (
                f"target {self.target_name} returned {type(value).__name__}, "
                "not the response text; return a str"
            )
        return value, None


class RubricFile(pytest.File):
    """A ``*.rubric.yaml`` / ``*.rubric.yml`` / ``*.rubric.json`` file."""

    def __init__(self, *, rubric_session: RubricSession, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rubric_session = rubric_session

    def collect(self) -> Iterator[RubricItem]:
        session = self.rubric_session
        try:
            with paused_gc():
                loaded = load_suite(self.path)
                items = list(self._items(loaded))
        except RubricLoadError:
            session.collection_errors += 1
            raise
        yield from items

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, RubricLoadError):
            try:
                shown: Path | str = self.path.relative_to(self.config.invocation_params.dir)
            except ValueError:
                shown = self.path
            return excinfo.value.render(shown)
        return super().repr_failure(excinfo)

    def _items(self, loaded: LoadedSuite) -> Iterator[RubricItem]:
        session = self.rubric_session
        problems: list[Problem] = []
        dirs: list[_ResponseDir] = []
        if loaded.responses_dir is not None:
            local = session.response_dir(loaded.responses_dir)
            problems += [replace(p, field=p.field or "responses") for p in local.problems]
            dirs.append(local)
        global_dir = session.global_responses()
        if global_dir is not None:
            dirs.append(global_dir)
        targets: dict[str, tuple[str, Any]] = {}
        suite = loaded.suite
        make_importable(self.config.rootpath, self.path.parent)  # for callables and targets
        for i, case in enumerate(suite.cases):
            path = case.target or suite.target or session.settings.target
            if path is None or path in targets:
                continue
            try:
                targets[path] = (path.rpartition(":")[2], resolve_import(path))
            except Exception as exc:
                problems.append(
                    Problem(
                        f"cannot import target {path!r}: {type(exc).__name__}: {exc}",
                        line=loaded.case_lines[i],
                        case=case.id,
                        field="target",
                        hint="check the import path and that its module is importable from the rootdir",
                    )
                )
        if problems:
            raise RubricLoadError(self.path, problems)

        grader = session.grader
        for i, case in enumerate(suite.cases):
            compiled = grader.compile(
                case,
                global_criteria=suite.global_criteria,
                min_score=own_mark(case, suite),
            )
            sources = self._sources(case, loaded, dirs, targets)
            line = loaded.case_lines[i]
            if not sources:
                yield RubricItem.from_parent(
                    self,
                    name=case.id,
                    compiled=compiled,
                    suite_name=loaded.name,
                    subject="",
                    source=_Source(
                        unavailable=(
                            f"case {case.id!r} has no response to grade: give it `response:`, "
                            "`responses: {subject: ...}` or `target:`, set `responses:` in the file, "
                            "or pass --rubric-responses DIR / --rubric-target"
                        )
                    ),
                    line=line,
                )
            for subject, source in sources.items():
                yield RubricItem.from_parent(
                    self,
                    name=f"{case.id}[{subject}]",
                    compiled=compiled,
                    suite_name=loaded.name,
                    subject=subject,
                    source=source,
                    line=line,
                )

    def _sources(
        self,
        case: Any,
        loaded: LoadedSuite,
        dirs: list[_ResponseDir],
        targets: dict[str, tuple[str, Any]],
    ) -> dict[str, _Source]:
        sources: dict[str, _Source] = {}
        origins: dict[str, str] = {}

        def add(subject: str, source: _Source, origin: str) -> None:
            if subject in sources:
                source = _Source(
                    unavailable=(
                        f"subject {subject!r} has two responses for case {case.id!r} "
                        f"({origins[subject]} and {origin}); keep one"
                    )
                )
            sources[subject] = source
            origins[subject] = origin

        if case.response is not None:
            add(case.subject or "inline", _Source(text=case.response), "`response:`")
        for subject, text in (case.responses or {}).items():
            add(subject, _Source(text=text), "`responses:`")
        for directory in dirs:
            for response_file in directory.files:
                entry = response_file.entries.get(case.id)
                suite = response_file.suites.get(case.id)
                if entry is not None and suite not in (None, loaded.name):
                    entry = None
                if entry is None:
                    add(
                        response_file.subject,
                        _Source(
                            unavailable=(
                                f"subject {response_file.subject!r} has no response for case {case.id!r}: "
                                f"add a line to {response_file.path}: "
                                f'{{"id": "{case.id}", "response": "..."}}'
                            )
                        ),
                        str(response_file.path),
                    )
                else:
                    directory.used.add((response_file.subject, case.id))
                    add(
                        response_file.subject,
                        _Source(text=entry[0]),
                        f"{response_file.path}:{entry[1]}",
                    )
        target_path = case.target or loaded.suite.target or self.rubric_session.settings.target
        if target_path is not None:
            name, function = targets[target_path]
            source = _Source(
                target=function,
                target_name=target_path,
                timeout=case.timeout or self.rubric_session.settings.call_timeout,
                runner=self.rubric_session.grader.calls,
            )
            add(name, source, f"target {target_path}")
        model = self.rubric_session.model
        if model is not None:
            add(
                model.subject,
                _Source(target=model, target_name=model.spec.name),
                f"--rubric-model {model.spec.name}",
            )
        return sources


class RubricItem(pytest.Item):
    """One response graded against one case."""

    def __init__(
        self,
        *,
        compiled: CompiledRubric,
        suite_name: str,
        subject: str,
        source: _Source,
        line: int | None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.compiled = compiled
        self.suite_name = suite_name
        self.subject = subject
        self.source = source
        self.line = line
        if compiled.judged:
            self.add_marker("llm_judge")

    @property
    def rubric_session(self) -> RubricSession:
        parent = self.parent
        assert isinstance(parent, RubricFile)
        return parent.rubric_session

    def runtest(self) -> None:
        """Obtain the response, grade it, assert the grade.

        Grading belongs to the call phase, so ``--setup-plan``, ``--setup-only``
        and ``--collect-only`` stay dry runs: no target, no judge, no result.
        An answer that could not be evaluated raises :class:`RubricEvaluationError`,
        which the plugin reports as an error, never a failure or a pass.
        """
        response, problem = self.source.fetch(self.compiled.rubric)
        if response is None:
            problem = problem or "no response"
            if self.subject:
                record(
                    self,
                    self.rubric_session.grader.unavailable(
                        self.compiled,
                        problem,
                        nodeid=self.nodeid,
                        suite=self.suite_name,
                        subject=self.subject,
                    ),
                )
            raise RubricEvaluationError(problem, result=None)
        result = self.rubric_session.grader.grade(
            response,
            self.compiled,
            nodeid=self.nodeid,
            suite=self.suite_name,
            subject=self.subject,
            judged=self.rubric_session.judge_rubric(self.nodeid, self.compiled, response),
        )
        if result.errors:
            record(self, result)
            raise RubricEvaluationError(criteria_table(result), result=result)
        if score_results(result.criteria).empty:
            pytest.skip(
                f"nothing graded: {result.skipped[0].reason}"
                if result.skipped
                else "nothing graded"
            )
        record(self, result)
        if not result.passed:
            raise RubricAssertionError(criteria_table(result), result=result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, RubricAssertionError | RubricEvaluationError):
            return str(excinfo.value)  # the criterion table, or why there is no answer
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, (self.line - 1 if self.line else None), f"rubric: {self.name}"
