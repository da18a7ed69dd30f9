"""The two batch APIs: OpenAI's files and batches, Anthropic's message batches, each in its
documented request and result shapes."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._guards.secrets import public_url
from .clients import AnthropicClient, OpenAIClient
from .responses import error_text

if TYPE_CHECKING:
    pass


from .batch_wire import (
    _TRANSFER_TIMEOUT,
    MAX_RESULTS_BYTES,
    BatchFailure,
    BatchRequest,
    BatchResult,
    _Status,
    _Wire,
)


class _OpenAIBatch(_Wire):
    """``/files`` and ``/batches`` of an OpenAI-compatible endpoint."""

    client: OpenAIClient

    def __init__(self, client: OpenAIClient) -> None:
        super().__init__(client)
        self.client = client

    def _body(self, request: BatchRequest) -> dict[str, Any]:
        mode = "text" if request.schema is None else (self.client._mode or "json_schema")
        return self.client._payload(
            request.system, request.user, request.schema, mode, request.sampling
        )

    async def submit(self, requests: Sequence[BatchRequest]) -> str:
        lines = "".join(
            json.dumps(
                {
                    "custom_id": r.custom_id,
                    "method": "POST",
                    "url": "/v1/chat/completions",
                    "body": self._body(r),
                },
                ensure_ascii=False,
            )
            + "\n"
            for r in requests
        ).encode("utf-8")
        files_url = self.client.spec.endpoint("/files")
        uploaded, _ = await self.submitted(
            lambda: self.json(
                "POST",
                files_url,
                files={"file": ("rubric-judge-batch.jsonl", lines, "application/jsonl")},
                data={"purpose": "batch"},
                timeout=max(self.client.policy.timeout, _TRANSFER_TIMEOUT),
            )
        )
        file_id = self._id(files_url, uploaded.get("id"), "file id")
        batches_url = self.client.spec.endpoint("/batches")
        created, _ = await self.submitted(
            lambda: self.json(
                "POST",
                batches_url,
                json_body={
                    "input_file_id": file_id,
                    "endpoint": "/v1/chat/completions",
                    "completion_window": "24h",
                },
            ),
            resend=False,
        )
        return self._id(batches_url, created.get("id"), "batch id")

    async def poll(self, batch_id: str) -> tuple[_Status, float | None]:
        data, retry_after = await self.json(
            "GET", self.client.spec.endpoint(f"/batches/{batch_id}")
        )
        status = data.get("status")
        if status == "failed":
            return _Status(True, f"failed ({self._errors(data)})", data), retry_after
        return _Status(status in ("completed", "expired", "cancelled"), raw=data), retry_after

    def _errors(self, data: Mapping[str, Any]) -> str:
        errors = data.get("errors")
        listed = errors.get("data") if isinstance(errors, dict) else None
        if not isinstance(listed, list) or not listed:
            return "the provider gave no reason"
        first = listed[0] if isinstance(listed[0], dict) else {}
        text = f"{first.get('code', 'error')}: {first.get('message', '')}"
        more = f" and {len(listed) - 1} more" if len(listed) > 1 else ""
        return self._quote(text) + more

    async def cancel(self, batch_id: str) -> None:
        await self.json("POST", self.client.spec.endpoint(f"/batches/{batch_id}/cancel"))

    async def results(
        self, batch_id: str, status: _Status, ids: set[str]
    ) -> dict[str, BatchResult]:
        found: dict[str, BatchResult] = {}
        for name in ("output_file_id", "error_file_id"):
            value = status.raw.get(name)
            if value is None:
                continue
            url = self.client.spec.endpoint("/files")
            file_id = self._id(url, value, name)
            content_url = self.client.spec.endpoint(f"/files/{file_id}/content")
            body, _ = await self.submitted(
                functools.partial(
                    self.request,
                    "GET",
                    content_url,
                    cap=MAX_RESULTS_BYTES,
                    timeout=max(self.client.policy.timeout, _TRANSFER_TIMEOUT),
                )
            )
            for line in self.lines(body):
                custom_id = line.get("custom_id")
                if isinstance(custom_id, str) and custom_id in ids and custom_id not in found:
                    found[custom_id] = self._result(batch_id, custom_id, line)
        return found

    def _result(self, batch_id: str, custom_id: str, line: Mapping[str, Any]) -> BatchResult:
        response = line.get("response")
        if isinstance(response, dict) and response.get("status_code") == 200:
            return self.read_reply(self.client._text, response.get("body"))
        error = line.get("error")
        if isinstance(error, dict) and error.get("message"):
            why = f"{error.get('code', 'error')}: {error.get('message')}"
        elif isinstance(response, dict):
            body = response.get("body")
            text = json.dumps(body) if not isinstance(body, str) else body
            why = f"HTTP {response.get('status_code')}: {error_text(text.encode(), '')}"
        else:
            why = "no response and no error"
        return BatchFailure(
            self.failure(
                f"request {custom_id} of batch {batch_id} errored ({self._quote(why)})",
                hint="it was asked live once more",
            ),
            retry_live=True,
        )


class _AnthropicBatch(_Wire):
    """``/v1/messages/batches`` of the Anthropic API."""

    client: AnthropicClient

    def __init__(self, client: AnthropicClient) -> None:
        super().__init__(client)
        self.client = client

    def _url(self, path: str = "") -> str:
        base = self.client.spec.url.partition("?")[0].rstrip("/")
        prefix = "/messages/batches" if base.endswith("/v1") else "/v1/messages/batches"
        return self.client.spec.endpoint(prefix + path)

    def _params(self, request: BatchRequest) -> dict[str, Any]:
        # As AnthropicClient.send builds a live call's payload.
        params = self.client._payload(
            request.system, [{"role": "user", "content": request.user}], request.sampling
        )
        if request.schema is not None:
            params["tools"] = [
                {
                    "name": "grade",
                    "description": "Record the grade.",
                    "input_schema": request.schema,
                }
            ]
            params["tool_choice"] = {"type": "tool", "name": "grade"}
        return params

    async def submit(self, requests: Sequence[BatchRequest]) -> str:
        url = self._url()
        created, _ = await self.submitted(
            lambda: self.json(
                "POST",
                url,
                json_body={
                    "requests": [
                        {"custom_id": r.custom_id, "params": self._params(r)} for r in requests
                    ]
                },
                timeout=max(self.client.policy.timeout, _TRANSFER_TIMEOUT),
            ),
            resend=False,
        )
        return self._id(url, created.get("id"), "batch id")

    async def poll(self, batch_id: str) -> tuple[_Status, float | None]:
        data, retry_after = await self.json("GET", self._url(f"/{batch_id}"))
        return _Status(data.get("processing_status") == "ended", raw=data), retry_after

    async def cancel(self, batch_id: str) -> None:
        await self.json("POST", self._url(f"/{batch_id}/cancel"))

    async def results(
        self, batch_id: str, status: _Status, ids: set[str]
    ) -> dict[str, BatchResult]:
        own = self._url(f"/{batch_id}/results")
        given = status.raw.get("results_url")
        url = given if isinstance(given, str) and given else own
        if _origin(url) != _origin(own):
            raise self._fail(
                own,
                f"the batch's results_url is on another host ({self._quote(public_url(url))!r})",
                hint="the key is sent only where --rubric-judge-url points: check the endpoint",
            )
        body, _ = await self.submitted(
            lambda: self.request(
                "GET",
                url,
                cap=MAX_RESULTS_BYTES,
                timeout=max(self.client.policy.timeout, _TRANSFER_TIMEOUT),
            )
        )
        found: dict[str, BatchResult] = {}
        for line in self.lines(body):
            custom_id = line.get("custom_id")
            if isinstance(custom_id, str) and custom_id in ids and custom_id not in found:
                found[custom_id] = self._result(batch_id, custom_id, line.get("result"))
        return found

    def _result(self, batch_id: str, custom_id: str, result: object) -> BatchResult:
        kind = result.get("type") if isinstance(result, dict) else None
        if isinstance(result, dict) and kind == "succeeded":
            return self.read_reply(self.client._read, result.get("message"))
        why = str(kind or "no result type")
        if isinstance(result, dict) and kind == "errored":
            why = f"errored: {error_text(json.dumps(result.get('error')).encode(), '')}"
        return BatchFailure(
            self.failure(
                f"request {custom_id} of batch {batch_id} was {self._quote(why)}",
                hint="it was asked live once more",
            ),
            retry_live=True,
        )


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.rpartition("@")[2].lower()
