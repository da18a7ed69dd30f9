"""The cached call: a judge cache read and written as ``--rubric-cache`` says, for any kind
of call, under a key that names the call and nothing else.

The key hashes everything that can change a verdict (provider, model, grader, template
version, the messages with the fence token masked, the schema, the sampling, the sample),
never a key, a header or the endpoint's URL: a cache recorded through one gateway replays
through another (such hits are counted, :attr:`CallStats.elsewhere`).

Modes: ``use`` reads and writes; ``refresh`` calls and overwrites; ``off`` ignores the
cache; ``replay`` makes no call, and a miss is an ERROR naming the criterion.
:class:`CachedCalls` applies them to every kind of call; :class:`CacheFile` is the store,
one SQLite file (WAL mode) shared by every process of a run.

Only replies that passed validation are stored (redacted, with the parsed verdict, tokens,
endpoint and time), and only within a live reply's cap, a target's answer too: a row above
it is never stored, and a miss when one is found (edited, copied in). A reply that did not
fit is never stored, but the reason is (table ``unusable``, and its recording's entry is
marked so): ``replay`` then replays the retry that followed it (see
:func:`~pytest_rubric.judge.strategies.ask`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._errors import LLMError
from .._guards.outgoing import outgoing, outgoing_data
from .._guards.secrets import MAX_TEXT, Secret, clip, public_url
from .base import CallStats, Reply, token_count
from .http import MAX_REPLY_BYTES

# A cache of this version holds these two tables (and SQLite's own sqlite_* objects), nothing
# else.
_TABLES = {
    "replies": (
        "key TEXT PRIMARY KEY",
        "provider TEXT NOT NULL",
        "model TEXT NOT NULL",
        "raw TEXT NOT NULL",
        "parsed TEXT NOT NULL",
        "tokens_in INTEGER NOT NULL DEFAULT 0",
        "tokens_out INTEGER NOT NULL DEFAULT 0",
        "created REAL NOT NULL",
        "endpoint TEXT",
    ),
    "unusable": ("key TEXT PRIMARY KEY", "reason TEXT NOT NULL", "created REAL NOT NULL"),
}
_SCHEMA = tuple(
    f"\nCREATE TABLE IF NOT EXISTS {table} (\n" + ",\n".join(f"    {c}" for c in columns) + "\n)\n"
    for table, columns in _TABLES.items()
)
# Each table's columns as PRAGMA table_info gives them: name, type, whether the key.
_COLUMNS = {
    table: tuple((c.split()[0], c.split()[1], int("PRIMARY KEY" in c)) for c in columns)
    for table, columns in _TABLES.items()
}
_OURS = {("table", name) for name in _COLUMNS}


class _Unusable(Exception):
    """The file is there but is not a pytest-rubric cache; the message says why."""


class CacheFile:
    """One SQLite file shared by every process of a run (xdist workers included).

    A cache only saves calls: no problem with it may stop a run or change a verdict. A file
    that is not this cache leaves it unusable (every lookup misses, the file is untouched); a
    row that cannot be read is a miss; a reply that cannot be stored is judged again next
    time. Each is reported once, by :meth:`take_warning`.
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

    @property
    def usable(self) -> bool:
        """Whether the file could be opened (else every lookup misses, and it said why once)."""
        return self._db is not None

    def _open(self, directory: Path) -> sqlite3.Connection:
        if directory.exists() and not directory.is_dir():
            raise _Unusable(f"{directory} is a file, not a folder")
        directory.mkdir(parents=True, exist_ok=True)
        _ignore(directory)
        if self.path.exists() and not self.path.is_file():
            raise _Unusable("it is not a regular file")
        db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        try:
            # Read before writing: a foreign file is never converted to WAL or given a table.
            _check_schema(db)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            for statement in _SCHEMA:
                db.execute(statement)
            db.commit()
        except BaseException:
            db.close()
            raise
        return db

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

    def fetch(self, key: str) -> Reply | None:
        """The stored reply for ``key`` with the tokens it cost when it was judged and the
        endpoint it was recorded against, or None."""
        # A stored row is held to a live reply's cap, a target's answer and trace too: a row
        # above it (edited, or copied in) is a miss, never read into memory.
        row = self._row(
            "SELECT raw, tokens_in, tokens_out, endpoint, parsed FROM replies WHERE key = ? "
            "AND length(CAST(raw AS BLOB)) <= ? AND IFNULL(length(CAST(parsed AS BLOB)), 0) <= ?",
            key,
            MAX_REPLY_BYTES,
            MAX_REPLY_BYTES,
        )
        # Only text is a reply: anything else in the column was not written by us.
        if row is None or not isinstance(row[0], str):
            return None
        return Reply(
            row[0],
            token_count(row[1]),
            token_count(row[2]),
            key=key,
            cached=True,
            # As it was stored (sanitized); again, for a file edited by hand: it is shown.
            endpoint=public_url(row[3]) if isinstance(row[3], str) else None,
            parsed=row[4] if isinstance(row[4], str) else None,
        )

    def unusable(self, key: str) -> str | None:
        """Why the last reply to ``key`` was not stored (it did not fit the protocol), or None:
        never recorded, or a usable reply is stored."""
        row = self._row("SELECT substr(reason, 1, ?) FROM unusable WHERE key = ?", MAX_TEXT, key)
        return row[0] if row is not None and isinstance(row[0], str) else None

    def _row(self, query: str, *parameters: object) -> tuple[Any, ...] | None:
        """The one row ``query`` finds, or None (none, or unreadable: a miss)."""
        with self._lock:
            if self._db is None:
                return None
            try:
                row: tuple[Any, ...] | None = self._db.execute(query, parameters).fetchone()
            except sqlite3.Error as exc:  # a corrupt page, text that is not UTF-8, a lock
                self._trouble("could not read a stored reply", exc)
                return None
        return row

    def put(
        self,
        key: str,
        *,
        provider: str,
        model: str,
        raw: str,
        parsed: Any,
        tokens: tuple[int, int] = (0, 0),
        endpoint: str | None = None,
    ) -> None:
        """Store a reply with its tokens (in, out) and endpoint (None: a user's own judge); it
        is now the last reply to ``key``, no longer unusable. A reply above the cap
        :meth:`fetch` holds rows to (a target's answer of megabytes) is not stored, and an
        older one under ``key`` is dropped: it would never be served. A failure is reported,
        never raised."""
        if self._db is None:  # closed, or never opened: nothing to write it through
            return
        try:
            stored = outgoing(raw, *self._secrets)  # the boundary text leaves the process by
            read = json.dumps(  # string by string, as _report.document.boundary says why
                outgoing_data(parsed, *self._secrets),
                default=lambda value: outgoing(str(value), *self._secrets),
            )
        except (ValueError, RecursionError) as exc:
            with self._lock:
                self._trouble("could not store a reply", exc)
            return
        if max(_size(stored), _size(read)) > MAX_REPLY_BYTES:
            self._write(("DELETE FROM replies WHERE key = ?", lambda: (key,)))
            return
        self._write(
            (
                "INSERT OR REPLACE INTO replies (key, provider, model, raw, parsed, tokens_in, "
                "tokens_out, created, endpoint) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                lambda: (key, provider, model, stored, read, *tokens, time.time(), endpoint),
            ),
            ("DELETE FROM unusable WHERE key = ?", lambda: (key,)),
        )

    def mark_unusable(self, key: str, reason: str) -> None:
        """Record that the last reply to ``key`` did not fit the protocol, and why (redacted,
        kept whole up to 2,000 characters: a replay feeds it back); the reply itself is never
        stored. A reply stored earlier under ``key`` (``--rubric-cache refresh``) is kept: it
        is still a good one."""
        self._write(
            (
                "INSERT OR REPLACE INTO unusable (key, reason, created) VALUES (?, ?, ?)",
                lambda: (key, outgoing(clip(reason, *self._secrets, limit=MAX_TEXT)), time.time()),
            )
        )

    def _write(self, *statements: tuple[str, Callable[[], tuple[Any, ...]]]) -> None:
        """Run ``statements`` (SQL, its parameters' function) in one transaction; a failure
        is reported once, never raised."""
        with self._lock:
            if self._db is None:
                return
            try:
                for sql, parameters in statements:
                    self._db.execute(sql, parameters())
                self._db.commit()
            except (sqlite3.Error, ValueError, RecursionError) as exc:  # a full disk
                with contextlib.suppress(sqlite3.Error):
                    self._db.rollback()
                self._trouble("could not store a reply", exc)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._db.close()
                self._db = None


def _check_schema(db: sqlite3.Connection) -> None:
    """Raise :class:`_Unusable` unless ``db`` is empty or holds this cache's tables alone (a
    cache an earlier, unreleased version wrote is not upgraded: the package keeps no shims
    before 1.0, and a cache only saves calls). A file that is not a database fails here
    (``sqlite3.DatabaseError``: reading the schema reads its first page)."""
    objects = db.execute("SELECT type, name FROM sqlite_master").fetchall()
    foreign = sorted(
        f"{kind} {name!r}"
        for kind, name in objects
        if (kind, name) not in _OURS and not str(name).startswith("sqlite_")
    )
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise _Unusable(f"it holds {shown}, which a pytest-rubric cache does not: not ours")
    for table in sorted({name for kind, name in objects if kind == "table"} & set(_COLUMNS)):
        info = db.execute(f"PRAGMA table_info({table})").fetchall()
        columns = tuple((name, str(kind).upper(), int(pk)) for _, name, kind, _, _, pk in info)
        if columns != _COLUMNS[table]:
            names = ", ".join(str(c[0]) for c in columns[:8])
            raise _Unusable(f"its {table} table has other columns ({names}): not ours")


def _ignore(directory: Path) -> None:
    """Give the cache folder a ``.gitignore`` of ``*``, as pytest does ``.pytest_cache``: the
    local cache is never what a team commits (``--rubric-recordings`` is)."""
    ignore = directory / ".gitignore"
    if not ignore.exists():
        with contextlib.suppress(OSError):  # a read-only checkout still runs
            ignore.write_text(
                "# Created by pytest-rubric automatically: the local judge cache, never "
                "committed.\n# Commit recordings instead (--rubric-recordings).\n*\n",
                encoding="utf-8",
            )


def _size(text: str) -> int:
    """The bytes ``text`` takes in the store (UTF-8), as ``length(CAST(... AS BLOB))`` counts."""
    return len(text.encode("utf-8", "surrogatepass"))


def _error_text(exc: BaseException) -> str:
    """An error's own words, without the exception's type name for OS errors."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc) or type(exc).__name__


def cache_key(**parts: Any) -> str:
    """A stable hash of the parts (JSON with sorted keys)."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class CachedCalls:
    """A :class:`CacheFile` read and written as ``--rubric-cache`` says, for any kind of call:
    :meth:`lookup` before it, :meth:`store` (or :meth:`unusable`) after; ``stats`` counts
    hits, misses and hits recorded against another endpoint."""

    def __init__(
        self, cache: CacheFile | None, mode: str = "use", *, stats: CallStats | None = None
    ) -> None:
        self.cache = None if mode == "off" else cache
        self.mode = mode
        self.stats = stats

    def lookup(
        self, parts: Mapping[str, Any], *, missing: str, endpoint: str | None = None
    ) -> Reply:
        """The stored reply for the call ``parts`` describe (``cached`` set), or an empty one
        carrying the key to store under. With ``replay`` a miss raises ``LLMError(missing)``,
        unless the last reply was unusable: the empty reply then says why (``unusable``)."""
        if self.cache is None:
            return Reply("")
        key = cache_key(**parts)
        if self.mode in ("use", "replay"):
            if (found := self.cache.fetch(key)) is not None:
                self.hit(found, endpoint)
                return found
            if self.stats is not None:
                self.stats.cache_misses += 1
            if self.mode == "replay":
                if (reason := self.cache.unusable(key)) is None:
                    raise LLMError(missing)
                return Reply("", key=key, cached=True, unusable=reason)
        return Reply("", key=key)

    def hit(self, found: Reply, endpoint: str | None = None) -> None:
        """Count a reply served without a call (a recording's too), and whether it was recorded
        against another endpoint than ``endpoint``."""
        if self.stats is not None:
            self.stats.cache_hits += 1
            self.stats.saved_in += found.tokens_in
            self.stats.saved_out += found.tokens_out
            if endpoint is not None and (recorded := found.endpoint) not in (None, endpoint):
                self.stats.elsewhere[recorded] = self.stats.elsewhere.get(recorded, 0) + 1

    def store(
        self, reply: Reply, *, provider: str, model: str, parsed: Any, endpoint: str | None = None
    ) -> None:
        """Keep ``reply`` (one :meth:`lookup` gave a key for, and not itself from the cache),
        recorded against ``endpoint`` (without userinfo or query string)."""
        if self.cache is not None and reply.key is not None and not reply.cached:
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
        if self.cache is not None and reply.key is not None and not reply.cached:
            self.cache.mark_unusable(reply.key, reason)
