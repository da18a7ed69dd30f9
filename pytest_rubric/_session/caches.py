"""The session's cache file: one SQLite file for the judge's replies and, when asked, the
application's answers (``--rubric-cache``, ``--rubric-response-cache``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .._guards.outgoing import rubric_warning, warn

if TYPE_CHECKING:
    # Imported where used: a session without a judge or a cache never loads them.
    from .._llm.cache import CachedCalls, CacheFile
    from .._llm.recordings import Recordings

__all__ = ["Caches"]


class Caches:
    """Opens the cache file on first use, once for the judge and the response cache alike."""

    def __init__(
        self,
        *,
        cache_dir: Path,
        cache_mode: str,
        response_cache_mode: str,
        recordings_dir: Path | None,
        config_warning: Callable[[Warning, int], None] | None,
    ) -> None:
        self._cache_dir = cache_dir  # the judge's and the response cache's one file
        self._cache_mode = cache_mode  # --rubric-cache
        self._response_cache_mode = response_cache_mode  # --rubric-response-cache
        self._recordings_dir = recordings_dir  # --rubric-recordings
        self._warn = config_warning  # the run's warnings (None: another process gives them)
        self._file: CacheFile | None = None
        self._judge: CacheFile | None = None
        self._responses: CachedCalls | None = None
        self._recordings: Recordings | None = None

    def recordings(self) -> Recordings | None:
        """The judge's recordings folder (``--rubric-recordings``), or None."""
        directory = self._recordings_dir
        if self._recordings is None and directory is not None:
            from .._guards.secrets import known_keys
            from .._llm.recordings import Recordings

            self._recordings = Recordings(directory, secrets=known_keys())
        return self._recordings

    def judge(self) -> CacheFile | None:
        """The judge's cache (opened on first use), or None with ``--rubric-cache off``."""
        if self._judge is None and self._cache_mode != "off":
            self._judge = self._open()
        return self._judge

    def responses(self) -> CachedCalls | None:
        """What the application's answers go through with ``--rubric-response-cache use`` or
        ``replay`` (the same file as the judge's, whatever ``--rubric-cache`` says); None
        without it: targets and models are then called on every run."""
        mode = self._response_cache_mode
        if self._responses is None and mode != "off":
            from .._llm.cache import CachedCalls

            self._responses = CachedCalls(self._open(), mode)
        return self._responses

    def _open(self) -> CacheFile:
        if self._file is None:
            from .._guards.secrets import known_keys  # no httpx: an xdist controller skips it
            from .._llm.cache import CacheFile

            self._file = CacheFile(self._cache_dir, secrets=known_keys())
            warning = self._file.take_warning()
            if warning is not None and self._warn is not None:
                self._warn(rubric_warning(warning), 2)
        return self._file

    def warn_trouble(self) -> None:
        """A lookup or a write of the cache failed (in the judge's thread): warn, in the item."""
        warning = self._file.take_warning() if self._file is not None else None
        if warning is not None:
            warn(warning)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = self._judge = None
            self._responses = None
