"""Where a response under test comes from: :class:`Source`, one subject's answer to one
case, written in the rubric file or a responses folder, or from the application under test,
a :class:`Target` (a user's function) or a :class:`LiveModel` (``--rubric-model``). Both
are called on every run; the response cache answers only when ``--rubric-response-cache``
asks for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import inspect
import os
import sys
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .._defaults import ResponseTally, RetryPolicy
from .._errors import LLMError, SpansUnreadable
from .._guards.calls import CallRunner, CallTimeout, call_user, described
from .._guards.secrets import known_keys, redact
from .._llm.base import CallStats, Reply, Sampling
from .._llm.cost import Budget, Price
from .._llm.providers import ModelSpec, read_key
from .._load.traces import RETURN_SHAPES, ShapeError, merged, read_returned, recorded_trace
from .._trace import Trace
from ..criteria.check import Answer
from .grader import with_case_context

if TYPE_CHECKING:
    from .._llm.cache import CachedCalls
    from .._schema import Case


class CallTracer(Protocol):
    """What reads the trace of one target call from outside the application
    (``--rubric-otel``): it runs ``call`` (inside a span of its own, say) and returns what
    the call returned with the trace it read, or None when it read nothing."""

    def traced(self, call: Callable[[], Any]) -> tuple[Any, Trace | None]: ...


@dataclass(frozen=True, slots=True)
class Source:
    """Where one subject's response to one case comes from: written, or ``target``."""

    text: str | None = None
    more: tuple[str, ...] = ()  # further samples of a responses file (`repeat`)
    target: Any = None  # a Target or a LiveModel: called with the case (and the sample)
    target_name: str | None = None  # "module:function" or "provider:model"
    subject: str = ""
    unavailable: str | None = None  # why there is no response
    timeout: float | None = None  # a user's target is bounded; a live model has its own
    runner: CallRunner | None = None  # what runs a bounded target
    cache: CachedCalls | None = None  # the response cache, when asked for
    tally: ResponseTally | None = None  # counts the answers asked and replayed
    traces: tuple[Trace | None, ...] = ()  # a responses file's, one per written sample
    tracer: CallTracer | None = None  # reads a target call's spans (--rubric-otel)

    @property
    def written(self) -> list[Answer]:
        """The responses written down (inline or in a responses file), one per sample, with
        the traces their responses file gave."""
        texts = () if self.text is None else (self.text, *self.more)
        traces = self.traces or (None,) * len(texts)
        return [Answer(t, trace) for t, trace in zip(texts, traces, strict=True)]

    @property
    def live(self) -> bool:
        return isinstance(self.target, LiveModel)

    def fetch_samples(
        self, case: Any, *, repeat: int, concurrency: int, raised: list[BaseException] | None = None
    ) -> tuple[list[Answer], None] | tuple[None, str]:
        """The answer of each sample, or None and why the first missing one is missing."""
        fetched = self.fetch_each(case, repeat=repeat, concurrency=concurrency, raised=raised)
        if problem := next((p for a, p in fetched if a is None), None):
            return None, problem
        return [a for a, _ in fetched if a is not None], None

    def fetch_each(
        self, case: Any, *, repeat: int, concurrency: int, raised: list[BaseException] | None = None
    ) -> list[tuple[Answer, None] | tuple[None, str]]:
        """Each sample's answer, or None and why it is missing (``sample i of n: ...`` under
        ``repeat``); ``repeat`` asked at most ``concurrency`` at once. What a user's target
        raised is appended to ``raised``."""
        if self.unavailable is not None:
            return [(None, self.unavailable)]
        if self.text is not None:
            return [(answer, None) for answer in self.written]
        if repeat == 1:
            answer, problem = self.fetch(case, raised=raised)
            return [(None, problem or "no response") if answer is None else (answer, None)]
        with ThreadPoolExecutor(max_workers=max(1, min(repeat, concurrency))) as pool:
            fetched = list(
                pool.map(
                    lambda i: self.fetch(case, sample=i, samples=repeat, raised=raised),
                    range(repeat),
                )
            )
        return [
            (None, f"sample {index + 1} of {repeat}: {problem}")
            if answer is None
            else (answer, None)
            for index, (answer, problem) in enumerate(fetched)
        ]

    def fetch(
        self,
        case: Any,
        *,
        sample: int = 0,
        samples: int = 1,
        raised: list[BaseException] | None = None,
    ) -> tuple[Answer, None] | tuple[None, str]:
        """The application's answer (of sample ``sample`` of ``samples``), or None and why
        there is none."""
        what = f"{'model' if self.live else 'target'} {self.target_name}"
        looked: Reply | None = None
        try:
            if self.cache is not None:
                looked = self.cache.lookup(
                    self._key(case, sample, samples),
                    missing=f"--rubric-response-cache replay: no recorded answer of {what} for "
                    f"case {getattr(case, 'id', '?')!r}"
                    + (f" (sample {sample + 1} of {samples})" if samples > 1 else "")
                    + "; record it with --rubric-response-cache use, or run without "
                    "--rubric-response-cache to call the application",
                )
        except LLMError as exc:  # a miss under replay: no call was made, nothing raised
            return None, str(exc)
        if looked is not None and looked.cached:
            try:  # the cache is data: its trace read as what a target returns is
                trace = recorded_trace(looked.parsed)
            except ShapeError as exc:
                # A miss: under `use` the application is called and its answer stored over
                # this one; under `replay` a miss like any other, saying why.
                if self.cache is None or self.cache.mode == "replay":
                    return None, (
                        f"{what}: its answer in the response cache cannot be used: {exc}; record "
                        "it again with --rubric-response-cache use"
                    )
            else:
                self._count(replayed=True)
                return Answer(looked.text, trace), None
        self._count(replayed=False)  # the application is called, whatever the call gives
        try:
            (text, returned), spans, latency = self._call(case, sample, samples)
        except SpansUnreadable as exc:
            return None, f"{what}: {exc}"
        except CallTimeout as exc:
            return None, f"{what} {exc}"
        except ShapeError as exc:
            shapes = "; ".join(RETURN_SHAPES)
            return None, f"{what} returned {exc}; a target returns one of: {shapes}"
        except Exception as exc:  # user code's BaseExceptions arrive contained (_calls)
            if raised is not None and not self.live:
                raised.append(exc)
            return None, f"{what} raised {described(exc)}"
        if returned is not None:  # the call's wall time, as the plugin measured it
            returned = replace(returned, latency_s=latency)
        # A str answer to a case with its own context: the case's trace, the call still timed.
        trace = merged(returned, spans) or with_case_context(None, case)
        if trace is not None and trace.latency_s is None:
            trace = replace(trace, latency_s=latency)
        if looked is not None and self.cache is not None:
            recorded: dict[str, Any] = {"response": text}
            if trace is not None:
                recorded["trace"] = asdict(trace)
            self.cache.store(
                Reply(text, key=looked.key),
                provider="model" if self.live else "target",
                model=self.target_name or "",
                parsed=recorded,
            )
        return Answer(text, trace), None

    def _call(
        self, case: Any, sample: int, samples: int
    ) -> tuple[tuple[str, Trace | None], Trace | None, float]:
        """The one call of the application: the answer and trace it returned (read within
        the call's bound: an object's properties are its code too), the trace ``tracer`` read
        around it (``--rubric-otel``) and its wall time in seconds."""

        def call() -> Any:
            if self.live:
                return read_returned(self.target(case, sample=sample, samples=samples))
            if self.runner is None or self.timeout is None:
                return call_user(self.target, case, then=read_returned)
            return self.runner.call(self.target, case, timeout=self.timeout, then=read_returned)

        started = time.perf_counter()
        value, spans = (call(), None) if self.tracer is None else self.tracer.traced(call)
        return value, spans, time.perf_counter() - started

    def _count(self, *, replayed: bool) -> None:
        if self.tally is not None:
            self.tally.add(1, replayed)

    def _key(self, case: Any, sample: int, samples: int) -> dict[str, Any]:
        """What an answer may depend on: the whole case, the sample, the subject, and what
        answers (a target's source file; a model's request, its sampling set by how many)."""
        return {
            "kind": "answer",
            "subject": self.subject,
            "of": self.target_name,
            "by": self.target.identity(sample, samples),
            "case": case.model_dump(mode="json", serialize_as_any=True),  # each criterion whole
            "sample": sample,
        }


# What a target's one parameter receives, by the form its signature names.
_FORMS = "a target takes one parameter, one of: " + "; ".join(
    (
        "a parameter annotated `str`, or named `question`, `prompt` or `text`: the question "
        "text (for a conversation, its last user message)",
        "a parameter annotated `pytest_rubric.Case`, or named `case`: the whole case",
        'a parameter named `messages`: the conversation, a list of {"role", "content"} dicts',
    )
)
_TEXT_NAMES = frozenset({"question", "prompt", "text"})


def _annotation_name(annotation: Any) -> str:
    if isinstance(annotation, str):
        return annotation.rpartition(".")[2].strip("'\"")
    return str(getattr(annotation, "__name__", ""))


@dataclass(frozen=True, slots=True)
class Target:
    """A user's ``module:function``, called with what its signature names."""

    function: Any
    form: str  # "question", "case" or "messages"
    keyword: str = ""  # the parameter's name when it is keyword-only
    code: str = ""  # a fingerprint of the function's source file

    @classmethod
    def of(cls, function: Any, *, module: str = "") -> Target:
        """How to call ``function``, from its one parameter, or :class:`TypeError` listing
        the signatures a target may have; ``module``: the one its import path names."""
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"its signature cannot be read ({exc}); {_FORMS}") from None
        named = [
            p
            for p in signature.parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        required = [p for p in named if p.default is p.empty]
        if len(required) > 1 or not named:
            # The names it takes, ``*args`` too (no name of a form).
            stars: dict[Any, str] = {
                inspect.Parameter.VAR_POSITIONAL: "*",
                inspect.Parameter.VAR_KEYWORD: "**",
            }
            given = signature.parameters.values()
            shown = ", ".join(stars.get(p.kind, "") + p.name for p in given) or "no parameter"
            raise TypeError(f"it takes {shown}; {_FORMS}")
        parameter = required[0] if required else named[0]
        annotation = _annotation_name(parameter.annotation)
        if annotation == "Case" or parameter.name == "case":
            form = "case"
        elif parameter.name == "messages":
            form = "messages"
        elif annotation == "str" or parameter.name in _TEXT_NAMES:
            form = "question"
        else:
            raise TypeError(f"its parameter {parameter.name!r} names none of the forms; {_FORMS}")
        keyword = parameter.name if parameter.kind == parameter.KEYWORD_ONLY else ""
        return cls(function, form, keyword, fingerprint(function, module=module))

    def __call__(self, case: Any) -> Any:
        argument = self.argument(case)
        if self.keyword:
            return self.function(**{self.keyword: argument})
        return self.function(argument)

    def argument(self, case: Any) -> Any:
        if self.form == "case":
            return case
        turns = case.conversation or (("user", case.question or ""),)
        if self.form == "messages":
            return [{"role": role, "content": content} for role, content in turns]
        return next((content for role, content in reversed(turns) if role == "user"), "")

    def identity(self, sample: int, samples: int) -> dict[str, Any]:
        """What the response cache keys a target's answer by besides the case: its code."""
        return {"target": self.form, "code": self.code}


def fingerprint(function: Any, *, module: str = "") -> str:
    """A hash of the source files that define ``function`` (none when there is none to read):
    the file of ``module``, where the import path finds it (a callable object or a partial
    is configured there), a decorated function's and those of the functions it wraps
    (``__wrapped__``, as ``functools.wraps`` leaves it, read without running the
    application's code), a partial's function's, a callable object's class's. Editing any of
    them is a miss in the response cache, never an old answer replayed."""
    files: dict[str, bytes] = {}
    if (named := getattr(sys.modules.get(module), "__file__", None)) and named.endswith(".py"):
        with contextlib.suppress(OSError):
            files[os.path.realpath(named)] = Path(named).read_bytes()
    seen = function
    for _ in range(_WRAPPED):
        while isinstance(seen, functools.partial):
            seen = seen.func
        defining = seen if inspect.isroutine(seen) or inspect.isclass(seen) else type(seen)
        try:
            path = inspect.getsourcefile(defining)
            if path and (real := os.path.realpath(path)) not in files:
                files[real] = Path(path).read_bytes()
        except (OSError, TypeError):
            pass
        if (seen := inspect.getattr_static(seen, "__wrapped__", None)) is None:
            break
    name = f"{getattr(function, '__module__', '')}:{getattr(function, '__qualname__', '')}"
    return hashlib.sha256(name.encode() + b"\0" + b"\0".join(files.values())).hexdigest()[:16]


_WRAPPED = 32  # decorators followed to the function they wrap, at most


class LiveModel:
    """``--rubric-model``: the subject is a model, asked each case's question live; each call
    has its own client and event loop, so it works from any thread."""

    SYSTEM = "Answer the question accurately and concisely."

    def __init__(
        self,
        spec: ModelSpec,
        *,
        subject: str | None = None,
        environ: Mapping[str, str] | None = None,
        policy: RetryPolicy | None = None,
        price: Price | None = None,
        budget: Budget | None = None,
        require_key: bool = True,
    ) -> None:
        self.spec = spec
        self.subject = subject or spec.model
        self._environ = environ
        self._policy = policy
        self.stats = CallStats()  # only the tokens: what the model's answers cost
        self._budget = budget
        if budget is not None and price is not None:
            stats = self.stats
            budget.add_source(lambda: stats.cost(price))
        # Fail now on a missing key; a replay of recorded answers makes no call.
        read_key(spec, environ, require_key=require_key)

    def identity(self, sample: int, samples: int) -> dict[str, Any]:
        """What the response cache keys an answer by besides the case: the request."""
        return {
            "provider": self.spec.provider,
            "model": self.spec.model,
            "system": self.SYSTEM,
            "sampling": asdict(Sampling.of(sample, samples)),
        }

    def __call__(self, case: Case, *, sample: int = 0, samples: int = 1) -> str:
        """The model's answer to ``case`` (sample ``sample`` of ``samples``, each its own draw);
        a conversation is sent as it is, without our system turn."""
        if self._budget is not None:
            self._budget.admit()
        reply = asyncio.run(
            self._ask(
                case.conversation or (("system", self.SYSTEM), ("user", case.question or "")),
                Sampling.of(sample, samples),
            )
        )
        self.stats.tokens_in += reply.tokens_in
        self.stats.tokens_out += reply.tokens_out
        # What the model under test says is kept and reported: never with a key in it.
        return redact(reply.text, *known_keys(self._environ))

    async def _ask(self, turns: tuple[tuple[str, str], ...], sampling: Sampling) -> Reply:
        from .._llm.clients import make_client  # httpx: only when a model is asked

        client = make_client(self.spec, environ=self._environ, policy=self._policy)
        client.role = "model"
        try:
            return await client.chat(turns, sampling=sampling)
        finally:
            await client.aclose()
