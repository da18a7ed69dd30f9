"""Self-test of the fake LLM server's batch APIs (OpenAI files + batches, Anthropic message
batches), driven with httpx against the real socket, in the providers' documented shapes."""

from __future__ import annotations

import json
from typing import Any

import httpx

import tests.fake_llm as fake_llm_module
from tests.fake_llm import FakeLLM, Recorded, errored, missing, status, verdict

# The fixture, bound by name in this module (importing it by name trips ruff F811).
fake_llm = fake_llm_module.fake_llm

TOOL_PARAMS = {
    "model": "claude-test",
    "max_tokens": 100,
    "messages": [{"role": "user", "content": "hi"}],
    "tools": [{"name": "grade", "input_schema": {"type": "object"}}],
    "tool_choice": {"type": "tool", "name": "grade"},
}


def chat(n: int) -> dict[str, Any]:
    return {"model": "gpt-test", "messages": [{"role": "user", "content": f"question {n}"}]}


def openai_batch(server: FakeLLM, count: int) -> dict[str, Any]:
    """Upload ``count`` requests (custom ids r0, r1...) and create their batch."""
    lines = "".join(
        json.dumps(
            {"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions", "body": chat(i)}
        )
        + "\n"
        for i in range(count)
    )
    upload = httpx.post(
        server.openai_url + "/files",
        files={"file": ("batch.jsonl", lines.encode(), "application/jsonl")},
        data={"purpose": "batch"},
    )
    assert upload.status_code == 200, upload.text
    file = upload.json()
    assert file["object"] == "file" and file["purpose"] == "batch"
    assert file["id"].startswith("file-") and file["bytes"] == len(lines.encode())
    created = httpx.post(
        server.openai_url + "/batches",
        json={
            "input_file_id": file["id"],
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
        },
    )
    assert created.status_code == 200, created.text
    batch = created.json()
    assert batch["object"] == "batch" and batch["status"] == "validating"
    assert batch["id"].startswith("batch_") and batch["input_file_id"] == file["id"]
    return dict(batch)


def poll(server: FakeLLM, path: str) -> dict[str, Any]:
    response = httpx.get(server.url + path)
    assert response.status_code == 200, response.text
    return dict(response.json())


def jsonl(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    return [json.loads(line) for line in response.text.splitlines()]


def test_openai_batch_completes_after_polls_with_the_scripted_replies(fake_llm: FakeLLM) -> None:
    fake_llm.script_batch(polls=2)
    fake_llm.script(verdict("MET", "r0 ok"), verdict("UNMET", "r1 no"))
    batch = openai_batch(fake_llm, 2)
    path = f"/v1/batches/{batch['id']}"
    for _ in range(2):
        seen = poll(fake_llm, path)
        assert seen["status"] == "in_progress" and seen["output_file_id"] is None
    done = poll(fake_llm, path)
    assert done["status"] == "completed" and done["error_file_id"] is None
    assert done["request_counts"] == {"total": 2, "completed": 2, "failed": 0}
    lines = jsonl(httpx.get(f"{fake_llm.openai_url}/files/{done['output_file_id']}/content"))
    by_id = {line["custom_id"]: line for line in lines}
    assert set(by_id) == {"r0", "r1"}
    assert by_id["r0"]["error"] is None and by_id["r0"]["id"].startswith("batch_req_")
    assert by_id["r0"]["response"]["status_code"] == 200
    content = by_id["r1"]["response"]["body"]["choices"][0]["message"]["content"]
    assert json.loads(content) == {"reason": "r1 no", "verdict": "UNMET"}
    # The batched requests were answered as live ones, and recorded apart.
    assert [r.body for r in fake_llm.batched] == [chat(0), chat(1)]
    assert all(r.path == "/v1/chat/completions" for r in fake_llm.batched)
    assert [r.method for r in fake_llm.requests] == ["POST", "POST", "GET", "GET", "GET", "GET"]


def test_openai_missing_and_errored_results(fake_llm: FakeLLM) -> None:
    fake_llm.script(verdict("MET"), missing(), errored(503))
    batch = openai_batch(fake_llm, 3)
    done = poll(fake_llm, f"/v1/batches/{batch['id']}")
    assert done["status"] == "completed"
    assert done["request_counts"] == {"total": 3, "completed": 2, "failed": 1}
    output = jsonl(httpx.get(f"{fake_llm.openai_url}/files/{done['output_file_id']}/content"))
    errors = jsonl(httpx.get(f"{fake_llm.openai_url}/files/{done['error_file_id']}/content"))
    assert [line["custom_id"] for line in output] == ["r0"]
    assert [line["custom_id"] for line in errors] == ["r2"]
    assert errors[0]["response"]["status_code"] == 503
    assert errors[0]["response"]["body"] == {"error": {"message": "fake 503"}}


def test_openai_batch_that_never_ends_until_cancelled(fake_llm: FakeLLM) -> None:
    fake_llm.script_batch(never_ends=True, poll_after=0.25)
    fake_llm.respond_with(lambda request: verdict("MET"))
    batch = openai_batch(fake_llm, 1)
    for _ in range(5):
        response = httpx.get(f"{fake_llm.url}/v1/batches/{batch['id']}")
        assert response.json()["status"] == "in_progress"
        assert response.headers["retry-after"] == "0.25"
    cancelling = httpx.post(f"{fake_llm.url}/v1/batches/{batch['id']}/cancel").json()
    assert cancelling["status"] == "cancelling"
    done = poll(fake_llm, f"/v1/batches/{batch['id']}")
    assert done["status"] == "cancelled" and done["output_file_id"] is None
    errors = jsonl(httpx.get(f"{fake_llm.openai_url}/files/{done['error_file_id']}/content"))
    assert errors[0]["error"]["code"] == "batch_cancelled"


def test_openai_expired_and_failed_batches(fake_llm: FakeLLM) -> None:
    fake_llm.respond_with(lambda request: verdict("MET"))
    fake_llm.script_batch(end="expired")
    batch = openai_batch(fake_llm, 1)
    done = poll(fake_llm, f"/v1/batches/{batch['id']}")
    assert done["status"] == "expired"
    errors = jsonl(httpx.get(f"{fake_llm.openai_url}/files/{done['error_file_id']}/content"))
    assert errors[0]["custom_id"] == "r0" and errors[0]["error"]["code"] == "batch_expired"
    fake_llm.script_batch(end="failed")
    failed = poll(fake_llm, f"/v1/batches/{openai_batch(fake_llm, 1)['id']}")
    assert failed["status"] == "failed" and failed["output_file_id"] is None
    assert failed["errors"]["data"][0]["code"] == "batch_failed"


def test_openai_input_file_that_is_not_requests_fails_the_batch(fake_llm: FakeLLM) -> None:
    upload = httpx.post(
        fake_llm.openai_url + "/files",
        files={"file": ("batch.jsonl", b'{"custom_id": "a"}\n', "application/jsonl")},
        data={"purpose": "batch"},
    ).json()
    created = httpx.post(
        fake_llm.openai_url + "/batches",
        json={
            "input_file_id": upload["id"],
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
        },
    ).json()
    done = poll(fake_llm, f"/v1/batches/{created['id']}")
    assert done["status"] == "failed" and done["errors"]["data"][0]["line"] == 1
    wrong = httpx.post(
        fake_llm.openai_url + "/files",
        files={"file": ("x.jsonl", b"", "application/jsonl")},
        data={"purpose": "fine-tune"},
    )
    assert wrong.status_code == 400 and "batch" in wrong.json()["error"]["message"]
    unknown = httpx.get(fake_llm.openai_url + "/batches/batch_nope")
    assert unknown.status_code == 404


def anthropic_batch(server: FakeLLM, count: int) -> dict[str, Any]:
    requests = [{"custom_id": f"r{i}", "params": TOOL_PARAMS} for i in range(count)]
    created = httpx.post(
        server.url + "/v1/messages/batches",
        json={"requests": requests},
        headers={"anthropic-version": "2023-06-01"},
    )
    assert created.status_code == 200, created.text
    batch = created.json()
    assert batch["type"] == "message_batch" and batch["id"].startswith("msgbatch_")
    assert batch["processing_status"] == "in_progress" and batch["results_url"] is None
    return dict(batch)


def test_anthropic_batch_ends_after_polls_with_an_absolute_results_url(fake_llm: FakeLLM) -> None:
    fake_llm.script_batch(polls=1)
    fake_llm.script(verdict("MET", "fine"), missing(), errored(529))
    batch = anthropic_batch(fake_llm, 3)
    path = f"/v1/messages/batches/{batch['id']}"
    assert poll(fake_llm, path)["processing_status"] == "in_progress"
    ended = poll(fake_llm, path)
    assert ended["processing_status"] == "ended"
    assert ended["request_counts"] == {
        "processing": 0,
        "succeeded": 1,
        "errored": 1,
        "canceled": 0,
        "expired": 0,
    }
    assert ended["results_url"] == f"{fake_llm.url}{path}/results"
    lines = jsonl(httpx.get(ended["results_url"]))
    by_id = {line["custom_id"]: line["result"] for line in lines}
    assert set(by_id) == {"r0", "r2"}  # r1 is missing
    assert by_id["r0"]["type"] == "succeeded"
    block = by_id["r0"]["message"]["content"][0]
    assert block["type"] == "tool_use" and block["input"] == {"reason": "fine", "verdict": "MET"}
    assert by_id["r2"] == {
        "type": "errored",
        "error": {"type": "error", "error": {"type": "api_error", "message": "fake 529"}},
    }
    assert [r.body for r in fake_llm.batched] == [TOOL_PARAMS] * 3
    assert fake_llm.batched[0].path == "/v1/messages"
    assert fake_llm.batched[0].headers["anthropic-version"] == "2023-06-01"


def test_anthropic_batch_that_never_ends_until_cancelled(fake_llm: FakeLLM) -> None:
    fake_llm.script_batch(never_ends=True)
    fake_llm.respond_with(lambda request: verdict("MET"))
    batch = anthropic_batch(fake_llm, 1)
    path = f"/v1/messages/batches/{batch['id']}"
    for _ in range(5):
        assert poll(fake_llm, path)["processing_status"] == "in_progress"
    early = httpx.get(f"{fake_llm.url}{path}/results")
    assert early.status_code == 400
    cancel = httpx.post(f"{fake_llm.url}{path}/cancel").json()
    assert cancel["processing_status"] == "canceling" and cancel["cancel_initiated_at"]
    ended = poll(fake_llm, path)
    assert ended["processing_status"] == "ended" and ended["request_counts"]["canceled"] == 1
    assert jsonl(httpx.get(ended["results_url"]))[0]["result"] == {"type": "canceled"}


def test_anthropic_expired_batch_and_bad_requests(fake_llm: FakeLLM) -> None:
    fake_llm.respond_with(lambda request: verdict("MET"))
    fake_llm.script_batch(end="expired")
    batch = anthropic_batch(fake_llm, 2)
    ended = poll(fake_llm, f"/v1/messages/batches/{batch['id']}")
    results = jsonl(httpx.get(ended["results_url"]))
    assert [line["result"] for line in results] == [{"type": "expired"}] * 2
    bad = httpx.post(
        fake_llm.url + "/v1/messages/batches",
        json={"requests": [{"custom_id": "has space", "params": TOOL_PARAMS}]},
    )
    assert bad.status_code == 400 and bad.json()["type"] == "error"


def test_a_control_action_answers_a_batch_route_first(fake_llm: FakeLLM) -> None:
    fake_llm.script_batch_control(status(401))
    rejected = httpx.post(fake_llm.url + "/v1/messages/batches", json={"requests": []})
    assert rejected.status_code == 401
    assert rejected.json()["error"]["message"] == "fake 401"
    # Live routes are untouched by the batch routes, and the batch routes by the queue.
    fake_llm.script(verdict("MET"))
    live = httpx.post(fake_llm.url + "/v1/messages", json=TOOL_PARAMS)
    assert live.json()["content"][0]["input"]["verdict"] == "MET"
    assert isinstance(fake_llm.requests[0], Recorded)
    assert len(fake_llm.requests) == 2 and fake_llm.batched == []


def test_missing_and_errored_answer_a_live_request_with_an_error(fake_llm: FakeLLM) -> None:
    fake_llm.script(missing(), errored(502))
    first = httpx.post(fake_llm.openai_url + "/chat/completions", json=chat(0))
    second = httpx.post(fake_llm.openai_url + "/chat/completions", json=chat(1))
    assert first.status_code == 500 and second.status_code == 502
