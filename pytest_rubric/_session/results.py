"""The session's results: each item's last attempt, the baseline they are held against, and
what the terminal shows of them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .._defaults import is_rubric_file
from .._errors import RubricLoadError
from .._results import CaseResult
from .junit import JUNIT_PROPERTIES

if TYPE_CHECKING:
    from .._grade.grader import Grader


class Results:
    """Every result of the run, by node id, each item's from its last attempt."""

    def __init__(self, *, baseline: Path | None) -> None:
        # By node id, the results of the item's last attempt only: an item run again
        # (pytest-rerunfailures) counts once, as its last attempt went.
        self._by_node: dict[str, tuple[CaseResult, ...]] = {}
        self._rerun: set[str] = set()  # node ids whose attempt now is one that runs again
        # By node id, from an xdist worker's setup report: the item's result should the worker
        # die running it (see xdist), until the item's teardown
        self._if_lost: dict[str, list[CaseResult]] = {}
        self.rubric_items_ran = False
        self.assert_subjects: set[str] = set()  # the subjects assert_rubric graded (subject=)
        self.baseline: list[CaseResult] | None = None
        if baseline is not None:
            from .._errors import DocumentError
            from .._report.document import load_document

            try:
                self.baseline = load_document(baseline).results
            except DocumentError as exc:
                raise pytest.UsageError(f"--rubric-baseline: {exc}") from None

    @property
    def all(self) -> list[CaseResult]:
        return [result for results in self._by_node.values() for result in results]

    def log_attempt(self, report: pytest.TestReport) -> None:
        """Keep the results ``report`` carries, as its item's last attempt so far.

        Every attempt of an item starts with its setup: what an earlier one recorded no
        longer counts. pytest-rerunfailures reports an attempt it runs again with the
        outcome ``rerun``: its results are not kept, and its teardown report loses the
        JUnit properties, so JUnit carries the last attempt's alone.
        """
        nodeid = report.nodeid
        if report.when == "setup":
            self._by_node.pop(nodeid, None)
            self._rerun.discard(nodeid)
            if if_lost := getattr(report, "rubric_if_lost", None):
                self._if_lost[nodeid] = if_lost
        elif report.when == "teardown":
            self._if_lost.pop(nodeid, None)
        if str(report.outcome) == "rerun":  # not one of pytest's own outcomes
            self._rerun.add(nodeid)
        elif getattr(report, "rubric_crashed", False):
            # A last attempt that crashed its worker: its only report (pytest-rerunfailures
            # reports an attempt once it ends, so no setup report came before it).
            self._rerun.discard(nodeid)
        if nodeid in self._rerun:
            if report.when == "teardown":
                report.user_properties = [
                    p for p in report.user_properties if p[0] not in JUNIT_PROPERTIES
                ]
            return
        from_rubric_item = getattr(report, "rubric_item", False)
        for result in getattr(report, "rubric_results", ()):
            self._by_node[nodeid] = (*self._by_node.get(nodeid, ()), result)
            if from_rubric_item:
                self.rubric_items_ran = True
            elif result.ranked:
                self.assert_subjects.add(result.subject)

    def crashed(self, report: pytest.TestReport, lost: Callable[[str], list[CaseResult]]) -> None:
        """The xdist worker running ``report``'s item died: the report (xdist's, about to be
        logged) carries the ERROR result the item's setup sent, or else ``lost`` makes for
        its node id, and counts as an error."""
        if results := self._if_lost.pop(report.nodeid, None) or lost(report.nodeid):
            report.rubric_results = results  # type: ignore[attr-defined]
            report.rubric_item = True  # type: ignore[attr-defined]
            report.rubric_error = True  # type: ignore[attr-defined]
            report.rubric_crashed = True  # type: ignore[attr-defined]  # no teardown follows


CRASHED = (
    "the xdist worker running it crashed (its process ended: os._exit, a signal, out of "
    "memory), so its answer was never graded"
)


def lost_results(
    grader: Grader, patterns: tuple[str, ...], rootpath: Path, nodeid: str
) -> list[CaseResult]:
    """The ERROR result of the rubric item ``nodeid``, read from its file by the xdist
    controller, whose worker died before the item's setup report arrived (pytest-rerunfailures
    reports an attempt once it ends); none when ``nodeid`` names no rubric item."""
    from .._load.loader import load_suite
    from .._schema import own_mark

    path, _, name = nodeid.partition("::")
    if not (name.endswith("]") and is_rubric_file(rootpath / path, patterns)):
        return []
    try:
        loaded = load_suite(rootpath / path)
    except (RubricLoadError, OSError):
        return []
    for case in loaded.suite.cases:
        if name.startswith(f"{case.id}[") and (subject := name[len(case.id) + 1 : -1]):
            compiled = grader.compile(
                case,
                global_criteria=loaded.suite.global_criteria,
                min_score=own_mark(case, loaded.suite),
                style_field=loaded.suite.style_field,
            )
            suite = loaded.name
            return [
                grader.unavailable(compiled, CRASHED, nodeid=nodeid, suite=suite, subject=subject)
            ]
    return []
