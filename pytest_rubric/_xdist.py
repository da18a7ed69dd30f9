"""What the plugin knows of pytest-xdist: whether this process is the controller, and what a
worker holds queued, so it can judge those items ahead of running them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["is_xdist_controller", "queued", "worker_queue_lock"]


def is_xdist_controller(config: pytest.Config) -> bool:
    """Whether this process hands the items to xdist workers and runs none itself."""
    return (
        not hasattr(config, "workerinput")
        and bool(getattr(config.option, "numprocesses", None))
        and getattr(config.option, "dist", "no") != "no"
    )


def worker_queue_lock(config: pytest.Config) -> Callable[[], Any] | None:
    """The lock of pytest-xdist's worker queue (``WorkerInteractor.torun``), or None."""
    for plugin in config.pluginmanager.get_plugins():
        lock = getattr(getattr(plugin, "torun", None), "lock", None)
        if lock is not None and hasattr(plugin, "nextitem_index"):
            return lock  # type: ignore[no-any-return]
    return None


def queued(lock: Callable[[], Any] | None, seen: Callable[[int], bool]) -> list[int]:
    """The item indices queued on this worker, newest first, up to the first ``seen`` one."""
    fresh: list[int] = []
    if lock is not None:
        with lock() as queue:
            for index in reversed(queue):
                if isinstance(index, int):
                    if seen(index):
                        break
                    fresh.append(index)
    return fresh
