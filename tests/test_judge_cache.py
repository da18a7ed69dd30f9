"""The judge cache: warm runs make no calls, anything that can change a verdict misses,
replay runs offline, errors are never stored."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_rubric.judge import prompts as _prompts
from tests.conftest import RUN_MODES
from tests.fake_llm import FakeLLM, score, status, text, verdict

Write = Callable[[str, str], Path]

RUBRIC = """
cases:
  - id: q1
    question: "What is the horizon of a 1-day VaR?"
    response: "{response}"
    criteria:
      - {{id: day, type: any_of, any_of: [day]}}
      - {{id: horizon, requirement: "{requirement}"}}
"""


def _rubric(write: Write, *, response: str = "One day.", requirement: str = "Says one day") -> None:
    write("c.rubric.yaml", RUBRIC.format(response=response, requirement=requirement))


def _run(
    pytester: pytest.Pytester, fake: FakeLLM | None, *extra: str, model: str = "m"
) -> pytest.RunResult:
    url = fake.openai_url if fake is not None else "http://127.0.0.1:9/v1"
    return pytester.runpytest(
        f"--rubric-judge=openai:{model}",
        f"--rubric-judge-url={url}",
        "--rubric-json",
        "out.json",
        *extra,
    )


def _results(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    return list(json.loads((pytester.path / "out.json").read_text())["results"])


@pytest.fixture
def setup(pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM) -> FakeLLM:
    pytester.makeini("[pytest]\nrubric_judge_backoff = 0.01\n")
    _rubric(write)
    fake_llm.respond_with(lambda request: verdict("MET", "it says one day"))
    return fake_llm


# In process; test_four_xdist_workers_share_one_cache makes the same checks with workers.
@pytest.mark.parametrize("mode", ["no-xdist", "xdist-n0"])
def test_a_warm_run_makes_no_calls_and_gives_the_same_results(
    pytester: pytest.Pytester, setup: FakeLLM, mode: str
) -> None:
    run_mode = RUN_MODES[mode]
    _run(pytester, setup, *run_mode).assert_outcomes(passed=1)
    cold = _results(pytester)
    assert len(setup.requests) == 1
    warm_run = _run(pytester, setup, *run_mode)
    warm_run.assert_outcomes(passed=1)
    assert len(setup.requests) == 1
    assert _results(pytester) == cold
    warm_run.stdout.fnmatch_lines(
        ["judge openai:m: 0 calls, 0 retries, 0 errors, *, cache 1 hits / 0 misses"]
    )


def test_a_warm_run_never_loads_the_http_client(pytester: pytest.Pytester, setup: FakeLLM) -> None:
    """httpx is imported on the first request: a fresh interpreter whose every reply comes
    from the cache never loads it (nor opens a connection)."""
    _run(pytester, setup).assert_outcomes(passed=1)
    pytester.makeconftest(
        "import sys\n"
        "def pytest_unconfigure(config):\n"
        "    (config.rootpath / 'httpx.txt').write_text(str('httpx' in sys.modules))\n"
    )
    url = setup.openai_url
    warm = pytester.runpytest_subprocess(
        "-p", "no:xdist", "--rubric-judge=openai:m", f"--rubric-judge-url={url}"
    )
    warm.assert_outcomes(passed=1)
    assert len(setup.requests) == 1
    assert (pytester.path / "httpx.txt").read_text() == "False"


@pytest.mark.parametrize("change", ["requirement", "response", "model", "grader", "template"])
def test_what_can_change_a_verdict_misses(
    pytester: pytest.Pytester,
    write: Write,
    setup: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    change: str,
) -> None:
    _run(pytester, setup).assert_outcomes(passed=1)
    extra: list[str] = []
    model = "m"
    if change == "requirement":
        _rubric(write, requirement="Says the horizon is one day")
    elif change == "response":
        _rubric(write, response="A single day.")
    elif change == "model":
        model = "other"
    elif change == "grader":
        extra = ["--rubric-grader=holistic"]
        setup.respond_with(lambda request: score(90))
    else:
        monkeypatch.setattr(_prompts, "TEMPLATE_VERSION", _prompts.TEMPLATE_VERSION + 1)
    _run(pytester, setup, *extra, model=model)
    assert len(setup.requests) == 2


def test_replay_serves_the_cache_with_the_server_gone_and_a_miss_is_an_error(
    pytester: pytest.Pytester,
    write: Write,
    setup: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    run_mode: list[str],
) -> None:
    # Recorded in process: test_four_xdist_workers_share_one_cache records with workers.
    _run(pytester, setup).assert_outcomes(passed=1)
    url = setup.openai_url
    setup.stop()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    # The same judge, as CI would name it; no server, no key.
    result = pytester.runpytest(
        "--rubric-judge=openai:m",
        f"--rubric-judge-url={url}",
        "--rubric-cache=replay",
        "--rubric-json",
        "out.json",
        *run_mode,
    )
    result.assert_outcomes(passed=1)
    assert _results(pytester)[0]["criteria"][1]["verdict"] == "MET"
    _rubric(write, requirement="Something never recorded")
    result = pytester.runpytest(
        "--rubric-judge=openai:m",
        f"--rubric-judge-url={url}",
        "--rubric-cache=replay",
        "--rubric-json",
        "out.json",
        *run_mode,
    )
    result.assert_outcomes(errors=1)
    reason = _results(pytester)[0]["criteria"][1]["reason"]
    assert (
        "--rubric-cache replay: no cached reply of judge openai:m for criterion 'horizon'" in reason
    )


def test_replay_needs_no_key_even_for_the_default_url(
    pytester: pytest.Pytester, write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    _rubric(write)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    result = pytester.runpytest("--rubric-judge=openai:gpt-4o-mini", "--rubric-cache=replay")
    result.assert_outcomes(errors=1)  # an empty cache: a miss, reported as ERROR, not a usage error


def test_errors_are_never_cached(pytester: pytest.Pytester, setup: FakeLLM) -> None:
    setup.respond_with(lambda request: status(503))
    _run(pytester, setup).assert_outcomes(errors=1)
    setup.respond_with(lambda request: verdict("MET"))
    before = len(setup.requests)
    _run(pytester, setup).assert_outcomes(passed=1)
    assert len(setup.requests) == before + 1


def test_refresh_calls_again_and_off_neither_reads_nor_writes(
    pytester: pytest.Pytester, setup: FakeLLM
) -> None:
    _run(pytester, setup, "--rubric-cache=off").assert_outcomes(passed=1)
    assert not (pytester.path / ".rubric_cache").exists()
    _run(pytester, setup).assert_outcomes(passed=1)
    _run(pytester, setup, "--rubric-cache=refresh").assert_outcomes(passed=1)
    _run(pytester, setup, "--rubric-cache=off").assert_outcomes(passed=1)
    assert len(setup.requests) == 4
    _run(pytester, setup).assert_outcomes(passed=1)
    assert len(setup.requests) == 4


def test_the_cache_holds_no_key(
    pytester: pytest.Pytester, setup: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-cache-7a1")
    _run(pytester, setup).assert_outcomes(passed=1)
    blob = b"".join(p.read_bytes() for p in (pytester.path / ".rubric_cache").iterdir())
    assert b"sk-canary-cache-7a1" not in blob
    assert b"it says one day" in blob  # the reply itself is there


def test_the_cache_keeps_the_tokens_each_reply_cost(
    pytester: pytest.Pytester, setup: FakeLLM
) -> None:
    import sqlite3

    _run(pytester, setup).assert_outcomes(passed=1)
    with sqlite3.connect(pytester.path / ".rubric_cache" / "judge.sqlite3") as db:
        rows = db.execute("SELECT tokens_in, tokens_out FROM replies").fetchall()
    assert rows == [(10, 5)]  # what the fake provider's usage reports for a verdict


def test_four_xdist_workers_share_one_cache(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM
) -> None:
    import sqlite3

    pytester.makeini("[pytest]\nrubric_judge_backoff = 0.01\n")
    cases = "\n".join(
        f"  - id: q{i}\n    response: 'answer {i}'\n    criteria:\n"
        f"      - {{id: x, type: any_of, any_of: [answer]}}\n"
        f"      - {{id: j, requirement: 'Requirement {i}'}}"
        for i in range(24)
    )
    write("many.rubric.yaml", "cases:\n" + cases + "\n")
    fake_llm.respond_with(lambda request: verdict("MET"))
    _run(pytester, fake_llm, "-n", "4").assert_outcomes(passed=24)
    assert len(fake_llm.requests) == 24
    cold = _results(pytester)
    with sqlite3.connect(pytester.path / ".rubric_cache" / "judge.sqlite3") as db:
        rows = db.execute("SELECT raw FROM replies").fetchall()
    assert len(rows) == 24 and all(json.loads(raw)["verdict"] == "MET" for (raw,) in rows)
    # A warm run with workers, as test_a_warm_run_makes_no_calls_and_gives_the_same_results
    # checks in process: no call, the same results, the hits counted on the controller.
    warm_run = _run(pytester, fake_llm, "-n", "4")
    warm_run.assert_outcomes(passed=24)
    assert len(fake_llm.requests) == 24
    assert _results(pytester) == cold
    warm_run.stdout.fnmatch_lines(
        ["judge openai:m: 0 calls, 0 retries, 0 errors, *, cache 24 hits / 0 misses"]
    )


def test_responses_collected_live_are_cached_and_replayed(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\nrubric_judge_backoff = 0.01\n")
    write(
        "m.rubric.yaml",
        """
        cases:
          - id: q1
            question: "What is 6 times 7?"
            criteria: [{id: value, type: number, value: 42}]
        """,
    )
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_url)
    fake_llm.respond_with(lambda request: text("It is 42."))
    for _ in range(2):  # live by default: the model under test is asked on every run
        result = pytester.runpytest("--rubric-model=openai:tiny")
        result.assert_outcomes(passed=1)
        result.stdout.no_fnmatch_line("*replayed from the cache*")
    assert len(fake_llm.requests) == 2
    for _ in range(2):  # asked for: recorded once, then replayed
        pytester.runpytest("--rubric-model=openai:tiny", "--rubric-response-cache=use")
    assert len(fake_llm.requests) == 3

    fake_llm.stop()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = pytester.runpytest("--rubric-model=openai:tiny", "--rubric-response-cache=replay")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*responses: 1 of 1 replayed from the cache; the application was not called for them*"]
    )
    result = pytester.runpytest("--rubric-model=openai:other", "--rubric-response-cache=replay")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*--rubric-response-cache replay: no recorded answer of model openai:other for case 'q1'*"]
    )
    # --rubric-cache is the judge's: replaying it never replays the application.
    result = pytester.runpytest("--rubric-model=openai:tiny", "--rubric-cache=replay")
    result.assert_outcomes(errors=1)  # called live, and the server is gone
