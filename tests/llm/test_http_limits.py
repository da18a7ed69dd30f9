"""A hostile or broken judge server: nothing it sends becomes a verdict, leaks a key or hangs a run.

Each test scripts one kind of hostility on the fake provider (``tests/fake_llm.py``)
and checks what a user would see: end to end through pytester where the
outcome is a test result, on the client alone where it is the client's own
contract. Each of them failed before the transport bounded whole calls,
capped replies, refused redirects, redacted before cutting, took a
concurrency slot per attempt and read replies defensively (all but
``test_a_reply_of_exactly_1_mib_is_read``, which pins the cap's edge).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_rubric._defaults import RetryPolicy
from pytest_rubric._errors import LLMError
from pytest_rubric._llm.clients import make_client
from pytest_rubric._llm.http import MAX_REPLY_BYTES, HTTPClient
from pytest_rubric._llm.providers import ModelSpec
from tests.fake_llm import (
    FakeLLM,
    deep,
    oversize,
    raw,
    redirect,
    status,
    text,
    trickle,
    verdict,
)
from tests.judge.test_judge_e2e import JUDGED, by_requirement, judge_args

pytestmark = pytest.mark.hostile


Write = Callable[[str, str], Path]

KEY = "sk-hostile-4f7a9c2e1b3d5f60"  # its first 10 characters are in no other text
ONE_ATTEMPT = "[pytest]\nrubric_judge_backoff = 0.01\nrubric_judge_attempts = 1\n"
FAST_RETRIES = "[pytest]\nrubric_judge_backoff = 0.01\n"


def _judged(pytester: pytest.Pytester, write: Write, ini: str) -> None:
    write("judged.rubric.yaml", JUDGED)
    pytester.makeini(ini)


def _criteria(rubric_json: Callable[[], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in rubric_json()["results"][0]["criteria"]}


def _client(fake: FakeLLM, provider: str = "openai", **policy: Any) -> HTTPClient:
    url = fake.openai_url if provider == "openai" else fake.url
    env = {"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY}
    spec = ModelSpec.parse(f"{provider}:m", url=url, environ=env)
    return make_client(spec, environ=env, policy=RetryPolicy(backoff=0.01, **policy))


def _complete(judge: HTTPClient) -> str:
    async def run() -> str:
        try:
            return await judge.complete("system", "user")
        finally:
            await judge.aclose()

    return asyncio.run(run())


# --------------------------------------------------------------------------- whole-call timeout


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_trickling_judge_times_out_as_a_whole_call(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
    provider: str,
) -> None:
    """Headers at once, then a byte every 0.5 s: each socket read is in time, the
    reply (a MET verdict) would take over 100 s. The 1 s bound is for the whole call."""
    _judged(pytester, write, ONE_ATTEMPT)
    fake_llm.respond_with(lambda request: trickle(verdict("MET"), interval=0.5))
    result = pytester.runpytest(
        *judge_args(fake_llm, provider, "--rubric-judge-timeout=1"),
        *("--rubric-json", "out.json"),
    )
    result.assert_outcomes(errors=1)
    criteria = _criteria(rubric_json)
    for cid in ("horizon", "max_loss"):
        assert criteria[cid]["verdict"] == "ERROR"
        assert "no complete reply within 1 s" in criteria[cid]["reason"]


def test_a_trickled_reply_is_retried_and_the_next_one_kept(fake_llm: FakeLLM) -> None:
    # The timeout is the one the good reply must beat: 2 s, a hundred times what it takes;
    # the trickled one would take over a minute.
    fake_llm.script(trickle(text("too slow to count"), interval=0.5), text("ok"))
    judge = _client(fake_llm, timeout=2.0)
    assert _complete(judge) == "ok"
    assert judge.stats.retries == 1


# --------------------------------------------------------------------------- size cap


def test_a_reply_above_1_mib_is_refused_then_error(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    """A valid MET verdict padded to 2 MiB: refused, retried, then ERROR, never MET."""
    _judged(pytester, write, FAST_RETRIES)
    fake_llm.respond_with(lambda request: oversize(verdict("MET"), size=2 * MAX_REPLY_BYTES))
    result = pytester.runpytest(*judge_args(fake_llm), "--rubric-json", "out.json")
    result.assert_outcomes(errors=1)
    reason = _criteria(rubric_json)["horizon"]["reason"]
    assert "the reply is larger than 1,048,576 bytes (1 MiB) and was refused" in reason
    assert "gave up after 4 attempts" in reason
    assert len(fake_llm.requests) == 8  # two criteria, four attempts each


def test_an_oversize_body_without_a_length_is_not_read_past_the_cap(fake_llm: FakeLLM) -> None:
    """Chunked, so only counting what arrives can tell: reading stops past 1 MiB."""
    size = 64 * 1024 * 1024
    fake_llm.script(oversize(text("big"), size=size, chunked=True), text("ok"))
    judge = _client(fake_llm)
    assert _complete(judge) == "ok"
    assert judge.stats.retries == 1
    # Whatever the server still manages to write after the client left, once it noticed.
    deadline = time.monotonic() + 30
    while fake_llm.in_flight and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fake_llm.streamed < size // 4


def test_a_reply_of_exactly_1_mib_is_read(fake_llm: FakeLLM) -> None:
    fake_llm.script(oversize(text("fits"), size=MAX_REPLY_BYTES))
    assert _complete(_client(fake_llm)) == "fits"


# --------------------------------------------------------------------------- redirects


def test_a_redirect_with_a_met_body_is_an_error_naming_its_target(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    _judged(pytester, write, FAST_RETRIES)
    target = "https://judge.example/v1/chat/completions"
    fake_llm.respond_with(lambda request: redirect(target, verdict("MET")))
    result = pytester.runpytest(*judge_args(fake_llm), "--rubric-json", "out.json")
    result.assert_outcomes(errors=1)
    criteria = _criteria(rubric_json)
    assert criteria["horizon"]["verdict"] == "ERROR"
    assert f"HTTP 307: redirected to '{target}'" in criteria["horizon"]["reason"]
    assert "redirects are not followed" in criteria["horizon"]["reason"]
    assert len(fake_llm.requests) == 2  # not retried, and never followed
    # One whose Location is no URL (a control character in it) is still a redirect, not a
    # dead server retried four times.
    asked = len(fake_llm.requests)
    fake_llm.respond_with(lambda request: redirect(target + "/\x1b[2J", verdict("MET")))
    result = pytester.runpytest(*judge_args(fake_llm), "--rubric-json", "out.json")
    result.assert_outcomes(errors=1)
    reason = _criteria(rubric_json)["horizon"]["reason"]
    assert "a redirect to an address that is not a URL" in reason
    assert "\x1b" not in result.stdout.str() and "gave up after" not in reason
    assert len(fake_llm.requests) - asked == 2


# --------------------------------------------------------------------------- redaction


def test_a_key_cut_short_by_an_error_quote_does_not_leak(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    """The error message is quoted up to 200 characters and the key starts at 185:
    cut first, 15 characters of it would be left for the redaction to miss."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    _judged(pytester, write, FAST_RETRIES)
    message = "x" * 185 + KEY + " is not a valid key"
    fake_llm.respond_with(lambda request: status(401, body={"error": {"message": message}}))
    result = pytester.runpytest(*judge_args(fake_llm), "-rA", "--rubric-json", "out.json")
    result.assert_outcomes(errors=1)
    outputs = [str(result.stdout), str(result.stderr), (pytester.path / "out.json").read_text()]
    assert not [o for o in outputs if KEY[:10] in o]
    reason = _criteria(rubric_json)["horizon"]["reason"]
    assert "HTTP 401: " + "x" * 185 + "*** is not a va… [7 more characters]" in reason


def test_a_key_cut_short_in_a_body_that_is_not_json_does_not_leak(fake_llm: FakeLLM) -> None:
    """A non-JSON body is quoted up to 80 characters; the key starts at 70."""
    fake_llm.respond_with(lambda request: raw("y" * 70 + KEY, content_type="text/plain"))
    with pytest.raises(LLMError, match="the reply is not JSON") as raised:
        _complete(_client(fake_llm, attempts=1))
    assert KEY[:10] not in str(raised.value)
    assert "y" * 70 + "***" in str(raised.value)


# --------------------------------------------------------------------------- slots


def test_waiting_out_a_retry_after_leaves_the_slot_to_other_calls(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM
) -> None:
    """Concurrency 1, two judged criteria: the first call is told to come back in
    3 s, and the second is answered meanwhile instead of waiting behind it: it arrives
    between the two attempts of the first (the order proves it, not a clock)."""
    _judged(pytester, write, FAST_RETRIES)
    fake_llm.script(status(429, headers={"Retry-After": "3"}))
    fake_llm.respond_with(by_requirement({"horizon is one day"}))
    result = pytester.runpytest(*judge_args(fake_llm, "openai", "--rubric-concurrency=1"))
    result.assert_outcomes(passed=1)
    first, other, retried = fake_llm.requests
    assert other.body != first.body and retried.body == first.body
    assert retried.received_at - first.received_at >= 3
    result.stdout.fnmatch_lines(["judge openai:test-model: 2 calls, 1 retries, 0 errors, *"])


# --------------------------------------------------------------------------- reading replies


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_json_nested_100000_deep_is_retried_like_a_body_that_is_not_json(
    fake_llm: FakeLLM, provider: str
) -> None:
    fake_llm.script(deep(100_000, text("deep")), text("ok"))
    judge = _client(fake_llm, provider)
    assert _complete(judge) == "ok"
    assert judge.stats.retries == 1


def test_a_reply_without_usage_is_estimated_while_the_output_mode_settles_too(
    fake_llm: FakeLLM,
) -> None:
    """The first graded call finds the server's output mode: its reply is estimated from the
    characters it sent, as every later one's is."""
    reply = {"choices": [{"message": {"content": '{"reason": "r", "verdict": "MET"}'}}]}
    fake_llm.script(raw(json.dumps(reply)))
    judge = _client(fake_llm)

    async def run() -> None:
        try:
            await judge.send("system", "user", schema={"type": "object"})
        finally:
            await judge.aclose()

    asyncio.run(run())
    assert judge.stats.estimated == 1 and judge.stats.tokens_in > 0


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": "12", "completion_tokens": "many"},
        {"prompt_tokens": 1e400, "completion_tokens": float("nan")},
        {"prompt_tokens": {"n": 1}, "completion_tokens": [1]},
        {"prompt_tokens": 10**30, "completion_tokens": -5},
        {"prompt_tokens": True, "completion_tokens": 1.5},
        [1, 2],
        "lots",
    ],
    ids=["strings", "infinite", "containers", "out-of-range", "bool-and-float", "list", "string"],
)
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_token_counts_that_are_not_counts_are_estimated(
    fake_llm: FakeLLM, provider: str, usage: Any
) -> None:
    if isinstance(usage, dict) and provider == "anthropic":
        usage = {
            "input_tokens": usage["prompt_tokens"],
            "output_tokens": usage["completion_tokens"],
        }
    reply: dict[str, Any] = (
        {"choices": [{"message": {"content": "ok"}}], "usage": usage}
        if provider == "openai"
        else {"content": [{"type": "text", "text": "ok"}], "usage": usage}
    )
    fake_llm.script(raw(json.dumps(reply)))  # json writes 1e400 as Infinity, NaN as NaN
    judge = _client(fake_llm, provider)
    assert _complete(judge) == "ok"
    # Never trusted, never zero (a budget would never bind): estimated from the characters
    # sent and received, as a reply with no usage at all.
    assert judge.stats.estimated == 1
    assert 0 < judge.stats.tokens_in < 100 and 0 < judge.stats.tokens_out < 100
