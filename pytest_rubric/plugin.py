"""The pytest plugin: hooks and fixtures only, each delegating to the module that owns the logic."""

from __future__ import annotations

import os
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._config.options import add_options
from ._config.settings import Settings

# Only light modules here (see ``_defaults``, ``_pytest.items``): the collector, the grader and the judge
# are imported when a rubric file, a judge or a fixture asks for them.
from ._defaults import SET_A_JUDGE, is_rubric_file
from ._guards.outgoing import outgoing
from ._pytest import xdist
from ._pytest.items import CURRENT_ITEM, RESULTS_KEY, is_rubric_item
from ._pytest.session import SESSION_KEY, RubricSession
from ._results import CaseResult

if TYPE_CHECKING:
    from ._grade.grader import Grader
    from ._llm.base import JudgeClient
    from ._pytest.assertion import RubricFixture
    from ._pytest.collect import RubricFile

PROPERTIES_KEY = pytest.StashKey[list[tuple[str, object]]]()
"""The JUnit properties this attempt of an item added (``rubric_score``, ...)."""

NO_JUDGE_SKIP = (
    f"needs an LLM judge: {SET_A_JUDGE} and the key in OPENAI_API_KEY or ANTHROPIC_API_KEY"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspec

    pluginmanager.add_hookspecs(hookspec)


def _own_judge(config: pytest.Config) -> object | None:
    """What ``pytest_rubric_make_judge`` returns; a hook that raises (``SystemExit``
    included) is a usage error that names it, not a traceback or an exit."""
    from ._guards.calls import containing, described

    try:
        with containing():
            judge: object | None = config.hook.pytest_rubric_make_judge(config=config)
            return judge
    except Exception as exc:
        raise pytest.UsageError(f"pytest_rubric_make_judge raised {described(exc)}") from None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "llm_judge: the test needs an LLM judge (rubric items with judge criteria)"
    )
    state = RubricSession(config)
    # Registered before pytest's own plugins register theirs (their configure hooks run after
    # this one), so run after them: both of pytest's collections at unconfigure, the hook's
    # and the cleanup's, then skip the frozen heap (see _pytest.heap).
    config.add_cleanup(state.thaw)
    state.inputs.global_responses()  # a broken --rubric-responses file stops the run here, clearly
    state.judging.start(_own_judge(config))
    config.stash[SESSION_KEY] = state
    config.pluginmanager.register(_SessionHooks(state), "rubric-session")
    if not hasattr(config, "workerinput"):  # an xdist worker leaves reporting to the controller
        config.pluginmanager.register(_ReportHooks(state), "rubric-report")
    xdist.register(config, state)
    _add_rubric_dirs(config, state.settings)


def _add_rubric_dirs(config: pytest.Config, settings: Settings) -> None:
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


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(SESSION_KEY, None)
    if state is not None:
        state.close()
    for name in ("rubric-session", "rubric-report"):
        hooks = config.pluginmanager.get_plugin(name)
        if hooks is not None:
            config.pluginmanager.unregister(hooks)
    xdist.unregister(config)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> RubricFile | None:
    state = parent.config.stash[SESSION_KEY]
    if is_rubric_file(file_path, state.settings.patterns):
        from ._pytest.collect import RubricFile

        return RubricFile.from_parent(parent, path=file_path, rubric_session=state)
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    token = CURRENT_ITEM.set(item)
    try:
        return (yield)
    finally:
        CURRENT_ITEM.reset(token)
        if is_rubric_item(item):
            item.release()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Results ride on the report; they turn into plain dicts only to travel (pytest-xdist).

    A rubric item that could not evaluate its answer fails in its call; the
    report is marked so that it counts as an error (see ``pytest_report_teststatus``).
    """
    report = yield
    if call.when == "setup":
        # A new attempt (pytest-rerunfailures): the properties an earlier one left go, so
        # JUnit carries the last attempt's alone.
        earlier = item.stash.get(PROPERTIES_KEY, [])
        if earlier:
            item.user_properties[:] = [p for p in item.user_properties if p not in earlier]
            del item.stash[PROPERTIES_KEY]
    if call.excinfo is not None and is_rubric_item(item):
        from ._errors import RubricEvaluationError

        if call.excinfo.errisinstance(RubricEvaluationError):
            report.rubric_error = True  # type: ignore[attr-defined]
    pending = item.stash.get(RESULTS_KEY, None)
    bounded = pending and any(r.result.skipped_bounds is not None for r in pending)
    if bounded and report.skipped and isinstance(report.longrepr, tuple):
        # Skipped for its bounds (see _grade.bounds): -rs shows the item's own file and line,
        # as for a skip mark, not the line inside the plugin that skipped it.
        path, line, _ = item.reportinfo()
        report.longrepr = (os.fspath(path), (line or 0) + 1, report.longrepr[2])
    pending = item.stash.get(RESULTS_KEY, None)
    if pending and (report.when != "setup" or not report.passed):
        from ._pytest.recording import junit_properties, settle  # imported by whoever recorded

        del item.stash[RESULTS_KEY]
        results = settle(pending, call.excinfo.value if call.excinfo is not None else None)
        if results:
            report.rubric_results = results  # type: ignore[attr-defined]
            if is_rubric_item(item):
                report.rubric_item = True  # type: ignore[attr-defined]
            # JUnit reads the properties off the teardown report, built from the item's.
            properties = [p for r in results for p in junit_properties(r)]
            item.user_properties += properties
            item.stash.setdefault(PROPERTIES_KEY, []).extend(properties)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable(
    config: pytest.Config, report: pytest.CollectReport | pytest.TestReport
) -> Generator[None, dict[str, Any] | None, dict[str, Any] | None]:
    data = yield
    if data is not None and data.get("rubric_results"):
        data["rubric_results"] = [r.to_dict() for r in data["rubric_results"]]
    return data


@pytest.hookimpl(wrapper=True)
def pytest_report_from_serializable(
    config: pytest.Config, data: dict[str, Any]
) -> Generator[None, object, object]:
    report = yield
    results = getattr(report, "rubric_results", None)
    if results:
        report.rubric_results = [CaseResult.from_dict(r) for r in results]  # type: ignore[attr-defined]
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A Python test marked ``llm_judge`` is skipped, with what to set, when there is no judge
    (an error with ``--rubric-require-judge`` when the configured judge has no key)."""
    if is_rubric_item(item) or item.get_closest_marker("llm_judge") is None:
        return
    state = item.config.stash[SESSION_KEY]
    judging = state.judging
    if judging.runner is not None:
        return
    if judging.unavailable is not None and state.settings.require_judge:
        pytest.fail(judging.unavailable, pytrace=False)
    pytest.skip(judging.unavailable or NO_JUDGE_SKIP)


@pytest.fixture
def rubric_judge(request: pytest.FixtureRequest) -> JudgeClient:
    """The session's configured judge: an object with ``async complete(system, user) -> str``.

    The test is skipped, saying what to set, when no judge is configured::

        async def check(rubric_judge):
            reply = await rubric_judge.complete("Answer with one word.", "Capital of France?")
    """
    judging = request.config.stash[SESSION_KEY].judging
    if judging.runner is None:
        pytest.skip(judging.unavailable or NO_JUDGE_SKIP)
    client: JudgeClient = judging.runner.client
    return client


@pytest.fixture
def rubric(request: pytest.FixtureRequest) -> RubricFixture:
    """``assert_rubric`` bound to this test: ``rubric(response, criteria, min_score=0.8)``.

    It grades with the session's grader and judge, fails the test as
    ``assert_rubric`` does, and its results join the session's summary and
    outputs under the test's node id::

        def test_answer(rubric):
            rubric(my_app("What is NPV?"), [{"id": "npv", "type": "any_of", "any_of": ["net present value"]}])
    """
    from ._pytest.assertion import RubricFixture

    return RubricFixture(request.node)


@pytest.fixture
def rubric_grader(request: pytest.FixtureRequest) -> Grader:
    """The session's configured :class:`~pytest_rubric.Grader`; its ``grade()`` judges the
    judged criteria with the session's judge when there is one (else they are SKIPPED).

    Use it to grade without asserting::

        def test_answer(rubric_grader):
            compiled = rubric_grader.compile(Rubric(criteria=[...]))
            result = rubric_grader.grade(my_app("What is NPV?"), compiled)
            assert result.score > 0.5
    """
    from ._pytest.assertion import grader_for

    return grader_for(request.node)


class _SessionHooks:
    """Session-wide hooks, registered per config so they reach its :class:`RubricSession`."""

    def __init__(self, state: RubricSession) -> None:
        self.state = state

    def pytest_report_header(self, config: pytest.Config) -> str | None:
        """One line that says where rubrics come from."""
        return self.state.header_line()

    @pytest.hookimpl(tryfirst=True)  # before xdist's controller declines to collect
    def pytest_collection(self, session: pytest.Session) -> None:
        """Warn of rubric dirs whose files match no pattern: in collection, where pytest
        records a warning at the location it names (the user's file, not the plugin)."""
        self.state.inputs.check_dirs()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.state.collected(session.items)

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        """A run that deselected items never prunes recordings."""
        self.state.recordings.deselected += len(items)

    def pytest_report_collectionfinish(self, config: pytest.Config) -> list[str]:
        """What the command line's subjects replaced (or could not: ``target_fixed``)."""
        return self.state.precedence_lines()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        """A broken rubric file is a collection error, but the rest of the session still runs:
        when every collection error is a rubric file's, the run goes on as with pytest's own
        ``--continue-on-collection-errors`` (a Python module that fails to import still stops
        it, as it would without the plugin). pytest's counters are never edited."""
        option = session.config.option
        before = getattr(option, "continue_on_collection_errors", False)
        errors = self.state.inputs.collection_errors
        if errors and session.testsfailed == errors:
            option.continue_on_collection_errors = True
        try:
            return (yield)
        finally:
            option.continue_on_collection_errors = before

    @pytest.hookimpl(tryfirst=True)  # before JUnit reads the report, or xdist sends it
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Results join the session's; an attempt that is run again (pytest-rerunfailures'
        outcome ``rerun``) counts nowhere, not even in JUnit's properties."""
        self.state.results.log_attempt(report)

    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        """An answer that could not be evaluated is an error, whatever its phase; a pass that
        left judged criteria SKIPPED says so in verbose output."""
        if report.failed and getattr(report, "rubric_error", False):
            return "error", "E", ("ERROR", {"red": True})
        if report.when == "call" and report.passed and _has_skipped(report):
            return "passed", ".", ("PASSED (judged criteria skipped)", {"green": True})
        return None


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
        if report.failed and getattr(report, "rubric_error", False):
            self.state.results.junit_error(report)
        if report.failed and getattr(report, "rubric_item", False):
            self.state.results.junit_answers(report)
        return result

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        report = self.state.session_report()
        failed_gates = len(report.gates.regressions)
        if failed_gates:
            # pytest's last line counts the reports under every key of ``stats``: "3 passed,
            # 1 rubric gate failed". Other plugins read those reports as reports (hypothesis
            # reads each one's ``__dict__``), so each failed gate is a report too.
            key = "rubric gate failed" if failed_gates == 1 else "rubric gates failed"
            terminalreporter.stats.setdefault(key, []).extend(
                _gate_report(reason) for reason in report.gates.regressions
            )
        if xdist.is_xdist_controller(self.state.config):
            # The workers collected: what the command line's subjects replaced is known now.
            for said in self.state.precedence_lines():
                terminalreporter.write_line(said)
        if self.state.recordings.line is not None:
            terminalreporter.write_line(outgoing(self.state.recordings.line))
        if self.state.summary_wanted(report) and terminalreporter.config.get_verbosity() >= -1:
            from ._render.summary import terminal_lines

            terminalreporter.section("rubric summary")
            for line in terminal_lines(report):
                terminalreporter.line(outgoing(line.text), **line.markup)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.state.finish(session)
        from ._render.summary import slow_failure_report

        slow = slow_failure_report(
            failed=session.testsfailed,
            tests=session.testscollected,
            tbstyle=session.config.option.tbstyle,
        )
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
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


def _has_skipped(report: pytest.TestReport) -> bool:
    results: list[CaseResult] = getattr(report, "rubric_results", [])
    return any(result.skipped for result in results)
