"""The HTTP judge clients on their own, against the scripted server."""

from __future__ import annotations

import asyncio

import pytest

from pytest_rubric._defaults import RetryPolicy
from pytest_rubric._errors import LLMError
from pytest_rubric._guards.secrets import Secret, public_url, redact
from pytest_rubric._llm.clients import OpenAIClient, make_client
from pytest_rubric._llm.providers import ModelSpec
from tests.fake_llm import Action, FakeLLM, Recorded, cut, drop, raw, redirect, status, text
from tests.fake_llm import delay as slow


def _judge(fake: FakeLLM, **policy: float) -> OpenAIClient:
    spec = ModelSpec.parse("openai:m", url=fake.openai_url)
    return OpenAIClient(spec, key=Secret("sk-test-key"), policy=RetryPolicy(backoff=0.01, **policy))  # type: ignore[arg-type]


async def _complete(judge: OpenAIClient) -> str:
    try:
        return await judge.complete("system", "user")
    finally:
        await judge.aclose()


def test_the_session_retry_budget_bounds_retries(fake_llm: FakeLLM) -> None:
    fake_llm.respond_with(lambda request: status(500))
    judge = _judge(fake_llm, budget=2, attempts=10)
    with pytest.raises(LLMError, match=r"HTTP 500.*retry budget \(2\) is spent"):
        asyncio.run(_complete(judge))
    assert len(fake_llm.requests) == 3  # the first try and two retries
    assert judge.stats.retries == 2


def test_a_client_error_is_not_retried(fake_llm: FakeLLM) -> None:
    fake_llm.respond_with(lambda request: status(404))
    with pytest.raises(LLMError, match=r"HTTP 404.*check --rubric-judge-url and the model name"):
        asyncio.run(_complete(_judge(fake_llm)))
    assert len(fake_llm.requests) == 1


def test_an_error_names_the_endpoint_without_its_userinfo_or_query(fake_llm: FakeLLM) -> None:
    fake_llm.respond_with(
        lambda request: redirect("http://who:tok-location@elsewhere.example/v1?sig=tok-sig")
    )
    host = fake_llm.url.removeprefix("http://")
    # Made directly: parse refuses a URL with userinfo (below); the client never shows one.
    spec = ModelSpec("openai", "m", f"http://who:tok-user@{host}/v1?api-key=tok-query")
    judge = OpenAIClient(spec, key=None, policy=RetryPolicy(backoff=0.01))
    with pytest.raises(LLMError) as caught:
        asyncio.run(_complete(judge))
    assert fake_llm.requests[0].path == "/v1/chat/completions?api-key=tok-query"
    assert str(caught.value).startswith(
        f"judge openai:m at http://{host}/v1/chat/completions: HTTP 307: redirected to "
        "'http://elsewhere.example/v1'"
    )
    assert "tok-" not in str(caught.value)


@pytest.mark.parametrize("given", ["url", "environ"])
def test_a_judge_url_with_a_user_and_password_is_refused_keys_come_from_the_environment(
    given: str,
) -> None:
    """The HTTP client would send the URL's userinfo in place of the key: a credential from a
    flag or a file, which the contract rules out. Refused, and never echoed."""
    url = "http://alice:hunter2secret@gateway.example/v1?api-version=1"
    with pytest.raises(ValueError, match="keys come from the environment only") as caught:
        if given == "url":
            ModelSpec.parse("openai:m", url=url)
        else:
            ModelSpec.parse("anthropic:m", environ={"ANTHROPIC_BASE_URL": url})
    assert "hunter2" not in str(caught.value) and "alice" not in str(caught.value)


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
        slow(60, text("too late")),  # answered only when the server stops
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
    # The timeout fault never answers, so the timeout it needs is only the one the good
    # reply must beat: 2 s, a hundred times what it takes (at 0.3 s a loaded machine once
    # made the good reply late too, and it was retried twice).
    judge = _judge(fake_llm, timeout=2.0 if request.node.callspec.id == "timeout" else 5.0)
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

    with FakeLLM() as fake:
        fake.gather(2)  # the two calls that get a slot are in flight together, surely
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


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://api.openai.com/v1", "https://api.openai.com/v1"),
        ("http://team:tok@gw.example:8080/v1?api-key=tok#x", "http://gw.example:8080/v1"),
        ("http://a@b@gw.example/v1/?q=a@b", "http://gw.example/v1/"),
        ("http://[::1]:8000/v1?api-version=2024", "http://[::1]:8000/v1"),
        ("http://tok@gw.example", "http://gw.example"),
        ("gw.example/v1?k=tok", "gw.example/v1"),
        ("", ""),
    ],
)
def test_a_url_is_shown_without_userinfo_or_query_string(url: str, shown: str) -> None:
    assert public_url(url) == shown


def test_a_query_string_stays_after_the_path_the_client_adds() -> None:
    env = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
    for name, url, endpoint in [
        (
            "openai:m",
            "http://h:1/v1/?api-version=2",
            "http://h:1/v1/chat/completions?api-version=2",
        ),
        ("anthropic:m", "http://h:1/v1?k=a", "http://h:1/v1/messages?k=a"),
        ("anthropic:m", "http://h:1?k=a", "http://h:1/v1/messages?k=a"),
    ]:
        judge = make_client(ModelSpec.parse(name, url=url, environ=env), environ=env)
        assert judge._endpoint() == endpoint
        assert repr(judge) == f"{type(judge).__name__}({name!r}, url={public_url(url)!r})"


def test_anthropic_urls_with_and_without_v1() -> None:
    env = {"ANTHROPIC_API_KEY": "k"}
    for base in ("http://h:1", "http://h:1/v1"):
        judge = make_client(ModelSpec.parse("anthropic:m", url=base, environ=env), environ=env)
        assert judge._endpoint() == "http://h:1/v1/messages"
