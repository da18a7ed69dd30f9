"""Session state: settings read once from the config, response files read once, results gathered.

One :class:`RubricSession` lives in ``config.stash`` from ``pytest_configure``
to ``pytest_unconfigure``. Hooks in ``plugin`` only delegate to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import _heap
from ._base import ResponseTally, is_rubric_item
from ._response_dirs import ResponseDir, ResponseDirs, RubricWarning
from ._result import CaseResult
from ._session_audit import SessionAudit
from ._settings import Settings

if TYPE_CHECKING:
    # Imported where used: a session without rubric files or judge never loads them, and
    # plain pytest runs load no report code until a summary is built.
    from ._calibration import Calibration
    from ._grader import Grader
    from ._session_report import SessionReport
    from ._sources import LiveModel
    from .judge.base import JudgeStats
    from .judge.cache import CachedCalls, JudgeCache
    from .judge.cost import Budget, Price
    from .judge.panel import Panel
    from .judge.runner import JudgeRunner

__all__ = ["SESSION_KEY", "RubricSession", "RubricWarning", "Settings"]  # Settings: re-exported


class RubricSession(SessionAudit):
    """Owns the grader, the response files and the results of one pytest session."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.settings = Settings.from_config(config)
        self._grader: Grader | None = None
        self.results: list[CaseResult] = []
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
        self._frozen = False  # whether collected() froze the heap (see _heap)
        self._rubric_items_ran = False
        self._inline_subjects: set[str] = set()  # subjects graded by assert_rubric
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
        from ._sources import LiveModel, named
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
        self.plan_probe(items)
        self.start_calibration()
        self.schedule_judging(items)
        if not self.dry_run and any(is_rubric_item(i) for i in items):
            if self.config.getini("rubric_fast_exit"):
                _heap.arrange_fast_exit()  # idempotent: pytester runs many sessions in a process
            if self.config.getini("rubric_gc_freeze") and not self._frozen:
                _heap.freeze_collected()
                self._frozen = True

    def header_line(self) -> str | None:
        settings = self.settings
        parts = [f"--rubric-dir {d}" for d in settings.dirs]
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

    def add(self, result: CaseResult, *, from_rubric_item: bool) -> None:
        self.results.append(result)
        if from_rubric_item:
            self._rubric_items_ran = True
        else:
            self._inline_subjects.add(result.subject)

    def summary_wanted(self, report: SessionReport) -> bool:
        """Whether the terminal shows the rubric summary (ini ``rubric_summary``).

        ``auto``: when rubric items ran, when ``assert_rubric`` graded two or
        more subjects (one subject ranks against nobody), or when a gate ran.
        """
        mode = self.settings.summary
        if mode != "auto":
            return mode == "on" and report.shown
        return self._rubric_items_ran or len(self._inline_subjects) >= 2 or report.gates.active

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
            max_style_flips=settings.max_style_flips if gates else None,
            calibration=[c.to_dict() for c in self.calibrations()],
            responses_replayed=(self.responses_tally.replayed, self.responses_tally.asked),
        )

    def finish(self, session: pytest.Session) -> None:
        """The controller's end of the run: apply the gates, write every output."""
        if self.dry_run:
            return
        self.report = self._build_report(gates=True)
        if self.report.gates.failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        from ._outputs import write_outputs  # the HTML and Markdown renderers: only at the end

        write_outputs(self.report, self.settings.output_paths)


SESSION_KEY = pytest.StashKey[RubricSession]()
"""Where ``pytest_configure`` keeps the session's :class:`RubricSession`."""
