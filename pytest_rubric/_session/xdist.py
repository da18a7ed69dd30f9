"""Everything the plugin does for pytest-xdist, on its public interfaces only.

:class:`Role` says which process this is; every xdist decision asks it, and nothing else
reads ``workerinput``. :func:`register` adds only the hooks the process needs, as pytest's
junitxml registers its writer only where ``config.workerinput`` is absent: a worker's
(:class:`WorkerHooks`) judge ahead what it will run and hand its usage over in
``workeroutput``; the controller's (:class:`ControllerHooks`) add it up when a worker goes down.

A worker can die in the middle of an item (``os._exit`` in a target, a signal, the
OOM killer) and send nothing of it. So the setup report of each rubric item a worker
runs carries the result the item has if that happens (``rubric_if_lost``: every
criterion ERROR), and xdist's ``pytest_handlecrashitem`` makes it the crashed item's
result: an ERROR in every output, never an item missing from them.

What a worker will run is known from public facts only: pytest's
``nextitem``, and xdist's documented guarantee that ``--dist loadfile`` and
``--dist loadscope`` hand every item of a file to one worker (a rubric
item's node id is ``file::case[subject]``, so both group by file). Under
``--dist load`` a worker is told of one item ahead; guessing beyond it
could judge an item another worker runs, and pay for it twice.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Protocol

import pytest


class SessionView(Protocol):
    """What these hooks need of ``_session.session.RubricSession``."""

    role: Role
    judging: Any
    results: Any

    def worker_stats(self) -> dict[str, Any]: ...
    def add_worker_stats(self, data: dict[str, Any]) -> None: ...
    def lost(self, nodeid: str) -> list[Any]: ...


STATS_KEY = "rubric_judge_stats"  # in workeroutput: one worker's judge usage
# In workerinput: the controller's --dist hands each worker whole files (a worker's own
# --dist is always "no").
WHOLE_FILES_KEY = "rubric_whole_files"


@dataclass(frozen=True, slots=True)
class Role:
    """This process's part in the run, read once from ``config.workerinput``, ``-n`` and
    ``--dist``."""

    worker_id: str | None = None  # gw0, gw1, ...: an xdist worker; None: not a worker
    workers: int = 1  # the processes that share the run's judge bound and --rubric-max-cost
    hands_out: bool = False  # an xdist controller: hands the items to workers, runs none
    whole_files: bool = False  # a worker handed whole files (--dist loadfile, loadscope)

    @classmethod
    def of(cls, config: pytest.Config) -> Role:
        if (workerinput := getattr(config, "workerinput", None)) is not None:
            return cls(
                worker_id=str(workerinput.get("workerid")),
                workers=max(1, int(workerinput.get("workercount") or 1)),
                whole_files=bool(workerinput.get(WHOLE_FILES_KEY)),
            )
        dist = getattr(config.option, "dist", "no")
        hands_out = bool(getattr(config.option, "numprocesses", None)) and dist != "no"
        # The controller's workers: xdist lists one execution spec each (-n N, "auto" resolved).
        workers = len(getattr(config.option, "tx", None) or ()) if hands_out else 1
        return cls(hands_out=hands_out, workers=max(1, workers))

    @property
    def reports(self) -> bool:
        """Warns for the run, schedules its items and reports: the controller, or a run
        without xdist (a worker's results and usage travel to the controller)."""
        return self.worker_id is None

    @property
    def first(self) -> bool:
        """Does what every worker would do alike once for the run (a warning on the
        responses they all read, grading the calibration): no worker, or gw0."""
        return self.worker_id in (None, "gw0")


def register(config: pytest.Config, state: SessionView) -> None:
    """Register the hooks this process needs; none when pytest-xdist is not installed."""
    if not state.role.reports:
        config.pluginmanager.register(WorkerHooks(state), "rubric-xdist-worker")
    elif config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(ControllerHooks(state), "rubric-xdist-controller")


class WorkerHooks:
    """An xdist worker's part: judge ahead what it will run, report its usage."""

    def __init__(self, state: SessionView) -> None:
        self.state = state
        self._by_file: dict[str, list[pytest.Item]] | None = None  # loadfile, loadscope
        self._files_started: set[str] = set()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        """Judge ahead the items this worker is known to run from ``item`` on, ``item`` first."""
        ahead = [item] if nextitem is None else [item, nextitem]
        if self._by_file is None:
            self._by_file = {}
            for one in item.session.items if self.state.role.whole_files else ():
                self._by_file.setdefault(_file_of(one), []).append(one)
        if self._by_file:
            for known in list(ahead):
                if (name := _file_of(known)) not in self._files_started:
                    self._files_started.add(name)
                    ahead += self._by_file.get(name, ())
        self.state.judging.schedule_items(ahead)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """A rubric item's setup report carries its result should this worker die running it."""
        report = yield
        if_lost = getattr(item, "if_lost", None) if call.when == "setup" and report.passed else None
        if if_lost is not None and (results := if_lost()):
            report.rubric_if_lost = results  # type: ignore[attr-defined]
        return report

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput = session.config.workeroutput  # type: ignore[attr-defined]  # xdist sets it
        workeroutput[STATS_KEY] = self.state.worker_stats()


def _file_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


class ControllerHooks:
    """The xdist controller's part: tell workers how items are handed out, add up their
    judge usage."""

    def __init__(self, state: SessionView) -> None:
        self.state = state

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        dist = getattr(node.config.option, "dist", "no")
        node.workerinput[WHOLE_FILES_KEY] = dist in {"loadfile", "loadscope"}

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, report: pytest.TestReport) -> None:
        """A worker died running ``report``'s item: its result is the ERROR its setup sent."""
        self.state.results.crashed(report, self.state.lost)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any) -> None:
        if stats := getattr(node, "workeroutput", {}).get(STATS_KEY):
            self.state.add_worker_stats(stats)
