"""Self-test of the fake LLM server, driven with httpx against the real socket."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

import tests.fake_llm as fake_llm_module
from tests.conftest import HANG_GUARD
from tests.fake_llm import (
    FakeLLM,
    Recorded,
    cut,
    deep,
    delay,
    drop,
    json_reply,
    oversize,
    raw,
    redirect,
    score,
    status,
    text,
    trickle,
    verdict,
)

OPENAI = "/v1/chat/completions"
ANTHROPIC = "/v1/messages"

# The fixture, bound by name in this module (importing it by name trips ruff F811).
fake_llm = fake_llm_module.fake_llm

OPENAI_BODY = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}
ANTHROPIC_BODY = {
    "model": "claude-test",
    "max_tokens": 100,
    "messages": [{"role": "user", "content": "hi"}],
}
TOOL = {"name": "record_verdict", "input_schema": {"type": "object"}}
ANTHROPIC_TOOL_BODY = {
    **ANTHROPIC_BODY,
    "tools": [TOOL],
    "tool_choice": {"type": "tool", "name": "record_verdict"},
}


def post(server: FakeLLM, path: str, body: Any, **kwargs: Any) -> httpx.Response:
    return httpx.post(server.url + path, json=body, **kwargs)


# --------------------------------------------------------------------------- text


def test_text_openai(fake_llm: FakeLLM) -> None:
    fake_llm.script(text("hello", input_tokens=7, output_tokens=3))
    response = post(fake_llm, OPENAI, OPENAI_BODY)
    assert response.status_code == 200
    assert response.http_version == "HTTP/1.1"
    assert response.headers["content-type"] == "application/json"
    assert int(response.headers["content-length"]) == len(response.content)
    assert response.json() == {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "hello"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }


def test_text_anthropic(fake_llm: FakeLLM) -> None:
    fake_llm.script(text("héllo"))
    response = post(fake_llm, ANTHROPIC, ANTHROPIC_BODY)
    assert response.status_code == 200
    assert int(response.headers["content-length"]) == len(response.content)
    assert response.json() == {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": "héllo"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def test_openai_base_url(fake_llm: FakeLLM) -> None:
    assert fake_llm.url.startswith("http://127.0.0.1:")
    assert fake_llm.openai_url == fake_llm.url + "/v1"
    fake_llm.script(text("ok"))
    response = httpx.post(fake_llm.openai_url + "/chat/completions", json=OPENAI_BODY)
    assert response.json()["choices"][0]["message"]["content"] == "ok"


def test_unknown_path_is_404_for_replies(fake_llm: FakeLLM) -> None:
    fake_llm.script(text("x"))
    response = post(fake_llm, "/v1/embeddings", {})
    assert response.status_code == 404
    assert "no such endpoint" in response.json()["error"]["message"]


# --------------------------------------------------------------------------- json


def test_json_reply_openai_is_json_text(fake_llm: FakeLLM) -> None:
    obj = {"reason": "r", "verdict": "pass"}
    fake_llm.script(json_reply(obj, input_tokens=1, output_tokens=2))
    body = post(fake_llm, OPENAI, OPENAI_BODY).json()
    assert body["choices"][0]["message"]["content"] == json.dumps(obj)
    assert body["usage"] == {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}


def test_json_reply_anthropic_forced_tool_is_tool_use(fake_llm: FakeLLM) -> None:
    obj = {"reason": "r", "verdict": "pass"}
    fake_llm.script(json_reply(obj))
    body = post(fake_llm, ANTHROPIC, ANTHROPIC_TOOL_BODY).json()
    assert body["content"] == [
        {"type": "tool_use", "id": "toolu_fake", "name": "record_verdict", "input": obj}
    ]
    assert body["stop_reason"] == "tool_use"
    assert body["model"] == "claude-test"


def test_json_reply_anthropic_without_forced_tool_is_text(fake_llm: FakeLLM) -> None:
    obj = {"a": 1}
    auto_choice = {**ANTHROPIC_BODY, "tools": [TOOL], "tool_choice": {"type": "auto"}}
    fake_llm.script(json_reply(obj), json_reply(obj))
    for request_body in (ANTHROPIC_BODY, auto_choice):
        body = post(fake_llm, ANTHROPIC, request_body).json()
        assert body["content"] == [{"type": "text", "text": json.dumps(obj)}]
        assert body["stop_reason"] == "end_turn"


def test_verdict_and_score(fake_llm: FakeLLM) -> None:
    fake_llm.script(verdict("fail", "nope"), score(0.75), verdict("pass"), score(1, "why"))
    content = [
        json.loads(post(fake_llm, OPENAI, OPENAI_BODY).json()["choices"][0]["message"]["content"]),
        json.loads(post(fake_llm, OPENAI, OPENAI_BODY).json()["choices"][0]["message"]["content"]),
        post(fake_llm, ANTHROPIC, ANTHROPIC_TOOL_BODY).json()["content"][0]["input"],
        post(fake_llm, ANTHROPIC, ANTHROPIC_TOOL_BODY).json()["content"][0]["input"],
    ]
    assert content == [
        {"reason": "nope", "verdict": "fail"},
        {"reason": "because", "score": 0.75},
        {"reason": "because", "verdict": "pass"},
        {"reason": "why", "score": 1},
    ]


# --------------------------------------------------------------------------- status


def test_status_openai(fake_llm: FakeLLM) -> None:
    fake_llm.script(status(429, headers={"Retry-After": "1"}), status(500))
    response = post(fake_llm, OPENAI, OPENAI_BODY)
    assert response.status_code == 429
    assert response.headers["retry-after"] == "1"
    assert response.json() == {"error": {"message": "fake 429"}}
    response = post(fake_llm, OPENAI, OPENAI_BODY)
    assert response.status_code == 500
    assert response.json() == {"error": {"message": "fake 500"}}


def test_status_anthropic(fake_llm: FakeLLM) -> None:
    fake_llm.script(status(400), status(529, headers={"retry-after": "2"}))
    response = post(fake_llm, ANTHROPIC, ANTHROPIC_BODY)
    assert response.status_code == 400
    assert response.json() == {
        "type": "error",
        "error": {"type": "api_error", "message": "fake 400"},
    }
    response = post(fake_llm, ANTHROPIC, ANTHROPIC_BODY)
    assert response.status_code == 529
    assert response.headers["retry-after"] == "2"


def test_status_custom_body(fake_llm: FakeLLM) -> None:
    fake_llm.script(status(400, body={"detail": "bad"}), status(502, body="<html>bad gateway"))
    response = post(fake_llm, OPENAI, OPENAI_BODY)
    assert (response.status_code, response.json()) == (400, {"detail": "bad"})
    response = post(fake_llm, ANTHROPIC, ANTHROPIC_BODY)
    assert (response.status_code, response.text) == (502, "<html>bad gateway")


# --------------------------------------------------------------------------- raw


@pytest.mark.parametrize("path", [OPENAI, ANTHROPIC])
def test_raw(fake_llm: FakeLLM, path: str) -> None:
    fake_llm.script(raw('{"choices": [{"mess'), raw("oops", status=503, content_type="text/plain"))
    response = post(fake_llm, path, {})
    assert (response.status_code, response.text) == (200, '{"choices": [{"mess')
    assert int(response.headers["content-length"]) == len(response.content)
    with pytest.raises(json.JSONDecodeError):
        response.json()
    response = post(fake_llm, path, {})
    assert (response.status_code, response.text) == (503, "oops")
    assert response.headers["content-type"] == "text/plain"


# --------------------------------------------------------------------------- drop and delay


@pytest.mark.parametrize("path", [OPENAI, ANTHROPIC])
def test_drop_is_a_connection_error(fake_llm: FakeLLM, path: str) -> None:
    fake_llm.script(text("warm"), drop(), text("after"))
    with httpx.Client(base_url=fake_llm.url) as client:
        assert client.post(path, json={}).status_code == 200  # keep-alive connection
        with pytest.raises(httpx.RemoteProtocolError):
            client.post(path, json={})
        assert client.post(path, json={}).status_code == 200
    assert len(fake_llm.requests) == 3


@pytest.mark.parametrize("path", [OPENAI, ANTHROPIC])
def test_cut_sends_part_of_the_body_and_closes(fake_llm: FakeLLM, path: str) -> None:
    fake_llm.script(cut(text("truncated in transit")), text("after"))
    with httpx.Client(base_url=fake_llm.url) as client:
        with pytest.raises(httpx.RemoteProtocolError, match=r"incomplete|closed"):
            client.post(path, json={})
        assert client.post(path, json={}).status_code == 200
    assert len(fake_llm.requests) == 2


def test_delay_then_reply(fake_llm: FakeLLM) -> None:
    fake_llm.script(delay(0.2, text("slow")))
    started = time.monotonic()
    response = post(fake_llm, OPENAI, OPENAI_BODY)
    assert time.monotonic() - started >= 0.2
    assert response.json()["choices"][0]["message"]["content"] == "slow"


def test_delay_beyond_client_timeout(fake_llm: FakeLLM, capfd: pytest.CaptureFixture[str]) -> None:
    fake_llm.script(delay(0.4, text("too late")), text("next"), text("later"))
    with pytest.raises(httpx.ReadTimeout):
        post(fake_llm, ANTHROPIC, ANTHROPIC_BODY, timeout=0.05)
    # Served while the timed-out request is still sleeping.
    assert post(fake_llm, ANTHROPIC, ANTHROPIC_BODY).json()["content"][0]["text"] == "next"
    time.sleep(0.5)  # the late reply is written to a closed connection by now
    assert post(fake_llm, ANTHROPIC, ANTHROPIC_BODY).json()["content"][0]["text"] == "later"
    captured = capfd.readouterr()
    assert captured.err == ""


@pytest.mark.timeout(HANG_GUARD)
def test_stop_cuts_delays_short() -> None:
    """A stop that waited out the hour's delay would hang here."""
    server = FakeLLM().start()
    server.script(delay(3600, text("never")))
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(post, server, OPENAI, OPENAI_BODY)
        deadline = time.monotonic() + 5
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        server.stop()
        with pytest.raises(httpx.TransportError):
            future.result(timeout=5)


# --------------------------------------------------------------------------- hostile replies


def test_trickle_sends_the_body_a_byte_at_a_time(fake_llm: FakeLLM) -> None:
    fake_llm.script(trickle(raw('{"a": 12345}'), interval=0.05))
    arrivals: list[float] = []
    body = b""
    # A per-read timeout longer than the interval never fires, however long the body takes.
    # (5 s of slack per byte, 100 times the interval: a loaded machine may starve the
    # server's thread.)
    with httpx.Client(timeout=5.0) as client:
        started = time.monotonic()
        with client.stream("POST", fake_llm.url + OPENAI, json=OPENAI_BODY) as response:
            assert response.headers["content-length"] == "12"
            for chunk in response.iter_raw():
                arrivals.append(time.monotonic())
                body += chunk
    assert body == b'{"a": 12345}'
    assert len(arrivals) >= 6  # not one burst
    assert arrivals[-1] - started >= 11 * 0.05 > 0.5
    _until(lambda: fake_llm.streamed == 12, within=2)  # counted just after the last send


def test_trickle_stops_when_the_client_goes(fake_llm: FakeLLM) -> None:
    fake_llm.script(trickle(text("a reply far too slow to wait for"), interval=0.02), text("next"))
    with httpx.Client() as client:
        with client.stream("POST", fake_llm.url + OPENAI, json=OPENAI_BODY) as response:
            total = int(response.headers["content-length"])
            next(response.iter_raw())
        # The server stopped writing: its handler finished before the body was sent.
        _until(lambda: fake_llm.in_flight == 0, within=30)
        assert fake_llm.streamed < total
        assert client.post(fake_llm.url + OPENAI, json=OPENAI_BODY).status_code == 200


@pytest.mark.parametrize("path", [OPENAI, ANTHROPIC])
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_oversize_pads_a_valid_reply(fake_llm: FakeLLM, path: str, chunked: bool) -> None:
    size = 2 * 1024 * 1024
    fake_llm.script(oversize(verdict("MET", "padded"), size=size, chunked=chunked))
    body = ANTHROPIC_TOOL_BODY if path == ANTHROPIC else OPENAI_BODY
    response = post(fake_llm, path, body)
    assert response.status_code == 200
    assert len(response.content) == size
    if chunked:
        assert "content-length" not in response.headers
        assert response.headers["transfer-encoding"] == "chunked"
    else:
        assert response.headers["content-length"] == str(size)
    data = response.json()
    assert set(data.pop("padding")) == {"x"}
    if path == OPENAI:
        reply = json.loads(data["choices"][0]["message"]["content"])
    else:
        reply = data["content"][0]["input"]
    assert reply == {"reason": "padded", "verdict": "MET"}


def test_oversize_is_streamed_not_built(fake_llm: FakeLLM) -> None:
    fake_llm.script(oversize(text("x"), size=1024**3))  # a gigabyte: never held in memory
    with (
        httpx.Client() as client,
        client.stream("POST", fake_llm.url + OPENAI, json=OPENAI_BODY) as response,
    ):
        assert response.headers["content-length"] == str(1024**3)
        read = 0
        for chunk in response.iter_raw():
            read += len(chunk)
            if read > 1024 * 1024:
                break
    time.sleep(0.2)
    assert fake_llm.streamed < 64 * 1024 * 1024  # it stopped when the client did


@pytest.mark.parametrize("path", [OPENAI, ANTHROPIC])
def test_redirect_has_a_location_and_a_verdict_body(fake_llm: FakeLLM, path: str) -> None:
    fake_llm.script(redirect("http://127.0.0.1:9/elsewhere"), redirect("/x", text("y"), code=302))
    body = ANTHROPIC_TOOL_BODY if path == ANTHROPIC else OPENAI_BODY
    response = post(fake_llm, path, body)
    assert (response.status_code, response.headers["location"]) == (
        307,
        "http://127.0.0.1:9/elsewhere",
    )
    if path == OPENAI:
        reply = json.loads(response.json()["choices"][0]["message"]["content"])
    else:
        reply = response.json()["content"][0]["input"]
    assert reply == {"reason": "because", "verdict": "MET"}
    response = post(fake_llm, path, body)
    assert (response.status_code, response.headers["location"]) == (302, "/x")


def test_deep_nests_a_field_in_the_reply(fake_llm: FakeLLM) -> None:
    fake_llm.script(deep(3, text("shallow")), deep(100_000))
    data = post(fake_llm, OPENAI, OPENAI_BODY).json()
    assert data["deep"] == [[[]]]
    assert data["choices"][0]["message"]["content"] == "shallow"
    response = post(fake_llm, ANTHROPIC, ANTHROPIC_BODY)
    assert response.content.startswith(b'{"deep": ' + b"[" * 100_000 + b"]" * 100_000 + b", ")
    with pytest.raises(RecursionError):
        json.loads(response.content)


# --------------------------------------------------------------------------- concurrency


def test_concurrent_requests_overlap() -> None:
    with FakeLLM() as server:
        server.gather(8)
        server.script(*(text(f"reply {i}") for i in range(8)))
        with httpx.Client(base_url=server.url) as client, ThreadPoolExecutor(8) as pool:
            responses = list(pool.map(lambda _: client.post(OPENAI, json=OPENAI_BODY), range(8)))
    assert server.max_in_flight == 8
    contents = sorted(r.json()["choices"][0]["message"]["content"] for r in responses)
    assert contents == sorted(f"reply {i}" for i in range(8))


def test_a_gathering_that_never_fills_lets_its_requests_go() -> None:
    with FakeLLM() as server:
        server.gather(3, within=0.2)
        server.script(text("a"), text("b"), text("c"))
        assert [post(server, OPENAI, OPENAI_BODY).status_code for _ in range(3)] == [200] * 3
    assert server.max_in_flight == 1  # one at a time: each waited out the gathering


def test_latency_applies_to_every_reply() -> None:
    with FakeLLM(latency=0.1) as server:
        server.script(text("a"), status(500))
        for _ in range(2):
            started = time.monotonic()
            post(server, OPENAI, OPENAI_BODY)
            assert time.monotonic() - started >= 0.1


# --------------------------------------------------------------------------- recording


def test_requests_are_recorded(fake_llm: FakeLLM) -> None:
    fake_llm.script(text("1"), text("2"), text("3"))
    before = time.monotonic()
    post(fake_llm, OPENAI, OPENAI_BODY, headers={"Authorization": "Bearer sk-test"})
    post(
        fake_llm,
        ANTHROPIC,
        ANTHROPIC_BODY,
        headers={"X-Api-Key": "ak-test", "Anthropic-Version": "2023-06-01"},
    )
    httpx.post(fake_llm.url + OPENAI, content=b"not json {", headers={"Content-Type": "text/plain"})
    first, second, third = fake_llm.requests
    assert first.path == OPENAI
    assert first.method == "POST"
    assert first.body == OPENAI_BODY
    assert first.headers["authorization"] == "Bearer sk-test"
    assert first.headers["content-type"] == "application/json"
    assert all(name == name.lower() for name in first.headers)
    assert second.path == ANTHROPIC
    assert second.body == ANTHROPIC_BODY
    assert second.headers["x-api-key"] == "ak-test"
    assert second.headers["anthropic-version"] == "2023-06-01"
    assert third.body == "not json {"
    assert before <= first.received_at <= second.received_at <= third.received_at
    assert time.monotonic() >= third.received_at


def _until(condition: Callable[[], bool], *, within: float) -> None:
    """Wait for ``condition``, polling; fail if it does not hold ``within`` seconds."""
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def test_recorded_before_replying() -> None:
    # A long latency and a poll, not a fixed sleep: a loaded machine may start the
    # request late, but the reply cannot come before the request is recorded.
    with FakeLLM(latency=3.0) as server:
        server.script(text("x"))
        with ThreadPoolExecutor(1) as pool:
            future = pool.submit(post, server, OPENAI, OPENAI_BODY)
            _until(lambda: len(server.requests) == 1, within=2.5)
            assert not future.done()
            assert future.result().status_code == 200


# --------------------------------------------------------------------------- scripting


def test_unscripted_request_is_500(fake_llm: FakeLLM) -> None:
    for path in (OPENAI, ANTHROPIC):
        response = post(fake_llm, path, {})
        assert response.status_code == 500
        assert response.json() == {"error": {"message": "FakeLLM: unscripted request"}}


def test_queue_first_then_responder(fake_llm: FakeLLM) -> None:
    seen: list[Recorded] = []

    def responder(request: Recorded) -> Any:
        seen.append(request)
        return text(f"echo {request.body['n']}")

    fake_llm.script(text("scripted"))
    fake_llm.respond_with(responder)
    assert fake_llm.pending == 1
    replies = [
        post(fake_llm, OPENAI, {"n": n}).json()["choices"][0]["message"]["content"]
        for n in range(3)
    ]
    assert replies == ["scripted", "echo 1", "echo 2"]
    assert fake_llm.pending == 0
    assert [r.body for r in seen] == [{"n": 1}, {"n": 2}]
    fake_llm.script(status(418))
    assert post(fake_llm, OPENAI, {"n": 9}).status_code == 418


def test_responder_error_is_500(fake_llm: FakeLLM) -> None:
    def responder(request: Recorded) -> Any:
        raise ValueError("boom")

    fake_llm.respond_with(responder)
    response = post(fake_llm, OPENAI, {})
    assert response.status_code == 500
    assert "boom" in response.json()["error"]["message"]


def test_script_rejects_non_actions(fake_llm: FakeLLM) -> None:
    with pytest.raises(TypeError):
        fake_llm.script("hello")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- lifecycle


def test_stop_is_idempotent_and_closes_the_port() -> None:
    server = FakeLLM()
    server.stop()  # never started
    server.start()
    url = server.url
    server.script(text("x"))
    with httpx.Client() as client:
        assert client.post(url + OPENAI, json={}).status_code == 200
        server.stop()  # with a keep-alive connection still open
        server.stop()
        with pytest.raises(httpx.TransportError):
            client.post(url + OPENAI, json={})
    with pytest.raises(RuntimeError):
        _ = server.url


def test_start_twice_is_an_error() -> None:
    with FakeLLM() as server, pytest.raises(RuntimeError):
        server.start()
