"""repeat end to end: samples from a responses file, a target and a live model; their cache."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_rubric._cli.merge import main as merge_main
from tests.conftest import graded
from tests.fake_llm import FakeLLM, text

Write = Callable[[str, str], Path]

SUITE = """
suite: fin
repeat: 3
pass_when: 0.6
cases:
  - id: q1
    tags: [theme:risk]
    criteria:
      - {id: var, type: any_of, any_of: ["1%"], tags: ["axis:accuracy"]}
      - {id: loss, type: any_of, any_of: [loss]}
  - id: q2
    criteria:
      - {id: sd, type: any_of, any_of: [deviation], tags: ["axis:accuracy"]}
"""


def _answers(write: Write, *q1: str) -> None:
    lines = [json.dumps({"id": "q1", "response": r}) for r in q1]
    lines.append(json.dumps({"id": "q2", "response": "The standard deviation."}))
    write("answers/m.jsonl", "\n".join(lines) + "\n")


def test_samples_from_a_responses_file(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    write("s.rubric.yaml", SUITE)
    _answers(write, "A 1% loss.", "A 1% chance.", "A 1% loss or more.")
    result = pytester.runpytest("--rubric-responses", "answers", "--rubric-json", "out.json")
    result.assert_outcomes(passed=2)
    document = rubric_json()
    q1, q2 = document["results"]
    assert (q1["n_samples"], q2["n_samples"]) == (3, 1)
    assert [s["passed"] for s in q1["samples"]] == [True, False, True]
    assert q1["pass_rate"] == pytest.approx(2 / 3) and q1["passed"]  # 2/3 >= 0.6
    assert q1["score"] == pytest.approx((1 + 0.5 + 1) / 3)
    assert q1["pass_rate_ci"][0] < 2 / 3 < q1["pass_rate_ci"][1]
    assert q1["possible"] == 2.0 and q1["tags"] == ["theme:risk"]
    assert q1["criteria"][0]["tags"] == ["axis:accuracy", "theme:risk"]
    row = document["leaderboard"][0]
    assert set(row) >= {"correctness_ci", "n_cases", "tier", "detectable_drop"}
    keys = [(b["group"], b["key"]) for b in document["breakdowns"]]
    assert keys == [("tag", "axis:accuracy"), ("tag", "theme:risk")]
    accuracy = document["breakdowns"][0]
    assert (accuracy["score"], accuracy["n"]) == (pytest.approx((1 + 1 + 1) / 3 / 2 + 0.5), 2)
    # merge recomputes the item from its samples: the same document back.
    out, merged = pytester.path / "out.json", pytester.path / "merged.json"
    assert merge_main(["merge", str(out), "--json", str(merged)]) == 0
    assert json.loads(merged.read_text()) == document


def test_more_lines_than_repeat_is_an_error_that_says_where(
    pytester: pytest.Pytester, write: Write
) -> None:
    write("s.rubric.yaml", SUITE)
    _answers(write, "a", "b", "c", "d")
    result = pytester.runpytest("--rubric-responses", "answers")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*m.jsonl:4, case 'q1', field 'id': 4 responses for case 'q1' (lines 1, 2, 3, 4), "
            "but the case has repeat: 3*",
            "*keep at most 3 line(s) with this id, or set `repeat: 4`*",
        ]
    )
    # The file sets its repeat, which wins over the flag: the flag is no way out, and not said.
    assert "--rubric-repeat" not in result.stdout.str()
    write("s.rubric.yaml", SUITE.replace("repeat: 3\n", ""))
    _answers(write, "a", "b")
    result = pytester.runpytest("--rubric-responses", "answers")
    result.stdout.fnmatch_lines(
        ["*or set `repeat: 2` on the case or the file (or --rubric-repeat)*"]
    )


TARGET = """
import threading
from pathlib import Path

lock = threading.Lock()
active = [0]
# Samples answer in pairs, each waiting for the other: asked one at a time, the first
# gives up after 30 s and the peak stays 1.
together = threading.Barrier(2, timeout=30)

def answer(case):
    with lock:
        active[0] += 1
        peak = Path("peak.txt")
        peak.write_text(str(max(active[0], int(peak.read_text() or 0) if peak.exists() else 0)))
    try:
        together.wait()
    except threading.BrokenBarrierError:
        pass
    with lock:
        active[0] -= 1
        with open("calls.txt", "a") as calls:
            calls.write(case.id + "\\n")
    return "A 1% loss."
"""


def test_a_target_is_asked_n_times_concurrently_and_a_warm_rerun_asks_nothing(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    write("app.py", TARGET)
    write(
        "t.rubric.yaml",
        """
        target: app:answer
        cases:
          - id: q1
            repeat: 4
            criteria: [{id: var, type: any_of, any_of: ["1%"]}]
        """,
    )
    pytester.syspathinsert()
    recorded = ("--rubric-response-cache=use", "--rubric-json", "out.json")
    pytester.runpytest(*recorded).assert_outcomes(passed=1)
    first = rubric_json()
    assert (pytester.path / "calls.txt").read_text().split() == ["q1"] * 4
    assert int((pytester.path / "peak.txt").read_text()) > 1  # the samples overlapped
    assert first["results"][0]["n_samples"] == 4

    pytester.runpytest(*recorded).assert_outcomes(passed=1)
    assert (pytester.path / "calls.txt").read_text().split() == ["q1"] * 4  # no new call
    assert graded(rubric_json()) == graded(first)  # identical intervals, byte for byte
    result = pytester.runpytest()  # live by default: asked again, four times
    result.assert_outcomes(passed=1)
    assert (pytester.path / "calls.txt").read_text().split() == ["q1"] * 8


def test_a_live_model_is_asked_n_times_each_sample_cached(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    write(
        "m.rubric.yaml",
        """
        repeat: 3
        cases:
          - id: q1
            question: "What is 6 times 7?"
            criteria: [{id: value, type: number, value: 42}]
        """,
    )
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_url)
    fake_llm.gather(3)  # the three samples are asked together
    fake_llm.respond_with(lambda request: text("It is 42."))
    recorded = ("--rubric-model=openai:tiny", "--rubric-response-cache=use")
    pytester.runpytest(*recorded, "--rubric-json", "out.json").assert_outcomes(passed=1)
    first = rubric_json()
    assert len(fake_llm.requests) == 3
    assert fake_llm.max_in_flight == 3
    seeds = {r.body["seed"] for r in fake_llm.requests}
    assert len(seeds) == 3  # three independent draws
    result = pytester.runpytest(*recorded, "--rubric-json", "out.json")
    result.assert_outcomes(passed=1)
    assert len(fake_llm.requests) == 3  # the warm rerun asked nothing
    assert graded(rubric_json()) == graded(first)
    result.stdout.fnmatch_lines(["*responses: 3 of 3 replayed from the cache*"])


def test_a_required_miss_in_a_later_sample_is_named_as_the_reason(
    pytester: pytest.Pytester, write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second and third answers missed a required criterion: the item fails, and its
    report and the step summary say which criterion, once, and in which samples, not the
    first sample's miss of a criterion that is not required."""
    step = pytester.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    write(
        "s.rubric.yaml",
        SUITE.replace("pass_when: 0.6", "pass_when: mean").replace(
            "any_of: [loss]}", "any_of: [loss], required: true}"
        ),
    )
    _answers(write, "A loss.", "A 1% chance.", "A 1% gain.")
    result = pytester.runpytest("--rubric-responses", "answers")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*required criterion 'loss' went the wrong way (UNMET) in samples 2, 3*"]
    )
    assert (
        "required criterion 'loss' went the wrong way (UNMET) in samples 2, 3" in step.read_text()
    )


def test_a_failing_repeated_item_shows_its_lowest_scoring_answer(
    pytester: pytest.Pytester, write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The item's response is its first sample's, which passed here: the report, the step
    summary and JUnit also show the answer that scored lowest, labelled with its sample."""
    step = pytester.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    write("s.rubric.yaml", SUITE.replace("pass_when: 0.6", "pass_when: mean"))
    _answers(write, "A 1% loss.", "A 1% chance.", "No idea at all.")
    result = pytester.runpytest("--rubric-responses", "answers", "--junitxml=j.xml")
    result.assert_outcomes(passed=1, failed=1)
    shown = "sample 3 of 3 (score 0.00): No idea at all."
    result.stdout.fnmatch_lines(["response: A 1% loss.", shown])
    assert shown in step.read_text()
    assert shown in (pytester.path / "j.xml").read_text()
