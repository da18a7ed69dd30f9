"""The cached call: a judge cache read and written as ``--rubric-cache`` says, for any kind
of call, under a key that names the call and nothing else.

The key is a hash of everything that can change a verdict: provider, model,
strategy (``--rubric-grader``), prompt template version, the full messages (with the
per-call fence token replaced by a placeholder, so the key is stable across
runs), the reply schema, the sampling parameters and the sample index.
Never the API key or any header, and never the endpoint's URL: the same
request to the same model through another gateway is the same call, so a
cache recorded through one replays through another. A hit recorded against
another endpoint is counted (:attr:`JudgeStats.elsewhere`). Rows an
earlier version wrote had the endpoint in their key and none in the row:
:meth:`CachedCalls.lookup` finds them under that key too (``legacy``), so a
committed cache still replays through the URL it was recorded against.

Modes (``--rubric-cache``): ``use`` reads and writes; ``refresh`` calls the
judge and overwrites; ``off`` ignores the cache; ``replay`` makes no network
call at all, and a miss is an ERROR naming the criterion. :class:`CachedCalls`
applies them, once for every kind of call: a judge's reply and a live
model's answer (``--rubric-model``) go through the same lookup and store. The
store itself, SQLite, is :mod:`.cache_store`'s.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from .._defaults import CACHE_MODES
from .base import JudgeError, JudgeStats, Reply
from .cache_store import JudgeCache

__all__ = ["CACHE_MODES", "CachedCalls", "JudgeCache", "cache_key"]


def cache_key(**parts: Any) -> str:
    """A stable hash of the parts (JSON with sorted keys)."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class CachedCalls:
    """A :class:`JudgeCache` read and written as ``--rubric-cache`` says, for any kind of call.

    :meth:`lookup` before a call, :meth:`store` after it (or :meth:`unusable`,
    for a reply that did not fit): the caller makes the call in between (in
    whatever event loop it has) and decides when a reply is fit to keep.
    ``stats``, when given, counts hits and misses, and the hits recorded
    against another endpoint.
    """

    def __init__(
        self, cache: JudgeCache | None, mode: str = "use", *, stats: JudgeStats | None = None
    ) -> None:
        self.cache = None if mode == "off" else cache
        self.mode = mode
        self.stats = stats

    def lookup(
        self,
        parts: Mapping[str, Any],
        *,
        missing: str,
        endpoint: str | None = None,
        legacy: Mapping[str, Any] | None = None,
    ) -> Reply:
        """The stored reply for the call ``parts`` describe (``cached`` set), or an empty one
        that carries the key to store under; with ``replay``, a miss raises
        :class:`JudgeError` with the message ``missing``, unless the last reply was unusable:
        then the empty reply says why (``unusable``), for the caller to replay that.

        ``endpoint`` is where the call would go (without userinfo or query string): a hit
        recorded against another one is counted. ``legacy`` is the call as an earlier
        version keyed it (with its endpoint URL): looked up when ``parts`` miss.
        """
        if self.cache is None:
            return Reply("")
        key = cache_key(**parts)
        if self.mode in ("use", "replay"):
            found = self.cache.fetch(key)
            if found is None and legacy is not None:
                # Keyed by the URL the call goes to now: recorded against this endpoint.
                found = self.cache.fetch(cache_key(**legacy))
                found = replace(found, endpoint=endpoint) if found is not None else None
            if found is not None:
                if self.stats is not None:
                    self.stats.cache_hits += 1
                    self.stats.saved_in += found.tokens_in
                    self.stats.saved_out += found.tokens_out
                    recorded = found.endpoint
                    if recorded is not None and endpoint is not None and recorded != endpoint:
                        elsewhere = self.stats.elsewhere
                        elsewhere[recorded] = elsewhere.get(recorded, 0) + 1
                return found
            if self.stats is not None:
                self.stats.cache_misses += 1
            if self.mode == "replay":
                reason = self.cache.unusable(key)
                if reason is None:
                    raise JudgeError(missing)
                return Reply("", key=key, cached=True, unusable=reason)
        return Reply("", key=key)

    def store(
        self,
        reply: Reply,
        *,
        provider: str,
        model: str,
        parsed: Any,
        endpoint: str | None = None,
    ) -> None:
        """Keep ``reply`` (one :meth:`lookup` gave a key for, and not itself from the cache),
        recorded against ``endpoint`` (without userinfo or query string)."""
        if self._recordable(reply):
            assert self.cache is not None and reply.key is not None
            self.cache.put(
                reply.key,
                provider=provider,
                model=model,
                raw=reply.text,
                parsed=parsed,
                tokens=(reply.tokens_in, reply.tokens_out),
                endpoint=endpoint,
            )

    def unusable(self, reply: Reply, reason: str) -> None:
        """Record that ``reply`` (one :meth:`lookup` gave a key for) did not fit, and why: it
        is not stored, but ``replay`` can then say so."""
        if self._recordable(reply):
            assert self.cache is not None and reply.key is not None
            self.cache.mark_unusable(reply.key, reason)

    def _recordable(self, reply: Reply) -> bool:
        return self.cache is not None and reply.key is not None and not reply.cached
