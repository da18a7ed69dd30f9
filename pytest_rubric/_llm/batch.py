"""Batch judging (``--rubric-judge-batch``): judge calls sent through the provider's batch API.

:func:`run_batch` sends a list of :class:`BatchRequest` (each with its
``custom_id``) as one batch, on the client's own endpoint, key and headers:

* OpenAI: the requests as a JSONL file to ``POST /files`` (``purpose=batch``),
  then ``POST /batches`` over it; ``GET /batches/{id}`` until it ends; the
  replies from ``GET /files/{output_file_id}/content`` and the failures from
  the ``error_file_id``;
* Anthropic: ``POST /v1/messages/batches``; ``GET .../{id}`` until its
  ``processing_status`` is ``ended``; the replies from its ``results_url``.

It polls with backoff (1 s doubling to 30 s, or the server's ``Retry-After``,
never below :data:`MIN_RETRY_AFTER`: a ``Retry-After: 0`` would poll without pause)
up to a timeout (default 3600 s), then cancels the batch, and returns, for
every ``custom_id``, the :class:`~pytest_rubric._llm.base.Reply` (its tokens
counted in the client's stats) or a :class:`BatchFailure` saying why not
and whether one live call may still get it (a result missing or errored) or
not (the batch failed or did not end in time).

Every HTTP exchange has the live calls' guards (see
:mod:`~pytest_rubric._llm.http`): a deadline on the whole exchange, a size
cap (larger for a results file), no redirect followed, and no key in any
error text. An Anthropic ``results_url`` on another host than the endpoint is
refused: the key goes only where ``--rubric-judge-url`` points.

:class:`BatchQueue` is what the runner's transport calls instead of the
client's ``send`` under ``--rubric-judge-batch``: calls are gathered until
none has come for a moment, sent as one batch, and each waits for its own
result; one missing or errored is asked once live.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .base import JudgeError
from .clients import AnthropicClient, OpenAIClient
from .http import HTTPClient

if TYPE_CHECKING:
    pass


from .batch_providers import _AnthropicBatch, _OpenAIBatch
from .batch_wire import (
    _CANCEL_TIMEOUT,
    BATCH_PROVIDERS,
    DEFAULT_TIMEOUT,
    FIRST_POLL,
    MAX_BATCH_CHARACTERS,
    MAX_BATCH_REQUESTS,
    MAX_POLL,
    MAX_RESULTS_BYTES,
    BatchFailure,
    BatchRequest,
    BatchResult,
    _Status,
    _Wire,
)

__all__ = [
    "BATCH_PROVIDERS",
    "DEFAULT_TIMEOUT",
    "MAX_BATCH_CHARACTERS",
    "MAX_BATCH_REQUESTS",
    "MAX_RESULTS_BYTES",
    "MIN_RETRY_AFTER",
    "BatchFailure",
    "BatchRequest",
    "run_batch",
]


async def run_batch(
    client: HTTPClient,
    requests: Sequence[BatchRequest],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    first_poll: float = FIRST_POLL,
    max_poll: float = MAX_POLL,
) -> dict[str, BatchResult]:
    """Send ``requests`` as one batch through ``client``'s provider; return each ``custom_id``'s
    reply or failure.

    Raises :class:`~pytest_rubric._llm.base.JudgeError` when the batch could not be
    submitted (every request failed alike). ``client`` is an
    :class:`~pytest_rubric._llm.clients.OpenAIClient` or an
    :class:`~pytest_rubric._llm.clients.AnthropicClient`; the custom ids are unique.
    """
    if not requests:
        return {}
    ids = [r.custom_id for r in requests]
    if len(set(ids)) != len(ids):
        raise ValueError("every request of a batch needs its own custom_id")
    if len(requests) > MAX_BATCH_REQUESTS:
        raise ValueError(f"a batch holds at most {MAX_BATCH_REQUESTS:,} requests")
    wire: _Wire
    if isinstance(client, OpenAIClient):
        wire = _OpenAIBatch(client)
    elif isinstance(client, AnthropicClient):
        wire = _AnthropicBatch(client)
    else:
        raise ValueError(
            f"batch judging speaks the openai and anthropic providers only, not {client!r}"
        )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    batch_id = await wire.submit(requests)
    try:
        ended = await _wait(wire, batch_id, deadline, first_poll=first_poll, max_poll=max_poll)
    except asyncio.CancelledError:
        # The session is closing (interrupted, -x): a batch left running is still billed.
        await _cancel(wire, batch_id)
        raise
    if ended is None:
        await _cancel(wire, batch_id)
        reason = wire.failure(
            f"batch {batch_id} did not end within {timeout:g} s and was cancelled",
            hint="raise --rubric-judge-batch-timeout, or judge live without --rubric-judge-batch",
        )
        return {i: BatchFailure(reason, retry_live=False) for i in ids}
    if ended.failed is not None:
        reason = wire.failure(
            f"batch {batch_id} {ended.failed}",
            hint="see the provider's batch page; judge live without --rubric-judge-batch",
        )
        return {i: BatchFailure(reason, retry_live=False) for i in ids}
    results = await wire.results(batch_id, ended, set(ids))
    for custom_id in ids:
        results.setdefault(
            custom_id,
            BatchFailure(
                wire.failure(
                    f"batch {batch_id} ended without a result for request {custom_id}",
                    hint="it was asked live once more",
                ),
                retry_live=True,
            ),
        )
    return results


MIN_RETRY_AFTER = 1.0  # seconds: the least a poll waits when the server says how long


async def _wait(
    wire: _Wire, batch_id: str, deadline: float, *, first_poll: float, max_poll: float
) -> _Status | None:
    """Poll until the batch ends (its status) or the deadline passes (None)."""
    loop = asyncio.get_running_loop()
    delay = first_poll
    while True:
        try:
            status, retry_after = await wire.poll(batch_id)
        except JudgeError as exc:
            if not exc.retryable:
                raise
            status, retry_after = None, exc.retry_after  # an outage: keep waiting
        if status is not None and status.ended:
            return status
        remaining = deadline - loop.time()
        if remaining <= 0:
            return None
        wait = delay if retry_after is None else max(retry_after, MIN_RETRY_AFTER)
        await asyncio.sleep(max(0.0, min(wait, max_poll, remaining)))
        delay = min(delay * 2, max_poll)


async def _cancel(wire: _Wire, batch_id: str) -> None:
    """Ask the provider to cancel the batch; a failure to is not waited out."""
    with contextlib.suppress(JudgeError, TimeoutError):
        async with asyncio.timeout(_CANCEL_TIMEOUT):
            await wire.cancel(batch_id)
