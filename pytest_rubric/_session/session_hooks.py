"""The session's hooks, registered when its :class:`~.session.RubricSession` starts (see
``plugin``): at configure when the run asks for rubric work, else on first need."""

from __future__ import annotations

import sys
from collections.abc import Generator, Sequence

import pytest

from .._config.settings import Settings
from .._guards.outgoing import outgoing
from .._results import CaseResult
from . import xdist
from .session import RubricSession
from .started import SESSION_KEY

__all__ = ["add_rubric_dirs", "start"]


def start(config: pytest.Config) -> RubricSession:
    """Start the session's :class:`RubricSession` and register its hooks (once)."""
    state = config.stash.get(SESSION_KEY, None)
    if state is not None:
        return state
    state = RubricSession(config)
    state.inputs.global_responses()  # a broken --rubric-responses file stops the run here, clearly
    state.judging.start(_own_judge(config))
    config.stash[SESSION_KEY] = state
    config.pluginmanager.register(_SessionHooks(state), "rubric-session")
    if state.role.reports:  # an xdist worker leaves reporting to the controller
        reporting = _ReportHooks(state)
        config.pluginmanager.register(reporting, "rubric-report")
        # Started on first need, past configure: JUnit's writer is there to be checked now
        # (started at configure, it is not yet, and pytest_sessionstart checks it).
        reporting.set_junit_aside(config)
    xdist.register(config, state)
    return state


def _own_judge(config: pytest.Config) -> object | None:
    """What ``pytest_rubric_make_judge`` returns; a hook that raises (``SystemExit``
    included) is a usage error that names it, not a traceback or an exit."""
    from .._guards.calls import containing, described

    try:
        with containing():
            judge: object | None = config.hook.pytest_rubric_make_judge(config=config)
            return judge
    except Exception as exc:
        raise pytest.UsageError(f"pytest_rubric_make_judge raised {described(exc)}") from None


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
        self.state.check_dirs()

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
        if report.failed:
            from .junit import record_as_error, write_answers

            config = self.state.config
            if getattr(report, "rubric_error", False):
                record_as_error(config, report)
            if getattr(report, "rubric_item", False):
                write_answers(config, report, show_response=self.state.settings.show_response)
        return result

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.set_junit_aside(session.config)

    def set_junit_aside(self, config: pytest.Config) -> None:
        """A ``--junitxml`` path that cannot be written is known before a test runs."""
        from .junit import set_aside

        if (unwritten := set_aside(config)) is not None:
            self.state.unwritten.append(unwritten)

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
        if self.state.role.hands_out:
            # The workers collected: what the command line's subjects replaced is known now.
            for said in self.state.precedence_lines():
                terminalreporter.write_line(said)
        if self.state.recordings.line is not None:
            terminalreporter.write_line(outgoing(self.state.recordings.line))
        if self.state.summary_wanted(report) and terminalreporter.config.get_verbosity() >= -1:
            from .._render.summary import terminal_lines

            terminalreporter.section("rubric summary")
            for line in terminal_lines(report):
                terminalreporter.line(outgoing(line.text), **line.markup)
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


def _has_skipped(report: pytest.TestReport) -> bool:
    results: list[CaseResult] = getattr(report, "rubric_results", [])
    return any(result.skipped for result in results)
