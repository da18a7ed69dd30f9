"""The built-in clients: OpenAI-compatible chat completions and the Anthropic messages API.

Each is one wire on :class:`~pytest_rubric._llm.http.HTTPClient`: what it posts (the
:class:`~pytest_rubric._llm.base.Sampling`, structured output where the API offers it) and
how it reads the reply. :data:`WIRES` maps a provider's wire to its class.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .._defaults import RetryPolicy
from .._errors import LLMError
from .base import Reply, Sampling
from .http import HTTPClient
from .providers import ModelSpec, read_key

_ANTHROPIC_VERSION = "2023-06-01"

# A server that does not take a structured-output form answers 4xx or 5xx naming it
# (llama-cpp-python: 500 naming response_format); another failure never gives one up.
_TRANSIENT = frozenset({408, 429, 502, 503, 504})
_NAMES_THE_FORM = re.compile(r"response_format|json_schema|json_object|structured output", re.I)


class OpenAIClient(HTTPClient):
    """Chat completions on any OpenAI-compatible server (OpenAI, Groq, vLLM, Ollama, llama.cpp...).

    Structured output goes as ``response_format``, in the first of :attr:`_MODES` the server
    takes (``json_object`` with a ``schema`` beside it: llama-cpp-python's server). A 4xx or
    5xx whose message names the form moves to the next at once, spending no retry; the form
    that works is kept for the run, and each move is shown in the usage line.
    """

    _MODES = ("json_schema", "json_object with schema", "json_object", "text")
    _mode: str | None = None  # settled once a mode has worked

    def _endpoint(self) -> str:
        return self.spec.endpoint("/chat/completions")

    def _headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.key.reveal()}"} if self.key else {}

    def _payload(
        self,
        turns: Sequence[tuple[str, str]],
        sampling: Sampling | None,
        schema: dict[str, Any] | None = None,
        mode: str | None = None,
    ) -> dict[str, Any]:
        # Before the mode is settled (a batch request's), the first one.
        mode = mode or self._mode or self._MODES[0]
        sampling = sampling or Sampling()
        payload: dict[str, Any] = {
            "model": self.spec.model,
            "messages": [{"role": role, "content": content} for role, content in turns],
            "temperature": sampling.temperature,
            "seed": sampling.seed,
            # A grade is short; a small model that never closes its JSON would not stop.
            "max_tokens": sampling.max_tokens,
        }
        if schema is not None and mode == "json_schema":
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "grade", "schema": schema, "strict": False},
            }
        elif schema is not None and mode == "json_object with schema":
            payload["response_format"] = {"type": "json_object", "schema": schema}
        elif schema is not None and mode == "json_object":
            payload["response_format"] = {"type": "json_object"}
        return payload

    async def send(
        self,
        system: str,
        user: str,
        *,
        schema: dict[str, Any] | None = None,
        sampling: Sampling | None = None,
    ) -> Reply:
        if schema is not None and self._mode is None:
            turns = (("system", system), ("user", user))
            if (data := await self._settle(turns, schema, sampling)) is not None:
                return self._read(data, True)
        return await super().send(system, user, schema=schema, sampling=sampling)

    async def _settle(
        self, turns: Sequence[tuple[str, str]], schema: dict[str, Any], sampling: Sampling | None
    ) -> dict[str, Any] | None:
        """Find the first output mode the server takes; None if another call settled it first.

        The modes are tried back to back in one slot, so calls queued behind find the mode
        settled; a rate limit or an outage is retried as usual, outside the slot.
        """
        i = 0
        admit = self.admit  # --rubric-max-cost: once, before the first attempt
        while True:
            failed: LLMError | None = None
            async with self._slot():
                if admit is not None and self._mode is None:
                    admit()
                    admit = None
                while failed is None:
                    if self._mode is not None:
                        return None
                    mode = self._MODES[i]
                    payload = self._payload(turns, sampling, schema, mode)
                    try:
                        data = await self._post_once(payload)
                    except LLMError as exc:
                        if self._falls_back(exc, i):
                            i += 1
                        elif exc.retryable:
                            failed = exc
                        else:
                            raise
                    else:
                        self._mode = self._mode or mode
                        return data
            try:
                data = await self.post(payload, failed=failed)
            except LLMError as exc:
                if not self._falls_back(exc, i):
                    raise
                i += 1
                continue
            self._mode = self._mode or mode
            return data

    def _falls_back(self, exc: LLMError, i: int) -> bool:
        """Whether mode ``i`` was rejected and a next one is left (recorded if so)."""
        if exc.status is None or exc.status < 400 or i + 1 == len(self._MODES):
            return False
        if exc.status in _TRANSIENT or not _NAMES_THE_FORM.search(exc.what):
            return False  # a rate limit or an outage is retried, whatever its text says
        self.stats.fallbacks.append(f"{self._MODES[i]} -> {self._MODES[i + 1]} (HTTP {exc.status})")
        return True

    def _read(self, data: dict[str, Any], forced: bool = False) -> Reply:
        # The message content alone is read (never a tool call, a refusal or reasoning), as
        # prose is. Counted first: the tokens were spent even when the reply is unusable.
        tokens = self._tokens(data, ("prompt_tokens", "completion_tokens"))
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise self._fail(
                "the reply has no choices[0].message.content", hint="check the endpoint"
            ) from None
        if content is None and forced:  # tool calls or a refusal where the schema was asked:
            return Reply("", *tokens)  # no object, a reply outside the protocol (asked again)
        if not isinstance(content, str):
            raise self._fail("the reply's message content is not text", hint="check the endpoint")
        return Reply(content, *tokens)


class AnthropicClient(HTTPClient):
    """The Anthropic messages API; structured output through a forced tool call."""

    def _endpoint(self, path: str = "") -> str:
        """``/v1/messages`` and ``path`` under the URL (which may end in ``/v1`` already)."""
        v1 = "" if self.spec.url.partition("?")[0].rstrip("/").endswith("/v1") else "/v1"
        return self.spec.endpoint(f"{v1}/messages{path}")

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": _ANTHROPIC_VERSION}
        if self.key:
            headers["x-api-key"] = self.key.reveal()
        return headers

    def _payload(
        self,
        turns: Sequence[tuple[str, str]],
        sampling: Sampling | None,
        schema: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The system turns (only ever first, see `Rubric`) as `system`; a schema as a forced
        tool call."""
        sampling = sampling or Sampling()  # the messages API takes no seed
        payload: dict[str, Any] = {
            "model": self.spec.model,
            "max_tokens": sampling.max_tokens,
            "temperature": sampling.temperature,
            "messages": [{"role": r, "content": c} for r, c in turns if r != "system"],
        }
        if system := "\n\n".join(content for role, content in turns if role == "system"):
            payload["system"] = system
        if schema is not None:
            payload["tools"] = [
                {"name": "grade", "description": "Record the grade.", "input_schema": schema}
            ]
            payload["tool_choice"] = {"type": "tool", "name": "grade"}
        return payload

    def _read(self, data: dict[str, Any], forced: bool = False) -> Reply:
        # Counted first: the tokens were spent even when the reply is unusable.
        tokens = self._tokens(data, ("input_tokens", "output_tokens"))
        blocks = data.get("content")
        if not isinstance(blocks, list):
            raise self._fail("the reply has no content blocks", hint="check the endpoint")
        calls = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
        if forced:  # the forced `grade` call alone: without one, the reply holds no object
            calls = [b for b in calls if b.get("name") == "grade"]
        if calls or forced:
            # The tool calls alone (two are two objects, as the reply reader sees them).
            try:
                text = "\n".join(json.dumps(block.get("input")) for block in calls)
            except (ValueError, RecursionError):  # nested too deep to write back
                raise self._fail(
                    "the tool call's input cannot be read back as JSON", hint="check the endpoint"
                ) from None
            return Reply(text, *tokens, structured=True)
        texts = [
            b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
        ]
        return Reply("".join(t for t in texts if isinstance(t, str)), *tokens)


WIRES: dict[str, type[HTTPClient]] = {"openai": OpenAIClient, "anthropic": AnthropicClient}
"""The client class of each wire a provider may speak (``Provider.wire``)."""


def make_client(
    spec: ModelSpec,
    *,
    environ: Mapping[str, str] | None = None,
    policy: RetryPolicy | None = None,
    require_key: bool = True,
) -> HTTPClient:
    """The built-in client for ``spec``, its key read from the environment only."""
    key = read_key(spec, environ, require_key=require_key)
    return WIRES[spec.entry.wire](spec, key=key, policy=policy)
