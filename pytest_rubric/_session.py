"""Session state: settings read once from the config, response files read once, results gathered.

One :class:`RubricSession` lives in ``config.stash`` from ``pytest_configure``
to ``pytest_unconfigure``. Hooks in ``plugin`` only delegate to it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import _heap
from ._base import SET_A_JUDGE, is_rubric_item
from ._report import DocumentError, read_document
from ._response_dirs import ResponseDir, ResponseDirs, RubricWarning
from ._result import CaseResult, Verdict
from ._session_report import SessionReport, build_report
from ._settings import Settings
from ._xdist import is_xdist_controller, worker_count

if TYPE_CHECKING:
    # Imported where used: a session without rubric files or judge never loads them.
    from ._calibration import Calibration
    from ._grader import CompiledRubric, Grader
    from ._sources import LiveModel
    from .judge.base import Judged, JudgeStats
    from .judge.cache import JudgeCache
    from .judge.cost import Budget, Price
    from .judge.panel import Panel
    from .judge.runner import JudgeRunner

__all__ = ["SESSION_KEY", "RubricSession", "RubricWarning", "Settings"]  # Settings: re-exported

REQUIRE_JUDGE_REASON = f"--rubric-require-judge is set but no judge is configured: {SET_A_JUDGE}"


_STATS_FIELDS = (
    "calls",
    "retries",
    "errors",
    "tokens_in",
    "tokens_out",
    "cache_hits",
    "cache_misses",
    "saved_in",
    "saved_out",
    "over_budget",
)


class RubricSession:
    """Owns the grader, the response files and the results of one pytest session."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.settings = Settings.from_config(config)
        self._grader: Grader | None = None
        self.results: list[CaseResult] = []
        self.report: SessionReport | None = None  # set by finish(), once every result is in
        self.baseline: list[CaseResult] | None = None
        if self.settings.baseline_path is not None:
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
        self.judge_stats: JudgeStats | None = None  # the first judge's
        self.judge_usage: dict[str, JudgeStats] = {}  # every judge's, by name
        self.judge_prices: dict[str, Price | None] = {}  # every judge's, by name
        self.judge_price: Price | None = None  # the first judge's
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
        self.model: LiveModel | None = None
        self._cache: JudgeCache | None = None
        self._target_cache: Any = None
        if self.settings.model:
            try:
                from ._sources import LiveModel
                from .judge.providers import JudgeSpec

                spec = JudgeSpec.parse(self.settings.model)
                price = self.settings.cost.of(spec.name, spec.model)
                if self.settings.cost.max_cost is not None and price is None:
                    raise ValueError(
                        f"--rubric-max-cost needs the price of model {spec.model}: add a line "
                        f"`{spec.model} IN OUT` (dollars per million tokens) to ini "
                        "rubric_judge_prices"
                    )
                self.model = LiveModel(
                    spec,
                    policy=self.settings.retry,
                    cache=self.cache(),
                    cache_mode=self.settings.cache_mode,
                    price=price,
                    budget=self.budget(),
                )
            except ValueError as exc:
                raise pytest.UsageError(f"--rubric-model: {exc}") from None

    @property
    def grader(self) -> Grader:
        """The session's grader, built on first use."""
        if self._grader is None:
            from ._grader import Grader

            self._grader = Grader(
                thresholds=self.settings.thresholds,
                default_min_score=self.settings.min_score,
                call_timeout=self.settings.call_timeout,
            )
        return self._grader

    def cache(self) -> JudgeCache | None:
        """The session's judge cache (opened on first use), or None with ``--rubric-cache off``."""
        if self._cache is None and self.settings.cache_mode != "off":
            from .judge.cache import JudgeCache
            from .judge.providers import known_keys  # no httpx: an xdist controller skips it

            self._cache = JudgeCache(self.settings.cache_dir, secrets=known_keys())
            warning = self._cache.take_warning()
            # One warning per run: under xdist the controller opens the cache too
            # (start_judge) and reports; the workers, which find the same file, do not.
            if warning is not None and not hasattr(self.config, "workerinput"):
                self.config.issue_config_time_warning(RubricWarning(warning), stacklevel=2)
        return self._cache

    def target_cache(self) -> Any:
        """The ``CachedCalls`` a target's answers go through (one entry per sample index), or
        None with ``--rubric-cache off``."""
        if self._target_cache is None and self.settings.cache_mode != "off":
            from .judge.cache import CachedCalls

            self._target_cache = CachedCalls(self.cache(), self.settings.cache_mode)
        return self._target_cache

    def _warn_cache_trouble(self) -> None:
        """A lookup or a write of the cache failed (in the judge's thread): warn, in the item."""
        warning = self._cache.take_warning() if self._cache is not None else None
        if warning is not None:
            warnings.warn(RubricWarning(warning), stacklevel=3)

    def budget(self) -> Budget | None:
        """This process's share of ``--rubric-max-cost`` (one for the judge and the model), or
        None without one."""
        if self._budget is None:
            self._budget = self.settings.cost.budget(share=worker_count(self.config))
        return self._budget

    def start_judge(self, custom: object | None) -> None:
        """Set up the judge: the hook's object, else ``--rubric-judge`` / ini / ``RUBRIC_JUDGE``
        (given more than once: a panel, see ``judge.panel``)."""
        from .judge.base import JudgeStats
        from .judge.providers import JudgeSpec, read_key

        settings = self.settings
        specs: list[JudgeSpec] = []
        if custom is not None:
            if not callable(getattr(custom, "complete", None)):
                raise pytest.UsageError(
                    "pytest_rubric_make_judge returned an object without `async complete(system, "
                    "user) -> str`"
                )
            names = [str(getattr(custom, "name", None) or type(custom).__name__)]
        elif settings.judges:
            try:
                for judge in settings.judges:
                    spec = JudgeSpec.parse(judge, url=settings.judge_url)
                    # Replay makes no call at all, so it needs no key.
                    read_key(spec, require_key=settings.cache_mode != "replay")
                    specs.append(spec)
            except ValueError as exc:
                raise pytest.UsageError(f"--rubric-judge: {exc}") from None
            names = [spec.name for spec in specs]
        else:
            return
        self.judge_name = " + ".join(names)
        models = {spec.name: spec.model for spec in specs} or {names[0]: names[0]}
        self.judge_prices = {
            name: settings.cost.of(*((name, models[name]) if specs else (name,)), judge=True)
            for name in names
        }
        self.judge_price = self.judge_prices[names[0]]
        unpriced = [name for name, price in self.judge_prices.items() if price is None]
        if settings.cost.max_cost is not None and unpriced:
            raise pytest.UsageError(
                f"--rubric-max-cost needs the price of judge {unpriced[0]}: pass "
                f"--rubric-judge-price IN,OUT, or add a line `{models[unpriced[0]]} IN OUT` "
                "(dollars per million tokens) to ini rubric_judge_prices"
            )
        if is_xdist_controller(self.config):
            # The workers judge; the controller adds up their usage. It skips the
            # client, its event loop and the httpx import (workers start sooner).
            self.judge_usage = {name: JudgeStats() for name in names}
            self.judge_stats = self.judge_usage[names[0]]
            self.cache()  # only to check it: a broken cache is reported once, from here
            return
        clients: list[Any] = [custom]  # its `complete` was checked above
        if specs:
            from .judge.clients import make_client

            clients = [
                make_client(spec, policy=settings.retry, require_key=False)  # key checked above
                for spec in specs
            ]
        # The bound is for the whole run: xdist workers share it (and a panel's judges).
        concurrency = max(1, settings.concurrency // (worker_count(self.config) * len(clients)))
        budget = self.budget()  # one budget for every judge of a panel
        from .judge.runner import JudgeRunner

        runners = [
            JudgeRunner(
                client,
                name=name,
                strategy=settings.grader,
                concurrency=concurrency,
                cache=self.cache(),
                cache_mode=settings.cache_mode,
                samples=settings.samples,
                timeout=settings.retry.timeout,
                price=self.judge_prices[name],
                budget=budget,
                evidence=settings.judge_evidence,
            )
            for client, name in zip(clients, names, strict=True)
        ]
        self.judge_usage = {runner.name: runner.stats for runner in runners}
        if len(runners) == 1:
            self.judging = runners[0]
        else:
            from .judge.panel import Panel

            self.judging = Panel(runners)
        self.judge_stats = runners[0].stats

    @property
    def dry_run(self) -> bool:
        """``--collect-only``, ``--setup-only`` or ``--setup-plan``: nothing is graded, so no
        judge call is made and no result is written."""
        option = self.config.option
        return bool(
            getattr(option, "collectonly", False)
            or getattr(option, "setuponly", False)
            or getattr(option, "setupplan", False)
        )

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

    def add_calibration(self, file_id: str, suite: str, examples: list[Any]) -> None:
        """A collected rubric file's calibration examples (``(example, criterion, case)``)."""
        if examples:
            self._calibration_examples[file_id] = (suite, examples)

    def start_calibration(self) -> None:
        """Start grading every calibration example, before any judged item runs.

        Under xdist one worker (``gw0``) grades them, so the session pays for them
        once; with ``--rubric-judge-min-kappa`` every worker needs the figures for
        its own items, so each grades them (the cache serves what another already
        stored), and the controller keeps the first figures it receives.
        """
        if self.judging is None or self.dry_run or not self._grades_calibration:
            return
        for file_id, (_, examples) in self._calibration_examples.items():
            for index, (example, criterion, case) in enumerate(examples):
                self.judging.schedule(
                    f"{file_id}::calibration#{index}",
                    [criterion],
                    question=case.asked,
                    response=example.response,
                    reference=case.reference,
                )

    @property
    def _grades_calibration(self) -> bool:
        workerinput = getattr(self.config, "workerinput", None)
        if workerinput is None or self.settings.min_kappa is not None:
            return True
        return bool(workerinput.get("workerid") == "gw0")

    def calibration_of(self, file_id: str) -> Calibration | None:
        """The judge's agreement with a rubric file's labels (waiting for its grades)."""
        if file_id in self._calibrated or self.judging is None:
            return self._calibrated.get(file_id)
        if file_id not in self._calibration_examples or not self._grades_calibration:
            return None
        from ._calibration import label_met, measure
        from ._result import Verdict

        suite, examples = self._calibration_examples[file_id]
        pairs: list[tuple[bool, bool | None]] = []
        for index, (example, criterion, case) in enumerate(examples):
            outcome = self.judging.result(
                f"{file_id}::calibration#{index}",
                [criterion],
                question=case.asked,
                response=example.response,
                reference=case.reference,
            ).outcomes[criterion.id]
            decided = outcome.verdict in (Verdict.MET, Verdict.UNMET)
            judged = outcome.verdict is Verdict.MET if decided else None
            pairs.append((label_met(example, criterion), judged))
        self._calibrated[file_id] = measure(suite, self.judging.name, pairs)
        return self._calibrated[file_id]

    def calibrations(self) -> list[Calibration]:
        """Every rubric file's calibration, in node id order."""
        for file_id in self._calibration_examples:
            self.calibration_of(file_id)
        return [self._calibrated[f] for f in sorted(self._calibrated)]

    def _below_min_kappa(self, key: str) -> str | None:
        """Why the judged criteria of item ``key`` are ERROR: its suite's calibration kappa is
        below ``--rubric-judge-min-kappa``; None when it is not."""
        floor = self.settings.min_kappa
        if floor is None:
            return None
        calibration = self.calibration_of(key.split("::", 1)[0])
        if calibration is None:
            return None
        if calibration.kappa is None:
            return (
                f"judge calibration of suite {calibration.suite!r}: kappa cannot be computed "
                f"(n {calibration.n}; the labels or the verdicts are all one way), so it is not "
                f"at least --rubric-judge-min-kappa {floor:g}"
            )
        if calibration.kappa < floor:
            return (
                f"judge calibration of suite {calibration.suite!r}: kappa {calibration.kappa:.3f} "
                f"is below --rubric-judge-min-kappa {floor:g}"
            )
        return None

    def plan_probe(self, items: Sequence[pytest.Item]) -> None:
        """Choose the criteria the style probe judges again (``--rubric-judge-probe N``).

        Every process collects every item, so each xdist worker makes the same choice.
        """
        n = self.settings.judge_probe
        if not n or self.judge_name is None or self.dry_run:
            return
        from ._audit import probe_plan

        candidates = [
            (
                item.nodeid,
                str(getattr(item, "subject", "") or ""),
                [c.id for c in item.compiled.judged_criteria if c.axis == "substance"],
            )
            for item in items
            if is_rubric_item(item)
        ]
        self.probe_plan = probe_plan(sorted(candidates), n)

    def _probed(self, key: str, compiled: CompiledRubric) -> list[Any]:
        ids = self.probe_plan.get(key, ())
        return [c for c in compiled.judged_criteria if c.id in ids]

    def _schedule_probe(self, key: str, compiled: CompiledRubric, response: str) -> None:
        from ._restyle import restyle

        criteria = self._probed(key, compiled)
        if self.judging is None or not criteria:
            return
        for tone in ("confident", "hedged"):
            self.judging.schedule(
                f"{key}#probe-{tone}",
                criteria,
                question=compiled.rubric.asked,
                response=restyle(response, to=tone),
                reference=compiled.rubric.reference,
            )

    def probe(
        self, key: str, compiled: CompiledRubric, response: str, judged: Judged | None
    ) -> list[dict[str, str]]:
        """The style probe's records for the item ``key`` (none when it is not probed): each
        judge's verdicts on its first answer (``judged``) and on that answer's two rewrites."""
        from ._audit import probe_record
        from ._restyle import restyle

        criteria = self._probed(key, compiled)
        if self.judging is None or judged is None or not criteria:
            return []
        self._schedule_probe(key, compiled, response)
        records = []
        # A panel's judges are probed one by one: the audit is per judge.
        for runner in getattr(self.judging, "runners", (self.judging,)):
            rewrites = {
                tone: runner.result(
                    f"{key}#probe-{tone}",
                    criteria,
                    question=compiled.rubric.asked,
                    response=restyle(response, to=tone),
                    reference=compiled.rubric.reference,
                )
                for tone in ("confident", "hedged")
            }
            for c in criteria:
                outcome = judged.outcomes.get(c.id)
                if outcome is None:
                    continue
                original = dict(outcome.judges).get(runner.name, str(outcome.verdict))
                if not isinstance(original, str):  # a panel judge's score: MET in the upper half
                    share = (original - c.min_score) / (c.max_score - c.min_score)
                    original = "MET" if share >= 0.5 else "UNMET"
                records.append(
                    probe_record(
                        criterion=c.id,
                        judge=runner.name,
                        original=str(original),
                        confident=str(rewrites["confident"].outcomes[c.id].verdict),
                        hedged=str(rewrites["hedged"].outcomes[c.id].verdict),
                    )
                )
        self._warn_cache_trouble()
        return records

    def schedule_judging(self, items: Sequence[pytest.Item]) -> None:
        """Start every collected item's judge calls now, so they overlap across items.

        Items whose response comes from a target or a model are judged when
        they run. An xdist worker runs only the items it is handed, so it
        schedules those as it learns of them (:meth:`schedule_items`).
        """
        if self.judging is None or hasattr(self.config, "workerinput"):
            return
        for item in items:
            self._schedule(item)

    def schedule_items(self, items: Iterable[pytest.Item]) -> None:
        """Start judging ``items`` (an xdist worker, about to run them; see ``_xdist``)."""
        if self.judging is not None:
            for item in items:
                self._schedule(item)

    def _schedule(self, item: pytest.Item) -> None:
        if item.nodeid in self._scheduled or self.judging is None or self.dry_run:
            return
        self._scheduled.add(item.nodeid)
        if not is_rubric_item(item):
            return
        source, compiled = item.source, item.compiled
        if compiled.judged:
            for index, text in enumerate(source.texts):
                self.judging.schedule(
                    sample_key(item.nodeid, index),
                    compiled.judged_criteria,
                    question=compiled.rubric.asked,
                    response=text,
                    reference=compiled.rubric.reference,
                )

    def add_worker_stats(self, data: dict[str, Any]) -> None:
        """Fold an xdist worker's judge usage into the controller's, and keep the first
        calibration figures of each rubric file (every worker measures the same ones)."""
        for name, counts in data.get("judges", {}).items():
            stats = self.judge_usage.get(name)
            if stats is not None:
                for field_name in _STATS_FIELDS:
                    value = getattr(stats, field_name) + int(counts.get(field_name, 0))
                    setattr(stats, field_name, value)
        if data.get("calibration"):
            from ._calibration import Calibration

            for file_id, entry in data["calibration"].items():
                self._calibrated.setdefault(file_id, Calibration.from_dict(entry))

    def worker_stats(self) -> dict[str, Any] | None:
        if self.judging is None:
            return None
        self.calibrations()
        return {
            "judges": {
                name: {field_name: getattr(stats, field_name) for field_name in _STATS_FIELDS}
                for name, stats in self.judge_usage.items()
            },
            "calibration": {f: c.to_dict() for f, c in self._calibrated.items()},
        }

    def close(self) -> None:
        """The session is over: stop the judge, close the cache, thaw the heap."""
        self.stop_judge()
        if self._frozen:
            _heap.thaw()
            self._frozen = False

    def stop_judge(self) -> None:
        if self.judging is not None:
            self.judging.close()
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def judge_samples(
        self, key: str, compiled: CompiledRubric, responses: Sequence[str]
    ) -> list[Judged | None]:
        """The judge's outcomes for each sample's answer, every sample's calls started at once."""
        if self.judging is not None and compiled.judged:
            for index, response in enumerate(responses):
                self.judging.schedule(
                    sample_key(key, index),
                    compiled.judged_criteria,
                    question=compiled.rubric.asked,
                    response=response,
                    reference=compiled.rubric.reference,
                )
            if responses:
                self._schedule_probe(key, compiled, responses[0])
        return [
            self.judge_rubric(sample_key(key, index), compiled, response)
            for index, response in enumerate(responses)
        ]

    def judge_rubric(self, key: str, compiled: CompiledRubric, response: str) -> Judged | None:
        """The judge's outcomes for ``compiled``'s judged criteria, or None to leave them SKIPPED."""
        self._warn_cache_trouble()  # a live model's answer was just fetched through the cache
        if not compiled.judged:
            return None
        if self.judging is not None:
            judged = self.judging.result(
                key,
                compiled.judged_criteria,
                question=compiled.rubric.asked,
                response=response,
                reference=compiled.rubric.reference,
            )
            self._warn_cache_trouble()
            uncalibrated = self._below_min_kappa(key)
            if uncalibrated is not None:
                from ._result import Outcome
                from .judge.base import Judged

                return Judged(
                    {
                        c.id: Outcome(Verdict.ERROR, 0.0, uncalibrated)
                        for c in compiled.judged_criteria
                    }
                )
            return judged
        if self.settings.require_judge:
            from ._result import Outcome
            from .judge.base import Judged

            return Judged(
                {
                    c.id: Outcome(Verdict.ERROR, 0.0, REQUIRE_JUDGE_REASON)
                    for c in compiled.judged_criteria
                }
            )
        return None

    def header_line(self) -> str | None:
        settings = self.settings
        parts = [f"--rubric-dir {d}" for d in settings.dirs]
        if settings.responses_dir:
            parts.append(f"--rubric-responses {settings.responses_dir}")
        if settings.target:
            parts.append(f"--rubric-target {settings.target}")
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


def sample_key(nodeid: str, index: int) -> str:
    """The judge's key for sample ``index`` of an item: its node id for the first."""
    return nodeid if index == 0 else f"{nodeid}#{index}"


SESSION_KEY = pytest.StashKey[RubricSession]()
"""Where ``pytest_configure`` keeps the session's :class:`RubricSession`."""
