"""The three process-wide tricks, all about Python's garbage collector and all switchable.

A rubric session holds a large heap of long-lived objects (per case a model, its compiled
checks, its item) that none of the collector's full collections can free. Measured, with
what each changes, in docs/development/speed.md (``make bench``); all three apply only to a
session that collects rubric files:

- ``rubric_gc_freeze``: the objects alive when collection ends move to the permanent
  generation until the config's last cleanup (after pytest's own collections at
  unconfigure), so nothing stays frozen where sessions share a process (pytester);
- ``rubric_fast_exit``: at interpreter exit, one last full collection, then what is
  alive is frozen, so the shutdown collections do not walk it;
- ``rubric_gc_pause``: the collector is paused while a rubric file loads and its items are
  built (on a 20k-line file it would cost 4-5x the parse time).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused(*, enabled: bool = True) -> Iterator[None]:
    """Pause the cyclic garbage collector in the block, when ``enabled``; nests."""
    if collecting := enabled and gc.isenabled():
        gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


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
