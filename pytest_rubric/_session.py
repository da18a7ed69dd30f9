"""Session state: settings read once from the config, response files read once, results gathered.

One :class:`RubricSession` lives in ``config.stash`` from ``pytest_configure``
to ``pytest_unconfigure``. Hooks in ``plugin`` only delegate to it.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import _heap
from ._base import JUNIT_PROPERTIES, ResponseTally, is_rubric_file, is_rubric_item
from ._outgoing import outgoing
from ._response_dirs import ResponseDir, ResponseDirs, RubricWarning
from ._result import CaseResult
from ._session_audit import SessionAudit
from ._settings import Settings

if TYPE_CHECKING:
    # Imported where used: a session without rubric files or judge never loads them, and
    # plain pytest runs load no report code until a summary is built.
    from ._calibration import Calibration
    from ._grader import Grader
    from ._run import RunInfo, RunJudge
    from ._session_report import SessionReport
    from ._sources import LiveModel
    from .judge.base import JudgeStats
    from .judge.cache import CachedCalls, JudgeCache
    from .judge.cost import Budget, Price
    from .judge.panel import Panel
    from .judge.prompts import Guidance
    from .judge.runner import JudgeRunner

__all__ = ["SESSION_KEY", "RubricSession", "RubricWarning", "Settings"]  # Settings: re-exported


class RubricSession(SessionAudit):
    """Owns the grader, the response files and the results of one pytest session."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._started = time.time()  # for the JSON's run: when, and how long (monotonic)
        self._clock = time.monotonic()
        self.settings = Settings.from_config(config)
        self._grader: Grader | None = None
        # By node id, the results of the item's last attempt only: an item run again
        # (pytest-rerunfailures) counts once, as its last attempt went.
        self._results: dict[str, list[CaseResult]] = {}
        self._rerun: set[str] = set()  # node ids whose attempt now is one that runs again
        self.report: SessionReport | None = None  # set by finish(), once every result is in
        self.baseline: list[CaseResult] | None = None
        if self.settings.baseline_path is not None:
            from ._report import DocumentError, read_document

            try:
                self.baseline = read_document(self.settings.baseline_path)
            except DocumentError as exc:
                raise pytest.UsageError(f"--rubric-baseline: {exc}") from None
        self.collection_errors = 0
        self.responses = ResponseDirs(config)  # the response folders, read once
        self.judging: JudgeRunner | Panel | None = (
            None  # None on an xdist controller: workers judge
        )
        self.judge_name: str | None = None  # set whenever a judge is configured
        # Why the configured judge cannot run (set in the ini or the environment, no key);
        # judged items are then skipped, or errors with --rubric-require-judge.
        self.judge_unavailable: str | None = None
        self.run_judges: tuple[RunJudge, ...] = ()  # the same judges, for the JSON's run
        self.judge_usage: dict[str, JudgeStats] = {}  # every judge's, by name
        self.judge_prices: dict[str, Price | None] = {}  # every judge's, by name
        self._budget: Budget | None = None
        self._scheduled: set[str] = set()  # node ids whose judging was started
        self.probe_plan: dict[str, tuple[str, ...]] = {}  # node id -> criteria the probe judges
        # Calibration (see _calibration), by rubric file node id: the suite's name and its
        # examples as collected; what the judge made of them, once measured; and on an xdist
        # controller, what the workers measured (the first worker's, per file).
        self._calibration_examples: dict[str, tuple[str, list[Any]]] = {}
        self._calibrated: dict[str, Calibration] = {}
        self._guidance: dict[str, Guidance] = {}  # file id -> judge_instructions, judge_examples
        self._frozen = False  # whether collected() froze the heap (see _heap)
        self._rubric_items_ran = False
        self._assert_subjects = False  # assert_rubric graded with subject=
        self._cache: JudgeCache | None = None
        self._cache_file: JudgeCache | None = None
        self._response_cache: CachedCalls | None = None
        self.responses_tally = ResponseTally()  # the application's answers: asked, replayed
        self.models: dict[str, LiveModel] = self._live_models()

    @property
    def responses_replayed(self) -> int:
        """How many of the application's answers this run took from the response cache
        (summed over xdist workers on the controller)."""
        return self.responses_tally.replayed

    def _live_models(self) -> dict[str, LiveModel]:
        """``--rubric-model``, each a subject; its name clashing with a ``--rubric-target``'s
        is a usage error, as the same model or name given twice is."""
        models: dict[str, LiveModel] = {}
        if not self.settings.models:
            return models
        from ._base import named
        from ._sources import LiveModel
        from .judge.providers import JudgeSpec

        targets = {
            name or value.rpartition(":")[2]: given
            for given in self.settings.targets
            for name, value in [named(given)]
        }
        for given in self.settings.models:
            name, value = named(given)
            try:
                spec = JudgeSpec.parse(value)
                subject = name or spec.model
                if subject in targets:
                    raise ValueError(
                        f"{given} and --rubric-target {targets[subject]} are both subject "
                        f"{subject!r}; name one of them (NAME=...)"
                    )
                price = self.settings.cost.of(spec.name, spec.model)
                if self.settings.cost.max_cost is not None and price is None:
                    raise ValueError(
                        f"--rubric-max-cost needs the price of model {spec.model}: add a line "
                        f"`{spec.model} IN OUT` (dollars per million tokens) to ini "
                        "rubric_judge_prices"
                    )
                models[subject] = LiveModel(
                    spec,
                    subject=subject,
                    policy=self.settings.retry,
                    price=price,
                    budget=self.budget(),
                    require_key=self.settings.response_cache_mode != "replay",
                )
            except ValueError as exc:
                raise pytest.UsageError(f"--rubric-model: {exc}") from None
        return models

    @property
    def grader(self) -> Grader:
        """The session's grader, built on first use."""
        if self._grader is None:
            from ._grader import Grader

            self._grader = Grader(
                thresholds=self.settings.thresholds,
                default_min_score=self.settings.min_score,
                call_timeout=self.settings.call_timeout,
                check_timeout=self.settings.check_timeout,
            )
        return self._grader

    def collected(self, items: Sequence[pytest.Item]) -> None:
        """Collection is over: report unused responses, start judging, arrange a quick exit."""
        self.responses.warn_unused()
        if self.judge_unavailable is not None and not self.settings.require_judge:
            # A skip mark: -rs reports the skip at the item's file, not inside the plugin.
            skip = pytest.mark.skip(reason=self.judge_unavailable)
            for item in items:
                if item.get_closest_marker("llm_judge") is not None:
                    item.add_marker(skip)
        self.plan_probe(items)
        self.start_calibration()
        self.schedule_judging(items)
        if not self.dry_run and any(is_rubric_item(i) for i in items):
            if self.config.getini("rubric_fast_exit"):
                _heap.arrange_fast_exit()  # idempotent: pytester runs many sessions in a process
            if self.config.getini("rubric_gc_freeze") and not self._frozen:
                _heap.freeze_collected()
                self._frozen = True

    def check_dirs(self) -> None:
        """Warn about a rubric directory that holds no rubric file but YAML or JSON files:
        most likely rubric files named without the pattern, which collect nothing."""
        if hasattr(self.config, "workerinput"):  # the controller warns, once
            return
        settings = self.settings
        for directory in settings.dirs:
            found = _first_data_file(directory, settings.patterns)
            if found is None:
                continue
            option = "--rubric-dir" if settings.dirs_from_flag else "ini rubric_dirs"
            here = self.config.invocation_params.dir
            folder, shown = os.path.relpath(directory, here), os.path.relpath(found, here)
            patterns = ", ".join(settings.patterns)
            self.config.issue_config_time_warning(
                RubricWarning(
                    f"{option} {folder} holds no rubric file ({patterns}) "
                    f"but YAML or JSON files, such as {shown}: rename it to match, as "
                    f"{Path(shown).stem}.rubric{Path(shown).suffix}, or set ini "
                    "rubric_file_patterns"
                ),
                stacklevel=2,
            )

    def header_line(self) -> str | None:
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
        if self.judge_name is not None:
            judges = " ".join(f"--rubric-judge {name}" for name in self.judge_name.split(" + "))
            parts.append(f"{judges} --rubric-grader {settings.grader}")
            if settings.samples > 1:
                parts.append(f"--rubric-judge-samples {settings.samples}")
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
        return f"rubric: {' '.join(parts)}" if parts else None

    # --- inputs -------------------------------------------------------------------------------

    def response_dir(self, directory: Path) -> ResponseDir:
        return self.responses.get(directory)

    def global_responses(self) -> ResponseDir | None:
        return self.responses.global_dir(self.settings.responses_dir)

    # --- results ------------------------------------------------------------------------------

    @property
    def results(self) -> list[CaseResult]:
        """Every result of the run, each item's from its last attempt."""
        return [result for results in self._results.values() for result in results]

    def log_attempt(self, report: pytest.TestReport) -> None:
        """Keep the results ``report`` carries, as its item's last attempt so far.

        Every attempt of an item starts with its setup: what an earlier one recorded no
        longer counts. pytest-rerunfailures reports an attempt it runs again with the
        outcome ``rerun``: its results are not kept, and its teardown report loses the
        JUnit properties, so JUnit carries the last attempt's alone.
        """
        nodeid = report.nodeid
        if report.when == "setup":
            self._results.pop(nodeid, None)
            self._rerun.discard(nodeid)
        if str(report.outcome) == "rerun":  # not one of pytest's own outcomes
            self._rerun.add(nodeid)
        if nodeid in self._rerun:
            if report.when == "teardown":
                report.user_properties = [
                    p for p in report.user_properties if p[0] not in JUNIT_PROPERTIES
                ]
            return
        from_rubric_item = getattr(report, "rubric_item", False)
        for result in getattr(report, "rubric_results", ()):
            self.add(nodeid, result, from_rubric_item=from_rubric_item)

    def add(self, nodeid: str, result: CaseResult, *, from_rubric_item: bool) -> None:
        self._results.setdefault(nodeid, []).append(result)
        if from_rubric_item:
            self._rubric_items_ran = True
        elif result.ranked:
            self._assert_subjects = True

    def junit_answers(self, report: pytest.TestReport) -> None:
        """Write the question and the response of a failed rubric item to its JUnit
        ``system-out`` (when ``--junitxml`` is on)."""
        from ._junit import write_system_out
        from ._table import answer_lines

        show = self.settings.show_response
        text = "\n".join(
            line
            for result in getattr(report, "rubric_results", ())
            for line in answer_lines(result, show_response=show)
        )
        if text:
            write_system_out(self.config, report, outgoing(text))

    def summary_wanted(self, report: SessionReport) -> bool:
        """Whether the terminal shows the rubric summary (ini ``rubric_summary``).

        ``auto``: when rubric items ran, when ``assert_rubric`` graded a subject
        named with ``subject=``, or when a gate ran; plain assertions in unit
        tests alone print nothing.
        """
        mode = self.settings.summary
        if mode != "auto":
            return mode == "on" and report.shown
        return self._rubric_items_ran or self._assert_subjects or report.gates.active

    def session_report(self) -> SessionReport:
        """The report :meth:`finish` built, or, before it ran (an xdist worker), one of the
        results so far."""
        if self.report is not None:
            return self.report
        return self._build_report(gates=False)

    def _build_report(self, *, gates: bool) -> SessionReport:
        from ._session_report import build_report

        settings = self.settings
        judge_usage = [
            stats.line(name, price=self.judge_prices.get(name))
            for name, stats in self.judge_usage.items()
        ]
        priced = settings.cost.max_cost is not None or any(self.judge_prices.values())
        judge_usage += [
            f"warning: judge {name} sent {stats.estimated} replies without `usage`; with prices "
            "or a budget set, their tokens are estimated at 4 characters per token"
            for name, stats in self.judge_usage.items()
            if stats.estimated and priced
        ]
        from .judge.base import elsewhere_line

        elsewhere = elsewhere_line(self.judge_usage.values())
        if elsewhere is not None:
            judge_usage.append(elsewhere)
        over_budget = sum(stats.over_budget for stats in self.judge_usage.values())
        if over_budget:
            judge_usage.append(
                f"{self.settings.cost.budget_message}: {over_budget} judged "
                f"{'criterion' if over_budget == 1 else 'criteria'} left ERROR"
            )
        return build_report(
            self.results,
            baseline=self.baseline if gates else None,
            baseline_name=self.config.getoption("rubric_baseline"),
            max_drop=settings.max_drop,
            fail_under=settings.fail_under if gates else None,
            judge_usage=judge_usage,
            thresholds=settings.thresholds,
            level=settings.confidence,
            gate_confidence=settings.gate_confidence,
            max_style_flips=settings.flip_limits.get("tone") if gates else None,
            max_flips=(
                {k: v for k, v in settings.flip_limits.items() if k != "tone"} if gates else None
            ),
            min_kappa=settings.min_kappa if gates else None,
            calibration=[c.to_dict() for c in self.calibrations()],
            responses_replayed=(self.responses_tally.replayed, self.responses_tally.asked),
            show_response=settings.show_response,
            run=self.run_info() if gates else None,
        )

    def run_info(self) -> RunInfo:
        """Which run this is (the JSON's ``run``): on an xdist controller, the judge cache's
        hits and misses are the workers' summed (see ``add_worker_stats``)."""
        import platform

        from ._run import RunInfo, git_commit, iso_time, plugin_version

        usage = self.judge_usage.values()
        return RunInfo(
            plugin_version=plugin_version(),
            pytest_version=pytest.__version__,
            python_version=platform.python_version(),
            started_at=iso_time(self._started),
            duration_s=round(time.monotonic() - self._clock, 3),
            git_commit=git_commit(self.config.rootpath),
            judges=self.run_judges,
            grader=self.settings.grader,
            cache_mode=self.settings.cache_mode,
            cache_hits=sum(stats.cache_hits for stats in usage),
            cache_misses=sum(stats.cache_misses for stats in usage),
            # The response cache's replays (--rubric-response-cache), summed over xdist workers.
            responses_replayed=self.responses_tally.replayed,
        )

    def finish(self, session: pytest.Session) -> None:
        """The controller's end of the run: apply the gates, write every output."""
        if self.dry_run:
            return
        self.report = self._build_report(gates=True)
        if self.report.gates.failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        from ._outputs import write_outputs  # the HTML and Markdown renderers: only at the end

        if self.settings.history_path is not None and self.report.shown:
            from ._history import with_trend

            self.report = with_trend(self.report, self.settings.history_path)
        write_outputs(self.report, self.settings.output_paths)
        if self.settings.history_path is not None and self.report.shown:
            from ._history import HistoryError, append

            try:
                append(self.settings.history_path, self.report)
            except HistoryError as exc:  # never a lost run: its outputs are written already
                warnings.warn(RubricWarning(str(exc)), stacklevel=1)


_DATA_SUFFIXES = (".yaml", ".yml", ".json")


def _first_data_file(directory: Path, patterns: Sequence[str]) -> Path | None:
    """The first YAML or JSON file under ``directory`` (in name order) when no file there
    matches ``patterns``; None when one does, or there is none."""
    first: Path | None = None
    for root, folders, files in os.walk(directory):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for name in sorted(files):
            if is_rubric_file(Path(name), tuple(patterns)):
                return None
            if first is None and name.endswith(_DATA_SUFFIXES):
                first = Path(root) / name
    return first


SESSION_KEY = pytest.StashKey[RubricSession]()
"""Where ``pytest_configure`` keeps the session's :class:`RubricSession`."""
