"""Where a response under test comes from, when it is not in the rubric file.

:class:`LiveModel` (``--rubric-model``) asks a model each case's question, or sends its
conversation (``messages:``) as it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._base import RetryPolicy
from ._secrets import redact
from .judge.base import JudgeStats, Reply, Sampling
from .judge.cache import CachedCalls, JudgeCache
from .judge.cost import Budget, Price
from .judge.providers import JudgeSpec, known_keys, read_key

if TYPE_CHECKING:
    from ._schema import Case

__all__ = ["LiveModel"]


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
