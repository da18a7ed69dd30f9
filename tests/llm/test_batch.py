"""Batch judging (``--rubric-judge-batch``): the batch module against the fake provider, then
whole sessions graded through it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_rubric._config import parsers
from pytest_rubric._defaults import RetryPolicy
from pytest_rubric._errors import LLMError
from pytest_rubric._guards.secrets import Secret
from pytest_rubric._llm import batch as batch_module
from pytest_rubric._llm.base import Reply, Sampling
from pytest_rubric._llm.batch import BatchFailure, BatchQueue, BatchRequest, BatchResult, run_batch
from pytest_rubric._llm.clients import AnthropicClient, OpenAIClient
from pytest_rubric._llm.cost import Price
from pytest_rubric._llm.http import HTTPClient
from pytest_rubric._llm.providers import ModelSpec
from tests.conftest import RUN_MODES
from tests.fake_llm import (
    FakeLLM,
    Recorded,
    errored,
    json_reply,
    missing,
    raw,
    redirect,
    status,
    text,
    verdict,
)
from tests.judge.test_judge_e2e import JUDGED, by_requirement, judge_args
from tests.llm.test_cost import _cases

Write = Callable[[str, str], Path]

KEY = "sk-batch-secret-0123456789abcdef"
SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string"}}}


@pytest.fixture(autouse=True)
def _polls_as_the_fake_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """Polls here wait what the fake server says (often 0 s): the floor of 1 s on a
    Retry-After is round four's own test (tests/guards/test_round4_outputs.py), and would
    add a second a poll to every test here. (A session in a process of its own keeps it.)"""
    monkeypatch.setattr(batch_module, "MIN_RETRY_AFTER", 0.0)


def _client(fake: FakeLLM, provider: str, **policy_: Any) -> HTTPClient:
    policy = RetryPolicy(**{"backoff": 0.01, "timeout": 5.0, **policy_})
    if provider == "openai":
        spec = ModelSpec.parse("openai:gpt-test", url=fake.openai_url)
        return OpenAIClient(spec, key=Secret(KEY), policy=policy)
    spec = ModelSpec.parse("anthropic:claude-test", url=fake.url)
    return AnthropicClient(spec, key=Secret(KEY), policy=policy)


def _requests(n: int) -> list[BatchRequest]:
    return [
        BatchRequest(f"rubric-{i}", "system", f"answer {i}", SCHEMA, Sampling()) for i in range(n)
    ]


def _run(client: HTTPClient, requests: list[BatchRequest], **kwargs: Any) -> dict[str, BatchResult]:
    async def go() -> dict[str, BatchResult]:
        try:
            return await run_batch(client, requests, first_poll=0.01, max_poll=0.05, **kwargs)
        finally:
            await client.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_batch_ends_after_polls_and_maps_each_reply_back(
    fake_llm: FakeLLM, provider: str
) -> None:
    fake_llm.script_batch(polls=3)
    fake_llm.respond_with(
        lambda request: verdict(
            "MET" if "answer 1" in json.dumps(request.body) else "UNMET",
            input_tokens=100,
            output_tokens=20,
        )
    )
    client = _client(fake_llm, provider)
    results = _run(client, _requests(3))
    replies = {
        cid: json.loads(r.text)["verdict"] for cid, r in results.items() if isinstance(r, Reply)
    }
    assert replies == {"rubric-0": "UNMET", "rubric-1": "MET", "rubric-2": "UNMET"}
    assert (client.stats.tokens_in, client.stats.tokens_out) == (300, 60)
    polls = [
        r
        for r in fake_llm.requests
        if r.method == "GET" and "/content" not in r.path and "/results" not in r.path
    ]
    assert len(polls) == 4  # three in progress, then ended
    # Every batch request carries the key as a live call does, and the batched bodies are the live ones.
    assert all(KEY in " ".join(r.headers.values()) for r in fake_llm.requests)
    body = fake_llm.batched[0].body
    if provider == "openai":
        assert body["response_format"]["type"] == "json_schema" and body["seed"] == Sampling().seed
    else:
        assert body["tool_choice"] == {"type": "tool", "name": "grade"}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_missing_and_errored_results_may_be_asked_live(fake_llm: FakeLLM, provider: str) -> None:
    fake_llm.script(verdict("MET"), missing(), errored(500))
    results = _run(_client(fake_llm, provider), _requests(3))
    assert isinstance(results["rubric-0"], Reply)
    gone, failed = results["rubric-1"], results["rubric-2"]
    assert isinstance(gone, BatchFailure) and gone.retry_live
    assert "without a result for request rubric-1" in gone.reason
    assert isinstance(failed, BatchFailure) and failed.retry_live
    assert "request rubric-2 of batch" in failed.reason and "errored" in failed.reason


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_batch_that_never_ends_times_out_and_is_cancelled(
    fake_llm: FakeLLM, provider: str
) -> None:
    fake_llm.script_batch(never_ends=True)
    fake_llm.respond_with(lambda request: verdict("MET"))
    results = _run(_client(fake_llm, provider), _requests(2), timeout=0.3)
    for result in results.values():  # no result came: each request is asked live once
        assert isinstance(result, BatchFailure) and result.retry_live
        assert "did not end within 0.3 s and was cancelled" in result.reason
        assert "--rubric-judge-batch-timeout" in result.reason
    assert fake_llm.requests[-1].path.endswith("/cancel")


def test_a_failed_batch_leaves_every_request_to_be_asked_live(fake_llm: FakeLLM) -> None:
    fake_llm.script_batch(end="failed")
    fake_llm.respond_with(lambda request: verdict("MET"))
    results = _run(_client(fake_llm, "openai"), _requests(2))
    for result in results.values():
        assert isinstance(result, BatchFailure) and result.retry_live
        assert "failed (batch_failed: FakeLLM: the batch failed)" in result.reason


def test_the_server_may_say_when_to_poll_again(fake_llm: FakeLLM) -> None:
    fake_llm.script_batch(polls=4, poll_after=0)
    fake_llm.respond_with(lambda request: verdict("MET"))
    spec = ModelSpec.parse("openai:gpt-test", url=fake_llm.openai_url)
    client = OpenAIClient(spec, key=Secret(KEY), policy=RetryPolicy(timeout=5.0))

    async def go() -> dict[str, BatchResult]:
        try:
            # A first poll of 10 s would take 150 s; Retry-After: 0 makes it at once.
            return await run_batch(client, _requests(1), first_poll=10, max_poll=30)
        finally:
            await client.aclose()

    assert isinstance(asyncio.run(asyncio.wait_for(go(), 10))["rubric-0"], Reply)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_rejected_submission_names_the_batch_endpoint_never_the_key(
    fake_llm: FakeLLM, provider: str
) -> None:
    fake_llm.script_batch_control(status(401, body={"error": {"message": f"bad key {KEY}"}}))
    with pytest.raises(LLMError) as caught:
        _run(_client(fake_llm, provider), _requests(1))
    message = str(caught.value)
    assert "HTTP 401: bad key ***" in message and "check the API key" in message
    assert KEY not in message and KEY[:16] not in message
    assert f"batch at {fake_llm.url}" in message


def test_a_redirect_is_refused_and_a_missing_route_says_the_batch_api_is_needed(
    fake_llm: FakeLLM,
) -> None:
    fake_llm.script_batch_control(redirect("http://elsewhere.example/v1/files"))
    with pytest.raises(
        LLMError, match=r"HTTP 307: redirected to 'http://elsewhere.example/v1/files'"
    ):
        _run(_client(fake_llm, "openai"), _requests(1))
    fake_llm.script_batch_control(status(404))
    with pytest.raises(LLMError, match=r"HTTP 404.*serve the provider's batch API"):
        _run(_client(fake_llm, "openai"), _requests(1))


def test_a_status_without_a_hint_of_its_own_is_hinted_alike_live_and_batched(
    fake_llm: FakeLLM,
) -> None:
    fake_llm.script(status(418))
    client = _client(fake_llm, "openai")

    async def live() -> None:
        try:
            await client.send("system", "user")
        finally:
            await client.aclose()

    with pytest.raises(LLMError) as asked_live:
        asyncio.run(live())
    fake_llm.script_batch_control(status(418))
    with pytest.raises(LLMError) as batched:
        _run(_client(fake_llm, "openai"), _requests(1))
    assert asked_live.value.hint == batched.value.hint == "see the provider's error message"


def test_a_results_url_on_another_host_is_not_sent_the_key(fake_llm: FakeLLM) -> None:
    fake_llm.respond_with(lambda request: verdict("MET"))
    ended = {
        "id": "msgbatch_x",
        "type": "message_batch",
        "processing_status": "ended",
        "results_url": "https://collector.example/results",
    }
    fake_llm.script_batch_control(
        raw(json.dumps({**ended, "processing_status": "in_progress", "results_url": None})),
        raw(json.dumps(ended)),
    )
    with pytest.raises(
        LLMError, match=r"results_url is on another host \('https://collector.example/results'\)"
    ):
        _run(_client(fake_llm, "anthropic"), _requests(1))
    assert not any("collector" in r.path for r in fake_llm.requests)


def test_a_control_reply_that_gives_a_key_twice_is_refused_as_a_live_reply_is(
    fake_llm: FakeLLM,
) -> None:
    fake_llm.respond_with(lambda request: verdict("MET"))
    created = '{"id": "msgbatch_x", "type": "message_batch", "processing_status": "in_progress"'
    fake_llm.script_batch_control(
        raw(created + "}"),
        raw(created + ', "processing_status": "ended"}'),  # which one counts is no guess
    )
    with pytest.raises(LLMError, match=r"the reply gives the key 'processing_status' twice"):
        _run(_client(fake_llm, "anthropic"), _requests(1))
    assert not any(r.path.endswith("/results") for r in fake_llm.requests)


def test_a_batch_creation_is_sent_again_only_when_the_server_refused_it(fake_llm: FakeLLM) -> None:
    fake_llm.respond_with(lambda request: verdict("MET"))
    fake_llm.script_batch_control(status(503))  # refused unread: sent again
    assert isinstance(_run(_client(fake_llm, "anthropic"), _requests(1))["rubric-0"], Reply)
    fake_llm.requests.clear()
    fake_llm.script_batch_control(status(500))  # perhaps created: a second could bill twice
    with pytest.raises(LLMError, match="HTTP 500"):
        _run(_client(fake_llm, "anthropic"), _requests(1))
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_batch_exchange_sent_again_is_a_retry_counted_and_spent(
    fake_llm: FakeLLM, provider: str
) -> None:
    fake_llm.respond_with(lambda request: verdict("MET"))
    fake_llm.script_batch_control(status(503), status(503))  # the first submission, twice
    client = _client(fake_llm, provider)
    assert isinstance(_run(client, _requests(1))["rubric-0"], Reply)
    assert client.stats.retries == 2  # what the run's usage line prints
    # A retry of a batch exchange spends the session's retry budget, as a live call's does.
    fake_llm.requests.clear()
    fake_llm.script_batch_control(status(503), status(503))
    client = _client(fake_llm, provider, budget=1)
    with pytest.raises(LLMError, match=r"HTTP 503.*the session's retry budget \(1\) is spent"):
        _run(client, _requests(1))
    assert len(fake_llm.requests) == 2 and client.stats.retries == 1


def test_closing_the_queue_cancels_the_running_batch(fake_llm: FakeLLM) -> None:
    fake_llm.script_batch(never_ends=True)
    fake_llm.respond_with(lambda request: verdict("MET"))
    client = _client(fake_llm, "openai")

    async def go() -> None:
        queue = BatchQueue(client, quiet=0.01, first_poll=0.01, max_poll=0.05)
        call = asyncio.ensure_future(queue.send("system", "user", schema=SCHEMA))
        while not any(r.method == "GET" for r in fake_llm.requests):
            await asyncio.sleep(0.01)
        await queue.aclose()
        with pytest.raises(LLMError, match="the run ended before its batch did"):
            await call
        await client.aclose()

    asyncio.run(asyncio.wait_for(go(), 10))
    cancels = [r for r in fake_llm.requests if r.path.endswith("/cancel")]
    assert len(cancels) == 1 and cancels[0] is fake_llm.requests[-1]


def test_the_batch_price_is_half_the_live_one_unless_the_ini_line_gives_it() -> None:
    prices = parsers.prices(["cheap 0.15 0.60", "given 1 2 0.3 0.4"])
    assert prices["cheap"].batch() == Price(0.075, 0.30, live=prices["cheap"])
    assert prices["given"] == Price(1, 2, 0.3, 0.4)
    assert prices["given"].batch() == Price(0.3, 0.4, live=prices["given"])
    with pytest.raises(ValueError, match=r"'odd 1 2 3' is not MODEL IN OUT.*batch prices"):
        parsers.prices(["odd 1 2 3"])
    with pytest.raises(ValueError, match=r"given's batch output price '-1'"):
        parsers.prices(["given 1 2 0.3 -1"])


def test_a_full_batch_is_sent_at_once_and_the_next_calls_gather_another(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch_module, "MAX_BATCH_REQUESTS", 2)
    fake_llm.respond_with(lambda request: verdict("MET"))
    client = _client(fake_llm, "anthropic")

    async def go() -> list[Reply]:
        queue = BatchQueue(client, quiet=0.05, first_poll=0.01, max_poll=0.05)
        try:
            return await asyncio.gather(
                *(queue.send("s", f"u{i}", schema=SCHEMA) for i in range(3))
            )
        finally:
            await queue.aclose()
            await client.aclose()

    replies = asyncio.run(asyncio.wait_for(go(), 10))
    assert [json.loads(r.text)["verdict"] for r in replies] == ["MET"] * 3
    created = [r for r in fake_llm.requests if r.method == "POST"]
    # The two batches are created concurrently: on a loaded machine the second may arrive
    # first, so the sizes are compared, not the order they arrived in.
    assert sorted(len(r.body["requests"]) for r in created) == [1, 2]


# --------------------------------------------------------------------------- whole sessions

PRICED = """
[pytest]
rubric_judge_backoff = 0.01
rubric_judge_prices =
    test-model 1000 2000
"""


def _live(fake: FakeLLM) -> list[Recorded]:
    """The live judge calls the session made (not the batch routes)."""
    return [r for r in fake.requests if r.path.endswith(("/chat/completions", "/messages"))]


def _criteria(rubric_json: Callable[[], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in rubric_json()["results"][0]["criteria"]}


@pytest.fixture
def batched_file(pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM) -> Path:
    pytester.makeini(PRICED)
    # The fake says to poll again at once: the session's first poll would wait a second.
    fake_llm.script_batch(poll_after=0)
    return write("judged.rubric.yaml", JUDGED)


# Every run mode once, on one provider: the other provider's wire is the same session's.
@pytest.mark.parametrize(
    ("provider", "run_mode"),
    [("openai", mode) for mode in RUN_MODES] + [("anthropic", "no-xdist")],
    indirect=["run_mode"],
)
def test_a_batch_that_ends_after_polls_grades_as_the_live_run_does(
    pytester: pytest.Pytester,
    batched_file: Path,
    fake_llm: FakeLLM,
    provider: str,
    run_mode: list[str],
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    fake_llm.script_batch(polls=3, poll_after=0)
    fake_llm.respond_with(by_requirement({"horizon is one day"}))
    result = pytester.runpytest(
        *judge_args(fake_llm, provider, "--rubric-judge-batch"), "--rubric-json=out.json", *run_mode
    )
    result.assert_outcomes(passed=1)
    criteria = _criteria(rubric_json)
    assert (criteria["horizon"]["verdict"], criteria["max_loss"]["verdict"]) == ("MET", "UNMET")
    assert criteria["horizon"]["reason"] == "judged"
    assert len(fake_llm.batched) == 2 and _live(fake_llm) == []
    result.stdout.fnmatch_lines(
        [f"rubric: *--rubric-judge {provider}:test-model * --rubric-judge-batch"]
    )
    # 2 calls of 10 in and 5 out at half of $1000/M and $2000/M: $0.02, not the live $0.04.
    result.stdout.fnmatch_lines(
        [
            f"judge {provider}:test-model: 2 calls, 0 retries, 0 errors, tokens 20 in / 10 out, cost $0.02, *"
        ]
    )


def test_missing_and_errored_results_are_asked_live_once(
    pytester: pytest.Pytester,
    batched_file: Path,
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    fake_llm.script(missing(), errored(500))  # the batch's two requests
    fake_llm.respond_with(by_requirement({"horizon is one day"}))  # the live calls after it
    result = pytester.runpytest(
        *judge_args(fake_llm, "openai", "--rubric-judge-batch"), "--rubric-json=out.json"
    )
    result.assert_outcomes(passed=1)
    criteria = _criteria(rubric_json)
    assert (criteria["horizon"]["verdict"], criteria["max_loss"]["verdict"]) == ("MET", "UNMET")
    assert len(fake_llm.batched) == 2 and len(_live(fake_llm)) == 2
    # Asked live, they cost the live price: 20 in and 10 out at $1000/M and $2000/M.
    result.stdout.fnmatch_lines(["judge openai:test-model: 2 calls, *, cost $0.04, *"])


def test_a_live_retry_that_fails_leaves_the_criteria_error(
    pytester: pytest.Pytester,
    batched_file: Path,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    leak = {"error": {"message": f"invalid key {KEY}"}}
    fake_llm.script(missing(), status(500, body=leak))  # the batch's two requests
    fake_llm.respond_with(lambda request: status(401, body=leak))  # and their live calls
    result = pytester.runpytest(
        *judge_args(fake_llm, "openai", "--rubric-judge-batch"), "--rubric-json=out.json"
    )
    result.assert_outcomes(errors=1)
    criteria = _criteria(rubric_json)
    for cid in ("horizon", "max_loss"):
        assert criteria[cid]["verdict"] == "ERROR"
        assert "HTTP 401: invalid key ***" in criteria[cid]["reason"]
        assert "asked live after" in criteria[cid]["reason"]
    assert len(_live(fake_llm)) == 2  # once each, no more
    # The key reached the server in every request's header, and no output.
    assert all(KEY in " ".join(r.headers.values()) for r in fake_llm.requests)
    output = result.stdout.str() + result.stderr.str() + (pytester.path / "out.json").read_text()
    assert KEY not in output and KEY[:16] not in output


@pytest.mark.parametrize("live", ["MET", "down"])
def test_a_batch_that_never_ends_times_out_and_its_requests_are_asked_live(
    pytester: pytest.Pytester,
    batched_file: Path,
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
    live: str,
) -> None:
    """A request the batch gave no result for is asked live once, then ERROR: a cancelled
    batch's requests alike."""
    fake_llm.script_batch(never_ends=True, poll_after=0.05)
    if live == "MET":
        fake_llm.respond_with(by_requirement({"horizon is one day"}))
    else:
        fake_llm.respond_with(lambda request: status(400))
    result = pytester.runpytest(
        *judge_args(fake_llm, "openai", "--rubric-judge-batch", "--rubric-judge-batch-timeout=1"),
        "--rubric-json=out.json",
    )
    criteria = _criteria(rubric_json)
    assert len(_live(fake_llm)) == 2  # each of the two criteria, once
    assert any(r.path.endswith("/cancel") for r in fake_llm.requests)
    if live == "MET":  # graded as the live run grades it
        result.assert_outcomes(passed=1)
        assert [criteria[cid]["verdict"] for cid in ("horizon", "max_loss")] == ["MET", "UNMET"]
        return
    result.assert_outcomes(errors=1)
    for cid in ("horizon", "max_loss"):
        assert criteria[cid]["verdict"] == "ERROR"
        assert "did not end within 1 s and was cancelled" in criteria[cid]["reason"]
    result.stdout.fnmatch_lines(["rubric: * --rubric-judge-batch --rubric-judge-batch-timeout 1"])


def test_the_help_says_what_a_batch_that_times_out_does(pytester: pytest.Pytester) -> None:
    """As the test above shows and the judge guide says: asked live, not ERROR at once."""
    shown = " ".join(pytester.runpytest("--help").stdout.str().split())
    help_text = shown.partition("--rubric-judge-batch-timeout=SECONDS")[2][:300]
    assert "then it is cancelled and each of its requests is asked once live, its criteria" in (
        help_text
    )
    assert "ERROR only if that fails too." in help_text
    assert "cancelled and its criteria are ERROR" not in shown


def test_a_reply_that_does_not_fit_is_retried_in_a_later_batch(
    pytester: pytest.Pytester,
    batched_file: Path,
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    graded = [
        {"id": "horizon", "reason": "one day", "verdict": "MET"},
        {"id": "max_loss", "reason": "no such claim", "verdict": "UNMET"},
    ]
    fake_llm.script(text("I think it is fine."), json_reply({"criteria": graded}))
    result = pytester.runpytest(
        *judge_args(fake_llm, "openai", "--rubric-judge-batch", "--rubric-grader=one-shot"),
        "--rubric-json=out.json",
    )
    result.assert_outcomes(passed=1)
    assert _criteria(rubric_json)["horizon"]["verdict"] == "MET"
    created = [r for r in fake_llm.requests if r.path.endswith("/batches")]
    assert len(created) == 2 and _live(fake_llm) == []  # the retry went in a second batch
    assert "I think it is fine." in json.dumps(fake_llm.batched[1].body)


def test_the_budget_holds_for_calls_gathered_into_a_batch(
    pytester: pytest.Pytester,
    batched_file: Path,
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    """A batch's tokens are counted when it ends: until then each gathered call holds what
    its prompt costs, so a budget that one prompt spends lets no second call join."""
    fake_llm.respond_with(by_requirement({"horizon is one day"}))
    result = pytester.runpytest(
        *judge_args(fake_llm, "openai", "--rubric-judge-batch", "--rubric-max-cost=0.00001"),
        "--rubric-json=out.json",
    )
    refused = [c for c in _criteria(rubric_json).values() if c["verdict"] == "ERROR"]
    assert len(fake_llm.batched) == 1 and len(refused) == 1
    assert "cost budget of $0.00001 spent" in refused[0]["reason"]
    result.stdout.fnmatch_lines(["*cost budget of $0.00001 spent: 1 criterion left ERROR*"])


def test_a_call_the_holds_keep_out_waits_for_the_batch_and_joins_the_next(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM
) -> None:
    """What gathered calls hold is not spent: the calls their holds keep out of a batch wait
    till it ends, then join the next on the spend recorded, as a live run's would start."""
    write("cost.rubric.yaml", _cases(6))
    fake_llm.script_batch(poll_after=0)
    fake_llm.respond_with(lambda request: verdict("MET"))
    result = pytester.runpytest(
        *judge_args(fake_llm, "openai", "--rubric-judge-batch", "--rubric-max-cost=0.5"),
        "--rubric-judge-price=1000,1000",
    )
    result.assert_outcomes(passed=6)
    created = [r for r in fake_llm.requests if r.path.endswith("/batches")]
    assert len(created) > 1 and len(fake_llm.batched) == 6 and _live(fake_llm) == []
    # 6 calls of 10 in and 5 out at half of $1000/M: $0.045, far below the $0.5 budget.
    result.stdout.fnmatch_lines(["judge openai:test-model: 6 calls, *, cost $0.045, *"])


def test_an_ini_line_may_give_the_batch_price(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM
) -> None:
    pytester.makeini("[pytest]\nrubric_judge_prices = test-model 1000 2000 100 200\n")
    write("judged.rubric.yaml", JUDGED)
    fake_llm.script_batch(poll_after=0)
    fake_llm.respond_with(by_requirement({"horizon is one day"}))
    result = pytester.runpytest(*judge_args(fake_llm, "openai", "--rubric-judge-batch"))
    result.assert_outcomes(passed=1)
    # 20 in at $100/M and 10 out at $200/M
    result.stdout.fnmatch_lines(["judge openai:test-model: 2 calls, *, cost $0.004, *"])


def test_batch_judging_needs_a_provider_with_a_batch_api(
    pytester: pytest.Pytester, batched_file: Path
) -> None:
    pytester.makeconftest(
        """
        class EchoJudge:
            async def complete(self, system, user):
                return '{"reason": "r", "verdict": "MET"}'

        def pytest_rubric_make_judge(config):
            return EchoJudge()
        """
    )
    result = pytester.runpytest("--rubric-judge-batch")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--rubric-judge-batch sends judge calls through the openai or anthropic batch API*"]
    )
    bad = pytester.runpytest("--rubric-judge-batch-timeout=0")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--rubric-judge-batch-timeout*'0' is not a positive number*"])
