"""A content-addressed cache of judge replies, in SQLite (WAL mode).

The key is a hash of everything that can change a verdict: provider, model,
endpoint, strategy (``--rubric-grader``), prompt template version, the full messages (with the
per-call fence token replaced by a placeholder, so the key is stable across
runs), the reply schema, the sampling parameters and the sample index.
Never the API key or any header.

Only replies that passed validation are stored, with the parsed verdict,
token usage and a timestamp: an error is never cached. A reply is stored
redacted of the API keys the cache was given (a judge may echo anything).

Modes (``--rubric-cache``): ``use`` reads and writes; ``refresh`` calls the
judge and overwrites; ``off`` ignores the cache; ``replay`` makes no network
call at all, and a miss is an ERROR naming the criterion. :class:`CachedCalls`
applies them, once for every kind of call: a judge's reply and a live
model's answer (``--rubric-model``) go through the same lookup and store.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._base import CACHE_MODES
from .._secrets import Secret, redact
from .base import JudgeError, JudgeStats, Reply

__all__ = ["CACHE_MODES", "CachedCalls", "JudgeCache", "cache_key"]

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


class _Unusable(Exception):
    """The file is there but is not a pytest-rubric cache; the message says why."""


class JudgeCache:
    """One SQLite file shared by every process of a run (xdist workers included).

    A cache only saves calls, so no problem with it may stop a run or change a
    verdict. A file that cannot be opened as this cache (not a database, a
    directory, another program's database, a first page that is corrupt)
    leaves the cache unusable: every lookup misses, nothing is written, and
    the file is left as it was. A row that cannot be read (a corrupt page) is
    a miss and the other rows still serve; a reply that cannot be stored (a
    full disk) is judged again next time. Each of these is reported once, by
    :meth:`take_warning`, for the session to show as a warning.
    """

    def __init__(self, directory: Path, *, secrets: Sequence[Secret] = ()) -> None:
        self._secrets = tuple(secrets)
        self.path = directory / "judge.sqlite3"
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._warning: str | None = None
        self._warned = False
        try:
            self._db = self._open(directory)
        except (OSError, sqlite3.Error, _Unusable) as exc:
            why = str(exc) if isinstance(exc, _Unusable) else _error_text(exc)
            culprit = directory if directory.exists() and not directory.is_dir() else self.path
            self._warning = (
                f"the judge cache {self.path} cannot be used ({why}); this run goes on without it. "
                f"Delete {culprit} to start a new cache (or set ini rubric_cache_dir to another "
                "folder), or pass --rubric-cache off"
            )

    def _open(self, directory: Path) -> sqlite3.Connection:
        if directory.exists() and not directory.is_dir():
            raise _Unusable(f"{directory} is a file, not a folder")
        directory.mkdir(parents=True, exist_ok=True)
        if self.path.exists() and not self.path.is_file():
            raise _Unusable("it is not a regular file")
        db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        try:
            # Read before writing anything: a foreign file is never converted to WAL
            # or given a table of ours.
            _check_schema(db)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(_SCHEMA)
            db.commit()
        except BaseException:
            db.close()
            raise
        return db

    @property
    def usable(self) -> bool:
        """Whether the file opened as this cache (a row may still fail to read)."""
        return self._db is not None

    def take_warning(self) -> str | None:
        """The first problem with the cache, once: later calls, and later problems, give None."""
        with self._lock:
            warning, self._warning = self._warning, None
            if warning is not None:
                self._warned = True
            return warning

    def _trouble(self, what: str, exc: Exception) -> None:
        """Remember a problem of a lookup or a write, to be reported once."""
        if not self._warned and self._warning is None:
            self._warning = (
                f"the judge cache {self.path} {what} ({_error_text(exc)}); the run goes on, "
                "judging what the cache cannot give. If this persists, delete the file to start "
                "a new cache, or pass --rubric-cache off"
            )

    def get(self, key: str) -> str | None:
        """The stored reply for ``key``, or None: not stored, or not readable (a miss)."""
        found = self.fetch(key)
        return found.text if found is not None else None

    def fetch(self, key: str) -> Reply | None:
        """The stored reply for ``key`` with the tokens it cost when it was judged, or None."""
        with self._lock:
            if self._db is None:
                return None
            try:
                row = self._db.execute(
                    "SELECT raw, tokens_in, tokens_out FROM replies WHERE key = ?", (key,)
                ).fetchone()
            except sqlite3.Error as exc:  # a corrupt page, text that is not UTF-8, a lock
                self._trouble("could not read a stored reply", exc)
                return None
        # Only text is a reply: anything else in the column was not written by us.
        if row is None or not isinstance(row[0], str):
            return None
        return Reply(row[0], _count(row[1]), _count(row[2]), key=key, cached=True)

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
        """Store a reply with the tokens it cost (in, out; 0 where the provider did not say).

        A failure is reported once and never raised: the verdict stands.
        """
        with self._lock:
            if self._db is None:
                return
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO replies "
                    "(key, provider, model, raw, parsed, tokens_in, tokens_out, created) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
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
            except (
                sqlite3.Error,
                ValueError,
                RecursionError,
            ) as exc:  # a full disk, a corrupt page
                with contextlib.suppress(sqlite3.Error):
                    self._db.rollback()
                self._trouble("could not store a reply", exc)

    def __len__(self) -> int:
        with self._lock:
            if self._db is None:
                return 0
            try:
                return int(self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0])
            except sqlite3.Error:
                return 0

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._db.close()
                self._db = None


class CachedCalls:
    """A :class:`JudgeCache` read and written as ``--rubric-cache`` says, for any kind of call.

    :meth:`lookup` before a call, :meth:`store` after it: the caller makes
    the call in between (in whatever event loop it has) and decides when a
    reply is fit to keep. ``stats``, when given, counts hits and misses.
    """

    def __init__(
        self, cache: JudgeCache | None, mode: str = "use", *, stats: JudgeStats | None = None
    ) -> None:
        self.cache = None if mode == "off" else cache
        self.mode = mode
        self.stats = stats

    def lookup(self, parts: Mapping[str, Any], *, missing: str) -> Reply:
        """The stored reply for the call ``parts`` describe (``cached`` set), or an empty one
        that carries the key to store under; with ``replay``, a miss raises
        :class:`JudgeError` with the message ``missing``."""
        if self.cache is None:
            return Reply("")
        key = cache_key(**parts)
        if self.mode in ("use", "replay"):
            found = self.cache.fetch(key)
            if found is not None:
                if self.stats is not None:
                    self.stats.cache_hits += 1
                    self.stats.saved_in += found.tokens_in
                    self.stats.saved_out += found.tokens_out
                return found
            if self.stats is not None:
                self.stats.cache_misses += 1
            if self.mode == "replay":
                raise JudgeError(missing)
        return Reply("", key=key)

    def store(self, reply: Reply, *, provider: str, model: str, parsed: Any) -> None:
        """Keep ``reply`` (one :meth:`lookup` gave a key for, and not itself from the cache)."""
        if self.cache is not None and reply.key is not None and not reply.cached:
            self.cache.put(
                reply.key,
                provider=provider,
                model=model,
                raw=reply.text,
                parsed=parsed,
                tokens=(reply.tokens_in, reply.tokens_out),
            )


# What a cache written by this version holds: its one table (and SQLite's own
# objects, named sqlite_*). Anything else means the file belongs to something else.
_COLUMNS = (
    ("key", "TEXT", 1),
    ("provider", "TEXT", 0),
    ("model", "TEXT", 0),
    ("raw", "TEXT", 0),
    ("parsed", "TEXT", 0),
    ("tokens_in", "INTEGER", 0),
    ("tokens_out", "INTEGER", 0),
    ("created", "REAL", 0),
)
_OURS = {("table", "replies")}


def _check_schema(db: sqlite3.Connection) -> None:
    """Raise :class:`_Unusable` unless ``db`` is empty or holds this cache's table alone.

    Reading the schema also reads the file's header and first page, so a file
    that is not a database fails here (as ``sqlite3.DatabaseError``).
    """
    objects = db.execute("SELECT type, name FROM sqlite_master").fetchall()
    foreign = sorted(
        f"{kind} {name!r}"
        for kind, name in objects
        if (kind, name) not in _OURS and not str(name).startswith("sqlite_")
    )
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise _Unusable(f"it holds {shown}, which a pytest-rubric cache does not: not ours")
    if ("table", "replies") in {(k, n) for k, n in objects}:
        columns = tuple(
            (name, str(kind).upper(), int(pk))
            for _, name, kind, _, _, pk in db.execute("PRAGMA table_info(replies)").fetchall()
        )
        if columns != _COLUMNS:
            names = ", ".join(str(c[0]) for c in columns[:8])
            raise _Unusable(f"its replies table has other columns ({names}): not ours")


def _count(value: object) -> int:
    """A stored token count, or 0 for anything that is not a plausible one."""
    return value if type(value) is int and 0 <= value <= 10**9 else 0


def _error_text(exc: BaseException) -> str:
    """An error's own words, without the exception's type name for OS errors."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc) or type(exc).__name__
