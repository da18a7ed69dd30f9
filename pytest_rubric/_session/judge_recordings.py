"""The session's part of ``--rubric-recordings``: what was collected, what the run used, and
at the end, writing what was recorded, counting what no request used and, when asked after
a run that collected every rubric file, deleting it (as syrupy does for unused snapshots).

Under xdist the workers judge and the controller writes: each worker hands over what it
collected, used and recorded as plain data (:meth:`JudgeRecordings.state`), so no two
processes ever write one file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pytest

from .caches import Caches
from .items import is_rubric_item

if TYPE_CHECKING:
    from .._llm.recordings import Recordings

__all__ = ["JudgeRecordings"]


class JudgeRecordings:
    """What the run did with the recordings folder, and the line the summary shows."""

    def __init__(self, *, rootpath: Path, caches: Caches, prune: bool) -> None:
        self._rootpath = rootpath  # where a rubric file's recordings say it is
        self._prune = prune  # --rubric-recordings-prune
        self._caches = caches
        self.cases: set[str] = set()  # the recording files of the collected cases
        self.files: set[str] = set()  # the collected rubric files' node ids
        self.deselected = 0
        self.collection_errors = 0
        self.line: str | None = None  # for the terminal summary

    @property
    def store(self) -> Recordings | None:
        return self._caches.recordings()

    def collected(self, items: Sequence[pytest.Item]) -> None:
        if self.store is None:
            return
        from .._llm.recordings import location

        for item in items:
            parent = item.parent
            if parent is not None and is_rubric_item(item):
                self.files.add(parent.nodeid)
                self.cases.add(location(parent.nodeid, item.compiled.rubric.id))

    def state(self) -> dict[str, Any] | None:
        """What a worker hands the controller."""
        store = self.store
        if store is None:
            return None
        return {
            **store.state(),
            "cases": sorted(self.cases),
            "files": sorted(self.files),
            "deselected": self.deselected,
            "collection_errors": self.collection_errors,
        }

    def add_state(self, state: dict[str, Any]) -> None:
        store = self.store
        if store is None:
            return
        store.add_state(state)
        self.cases.update(state.get("cases", ()))
        self.files.update(state.get("files", ()))
        # Every worker collects the whole session: the most any one saw.
        self.deselected = max(self.deselected, int(state.get("deselected", 0)))
        self.collection_errors = max(self.collection_errors, int(state.get("collection_errors", 0)))

    def finish(self, selection: str | None) -> None:
        """The end of the run (the process that writes outputs): write, count, prune.
        ``selection``: why the run's command line did not collect every rubric file."""
        store = self.store
        if store is None:
            return
        store.flush()
        unused = store.unused(set(store.used) & self.cases)
        if selection is None and self.deselected:
            selection = "deselected items"
        if selection is None and self.collection_errors:
            selection = "rubric files that failed to load"
        if selection is None:
            unused.update(store.orphans(self.cases, self.files))
            unused.update(self._gone(store))
        count = sum(len(keys) for keys in unused.values())
        if self._prune:
            if selection is not None:
                self.line = (
                    f"recordings: not pruned: this run was a selection ({selection}); prune "
                    "after a run of every rubric file"
                    + (f" ({count} unused so far)" if count else "")
                )
            else:
                deleted = store.prune(unused)
                self.line = f"recordings: {deleted} unused deleted" if deleted else None
        elif count:
            self.line = (
                f"recordings: {count} unused; run with --rubric-recordings-prune to delete them"
            )

    def _gone(self, store: Recordings) -> dict[str, list[str]]:
        """Recording files whose rubric file no longer exists under the rootdir."""
        found: dict[str, list[str]] = {}
        root = self._rootpath
        if not store.directory.is_dir():
            return found
        for path in sorted(store.directory.rglob("*.json")):
            where = path.relative_to(store.directory).as_posix()
            rubric = unquote(where.rpartition("/")[0])
            if rubric and rubric not in self.files and not (root / rubric).exists():
                found[where] = store.unused([where]).get(where, ["(unreadable)"])
        return found
