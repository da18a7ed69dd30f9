"""The session's cache file, one SQLite file for the judge's replies and, when asked, the
application's answers (``--rubric-cache``, ``--rubric-response-cache``); and its part of
``--rubric-recordings``: what was collected, what the run used, and at the end, writing what
was recorded, counting what no request used and, when asked after a run that collected every
rubric file, deleting it (as syrupy does for unused snapshots); a file it cannot read (a
merge conflict left in it) is neither written nor deleted, and the summary says so.

Under xdist the workers judge and the controller writes: each worker hands over what it
collected, used and recorded as plain data (:meth:`JudgeRecordings.state`), so no two
processes ever write one file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pytest

from .._guards.outgoing import rubric_warning, warn
from .._guards.secrets import known_keys
from .items import is_rubric_item

if TYPE_CHECKING:
    # Imported where used: a session without a judge or a cache never loads them.
    from .._llm.cache import CachedCalls, CacheFile
    from .._llm.recordings import Recordings


@dataclass(eq=False, kw_only=True)
class Caches:
    """Opens the cache file on first use, once for the judge and the response cache alike."""

    cache_dir: Path  # the judge's and the response cache's one file
    cache_mode: str  # --rubric-cache
    response_cache_mode: str  # --rubric-response-cache
    recordings_dir: Path | None  # --rubric-recordings
    config_warning: Callable[[Warning, int], None] | None  # None: another process warns
    _file: CacheFile | None = field(default=None, init=False)
    _responses: CachedCalls | None = field(default=None, init=False)
    _recordings: Recordings | None = field(default=None, init=False)

    def recordings(self) -> Recordings | None:
        """The judge's recordings folder (``--rubric-recordings``), or None."""
        if self._recordings is None and self.recordings_dir is not None:
            from .._llm.recordings import Recordings

            self._recordings = Recordings(self.recordings_dir, secrets=known_keys())
        return self._recordings

    def judge(self) -> CacheFile | None:
        """The judge's cache (opened on first use), or None with ``--rubric-cache off``."""
        return None if self.cache_mode == "off" else self._open()

    def responses(self) -> CachedCalls | None:
        """What the application's answers go through with ``--rubric-response-cache use`` or
        ``replay`` (the same file as the judge's, whatever ``--rubric-cache`` says); None
        without it: targets and models are then called on every run."""
        if self._responses is None and self.response_cache_mode != "off":
            from .._llm.cache import CachedCalls

            self._responses = CachedCalls(self._open(), self.response_cache_mode)
        return self._responses

    def _open(self) -> CacheFile:
        if self._file is None:
            from .._llm.cache import CacheFile  # no httpx: an xdist controller skips it

            self._file = CacheFile(self.cache_dir, secrets=known_keys())
            if (warning := self._file.take_warning()) is not None and self.config_warning:
                self.config_warning(rubric_warning(warning), 2)
        return self._file

    def warn_trouble(self) -> None:
        """A lookup or a write of the cache failed (in the judge's thread): warn, in the item."""
        if self._file is not None and (warning := self._file.take_warning()) is not None:
            warn(warning)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
            self._responses = None


@dataclass(eq=False)
class JudgeRecordings:
    """What the run did with the recordings folder, and the lines the summary shows."""

    store: Recordings
    rootpath: Path  # where a rubric file's recordings say it is
    prune: bool  # --rubric-recordings-prune
    # --rubric-target or --rubric-model: the rubric files' own subjects are not asked, so the
    # run is a selection of what the recordings hold.
    subjects_given: bool = False
    # The recording files of the collected cases, and of their rubric files' calibrations.
    cases: set[str] = field(default_factory=set)
    graded: set[str] = field(default_factory=set)  # of those graded with a judge at hand
    files: set[str] = field(default_factory=set)  # the collected rubric files' node ids
    deselected: int = 0
    collection_errors: int = 0
    line: str | None = None  # for the terminal summary

    def collected(self, items: Sequence[pytest.Item], *, calibrated: Iterable[str] = ()) -> None:
        """The collected ``items``, and the rubric files (node ids) with ``calibrated``
        examples: their calibration's recording is kept as a case's is."""
        from .._llm.recordings import CALIBRATION, location

        for item in items:
            if (parent := item.parent) is not None and is_rubric_item(item):
                self.files.add(parent.nodeid)
                self.cases.add(location(parent.nodeid, item.compiled.rubric.id))
        self.cases.update(location(file, CALIBRATION) for file in calibrated)

    def state(self) -> dict[str, Any]:
        """What a worker hands the controller."""
        return {
            **self.store.state(),
            "cases": sorted(self.cases),
            "graded": sorted(self.graded),
            "files": sorted(self.files),
            "deselected": self.deselected,
            "collection_errors": self.collection_errors,
        }

    def add_state(self, state: dict[str, Any]) -> None:
        self.store.add_state(state)
        self.cases.update(state.get("cases", ()))
        self.graded.update(state.get("graded", ()))
        self.files.update(state.get("files", ()))
        # Every worker collects the whole session: the most any one saw.
        self.deselected = max(self.deselected, int(state.get("deselected", 0)))
        self.collection_errors = max(self.collection_errors, int(state.get("collection_errors", 0)))

    def finish(self, selection: str | None) -> None:
        """The end of the run (the process that writes outputs): write, count, prune.
        ``selection``: why the run's command line did not collect every rubric file."""
        store = self.store
        store.flush()
        # A case whose requests used none of its entries (its judged criterion removed or
        # reworded) counts as much as one that used some; one not graded (deselected, the run
        # stopped, its target raised, no judge) is not judged by its entries.
        unused = store.unused((set(store.used) | self.graded) & self.cases)
        if selection is None and self.deselected:
            selection = "deselected items"
        if selection is None and self.collection_errors:
            selection = "rubric files that failed to load"
        if selection is None and self.subjects_given:
            selection = "subjects from the command line"
        if selection is None:
            unused.update(store.orphans(self.cases, self.files) | self._gone(store))
        count = sum(len(keys) for keys in unused.values())
        if self.prune:
            if selection is not None:
                self.line = (
                    f"recordings: not pruned: this run was a selection ({selection}); prune "
                    "after a run of every rubric file"
                    + (f" ({count} unused so far)" if count else "")
                )
            else:
                deleted = store.prune(unused)
                self.line = f"recordings: {deleted} unused deleted" if deleted else None
        elif count and selection is not None:  # entries of the items left out count here
            self.line = (
                f"recordings: {count} not used by this run, a selection ({selection}); a run "
                "of every rubric file says which are unused"
            )
        elif count:
            self.line = (
                f"recordings: {count} unused; run with --rubric-recordings-prune to delete them"
            )

    @property
    def warnings(self) -> list[str]:
        """For the summary: a line for each recording file the run could not read, and so
        left as it was (said even when writing another file failed)."""
        store = self.store
        return [_left(store, where, new) for where, new in sorted(store.unreadable.items())]

    def _gone(self, store: Recordings) -> dict[str, list[str]]:
        """Recording files whose rubric file no longer exists under the rootdir."""
        from .._llm.recordings import folder

        found: dict[str, list[str]] = {}
        exists = dict.fromkeys((folder(file) for file in self.files), True)  # by folder, once
        for path in sorted(store.directory.rglob("*.json")):
            where = path.relative_to(store.directory).as_posix()
            rubric = where.rpartition("/")[0]
            if not rubric:
                continue
            if rubric not in exists:
                exists[rubric] = self._exists(rubric)
            if exists[rubric]:
                continue
            if store.problem(where) is not None:
                found[where] = ["(unreadable)"]  # counted, and left as it was by a prune
            else:
                found.update(store.unused([where]))
        return found

    def _exists(self, rubric: str) -> bool:
        """Whether a path under the rootdir has ``rubric`` for its recordings folder: the names
        found there are named forward, as :func:`~pytest_rubric._llm.recordings.location`
        names them, since a part cut short (a hash in place of its end) cannot be read back.
        A folder that cannot be read is never taken for deleted."""
        from .._llm.recordings import folder

        # Named whole first, in any letter case where the file system ignores it.
        try:
            if (self.rootpath / unquote(rubric)).exists():
                return True
        except OSError:
            return True
        path = self.rootpath
        for part in rubric.split("/"):
            try:
                names = {folder(name): name for name in (os.pardir, *os.listdir(path))}
            except (FileNotFoundError, NotADirectoryError):
                return False
            except OSError:
                return True
            if (name := names.get(part)) is None:
                return False
            path /= name
        return True


def _left(store: Recordings, where: str, new: int) -> str:
    """What a run says of a recording file it could not read and so left as it was."""
    entries = "entry" if new == 1 else "entries"
    return (
        f"recordings: warning: {store.shown(where)} cannot be read ({store.problem(where)}): "
        "left as it was, "
        + (f"this run's {new} new {entries} for it not written" if new else "not pruned")
        + "; resolve a merge conflict left in it, or fix or delete the file, then run again"
    )
