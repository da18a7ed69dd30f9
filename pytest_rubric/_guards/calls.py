"""Running a user's code (``callable`` criteria, ``target`` functions): the boundary for it.

:class:`CallRunner` runs it on a worker thread, bounded in time; async code runs on the one
event loop of :data:`USER_LOOP`, as an application runs it. Whatever it raises reaches
the plugin as an :class:`Exception` (:func:`contained`; only ``KeyboardInterrupt`` passes as
it is), printed within the call's bound; what it returns leaves as plain data (:func:`plain`).
"""

from __future__ import annotations

import _thread
import asyncio
import contextlib
import contextvars
import dataclasses
import difflib
import importlib
import importlib.util
import inspect
import pkgutil
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar


def make_importable(*folders: Path) -> None:
    """Append ``folders`` (the rootdir, the rubric file's folder) to the import path: a
    ``checks.py`` beside ``pytest.ini`` imports, and never shadows an installed package."""
    for folder in folders:
        if (entry := str(folder)) not in sys.path:
            sys.path.append(entry)


def shadowed(module: str, folder: Path) -> str | None:
    """Why the top-level ``module`` a rubric file in ``folder`` names, which has one of that
    name beside it, would not be that one: another comes first on the import path."""
    own = [folder / f"{module}.py", folder / module / "__init__.py"]
    if not any(p.is_file() for p in own):
        return None
    try:  # where the import would find it, importing nothing
        found = importlib.util.find_spec(module)
    except Exception:  # the import says why
        return None
    origin = Path(found.origin).resolve() if found is not None and found.origin else None
    if origin in [p.resolve() for p in own]:
        return None
    return f"module {module!r} would be imported from {origin}, not from beside this rubric file"


def resolve_import(path: str) -> Any:
    """Import ``"package.module:name"`` (``name`` may be dotted) and return the object; a name
    the module lacks raises :class:`AttributeError` naming the closest names it has."""
    module_name, _, attr = path.partition(":")
    try:
        with containing():
            obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:  # the module named, not one it imports: the names near
        if exc.name is None or not f"{module_name}.".startswith(f"{exc.name}."):
            raise
        raise ModuleNotFoundError(f"{exc}{_near(exc.name)}", name=exc.name) from None
    owner = module_name
    for part in attr.split("."):
        if not hasattr(obj, part):
            # Not the modules it imports ('os'): a target or a check is a name of its own. Read
            # without running anything (a property that connects somewhere, say).
            known = [
                name
                for name in dir(obj)
                if not name.startswith("_")
                and not inspect.ismodule(inspect.getattr_static(obj, name, None))
            ]
            close = difflib.get_close_matches(part, known, n=3, cutoff=0.5)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise AttributeError(f"{owner!r} has no {part!r}{hint}")
        obj = getattr(obj, part)
        owner = f"{owner}.{part}"
    return obj


def _near(module: str) -> str:
    """The "did you mean 'app.bot'?" for a module that is not there, from its package's modules
    (for a top-level one, the project's: the import path outside the interpreter's own
    folders); "" when none is close."""
    package, _, name = module.rpartition(".")
    installed = (sys.prefix, sys.base_prefix)
    try:
        where = (
            importlib.import_module(package).__path__
            if package
            else [p for p in sys.path if not p.startswith(installed)]
        )
    except Exception:  # the package itself is what is missing, or raises
        return ""
    known = [m.name for m in pkgutil.iter_modules(where)]
    close = [f"{package}.{c}" if package else c for c in difflib.get_close_matches(name, known)]
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


class UserCodeError(Exception):
    """User code ended in a ``BaseException`` that is not an ``Exception`` (``SystemExit``,
    ``GeneratorExit``, ``asyncio.CancelledError``), or in an exception that cannot be
    printed: an ERROR, never the end of the session nor a hang."""

    def __init__(
        self, raised: BaseException, text: str | None = None, *, unprintable: bool = False
    ) -> None:
        super().__init__(str(raised) if text is None else text)
        self.kind = type(raised).__name__
        # The original, or one it chains, does not print: a traceback shows no frame's
        # arguments or locals, where it may be.
        self.unprintable = unprintable


T = TypeVar("T")
PRINT_BOUND = 1.0  # seconds an exception's str and repr may take, at most
_CHAIN = 32  # the linked exceptions (causes, contexts, a group's) looked at, at most


def _printed(raised: BaseException, within: float) -> tuple[str | None, bool]:
    """``str(raised)`` (None when its ``str`` or ``repr`` raises or takes longer than
    ``within`` s, on a daemon thread abandoned then), and whether its chain prints too."""
    began = time.monotonic()

    def text() -> str:
        printed = str(raised)
        repr(raised)
        return printed

    def chain() -> bool:
        seen, todo = {id(raised)}, _linked(raised)
        while todo and len(seen) < _CHAIN:
            link = todo.pop()
            if id(link) in seen:
                continue
            seen.add(id(link))
            str(link)
            repr(link)
            todo += _linked(link)
        return True

    if (printed := bounded(text, within)) is None:
        return None, False
    return printed, bool(bounded(chain, within - (time.monotonic() - began)))


def bounded(work: Callable[[], T], within: float = PRINT_BOUND) -> T | None:
    """``work()`` (printing what user code raised or holds) on a daemon thread abandoned
    after ``within`` s: its value, or None when it raised or had not returned by then."""
    done: list[T] = []

    def run() -> None:
        with contextlib.suppress(BaseException):  # any: a str that exits does not print
            done.append(work())

    thread = threading.Thread(target=run, name="pytest-rubric-print", daemon=True)
    thread.start()
    thread.join(max(within, 0.0))
    return done[0] if done else None


def _linked(raised: BaseException) -> list[BaseException]:
    """The exceptions a traceback of ``raised`` shows with it."""
    linked: list[BaseException] = []
    if raised.__cause__ is not None:
        linked.append(raised.__cause__)
    elif raised.__context__ is not None and not raised.__suppress_context__:
        linked.append(raised.__context__)
    if isinstance(raised, BaseExceptionGroup):
        linked += raised.exceptions[:_CHAIN]
    return linked


def contained(raised: BaseException, *, deadline: float | None = None) -> BaseException:
    """What a user's code raised, as the plugin handles it: an :class:`Exception` that
    prints (printed by ``deadline``, a ``time.monotonic()``, and within
    :data:`PRINT_BOUND`), or a ``KeyboardInterrupt``, which stops the run as the person
    asked. Raise what it returns with ``raise``: its cause is set."""
    if isinstance(raised, KeyboardInterrupt):
        return raised
    within = PRINT_BOUND if deadline is None else min(PRINT_BOUND, deadline - time.monotonic())
    text, chain_prints = _printed(raised, within)
    if text is not None and chain_prints and isinstance(raised, Exception):
        return raised
    if text is None or not chain_prints:
        return unprintable(raised, text)
    kept = UserCodeError(raised, text)  # SystemExit and the like: shown as its cause
    kept.__cause__ = raised
    kept.__suppress_context__ = True
    return kept


def unprintable(raised: BaseException, text: str | None = None) -> UserCodeError:
    """``raised`` as an error with the application's frames and nothing that would print
    the original (``text``, what it printed once, or ``<unprintable TypeName>``)."""
    kept = UserCodeError(raised, text or f"<unprintable {type(raised).__name__}>", unprintable=True)
    kept.__traceback__ = raised.__traceback__
    kept.__cause__ = None
    kept.__suppress_context__ = True
    return kept


def described(raised: BaseException) -> str:
    """``"ValueError: bad"``: what user code raised, for a reason."""
    if not isinstance(raised, UserCodeError):
        raised = contained(raised)
    kind = raised.kind if isinstance(raised, UserCodeError) else type(raised).__name__
    return f"{kind}: {raised}"


@contextlib.contextmanager
def containing(*, deadline: float | None = None) -> Iterator[None]:
    """Run user code in the block: what it raises leaves :func:`contained`."""
    try:
        yield
    except BaseException as raised:
        kept = contained(raised, deadline=deadline)
        if kept is raised:
            raise
        raise kept  # noqa: B904 (its cause is set: the original, or none that prints)


_PLAIN_DEPTH = 32  # how deep plain() looks into lists, tuples and dicts


def plain(value: Any, _depth: int = 0, _done: dict[int, Any] | None = None) -> Any:
    """``value`` with every ``str`` subclass, in it and in the lists, tuples and dicts it
    holds, made the plain ``str`` it holds: no method of the application's then runs
    while its answer is read, compared or graded."""
    kind = type(value)
    if kind is str:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if kind not in (list, tuple, dict) or _depth >= _PLAIN_DEPTH:
        return value
    done = {} if _done is None else _done
    if id(value) in done:
        return done[id(value)]
    deeper = _depth + 1
    if kind is dict:
        made: Any = {plain(k, deeper, done): plain(v, deeper, done) for k, v in value.items()}
    else:
        made = kind(plain(item, deeper, done) for item in value)
    done[id(value)] = made
    return made


def call_user(
    function: Any,
    *args: Any,
    deadline: float | None = None,
    then: Callable[[Any], Any] | None = None,
) -> Any:
    """``function(*args)``, awaited if async, as :func:`plain` data, passed through ``then``
    (reading what a target returned runs its code too: an object's properties); what either
    raises is :func:`contained`."""
    with containing(deadline=deadline):
        value = function(*args)
    if inspect.isawaitable(value):
        # What the coroutine raises comes back contained; the time it waited for its turn on
        # the loop (another call held it) is not counted against it (see CallRunner.call).
        value, waited = USER_LOOP.run(value, deadline)
        deadline = None if deadline is None else deadline + waited
    with containing(deadline=deadline):
        return plain(value) if then is None else then(plain(value))


@dataclasses.dataclass(frozen=True, slots=True)
class _Raised:
    """What a user's coroutine raised, carried out of its task as a value: a task whose code
    raises ``CancelledError`` would end cancelled (its message lost), and ``SystemExit``
    would stop the loop, where either is the call's error."""

    error: BaseException


@dataclasses.dataclass(slots=True)
class _Start:
    """A call on the loop: when it was handed to the loop (``asked``), when its task began
    (``at``: calls wait their turn while another holds the loop), and what it gave, handed
    over as it ends (a result waiting for the loop to be free would wait behind the call
    that holds it)."""

    asked: float
    began: threading.Event = dataclasses.field(default_factory=threading.Event)
    ended: threading.Event = dataclasses.field(default_factory=threading.Event)
    at: float = 0.0
    value: Any = None

    @property
    def waited(self) -> float:
        """How long the call waited for its turn on the loop."""
        return max(0.0, self.at - self.asked)


async def _caught(value: Any, start: _Start) -> None:
    start.at = time.monotonic()
    start.began.set()
    try:
        start.value = await value
    except asyncio.CancelledError as raised:
        task = asyncio.current_task()
        start.value = _Raised(raised)
        if task is not None and task.cancelling():  # abandon() cancelled it: the loop's
            raise
    except BaseException as raised:
        start.value = _Raised(raised)
    finally:
        start.ended.set()


class _UserLoop:
    """The event loop every async target and callable of the process runs on, on a daemon
    thread of its own, as the application runs them: what a team keeps at module level (an
    ``AsyncOpenAI`` client, a lock) is bound to the first loop that used it, so a loop per
    call would break its second call. Calls run as tasks in the caller's context, side by
    side (a case's samples at once); one that blocks the loop (``time.sleep`` in an ``async
    def``) holds the others back, and the time each waited for its turn is not counted
    against its bound (see :func:`_began_late`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def _running(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._thread is None or not self._thread.is_alive():
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=_serve, args=(self._loop,), name="pytest-rubric-async", daemon=True
                )
                self._thread.start()
            return self._loop

    def run(self, awaitable: Any, deadline: float | None = None) -> tuple[Any, float]:
        """``awaitable``'s result, awaited on the loop (the caller's context copied to it), and
        how long it waited for its turn; what it raises is printed by ``deadline`` moved by
        that wait."""
        start = _Start(time.monotonic())
        future = asyncio.run_coroutine_threadsafe(_caught(awaitable, start), self._running())
        _AWAITED.set((future, start))  # for the runner: through the context the call ran in
        start.ended.wait()  # bounded by the runner, which leaves this thread if it must
        if isinstance(start.value, _Raised):
            moved = None if deadline is None else deadline + start.waited
            raise contained(start.value.error, deadline=moved)
        return start.value, start.waited

    def abandon(self, context: contextvars.Context) -> None:
        """After a call ran out of time: its task is cancelled, and when the loop does not
        answer within a second (the task blocks it, say with ``time.sleep``) the next call
        gets a loop of its own, never waiting behind it."""
        if (awaited := context.get(_AWAITED)) is None or (loop := self._loop) is None:
            return
        awaited[0].cancel()
        answered = threading.Event()
        loop.call_soon_threadsafe(answered.set)
        if not answered.wait(1.0):
            with self._lock:
                if self._loop is loop:
                    self._loop = None


def _began_late(
    context: contextvars.Context, done: threading.Event, timeout: float, asked: float
) -> bool:
    """Whether an async call that waited its turn on the loop (another call held it) returned
    within ``timeout`` of ``asked`` plus that wait, and never later than three times
    ``timeout``: the time it waited is not counted against it, the rest is."""
    if (awaited := context.get(_AWAITED)) is None:
        return False
    start: _Start = awaited[1]
    latest = asked + 3 * timeout
    if not start.began.wait(max(0.0, latest - time.monotonic())):
        return False
    until = min(asked + timeout + start.waited, latest)
    return done.wait(max(0.0, until - time.monotonic()))


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    while True:
        try:
            loop.run_forever()
            return
        except KeyboardInterrupt:  # raised in a task the application left running
            _thread.interrupt_main()  # stops the run, as it asks
        except BaseException:  # a background task's SystemExit: not the loop's end
            pass


USER_LOOP = _UserLoop()
_AWAITED: contextvars.ContextVar[tuple[Any, _Start]] = contextvars.ContextVar(
    "pytest_rubric_awaited"
)


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
    """Runs a user's callables and targets, each bounded in time, on daemon threads in a copy
    of the caller's context. A call that overruns is abandoned with its thread (Python cannot
    stop one), which never holds up the session; a thread whose call returned is reused."""

    def __init__(self) -> None:
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def call(
        self, function: Any, *args: Any, timeout: float, then: Callable[[Any], Any] | None = None
    ) -> Any:
        """``function(*args)``, awaited if async and passed through ``then`` (see
        :func:`call_user`), or :class:`CallTimeout` after ``timeout`` s."""
        with self._lock:
            worker = self._idle.pop() if self._idle else _Worker()
        context = contextvars.copy_context()
        done = threading.Event()
        outcome: list[tuple[bool, Any]] = []
        # What the call raises is printed within its bound, a little before the caller stops
        # waiting (see contained).
        deadline = time.monotonic() + timeout * 0.95

        def job() -> None:
            try:
                value = context.run(call_user, function, *args, deadline=deadline, then=then)
                outcome.append((True, value))
            except BaseException as exc:  # handed to the caller (contained by call_user)
                outcome.append((False, exc))
            finally:
                done.set()

        asked = time.monotonic()
        worker.jobs.put(job)
        if not done.wait(timeout) and not _began_late(context, done, timeout, asked):
            USER_LOOP.abandon(context)  # an async call is cancelled
            raise CallTimeout(timeout)  # the worker stays with its call, never reused
        with self._lock:
            self._idle.append(worker)
        returned, value = outcome[0]
        if not returned:
            raise value
        return value
