"""Running a user's code: ``callable`` criteria and ``target`` functions.

:func:`resolve_import` finds ``"package.module:name"``; :class:`CallRunner`
runs it on a worker thread, bounded in time, awaiting it when it is async.

This is the boundary for user code: whatever a user's function raises
reaches the plugin as an :class:`Exception`, so the item or criterion is an
ERROR like any other. ``SystemExit``, ``GeneratorExit`` and
``asyncio.CancelledError`` come out as :class:`UserCodeError`; only
``KeyboardInterrupt`` (the person at the keyboard) passes as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import difflib
import importlib
import inspect
import queue
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "CallRunner",
    "CallTimeout",
    "UserCodeError",
    "call_user",
    "contained",
    "containing",
    "described",
    "make_importable",
    "resolve_import",
    "run_sync",
]


def make_importable(*folders: Path) -> None:
    """Put ``folders`` on the import path, after everything already there.

    ``callable:`` and ``target:`` modules are imported with the rootdir and
    the rubric file's folder on the path, so a ``checks.py`` next to
    ``pytest.ini`` works under a plain ``pytest`` (whose rootdir is not on
    the path by itself). Appended, never prepended, so they cannot shadow
    an installed package or the standard library.
    """
    for folder in folders:
        entry = str(folder)
        if entry not in sys.path:
            sys.path.append(entry)


def resolve_import(path: str) -> Any:
    """Import ``"package.module:name"`` (``name`` may be dotted) and return the object.

    Importing runs the module's code: what it raises is :func:`contained`. A name the
    module lacks raises :class:`AttributeError` naming the closest names it has.
    """
    module_name, _, attr = path.partition(":")
    with containing():
        obj: Any = importlib.import_module(module_name)
    owner = module_name
    for part in attr.split("."):
        if not hasattr(obj, part):
            known = [name for name in dir(obj) if not name.startswith("_")]
            close = difflib.get_close_matches(part, known, n=3, cutoff=0.5)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise AttributeError(f"{owner!r} has no {part!r}{hint}")
        obj = getattr(obj, part)
        owner = f"{owner}.{part}"
    return obj


def run_sync(value: Any) -> Any:
    """Await ``value`` if it is awaitable (an async target or callable), else return it."""
    if inspect.isawaitable(value):

        async def wait() -> Any:
            return await value

        return asyncio.run(wait())
    return value


class UserCodeError(Exception):
    """User code ended in a ``BaseException`` that is not an ``Exception`` (``SystemExit``,
    ``GeneratorExit``, ``asyncio.CancelledError``): an ERROR, never the end of the session."""

    def __init__(self, raised: BaseException) -> None:
        super().__init__(str(raised))
        self.kind = type(raised).__name__


def contained(raised: BaseException) -> BaseException:
    """What a user's code raised, as the plugin handles it: an :class:`Exception`, or a
    ``KeyboardInterrupt``, which stops the run as the person asked."""
    if isinstance(raised, Exception | KeyboardInterrupt):
        return raised
    return UserCodeError(raised)


def described(raised: BaseException) -> str:
    """``"ValueError: bad"``, ``"SystemExit: 3"``: what user code raised, for a reason."""
    kind = raised.kind if isinstance(raised, UserCodeError) else type(raised).__name__
    return f"{kind}: {raised}"


@contextlib.contextmanager
def containing() -> Iterator[None]:
    """Run user code in the block: what it raises leaves :func:`contained`."""
    try:
        yield
    except BaseException as raised:
        kept = contained(raised)
        if kept is raised:
            raise
        raise kept from raised


def call_user(function: Any, *args: Any) -> Any:
    """``function(*args)``, awaited if async; what it raises is :func:`contained`."""
    with containing():
        return run_sync(function(*args))


class CallTimeout(Exception):
    """A user's callable or target did not return within its time bound."""

    def __init__(self, timeout: float) -> None:
        super().__init__(
            f"did not return within {timeout:g} s (set `timeout:` on the criterion or case, "
            "or ini rubric_call_timeout, if it needs longer)"
        )


class _Worker:
    """A daemon thread that runs the jobs it is given, one at a time."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="pytest-rubric-call", daemon=True).start()

    def _serve(self) -> None:
        while True:
            self.jobs.get()()


class CallRunner:
    """Runs a user's callables and targets, each bounded in time.

    A call runs on a daemon thread, in a copy of the caller's context (so
    context variables read the same). Python cannot stop a thread, so a call
    that overruns is abandoned with its thread, which never holds up the
    session or its exit; a thread whose call returned in time is reused, so
    bounding a call costs a queue hand-off, not a new thread. One runner per
    grader.
    """

    def __init__(self) -> None:
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def call(self, function: Any, *args: Any, timeout: float) -> Any:
        """``function(*args)``, awaited if async, or :class:`CallTimeout` after ``timeout`` s.

        What the function raises is raised here.
        """
        with self._lock:
            worker = self._idle.pop() if self._idle else _Worker()
        context = contextvars.copy_context()
        done = threading.Event()
        outcome: list[tuple[bool, Any]] = []

        def job() -> None:
            try:
                outcome.append((True, context.run(call_user, function, *args)))
            except BaseException as exc:  # handed to the caller (contained by call_user)
                outcome.append((False, exc))
            finally:
                done.set()

        worker.jobs.put(job)
        if not done.wait(timeout):
            raise CallTimeout(timeout)  # the worker stays with its call, never reused
        with self._lock:
            self._idle.append(worker)
        returned, value = outcome[0]
        if not returned:
            raise value
        return value
