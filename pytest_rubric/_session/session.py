"""The session's composition root: its parts, built once, and what only the whole can do.

One :class:`RubricSession` lives in ``config.stash`` (``_session.started``, kept by
``plugin``) from when it starts (``pytest_configure``, or the first need of a run that asked
for no rubric work) to ``pytest_unconfigure``, registered as the session's hooks. Each part is handed only the values it uses:

==============  ==================================================================
``caches``      the cache file of the judge's replies and the application's answers
``inputs``      response folders, ``--rubric-model`` subjects, the answers' tally
``judging``     the judge: set up, scheduled, waited for, its usage summed
``audit``       calibration against the suite's labels and the bias probes
``results``     each item's last attempt, the baseline
``recordings``  what the run did with ``--rubric-recordings`` (only with the flag)
==============  ==================================================================

The parts depend one way (``audit`` asks ``judging``; ``inputs`` and
``judging`` share ``caches`` and the budget); what joins several of them, a
sample's judgement with its calibration gate and its probes, the report and
the outputs, is here.
"""

from __future__ import annotations

import functools
import gc
import os
import platform
import sys
import time
from collections.abc import Generator, Sequence
from dataclasses import fields
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .._config.options import read_settings
from .._defaults import first_data_file, is_rubric_file
from .._guards.outgoing import outgoing, rubric_warning, warn
from .._render.files import Unwritten, write_outputs
from .._results import CaseResult, Outcome, Verdict
from . import heap, xdist
from .auditing import Audit
from .caches import Caches, JudgeRecordings
from .inputs import Inputs, live_models
from .items import is_rubric_item
from .judging import JudgeSetup, Judging, every
from .junit import record_as_error, record_properties, set_aside, write_answers
from .results import Results, lost_results
from .xdist import Role

if TYPE_CHECKING:
    # Imported where used: plain pytest runs load no grading or report code.
    from .._config.settings import Settings
    from .._grade.grader import CompiledRubric, Grader
    from .._llm.base import Judged
    from .._report.report import SessionReport
    from .._report.run import RunInfo
    from .._trace import Passage
    from ..judge.requests import JudgeKey


def _rootdir_moved(config: pytest.Config) -> str | None:
    """Why node ids will not match the baseline's, when pytest took ``--rubric-baseline
    PATH`` (with a space) for a test path as it chose the rootdir: with no ini file, it
    takes the common folder of the paths on the command line, so a baseline kept outside
    the project moves the rootdir up, and every node id (and import) with it."""
    given = config.getoption("rubric_baseline")
    args = config.invocation_params.args
    separate = any(a == "--rubric-baseline" and b == given for a, b in pairwise(args))
    if config.inipath is not None or config.option.rootdir or not separate:
        return None
    if Path(given).resolve().is_relative_to(config.invocation_params.dir.resolve()):
        return None
    return (
        f"--rubric-baseline {given}: with no ini file, pytest took this path for a test path "
        f"and chose the rootdir {config.rootpath}, so node ids are relative to it and may not "
        f"match the baseline's; write --rubric-baseline={given}, or add an ini file "
        "(pytest.ini, or [tool.pytest.ini_options] in pyproject.toml) at the project's root"
    )


def _selection(config: pytest.Config, settings: Settings, *, reruns: bool) -> str | None:
    """Why the command line collects only part of the suite (None: it names no selection):
    -k, -m, --deselect, node ids, a rubric file or a folder inside the rubric dirs named
    and, with ``reruns``, --lf and --sw."""
    option, roots = config.option, {d.resolve() for d in settings.dirs}
    paths = [(config.invocation_params.dir / a).resolve() for a in config.args if "::" not in a]
    named = any(is_rubric_file(p, settings.patterns) or roots & {*p.parents} for p in paths)
    for given, why in (
        (getattr(option, "keyword", ""), "-k"),
        (getattr(option, "markexpr", ""), "-m"),
        (getattr(option, "deselect", None), "--deselect"),
        (reruns and getattr(option, "lf", False), "--lf"),
        (reruns and getattr(option, "stepwise", False), "--sw"),
        (any("::" in arg for arg in config.args), "node ids"),
        (named, "named rubric files or folders"),
    ):
        if given:
            return why
    return None


class RubricSession:
    """The parts of one pytest session's rubric work, and what joins them."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._started = time.time()  # for the JSON's run: when, and how long (monotonic)
        self._clock = time.monotonic()
        self.settings = settings = read_settings(config)
        self.role = role = Role.of(config)
        # --collect-only, --setup-only, --setup-plan: nothing is graded, judged or written.
        self.dry_run = any(
            getattr(config.option, name, False)
            for name in ("collectonly", "setuponly", "setupplan")
        )
        # This process's share of --rubric-max-cost: one for the judge and the model.
        budget = settings.cost.budget(share=role.workers)
        self.caches = Caches(
            cache_dir=settings.cache_dir,
            cache_mode=settings.cache_mode,
            response_cache_mode=settings.response_cache_mode,
            recordings_dir=settings.recordings_dir,
            # One cache warning per run: under xdist the controller opens the cache too
            # (Judging.start) and reports it; the workers, which find the same file, do not.
            config_warning=config.issue_config_time_warning if role.reports else None,
        )
        self.results = Results(baseline=settings.baseline_path)
        if role.reports and (moved := _rootdir_moved(config)) is not None:
            config.issue_config_time_warning(rubric_warning(moved), stacklevel=2)
        self.inputs = Inputs(
            here=config.invocation_params.dir,
            warns=role.first,
            responses_dir=settings.responses_dir,
            subjects_given=bool(settings.targets or settings.models),
            models=live_models(
                settings.models,
                targets=settings.targets,
                cost=settings.cost,
                retry=settings.retry,
                require_key=settings.response_cache_mode != "replay",
                budget=budget,
            ),
            otel=settings.otel,
        )
        # The judge's own record of the settings it reads, by field name.
        setup = JudgeSetup(**{f.name: getattr(settings, f.name) for f in fields(JudgeSetup)})
        self.judging = Judging(setup, role, self.caches, budget, self.dry_run)
        self.audit = Audit(
            judging=self.judging,
            probes=settings.judge_probe,
            probe_kinds=settings.probe_kinds,
            min_kappa=settings.min_kappa,
        )
        self.recordings: JudgeRecordings | None = None  # what the run did with --rubric-recordings
        if (store := self.caches.recordings()) is not None:
            self.recordings = JudgeRecordings(
                store,
                config.rootpath,
                settings.recordings_prune,
                subjects_given=self.inputs.subjects_given,
            )
        self.report: SessionReport | None = None  # set by finish(), once every result is in
        self.unwritten: list[Unwritten] = []  # outputs not written: error lines at the end
        self.stopped_at_maxfail = False  # xdist stopped it for -x / --maxfail, not a Ctrl-C
        self._frozen = False  # whether pytest_collection_finish froze the heap (see heap)

    @functools.cached_property
    def grader(self) -> Grader:
        from .._grade.grader import Grader

        settings = self.settings
        return Grader(
            thresholds=settings.thresholds,
            default_min_score=settings.min_score,
            call_timeout=settings.call_timeout,
            check_timeout=settings.check_timeout,
            style_field=settings.style_field,
        )

    @property
    def unjudged(self) -> str | None:
        """Why judged criteria cannot be asked, when their cases are graded on what can be (a
        judge set in the ini or the environment without its key, no --rubric-require-judge);
        see ``_grade.bounds``. None otherwise, with no judge at all too: then a case scores
        what ran."""
        return None if self.settings.require_judge else self.judging.unavailable

    # --- collection ---------------------------------------------------------------------------

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Collection is over: report unused responses, start judging, arrange a quick exit
        (a Python test marked ``llm_judge`` without a judge is skipped as it starts: ``plugin``)."""
        items = session.items
        self.inputs.warn_unused(
            narrowed=_selection(self.config, self.settings, reruns=False) is not None
        )
        if self.recordings:
            self.recordings.collected(items, calibrated=self.audit.calibrated)
        self.audit.plan_probe(items)
        self.audit.start_calibration()
        if self.role.reports:  # a worker schedules what it is handed
            self.judging.schedule_items(items)
        if not self.dry_run and any(is_rubric_item(i) for i in items):
            if self.settings.fast_exit:
                heap.arrange_fast_exit()  # idempotent: pytester runs many sessions in a process
            if self.settings.gc_freeze and not self._frozen:
                # Garbage that exists now waits too; there is little (see heap).
                gc.freeze()
                self._frozen = True

    def check_dirs(self) -> None:
        """Warn about a rubric directory that holds no rubric file but YAML or JSON files:
        most likely rubric files named without the pattern, which collect nothing."""
        if not self.role.reports:  # the controller warns, once
            return
        settings = self.settings
        for directory in settings.dirs:
            if (found := first_data_file(directory, settings.patterns)) is None:
                continue
            option = "--rubric-dir" if settings.dirs_from_flag else "ini rubric_dirs"
            here = self.config.invocation_params.dir
            folder, shown = os.path.relpath(directory, here), os.path.relpath(found, here)
            warn(  # the message says where; no line of the file is echoed
                f"{option} {folder} holds no rubric file ({', '.join(settings.patterns)}) "
                f"but YAML or JSON files, such as {shown}: rename it to match, as "
                f"{Path(shown).stem}.rubric{Path(shown).suffix}, or set ini rubric_file_patterns"
            )

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        """A run that deselected items never prunes recordings."""
        if self.recordings:
            self.recordings.deselected += len(items)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        """A broken rubric file is a collection error, but the rest of the session still runs:
        when every collection error is a rubric file's, the run goes on as with pytest's own
        ``--continue-on-collection-errors`` (a Python module that fails to import still stops
        it, as it would without the plugin). pytest's counters are never edited."""
        option = session.config.option
        before = getattr(option, "continue_on_collection_errors", False)
        if (errors := self.inputs.collection_errors) and session.testsfailed == errors:
            option.continue_on_collection_errors = True
        try:
            return (yield)
        finally:
            option.continue_on_collection_errors = before

    @pytest.hookimpl(tryfirst=True)  # before JUnit reads the report, or xdist sends it
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Results join the session's; an attempt that is run again (pytest-rerunfailures'
        outcome ``rerun``) counts nowhere, not even in JUnit's properties."""
        self.results.log_attempt(report)

    def pytest_report_teststatus(
        self, report: pytest.TestReport
    ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        """An answer that could not be evaluated is an error, whatever its phase; a pass that
        left judged criteria SKIPPED says so in verbose output."""
        if report.failed and getattr(report, "rubric_error", False):
            return "error", "E", ("ERROR", {"red": True})
        results: list[CaseResult] = getattr(report, "rubric_results", [])
        if report.when == "call" and report.passed and any(r.skipped for r in results):
            return "passed", ".", ("PASSED (judged criteria skipped)", {"green": True})
        return None

    # --- judging an answer: the judge, its calibration gate, its probes --------------------------

    def judge_samples(
        self,
        keys: Sequence[JudgeKey],
        compiled: CompiledRubric,
        responses: Sequence[str],
        contexts: Sequence[tuple[Passage, ...] | None] = (),
    ) -> list[Judged | None]:
        """The judge's outcomes for each sample's answer (with its context, the retrieved
        passages ``grounded`` reads), every sample's calls (and the first one's probes)
        started at once."""
        if not compiled.judged:  # nothing to ask: only the cache's news, as after any call
            self.caches.warn_trouble()
            return [None] * len(responses)
        contexts = contexts or [None] * len(responses)
        requests = [
            self.judging.request(key, compiled, response, context)
            for key, response, context in zip(keys, responses, contexts, strict=True)
        ]
        for request in requests:
            self.judging.schedule(request)
        self.audit.schedule_probe(requests[0], compiled)
        judged: list[Judged | None] = []
        for request in requests:
            outcomes = self.judging.result(request)
            asked = outcomes is not None and self.judging.runner is not None
            if asked and (uncalibrated := self.audit.below_min_kappa(request.key)):
                outcomes = every(request, Outcome(Verdict.ERROR, 0.0, uncalibrated))
            judged.append(outcomes)
        return judged

    # --- xdist ----------------------------------------------------------------------------------

    def lost(self, nodeid: str) -> list[CaseResult]:
        """The ERROR result of a rubric item whose worker died before it said what to record
        (see ``results.lost_results``)."""
        return lost_results(self.grader, self.settings.patterns, self.config.rootpath, nodeid)

    def worker_stats(self) -> dict[str, Any]:
        """What an xdist worker sends the controller (:meth:`add_worker_stats`): answers,
        judge usage, calibration, the targets replaced and pinned, the recordings."""
        inputs = self.inputs
        if self.recordings:
            self.recordings.collection_errors = inputs.collection_errors
        return {
            "responses": [inputs.tally.asked, inputs.tally.replayed],
            "judges": self.judging.worker_usage(),
            "calibration": self.audit.worker_calibrations(),
            "targets": [sorted(inputs.targets_replaced), sorted(inputs.targets_pinned)],
            "recordings": self.recordings.state() if self.recordings else None,
        }

    def add_worker_stats(self, data: dict[str, Any]) -> None:
        """Fold an xdist worker's :meth:`worker_stats` into the controller's."""
        self.inputs.tally.add(*data["responses"])
        self.judging.add_usage(data["judges"])
        self.audit.add_calibrations(data["calibration"])
        if data["recordings"] and self.recordings:
            self.recordings.add_state(data["recordings"])
        replaced, pinned = data["targets"]
        self.inputs.targets_replaced.update(replaced)
        self.inputs.targets_pinned.update(pinned)

    # --- the report -----------------------------------------------------------------------------

    def pytest_report_header(self) -> list[str]:
        """One line that reproduces where rubrics come from; one more when the judge's bound
        on calls in flight cannot hold."""
        settings = self.settings
        # The ini's rubric_dirs are not added to a command line that names paths.
        named = self.config.args_source is pytest.Config.ArgsSource.ARGS
        parts = [f"--rubric-dir {d}" for d in settings.dirs if settings.dirs_from_flag or not named]
        if settings.responses_dir:
            parts.append(f"--rubric-responses {settings.responses_dir}")
        parts += [f"--rubric-target {target}" for target in settings.targets]
        parts += [f"--rubric-model {model}" for model in settings.models]
        if settings.response_cache_mode != "off":
            parts.append(f"--rubric-response-cache {settings.response_cache_mode}")
        if self.judging.names:
            judges = " ".join(f"--rubric-judge {name}" for name in self.judging.names)
            parts.append(f"{judges} --rubric-grader {settings.grader}")
            if settings.votes > 1:
                parts.append(f"--rubric-judge-samples {settings.votes}")
            if settings.judge_batch:
                parts.append("--rubric-judge-batch")
                if settings.judge_batch_timeout != 3600:
                    parts.append(f"--rubric-judge-batch-timeout {settings.judge_batch_timeout:g}")
        if settings.repeat > 1:
            parts.append(f"--rubric-repeat {settings.repeat}")
        if settings.pass_when != "mean":
            parts.append(f"--rubric-pass-when {settings.pass_when}")
        if settings.confidence != 0.95:
            parts.append(f"--rubric-confidence {settings.confidence:g}")
        lines = [f"rubric: {' '.join(parts)}"] if parts else []
        if settings.concurrency < (clients := self.judging.clients):
            lines.append(
                f"rubric: --rubric-concurrency {settings.concurrency} is below the run's "
                f"{clients} judge clients (xdist workers x judges), each of which asks one call "
                f"at a time: up to {clients} may be in flight"
            )
        return lines

    def pytest_report_collectionfinish(self) -> list[str]:
        """What the command line's subjects did to the targets rubric files name (collection
        is over): no precedence is silent."""
        inputs = self.inputs
        lines = []
        if replaced := len(inputs.targets_replaced):
            lines.append(
                f"rubric: subjects from the command line replace the targets of {replaced} "
                f"rubric file{'s' if replaced != 1 else ''}"
            )
        if inputs.subjects_given and (pinned := len(inputs.targets_pinned)):
            lines.append(
                f"rubric: `target_fixed: true` keeps the targets of {pinned} rubric "
                f"file{'s' if pinned != 1 else ''}"
            )
        return lines

    def _build_report(self, *, gates: bool, complete: bool = True) -> SessionReport:
        from .._grade.grader import NO_JUDGE_REASON  # loaded by whatever graded the results
        from .._report.gates import Gates
        from .._report.report import build_report

        settings = self.settings
        return build_report(
            self.results.all,
            gates=Gates(
                baseline=self.results.baseline if gates else None,
                baseline_name=self.config.getoption("rubric_baseline"),
                rootdir=str(self.config.rootpath),
                max_drop=settings.max_drop,
                gate_confidence=settings.gate_confidence,
                fail_under=settings.fail_under if gates else None,
                max_flips=settings.flip_limits if gates else {},
                min_kappa=settings.min_kappa if gates else None,
                unjudged=self.judging.unavailable
                or (None if self.judging.names else NO_JUDGE_REASON),
            ),
            judge_usage=self.judging.judge_usage(self.results.all),
            thresholds=settings.thresholds,
            level=settings.confidence,
            calibration=self.audit.calibrations(),
            responses_replayed=(self.inputs.tally.replayed, self.inputs.tally.asked),
            show_response=settings.show_response,
            run=self.run_info(complete=complete) if gates else None,
        )

    def run_info(self, *, complete: bool) -> RunInfo:
        """Which run this is (the JSON's ``run``): on an xdist controller, the judge cache's
        hits and misses are the workers' summed (see ``add_worker_stats``); ``complete``
        False when the session was interrupted."""
        from .._report.run import RunInfo, git_commit, iso_time, plugin_version

        usage = self.judging.usage.values()
        return RunInfo(
            plugin_version=plugin_version(),
            pytest_version=pytest.__version__,
            python_version=platform.python_version(),
            started_at=iso_time(self._started),
            duration_s=round(time.monotonic() - self._clock, 3),
            git_commit=git_commit(self.config.rootpath),
            judges=self.judging.run_judges,
            grader=self.settings.grader,
            cache_mode=self.settings.cache_mode,
            cache_hits=sum(stats.cache_hits for stats in usage),
            cache_misses=sum(stats.cache_misses for stats in usage),
            # The response cache's replays (--rubric-response-cache), summed over xdist workers.
            responses_replayed=self.inputs.tally.replayed,
            complete=complete,
        )

    def finish(self, session: pytest.Session) -> None:
        """The controller's end of the run: apply the gates, write every output."""
        if self.dry_run:
            return
        if self.recordings:  # the workers' share came as data
            self.recordings.collection_errors += self.inputs.collection_errors
            try:
                self.recordings.finish(_selection(self.config, self.settings, reruns=True))
            except OSError as exc:  # an output not written: one error line, as the others
                where = str(self.recordings.store.directory)
                reason = exc.strerror or str(exc)
                self.unwritten.append(Unwritten("--rubric-recordings", where, reason))
        # Ctrl-C (pytest's INTERRUPTED; a collection that stopped too) or an internal error
        # (xdist losing track of a crashed worker's items, say): the results are a part of the
        # run, and the JSON says so.
        stopped = session.exitstatus in (
            pytest.ExitCode.INTERRUPTED,
            pytest.ExitCode.INTERNAL_ERROR,
        )
        complete = not stopped or self.stopped_at_maxfail
        self.report = self._build_report(gates=True, complete=complete)
        if self.report.gates.failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if (history := self.settings.history_path) is not None and self.report.shown:
            from .._report.history import with_trend

            self.report = with_trend(self.report, history, warn=warn)
        self.unwritten += write_outputs(self.report, self.settings.output_paths)
        if history is not None and self.report.shown:
            from .._report.history import HistoryError, append

            try:
                append(history, self.report)
            except HistoryError as exc:  # an output not written: one error line, as the others
                reason = str(exc).removeprefix(f"--rubric-history {history}: ")
                self.unwritten.append(Unwritten("--rubric-history", str(history), reason))

    # --- the end --------------------------------------------------------------------------------

    def close(self) -> None:
        self.judging.close()
        self.caches.close()
        if self.inputs.spans is not None:
            self.inputs.spans.close()

    def thaw(self) -> None:
        """Undo the freeze of the collected heap, if there was one (a cleanup of the config
        registered at configure, so that it runs after pytest's own cleanups: see ``heap``)."""
        if self._frozen:  # a session nested in this one (pytester) thaws its parent's too
            gc.unfreeze()
            self._frozen = False


class _ReportHooks:
    """What only the reporting process does (not an xdist worker): summary, gates, outputs."""

    def __init__(self, state: RubricSession) -> None:
        self.state = state

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, None, None]:
        """Once JUnit has written the test case: an answer that could not be evaluated is an
        error there, as in the terminal; a failing or erroring rubric item's test case shows
        what the application was asked and said, in its ``system-out``."""
        result = yield
        if report.failed:
            config = self.state.config
            if getattr(report, "rubric_error", False):
                record_as_error(config, report)
            if getattr(report, "rubric_item", False):
                write_answers(config, report, show_response=self.state.settings.show_response)
            if getattr(report, "rubric_crashed", False):
                record_properties(config, report)
        return result

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.set_junit_aside(session.config)

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """xdist stops a run at ``-x`` (``--maxfail``) as a Ctrl-C is stopped: that run went as
        asked, complete as it is without xdist."""
        stop = excinfo.typename == "Interrupted" and str(excinfo.value).startswith("stopping after")
        self.state.stopped_at_maxfail = stop

    def set_junit_aside(self, config: pytest.Config) -> None:
        """A ``--junitxml`` path that cannot be written is known before a test runs."""
        if (unwritten := set_aside(config)) is not None:
            self.state.unwritten.append(unwritten)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        state = self.state
        report = state.report or state._build_report(gates=False)  # a dry run built none
        if failed_gates := len(report.gates.regressions):
            # pytest's last line counts the reports under every key of ``stats``: "3 passed,
            # 1 rubric gate failed". Other plugins read those reports as reports (hypothesis
            # reads each one's ``__dict__``), so each failed gate is a report too.
            key = "rubric gate failed" if failed_gates == 1 else "rubric gates failed"
            terminalreporter.stats.setdefault(key, []).extend(
                _gate_report(reason) for reason in report.gates.regressions
            )
        if self.state.role.hands_out:
            # The workers collected: what the command line's subjects replaced is known now.
            for said in self.state.pytest_report_collectionfinish():
                terminalreporter.write_line(said)
        # ini rubric_summary; auto: when rubric items ran, assert_rubric graded two or more
        # subjects (a leaderboard of one ranks nothing), or a gate ran
        results, mode = state.results, state.settings.summary
        wanted = results.rubric_items_ran or len(results.assert_subjects) > 1 or report.gates.active
        if mode != "auto":
            wanted = mode == "on" and report.shown
        if wanted and terminalreporter.config.get_verbosity() >= -1:
            from .._render.summary import terminal_lines

            terminalreporter.section("rubric summary")
            for line in terminal_lines(report):
                terminalreporter.line(outgoing(line.text), **line.markup)
        if self.state.recordings:  # in the summary
            if self.state.recordings.line is not None:
                terminalreporter.write_line(outgoing(self.state.recordings.line))
            for warning in self.state.recordings.warnings:  # the run went on
                terminalreporter.write_line(outgoing(warning), yellow=True)
        for unwritten in self.state.unwritten:  # one error line each; the run went on
            terminalreporter.write_line(f"rubric: ERROR {unwritten.line}", red=True, bold=True)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.state.finish(session)
        from .._render.summary import slow_failure_report

        slow = slow_failure_report(
            failed=session.testsfailed,
            tests=session.testscollected,
            tbstyle=session.config.option.tbstyle,
        )
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:  # else the terminal summary says it (it comes after this)
            for unwritten in self.state.unwritten:
                sys.stderr.write(f"rubric: ERROR {unwritten.line}\n")
        if slow is not None and reporter is not None and self.state.results.rubric_items_ran:
            reporter.write_line(slow.text, **slow.markup)


def _gate_report(reason: str) -> pytest.TestReport:
    """A failed gate as a report of no test, for ``terminalreporter.stats``."""
    return pytest.TestReport(
        nodeid="",
        location=("", None, "rubric gate"),
        keywords={},
        outcome="failed",
        longrepr=outgoing(reason),
        when="call",
        rubric_gate=outgoing(reason),
    )


def start(config: pytest.Config) -> RubricSession:
    """Start a :class:`RubricSession` and register its hooks (``plugin`` keeps it, once)."""
    state = RubricSession(config)
    state.inputs.global_responses()  # a broken --rubric-responses file stops the run here, clearly
    from .._guards.calls import containing, described

    try:  # a hook that raises (SystemExit too) is a usage error that names it
        with containing():
            judge: object | None = config.hook.pytest_rubric_make_judge(config=config)
    except Exception as exc:
        raise pytest.UsageError(f"pytest_rubric_make_judge raised {described(exc)}") from None
    state.judging.start(judge)
    config.pluginmanager.register(state, "rubric-session")
    if state.role.reports:  # an xdist worker leaves reporting to the controller
        reporting = _ReportHooks(state)
        config.pluginmanager.register(reporting, "rubric-report")
        # Started on first need, past configure: JUnit's writer is there to be checked now
        # (started at configure, it is not yet, and pytest_sessionstart checks it).
        reporting.set_junit_aside(config)
    xdist.register(config, state)
    return state


def add_rubric_dirs(config: pytest.Config, settings: Settings) -> None:
    """``--rubric-dir`` without test paths: only those run; with test paths, they are added.
    The ini option ``rubric_dirs`` works as ``testpaths`` does: its directories join what
    pytest collects anyway (``testpaths`` or the current directory) only when the command
    line names no path or node id, so naming one test runs just that test and adding the
    option never hides a unit test."""
    named = config.args_source is pytest.Config.ArgsSource.ARGS
    if settings.dirs_from_flag and not named:
        config.args[:] = [str(d) for d in settings.dirs]
        return
    if named and not settings.dirs_from_flag:
        return
    here = config.invocation_params.dir
    searched = [
        (here / arg).resolve() for arg in config.args if "::" not in arg and (here / arg).is_dir()
    ]
    for directory in settings.dirs:
        resolved = directory.resolve()
        if not any(resolved.is_relative_to(root) for root in searched):
            config.args.append(str(directory))
