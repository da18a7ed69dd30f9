"""Judge replies kept as text in the repository: one JSON file per rubric file and case.

``--rubric-recordings DIR`` keeps each reply the judge gave a case's requests in
``DIR/<rubric file node id>/<case id>.json``, under the request's hash (the judge
cache's key, :func:`~pytest_rubric._llm.cache.cache_key`)::

    {
      "3f2a...": {
        "judge": "openai:gpt-4o-mini",
        "reply": "{\\"reason\\": \\"...\\", \\"verdict\\": \\"MET\\"}",
        "tokens_in": 412,
        "tokens_out": 31
      }
    }

A reply that did not fit the protocol is never kept, but its request's entry is, marked with
why (``{"judge": ..., "unusable": "the reply contains no JSON object ..."}``), as the cache's
``unusable`` table marks it: ``--rubric-cache replay`` then feeds the same error back and
finds the retry's entry, or says the last reply was unusable.

Keys sorted, two-space indents, a trailing newline: re-recording one case changes one small
file a reviewer can read. A recording may come from another branch, so it is untrusted: a
file is read within limits (size, nesting, entries, each reply no larger than a live one),
its replies are validated as live ones are, and a file that cannot be read is named in the
ERROR of a replay that needed it, and never written over or deleted: it may hold another
branch's entries (a merge conflict left in it), so a run leaves it as it was and says so
(:attr:`Recordings.unreadable`). A path that goes through a symbolic link (a folder or a
file of the recordings that is one, committed on a branch) is such a file too: it may lead
anywhere, and writes stay inside the folder, so nothing is read, written or deleted through
it, and the run names the link once. The process that writes outputs writes the files
(:meth:`Recordings.flush`); xdist workers hand their share over (:meth:`Recordings.state`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import tempfile
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .._guards.limits import Limit, NotRegular, json_loads, read_text
from .._guards.outgoing import outgoing
from .._guards.secrets import MAX_TEXT, Secret, clip
from .base import Reply, token_count
from .http import MAX_REPLY_BYTES

MAX_FILE_BYTES = 16 * 1024 * 1024  # a case's file: many replies, each at most a live one's size
MAX_ENTRIES = 10_000
_KEY = re.compile(r"[0-9a-f]{64}")
CALIBRATION = "[calibration]"  # a name no case id can have ('[' breaks node ids)


def location(file: str, name: str) -> str:
    """``<file>/<name>.json``, the recording of case ``name`` of rubric file ``file`` (a node
    id), every part a plain file name: none may climb out of the recordings folder."""
    return "/".join([*(_plain(part) for part in file.split("/") if part), _plain(name) + ".json"])


def folder(file: str) -> str:
    """The folder of rubric file ``file``'s recordings (a node id; see :func:`location`)."""
    return location(file, "x").rpartition("/")[0]


# Bytes of a part of a recording's path, at most: file systems refuse names past 255, and a
# long id, percent-encoded (9 bytes a Chinese character), passes that.
_MAX_PART = 200


def _plain(part: str) -> str:
    if part in (".", ".."):
        return part.replace(".", "%2E")
    plain = quote(part, safe=" !#$&'()+,;=@[]^_`{}~-.")  # ASCII: a character is a byte
    if len(plain) <= _MAX_PART:
        return plain
    # Cut (never inside an escape), and told apart by a hash of the whole: the same each run.
    kept = re.sub("%[0-9A-F]?$", "", plain[: _MAX_PART - 17])
    return f"{kept}~{hashlib.sha256(part.encode()).hexdigest()[:16]}"


class Recordings:
    """The recordings folder: replies read on first use, new ones kept until :meth:`flush`."""

    def __init__(self, directory: Path, *, secrets: Iterable[Secret] = ()) -> None:
        self.directory = directory
        self._secrets = tuple(secrets)
        self._lock = threading.Lock()
        self._files: dict[str, dict[str, dict[str, Any]]] = {}  # as read from the folder
        self._problems: dict[str, str] = {}  # a file that cannot be read, and why
        self.new: dict[str, dict[str, dict[str, Any]]] = {}  # recorded in this process
        self.used: dict[str, set[str]] = {}  # the entries this run's requests found
        # A file flush or prune left as it was, as it cannot be read: this run's new entries
        # for it, not written (0: it was to be pruned).
        self.unreadable: dict[str, int] = {}

    def path(self, where: str) -> Path:
        return self.directory / where

    def shown(self, where: str = "") -> str:
        """The file (or the folder) as a message names it: relative to the working directory
        when it can."""
        path = self.path(where) if where else self.directory
        with contextlib.suppress(ValueError):
            return str(path.relative_to(Path.cwd()))
        return str(path)

    def problem(self, where: str) -> str | None:
        """Why the recording file ``where`` cannot be read, or None."""
        with self._lock:
            self._load(where)
            return self._problems.get(where)

    def fetch(self, where: str, key: str) -> Reply | None:
        """The recorded reply to request ``key`` in file ``where`` (``cached`` set; an empty
        one with ``unusable`` set when the last reply did not fit), or None; its entry is used:
        a request of the run has it, whether the run reads it or not."""
        with self._lock:
            if (entry := self.new.get(where, {}).get(key) or self._load(where).get(key)) is None:
                return None
            self.used.setdefault(where, set()).add(key)
        if "unusable" in entry:
            return Reply("", key=key, cached=True, unusable=entry["unusable"], recording=where)
        return Reply(
            entry["reply"],
            entry["tokens_in"],
            entry["tokens_out"],
            key=key,
            cached=True,
            recording=where,
        )

    def record(
        self, where: str, key: str, *, judge: str, reply: Reply, replace: bool = False
    ) -> None:
        """Keep ``reply`` (validated) as the recording of request ``key``; a reply already
        recorded stays unless ``replace`` (``--rubric-cache refresh``), an entry marked
        unusable never does."""
        entry = {
            "judge": judge,
            "reply": outgoing(reply.text, *self._secrets),
            "tokens_in": reply.tokens_in,
            "tokens_out": reply.tokens_out,
        }
        self._keep(where, key, entry, replace=replace)

    def mark_unusable(self, where: str, key: str, *, judge: str, reason: str) -> None:
        """Record that the last reply to request ``key`` did not fit the protocol, and why (as
        the cache does: redacted, kept whole up to 2,000 characters, as a replay feeds it
        back); a reply recorded earlier under ``key`` stays: it is still a good one."""
        reason = outgoing(clip(reason, *self._secrets, limit=MAX_TEXT))
        self._keep(where, key, {"judge": judge, "unusable": reason}, replace=False)

    def _keep(self, where: str, key: str, entry: dict[str, Any], *, replace: bool) -> None:
        with self._lock:
            self.used.setdefault(where, set()).add(key)
            kept = self._load(where).get(key)
            new = self.new.get(where, {}).get(key)
            if kept == entry or (not replace and any(e and "reply" in e for e in (kept, new))):
                return
            self.new.setdefault(where, {})[key] = entry

    def state(self) -> dict[str, Any]:
        """What a worker hands the controller: the entries it used and those it recorded."""
        with self._lock:
            return {
                "used": {where: sorted(keys) for where, keys in self.used.items()},
                "new": self.new,
            }

    def add_state(self, state: Mapping[str, Any]) -> None:
        """Fold a worker's :meth:`state` into this process's."""
        with self._lock:
            for where, keys in (state.get("used") or {}).items():
                self.used.setdefault(where, set()).update(keys)
            for where, entries in (state.get("new") or {}).items():
                self.new.setdefault(where, {}).update(entries)

    def _left_as_it_was(self, where: str, new: int) -> None:
        """Count file ``where``, which cannot be read, as left as it was with ``new`` entries
        of this run not written; a file under a symbolic link is counted as the link, which
        the summary names once however many files are under it."""
        blamed = self._link(where) or where
        self.unreadable[blamed] = self.unreadable.get(blamed, 0) + new

    def flush(self) -> None:
        """Write this run's entries into their files (merged with what each holds now, and
        replaced atomically); a file that cannot be read is left as it was (:attr:`unreadable`)."""
        with self._lock:
            for where, entries in sorted(self.new.items()):
                self._files.pop(where, None)  # read again: the file may have changed since
                self._problems.pop(where, None)
                kept = self._load(where)
                if where in self._problems:  # {} for what it holds: written, it would be lost
                    self._left_as_it_was(where, len(entries))
                    continue
                merged = {**kept, **entries}
                self._write(where, merged)
                self._files[where] = merged
            self.new = {}

    def unused(self, wheres: Iterable[str]) -> dict[str, list[str]]:
        """The entries of the files ``wheres`` that no request of the run used, by file."""
        with self._lock:
            found = {w: sorted(set(self._load(w)) - self.used.get(w, set())) for w in wheres}
        return {where: keys for where, keys in found.items() if keys}

    def orphans(self, kept: Iterable[str], rubric_files: Iterable[str]) -> dict[str, list[str]]:
        """Recording files of the rubric files ``rubric_files`` (node ids) that are not in
        ``kept`` (their case is gone), with their entries."""
        kept = set(kept)
        found = {}
        for file in rubric_files:
            home = folder(file)
            for path in sorted(self.path(home).glob("*.json")):
                if (where := f"{home}/{path.name}") not in kept:
                    with self._lock:
                        found[where] = sorted(self._load(where)) or ["(unreadable)"]
        return found

    def prune(self, unused: Mapping[str, Iterable[str]]) -> int:
        """Delete ``unused`` entries (a file left empty goes); how many were deleted. A file
        that cannot be read is left as it was (:attr:`unreadable`)."""
        deleted = 0
        with self._lock:
            for where, keys in unused.items():
                entries = dict(self._load(where))
                if where in self._problems:
                    self._left_as_it_was(where, 0)
                    continue
                gone = [key for key in keys if key in entries]
                for key in gone:
                    del entries[key]
                deleted += len(gone)
                if entries:
                    self._write(where, entries)
                else:
                    with contextlib.suppress(FileNotFoundError):
                        self.path(where).unlink()
                self._files[where] = entries
        return deleted

    def _link(self, where: str) -> str | None:
        """The first of ``where``'s paths (``evals``, ``evals/faq.rubric.yaml``, ... ``where``
        itself) that is a symbolic link, or None; the folder itself is the user's choice."""
        parts = where.split("/")
        for n in range(1, len(parts) + 1):
            prefix = "/".join(parts[:n])
            try:
                mode = os.lstat(self.path(prefix)).st_mode
            except OSError:  # absent (and so is all below it), or under a file
                return None
            if stat.S_ISLNK(mode):
                return prefix
        return None

    def _load(self, where: str) -> dict[str, dict[str, Any]]:
        """The entries of file ``where`` (read once); {} for none or an unreadable one (one
        under a symbolic link is never read)."""
        if where not in self._files and (link := self._link(where)) is not None:
            self._files[where] = {}
            self._problems[where] = (
                ("it is" if link == where else f"it is under {self.shown(link)},")
                + " a symbolic link, which may lead out of the recordings folder: nothing is "
                "read, written or deleted through one; put a folder or a file in its place"
            )
        if where not in self._files:
            try:
                self._files[where] = _read(self.path(where))
            except (FileNotFoundError, NotADirectoryError):  # no file (a parent is a file)
                self._files[where] = {}
            except (OSError, NotRegular, ValueError, Limit) as exc:
                self._files[where] = {}
                self._problems[where] = str(exc) or type(exc).__name__
        return self._files[where]

    def _write(self, where: str, entries: Mapping[str, Any]) -> None:
        path = self.path(where)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(dict(entries), indent=2, sort_keys=True, ensure_ascii=False)
        # A whole new file, then renamed over the old: a reader never sees half of one.
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as file:
                file.write(text + "\n")
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        self._problems.pop(where, None)


def _read(path: Path) -> dict[str, dict[str, Any]]:
    """A recording file's entries, checked; ``ValueError`` says what is wrong with it."""
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ValueError(f"it is larger than {MAX_FILE_BYTES:,} bytes")
    try:
        data, repeated = json_loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"it is not JSON (line {exc.lineno}: {exc.msg}); a merge conflict left in it?"
        ) from None
    except UnicodeDecodeError:
        raise ValueError("it is not UTF-8 text") from None
    if repeated:
        raise ValueError(f"it gives the key {repeated[0]!r} twice")
    if not isinstance(data, dict):
        raise ValueError('it is not a recording: expected {"<request hash>": {"reply": ...}}')
    if len(data) > MAX_ENTRIES:
        raise ValueError(f"it holds more than {MAX_ENTRIES:,} entries")
    checked = {}
    for key, entry in data.items():
        if not _KEY.fullmatch(key):
            raise ValueError(f"entry {key[:80]!r} is not a request's hash (64 hex digits)")
        if isinstance(entry, dict) and isinstance(entry.get("unusable"), str):
            # Fed back as a replay's error: held to what the cache keeps of a reason.
            reason = entry["unusable"][:MAX_TEXT]
            checked[key] = {"judge": str(entry.get("judge", "")), "unusable": reason}
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("reply"), str):
            raise ValueError(f'entry {key[:12]}... has no "reply" text (nor "unusable")')
        if len(entry["reply"].encode("utf-8", "surrogatepass")) > MAX_REPLY_BYTES:
            raise ValueError(
                f"entry {key[:12]}...'s reply is larger than {MAX_REPLY_BYTES:,} bytes, "
                "more than a live reply may be"
            )
        checked[key] = {
            "judge": str(entry.get("judge", "")),
            "reply": entry["reply"],
            "tokens_in": token_count(entry.get("tokens_in")),
            "tokens_out": token_count(entry.get("tokens_out")),
        }
    return checked
