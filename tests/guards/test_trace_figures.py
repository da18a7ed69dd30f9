"""A trace's figures (tokens, cost, latency) are bounded where a trace is read, and the
leaderboard's aggregates of them cannot overflow: every output is written, as JSON that
``--rubric-baseline`` and ``merge`` read back (docs/guides/agents-and-rag.md).

Before the bounds, two answers costing 1.5e308 each made the summed cost overflow (a
traceback at the end of the session, no output written), and latencies of 1.5e308 and
1.6e308 made the median inf, written as ``Infinity`` in a JSON its own baseline refused.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pytest_rubric._cli.merge import main as cli
from pytest_rubric._errors import DocumentError
from pytest_rubric._load.traces import ShapeError, read_returned, recorded_trace
from pytest_rubric._report.document import document, parse_document
from pytest_rubric._report.leaderboard import TraceFigures
from pytest_rubric._report.report import build_report
from pytest_rubric._results import CaseResult, CriterionResult, Verdict
from pytest_rubric._trace import MAX_COST_USD, MAX_LATENCY_S, MAX_TOKENS, Trace, Usage
from tests.conftest import ANSWERS, SUPPORT

pytestmark = pytest.mark.hostile

Write = Callable[[str, str], Path]

# The team's suite without its judged criteria: the run needs no judge.
PASSING = "\n".join(line for line in SUPPORT.splitlines() if "requirement:" not in line)
# One case answered twice from a responses file, each answer with its trace's figures.
TIMED = """
suite: timed
responses: ../answers/
repeat: 2
cases:
  - id: c1
    question: "Was order 1001 refunded?"
    criteria:
      - {id: says, type: any_of, any_of: ["refund"]}
"""


def strict(path: Path) -> dict[str, Any]:
    """The JSON file at ``path``, read as RFC 8259 reads it: no NaN, no Infinity."""

    def refused(constant: str) -> None:
        raise AssertionError(f"{path.name} holds {constant}, which is not JSON")

    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"), parse_constant=refused)
    return data


def jsonl(*lines: dict[str, Any]) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


# --- end to end ------------------------------------------------------------------------------


def test_a_cost_past_the_bound_is_an_error_naming_it_and_every_output_is_written(
    pytester: pytest.Pytester,
    team: Callable[..., None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    answers = {
        case: {"answer": text, "usage": {"cost_usd": 1.5e308}} for case, text in ANSWERS.items()
    }
    team(support=PASSING, answers=answers)
    result = pytester.runpytest(
        "--rubric-json=out.json", "--rubric-html=out.html", "--rubric-csv=out.csv"
    )
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            '*target app.bot:answer returned "usage.cost_usd" is 1.5e+308, not a number of US '
            "dollars from 0 to 1,000,000; a target returns one of: *"
        ]
    )
    shown = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in shown and "INTERNALERROR" not in shown
    assert (pytester.path / "out.html").is_file() and (pytester.path / "out.csv").is_file()
    assert len(strict(pytester.path / "out.json")["results"]) == 2
    capsys.readouterr()
    assert cli(["merge", "out.json", "--json", "merged.json"]) == 1  # the ERRORs, not a crash
    assert "Traceback" not in capsys.readouterr().err
    assert len(strict(pytester.path / "merged.json")["results"]) == 2


def test_figures_at_the_bound_read_back_and_a_latency_past_it_is_a_located_error(
    pytester: pytest.Pytester,
    team: Callable[..., None],
    write: Write,
    capsys: pytest.CaptureFixture[str],
) -> None:
    team(timed=TIMED)
    usage = {"input_tokens": MAX_TOKENS, "output_tokens": MAX_TOKENS, "cost_usd": MAX_COST_USD}
    at_most = {"id": "c1", "response": "refund issued", "usage": usage, "latency_s": 1e6}
    write("answers/agent.jsonl", jsonl(at_most, at_most))
    pytester.runpytest("--rubric-json=out.json").assert_outcomes(passed=1)
    (row,) = strict(pytester.path / "out.json")["leaderboard"]
    assert (row["latency_s_p50"], row["cost_usd"]) == (1e6, 2e6)
    # The run's own document is a baseline its next run reads, and a shard merge reads.
    pytester.runpytest("--rubric-baseline=out.json").assert_outcomes(passed=1)
    assert cli(["merge", "out.json", "--json", "merged.json"]) == 0
    assert strict(pytester.path / "merged.json")["leaderboard"][0]["cost_usd"] == 2e6

    past = [{"id": "c1", "response": "refund issued", "latency_s": s} for s in (1.5e308, 1.6e308)]
    write("answers/agent.jsonl", jsonl(*past))
    capsys.readouterr()
    result = pytester.runpytest("--rubric-json=again.json")
    result.assert_outcomes(errors=1)  # the rubric file's collection error
    result.stdout.fnmatch_lines(
        [
            "*agent.jsonl:1, case 'c1', field 'latency_s': `latency_s` must be a number of "
            "seconds from 0 to 1,000,000, not 1.5e+308",
            '*-> write the wall time of its call in seconds, e.g. "latency_s": 1.2',
            "*agent.jsonl:2, case 'c1', field 'latency_s': `latency_s` must be *, not 1.6e+308",
        ],
        consecutive=True,
    )


# --- the readers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("usage", "said"),
    [
        ({"cost_usd": 1.5e308}, '"usage.cost_usd" is 1.5e+308, not a number of US dollars'),
        ({"cost_usd": math.nextafter(MAX_COST_USD, math.inf)}, '"usage.cost_usd" is 1000000.0000'),
        ({"input_tokens": 2**70}, '"usage.input_tokens" is 1180591620717411303424, not a whole'),
        ({"output_tokens": MAX_TOKENS + 1}, "not a whole number of tokens from 0 to 1,000,000,0"),
        ({"cost_usd": 10**5000}, '"usage.cost_usd" is a number of thousands of digits, not'),
    ],
)
def test_a_returned_figure_past_its_bound_is_a_shape_error_saying_what_to_write(
    usage: dict[str, Any], said: str
) -> None:
    with pytest.raises(ShapeError) as raised:
        read_returned({"answer": "done", "usage": usage})
    assert said in str(raised.value) and raised.value.field == "usage"


def test_a_figure_at_its_bound_is_read() -> None:
    usage = {"input_tokens": MAX_TOKENS, "output_tokens": 0, "cost_usd": MAX_COST_USD}
    _, trace = read_returned({"answer": "done", "usage": usage})
    assert trace is not None and trace.usage == Usage(MAX_TOKENS, 0, MAX_COST_USD)


def test_the_response_cache_and_a_document_hold_a_trace_to_the_same_bounds() -> None:
    cached = {"response": "done", "trace": {"source": "returned", "latency_s": 1.5e308}}
    with pytest.raises(ShapeError, match="no target could have returned"):
        recorded_trace(json.dumps(cached))
    data = json.loads(json.dumps(document(build_report([answer(latency=1.0, cost=0.5)]))))
    data["results"][0]["samples"][0]["trace"]["usage"]["cost_usd"] = 1.5e308
    with pytest.raises(DocumentError) as raised:
        parse_document(json.dumps(data), name="shard.json")
    assert "shard.json: results[0].samples[0].trace.usage.cost_usd: expected at most" in str(
        raised.value
    )


def test_the_response_cache_trace_is_read_by_the_readers_of_a_returned_one() -> None:
    """A passage id or source that is not text is made text, as a target's is; metadata that
    JSON cannot hold (NaN) is refused, as a target's is."""
    context = [{"text": "t", "id": 7, "source": ["a", 2]}, {"text": "u", "id": {"x": [1]}}]
    cached = {"response": "done", "trace": {"source": "returned", "context": context}}
    trace = recorded_trace(json.dumps(cached))
    _, returned = read_returned({"answer": "done", "context": context})
    assert trace is not None and returned is not None
    assert trace.context == returned.context
    assert [(p.id, p.source) for p in trace.context] == [("7", "['a', 2]"), ("{'x': [1]}", None)]
    cached["trace"]["metadata"] = {"x": math.nan}
    with pytest.raises(ShapeError, match='"metadata" cannot be written as JSON'):
        recorded_trace(json.dumps(cached))
    with pytest.raises(ShapeError, match='"metadata" cannot be written as JSON'):
        read_returned({"answer": "done", "metadata": {"x": math.nan}})


# --- the aggregates --------------------------------------------------------------------------


def answer(*, latency: float, cost: float, case: str = "c") -> CaseResult:
    """A graded answer whose trace took ``latency`` seconds and cost ``cost``."""
    criterion = CriterionResult("c", "contains", "substance", 1.0, Verdict.MET, 1.0, "found")
    result = CaseResult(
        f"s.rubric.yaml::{case}[bot]", "s", case, "bot", 1.0, 1.0, 0.5, True, [criterion],
        0.5, 0.5, 0.5,
    )  # fmt: skip
    return replace(result, trace=Trace("returned", usage=Usage(cost_usd=cost), latency_s=latency))


# Any figure a float holds, and figures within the bounds, which the readers allow.
figure = st.floats(0, sys.float_info.max) | st.floats(0, MAX_COST_USD)


@given(st.lists(st.tuples(figure, figure), min_size=1, max_size=12))
@example([(1.5e308, 1.5e308), (1.6e308, 1.6e308)])
def test_the_figures_are_finite_json_whatever_the_traces_hold(
    pairs: list[tuple[float, float]],
) -> None:
    figures = TraceFigures.of([answer(latency=s, cost=c) for s, c in pairs])
    assert figures is not None and figures.latency_s_p50 is not None
    json.dumps(asdict(figures), allow_nan=False)  # raises on inf or NaN
    latencies = sorted(s for s, _ in pairs)
    assert latencies[0] <= figures.latency_s_p50 <= latencies[-1]
    if latencies[-1] <= MAX_LATENCY_S:
        median = statistics.median(latencies)  # the same but for rounding (subnormals too)
        assert math.isclose(figures.latency_s_p50, median, rel_tol=1e-15, abs_tol=1e-300)
    costs = [c for _, c in pairs]
    # Past the bound, no reader gives it: a trace built by hand, whose cost is unknown.
    expected = math.fsum(costs) if max(costs) <= MAX_COST_USD else None
    assert figures.cost_usd == expected


def test_200000_answers_at_the_bounds_sum_and_read_back() -> None:
    at_most = answer(latency=MAX_LATENCY_S, cost=MAX_COST_USD)
    figures = TraceFigures.of([at_most] * 200_000)
    assert figures == TraceFigures(tool_calls=None, latency_s_p50=MAX_LATENCY_S, cost_usd=2e11)
    # A sum past one answer's bound is a leaderboard's to hold: a merge reads it back.
    results = [answer(latency=MAX_LATENCY_S, cost=MAX_COST_USD, case=f"c{i}") for i in range(3)]
    data = json.loads(json.dumps(document(build_report(results)), allow_nan=False))
    assert data["leaderboard"][0]["cost_usd"] == 3e6
    read = parse_document(json.dumps(data), name="shard.json")
    (row,) = build_report(read.results).leaderboard
    assert row.traced == TraceFigures(None, MAX_LATENCY_S, 3e6)
