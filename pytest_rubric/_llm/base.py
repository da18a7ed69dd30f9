"""What every part of the judge shares, without the HTTP machinery (no httpx import).

Its words (judge, client, runner, grader) mean what docs/development/glossary.md says. An
xdist controller never calls the judge, but it adds up the workers' :class:`CallStats`;
this module is all it needs of that.
"""

from __future__ import annotations

import math
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from .cost import Price

if TYPE_CHECKING:
    from .._results import Outcome


SEED = 1234
MAX_TOKENS = 1024
SAMPLE_TEMPERATURE = 0.7


class JudgeClient(Protocol):
    """What ``pytest_rubric_make_judge`` returns: ``complete`` (or a plain function returning
    the text); a ``name`` attribute, if any, names the judge in the summary."""

    async def complete(self, system: str, user: str) -> str: ...


@dataclass(frozen=True, slots=True)
class Sampling:
    """The sampling parameters of one judge call: greedy (temperature 0, a fixed seed) for
    one sample; with ``--rubric-judge-samples K``, K independent draws at
    ``SAMPLE_TEMPERATURE`` (the usual self-consistency setting), seeds ``SEED + i``."""

    temperature: float = 0.0
    seed: int = SEED
    max_tokens: int = MAX_TOKENS

    @classmethod
    def of(cls, sample: int, samples: int) -> Sampling:
        """The parameters of sample ``sample`` (0-based) out of ``samples``."""
        return cls() if samples <= 1 else cls(temperature=SAMPLE_TEMPERATURE, seed=SEED + sample)


@dataclass(frozen=True, slots=True)
class Reply:
    """What one call returned: the text, the tokens the provider counted (0: not said), and,
    through the cache, its key, whether it came from it, the endpoint it was recorded against
    and (``replay`` only) why the last reply was ``unusable`` (see ``_llm.cache``); from
    ``--rubric-recordings``, the ``recording`` file it came from."""

    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    key: str | None = None
    cached: bool = False
    endpoint: str | None = None
    unusable: str | None = None
    recording: str | None = None
    parsed: str | None = None  # from the cache: what was stored beside the text, as JSON
    # The text is a forced tool call's input: it must be the object, whole.
    structured: bool = False


@dataclass(frozen=True, slots=True)
class Judged:
    """The judge's outcomes for one answer, by criterion id; built once, never changed."""

    outcomes: Mapping[str, Outcome] = field(default_factory=dict)
    injection_suspected: bool = False
    # The holistic grader's 0-100 reply (a mean); None otherwise, or when a call failed.
    llm_raw_score: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "outcomes", types.MappingProxyType(dict(self.outcomes)))


def token_count(value: object) -> int:
    """A token count as a reply's ``usage``, the cache or a recording gives it, or 0 when it is
    not a plausible one: a string, a float (``1e400`` is infinite), a dict or a count above a
    billion is never converted."""
    return value if type(value) is int and 0 <= value <= 10**9 else 0


def mean_raw_score(scores: Iterable[float | None]) -> float | None:
    """The mean of several holistic 0-100 replies (judge samples, a panel's judges, an
    item's repeated answers); None when there is none, or when one of them is missing (a
    failed call has no score, and a mean without it would not be the same mean)."""
    if not (values := list(scores)) or any(v is None for v in values):
        return None
    return math.fsum(v for v in values if v is not None) / len(values)


@dataclass(slots=True)
class CallStats:
    """Usage of one judge over a run (updated from the runner's event loop only)."""

    calls: int = 0
    retries: int = 0
    errors: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    saved_in: int = 0  # the tokens the cache hits cost when they were first judged
    saved_out: int = 0
    estimated: int = 0  # replies without `usage`: their tokens estimated (4 characters each)
    # Of the tokens above, those of calls asked live after their batch (--rubric-judge-batch):
    # they cost the live price.
    live_in: int = 0
    live_out: int = 0
    fallbacks: list[str] = field(default_factory=list)
    # Cache hits recorded against an endpoint other than this judge's, by that endpoint.
    elsewhere: dict[str, int] = field(default_factory=dict)

    def cost(self, price: Price) -> float:
        """Dollars spent on this judge's calls so far."""
        batched = price.cost(self.tokens_in - self.live_in, self.tokens_out - self.live_out)
        return batched + (price.live or price).cost(self.live_in, self.live_out)
