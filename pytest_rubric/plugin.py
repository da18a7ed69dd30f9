"""The pytest plugin: hooks and fixtures only, each delegating to the module that owns the logic.

Every pytest run in an environment with the plugin imports this module, rubric or not, so it
imports only the option table and what tells a rubric file or item: the session (settings,
judge, grader, results, their hooks) starts at configure when the run asks for rubric work (a
``--rubric-*`` flag or ini key, ``RUBRIC_JUDGE``, ``rubric_dirs`` joining the run, a judge
hook, xdist), else on first need (a rubric file collected, a fixture, an ``llm_judge`` test,
``assert_rubric``); a run of unit tests alone never starts it.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._config.settings import add_options, configured, file_patterns
from ._defaults import PROVIDERS, SET_A_JUDGE, first_data_file, is_rubric_file
from ._session.items import (
    CURRENT_ITEM,
    RESULTS_KEY,
    RUNNING,
    forget_calls,
    is_rubric_item,
    settle,
)
from ._session.started import SESSION_KEY, session_of
from ._session.xdist import Role

if TYPE_CHECKING:
    from ._grade.grader import Grader
    from ._llm.base import JudgeClient
    from ._session.assertion import RubricFixture
    from ._session.collect import RubricFile
    from ._session.session import RubricSession
    from .judge.runner import JudgeRunner, Panel

_PROPERTIES: dict[pytest.Item, list[tuple[str, object]]] = {}
"""The JUnit properties (``rubric_score``, ...) of the running attempt of each item, until its
teardown report carries them: kept only while the item's protocol runs, not on the item
(``user_properties``) or in its stash, which would hold them for the rest of a long session
beside JUnit's own copy."""

NO_JUDGE_SKIP = f"needs an LLM judge: {SET_A_JUDGE} and the key in " + " or ".join(
    p.key_variable for p in PROVIDERS.values()
)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspec

    pluginmanager.add_hookspecs(hookspec)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "llm_judge: the test needs an LLM judge (rubric items with judge criteria)"
    )
    # The first cleanup registered is the last to run: after both of pytest's collections at
    # unconfigure (the hook's and the cleanup's), skip the frozen heap (see _session.heap).
    config.add_cleanup(partial(_thaw, config))
    if _rubric_work_asked(config):
        from ._session.session import add_rubric_dirs

        add_rubric_dirs(config, session_of(config).settings)


def _thaw(config: pytest.Config) -> None:
    if (state := config.stash.get(SESSION_KEY, None)) is not None:
        state.thaw()


def _rubric_work_asked(config: pytest.Config) -> bool:
    """Whether the session starts at configure: the run sets a rubric option (beyond where
    rubric files are and the heap's tricks), names a judge in ``RUBRIC_JUDGE``, has a judge
    hook, runs under xdist, or adds the ini's ``rubric_dirs`` to what it collects. Otherwise
    nothing the session would do at configure has an effect: it starts on first need."""
    named = config.args_source is pytest.Config.ArgsSource.ARGS
    role = Role.of(config)
    return bool(
        configured(config)
        or os.environ.get("RUBRIC_JUDGE")
        or config.hook.pytest_rubric_make_judge.get_hookimpls()
        or not role.reports  # an xdist worker
        or role.hands_out  # an xdist controller
        or (config.getini("rubric_dirs") and not named)
    )


@pytest.hookimpl(tryfirst=True)  # before xdist's controller declines to collect
def pytest_collection(session: pytest.Session) -> None:
    """Warn of rubric dirs whose files match no pattern (``RubricSession.check_dirs``): in
    collection, where pytest records a warning at the location it names (the user's file, not
    the plugin). A session not started yet starts to, when there is one."""
    config = session.config
    state = config.stash.get(SESSION_KEY, None)
    if state is None:
        patterns = file_patterns(config)
        if not any(first_data_file(Path(d), patterns) for d in config.getini("rubric_dirs")):
            return
        state = session_of(config)
    state.check_dirs()


def pytest_unconfigure(config: pytest.Config) -> None:
    if (state := config.stash.get(SESSION_KEY, None)) is not None:
        state.close()
    for name in _HOOKS:
        config.pluginmanager.unregister(name=name)


# What a session registers (the xdist hooks only where the process needs them).
_HOOKS = ("rubric-session", "rubric-report", "rubric-xdist-worker", "rubric-xdist-controller")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> RubricFile | None:
    if is_rubric_file(file_path, file_patterns(parent.config)):
        from ._session.collect import RubricFile

        state = session_of(parent.config)
        return RubricFile.from_parent(parent, path=file_path, rubric_session=state)
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    token = CURRENT_ITEM.set(item)
    RUNNING.append(item)
    try:
        return (yield)
    finally:
        RUNNING.remove(item)
        CURRENT_ITEM.reset(token)
        _PROPERTIES.pop(item, None)
        if is_rubric_item(item):
            item.release()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Results ride on the report; they turn into plain dicts only to travel (pytest-xdist).

    A rubric item that could not evaluate its answer fails in its call, as does one anything
    but a graded failure stopped (pytest-timeout's failure, say); the report is marked so
    that it counts as an error (see ``pytest_report_teststatus``).
    """
    report = yield
    if report.when == "call":
        forget_calls(item)
    if report.sections and is_rubric_item(item):
        # What the application printed and logged while it was asked (its own key, an
        # escape sequence, a URL with a query) leaves the process as every other text does.
        from ._guards.outgoing import outgoing

        report.sections = [(title, outgoing(text)) for title, text in report.sections]
    if call.excinfo is not None and is_rubric_item(item):
        from ._errors import RubricAssertionError

        if not call.excinfo.errisinstance(RubricAssertionError):  # graded and failed: FAILED
            report.rubric_error = True  # type: ignore[attr-defined]
    pending = item.stash.get(RESULTS_KEY, None)
    skip = report.longrepr if report.skipped else None
    if isinstance(skip, tuple) and skip[0].startswith(_PLUGIN):
        # Skipped by the plugin (its bounds, nothing graded, no judge for rubric_judge): -rs
        # shows the item's own file and line, as for a skip mark, not the plugin's.
        path, line, _ = item.reportinfo()
        report.longrepr = (os.fspath(path), (line or 0) + 1, skip[2])
    if pending and (report.when != "setup" or not report.passed):
        from ._session.junit import junit_properties

        del item.stash[RESULTS_KEY]
        results = settle(pending, call.excinfo.value if call.excinfo is not None else None)
        if results:
            report.rubric_results = results  # type: ignore[attr-defined]
            if is_rubric_item(item):
                report.rubric_item = True  # type: ignore[attr-defined]
            _PROPERTIES.setdefault(item, []).extend(p for r in results for p in junit_properties(r))
    # JUnit reads the properties off the teardown report: each attempt's carries its own
    # (pytest-rerunfailures runs an item again), those of a result its teardown recorded too.
    if report.when == "teardown" and (carried := _PROPERTIES.pop(item, None)):
        report.user_properties += carried
    return report


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable() -> Generator[
    None, dict[str, Any] | None, dict[str, Any] | None
]:
    data = yield
    for name in _CARRIED:
        if data is not None and data.get(name):
            from ._report.document import result_data

            data[name] = [result_data(r) for r in data[name]]
    return data


@pytest.hookimpl(wrapper=True)
def pytest_report_from_serializable() -> Generator[None, object, object]:
    report = yield
    for name in _CARRIED:
        if results := getattr(report, name, None):
            from ._report.document import result_of

            setattr(report, name, [result_of(r) for r in results])
    return report


# The report attributes that carry results: a phase's own, and a setup's for a lost worker.
_CARRIED = ("rubric_results", "rubric_if_lost")
_PLUGIN = os.path.dirname(os.path.abspath(__file__)) + os.sep  # where a skip of ours is raised


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A Python test marked ``llm_judge`` is skipped, with what to set, when there is no judge
    (an error with ``--rubric-require-judge`` when the configured judge has no key)."""
    if is_rubric_item(item) or item.get_closest_marker("llm_judge") is None:
        return
    _judge_or_skip(session_of(item.config))


def _judge_or_skip(state: RubricSession) -> JudgeRunner | Panel:
    """The session's judge; without one the test is skipped, saying what to set (it fails
    when ``--rubric-require-judge`` is set: no judge, or one without its key)."""
    judging = state.judging
    if judging.runner is None:
        if state.settings.require_judge:
            pytest.fail(f"--rubric-require-judge: {judging.unavailable or NO_JUDGE_SKIP}", False)
        pytest.skip(judging.unavailable or NO_JUDGE_SKIP)
    return judging.runner


@pytest.fixture
def rubric_judge(request: pytest.FixtureRequest) -> JudgeClient:
    """The session's configured judge: an object with ``async complete(system, user) -> str``.

    The test is skipped, saying what to set, when no judge is configured::

        async def check(rubric_judge):
            reply = await rubric_judge.complete("Answer with one word.", "Capital of France?")
    """
    runner = _judge_or_skip(session_of(request.config))  # as for a test marked llm_judge
    from .judge.transport import OnJudgeLoop

    return OnJudgeLoop(runner.transport)


@pytest.fixture
def rubric(request: pytest.FixtureRequest) -> RubricFixture:
    """``assert_rubric`` bound to this test: ``rubric(response, criteria, min_score=0.8)``.

    It grades with the session's grader and judge, fails the test as
    ``assert_rubric`` does, and its results join the session's summary and
    outputs under the test's node id::

        def test_answer(rubric):
            rubric(my_app("What is NPV?"), [{"id": "npv", "type": "any_of", "any_of": ["net present value"]}])
    """
    from ._session.assertion import RubricFixture

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
    from ._session.assertion import grader_for

    return grader_for(request.node)
