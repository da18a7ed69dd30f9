"""What the runner's transport calls instead of the client's ``send`` under
``--rubric-judge-batch``: calls gathered into one batch, each waiting for its own result."""

from __future__ import annotations

import asyncio
import itertools
from typing import TYPE_CHECKING, Any

from .._guards.secrets import redact
from .base import JudgeError, Reply, Sampling
from .cost import BudgetSpent
from .http import HTTPClient

if TYPE_CHECKING:
    pass


from .batch import run_batch
from .batch_wire import (
    DEFAULT_TIMEOUT,
    FIRST_POLL,
    MAX_BATCH_CHARACTERS,
    MAX_BATCH_REQUESTS,
    MAX_POLL,
    BatchFailure,
    BatchRequest,
    BatchResult,
)

__all__ = ["BatchQueue"]


class BatchQueue:
    """The judge calls of a run, gathered into batches: what ``--rubric-judge-batch`` sends.

    :meth:`send` has the built-in client's signature. A call joins the batch being
    gathered, which is sent once no call has joined it for ``quiet`` seconds (the
    session schedules its judged work all at once, so that is one batch for all of it,
    later ones for what comes after: a reply retried, an answer from a target) or once
    it holds :data:`MAX_BATCH_REQUESTS` or :data:`MAX_BATCH_CHARACTERS`. A call whose
    result is missing or errored is made once live through the client; any other failure
    is a :class:`~pytest_rubric._llm.base.JudgeError` (the criterion is ERROR).
    """

    def __init__(
        self,
        client: HTTPClient,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        quiet: float = 0.5,
        first_poll: float = FIRST_POLL,
        max_poll: float = MAX_POLL,
    ) -> None:
        self.client = client
        self.timeout = timeout
        self.quiet = quiet
        self.first_poll = first_poll
        self.max_poll = max_poll
        self.batches = 0  # sent
        self.live = 0  # calls asked live after their batch
        self._ids = itertools.count()
        self._gathered: list[tuple[BatchRequest, asyncio.Future[BatchResult]]] = []
        self._characters = 0  # of the gathered calls' messages
        self._timer: asyncio.TimerHandle | None = None
        self._running: set[asyncio.Task[None]] = set()

    async def send(
        self,
        system: str,
        user: str,
        *,
        schema: dict[str, Any] | None = None,
        sampling: Sampling | None = None,
    ) -> Reply:
        """The reply to one judge call, through the next batch."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[BatchResult] = loop.create_future()
        request = BatchRequest(
            f"rubric-{next(self._ids)}", system, user, schema, sampling or Sampling()
        )
        self._gathered.append((request, future))
        self._characters += len(system) + len(user)
        if self._timer is not None:
            self._timer.cancel()
        full = self._characters >= MAX_BATCH_CHARACTERS
        if full or len(self._gathered) >= MAX_BATCH_REQUESTS:
            self._flush()
        else:
            self._timer = loop.call_later(self.quiet, self._flush)
        result = await future
        if isinstance(result, Reply):
            return result
        if not result.retry_live:
            raise JudgeError(result.reason)
        self.live += 1
        try:
            return await self.client.send(system, user, schema=schema, sampling=sampling)
        except BudgetSpent:
            raise  # the call did not start: the budget's own words, as for any call
        except JudgeError as exc:
            raise JudgeError(f"{exc} (asked live after: {result.reason})") from None

    async def aclose(self) -> None:
        """The run is over: cancel the batches still running (the provider's too, see
        :func:`run_batch`); the calls waiting for them fail."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        running = list(self._running)
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)

    def _flush(self) -> None:
        self._timer = None
        gathered, self._gathered = self._gathered, []
        self._characters = 0
        if gathered:
            self.batches += 1
            task = asyncio.get_running_loop().create_task(self._run(gathered))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _run(self, gathered: list[tuple[BatchRequest, asyncio.Future[BatchResult]]]) -> None:
        requests = [request for request, _ in gathered]
        results: dict[str, BatchResult]
        try:
            results = await run_batch(
                self.client,
                requests,
                timeout=self.timeout,
                first_poll=self.first_poll,
                max_poll=self.max_poll,
            )
        except JudgeError as exc:
            failure = BatchFailure(str(exc), retry_live=False)
            results = {r.custom_id: failure for r in requests}
        except asyncio.CancelledError:  # aclose: the run is over
            failure = BatchFailure(
                f"judge {self.client.spec.name}: the run ended before its batch did",
                retry_live=False,
            )
            for _, future in gathered:
                if not future.done():
                    future.set_result(failure)
            raise
        except Exception as exc:  # no call may be left waiting
            failure = BatchFailure(
                redact(
                    f"judge {self.client.spec.name}: the batch failed "
                    f"({type(exc).__name__}: {exc})",
                    self.client.key,
                ),
                retry_live=False,
            )
            results = {r.custom_id: failure for r in requests}
        for request, future in gathered:
            if not future.done():
                future.set_result(results[request.custom_id])
