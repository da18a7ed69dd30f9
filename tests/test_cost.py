"""What judging costs: prices, money as the usage line shows it, the budget (pure logic)."""

from __future__ import annotations

import pytest

from pytest_rubric._errors import BudgetSpent, JudgeError
from pytest_rubric._llm.base import JudgeStats
from pytest_rubric._llm.cost import (
    Budget,
    CostSettings,
    Price,
    money,
    parse_price,
    parse_prices,
)


def test_a_price_is_dollars_per_million_tokens_in_and_out() -> None:
    assert Price(0.15, 0.60).cost(1_000_000, 0) == pytest.approx(0.15)
    assert Price(0.15, 0.60).cost(2_000, 1_000) == pytest.approx(0.0009)


def test_ini_prices_one_model_a_line() -> None:
    prices = parse_prices(["gpt-4o-mini 0.15 0.60", "", "  openai:big  5 15 "])
    assert prices == {"gpt-4o-mini": Price(0.15, 0.6), "openai:big": Price(5, 15)}


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["gpt 0.15"], "*'gpt 0.15' is not MODEL IN OUT*e.g. gpt-4o-mini 0.15 0.60*"),
        (["gpt x 1"], "*gpt's input price 'x' is not a number of dollars*"),
        (["gpt 1 -2"], "*gpt's output price '-2' must be a finite number, 0 or more*"),
        (["gpt 1 inf"], "*must be a finite number*"),
        (["gpt 1 2", "gpt 3 4"], "model 'gpt' is priced twice"),
    ],
)
def test_a_bad_price_line_says_what_to_write(lines: list[str], message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_prices(lines)
    assert info.match(message.replace("*", ".*").replace("(", r"\(").replace(")", r"\)"))


def test_the_flag_price_is_in_comma_out() -> None:
    assert parse_price("0.15,0.60") == Price(0.15, 0.6)
    with pytest.raises(ValueError, match="not IN,OUT"):
        parse_price("0.15")


def test_the_judge_price_comes_from_the_flag_then_the_ini_by_full_name_then_model() -> None:
    settings = CostSettings(prices={"openai:m": Price(1, 2), "m": Price(3, 4)})
    assert settings.of("openai:m", "m", judge=True) == Price(1, 2)
    assert settings.of("anthropic:m", "m") == Price(3, 4)
    assert settings.of("other") is None
    flagged = CostSettings(prices=settings.prices, price=Price(9, 9))
    assert flagged.of("openai:m", judge=True) == Price(9, 9)
    assert flagged.of("openai:m") == Price(1, 2)  # the flag prices the judge, not a model


@pytest.mark.parametrize(
    ("dollars", "shown"),
    [(0, "$0.00"), (1.5, "$1.50"), (0.0123, "$0.0123"), (0.000015, "$0.000015"), (12, "$12.00")],
)
def test_money(dollars: float, shown: str) -> None:
    assert money(dollars) == shown


def test_the_usage_line_adds_the_cost_and_what_the_cache_saved() -> None:
    stats = JudgeStats(calls=2, tokens_in=2000, tokens_out=1000, cache_hits=3, cache_misses=2)
    stats.saved_in, stats.saved_out = 3000, 1500
    assert stats.line("j", price=Price(1, 2)) == (
        "judge j: 2 calls, 0 retries, 0 errors, tokens 2000 in / 1000 out, cost $0.004, "
        "cache 3 hits / 2 misses (saved $0.006)"
    )
    # Without a price the line is what it always was.
    assert stats.line("j") == (
        "judge j: 2 calls, 0 retries, 0 errors, tokens 2000 in / 1000 out, cache 3 hits / 2 misses"
    )


def test_a_budget_admits_calls_while_the_spend_is_below_it() -> None:
    stats = JudgeStats()
    budget = Budget(0.02, shown="0.02")
    budget.add_source(lambda: stats.cost(Price(1000, 1000)))
    budget.admit()
    stats.tokens_in, stats.tokens_out = 10, 5  # $0.015
    budget.admit()
    stats.tokens_in += 10  # $0.025
    with pytest.raises(BudgetSpent) as info:
        budget.admit()
    assert isinstance(info.value, JudgeError)
    assert str(info.value) == "cost budget of $0.02 spent (--rubric-max-cost)"


def test_each_xdist_worker_gets_an_equal_share_and_the_message_names_the_whole() -> None:
    settings = CostSettings(max_cost=1.0, max_cost_shown="1")
    budget = settings.budget(share=4)
    assert budget is not None and budget.limit == 0.25
    assert budget.message.startswith("cost budget of $1 spent")
    assert CostSettings().budget() is None
