"""The three process-wide tricks, all about Python's garbage collector and all switchable.

Isolated here and measured in docs/development/speed.md (``make bench``).
A rubric session holds a large heap of long-lived objects: per case a
pydantic model, its compiled checks, its item; per answer a result. The
collector's full collections walk all of it, again and again, although
none of it can be garbage before the session ends.

- ``rubric_gc_freeze`` (ini, default true): when collection finishes, the
  objects alive then are moved to the collector's permanent generation
  (``gc.freeze()``), so the full collections during the run skip them;
  when the session is unconfigured they are moved back (``gc.unfreeze()``),
  so nothing stays out of the collector's reach after the session, which
  matters where many sessions share one process (pytester). The thaw is the
  config's last cleanup, after the two full collections pytest runs at
  unconfigure to catch exceptions raised in finalizers: those skip the frozen
  heap too. The price: an object alive when collection ended that became
  cyclic garbage during the run (pytest's and the plugin's own objects live
  to the end) is finalized only after pytest has stopped listening, so an
  exception its finalizer raises is printed by Python rather than reported as
  a pytest warning.
- ``rubric_fast_exit`` (ini, default true): at interpreter exit, after one
  last full collection, what is still alive is frozen, so the interpreter's
  own shutdown collections do not walk it only for the OS to reclaim the
  memory anyway (mypy's fast exit rests on the same idea).

- ``rubric_gc_pause`` (ini, default true): while a rubric file loads and its items are
  built (many small objects that all stay alive), the collector is paused; it would walk
  them again and again while they grow (on a 20k-line file, 4-5x the parse time).

All three apply only to a session that collects rubric files.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
from collections.abc import Iterator

__all__ = ["arrange_fast_exit", "freeze_collected", "paused", "thaw"]


@contextlib.contextmanager
def paused(*, enabled: bool = True) -> Iterator[None]:
    """Pause the cyclic garbage collector in the block, when ``enabled``; nests."""
    collecting = enabled and gc.isenabled()
    if collecting:
        gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def freeze_collected() -> None:
    """Move every object alive now to the permanent generation (until :func:`thaw`); garbage
    that exists now waits too, and there is little (the collector is paused while files load)."""
    gc.freeze()


def thaw() -> None:
    """Undo :func:`freeze_collected` (and any other freeze: a session nested in this one,
    as pytester runs them, thaws its parent's heap too, which then only runs slower)."""
    gc.unfreeze()


def _freeze_at_exit() -> None:
    """After one last full collection (every finalizer of garbage runs), freeze what is still
    alive: it is torn down as usual, minus the repeated walks (0.4-0.7 s for 3000 items)."""
    gc.collect()
    gc.freeze()


def arrange_fast_exit() -> None:
    """Run :func:`_freeze_at_exit` at interpreter exit (idempotent: pytester runs many
    sessions in one process)."""
    atexit.unregister(_freeze_at_exit)
    atexit.register(_freeze_at_exit)
