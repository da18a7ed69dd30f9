"""Grading judged criteria with an LLM, concurrently across the whole session.

A :class:`JudgeSession` owns an event loop in a background thread. When
collection ends, the judge calls of every collected rubric item whose
response is already known are scheduled at once; at most ``concurrency``
calls are in flight, whichever items they belong to, and each item waits
only for its own. So K judged criteria with latency L take about
``K / C x L``, not ``K x L``.

The three graders of the design:

``per-criterion``
    one call per judged criterion (these run concurrently too);
``one-shot``
    one call for all judged criteria of a case, keyed by criterion id;
``holistic``
    one call, one 0-100 score s: the judged criteria earn s/100 of their
    combined positive weight (each positive one gets credit s/100).

A reply that does not fit the protocol is retried once with the error fed
back; a judge call that fails, or a second bad reply, makes the criterion
ERROR. Nothing here turns a failure into MET or UNMET.

With ``samples`` K > 1 (``--rubric-judge-samples``) every answer is graded
K times, each sample its own call and its own cache entry (see
:class:`~pytest_rubric._judge.Sampling`), and the samples are combined per
criterion by :func:`combine`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import inspect
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._base import GRADERS
from .._checks import Outcome
from .._result import Verdict
from .._secrets import Secret, clip, redact
from . import prompts as _prompts
from .cache import JudgeCache, cache_key
from .clients import HTTPJudge, JudgeError, JudgeStats, Sampling, known_keys
from .replies import Graded, ReplyError, read_holistic, read_one, read_one_shot

__all__ = ["GRADERS", "JudgeSession", "Judged", "combine"]

_FEEDBACK = (
    "\n\nYour previous reply could not be used: {error}. Reply again with only the JSON object "
    "the instructions ask for."
)


@dataclass(frozen=True, slots=True)
class _Reply:
    text: str
    key: str | None
    cached: bool


@dataclass(slots=True)
class Judged:
    """The judge's outcomes for one answer, by criterion id."""

    outcomes: dict[str, Outcome] = field(default_factory=dict)
    injection_suspected: bool = False


def _outcome(graded: Graded) -> Outcome:
    return Outcome(Verdict.MET if graded.met else Verdict.UNMET, graded.credit, graded.reason)


class JudgeSession:
    """The session's judge: a background event loop, a concurrency bound, usage counts."""

    def __init__(
        self,
        judge: Any,
        *,
        name: str,
        grader: str = "per-criterion",
        concurrency: int = 8,
        stats: JudgeStats | None = None,
        cache: JudgeCache | None = None,
        cache_mode: str = "use",
        samples: int = 1,
        timeout: float = 60.0,
    ) -> None:
        if grader not in GRADERS:
            raise ValueError(f"unknown grader {grader!r}; use one of {', '.join(GRADERS)}")
        if samples < 1:
            raise ValueError(f"samples must be at least 1, not {samples}")
        self.timeout = timeout  # a user's judge gets --rubric-judge-timeout for its whole call
        self.judge = judge
        self.samples = samples
        self.name = name
        self.grader = grader
        self.concurrency = concurrency
        self.cache = None if cache_mode == "off" else cache
        self.cache_mode = cache_mode
        self.stats = stats if stats is not None else getattr(judge, "stats", None) or JudgeStats()
        self._takes_schema = isinstance(judge, HTTPJudge)
        # Whatever a judge raises or replies is redacted of every key we know of:
        # the built-in judge's own, and the providers' variables (a user's judge
        # may read those itself).
        key = getattr(judge, "key", None)
        self._secrets = [key] if isinstance(key, Secret) else []
        self._secrets += known_keys()
        self._futures: dict[str, concurrent.futures.Future[Judged]] = {}
        self._loop = asyncio.new_event_loop()
        self._semaphore = asyncio.Semaphore(concurrency)
        if isinstance(judge, HTTPJudge):
            # The built-in judge takes a slot per HTTP attempt, so that a call
            # waiting out a Retry-After or a backoff does not hold one.
            judge.limiter = self._semaphore
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="pytest-rubric-judge", daemon=True
        )
        self._thread.start()

    # --- scheduling -------------------------------------------------------------------------

    def schedule(
        self, key: str, criteria: Sequence[Any], *, question: str | None, response: str
    ) -> None:
        """Start judging one answer in the background (once per key)."""
        if key not in self._futures:
            self._futures[key] = asyncio.run_coroutine_threadsafe(
                self._judge_answer(criteria, question=question, response=response), self._loop
            )

    def result(
        self, key: str, criteria: Sequence[Any], *, question: str | None, response: str
    ) -> Judged:
        """Wait for one answer's outcomes, scheduling them first if nobody did."""
        self.schedule(key, criteria, question=question, response=response)
        return self._futures.pop(key).result()

    def close(self) -> None:
        """Cancel what is still pending, close the HTTP client, stop the loop."""
        for future in self._futures.values():
            future.cancel()
        self._futures.clear()
        if not self._loop.is_closed():
            aclose = getattr(self.judge, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):  # closing must never fail a session
                    asyncio.run_coroutine_threadsafe(aclose(), self._loop).result(timeout=5)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            self._loop.close()

    def usage_line(self) -> str:
        return self.stats.line(self.name)

    # --- calls ------------------------------------------------------------------------------

    def _key(self, prompt: _prompts.Prompt, user: str, sample: int) -> str:
        """Everything that can change the verdict; the per-call fence token is masked."""
        spec = getattr(self.judge, "spec", None)
        return cache_key(
            judge=spec.name if spec is not None else self.name,
            endpoint=spec.url if spec is not None else None,
            grader=self.grader,
            template=_prompts.TEMPLATE_VERSION,
            system=prompt.system.replace(prompt.token, "{TOKEN}"),
            user=user.replace(prompt.token, "{TOKEN}"),
            schema=prompt.schema if self._takes_schema else None,
            sampling=Sampling.of(sample, self.samples).as_dict(),
            sample=sample,
        )

    async def call(
        self, prompt: _prompts.Prompt, *, feedback: str = "", label: str = "", sample: int = 0
    ) -> _Reply:
        """One judge call under the session's concurrency bound, through the cache."""
        user = prompt.user + feedback
        key = self._key(prompt, user, sample) if self.cache is not None else None
        if self.cache is not None and key is not None and self.cache_mode in ("use", "replay"):
            cached = self.cache.get(key)
            if cached is not None:
                self.stats.cache_hits += 1
                return _Reply(cached, key, cached=True)
            self.stats.cache_misses += 1
            if self.cache_mode == "replay":
                raise JudgeError(
                    f"--rubric-cache replay: no cached reply of judge {self.name} for {label or 'this call'}; "
                    "run once with --rubric-cache use (and a judge) to record it, and commit the cache"
                )
        return _Reply(await self._complete(prompt, user, sample), key, cached=False)

    async def _complete(self, prompt: _prompts.Prompt, user: str, sample: int) -> str:
        self.stats.calls += 1  # one per judge call, whatever its retries
        try:
            if self._takes_schema:
                # No slot here: the judge takes one per attempt (see __init__).
                reply = await self.judge.complete(
                    prompt.system,
                    user,
                    schema=prompt.schema,
                    sampling=Sampling.of(sample, self.samples),
                )
            else:
                # A user's judge retries as it likes: its whole call holds the slot,
                # and --rubric-judge-timeout bounds the whole call, as it does ours.
                async with self._semaphore:
                    reply = self.judge.complete(prompt.system, user)
                    if inspect.isawaitable(reply):  # a plain function is fine too
                        async with asyncio.timeout(self.timeout):
                            reply = await reply
        except TimeoutError:
            self.stats.errors += 1
            raise JudgeError(
                f"judge {self.name} gave no reply within {self.timeout:g} s "
                "(--rubric-judge-timeout)"
            ) from None
        except JudgeError:
            self.stats.errors += 1
            raise
        except Exception as exc:  # a user's judge: its failure is ERROR, not a crash
            self.stats.errors += 1
            raise JudgeError(
                redact(f"judge {self.name} raised {type(exc).__name__}: {exc}", *self._secrets)
            ) from None
        if not isinstance(reply, str):
            raise JudgeError(
                f"judge {self.name} returned {type(reply).__name__}, not the reply text"
            )
        return reply

    def _remember(self, reply: _Reply, parsed: Any) -> Any:
        """Store a reply that passed validation (never an error, never a partial one)."""
        partial = isinstance(parsed, dict) and any(
            isinstance(v, ReplyError) for v in parsed.values()
        )
        if self.cache is not None and reply.key is not None and not reply.cached and not partial:
            spec = getattr(self.judge, "spec", None)
            self.cache.put(
                reply.key,
                provider=spec.provider if spec is not None else "custom",
                model=spec.model if spec is not None else self.name,
                raw=reply.text,
                parsed=parsed,
            )
        return parsed

    async def _ask(
        self, prompt: _prompts.Prompt, read: Callable[[str], Any], label: str, sample: int
    ) -> Any:
        """Call, read; on a reply that does not fit, once more with the error fed back."""
        reply = await self.call(prompt, label=label, sample=sample)
        try:
            parsed = self._read(read, reply.text)
        except ReplyError as exc:
            reply = await self.call(
                prompt, feedback=_FEEDBACK.format(error=exc), label=label, sample=sample
            )
            try:
                parsed = self._read(read, reply.text)
            except ReplyError as again:
                raise JudgeError(
                    f"judge {self.name} replied out of protocol twice: {again}; a larger model, "
                    "or --rubric-grader per-criterion, may follow the protocol better"
                ) from None
        return self._remember(reply, parsed)

    def _read(self, read: Callable[[str], Any], text: str) -> Any:
        """``read(text)``, where anything it raises is a reply that does not fit, never a crash.

        The readers turn hostile replies into ReplyError themselves; this is the
        backstop for whatever they did not foresee.
        """
        try:
            return read(text)
        except ReplyError:
            raise
        except Exception as exc:
            # Short: the message is fed back to the judge, and may end up in a reason.
            message = f"the reply could not be read ({type(exc).__name__}: {exc})"
            raise ReplyError(clip(message, *self._secrets, limit=200)) from None

    async def _judge_answer(
        self, criteria: Sequence[Any], *, question: str | None, response: str
    ) -> Judged:
        try:
            judged = await self._grade(criteria, question=question, response=response)
        except Exception as exc:  # a grade that could not be obtained is ERROR, never a crash
            reason = f"judge {self.name} failed: {type(exc).__name__}: {exc}"
            judged = Judged({c.id: Outcome(Verdict.ERROR, 0.0, reason) for c in criteria})
        # A judge may echo anything, the key included: no reason leaves unredacted.
        # (The grader cuts reasons to length, once, when it builds the result.)
        judged.outcomes = {
            cid: dataclasses.replace(o, reason=redact(o.reason, *self._secrets))
            for cid, o in judged.outcomes.items()
        }
        return judged

    async def _grade(
        self, criteria: Sequence[Any], *, question: str | None, response: str
    ) -> Judged:
        judged = Judged()
        runs = await asyncio.gather(
            *(
                self._grade_once(criteria, question, response, judged, i)
                for i in range(self.samples)
            )
        )
        if self.samples == 1:
            judged.outcomes = runs[0]
        else:
            judged.outcomes = {
                c.id: combine(
                    c,
                    [run[c.id] for run in runs],
                    mean=self.grader == "holistic" or c.kind == "score",
                )
                for c in criteria
            }
        return judged

    async def _grade_once(
        self,
        criteria: Sequence[Any],
        question: str | None,
        response: str,
        judged: Judged,
        sample: int,
    ) -> dict[str, Outcome]:
        """One sample of the grades of every judged criterion of an answer."""
        if self.grader == "per-criterion":
            outcomes = await asyncio.gather(
                *(self._one(c, question, response, judged, sample) for c in criteria)
            )
            return dict(zip((c.id for c in criteria), outcomes, strict=True))
        if self.grader == "one-shot":
            return await self._one_shot(criteria, question, response, judged, sample)
        return await self._holistic(criteria, question, response, judged, sample)

    def _flag(self, prompt: _prompts.Prompt, response: str, judged: Judged) -> None:
        if _prompts.injection_suspected(response, prompt.token):
            judged.injection_suspected = True

    async def _one(
        self, criterion: Any, question: str | None, response: str, judged: Judged, sample: int
    ) -> Outcome:
        prompt = _prompts.per_criterion(criterion, question=question, response=response)
        self._flag(prompt, response, judged)
        try:
            graded = await self._ask(
                prompt,
                lambda text: read_one(text, criterion, secrets=self._secrets),
                f"criterion {criterion.id!r}",
                sample,
            )
        except JudgeError as exc:
            return Outcome(Verdict.ERROR, 0.0, str(exc))
        return _outcome(graded)

    async def _one_shot(
        self,
        criteria: Sequence[Any],
        question: str | None,
        response: str,
        judged: Judged,
        sample: int,
    ) -> dict[str, Outcome]:
        prompt = _prompts.one_shot(criteria, question=question, response=response)
        self._flag(prompt, response, judged)

        def read(text: str) -> dict[str, Graded | ReplyError]:
            return read_one_shot(text, criteria, secrets=self._secrets)

        label = "criteria " + ", ".join(repr(c.id) for c in criteria)
        try:
            first = await self._ask(prompt, read, label, sample)
        except JudgeError as exc:
            return {c.id: Outcome(Verdict.ERROR, 0.0, str(exc)) for c in criteria}
        bad = {cid: err for cid, err in first.items() if isinstance(err, ReplyError)}
        if bad:
            # One more try for the criteria the reply left out or got wrong.
            problems = "; ".join(str(e) for e in bad.values())
            try:
                retry = await self.call(
                    prompt, feedback=_FEEDBACK.format(error=problems), label=label, sample=sample
                )
                second = self._remember(retry, self._read(read, retry.text))
            except (JudgeError, ReplyError):
                second = {}
            for cid in bad:
                if isinstance(second.get(cid), Graded):
                    first[cid] = second[cid]
        return {
            c.id: _outcome(first[c.id])
            if isinstance(first[c.id], Graded)
            else Outcome(
                Verdict.ERROR,
                0.0,
                f"judge {self.name}: {first[c.id]} (after one retry); try --rubric-grader per-criterion",
            )
            for c in criteria
        }

    async def _holistic(
        self,
        criteria: Sequence[Any],
        question: str | None,
        response: str,
        judged: Judged,
        sample: int,
    ) -> dict[str, Outcome]:
        prompt = _prompts.holistic(criteria, question=question, response=response)
        self._flag(prompt, response, judged)
        try:
            score, reason = await self._ask(
                prompt,
                lambda text: read_holistic(text, secrets=self._secrets),
                "the holistic score",
                sample,
            )
        except JudgeError as exc:
            return {c.id: Outcome(Verdict.ERROR, 0.0, str(exc)) for c in criteria}
        credit = score / 100
        outcomes = {}
        for c in criteria:
            if c.effective_weight < 0:
                # An error criterion is folded into the one score, never counted twice.
                outcomes[c.id] = Outcome(
                    Verdict.UNMET, 0.0, f"holistic: folded into the score {score:g}/100"
                )
            else:
                verdict = Verdict.MET if credit >= 0.5 else Verdict.UNMET
                outcomes[c.id] = Outcome(verdict, credit, f"holistic {score:g}/100: {reason}")
        return outcomes


def combine(criterion: Any, samples: Sequence[Outcome], *, mean: bool) -> Outcome:
    """One outcome from K samples of one criterion.

    * Any sample that is ERROR makes the criterion ERROR: a grade that could
      not be obtained K times is not a K-sample grade.
    * A boolean criterion takes the majority verdict. A tie (an even K) goes
      against the answer: UNMET for a positive criterion, MET for an error
      criterion (negative weight), so a split judge never earns credit.
    * With ``mean`` (a score-kind criterion, and every holistic grade) the
      criterion takes the mean credit, MET when that is at least 0.5.

    ``agreement`` is the share of samples that gave the most common grade
    (verdict, or credit for score kind): 1.0 when they all agree. Below 1 the
    criterion is ``unstable``.
    """
    pairs = tuple((o.verdict, o.credit) for o in samples)
    k = len(samples)
    errors = [(i, o) for i, o in enumerate(samples) if o.verdict is Verdict.ERROR]
    if errors:
        i, first = errors[0]
        return Outcome(
            Verdict.ERROR,
            0.0,
            f"{len(errors)} of {k} judge samples failed; sample {i + 1}: {first.reason}",
            samples=pairs,
        )
    if mean:
        credits = [o.credit for o in samples]
        credit = sum(credits) / k
        verdict = Verdict.MET if credit >= 0.5 else Verdict.UNMET
        agreement = max(credits.count(c) for c in credits) / k
        reason = samples[0].reason
        summary = f"mean credit {credit:.2f} of {k} samples"
    else:
        met = sum(o.verdict is Verdict.MET for o in samples)
        if met * 2 == k:
            verdict = Verdict.MET if criterion.effective_weight < 0 else Verdict.UNMET
        else:
            verdict = Verdict.MET if met * 2 > k else Verdict.UNMET
        credit = 1.0 if verdict is Verdict.MET else 0.0
        agreement = max(met, k - met) / k
        reason = next(o.reason for o in samples if o.verdict is verdict)
        summary = f"{sum(o.verdict is verdict for o in samples)} of {k} samples {verdict}"
    return Outcome(verdict, credit, f"{reason} ({summary})", agreement=agreement, samples=pairs)
