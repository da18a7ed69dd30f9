"""The pytest plugin: hooks and fixtures only, each delegating to the module that owns the logic."""

from __future__ import annotations

import argparse
import math
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# Only light modules here (see ``_base``): the collector, the grader and the judge
# are imported when a rubric file, a judge or a fixture asks for them.
from ._base import CACHE_MODES, CURRENT_ITEM, GRADERS, RESULTS_KEY, is_rubric_file, is_rubric_item
from ._gates import fraction
from ._result import CaseResult
from ._session import SESSION_KEY, RubricSession

if TYPE_CHECKING:
    from ._collect import RubricFile
    from ._grader import Grader

NO_JUDGE_SKIP = (
    "needs an LLM judge: set --rubric-judge PROVIDER:MODEL (or ini rubric_judge, or the "
    "RUBRIC_JUDGE variable) and the key in OPENAI_API_KEY or ANTHROPIC_API_KEY"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rubric", "rubric-based assertions on LLM output (pytest-rubric)")
    group.addoption(
        "--rubric-dir",
        action="append",
        dest="rubric_dirs",
        metavar="DIR",
        default=None,
        help="collect rubric files under DIR (repeatable); without test paths, only these run.",
    )
    group.addoption(
        "--rubric-responses",
        dest="rubric_responses",
        metavar="DIR",
        default=None,
        help='grade the responses in DIR/<subject>.jsonl, one {"id", "response"} per line.',
    )
    group.addoption(
        "--rubric-target",
        dest="rubric_target",
        metavar="MODULE:FUNCTION",
        default=None,
        help="call this function with each case to get the response (the application under test).",
    )
    group.addoption(
        "--rubric-judge",
        dest="rubric_judge",
        metavar="PROVIDER:MODEL",
        default=None,
        help="grade judge criteria with this LLM: openai:MODEL (any OpenAI-compatible server) or "
        "anthropic:MODEL; also ini rubric_judge and env RUBRIC_JUDGE. Keys come from "
        "OPENAI_API_KEY / ANTHROPIC_API_KEY only.",
    )
    group.addoption(
        "--rubric-judge-url",
        dest="rubric_judge_url",
        metavar="URL",
        default=None,
        help="the judge's base URL (default: OPENAI_BASE_URL / ANTHROPIC_BASE_URL, else the "
        "provider's), e.g. http://127.0.0.1:8080/v1 for a local server.",
    )
    group.addoption(
        "--rubric-grader",
        dest="rubric_grader",
        choices=GRADERS,
        default="per-criterion",
        help="one judge call per criterion (default), one call for all, or one 0-100 score.",
    )
    group.addoption(
        "--rubric-concurrency",
        dest="rubric_concurrency",
        metavar="N",
        type=_positive_int,
        default=8,
        help="judge calls in flight at most, across the session (default 8); xdist workers "
        "share it, N // workers each.",
    )
    group.addoption(
        "--rubric-judge-samples",
        dest="rubric_judge_samples",
        metavar="K",
        type=_positive_int,
        default=None,
        help="judge every criterion K times (default 1): majority verdict, mean score; "
        "criteria whose samples disagree are flagged unstable.",
    )
    group.addoption(
        "--rubric-judge-timeout",
        dest="rubric_judge_timeout",
        metavar="SECONDS",
        type=_positive_seconds,
        default=60.0,
        help="give up on one judge call after SECONDS (default 60), however slowly the "
        "server sends its reply; it is retried.",
    )
    group.addoption(
        "--rubric-cache",
        dest="rubric_cache",
        choices=CACHE_MODES,
        default="use",
        help="judge cache: use (default), refresh (call and overwrite), off, or replay "
        "(no network call; a miss is an ERROR).",
    )
    group.addoption(
        "--rubric-require-judge",
        dest="rubric_require_judge",
        action="store_true",
        help="make judged criteria ERROR instead of SKIPPED when no judge is configured.",
    )
    group.addoption(
        "--rubric-model",
        dest="rubric_model",
        metavar="PROVIDER:MODEL",
        default=None,
        help="collect responses live from this model (subject = the model).",
    )
    group.addoption(
        "--rubric-json",
        dest="rubric_json",
        metavar="PATH",
        default=None,
        help="write every result and the leaderboard to PATH as JSON.",
    )
    group.addoption(
        "--rubric-html",
        dest="rubric_html",
        metavar="PATH",
        default=None,
        help="write a self-contained HTML report (scatter plot, leaderboard, every answer).",
    )
    group.addoption(
        "--rubric-markdown",
        dest="rubric_markdown",
        metavar="PATH",
        default=None,
        help="write the leaderboard and failing cases as Markdown (also appended to "
        "$GITHUB_STEP_SUMMARY when set).",
    )
    group.addoption(
        "--rubric-baseline",
        dest="rubric_baseline",
        metavar="PATH",
        default=None,
        help="an earlier --rubric-json: fail when a case that passed there fails now, or a "
        "subject's correctness drops by more than --rubric-max-drop.",
    )
    group.addoption(
        "--rubric-max-drop",
        dest="rubric_max_drop",
        metavar="X",
        type=fraction,
        default=0.0,
        help="the correctness drop per subject that --rubric-baseline tolerates (default 0).",
    )
    group.addoption(
        "--rubric-fail-under",
        dest="rubric_fail_under",
        metavar="X",
        type=fraction,
        default=None,
        help="fail the session when a subject's mean correctness is below X (0 to 1).",
    )
    parser.addini(
        "rubric_dirs", "directories to collect rubric files from", type="paths", default=[]
    )
    parser.addini(
        "rubric_file_patterns",
        "glob patterns of rubric file names",
        type="linelist",
        default=["*.rubric.yaml", "*.rubric.yml", "*.rubric.json"],
    )
    parser.addini("rubric_judge", "the LLM judge, PROVIDER:MODEL (overridden by --rubric-judge)")
    parser.addini("rubric_judge_attempts", "attempts per judge call, the first included (4)")
    parser.addini("rubric_judge_samples", "judge samples per criterion (1)", default="")
    parser.addini("rubric_judge_backoff", "first retry delay in seconds, doubled each time (0.5)")
    parser.addini(
        "rubric_judge_retry_budget",
        "retries per session (per xdist worker) across all judge calls (200)",
    )
    parser.addini(
        "rubric_fast_exit",
        "after a session with rubric items, skip the interpreter's repeated shutdown "
        "collections of its large heap (default true)",
        type="bool",
        default=True,
    )
    parser.addini(
        "rubric_cache_dir",
        "where the judge cache lives (default .rubric_cache under the rootdir)",
        default="",
    )
    parser.addini("rubric_min_score", "pass mark of cases that set none (default 0.8)", default="")
    parser.addini(
        "rubric_call_timeout",
        "seconds a `callable` criterion or a `target` may run before it is ERROR, unless it "
        "sets `timeout:` (default 60)",
        default="",
    )
    for name, what in (
        (
            "rubric_confident_threshold",
            "confidence at or above which an answer counts as confident (0.7)",
        ),
        (
            "rubric_hedged_threshold",
            "confidence at or below which an answer counts as hedged (0.35)",
        ),
        (
            "rubric_low_score",
            "score below which a confident answer is flagged confidently_wrong (0.5)",
        ),
        (
            "rubric_high_score",
            "score at or above which a hedged answer is flagged hedged_but_right (0.8)",
        ),
    ):
        parser.addini(name, what, default="")


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspec

    pluginmanager.add_hookspecs(hookspec)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "llm_judge: the test needs an LLM judge (rubric items with judge criteria)"
    )
    state = RubricSession(config)
    state.global_responses()  # a broken --rubric-responses file stops the run here, clearly
    state.start_judge(config.hook.pytest_rubric_make_judge(config=config))
    config.stash[SESSION_KEY] = state
    config.stash[_HOOKS_KEY] = hooks = _SessionHooks(state)
    config.pluginmanager.register(hooks, "rubric-session")
    if state.settings.dirs and config.args_source is not pytest.Config.ArgsSource.ARGS:
        config.args[:] = [str(d) for d in state.settings.dirs]
    elif state.settings.dirs:
        config.args.extend(str(d) for d in state.settings.dirs)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(SESSION_KEY, None)
    if state is not None:
        state.stop_judge()
    hooks = config.stash.get(_HOOKS_KEY, None)
    if hooks is not None:
        config.pluginmanager.unregister(hooks)
        del config.stash[_HOOKS_KEY]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> RubricFile | None:
    state = parent.config.stash[SESSION_KEY]
    if is_rubric_file(file_path, state.settings.patterns):
        from ._collect import RubricFile

        return RubricFile.from_parent(parent, path=file_path, rubric_session=state)
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    item.config.stash[SESSION_KEY].schedule_handed(item, nextitem)
    token = CURRENT_ITEM.set(item)
    try:
        return (yield)
    finally:
        CURRENT_ITEM.reset(token)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Results ride on the report; they turn into plain dicts only to travel (pytest-xdist).

    A rubric item that could not evaluate its answer fails in its call; the
    report is marked so that it counts as an error (see ``pytest_report_teststatus``).
    """
    report = yield
    if call.excinfo is not None and is_rubric_item(item):
        from ._errors import RubricEvaluationError

        if call.excinfo.errisinstance(RubricEvaluationError):
            report.rubric_error = True  # type: ignore[attr-defined]
    pending = item.stash.get(RESULTS_KEY, None)
    if pending and (report.when != "setup" or not report.passed):
        from ._collect import junit_properties, settle  # imported by whoever recorded

        del item.stash[RESULTS_KEY]
        results = settle(pending, call.excinfo.value if call.excinfo is not None else None)
        if results:
            report.rubric_results = results  # type: ignore[attr-defined]
            # JUnit reads the properties off the teardown report, built from the item's.
            item.user_properties += [p for r in results for p in junit_properties(r)]
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
    """A Python test marked ``llm_judge`` is skipped, with what to set, when there is no judge."""
    if is_rubric_item(item) or item.get_closest_marker("llm_judge") is None:
        return
    if item.config.stash[SESSION_KEY].judging is None:
        pytest.skip(NO_JUDGE_SKIP)


@pytest.fixture
def rubric_judge(request: pytest.FixtureRequest) -> Any:
    """The session's configured judge: an object with ``async complete(system, user) -> str``.

    The test is skipped, saying what to set, when no judge is configured::

        async def check(rubric_judge):
            reply = await rubric_judge.complete("Answer with one word.", "Capital of France?")
    """
    judging = request.config.stash[SESSION_KEY].judging
    if judging is None:
        pytest.skip(NO_JUDGE_SKIP)
    return judging.client


@pytest.fixture
def rubric_grader(request: pytest.FixtureRequest) -> Grader:
    """The session's configured :class:`~pytest_rubric.Grader`.

    Use it to grade without asserting::

        def test_answer(rubric_grader):
            compiled = rubric_grader.compile(Rubric(criteria=[...]))
            result = rubric_grader.grade(my_app("What is NPV?"), compiled)
            assert result.score > 0.5
    """
    return request.config.stash[SESSION_KEY].grader


class _SessionHooks:
    """Session-wide hooks, registered per config so they reach its :class:`RubricSession`."""

    def __init__(self, state: RubricSession) -> None:
        self.state = state

    def pytest_report_header(self, config: pytest.Config) -> str | None:
        """One line that says where rubrics come from."""
        return self.state.header_line()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.state.collected(session.items)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        """A broken rubric file is a collection error, but the rest of the session still runs."""
        hidden = self.state.collection_errors
        session.testsfailed -= hidden
        try:
            return (yield)
        finally:
            session.testsfailed += hidden

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for result in getattr(report, "rubric_results", ()):
            self.state.add(result)

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

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        report = self.state.session_report()
        if report.shown and terminalreporter.config.get_verbosity() >= -1:
            from ._summary import terminal_lines

            terminalreporter.section("rubric summary")
            for line in terminal_lines(report):
                terminalreporter.line(line.text, **line.markup)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:  # an xdist worker: the controller reports
            stats = self.state.worker_stats()
            if stats is not None:
                workeroutput["rubric_judge_stats"] = stats
            return
        self.state.finish(session)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """pytest-xdist: a worker finished; add its judge usage to the session's."""
        stats = getattr(node, "workeroutput", {}).get("rubric_judge_stats")
        if stats:
            self.state.add_worker_stats(stats)


def _has_skipped(report: pytest.TestReport) -> bool:
    results: list[CaseResult] = getattr(report, "rubric_results", [])
    return any(result.skipped for result in results)


_HOOKS_KEY = pytest.StashKey[_SessionHooks]()
