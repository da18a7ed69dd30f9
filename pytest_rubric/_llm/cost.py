"""What judging costs in dollars, and the budget that stops new calls once it is spent.

Prices are dollars per million tokens (ini ``rubric_judge_prices``, ``--rubric-judge-price``,
read by ``_config.parsers``); a run's cost comes from
:class:`~pytest_rubric._llm.base.CallStats`' token counts, so an xdist controller prices the
whole run as one process would. ``--rubric-max-cost`` is a :class:`Budget`: a call starts only
while the spend so far is below it (each worker gets an equal share), so at most the calls in
flight overshoot it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .._errors import BudgetSpent

_PER = 1_000_000  # prices are per million tokens


@dataclass(frozen=True, slots=True)
class Price:
    """Dollars per million input tokens and per million output tokens."""

    input: float
    output: float
    # Through the provider's batch API (--rubric-judge-batch): None, half the live price.
    batch_input: float | None = None
    batch_output: float | None = None
    # A batch price's live one: what a call asked live after its batch (a missing result) costs.
    live: Price | None = field(default=None, kw_only=True)

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return (tokens_in * self.input + tokens_out * self.output) / _PER

    def batch(self) -> Price:
        """The price of the same tokens through the batch API (``--rubric-judge-batch``)."""
        return Price(
            self.input / 2 if self.batch_input is None else self.batch_input,
            self.output / 2 if self.batch_output is None else self.batch_output,
            live=self,
        )


@dataclass(frozen=True, slots=True)
class CostSettings:
    """The prices and the budget of a run, as the flags and the ini give them."""

    prices: Mapping[str, Price] = field(default_factory=dict)  # ini rubric_judge_prices
    price: Price | None = None  # --rubric-judge-price: the judge's, whatever its name
    max_cost: float | None = None  # --rubric-max-cost, the whole run's
    max_cost_shown: str = ""  # as the user wrote it, for `cost budget of $X spent`

    def of(self, *names: str, judge: bool = False) -> Price | None:
        """The price of a judge (``judge``: ``--rubric-judge-price`` first) or a model: the
        ini line of the first of ``names`` listed (``PROVIDER:MODEL``, then ``MODEL``)."""
        if judge and self.price is not None:
            return self.price
        return next((self.prices[name] for name in names if name in self.prices), None)

    def budget(self, *, share: int = 1) -> Budget | None:
        """This process's budget: an equal share of ``--rubric-max-cost`` per xdist worker."""
        if self.max_cost is None:
            return None
        return Budget(self.max_cost / max(1, share), shown=self.max_cost_shown)


def money(dollars: float) -> str:
    """Dollars as the usage line shows them: cents at least, and the digits a small cost needs
    (``$1.50``, ``$0.0123``, ``$0.000015``)."""
    whole, _, cents = f"{dollars:.6f}".rstrip("0").partition(".")
    return f"${whole}.{cents.ljust(2, '0')}"


class Budget:
    """``--rubric-max-cost``: the dollars one process may spend; the spend is read from its
    sources (one judge's or model's tokens so far, a failed call's included), and what the
    calls sent through the batch API hold until their batch ends (their tokens are counted
    only then, so without it a batch would start every call it gathers)."""

    def __init__(self, limit: float, *, shown: str) -> None:
        self.limit = limit
        self.shown = shown  # the budget as the user wrote it (the whole run's, not a share)
        self._sources: list[Callable[[], float]] = []
        self._held = 0.0
        self._lock = threading.Lock()

    def add_source(self, spent: Callable[[], float]) -> None:
        with self._lock:
            self._sources.append(spent)

    def admit(self, hold: float = 0.0) -> bool:
        """Let a call start while the spend so far is below the limit, or raise
        :class:`BudgetSpent`; a batched call joins only while what the gathered calls hold is
        too, holding ``hold`` till :meth:`release`. Else False: what is held is not spent, so it
        waits for a release and asks again (a later batch, or refused on the spend recorded)."""
        with self._lock:
            sources = list(self._sources)
        if (spent := sum(source() for source in sources)) >= self.limit:
            raise BudgetSpent(self.message)
        with self._lock:
            if admitted := not hold or spent + self._held < self.limit:
                self._held += hold
        return admitted

    def release(self, hold: float) -> None:
        """The call :meth:`admit` held ``hold`` for has ended: its tokens are counted now."""
        if hold:
            with self._lock:
                self._held -= hold

    @property
    def message(self) -> str:
        """Why a call did not start (every criterion it left is ERROR with this reason)."""
        return f"cost budget of ${self.shown} spent (--rubric-max-cost)"
