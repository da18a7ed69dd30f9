"""The judge cache: warm runs make no calls, anything that can change a verdict misses,
replay runs offline, errors are never stored."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_rubric.judge import prompts as _prompts
from tests.conftest import RUN_MODES
from tests.fake_llm import Action, FakeLLM, Recorded, score, status, text, verdict

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


def _run_of(pytester: pytest.Pytester) -> dict[str, Any]:
    run: dict[str, Any] = json.loads((pytester.path / "out.json").read_text())["run"]
    return run


@pytest.fixture
def setup(pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM) -> FakeLLM:
    pytester.makeini("[pytest]\nrubric_judge_backoff = 0.01\n")
    _rubric(write)
    fake_llm.respond_with(lambda request: verdict("MET", "it says one day"))
    return fake_llm


# In process; test_xdist_workers_share_one_cache makes the same checks with workers.
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
    warm = pytester.runpytest_subprocess("--rubric-judge=openai:m", f"--rubric-judge-url={url}")
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


# In process: workers read the cache as test_xdist_workers_share_one_cache's warm run
# does; what a replay adds (no server, no key, a miss an ERROR) is each item's own, and its
# result reaches the controller as every result does (report/test_document_roundtrip).
@pytest.mark.parametrize("mode", ["no-xdist", "xdist-n0"])
def test_replay_serves_the_cache_with_the_server_gone_and_a_miss_is_an_error(
    pytester: pytest.Pytester,
    write: Write,
    setup: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    # Recorded in process: test_xdist_workers_share_one_cache records with workers.
    _run(pytester, setup).assert_outcomes(passed=1)
    url = setup.openai_url
    setup.stop()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    # A case recorded and one never recorded, replayed in one session: a hit and a miss.
    write(
        "never.rubric.yaml",
        RUBRIC.format(response="One day.", requirement="Something never recorded").replace(
            "id: q1", "id: q2"
        ),
    )
    # The same judge, as CI would name it; no server, no key.
    result = pytester.runpytest(
        "--rubric-judge=openai:m",
        f"--rubric-judge-url={url}",
        "--rubric-cache=replay",
        "--rubric-json",
        "out.json",
        *RUN_MODES[mode],
    )
    result.assert_outcomes(passed=1, errors=1)
    horizon = {r["case"]: r["criteria"][1] for r in _results(pytester)}
    assert horizon["q1"]["verdict"] == "MET"
    assert (
        "--rubric-cache replay: no cached reply of judge openai:m for criterion 'horizon'"
        in horizon["q2"]["reason"]
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


def test_xdist_workers_share_one_cache(
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
    # Two workers write at once: the same locking as any number of writers meets.
    _run(pytester, fake_llm, "-n", "2").assert_outcomes(passed=24)
    assert len(fake_llm.requests) == 24
    cold = _results(pytester)
    assert _run_of(pytester)["cache"] == {"mode": "use", "hits": 0, "misses": 24}
    with sqlite3.connect(pytester.path / ".rubric_cache" / "judge.sqlite3") as db:
        rows = db.execute("SELECT raw FROM replies").fetchall()
    assert len(rows) == 24 and all(json.loads(raw)["verdict"] == "MET" for (raw,) in rows)
    # A warm run with workers, as test_a_warm_run_makes_no_calls_and_gives_the_same_results
    # checks in process: no call, the same results, the hits counted on the controller; and
    # through another gateway, as test_a_cache_recorded_through_one_gateway_replays_through_
    # another checks in process, with the hits recorded elsewhere counted there too.
    warm_run = pytester.runpytest(
        "--rubric-judge=openai:m",
        f"--rubric-judge-url={fake_llm.url}/gateway/v1",
        "--rubric-json=out.json",
        "-n",
        "2",
    )
    warm_run.assert_outcomes(passed=24)
    assert len(fake_llm.requests) == 24
    assert _results(pytester) == cold
    warm_run.stdout.fnmatch_lines(
        [
            "judge openai:m: 0 calls, 0 retries, 0 errors, *, cache 24 hits / 0 misses",
            f"judge cache: 24 of 24 hits were recorded against another endpoint ({fake_llm.url}/v1)",
        ]
    )
    # The JSON's run, written by the controller: the workers' hits summed.
    run = _run_of(pytester)
    assert run["cache"] == {"mode": "use", "hits": 24, "misses": 0}
    assert run["judges"][0]["url"] == f"{fake_llm.url}/gateway/v1"


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


@pytest.mark.parametrize(
    ("bot", "target"),
    [
        # A tracing decorator (functools.wraps), defined in a module of its own.
        (
            "from deco import traced\n\n\n@traced\ndef answer(question):\n    return {!r}\n",
            "bot:answer",
        ),
        # A callable object.
        (
            "class Bot:\n    def __call__(self, question):\n        return {!r}\n\n\nanswer = Bot()\n",
            "bot:answer",
        ),
        # A callable object and a partial configured where the import path names them, their
        # code in another module (deco's traced, standing for any function).
        ("from deco import Reply\n\nanswer = Reply({!r})\n", "bot:answer"),
        (
            "import functools\nfrom deco import reply\n\nanswer = functools.partial(reply, {!r})\n",
            "bot:answer",
        ),
    ],
    ids=["decorated", "callable-object", "configured-object", "configured-partial"],
)
def test_the_response_cache_misses_once_the_target_is_edited(
    pytester: pytest.Pytester, write: Write, bot: str, target: str
) -> None:
    """The key holds a hash of the target's source file: the file that defines the function a
    decorator wraps, or the class of a callable object, not the decorator's or nothing."""
    write(
        "deco.py",
        "import functools\n\n\ndef traced(function):\n    @functools.wraps(function)\n"
        "    def wrapper(*args, **kwargs):\n        return function(*args, **kwargs)\n\n"
        "    return wrapper\n\n\nclass Reply:\n    def __init__(self, text):\n        self.text = text\n\n"
        "    def __call__(self, question):\n        return self.text\n\n\n"
        "def reply(text, question):\n    return text\n",
    )
    write(
        "m.rubric.yaml",
        f"""
        target: {target}
        cases:
          - id: q1
            question: "Which version?"
            criteria: [{{id: new, type: any_of, any_of: ["v2"]}}]
        """,
    )
    write("bot.py", bot.format("v1"))
    pytester.runpytest("--rubric-response-cache=use").assert_outcomes(failed=1)
    write("bot.py", bot.format("v2, edited"))  # another size: no stale bytecode
    result = pytester.runpytest("--rubric-response-cache=use")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*replayed from the cache*")


def test_a_replayed_trace_edited_into_no_targets_is_an_error_never_a_verdict(
    pytester: pytest.Pytester, write: Write
) -> None:
    """The response cache is data from elsewhere: its trace is read as carefully as one a
    target returns (a cost of NaN, a negative latency, a tool named 5 are refused), so the
    item is an ERROR saying so, and the JSON stays JSON."""
    write(
        "bot.py",
        "def answer(question):\n    return {'answer': 'Done.', 'usage': {'cost_usd': 0.01}}\n",
    )
    write(
        "m.rubric.yaml",
        """
        target: bot:answer
        cases:
          - id: q1
            question: "Do it"
            criteria: [{id: cheap, type: trace_limits, max_cost_usd: 1}]
        """,
    )
    pytester.runpytest("--rubric-response-cache=use").assert_outcomes(passed=1)
    (database,) = (pytester.path / ".rubric_cache").glob("*.sqlite3")
    with sqlite3.connect(database) as connection:
        (parsed,) = connection.execute("SELECT parsed FROM replies").fetchone()
        data = json.loads(parsed)
        data["trace"]["usage"]["cost_usd"] = float("nan")
        connection.execute("UPDATE replies SET parsed = ?", (json.dumps(data),))
    result = pytester.runpytest("--rubric-response-cache=replay", "--rubric-json=out.json")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*its answer in the response cache cannot be used: its trace cannot be read (*cost_usd*"]
    )
    json.loads((pytester.path / "out.json").read_text(), parse_constant=_no_constant)


def _no_constant(name: str) -> None:
    raise AssertionError(f"{name} is not JSON")


# The team's RAG bot: it returns its answer with the passage it retrieved and its metadata,
# and counts its calls in calls.txt (a replayed answer is no call).
RAG_SUITE = """
suite: support
target: app.bot:answer
cases:
  - id: refund
    question: "Can I get a refund after 30 days?"
    criteria:
      - {id: window, type: any_of, any_of: ["30 days"]}
"""
RAG_BOT = """
from pathlib import Path


def answer(case):
    with Path("calls.txt").open("a") as calls:
        calls.write("called\\n")
    return {
        "answer": "No: refunds are possible within 30 days of purchase only [policy].",
        "context": [{"id": "policy", "text": "Refunds within 30 days.", "source": "kb"}],
        "metadata": {"retriever": "bm25"},
    }
"""


def _recorded(pytester: pytest.Pytester, write: Write, team: Callable[..., None]) -> None:
    """The team's RAG bot, its answer recorded in the response cache."""
    team(support=RAG_SUITE)
    write("app/bot.py", RAG_BOT)
    pytester.runpytest("--rubric-response-cache=use").assert_outcomes(passed=1)


def _edit_trace(pytester: pytest.Pytester, edit: Callable[[dict[str, Any]], None]) -> None:
    """Edit the trace of the one answer the response cache holds, as a hand or a copy could."""
    (database,) = (pytester.path / ".rubric_cache").glob("*.sqlite3")
    with sqlite3.connect(database) as connection:
        (parsed,) = connection.execute("SELECT parsed FROM replies").fetchone()
        data = json.loads(parsed)
        edit(data["trace"])
        connection.execute("UPDATE replies SET parsed = ?", (json.dumps(data),))


def _calls(pytester: pytest.Pytester) -> int:
    return (pytester.path / "calls.txt").read_text().count("called")


def test_a_replayed_passage_id_that_is_not_text_reads_as_a_returned_one(
    pytester: pytest.Pytester, write: Write, team: Callable[..., None]
) -> None:
    """A passage id or source that is not text (a target returning ``id: 7`` gives "7") is
    read as the reader of what a target returns reads it: the all-pass run replays it, writes
    every output, ends 0, and its JSON is a baseline the next run takes."""
    _recorded(pytester, write, team)

    def edit(trace: dict[str, Any]) -> None:
        trace["context"][0].update(id={"x": [1]}, source=["a", 2])

    _edit_trace(pytester, edit)
    result = pytester.runpytest(
        "--rubric-response-cache=replay",
        "--rubric-json=out.json",
        "--rubric-html=out.html",
        "--rubric-markdown=out.md",
    )
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    assert _calls(pytester) == 1  # replayed: the bot was not called again
    document = json.loads((pytester.path / "out.json").read_text(), parse_constant=_no_constant)
    (passage,) = document["results"][0]["samples"][0]["trace"]["context"]
    assert (passage["id"], passage["source"]) == ("{'x': [1]}", "['a', 2]")
    assert (pytester.path / "out.html").is_file() and (pytester.path / "out.md").is_file()
    again = pytester.runpytest("--rubric-response-cache=replay", "--rubric-baseline=out.json")
    again.assert_outcomes(passed=1)
    assert again.ret == 0


def test_a_recorded_trace_the_reader_refuses_is_a_miss_recorded_again_under_use(
    pytester: pytest.Pytester, write: Write, team: Callable[..., None]
) -> None:
    """Metadata holding NaN is refused, as a target's is: under ``replay`` the item is an
    ERROR saying why (and the JSON stays JSON); following its advice, ``use``, calls the bot
    and records its answer over the bad one, which ``replay`` then serves."""
    _recorded(pytester, write, team)
    _edit_trace(pytester, lambda trace: trace.update(metadata={"x": float("nan")}))
    result = pytester.runpytest("--rubric-response-cache=replay", "--rubric-json=out.json")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*target app.bot:answer: its answer in the response cache cannot be used: its trace "
            "cannot be read (*metadata*); record it again with --rubric-response-cache use*"
        ]
    )
    json.loads((pytester.path / "out.json").read_text(), parse_constant=_no_constant)
    assert _calls(pytester) == 1

    pytester.runpytest("--rubric-response-cache=use").assert_outcomes(passed=1)
    assert _calls(pytester) == 2  # a miss: the bot was asked, and its answer recorded
    result = pytester.runpytest("--rubric-response-cache=replay", "--rubric-json=out.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*responses: 1 of 1 replayed from the cache*"])
    assert _calls(pytester) == 2
    document = json.loads((pytester.path / "out.json").read_text(), parse_constant=_no_constant)
    assert document["results"][0]["samples"][0]["trace"]["metadata"] == {"retriever": "bm25"}


# ------------------------------------------------------------- endpoints, unusable replies


def _judged(pytester: pytest.Pytester, url: str, *extra: str) -> pytest.RunResult:
    return pytester.runpytest(
        "--rubric-judge=openai:m", f"--rubric-judge-url={url}", "--rubric-json=out.json", *extra
    )


def _db_text(pytester: pytest.Pytester) -> str:
    return b"".join(p.read_bytes() for p in (pytester.path / ".rubric_cache").iterdir()).decode(
        "utf-8", "replace"
    )


def test_a_cache_recorded_through_one_gateway_replays_through_another(
    pytester: pytest.Pytester, team: Callable[..., None], fake_llm: FakeLLM
) -> None:
    team()
    fake_llm.respond_with(lambda request: verdict("MET", "says no after 30 days"))
    port = fake_llm.openai_url.split(":")[2].split("/")[0]
    # A gateway URL holding a token in its query string (userinfo is refused: see test_clients).
    gateway = f"http://127.0.0.1:{port}/v1?api-key=tok-query-42"
    _judged(pytester, gateway, "--rubric-cache=use").assert_outcomes(passed=2)
    assert len(fake_llm.requests) == 2
    assert fake_llm.requests[0].path == "/v1/chat/completions?api-key=tok-query-42"
    cold = _results(pytester)

    # Replayed through another gateway: the same key, every hit, no call.
    other = f"http://127.0.0.1:{port}/gateway/v1"
    result = _judged(pytester, other, "--rubric-cache=replay")
    result.assert_outcomes(passed=2)
    assert len(fake_llm.requests) == 2
    assert _results(pytester) == cold
    recorded = f"http://127.0.0.1:{port}/v1"  # the gateway, without its token
    result.stdout.fnmatch_lines(
        [f"judge cache: 2 of 2 hits were recorded against another endpoint ({recorded})"]
    )
    assert str(result.stdout).count("recorded against another endpoint") == 1
    assert _run_of(pytester)["cache"] == {"mode": "replay", "hits": 2, "misses": 0}
    # Through the URL it was recorded against, nothing to say.
    result = _judged(pytester, gateway, "--rubric-cache=replay")
    result.assert_outcomes(passed=2)
    result.stdout.no_fnmatch_line("*another endpoint*")
    everything = _db_text(pytester) + str(result.stdout) + (pytester.path / "out.json").read_text()
    assert "tok-query-42" not in everything


def test_a_replay_miss_says_whether_the_last_reply_was_unusable(
    pytester: pytest.Pytester,
    team: Callable[..., None],
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sqlite3

    team()
    key = "sk-canary-unusable-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    # Out of protocol, twice, and echoing the key.
    fake_llm.respond_with(lambda request: text(f"I would rather not grade this ({key})."))
    _judged(pytester, fake_llm.openai_url, "--rubric-cache=use").assert_outcomes(errors=2)
    assert len(fake_llm.requests) == 4
    with sqlite3.connect(pytester.path / ".rubric_cache" / "judge.sqlite3") as db:
        stored = db.execute("SELECT COUNT(*) FROM replies WHERE provider = 'openai'").fetchone()
        reasons = [reason for (reason,) in db.execute("SELECT reason FROM unusable")]
    db.close()
    assert stored == (0,)  # an unusable reply is never stored
    assert len(reasons) == 4 and all("no JSON object" in r for r in reasons)
    assert key not in _db_text(pytester)

    result = _judged(pytester, fake_llm.openai_url, "--rubric-cache=replay")
    result.assert_outcomes(errors=2)
    assert len(fake_llm.requests) == 4
    reason = _results(pytester)[1]["criteria"][1]["reason"]  # refund's policy
    assert reason.startswith(
        "--rubric-cache replay: the last reply of judge openai:m to criterion 'policy' was "
        "unusable (the reply contains no JSON object (it starts 'I would rather not grade "
    )
    assert reason.endswith(
        "); it is never stored: fix the judge or the prompt, then record again with "
        "--rubric-cache use"
    )
    assert "***" in reason and key[:12] not in reason

    # Once the judge follows the protocol, a recording run stores its reply: replay serves it.
    fake_llm.respond_with(lambda request: verdict("MET"))
    _judged(pytester, fake_llm.openai_url, "--rubric-cache=use").assert_outcomes(passed=2)
    _judged(pytester, fake_llm.openai_url, "--rubric-cache=replay").assert_outcomes(passed=2)


def test_a_reply_that_fit_only_when_asked_again_replays_as_it_was_graded(
    pytester: pytest.Pytester, team: Callable[..., None], fake_llm: FakeLLM
) -> None:
    team()

    def judge(request: Recorded) -> Action:
        told = "could not be used" in request.body["messages"][1]["content"]
        return verdict("MET", "after the reminder") if told else text("Looks fine to me!")

    fake_llm.respond_with(judge)
    _judged(pytester, fake_llm.openai_url, "--rubric-cache=use").assert_outcomes(passed=2)
    assert len(fake_llm.requests) == 4
    recorded = _results(pytester)
    url = fake_llm.openai_url
    fake_llm.stop()
    # The first reply's error replays, fed back as it was; the retry's reply is served.
    _judged(pytester, url, "--rubric-cache=replay").assert_outcomes(passed=2)
    assert _results(pytester) == recorded


def test_the_endpoint_line_names_the_endpoints_most_hits_came_from() -> None:
    from pytest_rubric._llm.base import CallStats
    from pytest_rubric._render.summary import terminal_lines
    from pytest_rubric._report.report import JudgeUsage, build_report

    def said(*stats: CallStats) -> list[str]:
        usage = JudgeUsage(tuple((f"j{i}", s, None) for i, s in enumerate(stats)))
        return [line.text for line in terminal_lines(build_report([], judge_usage=usage))]

    assert not any("another endpoint" in text for text in said(CallStats(cache_hits=3)))
    a = CallStats(cache_hits=10, elsewhere={"http://a/v1": 1, "http://b/v1": 4})
    b = CallStats(cache_hits=6, elsewhere={"http://c/v1": 2, "http://d/v1": 2, "http://a/v1": 1})
    assert said(a, b)[-1] == (
        "judge cache: 10 of 16 hits were recorded against another endpoint "
        "(http://b/v1, http://a/v1, http://c/v1 and 1 more)"
    )
