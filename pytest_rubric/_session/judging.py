"""The session's judge: set up once, asked ahead for what will run, its usage summed (over
xdist workers on the controller). It knows nothing of the audit: the session composes them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

import pytest

from .._defaults import NO_KEY, SET_A_JUDGE, RetryPolicy
from .._results import CaseResult, Outcome, Verdict
from ..judge.requests import JudgeKey, JudgeRequest
from .caches import Caches
from .items import is_rubric_item
from .xdist import Role

if TYPE_CHECKING:
    # Imported where used: a session without rubric files or judge never loads them.
    from .._grade.grader import CompiledRubric
    from .._llm.base import CallStats, Judged
    from .._llm.cost import Budget, CostSettings, Price
    from .._llm.providers import ModelSpec
    from .._report.report import JudgeUsage
    from .._report.run import RunJudge
    from .._trace import Passage
    from ..judge.prompts import Guidance
    from ..judge.runner import JudgeRunner, Panel


REQUIRE_JUDGE_REASON = f"--rubric-require-judge is set but no judge is configured: {SET_A_JUDGE}"


@dataclass(frozen=True, slots=True)
class JudgeSetup:
    """What the judge is set up from: the options of the same names (``Settings``)."""

    judges: tuple[str, ...]
    judge_source: str
    judge_url: str | None
    grader: str
    concurrency: int
    votes: int
    retry: RetryPolicy
    judge_batch: bool
    judge_batch_timeout: float
    cache_mode: str
    require_judge: bool
    cost: CostSettings
    judge_evidence: str
    check_timeout: float


def answer_key(item: pytest.Item) -> JudgeKey:
    """The judge's key for a rubric item's first answer (``of_sample(i)`` for the others)."""
    return JudgeKey(item.parent.nodeid if item.parent is not None else "", item.nodeid)


@dataclass(eq=False)
class Judging:
    """The judge's part of the session: ``start`` it, ``schedule`` work, wait for ``results``."""

    setup: JudgeSetup
    role: Role
    caches: Caches
    budget: Budget | None
    dry_run: bool
    runner: JudgeRunner | Panel | None = None  # None on an xdist controller
    # Set whenever a judge is configured: each judge's PROVIDER:MODEL (a panel's, in order).
    names: tuple[str, ...] = ()
    # Why the configured judge cannot run (set in the ini or the environment, no key);
    # judged items are then skipped, or errors with --rubric-require-judge.
    unavailable: str | None = None
    run_judges: tuple[RunJudge, ...] = ()  # the same judges, for the JSON's run
    usage: dict[str, CallStats] = field(default_factory=dict)  # every judge's, by name
    clients: int = 0  # judge clients in the run: its processes times its judges
    prices: dict[str, Price | None] = field(default_factory=dict)  # every judge's, by name
    _scheduled: set[str] = field(default_factory=set, init=False)  # node ids whose judging started
    # A collected rubric file's (by node id) judge_instructions: and judge_examples:.
    guidance: dict[str, Guidance] = field(default_factory=dict, init=False)

    # --- set up ---------------------------------------------------------------------------------

    def start(self, custom: object | None) -> None:
        """Set up the judge: the hook's object, else ``--rubric-judge`` / ini / ``RUBRIC_JUDGE``
        (given more than once: a panel, see ``judge.runner.Panel``)."""
        from .._llm.providers import ModelSpec, read_key

        setup = self.setup
        specs: list[ModelSpec] = []
        if custom is not None:
            if not callable(getattr(custom, "complete", None)):
                raise pytest.UsageError(
                    "pytest_rubric_make_judge returned an object without `async complete(system, "
                    "user) -> str`"
                )
            names = [str(getattr(custom, "name", None) or type(custom).__name__)]
        elif setup.judges:
            try:
                specs = [ModelSpec.parse(judge, url=setup.judge_url) for judge in setup.judges]
            except ValueError as exc:
                raise pytest.UsageError(f"{setup.judge_source}: {exc}") from None
            for spec in specs:
                try:
                    # Replay makes no call at all, so it needs no key.
                    read_key(spec, require_key=setup.cache_mode != "replay")
                except ValueError as exc:
                    if setup.judge_source == "--rubric-judge":  # asked for on this command line
                        raise pytest.UsageError(f"--rubric-judge: {exc}") from None
                    # Set in the ini or the environment (a colleague's checkout, a fork's
                    # CI): the session runs, and what needs the judge says why it did not.
                    self.unavailable = (
                        f"{NO_KEY}{spec.name} ({setup.judge_source}): "
                        f"set {spec.entry.key_variable} in the environment"
                    )
                    if self.caches.recordings_dir is not None:  # replay needs no key
                        self.unavailable += (
                            ", or grade from the recordings with --rubric-cache replay"
                        )
                    return
            names = [spec.name for spec in specs]
        else:
            return
        if setup.judge_batch:
            _check_batch(specs)
        self.names = tuple(names)
        self._price(specs, names)
        self.clients = self.role.workers * len(names)  # each asks one call at a time at least
        if self.role.hands_out:
            # The workers judge; the controller adds up their usage. It skips the
            # client, its event loop and the httpx import (workers start sooner).
            from .._llm.base import CallStats

            self.usage = {name: CallStats() for name in names}
            self.caches.judge()  # only to check it: a broken cache is reported once, from here
            return
        clients: list[Any] = [custom]  # its `complete` was checked above
        if specs:
            from .._llm.clients import make_client

            clients = [
                make_client(spec, policy=setup.retry, require_key=False)  # key checked above
                for spec in specs
            ]
        self._run(clients, names)

    def _price(self, specs: Sequence[Any], names: Sequence[str]) -> None:
        from .._report.run import RunJudge

        setup = self.setup
        self.run_judges = tuple(
            RunJudge(spec.name, spec.provider, spec.model, spec.public_url) for spec in specs
        ) or tuple(RunJudge(name) for name in names)
        models = {spec.name: spec.model for spec in specs} or {names[0]: names[0]}
        self.prices = {
            name: setup.cost.of(*((name, models[name]) if specs else (name,)), judge=True)
            for name in names
        }
        if setup.judge_batch:  # the calls are priced as the batch API bills them
            self.prices = {n: p if p is None else p.batch() for n, p in self.prices.items()}
        unpriced = [name for name, price in self.prices.items() if price is None]
        if setup.cost.max_cost is not None and unpriced:
            flag = "pass --rubric-judge-price IN,OUT, or " if len(names) == 1 else ""
            raise pytest.UsageError(
                f"--rubric-max-cost needs the price of judge {unpriced[0]}: {flag}add a line "
                f"`{models[unpriced[0]]} IN OUT` (dollars per million tokens) to ini "
                "rubric_judge_prices"
            )

    def _run(self, clients: Sequence[Any], names: Sequence[str]) -> None:
        from ..judge.runner import JudgeRunner, Panel

        setup = self.setup
        # The bound is for the whole run: xdist workers share it (and a panel's judges).
        concurrency = max(1, setup.concurrency // (self.role.workers * len(clients)))
        runners = [
            JudgeRunner(
                client,
                name=name,
                strategy=setup.grader,
                concurrency=concurrency,
                cache=self.caches.judge(),
                cache_mode=setup.cache_mode,
                votes=setup.votes,
                timeout=setup.retry.timeout,
                price=self.prices[name],
                budget=self.budget,  # one budget for every judge of a panel, and the model
                evidence=setup.judge_evidence,
                check_timeout=setup.check_timeout,
                recordings=self.caches.recordings(),
            )
            for client, name in zip(clients, names, strict=True)
        ]
        if setup.judge_batch:
            from .._llm.batch import BatchQueue

            for runner in runners:
                runner.transport.batch = BatchQueue(
                    runner.transport.client, timeout=setup.judge_batch_timeout
                )
        self.usage = {runner.name: runner.stats for runner in runners}
        self.runner = runners[0] if len(runners) == 1 else Panel(runners)

    # --- what the judge is asked ------------------------------------------------------------------

    def request(
        self,
        key: JudgeKey,
        compiled: CompiledRubric,
        response: str,
        context: tuple[Passage, ...] | None = None,
    ) -> JudgeRequest:
        """The request that judges ``response`` (with its ``context``, the retrieved passages)
        on ``compiled``'s judged criteria. Its recording file (``--rubric-recordings``) is
        ``<rubric file node id>/<case id>.json``; ``assert_rubric`` is no case of a rubric
        file, so it has none (its replies go to the local cache alone)."""
        from .._llm.recordings import location

        return JudgeRequest(
            key,
            compiled.judged_criteria,
            question=compiled.rubric.asked,
            response=response,
            reference=compiled.rubric.reference,
            guidance=self.guidance.get(key.file),
            recording=location(key.file, compiled.rubric.id) if key.file and key.node else None,
            context=context,
        )

    def schedule_items(self, items: Iterable[pytest.Item]) -> None:
        """Start every given item's judge calls now, so they overlap across items (answers of
        a target or a model are judged when they run); an xdist worker schedules only the
        items it is handed, as it learns of them (see ``xdist``)."""
        if self.runner is None or self.dry_run:
            return
        from .._grade.grader import context_of

        for item in items:
            if item.nodeid in self._scheduled:
                continue
            self._scheduled.add(item.nodeid)
            key = answer_key(item)
            if is_rubric_item(item) and item.compiled.judged:
                for index, answer in enumerate(item.source.written):
                    context = context_of(answer.trace, item.compiled.rubric)
                    self.runner.schedule(
                        self.request(key.of_sample(index), item.compiled, answer.text, context)
                    )

    def schedule(self, request: JudgeRequest) -> None:
        if self.runner is not None:
            self.runner.schedule(request)

    def result(self, request: JudgeRequest) -> Judged | None:
        """The judge's outcomes for ``request``, or None to leave its criteria SKIPPED (or, with
        a configured judge that cannot run, each SKIPPED or ERROR saying why)."""
        self.caches.warn_trouble()  # a live model's answer was just fetched through the cache
        if self.runner is not None:
            judged = self.runner.result(request)
            self.caches.warn_trouble()
            return judged
        if self.setup.require_judge or self.unavailable is not None:
            verdict = Verdict.ERROR if self.setup.require_judge else Verdict.SKIPPED
            return every(request, Outcome(verdict, 0.0, self.unavailable or REQUIRE_JUDGE_REASON))
        return None

    # --- usage ----------------------------------------------------------------------------------

    def judge_usage(self, results: Sequence[CaseResult]) -> JudgeUsage:
        """Each judge's calls, tokens and price, for the summary; with a budget, how many
        criteria of ``results`` it left ERROR once spent (a judge's call refused, or the
        model's that answers)."""
        from .._report.report import JudgeUsage

        cost = self.setup.cost
        judges = tuple((name, stats, self.prices.get(name)) for name, stats in self.usage.items())
        usage = JudgeUsage(judges, priced=cost.max_cost is not None or any(self.prices.values()))
        if cost.max_cost is None:  # no budget: no result to read (200,000 items)
            return usage
        spent = f"cost budget of ${cost.max_cost_shown} spent"  # the refused call's reason
        left = [c for r in results for s in r.sample_list for c in s.criteria if spent in c.reason]
        over = sum(c.verdict is Verdict.ERROR for c in left)
        return replace(usage, max_cost=cost.max_cost_shown, over_budget=over)

    def worker_usage(self) -> dict[str, Any]:
        """This worker's usage of each judge, for the controller (:meth:`add_usage`)."""
        return {
            name: {**_counts(stats), "elsewhere": dict(stats.elsewhere)}
            for name, stats in self.usage.items()
        }

    def add_usage(self, judges: dict[str, Any]) -> None:
        """Fold an xdist worker's judge usage into the controller's."""
        for name, counts in judges.items():
            if (stats := self.usage.get(name)) is not None:
                for field_name, value in _counts(stats).items():
                    setattr(stats, field_name, value + int(counts.get(field_name, 0)))
                for endpoint, n in counts.get("elsewhere", {}).items():
                    stats.elsewhere[endpoint] = stats.elsewhere.get(endpoint, 0) + int(n)

    def close(self) -> None:
        if self.runner is not None:
            self.runner.close()


def _check_batch(specs: Sequence[ModelSpec]) -> None:
    """``--rubric-judge-batch`` needs a provider with a batch API: a usage error otherwise."""
    from .._llm.batch import BATCH_PROVIDERS

    if not specs:
        raise pytest.UsageError(
            f"--rubric-judge-batch sends judge calls through the {' or '.join(BATCH_PROVIDERS)} "
            "batch API, not to the judge of pytest_rubric_make_judge: drop the flag, or judge "
            f"with --rubric-judge {' or '.join(f'{p}:MODEL' for p in BATCH_PROVIDERS)}"
        )
    for spec in specs:
        if spec.provider not in BATCH_PROVIDERS:
            raise pytest.UsageError(
                f"--rubric-judge-batch: judge {spec.name} has no batch API here (providers "
                f"with one: {', '.join(BATCH_PROVIDERS)}); drop the flag to judge live"
            )


def _counts(stats: CallStats) -> dict[str, int]:
    """A judge's counts (the whole numbers of its usage), as an xdist worker sends them."""
    return {f.name: getattr(stats, f.name) for f in fields(stats) if f.type == "int"}


def every(request: JudgeRequest, outcome: Outcome) -> Judged:
    """The same ``outcome`` for every criterion of ``request``."""
    from .._llm.base import Judged

    return Judged({c.id: outcome for c in request.criteria})
