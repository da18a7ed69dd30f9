"""What a user sees is the same without xdist, with ``-n 0`` and with ``-n 2``: the summary
(judge usage and the baseline gate included), the exit status, the JSON (its pairwise included),
the HTML report, the Markdown, the CSV and the GitHub step summary byte for byte, and the JUnit
properties of every test case.

This is why the tests of each output format (render/test_formats, render/test_summary,
report/test_gates, plugin/test_assert_rubric, load/test_loading_limits) run in one mode only,
and plugin/test_collect's stray response, judge/test_reply_limits's quoted key,
judge/test_judge_samples's unstable samples, judge/test_judge_e2e's canary key,
render/test_requirement_shown's failure table and report/test_before_and_after's failure report
in process only: the suite here holds what they exercise (judged and deterministic criteria, an
ERROR, judge samples that disagree, a judged requirement under its criterion in the failure
table, a case's response before and after, ``assert_rubric`` results from a plain test, a
rubric file that is a collection error, a case that regressed against the baseline, a response
that matches no case and is one warning however many workers there are, judge reasons and
failed replies (an HTTP error, a reply not JSON) that quote the API key or pieces of it, which
no output may show)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RUN_MODES, timeless
from tests.fake_llm import Action, FakeLLM, Recorded, status, text, verdict
from tests.judge.test_reply_limits import KEY, leaked
from tests.render.test_summary import TWO_SUBJECTS

Write = Callable[[str, str], Path]

SUITE = """
calibration:  # graded once per session, whichever way the run is split
  - {case: var, criterion: horizon, response: "One day, at the 99% level.", verdict: MET}
  - {case: var, criterion: horizon, response: "Ten days.", verdict: UNMET}
  - {case: var, criterion: horizon, response: "A day.", verdict: MET}
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
      - {id: excess, requirement: "Says the returns are in excess of the risk-free rate"}
"""

# The baseline was taken when bold still answered sharpe right: that case regressed.
BASELINE_SUITE = SUITE.replace("The mean return, obviously.", "The standard deviation, sure.")

# assert_rubric in a plain test: its results ride on the test's report, like a rubric item's,
# and so does the failure it raises.
APP = """
import pytest
from pytest_rubric import RubricAssertionError, assert_rubric

CRITERIA = [{"id": "capital", "type": "any_of", "any_of": ["paris"]}]

def test_capital():
    assert_rubric("Paris.", CRITERIA, subject="careful", query="Capital of France?")
    assert_rubric("PARIS!", CRITERIA, subject="careful")
    assert_rubric("Lyon.", CRITERIA, subject="bold")

def test_a_failure_it_expects():  # caught, so it counts nowhere
    with pytest.raises(RubricAssertionError):
        assert_rubric("Lyon.", CRITERIA, subject="caught")
"""
APP_FAILURE = [
    "E       pytest_rubric.RubricAssertionError: rubric test_capital[[]bold[]]: "
    "score 0.00 (min_score 0.80, raw 0) FAILED",
    "E          criterion  type    verdict  weight  reason",
    "E       x  capital    any_of  UNMET         1  none of 'paris' found",
]

# A judged criterion's requirement under it in the failure table (render/test_requirement_shown),
# and the regressed case's response before and after (report/test_before_and_after): each
# failure report is made where its item ran.
REQUIREMENT_SHOWN = [
    "x  horizon    judge      UNMET         1  judged on content (3 of 3 votes UNMET)",
    "     requirement: Says the horizon is one day",
]
BEFORE_AND_AFTER = [
    "since the baseline:",
    "verdicts changed: sd MET -> UNMET, names MET -> UNMET, excess MET -> UNMET",
    "baseline (score 1.00): The standard deviation, sure.",
    "now (score 0.00): The mean return, obviously.",
]

# Repeated answers from a responses file, with tags: samples, pass rates, intervals and the
# suite and tag breakdowns are all gathered on the controller, so they match byte for byte.
REPEATED = """
suite: repeated
repeat: 3
pass_when: 0.6
responses: answers/
cases:
  - id: r1
    tags: [theme:risk]
    criteria:
      - {id: pct, type: any_of, any_of: ["1%"], tags: ["axis:accuracy"]}
      - {id: loss, type: any_of, any_of: [loss]}
  - id: r2
    criteria: [{id: sd, type: any_of, any_of: [deviation], tags: ["axis:accuracy"]}]
"""
REPEATED_ANSWERS = "\n".join(
    [
        # Traces ride with results through xdist: a context, tool calls, a latency, a cost.
        '{"id": "r1", "response": "A 1% loss.", "latency_s": 0.25, '
        '"context": [{"id": "kb1", "text": "A 1% loss is the VaR."}]}',
        '{"id": "r1", "response": "A 1% chance."}',
        '{"id": "r1", "response": "A 1% loss or more."}',
        '{"id": "r2", "response": "The standard deviation.", "usage": {"cost_usd": 0.001}, '
        '"messages": [{"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", '
        '"function": {"name": "lookup", "arguments": "{}"}}]}, '
        '{"role": "tool", "tool_call_id": "c1", "content": "sd"}]}',
        '{"id": "r2", "response": "The mean."}',
        # No case r9: one warning (plugin/test_collect), once however many workers there are.
        '{"id": "r9", "response": "Stray."}',
    ]
)
STRAY_WARNING = (
    "*RubricWarning: *steady.jsonl:6: the response of subject 'steady' for case 'r9' "
    "matches no collected case*"
)

RAISES = """
target: bot:careful
cases:
  - id: boom
    question: "Anything?"
    criteria: [{id: any, type: any_of, any_of: [x]}]
"""

# A rubric file too deep to load: one collection error, and the rest of the session runs.
DEEP = '{"cases": ' + "[" * 100_000 + "]" * 100_000 + "}"
DEEP_PROBLEM = [
    "deep.rubric.json: 1 problem in rubric file",
    "  deep.rubric.json:1: lists and mappings are nested more than 100 levels deep",
    "    -> a rubric file needs a few levels; flatten this structure or remove it",
]


# judge/test_reply_limits's reason: the key minus its last character, and the key whole where a
# cut at 2,000 characters would halve it.
KEY_REASON = f"the key is {KEY[:-1]}; " + "z" * 1_980 + KEY


def _responder(request: Recorded) -> Action:
    """Deterministic in the request alone (never its arrival order)."""
    user = request.body["messages"][1]["content"]
    seed = request.body["seed"]
    if "Volatility, probably." in user:
        # This answer's judged criteria are ERRORs, their failed replies quoting the API key
        # as judge/test_judge_e2e's canary does: a reply that is not JSON, an HTTP error's
        # message.
        if "Names the volatility" in json.dumps(request.body):
            return text(f"no JSON here, {KEY}")
        return status(503, body={"error": {"message": f"overloaded for key {KEY}"}})
    if "One day, I think." in user:
        return verdict("UNMET" if seed % 3 == 1 else "MET", "says one day, hedged")
    met = "One day, at" in user or "standard deviation" in user
    if "Sharpe" in user:  # quotes pieces of the key (judge/test_reply_limits): none may show
        return verdict("MET" if met else "UNMET", KEY_REASON)
    return verdict("MET" if met else "UNMET", "judged on content")


def _summary(output: list[str]) -> list[str]:
    start = next(i for i, line in enumerate(output) if "rubric summary" in line)
    end = next(i for i in range(start + 1, len(output)) if output[i].startswith("="))
    return output[start:end]


def _junit(path: Path) -> dict[str, tuple[list[str], list[tuple[str, str]]]]:
    """Per test case: its outcome elements and its properties, in order (a plain test that
    calls ``assert_rubric`` twice has each name twice); times differ from run to run."""
    cases = ET.parse(path).iter("testcase")
    return {
        f"{case.get('classname')}::{case.get('name')}": (
            sorted(child.tag for child in case if child.tag not in {"properties", "system-out"}),
            [(p.get("name", ""), p.get("value", "")) for p in case.iter("property")],
        )
        for case in cases
    }


def test_what_a_user_sees_is_the_same_in_every_run_mode(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\nrubric_judge_backoff = 0.01\nrubric_judge_attempts = 2\n")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    fake_llm.respond_with(_responder)
    judge = [
        "--rubric-judge=openai:m",
        f"--rubric-judge-url={fake_llm.openai_url}",
        "--rubric-judge-samples=3",
        "--rubric-cache=off",  # every mode calls the judge itself
        "--rubric-judge-probe=4",  # chosen alike by every worker, counted on the controller
    ]
    write("s.rubric.yaml", BASELINE_SUITE)
    pytester.runpytest(*judge, "--rubric-json=base.json").assert_outcomes(
        passed=4, failed=1, errors=1
    )
    write("s.rubric.yaml", SUITE)
    write("r.rubric.yaml", REPEATED)
    write("answers/steady.jsonl", REPEATED_ANSWERS)
    write("test_app.py", APP)
    write("deep.rubric.json", DEEP)
    # render/test_summary's two subjects, plain and bold: their JSON (leaderboard with style
    # scores, rankings) is compared with the rest; the baseline has none of their cases.
    write("arith.rubric.yaml", TWO_SUBJECTS.replace("bold:", "brash:"))
    # A target that raises: its result has no criterion that ran (every sum of it empty).
    write("bot.py", "def careful(question):\n    raise ValueError('down')\n")
    write("t.rubric.yaml", RAISES)

    seen: dict[str, dict[str, Any]] = {}
    for mode, args in RUN_MODES.items():
        step = pytester.path / f"{mode}.step.md"
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
        result = pytester.runpytest(
            *judge,
            "--rubric-baseline=base.json",
            f"--rubric-json={mode}.json",
            f"--rubric-html={mode}.html",
            f"--rubric-markdown={mode}.md",
            f"--rubric-csv={mode}.csv",
            f"--junitxml={mode}.xml",
            *args,
        )
        result.assert_outcomes(passed=7, failed=6, errors=3, warnings=1)
        result.stdout.fnmatch_lines([STRAY_WARNING])
        result.stdout.fnmatch_lines(DEEP_PROBLEM, consecutive=True)
        result.stdout.fnmatch_lines(APP_FAILURE, consecutive=True)
        result.stdout.fnmatch_lines(REQUIREMENT_SHOWN, consecutive=True)
        result.stdout.fnmatch_lines(BEFORE_AND_AFTER, consecutive=True)
        markdown = (pytester.path / f"{mode}.md").read_text()
        assert step.read_text() == markdown + "\n", mode  # appended once, by the controller
        outputs = {"terminal": str(result.stdout) + str(result.stderr), "step": step.read_text()}
        for suffix in ("json", "html", "md", "xml"):
            outputs[suffix] = (pytester.path / f"{mode}.{suffix}").read_text(encoding="utf-8")
        for quoted in ("the key is ***", "no JSON here, ***", "overloaded for key ***"):
            assert quoted in outputs["json"], (mode, quoted)
        assert {name: out for name, out in outputs.items() if leaked(KEY, out)} == {}, mode
        # Byte for byte, but for when each run started and how long it took.
        seen[mode] = {
            "exit status": result.ret,
            "summary": _summary(result.outlines),
            "JSON": timeless((pytester.path / f"{mode}.json").read_text()),
            "HTML": timeless((pytester.path / f"{mode}.html").read_text()),
            "Markdown": timeless(markdown),
            "JUnit": _junit(pytester.path / f"{mode}.xml"),
            "CSV": (pytester.path / f"{mode}.csv").read_bytes(),  # its CRLFs included
        }

    reference, *others = seen.values()
    # What is compared is there to compare.
    assert reference["exit status"] == pytest.ExitCode.TESTS_FAILED
    summary = reference["summary"]
    assert any("unstable" in line for line in summary)
    assert any(line.startswith("judge openai:m: ") for line in summary)
    assert any(line.startswith("judge style probe: ") for line in summary)
    assert any(line.startswith("judge calibration s: n 3, accuracy 0.667") for line in summary)
    assert '"style_probe": [\n      {' in reference["JSON"]
    assert "rubric gate FAILED (2):" in summary
    assert "  - s.rubric.yaml::sharpe[bold] passed in the baseline and fails now" in "\n".join(
        summary
    )
    assert '"case": "test_capital#2"' in reference["JSON"]
    assert '"n_samples": 3' in reference["JSON"] and '"group": "tag"' in reference["JSON"]
    assert any(line.startswith("by suite:") for line in summary)
    assert "caught" not in reference["JSON"] + str(reference["JUnit"])
    assert "Gate failed:" in reference["HTML"]
    # Every pair of the six subjects, and one CSV row per criterion of every sample.
    assert len(json.loads(reference["JSON"].replace("<when>", "0"))["pairwise"]) == 15
    assert 'class="pairwise"' in reference["HTML"]
    assert reference["CSV"].startswith(b"nodeid,suite,case,subject,sample,") and (
        b"\r\nr.rubric.yaml::r1[steady],repeated,r1,steady,3,pct,any_of," in reference["CSV"]
    )
    # The run, the same whichever way it was split: the controller writes it.
    run = json.loads(reference["JSON"].replace('"duration_s": <when>', '"duration_s": 0'))["run"]
    assert run["judges"] == [
        {"name": "openai:m", "provider": "openai", "model": "m", "url": fake_llm.openai_url}
    ]
    assert (run["grader"], run["cache"]) == (
        "per-criterion",
        {"mode": "off", "hits": 0, "misses": 0},
    )
    header = f"judge <code>openai:m at {fake_llm.openai_url} (per-criterion)</code>"
    assert header in reference["HTML"]
    assert f"judge `openai:m at {fake_llm.openai_url} (per-criterion)`" in reference["Markdown"]
    assert "**Gate failed** (2):" in reference["Markdown"]
    junit = reference["JUnit"]
    assert junit["s.rubric.yaml::var[careful]"] == (
        [],
        [
            ("rubric_case", "var"),
            ("rubric_subject", "careful"),
            ("rubric_score", "1.0"),
            ("rubric_min_score", "0.8"),
            ("rubric_passed", "true"),
        ],
    )
    assert junit["s.rubric.yaml::var[bold]"][0] == ["failure"]
    app = junit["test_app::test_capital"][1]
    # Each subject's n-th call is the test's n-th case: careful's two, then bold's first.
    assert [value for name, value in app if name == "rubric_case"] == [
        "test_capital",
        "test_capital#2",
        "test_capital",
    ]
    assert junit["test_app::test_capital"][0] == ["failure"]
    for mode, other in zip(list(seen)[1:], others, strict=True):
        for what, value in reference.items():
            assert other[what] == value, f"{what} differs between no-xdist and {mode}"
