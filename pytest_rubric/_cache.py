"""A content-addressed cache of judge replies, in SQLite (WAL mode).

The key is a hash of everything that can change a verdict: provider, model,
endpoint, grader mode, prompt template version, the full messages (with the
per-call fence token replaced by a placeholder, so the key is stable across
runs), the reply schema, the sampling parameters and the sample index.
Never the API key or any header.

Only replies that passed validation are stored, with the parsed verdict,
token usage and a timestamp: an error is never cached. A reply is stored
redacted of the API keys the cache was given (a judge may echo anything).

Modes (``--rubric-cache``): ``use`` reads and writes; ``refresh`` calls the
judge and overwrites; ``off`` ignores the cache; ``replay`` makes no network
call at all, and a miss is an ERROR naming the criterion.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._base import CACHE_MODES
from ._secrets import Secret, redact

__all__ = ["CACHE_MODES", "JudgeCache", "cache_key"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    raw TEXT NOT NULL,
    parsed TEXT NOT NULL,
    tokens_in INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL
)
"""


def cache_key(**parts: Any) -> str:
    """A stable hash of the parts (JSON with sorted keys)."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class JudgeCache:
    """One SQLite file shared by every process of a run (xdist workers included)."""

    def __init__(self, directory: Path, *, secrets: Sequence[Secret] = ()) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._secrets = tuple(secrets)
        self.path = directory / "judge.sqlite3"
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
            self._db.commit()

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT raw FROM replies WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def put(
        self,
        key: str,
        *,
        provider: str,
        model: str,
        raw: str,
        parsed: Any,
        tokens: tuple[int, int] = (0, 0),
    ) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    provider,
                    model,
                    redact(raw, *self._secrets),
                    redact(json.dumps(parsed, default=str), *self._secrets),
                    tokens[0],
                    tokens[1],
                    time.time(),
                ),
            )
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
