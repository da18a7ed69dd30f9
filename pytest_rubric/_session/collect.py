"""Rubric files as pytest collectors, (case, subject) pairs as pytest items, and the one
evaluation (:func:`evaluate`) they share with ``assert_rubric``.

An item's ``runtest`` obtains the response (inline, from a responses file, or by calling
the target), grades it and asserts the grade; an answer that could not be evaluated is an
error, never a pass. ``repr_failure`` prints the per-criterion table, or, when the target
raised, the application's traceback as pytest reports a test's, with what the plugin made
of it as a section below.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sysconfig
import traceback
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .._defaults import PassWhen, subject_named
from .._errors import Problem, RubricAssertionError, RubricEvaluationError, RubricLoadError
from .._grade.bounds import nothing_graded, settle_unjudged, skip_reason
from .._grade.grader import CompiledRubric, Grader, context_of
from .._grade.sources import Source, Target
from .._guards.calls import (
    UserCodeError,
    bounded,
    described,
    make_importable,
    resolve_import,
    shadowed,
    unprintable,
)
from .._guards.outgoing import outgoing
from .._load.loader import LoadedSuite, load_suite
from .._render.table import answer_lines, criteria_table, since_baseline
from .._results import CaseResult
from .._schema import own_mark
from ..criteria.callable import CallableCriterion
from ..criteria.check import Answer
from ..criteria.model import CriterionModel
from ..judge.requests import JudgeKey
from .heap import paused
from .inputs import ResponseDir, no_response
from .items import RESULTS_KEY, record
from .judging import answer_key
from .results import CRASHED

if TYPE_CHECKING:
    from .session import RubricSession


def added_criterion_types(
    node: pytest.Item | pytest.Collector, path: Path | None = None
) -> list[type[CriterionModel]]:
    """The criterion types the plugins and conftests in ``node``'s scope add, or in the scope
    of the rubric file at ``path`` (a test's ``assert_rubric`` on a file in ``evals/``)."""
    hook = node.ihook if path is None else node.session.gethookproxy(path)
    added = hook.pytest_rubric_criterion_types(config=node.config)
    return [model for models in added for model in models]


def _first(*values: Any) -> Any:
    return next(value for value in values if value is not None)


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
    missing: Mapping[int, str] | None = None,
) -> CaseResult:
    """The result of ``responses`` (one per sample, at least one) to ``compiled``.

    ``key`` is the judge's key of the first sample (the others are its
    ``of_sample(i)``); without a session the judged criteria are SKIPPED. A response may
    carry its trace (an :class:`~pytest_rubric.criteria.check.Answer`). ``missing``: the
    samples, by their place among all of them, that have no answer, and why: each is a
    sample whose every criterion is ERROR, beside the others graded (the item is an ERROR).
    """
    missing = missing or {}
    answers = [r if isinstance(r, Answer) else Answer(r) for r in responses]
    texts = [a.text for a in answers]
    places = [i for i in range(len(answers) + len(missing)) if i not in missing]
    judged = (
        session.judge_samples(
            [key.of_sample(i) for i in places],
            compiled,
            texts,
            # What the judge is shown beside each answer: none without a judged criterion.
            [context_of(a.trace, compiled.rubric) for a in answers] if compiled.judged else (),
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
    for place, reason in sorted(missing.items()):
        unanswered = grader.unavailable(
            compiled, reason, nodeid=nodeid, suite=suite, subject=subject
        )
        samples.insert(place, unanswered)
    probe = (
        session.audit.probe(key, compiled, texts[0], judged[0])
        if session is not None and not missing  # an ERROR item is not probed
        else []
    )
    result = grader.combine(samples, pass_when=pass_when, level=level, probe=probe)
    if session is not None and session.unjudged is not None:
        result = settle_unjudged(result)  # graded on what can be: see _grade.bounds
    return result


def raise_for(result: CaseResult, after: Sequence[str] = ()) -> None:
    """Raise :class:`RubricEvaluationError` when a criterion could not be evaluated,
    :class:`RubricAssertionError` when the result did not pass; the criterion table is the
    message (then the lines ``after`` it), through the outgoing boundary. A result the missing
    judge left undecided (``skipped_bounds``) is skipped, its bounds in the reason."""
    __tracebackhide__ = True
    if result.errors:
        raise RubricEvaluationError(outgoing(criteria_table(result)), result=result)
    if result.skipped_bounds is not None:  # the missing judge could still pass or fail it
        pytest.skip(outgoing(skip_reason(result)))
    if not result.passed:
        message = "\n".join([criteria_table(result), *after])
        raise RubricAssertionError(outgoing(message), result=result)


class RubricFile(pytest.File):
    """A ``*.rubric.yaml`` / ``*.rubric.yml`` / ``*.rubric.json`` file."""

    def __init__(self, *, rubric_session: RubricSession, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rubric_session = rubric_session

    def collect(self) -> Iterator[RubricItem]:
        session = self.rubric_session
        try:
            with paused(enabled=session.settings.gc_pause):
                loaded = load_suite(self.path, added=added_criterion_types(self))
                items = list(self._items(loaded))
            session.audit.add_calibration(self.nodeid, loaded.name, loaded.calibration)
            if loaded.guidance is not None:
                session.judging.guidance[self.nodeid] = loaded.guidance
        except RubricLoadError:
            session.inputs.collection_errors += 1
            raise
        yield from items

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, RubricLoadError):
            try:
                shown: Path | str = self.path.relative_to(self.config.invocation_params.dir)
            except ValueError:
                shown = self.path
            return outgoing(excinfo.value.render(shown))
        return super().repr_failure(excinfo)

    def _items(self, loaded: LoadedSuite) -> Iterator[RubricItem]:
        session = self.rubric_session
        problems: list[Problem] = []
        dirs: list[ResponseDir] = []
        if loaded.responses_dir is not None:
            local = session.inputs.response_dir(loaded.responses_dir)
            problems += [replace(p, field=p.field or "responses") for p in local.problems]
            dirs.append(local)
        if (global_dir := session.inputs.global_responses()) is not None:
            dirs.append(global_dir)
        targets: dict[str, Target] = {}  # by import path, resolved once per file
        suite = loaded.suite
        make_importable(self.config.rootpath, self.path.parent)  # for callables and targets
        failed: set[str] = set()  # import paths already reported
        answering: list[list[tuple[str, str, str]]] = []  # each case's targets_of
        for i, case in enumerate(suite.cases):
            subjects: dict[str, str] = {}
            answering.append(self.targets_of(case, loaded))
            for subject, path, field in answering[i]:
                where = Problem("", line=loaded.case_lines[i], case=case.id, field=field)
                if not (case.target or case.targets) and field in ("target", "targets"):
                    # The file's own target: its line, once for the file, not each case's.
                    line = loaded.target_lines.get("target" if field == "target" else subject)
                    where = Problem("", line=line, field=field)
                if subject in subjects:
                    problems.append(
                        replace(
                            where,
                            message=f"targets {subjects[subject]!r} and {path!r} are both "
                            f"subject {subject!r}",
                            hint="name them apart: `targets: {NAME: module:function, ..}`",
                        )
                    )
                subjects[subject] = path
                if path in targets or (path in failed and where.case is None):
                    continue
                try:
                    function = resolve_import(path)
                except Exception as exc:
                    failed.add(path)
                    problems.append(
                        replace(
                            where,
                            message=f"cannot import target {path!r}: {described(exc)}",
                            hint=_import_hint(exc, self.config.rootpath),
                        )
                    )
                    continue
                try:
                    targets[path] = Target.of(function, module=path.partition(":")[0])
                except TypeError as exc:
                    failed.add(path)
                    problems.append(
                        replace(where, message=f"target {path!r} cannot be called: {exc}")
                    )
        every = [*suite.global_criteria, *(c for case in suite.cases for c in case.criteria)]
        paths = {*targets, *(c.function for c in every if isinstance(c, CallableCriterion))}
        for module in sorted({path.partition(":")[0].partition(".")[0] for path in paths}):
            if why := shadowed(module, self.path.parent):
                hint = "rename one of them: Python imports one module of a name"
                problems.append(Problem(why, hint=hint))
        if problems:
            raise RubricLoadError(self.path, problems)

        too_many: list[Problem] = []
        for i, case in enumerate(suite.cases):
            compiled = session.grader.compile(
                case,
                global_criteria=suite.global_criteria,
                min_score=own_mark(case, suite),
                style_field=suite.style_field,
            )
            # The case's own, else the file's, else the run's.
            repeat = int(_first(case.repeat, suite.repeat, session.settings.repeat))
            sources = self._sources(
                case, loaded, dirs, targets, answering[i], repeat=repeat, problems=too_many
            )
            if not sources:  # one item, with no subject, that says why
                sources = {"": Source(unavailable=no_response(case.id, dirs))}
            for subject, source in sources.items():
                yield RubricItem.from_parent(
                    self,
                    name=f"{case.id}[{subject}]" if subject else case.id,
                    compiled=compiled,
                    suite_name=loaded.name,
                    subject=subject,
                    source=source,
                    line=loaded.case_lines[i],
                    repeat=repeat,
                    pass_when=_first(case.pass_when, suite.pass_when, session.settings.pass_when),
                )
        if too_many:
            raise RubricLoadError(self.path, too_many)

    def targets_of(self, case: Any, loaded: LoadedSuite) -> list[tuple[str, str, str]]:
        """``(subject, import path, field)`` of each target that answers ``case``: the case's
        own (``target``, ``targets``), else the file's, else the run's (``--rubric-target``).
        A plain ``target`` is named after its function. Subjects on the command line
        (``--rubric-target``, ``--rubric-model``) replace the file's and its cases' targets,
        unless the file pins them (``target_fixed: true``)."""
        inputs = self.rubric_session.inputs
        for owner in (case, loaded.suite):
            given = (
                [(owner.target.rpartition(":")[2], owner.target, "target")] if owner.target else []
            )
            given += [(name, path, "targets") for name, path in (owner.targets or {}).items()]
            if given:
                if inputs.keeps_targets(self.nodeid, pinned=loaded.suite.target_fixed):
                    return given
                break
        return [
            (subject, value, "--rubric-target")
            for subject, value in map(subject_named, self.rubric_session.settings.targets)
        ]

    def _sources(
        self,
        case: Any,
        loaded: LoadedSuite,
        dirs: list[ResponseDir],
        targets: dict[str, Target],
        answering: list[tuple[str, str, str]],
        *,
        repeat: int,
        problems: list[Problem],
    ) -> dict[str, Source]:
        sources: dict[str, Source] = {}
        origins: dict[str, str] = {}

        def add(subject: str, source: Source, origin: str) -> None:
            if subject in sources:
                source = Source(
                    unavailable=(
                        f"subject {subject!r} is given twice for case {case.id!r} "
                        f"({origins[subject]}; and {origin}); keep one"
                    )
                )
            sources[subject] = source
            origins[subject] = origin

        if case.response is not None:
            add(case.subject or "inline", Source(text=case.response), "`response:`")
        for subject, text in (case.responses or {}).items():
            add(subject, Source(text=text), "`responses:`")
        for directory in dirs:
            for response_file in directory.files:
                key = response_file.key_of(loaded.name, case.id)
                if key is None:
                    add(
                        response_file.subject,
                        Source(
                            unavailable=(
                                f"subject {response_file.subject!r} has no response for case {case.id!r}: "
                                f"add a line to {response_file.path}: "
                                f'{{"id": "{case.id}", "response": "..."}}'
                            )
                        ),
                        f"{response_file.path}, which has no line for it",
                    )
                else:
                    directory.used.add((response_file.subject, key))
                    entry, more = response_file.entries[key], response_file.more.get(key, [])
                    if len(more) >= repeat:
                        problems.append(
                            Problem(
                                f"{1 + len(more)} responses for case {case.id!r} "
                                f"(lines {entry[1]}, {', '.join(str(m[1]) for m in more)}), but "
                                f"the case has repeat: {repeat}; each line with its id is one "
                                "sample",
                                path=response_file.path,
                                line=more[repeat - 1][1],
                                case=case.id,
                                field="id",
                                hint=f"keep at most {repeat} line(s) with this id, or set "
                                f"`repeat: {1 + len(more)}` on the case or the file"
                                # The flag is the run's default: the file's or case's wins.
                                + (
                                    " (or --rubric-repeat)"
                                    if case.repeat is None and loaded.suite.repeat is None
                                    else ""
                                ),
                            )
                        )
                    add(
                        response_file.subject,
                        Source(
                            text=entry[0],
                            more=tuple(m[0] for m in more[: repeat - 1]),
                            traces=response_file.traces_of(entry, more[: repeat - 1]),
                        ),
                        f"{response_file.path}:{entry[1]}",
                    )
        session = self.rubric_session
        for subject, path, _ in answering:
            source = Source(
                target=targets[path],
                target_name=path,
                subject=subject,
                timeout=case.timeout or session.settings.call_timeout,
                runner=session.grader.calls,
                cache=session.caches.responses(),
                tally=session.inputs.tally,
                tracer=session.inputs.spans,
            )
            add(subject, source, f"target {path}")
        pinned = loaded.suite.target_fixed and self.nodeid in session.inputs.targets_pinned
        for subject, model in {} if pinned else session.inputs.models.items():
            add(
                subject,
                Source(
                    target=model,
                    target_name=model.spec.name,
                    subject=subject,
                    cache=session.caches.responses(),
                    tally=session.inputs.tally,
                ),
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
        source: Source,
        line: int | None,
        repeat: int,
        pass_when: str | float,
        **kwargs: Any,
    ) -> None:
        # The node id as a string, which pytest parses as it parses a node id read back from
        # its cache or a command line ("case[subject]": name "case", parameters "subject"), so
        # --lf, --ff, --sw and ``path::case`` find the item as they find a parametrized test.
        kwargs.setdefault("nodeid", f"{kwargs['parent'].nodeid}::{kwargs['name']}")
        super().__init__(**kwargs)
        self.repeat = repeat
        self.pass_when = pass_when
        self.compiled = compiled
        self.suite_name = suite_name
        self.subject = subject
        self.source = source
        self.line = line
        if compiled.judged:
            self.add_marker("llm_judge")

    def release(self) -> None:
        """The item has run (every attempt of it): what it graded with goes, so that a long
        session holds each case's compiled rubric and answer only while its items run, not
        to the end. Running it again (``runtest``) is no longer possible."""
        del self.compiled, self.source

    @property
    def rubric_session(self) -> RubricSession:
        parent = self.parent
        assert isinstance(parent, RubricFile)
        return parent.rubric_session

    def if_lost(self) -> list[CaseResult]:
        """The item's result should the process running it die mid-item (an xdist worker
        whose target called ``os._exit``): every criterion ERROR, as for a missing answer."""
        return [self._unavailable(CRASHED)] if self.subject else []

    def _evaluate(
        self, responses: list[Answer], missing: Mapping[int, str] | None = None
    ) -> CaseResult:
        session = self.rubric_session
        return evaluate(
            session,
            session.grader,
            self.compiled,
            responses,
            key=answer_key(self),
            nodeid=self.nodeid,
            suite=self.suite_name,
            subject=self.subject,
            pass_when=self.pass_when,
            level=session.settings.confidence,
            missing=missing,
        )

    def _unavailable(self, reason: str) -> CaseResult:
        """The result of an answer that could not be had: every criterion ERROR."""
        return self.rubric_session.grader.unavailable(
            self.compiled, reason, nodeid=self.nodeid, suite=self.suite_name, subject=self.subject
        )

    def runtest(self) -> None:
        """Obtain the response, grade it, assert the grade: in the call phase, so that
        ``--setup-plan``, ``--setup-only`` and ``--collect-only`` stay dry runs. An answer that
        could not be evaluated raises :class:`RubricEvaluationError`: an error, never a pass;
        an item stopped from outside (pytest-timeout's failure) is an ERROR in every output."""
        try:
            self._grade()
        except (RubricAssertionError, RubricEvaluationError):  # the plugin's own, as they are
            raise
        except (Exception, pytest.fail.Exception) as exc:
            if RESULTS_KEY not in self.stash:
                if isinstance(exc, pytest.fail.Exception):  # pytest-timeout's, say
                    why = f"the item was stopped: {exc.msg}"
                else:
                    why = described(exc)
                record(self, self._unavailable(why))
            raise

    def _grade(self) -> None:
        session = self.rubric_session
        raised: list[BaseException] = []
        fetched = self.source.fetch_each(
            self.compiled.rubric,
            repeat=self.repeat,
            concurrency=session.settings.concurrency,
            raised=raised,
        )
        responses = [answer for answer, _ in fetched if answer is not None]
        missing = {i: problem for i, (_, problem) in enumerate(fetched) if problem is not None}
        if missing:
            # The samples that answered are graded beside the ones that did not (each of
            # their criteria ERROR): the item keeps its samples, their traces and its rules.
            result = (
                self._evaluate(responses, missing)
                if responses
                else session.grader.combine(
                    [self._unavailable(problem) for problem in missing.values()],
                    pass_when=self.pass_when,
                    level=session.settings.confidence,
                )
            )
            if self.subject:
                record(self, result)
            # Never a pass; what the application raised, if it did, is the error's cause:
            # its traceback is the report's.
            raise RubricEvaluationError(outgoing(next(iter(missing.values()))), result=None) from (
                raised[0] if raised else None
            )
        result = self._evaluate(responses)
        # A case whose positive criteria are all judged has nothing to score, without a judge
        # or with one that has no key (a pass whatever the judge says, as a report-only case
        # is, would be a score of 0 in every figure): it is in the outputs as undecided, with
        # its bounds, as one the judge could still pass or fail is (see _grade.bounds).
        if (ungraded := nothing_graded(result)) is not None:
            if ungraded.skipped_bounds is not None:
                record(self, ungraded)
            pytest.skip(
                f"nothing graded: {result.skipped[0].reason}"
                if result.skipped
                else "nothing graded"
            )
        parent = self.parent
        if session.recordings is not None and session.judging.names and parent is not None:
            from .._llm.recordings import location  # graded with a judge at hand: see caches

            session.recordings.graded.add(location(parent.nodeid, self.compiled.rubric.id))
        record(self, result)
        raise_for(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, RubricAssertionError | RubricEvaluationError):
            # The criterion table (or why there is no answer), then what the application was
            # asked and said.
            result, cause = excinfo.value.result, excinfo.value.__cause__
            show = self.rubric_session.settings.show_response
            baseline = self.rubric_session.results.baseline
            if result is None:  # no answer (the target raised, returned nothing usable)
                unanswered = [r.result for r in self.stash.get(RESULTS_KEY, [])][-1:]
                # What it was asked (it said nothing), then its answer in the baseline.
                since = [line for r in unanswered for line in answer_lines(r, show_response=0)]
                since += [line for r in unanswered for line in since_baseline(r, baseline, show)]
                if cause is None:
                    return outgoing("\n".join([str(excinfo.value), *since]))
                if isinstance(cause, UserCodeError) and cause.__cause__ is not None:
                    cause = cause.__cause__  # a SystemExit and the like: its own frames
                return _application_traceback(self.config, cause, excinfo.value, since)
            lines = [str(excinfo.value), *answer_lines(result, show_response=show)]
            return outgoing("\n".join([*lines, *since_baseline(result, baseline, show)]))
        if isinstance(excinfo.value, pytest.fail.Exception):
            # Stopped from outside (pytest-timeout): its message, as pytest shows a test's,
            # not the frames of pytest, pluggy and the plugin it was waiting in.
            return outgoing(f"the item was stopped: {excinfo.value.msg}")
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, (self.line - 1 if self.line else None), f"rubric: {self.name}"


# The frames that lead to a target: the plugin's (and contextlib's, which it calls through),
# and asyncio's for an async target.
_CALLERS = (
    Path(__file__).resolve().parent.parent,
    Path(os.path.dirname(os.__file__), "asyncio"),
    Path(contextlib.__file__),
)


def _import_hint(raised: Exception, rootpath: Path) -> str:
    """What to do about a target that could not be imported: its path, when the plugin found
    it wrong; else the application's line that raised while its module was imported."""
    frames = traceback.extract_tb(raised.__traceback__)
    if not frames or Path(frames[-1].filename).resolve().is_relative_to(_CALLERS[0]):
        return "check the import path and that its module is importable from the rootdir"
    # The project's last line on the way (not the standard library's, say os.environ's,
    # nor an installed package's, even from a virtual environment under the rootdir).
    files = [(Path(f.filename).resolve(), f) for f in frames if not f.filename.startswith("<")]
    paths = sysconfig.get_paths()
    installed = {Path(paths[name]).resolve() for name in ("stdlib", "purelib", "platlib")}
    ours = [
        (p, f)
        for p, f in files
        if p.is_relative_to(rootpath)
        and "site-packages" not in p.parts
        and not any(p.is_relative_to(folder) for folder in installed)
    ]
    path, last = (ours or files or [(Path(frames[-1].filename), frames[-1])])[-1]
    shown = path.relative_to(rootpath) if path.is_relative_to(rootpath) else path
    code = f" ({outgoing(last.line)})" if last.line else ""
    return (
        f"importing its module ran the application's code, which raised at {shown}:"
        f"{last.lineno}{code}: fix it there, or set what it needs"
    )


def _calling(entry: Any) -> bool:
    path = Path(str(entry.path))
    return any(path.is_relative_to(folder) for folder in _CALLERS)


def _application_traceback(
    config: pytest.Config, raised: BaseException, error: BaseException, since: list[str]
) -> Any:
    """The report of ``raised``, what a target raised, from the target's first frame (the
    plugin's frames that called it, and ``asyncio``'s, cut as pytest cuts its own), in the
    style ``--tb`` asks for; ``error`` (why the item has no answer) and ``since`` (the
    baseline's answer, when it passed there) are its ``rubric`` section. Printed within a
    bound, as it was checked: an exception (or a local) that printed once may block the
    next time, and is then shown as one that does not print."""
    shown = bounded(lambda: _report(config, raised))
    if shown is None:  # a slow local, say: the frames without values, still bounded
        shown = bounded(lambda: _report(config, raised, values=False))
    if shown is None:  # its own str blocks now
        shown = _report(config, unprintable(raised))
    shown.addsection("rubric", "\n".join([str(error), *since]))
    return _scrubbed(shown)


def _report(config: pytest.Config, raised: BaseException, *, values: bool = True) -> Any:
    """pytest's report of ``raised`` from the target's first frame, as ``--tb`` asks;
    ``values``: the frames' arguments and locals, as asked too."""
    info = pytest.ExceptionInfo.from_exception(raised)
    first = next((i for i, entry in enumerate(info.traceback) if not _calling(entry)), 0)
    tb = info.traceback[first:].filter(info)
    style = config.getoption("tbstyle", "auto")
    if style == "auto" and len(tb) > 2:  # as pytest's test functions: the middle entries short
        tb = type(tb)((tb[0], *(e.with_repr_style("short") for e in tb[1:-1]), tb[-1]))
    info.traceback = tb
    # An exception that does not print may be a frame's argument or local: none is shown.
    values = values and not (isinstance(raised, UserCodeError) and raised.unprintable)
    return info.getrepr(
        funcargs=values,
        showlocals=values and config.getoption("showlocals", False),
        style="long" if style == "auto" else style,
        tbfilter=False,
        truncate_locals=config.get_verbosity() <= 1,
    )


def _scrubbed(value: Any) -> Any:
    """``value`` (pytest's report of an exception) with :func:`outgoing` applied to each of
    its strings: the application's source lines and locals may hold a key."""
    if isinstance(value, str):
        return outgoing(value)
    if isinstance(value, list):
        return [_scrubbed(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_scrubbed(item) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            setattr(value, field.name, _scrubbed(getattr(value, field.name)))
    return value
