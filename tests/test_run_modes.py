"""What a user sees is the same without xdist, with ``-n 0`` and with ``-n 2``: the summary
(judge usage included, summed over workers) and the JSON, byte for byte."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import RUN_MODES
from tests.fake_llm import Action, FakeLLM, Recorded, status, verdict

Write = Callable[[str, str], Path]

SUITE = """
cases:
  - id: var
    question: "What is the horizon of a 1-day VaR?"
    responses:
      careful: "One day, at the stated confidence level."
      bold: "Definitely ten days, always."
      flaky: "One day, I think."
    criteria:
      - {id: day, type: any_of, any_of: [one day]}
      - {id: horizon, requirement: "Says the horizon is one day"}
      - {id: wrong, type: forbidden, phrases: [ten days], penalty: 1}
  - id: sharpe
    question: "What does the Sharpe ratio divide by?"
    responses:
      careful: "The standard deviation of excess returns."
      bold: "The mean return, obviously."
      flaky: "Volatility, probably."
    criteria:
      - {id: sd, type: any_of, any_of: [standard deviation, volatility]}
      - {id: names, requirement: "Names the volatility of excess returns"}
"""


def _responder(request: Recorded) -> Action:
    """Deterministic in the request alone (never its arrival order)."""
    user = request.body["messages"][1]["content"]
    seed = request.body["seed"]
    if "Volatility, probably." in user:
        return status(503)  # this answer's judged criterion is an ERROR
    if "One day, I think." in user:
        return verdict("UNMET" if seed % 3 == 1 else "MET", "says one day, hedged")
    met = "One day, at" in user or "standard deviation" in user
    return verdict("MET" if met else "UNMET", "judged on content")


def _summary(output: list[str]) -> list[str]:
    start = next(i for i, line in enumerate(output) if "rubric summary" in line)
    end = next(i for i in range(start + 1, len(output)) if output[i].startswith("="))
    return output[start:end]


def test_summary_and_json_are_the_same_in_every_run_mode(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM
) -> None:
    write("s.rubric.yaml", SUITE)
    pytester.makeini("[pytest]\nrubric_judge_backoff = 0.01\nrubric_judge_attempts = 2\n")
    fake_llm.respond_with(_responder)
    seen: dict[str, tuple[list[str], str]] = {}
    for mode, args in RUN_MODES.items():
        json_path = f"{mode}.json"
        result = pytester.runpytest(
            "--rubric-judge=openai:m",
            f"--rubric-judge-url={fake_llm.openai_url}",
            "--rubric-judge-samples=3",
            "--rubric-cache=off",  # every mode calls the judge itself
            "--rubric-json",
            json_path,
            *args,
        )
        result.assert_outcomes(passed=3, failed=2, errors=1)
        seen[mode] = (_summary(result.outlines), (pytester.path / json_path).read_text())
    (summary, document), *others = seen.values()
    assert any("unstable" in line for line in summary)
    assert any(line.startswith("judge openai:m: ") for line in summary)
    for mode, (other_summary, other_document) in zip(list(seen)[1:], others, strict=True):
        assert other_summary == summary, mode
        assert other_document == document, mode
