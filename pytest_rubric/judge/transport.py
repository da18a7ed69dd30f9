"""How judge calls are made for a whole run: one event loop, one concurrency bound, one cache.

A :class:`Transport` owns an event loop in a background thread and the client. A built-in
client takes a slot per HTTP attempt (see :mod:`~pytest_rubric._llm.http`); a user's client
holds one for its whole call, bounded by ``--rubric-judge-timeout``. :meth:`Transport.call`
is the one way a prompt reaches the judge: through the cache and the recordings, counted,
and with whatever a client raises turned into :class:`~pytest_rubric._errors.LLMError`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import dataclasses
import inspect
import threading
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from .._errors import BudgetSpent, LLMError
from .._guards.calls import contained, described, plain
from .._guards.secrets import Secret, known_keys, redact, shorten
from .._llm.base import CallStats, Reply, Sampling
from .._llm.cache import CachedCalls, CacheFile, cache_key
from .._llm.cost import Budget, Price
from .._llm.http import HTTPClient
from . import prompts
from .prompts import Prompt
from .replies import ReplyError

if TYPE_CHECKING:
    from .._llm.batch import BatchQueue
    from .._llm.recordings import Recordings


T = TypeVar("T")

# How much of a recorded unusable reply's reason a replay's ERROR quotes.
_SHOWN = 300


class UnusableReplay(ReplyError):
    """``--rubric-cache replay``: the last reply to this call did not fit. Its text is the
    reason recorded (a retry feeds back the same words); ``message`` is the ERROR's."""

    def __init__(self, reason: str, *, message: str) -> None:
        super().__init__(reason)
        self.message = message


class Transport:
    """A background event loop, a concurrency bound, a client, usage counts and the cache."""

    def __init__(
        self,
        client: Any,
        *,
        name: str,
        strategy: str,
        concurrency: int = 8,
        cache: CacheFile | None = None,
        cache_mode: str = "use",
        votes: int = 1,
        timeout: float = 60.0,
        price: Price | None = None,
        budget: Budget | None = None,
        recordings: Recordings | None = None,
    ) -> None:
        self.client = client
        # --rubric-recordings: a call's file is set around the answer it judges (recorded()).
        self.recordings = recordings
        self._recording: contextvars.ContextVar[str | None] = contextvars.ContextVar(
            "pytest_rubric_recording", default=None
        )
        self._misfits: dict[str, str] = {}  # a recording file whose reply did not fit, and why
        self.name = name
        self.strategy = strategy  # part of every cache key: the same prompt under another strategy
        self.votes = votes
        self.timeout = timeout  # a user's client gets --rubric-judge-timeout for its whole call
        self._builtin = isinstance(client, HTTPClient)
        # A built-in client's PROVIDER:MODEL and URL, and where its calls go as the cache
        # records it (no userinfo, no query string); None for a user's own judge.
        self.spec = getattr(client, "spec", None)
        self.endpoint = self.spec.public_url if self.spec is not None else None
        self.stats = client.stats if self._builtin else CallStats()
        self.cache = CachedCalls(cache, cache_mode, stats=self.stats)
        self.budget = budget
        self.price = price
        if budget is not None and price is not None:
            stats = self.stats
            budget.add_source(lambda: stats.cost(price))
        # Whatever a judge raises or replies is redacted of its key and the providers' keys.
        key = getattr(client, "key", None)
        self.secrets: list[Secret] = [key] if isinstance(key, Secret) else []
        self.secrets += known_keys()
        self._loop = asyncio.new_event_loop()
        self._semaphore = asyncio.Semaphore(concurrency)
        self._released = asyncio.Condition()  # a batched call's hold (see call)
        if self._builtin:
            client.limiter = self._semaphore
            if budget is not None:
                client.admit = budget.admit  # checked when a call gets its slot
        # --rubric-judge-batch: what a built-in client's calls are sent through instead.
        self.batch: BatchQueue | None = None
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="pytest-rubric-judge", daemon=True
        )
        self._thread.start()

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def close(self) -> None:
        if not self._loop.is_closed():
            if self.batch is not None:  # first: cancelling a batch still needs the client
                with contextlib.suppress(Exception):
                    self.submit(self.batch.aclose()).result(timeout=15)
            if (aclose := getattr(self.client, "aclose", None)) is not None:
                with contextlib.suppress(Exception):  # closing must never fail a run
                    self.submit(aclose()).result(timeout=5)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            self._loop.close()

    async def recorded(self, where: str | None, coroutine: Coroutine[Any, Any, T]) -> T:
        """Await ``coroutine`` with its judge calls' replies recorded in file ``where``."""
        token = self._recording.set(where)
        try:
            return await coroutine
        finally:
            self._recording.reset(token)

    def _recorded_reply(self, digest: str) -> Reply | None:
        """The reply recorded for the call ``digest`` names, counted as a cache hit; with
        ``replay``, one whose last reply was unusable too (``unusable`` set, a miss), as the
        cache gives it: ``use`` asks the judge again."""
        where = self._recording.get()
        if self.recordings is None or where is None:
            return None
        found = self.recordings.fetch(where, digest)  # used, whether read or not
        if found is None or self.cache.mode not in ("use", "replay"):
            return None
        if found.unusable is None:
            self.cache.hit(found)
        elif self.cache.mode == "use":
            return None
        else:
            self.stats.cache_misses += 1
        return found

    def _missing(self, label: str) -> str:
        """What a replay that finds no reply says: where it looked and what records it."""
        where = self._recording.get()
        if self.recordings is None or where is None:
            file = self.cache.cache
            why = (
                f"the judge cache {file.path} cannot be used (see its warning)"
                if file is not None and not file.usable
                else "it was never recorded"
            )
            return (
                f"--rubric-cache replay: no cached reply of judge {self.name} for "
                f"{label or 'this call'}: {why}; run once with --rubric-cache use "
                "(and a judge) to record it, with --rubric-recordings DIR to commit it"
            )
        problem = self.recordings.problem(where)
        if (misfit := self._misfits.get(where)) is not None:
            problem = f"a reply it holds did not fit the protocol: {shorten(misfit, _SHOWN)}"
        return (
            f"--rubric-cache replay: no recorded reply of judge {self.name} for "
            f"{label or 'this call'} in {self.recordings.shown(where)}"
            + (f" (the file cannot be read: {problem})" if problem else "")
            + "; record it with `pytest --rubric-cache use --rubric-recordings "
            f"{self.recordings.shown()}` (and a judge), and commit the file"
        )

    async def call(
        self, prompt: Prompt, *, feedback: str = "", label: str = "", vote: int = 0
    ) -> Reply:
        """One judge call under the concurrency bound, through the cache (an uncached one only
        while ``--rubric-max-cost`` is not spent); :class:`UnusableReplay` for a replayed call
        whose last reply was unusable."""
        user = prompt.user + feedback
        key = self._key(prompt, user, vote)
        digest = cache_key(**key)
        looked = self._recorded_reply(digest)
        if looked is None:
            looked = self.cache.lookup(key, missing=self._missing(label), endpoint=self.endpoint)
        if looked.unusable is not None:
            why = shorten(looked.unusable, _SHOWN, *self.secrets)
            raise UnusableReplay(
                looked.unusable,
                message=f"--rubric-cache replay: the last reply of judge {self.name} to "
                f"{label or 'this call'} was unusable ({why}); it is never stored: fix the "
                "judge or the prompt, then record again with --rubric-cache use",
            )
        if looked.cached:
            return looked  # free: served whatever the budget
        if self.budget is None:
            return dataclasses.replace(await self._complete(prompt, user, vote), key=looked.key)
        # A batched call's tokens are counted when its batch ends: till then it holds what its
        # prompt costs (4 characters a token), and a call the holds keep out waits (Budget.admit).
        hold, budget = 0.0, self.budget
        if self.batch is not None and self.price is not None:
            hold = self.price.cost((len(prompt.system) + len(user)) // 4, 0)
        async with self._released:  # no wait for a slot once the budget is spent
            await self._released.wait_for(lambda: budget.admit(hold))
        try:
            reply = await self._complete(prompt, user, vote)
        finally:
            self.budget.release(hold)
            async with self._released:
                self._released.notify_all()
        return dataclasses.replace(reply, key=looked.key)

    def store(self, reply: Reply, parsed: Any) -> None:
        """Keep a reply that passed validation (never an error, never a partial one)."""
        self.cache.store(
            reply,
            provider=self.spec.provider if self.spec is not None else "custom",
            model=self.spec.model if self.spec is not None else self.name,
            parsed=parsed,
            endpoint=self.endpoint,
        )
        where = self._recording.get()
        if self.recordings is None or where is None or reply.key is None:
            return
        if (mode := self.cache.mode) in ("use", "refresh"):
            self.recordings.record(
                where,
                reply.key,
                judge=self.name,
                reply=reply,
                replace=mode == "refresh",
            )

    def unusable(self, reply: Reply, reason: str) -> None:
        """Record that a reply did not fit the protocol, and why (the reply is never kept)."""
        self.cache.unusable(reply, reason)
        if reply.recording is not None:  # never a reply of the local cache: no file held it
            self._misfits[reply.recording] = reason
        where = self._recording.get()
        if self.recordings is None or where is None or reply.key is None or reply.cached:
            return
        if self.cache.mode in ("use", "refresh"):  # as store(): replay finds the retry's entry
            self.recordings.mark_unusable(where, reply.key, judge=self.name, reason=reason)

    def _key(self, prompt: Prompt, user: str, vote: int) -> dict[str, Any]:
        """Everything that can change the verdict, and nothing of where the call goes (the
        provider and model are in ``judge``); the per-call fence token is masked."""
        return {
            "judge": self.spec.name if self.spec is not None else self.name,
            "grader": self.strategy,
            "template": prompts.TEMPLATE_VERSION,
            "system": prompt.system.replace(prompt.token, "{TOKEN}"),
            "user": user.replace(prompt.token, "{TOKEN}"),
            "schema": prompt.schema if self._builtin else None,
            "sampling": dataclasses.asdict(Sampling.of(vote, self.votes)),
            "sample": vote,  # the key's name kept: replies recorded before are found
        }

    async def _complete(self, prompt: Prompt, user: str, vote: int) -> Reply:
        self.stats.calls += 1  # one per judge call, whatever its retries
        try:
            if self._builtin:
                # No slot here: the client takes one per attempt.
                send = self.client.send if self.batch is None else self.batch.send
                return await send(
                    prompt.system,
                    user,
                    schema=prompt.schema,
                    sampling=Sampling.of(vote, self.votes),
                )
            # A user's client retries as it likes: its whole call holds the slot.
            async with self._semaphore:
                if self.budget is not None:
                    self.budget.admit()
                text = await self._user_complete(prompt.system, user)
        except BudgetSpent:
            self.stats.calls -= 1  # it never started
            raise
        except TimeoutError:
            self.stats.errors += 1
            raise LLMError(
                f"judge {self.name} gave no reply within {self.timeout:g} s "
                "(--rubric-judge-timeout)"
            ) from None
        except LLMError:
            self.stats.errors += 1
            raise
        except Exception as exc:  # a user's client: its failure is ERROR, not a crash
            self.stats.errors += 1
            raise LLMError(
                redact(f"judge {self.name} raised {described(exc)}", *self.secrets)
            ) from None
        if not isinstance(text, str):
            raise LLMError(f"judge {self.name} returned {type(text).__name__}, not the reply text")
        return Reply(text)

    async def _user_complete(self, system: str, user: str) -> Any:
        """A user's ``complete(system, user)``, bounded by ``--rubric-judge-timeout``; whatever
        it raises (``SystemExit`` too, see ``_guards.calls.contained``) is an
        :class:`Exception` here, but a cancellation of this call itself still cancels."""
        deadline = time.monotonic() + self.timeout
        try:
            text = self.client.complete(system, user)
            if inspect.isawaitable(text):  # a plain function is fine too
                async with asyncio.timeout(self.timeout):
                    text = await text
            return plain(text)  # a str subclass's own methods never read the verdict
        except asyncio.CancelledError as raised:
            if (task := asyncio.current_task()) is not None and task.cancelling():
                raise  # ours: the call is being cancelled
            kept = await asyncio.to_thread(contained, raised, deadline=deadline)
        except BaseException as raised:
            if isinstance(raised, KeyboardInterrupt):
                raise
            # Printed off the loop, within the call's bound: a str that blocks holds no call.
            kept = await asyncio.to_thread(contained, raised, deadline=deadline)
            if kept is raised:
                raise
        raise kept


class OnJudgeLoop:
    """The ``rubric_judge`` fixture's client: ``complete`` runs on the transport's loop (its
    HTTP connections' and bound's), awaited from any test's (pytest-asyncio's, asyncio.run's);
    the rest is the client's."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    async def complete(self, system: str, user: str) -> str:
        call = self._transport._user_complete(system, user)  # bounded, as the grader's calls
        return await asyncio.wrap_future(self._transport.submit(call))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport.client, name)
