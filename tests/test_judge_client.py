"""The HTTP judge clients on their own, against the scripted server."""

from __future__ import annotations

import asyncio

import pytest

from pytest_rubric._base import RetryPolicy
from pytest_rubric._secrets import Secret, redact
from pytest_rubric.judge.base import JudgeError
from pytest_rubric.judge.clients import OpenAIClient, make_client
from pytest_rubric.judge.providers import JudgeSpec
from tests.fake_llm import Action, FakeLLM, Recorded, cut, drop, raw, status, text
from tests.fake_llm import delay as slow


def _judge(fake: FakeLLM, **policy: float) -> OpenAIClient:
    spec = JudgeSpec.parse("openai:m", url=fake.openai_url)
    return OpenAIClient(spec, key=Secret("sk-test-key"), policy=RetryPolicy(backoff=0.01, **policy))  # type: ignore[arg-type]


async def _complete(judge: OpenAIClient) -> str:
    try:
        return await judge.complete("system", "user")
    finally:
        await judge.aclose()


def test_the_session_retry_budget_bounds_retries(fake_llm: FakeLLM) -> None:
    fake_llm.respond_with(lambda request: status(500))
    judge = _judge(fake_llm, budget=2, attempts=10)
    with pytest.raises(JudgeError, match=r"HTTP 500.*retry budget \(2\) is spent"):
        asyncio.run(_complete(judge))
    assert len(fake_llm.requests) == 3  # the first try and two retries
    assert judge.stats.retries == 2


def test_a_client_error_is_not_retried(fake_llm: FakeLLM) -> None:
    fake_llm.respond_with(lambda request: status(404))
    with pytest.raises(JudgeError, match=r"HTTP 404.*check --rubric-judge-url and the model name"):
        asyncio.run(_complete(_judge(fake_llm)))
    assert len(fake_llm.requests) == 1


def test_retry_after_is_capped(fake_llm: FakeLLM) -> None:
    fake_llm.script(status(429, headers={"Retry-After": "3600"}), text("ok"))
    judge = _judge(fake_llm, max_retry_after=0.2)
    assert asyncio.run(_complete(judge)) == "ok"
    assert fake_llm.requests[1].received_at - fake_llm.requests[0].received_at < 2


@pytest.mark.parametrize(
    "fault",
    [
        status(429, headers={"Retry-After": "0"}),
        status(500),
        status(503, body="<html>upstream down</html>"),
        drop(),
        cut(text("truncated in transit")),
        slow(0.6, text("too late")),
        raw('{"choices": [{"message": {"content": "cut'),
        raw('{"choices": [], "n": 1' + "0" * 5000 + "}"),
    ],
    ids=[
        "429",
        "500",
        "503-html",
        "dropped",
        "cut-in-transit",
        "timeout",
        "truncated-json",
        "5000-digit-number",
    ],
)
def test_a_transient_fault_is_retried_and_the_next_reply_kept(
    fake_llm: FakeLLM, fault: Action, request: pytest.FixtureRequest
) -> None:
    fake_llm.script(fault, text("ok"))
    # Only the timeout fault needs a short timeout; the others get room for a loaded
    # machine, or the good reply itself could time out and be retried once more.
    judge = _judge(fake_llm, timeout=0.3 if request.node.callspec.id == "timeout" else 5.0)
    assert asyncio.run(_complete(judge)) == "ok"
    assert len(fake_llm.requests) == 2
    assert judge.stats.retries == 1


def test_attempts_share_the_limiter_and_mode_probes_keep_their_slot() -> None:
    """Six calls, two slots, a server that rejects json_schema: the two calls that
    get a slot probe, fall back within it and settle json_object; the four queued
    behind find the mode settled and never probe. Never more than two in flight."""

    def respond(request: Recorded) -> Action:
        if request.body.get("response_format", {}).get("type") == "json_schema":
            return status(400, body={"error": {"message": "json_schema not supported"}})
        return text('{"verdict": "MET"}')

    async def run(judge: OpenAIClient) -> list[str]:
        judge.limiter = asyncio.Semaphore(2)
        try:
            replies = await asyncio.gather(
                *(judge.send("system", f"user {i}", schema={"type": "object"}) for i in range(6))
            )
            return [reply.text for reply in replies]
        finally:
            await judge.aclose()

    with FakeLLM(latency=0.05) as fake:
        fake.respond_with(respond)
        judge = _judge(fake)
        assert asyncio.run(run(judge)) == ['{"verdict": "MET"}'] * 6
    kinds = [r.body.get("response_format", {}).get("type") for r in fake.requests]
    assert kinds.count("json_schema") == 2
    assert kinds.count("json_object") == 6
    assert fake.max_in_flight == 2
    assert judge.stats.fallbacks == ["json_schema -> json_object with schema (HTTP 400)"] * 2


def test_the_key_is_hidden_from_repr_and_messages() -> None:
    key = Secret("sk-abcdef123456")
    assert "sk-" not in repr(key) and "sk-" not in str(key)
    assert redact("invalid key sk-abcdef123456 given", key) == "invalid key *** given"
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(key)


def test_anthropic_urls_with_and_without_v1() -> None:
    env = {"ANTHROPIC_API_KEY": "k"}
    for base in ("http://h:1", "http://h:1/v1"):
        judge = make_client(JudgeSpec.parse("anthropic:m", url=base, environ=env), environ=env)
        assert judge._endpoint() == "http://h:1/v1/messages"
