"""The session's judge: set up once, asked ahead for what will run, its usage summed.

A part of :class:`~pytest_rubric._session.RubricSession` (which inherits it), kept apart so
that the session reads as inputs, results and outputs.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from . import _heap
from ._base import SET_A_JUDGE, ResponseTally, is_rubric_item
from ._response_dirs import RubricWarning
from ._result import Verdict
from ._settings import Settings
from ._xdist import is_xdist_controller, worker_count

if TYPE_CHECKING:
    # Imported where used: a session without rubric files or judge never loads them.
    from ._calibration import Calibration
    from ._grader import CompiledRubric
    from ._run import RunJudge
    from .judge.base import Judged, JudgeStats
    from .judge.cache import CachedCalls, JudgeCache
    from .judge.cost import Budget, Price
    from .judge.panel import Panel
    from .judge.prompts import Guidance
    from .judge.providers import JudgeSpec
    from .judge.runner import JudgeRunner


__all__ = ["REQUIRE_JUDGE_REASON", "SessionJudge", "sample_key"]

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
    "estimated",
)


def sample_key(nodeid: str, index: int) -> str:
    """The judge's key for sample ``index`` of an item: its node id for the first."""
    return nodeid if index == 0 else f"{nodeid}#{index}"


class SessionJudge:
    """The judge's part of the session."""

    # Set by RubricSession.__init__; declared here for the type checker.
    config: pytest.Config
    settings: Settings
    judging: JudgeRunner | Panel | None
    judge_name: str | None
    judge_unavailable: str | None
    judge_usage: dict[str, JudgeStats]
    run_judges: tuple[RunJudge, ...]
    judge_prices: dict[str, Price | None]
    probe_plan: dict[str, tuple[str, ...]]
    _budget: Budget | None
    _cache: JudgeCache | None
    _cache_file: JudgeCache | None
    _response_cache: CachedCalls | None
    responses_tally: ResponseTally
    _scheduled: set[str]
    _calibration_examples: dict[str, tuple[str, list[Any]]]
    _calibrated: dict[str, Calibration]
    _guidance: dict[str, Guidance]
    _frozen: bool

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

    # The audit's part (SessionAudit, which RubricSession is) answers these.
    def calibrations(self) -> list[Calibration]:
        raise NotImplementedError

    def _below_min_kappa(self, key: str) -> str | None:
        raise NotImplementedError

    def _schedule_probe(self, key: str, compiled: CompiledRubric, response: str) -> None:
        raise NotImplementedError

    def guidance_of(self, key: str) -> Guidance | None:
        raise NotImplementedError

    def cache(self) -> JudgeCache | None:
        """The session's judge cache (opened on first use), or None with ``--rubric-cache off``."""
        if self._cache is None and self.settings.cache_mode != "off":
            self._cache = self._open_cache()
        return self._cache

    def response_cache(self) -> CachedCalls | None:
        """What the application's answers go through with ``--rubric-response-cache use`` or
        ``replay`` (the same file as the judge's, whatever ``--rubric-cache`` says); None
        without it: targets and models are then called on every run."""
        mode = self.settings.response_cache_mode
        if self._response_cache is None and mode != "off":
            from .judge.cache import CachedCalls

            self._response_cache = CachedCalls(self._open_cache(), mode)
        return self._response_cache

    def _open_cache(self) -> JudgeCache:
        """The cache file, opened once for the judge and the response cache alike."""
        if self._cache_file is None:
            from .judge.cache import JudgeCache
            from .judge.providers import known_keys  # no httpx: an xdist controller skips it

            self._cache_file = JudgeCache(self.settings.cache_dir, secrets=known_keys())
            warning = self._cache_file.take_warning()
            # One warning per run: under xdist the controller opens the cache too
            # (start_judge) and reports; the workers, which find the same file, do not.
            if warning is not None and not hasattr(self.config, "workerinput"):
                self.config.issue_config_time_warning(RubricWarning(warning), stacklevel=2)
        return self._cache_file

    def _warn_cache_trouble(self) -> None:
        """A lookup or a write of the cache failed (in the judge's thread): warn, in the item."""
        warning = self._cache_file.take_warning() if self._cache_file is not None else None
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
            flag = settings.judge_source == "--rubric-judge"
            try:
                for judge in settings.judges:
                    spec = JudgeSpec.parse(judge, url=settings.judge_url)
                    specs.append(spec)
            except ValueError as exc:
                raise pytest.UsageError(f"{settings.judge_source}: {exc}") from None
            for spec in specs:
                try:
                    # Replay makes no call at all, so it needs no key.
                    read_key(spec, require_key=settings.cache_mode != "replay")
                except ValueError as exc:
                    if flag:  # asked for on this command line: a usage error
                        raise pytest.UsageError(f"--rubric-judge: {exc}") from None
                    # Set in the ini or the environment (a colleague's checkout, a fork's
                    # CI): the session runs, and what needs the judge says why it did not.
                    self.judge_unavailable = (
                        f"no key for judge {spec.name} ({settings.judge_source}): "
                        f"set {spec.key_variable} in the environment"
                    )
                    return
            names = [spec.name for spec in specs]
        else:
            return
        if settings.judge_batch:
            self._check_batch(specs)
        self.judge_name = " + ".join(names)
        from ._run import RunJudge

        self.run_judges = tuple(
            RunJudge(spec.name, spec.provider, spec.model, spec.public_url) for spec in specs
        ) or tuple(RunJudge(name) for name in names)
        models = {spec.name: spec.model for spec in specs} or {names[0]: names[0]}
        self.judge_prices = {
            name: settings.cost.of(*((name, models[name]) if specs else (name,)), judge=True)
            for name in names
        }
        if settings.judge_batch:  # the calls are priced as the batch API bills them
            self.judge_prices = {
                n: p if p is None else p.batch() for n, p in self.judge_prices.items()
            }
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
                check_timeout=settings.check_timeout,
            )
            for client, name in zip(clients, names, strict=True)
        ]
        if settings.judge_batch:
            from .judge.batch import BatchQueue

            for runner in runners:
                runner.transport.batch = BatchQueue(
                    runner.transport.client, timeout=settings.judge_batch_timeout
                )
        self.judge_usage = {runner.name: runner.stats for runner in runners}
        if len(runners) == 1:
            self.judging = runners[0]
        else:
            from .judge.panel import Panel

            self.judging = Panel(runners)

    def _check_batch(self, specs: Sequence[JudgeSpec]) -> None:
        """``--rubric-judge-batch`` needs a provider with a batch API: a usage error otherwise."""
        from .judge.batch import BATCH_PROVIDERS

        if not specs:
            raise pytest.UsageError(
                "--rubric-judge-batch sends judge calls through the openai or anthropic batch "
                "API, not to the judge of pytest_rubric_make_judge: drop the flag, or judge with "
                "--rubric-judge openai:MODEL or anthropic:MODEL"
            )
        for spec in specs:
            if spec.provider not in BATCH_PROVIDERS:
                raise pytest.UsageError(
                    f"--rubric-judge-batch: judge {spec.name} has no batch API here (providers "
                    f"with one: {', '.join(BATCH_PROVIDERS)}); drop the flag to judge live"
                )

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
                    guidance=self.guidance_of(item.nodeid),
                )

    def add_worker_stats(self, data: dict[str, Any]) -> None:
        """Fold an xdist worker's judge usage and application answers into the controller's,
        and keep the first calibration figures of each rubric file (every worker measures the
        same ones)."""
        responses = data.get("responses") or {}
        self.responses_tally.add(int(responses.get("asked", 0)), int(responses.get("replayed", 0)))
        for name, counts in data.get("judges", {}).items():
            stats = self.judge_usage.get(name)
            if stats is not None:
                for field_name in _STATS_FIELDS:
                    value = getattr(stats, field_name) + int(counts.get(field_name, 0))
                    setattr(stats, field_name, value)
                for endpoint, n in counts.get("elsewhere", {}).items():
                    stats.elsewhere[endpoint] = stats.elsewhere.get(endpoint, 0) + int(n)
        if data.get("calibration"):
            from ._calibration import Calibration

            for file_id, entry in data["calibration"].items():
                self._calibrated.setdefault(file_id, Calibration.from_dict(entry))

    def worker_stats(self) -> dict[str, Any] | None:
        tally = self.responses_tally
        data: dict[str, Any] = {"responses": {"asked": tally.asked, "replayed": tally.replayed}}
        if self.judging is not None:
            self.calibrations()
            data["judges"] = {
                name: {
                    **{field_name: getattr(stats, field_name) for field_name in _STATS_FIELDS},
                    "elsewhere": dict(stats.elsewhere),
                }
                for name, stats in self.judge_usage.items()
            }
            data["calibration"] = {f: c.to_dict() for f, c in self._calibrated.items()}
        return data

    def close(self) -> None:
        """The session is over: stop the judge, close the cache."""
        self.stop_judge()

    def thaw(self) -> None:
        """Undo the freeze of the collected heap, if there was one (a cleanup of the config
        registered at configure, so that it runs after pytest's own cleanups: see ``_heap``)."""
        if self._frozen:
            _heap.thaw()
            self._frozen = False

    def stop_judge(self) -> None:
        if self.judging is not None:
            self.judging.close()
        if self._cache_file is not None:
            self._cache_file.close()
            self._cache_file = self._cache = None
            self._response_cache = None

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
                    guidance=self.guidance_of(key),
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
                guidance=self.guidance_of(key),
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
        if self.settings.require_judge or self.judge_unavailable is not None:
            from ._result import Outcome
            from .judge.base import Judged

            verdict = Verdict.ERROR if self.settings.require_judge else Verdict.SKIPPED
            reason = self.judge_unavailable or REQUIRE_JUDGE_REASON
            return Judged({c.id: Outcome(verdict, 0.0, reason) for c in compiled.judged_criteria})
        return None
