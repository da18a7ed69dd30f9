"""A judged criterion's requirement reaches every output: a rubric in the rubric library's
weight-and-requirement form names its criteria c1, c2, c3, which say nothing of what the
judge was asked."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from typing import Any

import pytest

from pytest_rubric._render.csv import HEADER
from tests.fake_llm import FakeLLM, Recorded, verdict

# The team's refund evals, written in the rubric library's form (no ids, no types), beside
# one deterministic check.
LIBRARY_FORM = """
suite: refunds
target: app.bot:answer
cases:
  - id: refund
    criteria:
      - {weight: 3, requirement: "Says refunds end 30 days after purchase"}
      - {weight: 2, requirement: "Points the customer to the returns page"}
      - {weight: -1, requirement: "Promises an exception to the policy"}
      - {id: window, type: any_of, any_of: ["30 days"]}
"""
MET = "Says refunds end 30 days after purchase"
UNMET = "Points the customer to the returns page"
ERROR_AVOIDED = "Promises an exception to the policy"


def _judge(request: Recorded) -> object:
    asked = json.dumps(request.body)
    return verdict("MET" if MET in asked else "UNMET", "judged on the answer")


@pytest.fixture
def run(
    pytester: pytest.Pytester, team: Callable[..., None], fake_llm: FakeLLM
) -> pytest.RunResult:
    """The team's evals run with every output written."""
    team(refunds=LIBRARY_FORM)
    fake_llm.respond_with(_judge)
    result = pytester.runpytest(
        "--rubric-judge=openai:judge-model",
        f"--rubric-judge-url={fake_llm.openai_url}",
        "--rubric-json=out.json",
        "--rubric-csv=out.csv",
        "--rubric-markdown=out.md",
        "--rubric-html=out.html",
    )
    result.assert_outcomes(failed=1)  # (3 + 1) / 6 < 0.8
    return result


def test_the_failure_table_and_the_json_give_each_judged_requirement_under_its_id(
    run: pytest.RunResult, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    # One session for both: the table and the JSON come from the same run. In one process:
    # e2e/test_run_modes finds a judged requirement under its criterion under -n 2 too.
    run.stdout.fnmatch_lines(
        [
            "   c1 * judge * MET * 3  judged on the answer",
            f"     requirement: {MET}",
            "x  c2 * judge * UNMET * 2  judged on the answer",
            f"     requirement: {UNMET}",
            "   c3 * judge * UNMET * -1  judged on the answer",
            f"     requirement: {ERROR_AVOIDED}",
            "   window * any_of * MET * 1  found '30 days'",
            "  - score 0.67 is below min_score 0.80",
        ],
        consecutive=True,
    )
    (result,) = rubric_json()["results"]
    assert {c["id"]: c["requirement"] for c in result["criteria"]} == {
        "c1": MET,
        "c2": UNMET,
        "c3": ERROR_AVOIDED,
        "window": None,
    }


def test_the_csv_keeps_its_header_and_gives_the_requirement_with_the_reason(
    run: pytest.RunResult, pytester: pytest.Pytester
) -> None:
    with (pytester.path / "out.csv").open(newline="", encoding="utf-8") as f:
        header, *rows = list(csv.reader(f))
    assert tuple(header) == HEADER
    reasons = {row[HEADER.index("criterion")]: row[HEADER.index("reason")] for row in rows}
    assert reasons == {
        "c1": f"requirement: {MET}; reason: judged on the answer",
        "c2": f"requirement: {UNMET}; reason: judged on the answer",
        "c3": f"requirement: {ERROR_AVOIDED}; reason: judged on the answer",
        "window": "found '30 days'",
    }


def test_markdown_and_html_show_the_requirement_that_went_wrong(
    run: pytest.RunResult, pytester: pytest.Pytester
) -> None:
    markdown = (pytester.path / "out.md").read_text(encoding="utf-8")
    assert f"- c2 UNMET: requirement: {UNMET}; reason: judged on the answer" in markdown
    html = (pytester.path / "out.html").read_text(encoding="utf-8")
    for cid, requirement in [("c1", MET), ("c2", UNMET), ("c3", ERROR_AVOIDED)]:
        assert f'<td>{cid}<br><small class="requirement">{requirement}</small></td>' in html
