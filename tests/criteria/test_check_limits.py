"""Hostile answers and hostile user code against the deterministic checks.

Each test here failed before the fix it names: an answer saying ``1e309``
passed any ``number`` criterion, a backtracking ``engine: python`` pattern
or a callable or target that never returns hung the session.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rubric import Grader, Rubric
from pytest_rubric._guards.calls import CallRunner, CallTimeout, UserCodeError
from pytest_rubric._results import Verdict
from pytest_rubric.criteria import Json, Number
from pytest_rubric.criteria.check import Answer, CheckContext
from pytest_rubric.criteria.normalize import parse_numbers
from tests.conftest import HANG_GUARD, examples

pytestmark = pytest.mark.hostile

Write = Callable[[str, str], Path]

HUGE = "1" * 400
_REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar(
    "request"
)  # a 400-digit literal: a float reads it as inf


# --- non-finite numbers ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "I am not sure, maybe 1e309?",
        f"It is {HUGE}.",
        f"It is -{HUGE}.",
        "Somewhere between 1e999 and -1e999",
        "inf",
        "$1e400 million",
        "1.7e308 trillion",  # finite as written, infinite once scaled
    ],
)
def test_a_number_that_is_not_finite_is_never_within_tolerance(answer: str) -> None:
    criterion = Number(id="total", value=1157.63, abs_tol=0.01)
    assert criterion.compile(CheckContext())(Answer(answer), None).verdict is Verdict.UNMET
    relative = Number(id="total", value=1157.63, rel_tol=0.5)
    assert relative.compile(CheckContext())(Answer(answer), None).verdict is Verdict.UNMET


def test_an_infinite_answer_does_not_pass_a_required_number_end_to_end(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    write(
        "evals/total.rubric.yaml",
        f"""
        cases:
          - id: invoice_total
            responses:
              unsure: "I am not sure, maybe 1e309?"
              long: "The total is {HUGE}."
              right: "The total is $1,157.63."
            criteria:
              - {{id: total, type: number, value: 1157.63, abs_tol: 0.01, required: true}}
        """,
    )
    result = pytester.runpytest("--rubric-dir", "evals", "--rubric-json", "out.json")
    result.assert_outcomes(passed=1, failed=2)
    verdicts = {r["subject"]: (r["passed"], r["score"]) for r in rubric_json()["results"]}
    assert verdicts == {"unsure": (False, 0.0), "long": (False, 0.0), "right": (True, 1.0)}


# Literals a float cannot hold, mixed into ordinary text.
_NON_FINITE = st.sampled_from(
    ["1e309", "-1e309", "9" * 330, "1e99999", "1.5e308 trillion", "(1e400)", "inf", "nan"]
)
_WORDS = st.text(alphabet="abc $%,.-()e0123456789 ", max_size=30)


@settings(max_examples=examples(300), deadline=None)
@given(
    parts=st.lists(st.one_of(_NON_FINITE, _WORDS), max_size=6),
    value=st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300),
    tol=st.floats(min_value=0, max_value=1e6, allow_nan=False),
    relative=st.booleans(),
)
def test_met_always_means_a_finite_number_within_tolerance(
    parts: list[str], value: float, tol: float, relative: bool
) -> None:
    text = " ".join(parts)
    criterion = Number(id="n", value=value, **{"rel_tol" if relative else "abs_tol": tol})
    outcome = criterion.compile(CheckContext())(Answer(text), None)
    assert outcome.verdict in (Verdict.MET, Verdict.UNMET)
    if outcome.verdict is Verdict.MET:
        bound = tol * abs(value) if relative else tol
        assert any(
            math.isfinite(x) and abs(x - value) <= bound + 1e-9 * max(abs(x), abs(value), 1)
            for x in parse_numbers(text)
        ), (text, value, tol)


@pytest.mark.parametrize("answer", ["[" * 100_000, "```json\n" + "[" * 100_000 + "\n```"])
def test_a_json_answer_nested_too_deeply_does_not_parse(answer: str) -> None:
    outcome = Json(id="j").compile(CheckContext())(Answer(answer), None)
    assert outcome.verdict is Verdict.UNMET
    assert "nested too deeply" in outcome.reason


# --- engine: python regexes -----------------------------------------------------------------


@pytest.mark.timeout(HANG_GUARD)
def test_a_backtracking_pattern_cannot_hang_the_session(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    answer = "a" * 60 + "!"
    write(
        "evals/rx.rubric.yaml",
        f"""
        cases:
          - id: q1
            response: "{answer}"
            criteria:
              - {{id: some_a, type: any_of, any_of: ["a"]}}
              - {{id: nested, type: regex, engine: python, pattern: '(a+)+$'}}
              - {{id: alternation, type: regex, engine: python, pattern: '(a|aa)+$'}}
        """,
    )
    result = pytester.runpytest("--rubric-dir", "evals", "--rubric-json", "out.json")
    result.assert_outcomes(errors=1)
    (case,) = rubric_json()["results"]
    verdicts = {c["id"]: c["verdict"] for c in case["criteria"]}
    assert verdicts == {"some_a": "MET", "nested": "UNMET", "alternation": "ERROR"}
    result.stdout.fnmatch_lines(["*alternation*ERROR*engine: python gave up on*"])


# --- callables and targets that never return ------------------------------------------------


def test_a_call_runner_returns_raises_or_times_out_and_reuses_its_thread() -> None:
    async def double(x: int) -> int:
        return 2 * x

    runner = CallRunner()
    assert runner.call(lambda x: x + 1, 1, timeout=5) == 2
    assert runner.call(double, 4, timeout=5) == 8
    with pytest.raises(ZeroDivisionError):
        runner.call(lambda: 1 / 0, timeout=5)
    # A thread whose call returned in time runs the next call.
    threads = {runner.call(threading.get_ident, timeout=5) for _ in range(5)}
    assert len(threads) == 1 and threading.get_ident() not in threads
    # The caller's context variables read the same inside the call.
    token = _REQUEST.set("q1")
    try:
        assert runner.call(_REQUEST.get, timeout=5) == "q1"
    finally:
        _REQUEST.reset(token)
    with pytest.raises(CallTimeout, match=r"did not return within 0\.2 s"):
        runner.call(time.sleep, 30, timeout=0.2)
    # The overrunning call keeps its thread; the next call gets another.
    assert runner.call(threading.get_ident, timeout=5) not in threads


async def _loop_id() -> int:
    return id(asyncio.get_running_loop())


async def _awaits_long() -> None:
    await asyncio.sleep(30)


async def _blocks_its_loop() -> None:
    time.sleep(3)  # no await: nothing else runs on its loop meanwhile


def test_async_calls_share_a_loop_that_one_blocking_it_leaves_behind() -> None:
    """Every async call runs on one loop (an application's module-level client is bound to
    it); a call past its bound is cancelled and the loop kept, unless the call blocks it:
    the next call then gets a loop of its own, never waiting behind that one."""
    runner = CallRunner()
    first = runner.call(_loop_id, timeout=5)
    assert runner.call(_loop_id, timeout=5) == first
    with pytest.raises(CallTimeout):
        runner.call(_awaits_long, timeout=0.2)
    assert runner.call(_loop_id, timeout=5) == first  # cancelled: the loop answers
    with pytest.raises(CallTimeout):
        runner.call(_blocks_its_loop, timeout=0.2)
    assert runner.call(_loop_id, timeout=5) != first


async def _sleeps_without_awaiting(n: int) -> str:
    time.sleep(0.1)  # a sync client inside an async def: the loop is held meanwhile
    if n == 11:
        raise ValueError("the last one fails")
    return "done"


def _asked(runner: CallRunner, n: int) -> str:
    try:
        return str(runner.call(_sleeps_without_awaiting, n, timeout=1))
    except ValueError as exc:
        return str(exc)


def test_a_call_waiting_its_turn_on_the_loop_is_not_charged_for_the_wait() -> None:
    """Twelve calls that each hold the loop 0.1 s, asked at once with a bound of 1 s each:
    they run one after another (1.2 s in all); the time each waited for its turn is not
    counted against it, and what the last one raises comes back as it said it."""
    runner = CallRunner()
    with ThreadPoolExecutor(12) as pool:
        done = list(pool.map(lambda n: _asked(runner, n), range(12)))
    assert done == ["done"] * 11 + ["the last one fails"]


async def _awaits(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "late"


def _slow_then_async() -> Any:
    time.sleep(0.8)  # the call's own work before its coroutine: counted against it
    return _awaits(0.8)


def test_an_async_call_that_waited_for_nothing_has_its_bound_as_it_is() -> None:
    """1.6 s of its own work against a bound of 1 s: a timeout, whether the work is before
    its coroutine or inside it (nothing held the loop, so nothing is discounted)."""
    runner = CallRunner()
    with pytest.raises(CallTimeout):
        runner.call(_slow_then_async, timeout=1)


class _SlowToPrint(Exception):
    def __str__(self) -> str:
        time.sleep(30)
        return "never"


async def _raises_slow_to_print() -> None:
    raise _SlowToPrint


def test_what_an_async_call_raises_is_printed_within_its_bound() -> None:
    """An exception whose text takes longer than the call's bound: an error that says it
    could not be printed, within the bound, as for a sync call, never a timeout."""
    with pytest.raises(UserCodeError, match="unprintable _SlowToPrint"):
        CallRunner().call(_raises_slow_to_print, timeout=1)


async def _leaves_a_task_that_exits() -> str:
    async def later() -> None:
        await asyncio.sleep(0)
        raise SystemExit(3)

    asyncio.get_running_loop().create_task(later())
    return "answered"


def test_a_task_the_application_leaves_behind_cannot_stop_the_loop() -> None:
    """A background task raising SystemExit would end the loop's thread: the next call would
    wait out its bound for nothing. The loop goes on."""
    runner = CallRunner()
    assert runner.call(_leaves_a_task_that_exits, timeout=5) == "answered"
    for _ in range(3):
        assert runner.call(_loop_id, timeout=5) == runner.call(_loop_id, timeout=5)


SLOW = """
import asyncio
import time

def hangs(response, case):
    time.sleep(600)
    return True

async def hangs_async(response, case):
    await asyncio.sleep(600)
    return True

def quick(response, case):
    return True

def slow_target(case):
    time.sleep(600)
    return "never"

def target(case):
    return "an answer"
"""


@pytest.mark.timeout(HANG_GUARD)
def test_a_callable_that_never_returns_is_an_error_not_a_hang(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    write("slowchecks.py", SLOW)
    write(
        "evals/c.rubric.yaml",
        """
        cases:
          - id: q1
            response: "anything"
            criteria:
              - {id: fine, type: callable, function: "slowchecks:quick", timeout: 30}
              - {id: sync, type: callable, function: "slowchecks:hangs", timeout: 0.3}
          - id: q2
            response: "anything"
            criteria:
              - {id: fine, type: callable, function: "slowchecks:quick", timeout: 30}
              - {id: by_ini, type: callable, function: "slowchecks:hangs_async"}
          - id: q3
            response: "anything"
            timeout: 0.3  # the case's bound: its callables', as its target's
            criteria:
              - {id: fine, type: callable, function: "slowchecks:quick", timeout: 30}
              - {id: by_case, type: callable, function: "slowchecks:hangs"}
        """,
    )
    # The quick calls have their own bound: they need not beat 0.3 s on a loaded machine.
    pytester.makeini("[pytest]\nrubric_call_timeout = 0.3\n")
    pytester.syspathinsert()
    result = pytester.runpytest("--rubric-dir", "evals", "--rubric-json", "out.json")
    result.assert_outcomes(errors=3)
    criteria = {c["id"]: c for r in rubric_json()["results"] for c in r["criteria"]}
    assert criteria["sync"]["verdict"] == criteria["by_ini"]["verdict"] == "ERROR"
    assert criteria["sync"]["reason"].startswith("slowchecks:hangs did not return within 0.3 s")
    assert criteria["by_ini"]["reason"].startswith(
        "slowchecks:hangs_async did not return within 0.3 s"
    )
    assert criteria["fine"]["verdict"] == "MET"
    # Without the ini's bound, the case's holds its callable that never returns.
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest("--rubric-dir", "evals", "-k", "q3", "--rubric-json", "out.json")
    result.assert_outcomes(errors=1)
    (case,) = rubric_json()["results"]
    by_case = {c["id"]: c for c in case["criteria"]}["by_case"]
    assert by_case["reason"].startswith("slowchecks:hangs did not return within 0.3 s")


@pytest.mark.parametrize(
    ("returned", "verdict"), [("'y' * 5000", Verdict.ERROR), ("(True, 'y' * 5000)", Verdict.MET)]
)
def test_a_long_returned_text_is_cut_once_with_the_count_of_what_was_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, returned: str, verdict: Verdict
) -> None:
    module = f"longchecks_{verdict.value.lower()}"  # one module a case: imports are cached
    (tmp_path / f"{module}.py").write_text(f"def check(response, case):\n    return {returned}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    grader = Grader()
    rubric = Rubric(criteria=[{"id": "c", "type": "callable", "function": f"{module}:check"}])
    (criterion,) = grader.grade("an answer", grader.compile(rubric)).criteria
    assert criterion.verdict is verdict
    assert criterion.reason.count("more characters]") == 1 and "..." not in criterion.reason
    kept = criterion.reason.count("y")
    said = int(criterion.reason.rpartition("… [")[2].split(" ")[0].replace(",", ""))
    assert kept + said == 5000 and len(criterion.reason) <= 2_000 + 30


@pytest.mark.timeout(HANG_GUARD)
def test_a_target_that_never_returns_is_an_error_not_a_hang(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    write("app.py", SLOW)
    write(
        "evals/t.rubric.yaml",
        """
        cases:
          - id: slow
            target: "app:slow_target"
            timeout: 0.3
            criteria:
              - {id: says, type: any_of, any_of: ["answer"]}
          - id: fast
            target: "app:target"
            criteria:
              - {id: says, type: any_of, any_of: ["answer"]}
        """,
    )
    pytester.syspathinsert()
    result = pytester.runpytest("--rubric-dir", "evals", "--rubric-json", "out.json")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*target app:slow_target did not return within 0.3 s*"])
    statuses = {r["case"]: r["passed"] for r in rubric_json()["results"]}
    assert statuses == {"slow": False, "fast": True}
