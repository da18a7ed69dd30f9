"""Where a response under test comes from: the rubric file, a responses folder, a target
or a live model, apart from the judge.

:class:`Source` is one subject's answer to one case, however it is obtained (its
samples, with ``repeat``); :class:`LiveModel` (``--rubric-model``) asks a model each
case's question, or sends its conversation (``messages:``) as it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._base import RetryPolicy
from ._calls import CallRunner, CallTimeout, run_sync
from ._secrets import redact
from .judge.base import JudgeStats, Reply, Sampling
from .judge.cost import Budget, Price
from .judge.providers import JudgeSpec, known_keys, read_key

if TYPE_CHECKING:
    from ._schema import Case
    from .judge.cache import JudgeCache

__all__ = ["LiveModel", "Source", "fingerprint"]


@dataclass(frozen=True, slots=True)
class Source:
    """Where one subject's response to one case comes from."""

    text: str | None = None
    more: tuple[str, ...] = ()  # further samples of a responses file (`repeat`)
    target: Any = None
    target_name: str | None = None
    unavailable: str | None = None  # why there is no response
    timeout: float | None = None  # a user's target is bounded; a live model has its own
    runner: CallRunner | None = None  # what runs a bounded target
    live: bool = False  # the target is a live model (--rubric-model): it takes the sample index
    cache: Any = None  # a target's CachedCalls: its answers kept per sample index
    code: str = ""  # a fingerprint of the target's module: an edit there misses the cache

    @property
    def texts(self) -> tuple[str, ...]:
        """The responses written down (inline or in a responses file), one per sample."""
        return () if self.text is None else (self.text, *self.more)

    def fetch_samples(
        self, case: Any, *, repeat: int, concurrency: int
    ) -> tuple[list[str], None] | tuple[None, str]:
        """The response of each sample, or None and why one is missing.

        Written responses are the samples there are. A target or a live model
        is asked ``repeat`` times, at most ``concurrency`` calls at once.
        """
        if self.unavailable is not None:
            return None, self.unavailable
        if self.text is not None:
            return list(self.texts), None
        if repeat == 1:
            text, problem = self.fetch(case)
            return (None, problem or "no response") if text is None else ([text], None)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=max(1, min(repeat, concurrency))) as pool:
            fetched = list(
                pool.map(lambda i: self.fetch(case, sample=i, samples=repeat), range(repeat))
            )
        texts = []
        for index, (text, problem) in enumerate(fetched):
            if text is None:
                return None, f"sample {index + 1} of {repeat}: {problem}"
            texts.append(text)
        return texts, None

    def fetch(
        self, case: Any, *, sample: int = 0, samples: int = 1
    ) -> tuple[str, None] | tuple[None, str]:
        """The response text (of sample ``sample`` of ``samples``), or None and why there is none."""
        if self.unavailable is not None:
            return None, self.unavailable
        if self.text is not None:
            return self.text, None
        looked = None
        try:
            if self.live:
                value = self.target(case, sample=sample, samples=samples)
            else:
                if self.cache is not None:
                    looked = self.cache.lookup(
                        self._key(case, sample, samples),
                        missing=f"--rubric-cache replay: no cached answer of target "
                        f"{self.target_name} for case {getattr(case, 'id', '?')!r} (sample "
                        f"{sample + 1} of {samples}); run once with --rubric-cache use to record it",
                    )
                    if looked.cached:
                        return looked.text, None
                if self.runner is None or self.timeout is None:
                    value = run_sync(self.target(case))
                else:
                    value = self.runner.call(self.target, case, timeout=self.timeout)
        except CallTimeout as exc:
            return None, f"target {self.target_name} {exc}"
        except Exception as exc:
            return None, f"target {self.target_name} raised {type(exc).__name__}: {exc}"
        if not isinstance(value, str):
            return None, (
                f"target {self.target_name} returned {type(value).__name__}, "
                "not the response text; return a str"
            )
        if looked is not None:
            from .judge.base import Reply

            self.cache.store(
                Reply(value, key=looked.key),
                provider="target",
                model=self.target_name or "",
                parsed={"response": value},
            )
        return value, None

    def _key(self, case: Any, sample: int, samples: int) -> dict[str, Any]:
        """What a target's answer may depend on: its code, the whole case, the sample."""
        return {
            "kind": "target",
            "target": self.target_name,
            "code": self.code,
            "case": case.model_dump(mode="json"),
            "sample": sample,
            "samples": samples,
        }


def fingerprint(function: Any) -> str:
    """A hash of the source file that defines ``function`` ("" when there is none to read)."""
    import hashlib
    import inspect

    try:
        path = inspect.getsourcefile(function)
        data = Path(path).read_bytes() if path else b""
    except (OSError, TypeError):
        data = b""
    name = f"{getattr(function, '__module__', '')}:{getattr(function, '__qualname__', '')}"
    return hashlib.sha256(name.encode() + b"\0" + data).hexdigest()[:16]


class LiveModel:
    """``--rubric-model``: the subject is a model, asked each case's question live.

    Called with a case like a ``target``; each call gets its own client and
    event loop, so it works from any thread.

    Its answers go through the judge cache like verdicts do (same modes, the
    same :class:`~pytest_rubric.judge.cache.CachedCalls`): the key holds the
    provider, model, endpoint, both messages and the sampling parameters, so
    a committed cache replays a model's answers too.
    """

    SYSTEM = "Answer the question accurately and concisely."

    def __init__(
        self,
        spec: JudgeSpec,
        *,
        environ: Mapping[str, str] | None = None,
        policy: RetryPolicy | None = None,
        cache: JudgeCache | None = None,
        cache_mode: str = "use",
        price: Price | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.spec = spec
        self._environ = environ
        self._policy = policy
        from .judge.cache import CachedCalls  # sqlite3: only when a model answers

        self.stats = JudgeStats()  # only the tokens: what the model's answers cost
        self._cache = CachedCalls(cache, cache_mode)
        self._budget = budget
        if budget is not None and price is not None:
            stats = self.stats
            budget.add_source(lambda: stats.cost(price))
        # Fail now on a missing key; replay makes no call, so it needs none.
        read_key(spec, environ, require_key=cache_mode != "replay")

    @property
    def subject(self) -> str:
        return self.spec.model

    def __call__(self, case: Case, *, sample: int = 0, samples: int = 1) -> str:
        """The model's answer to ``case``: sample ``sample`` (0-based) of ``samples``.

        With ``repeat`` N > 1 each sample is its own call and its own cache entry:
        sampled (``Sampling.of``: temperature 0.7, its own seed) so the N answers are
        independent draws, and keyed by its index, so a warm rerun replays each one.
        A conversation is sent as it is, with no system turn of ours; a plain question
        keeps its key of old, so a committed cache still replays it.
        """
        turns = case.conversation
        question = case.question or ""
        sampling = Sampling.of(sample, samples)
        asked: dict[str, Any] = (
            {"messages": [list(turn) for turn in turns]}
            if turns is not None
            else {"system": self.SYSTEM, "user": question}
        )
        parts: dict[str, Any] = {
            "kind": "response",
            "judge": self.spec.name,
            "endpoint": self.spec.url,
            **asked,
            "sampling": sampling.as_dict(),
        }
        if samples > 1:
            parts["sample"] = sample
        looked = self._cache.lookup(
            parts,
            missing=f"--rubric-cache replay: no cached response of model {self.spec.name} for "
            f"case {getattr(case, 'id', '?')!r}"
            + (f" (sample {sample + 1} of {samples})" if samples > 1 else "")
            + "; run once with --rubric-cache use to record it",
        )
        if looked.cached:
            return looked.text
        if self._budget is not None:
            self._budget.admit()
        reply = asyncio.run(
            self._ask(turns or (("system", self.SYSTEM), ("user", question)), sampling)
        )
        self.stats.tokens_in += reply.tokens_in
        self.stats.tokens_out += reply.tokens_out
        # What the model under test says is kept and reported: never with a key in it.
        text = redact(reply.text, *known_keys(self._environ))
        self._cache.store(
            Reply(text, reply.tokens_in, reply.tokens_out, key=looked.key),
            provider=self.spec.provider,
            model=self.spec.model,
            parsed={"response": text},
        )
        return text

    async def _ask(self, turns: tuple[tuple[str, str], ...], sampling: Sampling) -> Reply:
        from .judge.clients import make_client  # httpx: only when a model is asked

        client = make_client(self.spec, environ=self._environ, policy=self._policy)
        try:
            return await client.chat(turns, sampling=sampling)
        finally:
            await client.aclose()
