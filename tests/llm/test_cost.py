"""What judging costs: prices, money as the usage line shows it, the budget (pure logic); then
end to end: prices in the usage line, the cache's savings, the budget."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_rubric._config import parsers
from pytest_rubric._errors import BudgetSpent, LLMError
from pytest_rubric._llm.base import CallStats
from pytest_rubric._llm.cost import Budget, CostSettings, Price, money
from pytest_rubric._render.summary import terminal_lines
from pytest_rubric._report.report import JudgeUsage, build_report
from tests.conftest import team_project
from tests.fake_llm import FakeLLM, text, verdict
from tests.judge.test_judge_e2e import judge_args


def test_a_price_is_dollars_per_million_tokens_in_and_out() -> None:
    assert Price(0.15, 0.60).cost(1_000_000, 0) == pytest.approx(0.15)
    assert Price(0.15, 0.60).cost(2_000, 1_000) == pytest.approx(0.0009)


def test_ini_prices_one_model_a_line() -> None:
    prices = parsers.prices(["gpt-4o-mini 0.15 0.60", "", "  openai:big  5 15 "])
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
        parsers.prices(lines)
    assert info.match(message.replace("*", ".*").replace("(", r"\(").replace(")", r"\)"))


def test_the_flag_price_is_in_comma_out() -> None:
    assert parsers.price("0.15,0.60") == Price(0.15, 0.6)
    with pytest.raises(ValueError, match="not IN,OUT"):
        parsers.price("0.15")


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


def _usage_text(*judges: tuple[str, CallStats, Price | None], **usage: Any) -> list[str]:
    """What the summary says of the judges' usage (the report carries it as data)."""
    report = build_report([], judge_usage=JudgeUsage(judges, **usage))
    return [line.text for line in terminal_lines(report)]


def test_the_usage_line_adds_the_cost_and_what_the_cache_saved() -> None:
    stats = CallStats(calls=2, tokens_in=2000, tokens_out=1000, cache_hits=3, cache_misses=2)
    stats.saved_in, stats.saved_out = 3000, 1500
    assert _usage_text(("j", stats, Price(1, 2))) == [
        "judge j: 2 calls, 0 retries, 0 errors, tokens 2000 in / 1000 out, cost $0.004, "
        "cache 3 hits / 2 misses (saved $0.006)"
    ]
    # Without a price the line is what it always was.
    assert _usage_text(("j", stats, None)) == [
        "judge j: 2 calls, 0 retries, 0 errors, tokens 2000 in / 1000 out, cache 3 hits / 2 misses"
    ]
    # A spent budget is said after, with how many criteria it left ERROR.
    spent = _usage_text(("j", stats, None), max_cost="0.03", over_budget=2)
    assert spent[-1] == "cost budget of $0.03 spent: 2 criteria left ERROR"


def test_a_budget_admits_calls_while_the_spend_is_below_it() -> None:
    stats = CallStats()
    budget = Budget(0.02, shown="0.02")
    budget.add_source(lambda: stats.cost(Price(1000, 1000)))
    budget.admit()
    stats.tokens_in, stats.tokens_out = 10, 5  # $0.015
    budget.admit()
    stats.tokens_in += 10  # $0.025
    with pytest.raises(BudgetSpent) as info:
        budget.admit()
    assert isinstance(info.value, LLMError)
    assert str(info.value) == "cost budget of $0.02 spent (--rubric-max-cost)"


def test_what_batched_calls_hold_keeps_a_call_out_without_refusing_it() -> None:
    budget = Budget(0.02, shown="0.02")
    assert budget.admit(0.03)  # the first joins whatever it holds
    assert budget.admit(0.01) is False and budget.admit()  # held, not spent: a live call starts
    budget.release(0.03)
    assert budget.admit(0.01)


def test_each_xdist_worker_gets_an_equal_share_and_the_message_names_the_whole() -> None:
    settings = CostSettings(max_cost=1.0, max_cost_shown="1")
    budget = settings.budget(share=4)
    assert budget is not None and budget.limit == 0.25
    assert budget.message.startswith("cost budget of $1 spent")
    assert CostSettings().budget() is None


# --- End to end: the usage line, the cache's savings, the budget in a session ---------------

Write = Callable[[str, str], Path]

PRICED = """
[pytest]
rubric_judge_backoff = 0.01
rubric_judge_prices =
    test-model 1000 2000
    other-model 1 1
"""


def _cases(n: int) -> str:
    """``n`` cases with one judged criterion each (one judge call each)."""
    return "cases:\n" + "\n".join(
        f"  - id: q{i}\n    response: 'answer {i}'\n    criteria:\n"
        f"      - {{id: said, requirement: 'Says answer {i}'}}"
        for i in range(n)
    )


def test_the_usage_line_shows_the_cost_and_a_warm_run_what_the_cache_saved(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM
) -> None:
    pytester.makeini(PRICED)
    write("cost.rubric.yaml", _cases(2))
    fake_llm.respond_with(lambda request: verdict("MET", input_tokens=100, output_tokens=50))
    cold = pytester.runpytest(*judge_args(fake_llm))
    cold.assert_outcomes(passed=2)
    # 200 tokens in at $1000/M and 100 out at $2000/M
    cold.stdout.fnmatch_lines(
        [
            "judge openai:test-model: 2 calls, 0 retries, 0 errors, tokens 200 in / 100 out, "
            "cost $0.40, cache 0 hits / 2 misses (saved $0.00)"
        ]
    )
    warm = pytester.runpytest(*judge_args(fake_llm))
    warm.assert_outcomes(passed=2)
    assert len(fake_llm.requests) == 2
    warm.stdout.fnmatch_lines(
        [
            "judge openai:test-model: 0 calls, 0 retries, 0 errors, tokens 0 in / 0 out, "
            "cost $0.00, cache 2 hits / 0 misses (saved $0.40)"
        ]
    )


def test_the_price_flag_prices_the_judge_whatever_the_ini_says(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM
) -> None:
    pytester.makeini(PRICED)
    write("cost.rubric.yaml", _cases(1))
    fake_llm.respond_with(lambda request: verdict("MET", input_tokens=1000, output_tokens=0))
    result = pytester.runpytest(*judge_args(fake_llm), "--rubric-judge-price", "0.15,0.60")
    result.stdout.fnmatch_lines(["judge openai:test-model: 1 calls, *, cost $0.00015, cache *"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rubric-judge-price", "0.15"], "*--rubric-judge-price: *'0.15' is not IN,OUT*"),
        (["--rubric-max-cost", "-1"], "*--rubric-max-cost: *'-1' is not a positive number*"),
        (["--rubric-max-cost", "1"], "*--rubric-max-cost needs the price of judge openai:*"),
    ],
)
def test_a_price_or_a_budget_that_cannot_be_used_is_a_usage_error(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM, args: list[str], message: str
) -> None:
    write("cost.rubric.yaml", _cases(1))
    result = pytester.runpytest(*judge_args(fake_llm), *args)
    assert result.ret in (pytest.ExitCode.USAGE_ERROR, 2)
    result.stderr.fnmatch_lines([message])
    assert not fake_llm.requests


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--rubric-judge-price", "0.15,0.60"],
            "*--rubric-judge-price prices a single judge, and this run has a panel of 2 "
            "(openai:small, openai:big): price each judge with a line `MODEL IN OUT` in ini "
            "rubric_judge_prices instead*",
        ),
        (
            ["--rubric-max-cost", "1"],
            "*--rubric-max-cost needs the price of judge openai:small: add a line "
            "`small IN OUT` (dollars per million tokens) to ini rubric_judge_prices*",
        ),
    ],
)
def test_a_panel_is_priced_judge_by_judge_in_the_ini(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    message: str,
) -> None:
    """One price for the whole panel would override the ini's price of a judge that has one,
    in silence: the flag is for a single judge."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    team_project(
        pytester,
        write,
        app="def answer(question: str) -> str:\n    return 'Two days a week.'\n",
        unit_test="def test_nothing():\n    pass\n",
        targets="from app.bot import answer\n\n\ndef bot(question: str) -> str:\n"
        "    return answer(question)\n",
        ini=f"rubric_judge_url = {fake_llm.openai_url}\nrubric_judge_prices =\n    big 5 15\n",
    )
    write("evals/faq.rubric.yaml", "target: targets:bot\n" + _cases(1))
    panel = ["--rubric-judge", "openai:small", "--rubric-judge", "openai:big"]
    result = pytester.runpytest(*panel, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "--rubric-judge-price IN,OUT" not in result.stderr.str()
    assert not fake_llm.requests


def test_the_budget_stops_new_calls_and_leaves_the_rest_error(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    pytester.makeini(PRICED)
    write("cost.rubric.yaml", _cases(5))
    # $0.02 a call (10 in at $1000/M, 5 out at $2000/M): the second call reaches $0.03.
    fake_llm.respond_with(lambda request: verdict("MET", input_tokens=10, output_tokens=5))
    result = pytester.runpytest(
        *judge_args(fake_llm),
        "--rubric-max-cost",
        "0.03",
        "--rubric-concurrency",
        "1",
        "--rubric-json",
        "out.json",
    )
    result.assert_outcomes(passed=2, errors=3)
    assert len(fake_llm.requests) == 2
    refused = [
        c for r in rubric_json()["results"] for c in r["criteria"] if c["verdict"] == "ERROR"
    ]
    assert len(refused) == 3
    assert all(c["reason"].startswith("cost budget of $0.03 spent") for c in refused)
    result.stdout.fnmatch_lines(
        [
            "judge openai:test-model: 2 calls, 0 retries, 0 errors, tokens 20 in / 10 out, "
            "cost $0.04, cache 0 hits / 5 misses (saved $0.00)",
            "cost budget of $0.03 spent: 3 criteria left ERROR",
        ],
        consecutive=True,
    )


def test_xdist_workers_share_the_budget_out(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM
) -> None:
    pytester.makeini(PRICED)
    write("cost.rubric.yaml", _cases(8))
    fake_llm.respond_with(lambda request: verdict("MET", input_tokens=10, output_tokens=5))
    # $0.02 a call; a share of $0.02 each: one call per worker, then the share is spent.
    result = pytester.runpytest(
        *judge_args(fake_llm), "--rubric-max-cost", "0.04", "--rubric-concurrency", "2", "-n", "2"
    )
    result.assert_outcomes(passed=2, errors=6)
    assert len(fake_llm.requests) == 2
    result.stdout.fnmatch_lines(
        [
            "judge openai:test-model: 2 calls, *cost $0.04, *",
            "cost budget of $0.04 spent: 6 criteria left ERROR",
        ]
    )


def test_cached_replies_are_served_after_the_budget_is_spent(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM
) -> None:
    pytester.makeini(PRICED)
    write("cost.rubric.yaml", _cases(2))
    fake_llm.respond_with(lambda request: verdict("MET", input_tokens=10, output_tokens=5))
    pytester.runpytest(*judge_args(fake_llm)).assert_outcomes(passed=2)
    write("cost.rubric.yaml", _cases(4))
    result = pytester.runpytest(
        *judge_args(fake_llm),
        "--rubric-max-cost",
        "0.01",
        "--rubric-concurrency",
        "1",
    )
    # Two replies from the cache, free; one call ($0.02) spends the budget; one refused.
    result.assert_outcomes(passed=3, errors=1)
    assert len(fake_llm.requests) == 3


def test_model_calls_share_the_budget(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini(
        "[pytest]\nrubric_judge_backoff = 0.01\nrubric_judge_prices = tiny 1000 2000\n"
    )
    write(
        "m.rubric.yaml",
        "cases:\n"
        + "\n".join(
            f"  - id: q{i}\n    question: 'What is 6 times 7? ({i})'\n"
            "    criteria: [{id: value, type: number, value: 42}]"
            for i in range(3)
        ),
    )
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_url)
    fake_llm.respond_with(lambda request: text("It is 42.", input_tokens=10, output_tokens=5))
    result = pytester.runpytest("--rubric-model=openai:tiny", "--rubric-max-cost=0.01")
    result.assert_outcomes(passed=1, errors=2)  # $0.02 for the first answer
    assert len(fake_llm.requests) == 1
    # The summary counts the criteria of the answers the budget refused too.
    result.stdout.fnmatch_lines(["cost budget of $0.01 spent: 2 criteria left ERROR"])
    # A model without a price cannot be budgeted.
    result = pytester.runpytest("--rubric-model=openai:other", "--rubric-max-cost=1")
    result.stderr.fnmatch_lines(["*--rubric-max-cost needs the price of model other*"])


@pytest.mark.parametrize(
    "usage",
    [
        "",
        ', "usage": {}',
        ', "usage": {"prompt_tokens": "900000", "completion_tokens": "900000"}',
        ', "usage": {"prompt_tokens": -5, "completion_tokens": 1.5}',
    ],
    ids=["none", "empty", "texts", "negative"],
)
def test_replies_without_usage_are_estimated_so_a_budget_still_binds(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM, usage: str
) -> None:
    """A server that reports no `usage`, or counts that are not token counts, would cost $0
    and never bind a budget: its tokens count at 4 characters each, and the summary says so
    once."""
    from tests.fake_llm import raw

    pytester.makeini(PRICED)
    write("cost.rubric.yaml", _cases(6))
    body = '{"choices": [{"message": {"content": "{\\"reason\\": \\"said\\", \\"verdict\\": \\"MET\\"}"}}]%s}'
    fake_llm.respond_with(lambda request: raw(body % usage))
    result = pytester.runpytest(
        *judge_args(fake_llm),
        "--rubric-max-cost",
        "0.5",
        "--rubric-concurrency",
        "1",
        "--color=yes",
    )
    assert 1 <= len(fake_llm.requests) < 6  # the budget bound, on estimated tokens
    # The warning and the budget's line are data with a severity the terminal colours: yellow
    # and red, where the judge's usage line is plain.
    yellow, red = "\x1b[33m", "\x1b[31m"
    assert f"{yellow}warning: judge openai:test-model sent" in result.stdout.str()
    assert re.search(re.escape(red) + r"[^\n]*criteri(a|on) left ERROR", result.stdout.str())
    assert not re.search(r"\x1b\[3\dmjudge openai:test-model: \d+ calls", result.stdout.str())
    result.stdout.fnmatch_lines(
        [
            f"*warning: judge openai:test-model sent {len(fake_llm.requests)} replies without "
            "`usage`; with prices or a budget set, their tokens are estimated at 4 characters "
            "per token*"
        ]
    )
    assert result.stdout.str().count("replies without `usage`") == 1
