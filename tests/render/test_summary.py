"""The ``rubric summary`` section and ``--rubric-json``.

Each runs in one mode: test_run_modes proves the summary and the JSON the same without xdist,
with ``-n 0`` and with ``-n 2``."""

from __future__ import annotations

import importlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, graded

Write = Callable[[str, str], Path]

# Two subjects: "plain" is right and plainly worded; "bold" is wrong, fluent and sure of itself.
TWO_SUBJECTS = """
suite: arithmetic
min_score: 0.8
cases:
  - id: q1
    question: "What is 15% of 80?"
    responses:
      plain: "15% of 80 is 12."
      bold: "Clearly and definitely, 15% of 80 is exactly 10. This is always the answer, without doubt."
    criteria:
      - {id: value, type: number, value: 12}
      - {id: wrong_value, type: forbidden, phrases: ["is exactly 10"]}
  - id: q2
    question: "Is 7 prime?"
    responses:
      plain: "Yes, 7 is prime."
      bold: "Obviously 7 is certainly not prime, it is clearly composite and always has been."
    criteria:
      - {id: prime, type: any_of, any_of: ["is prime"]}
      - {id: not_prime, type: forbidden, phrases: ["not prime", "composite"]}
"""


def test_summary_table_and_disagreement_line(pytester: pytest.Pytester, write: Write) -> None:
    write("a.rubric.yaml", TWO_SUBJECTS)
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*= rubric summary =*",
            "rank  subject           correctness  fluency  confidence  naive  naive rank  "
            "confidently wrong              passed  tier  detectable drop",
            # Two cases: neither subject is certain, nor told apart from the other; no drop
            # down to 0 would be caught four times in five.
            "   1  plain    1.000 [[]0.290, 1.000[]]    *       0.500  *           *                  0"
            "  2/2 [[]0.342, 1.000[]]     1                -",
            "   2  bold     0.000 [[]0.000, 0.710[]]    *       1.000  *           *                  2"
            "  0/2 [[]0.000, 0.658[]]     1                -",
        ],
        consecutive=True,
    )


def test_no_summary_without_rubric_results(pytester: pytest.Pytester, write: Write) -> None:
    write("test_plain.py", "def test_ok(): pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*rubric summary*")


def test_json_report_fields(
    pytester: pytest.Pytester,
    write: Write,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    write("a.rubric.yaml", TWO_SUBJECTS)
    pytester.runpytest("--rubric-json", "out.json")
    document = rubric_json()
    assert document["version"] == 1
    assert set(document) >= {"version", "results", "leaderboard", "rankings_disagree"}
    results = {r["nodeid"]: r for r in document["results"]}
    assert sorted(results) == [
        "a.rubric.yaml::q1[bold]",
        "a.rubric.yaml::q1[plain]",
        "a.rubric.yaml::q2[bold]",
        "a.rubric.yaml::q2[plain]",
    ]
    bold = results["a.rubric.yaml::q1[bold]"]
    assert {
        "nodeid",
        "suite",
        "case",
        "subject",
        "score",
        "raw_score",
        "min_score",
        "passed",
        "criteria",
        "fluency",
        "confidence",
        "flags",
    } <= set(bold)
    assert (bold["suite"], bold["case"], bold["subject"]) == ("arithmetic", "q1", "bold")
    assert (bold["score"], bold["raw_score"], bold["min_score"], bold["passed"]) == (
        0.0,
        -1.0,
        0.8,
        False,
    )
    assert bold["flags"] == ["confidently_wrong", "known_wrong_claim"]
    assert bold["confidence"] == 1.0
    assert 0 <= bold["fluency"] <= 1
    assert bold["criteria"] == [
        {
            "id": "value",
            "type": "number",
            "axis": "substance",
            "weight": 1.0,
            "verdict": "UNMET",
            "ok": False,
            "credit": 0.0,
            "reason": "no number within 12; saw 15, 0.15, 80, 10",
            "required": False,
            "requirement": None,
        },
        {
            "id": "wrong_value",
            "type": "forbidden",
            "axis": "substance",
            "weight": -1.0,
            "verdict": "MET",
            "ok": False,
            "credit": 1.0,
            "reason": "states known-wrong claim 'is exactly 10'",
            "required": False,
            "requirement": None,
        },
    ]
    plain = results["a.rubric.yaml::q1[plain]"]
    assert (plain["score"], plain["raw_score"], plain["passed"], plain["flags"]) == (
        1.0,
        1.0,
        True,
        [],
    )
    assert [c["ok"] for c in plain["criteria"]] == [True, True]

    rows = {row["subject"]: row for row in document["leaderboard"]}
    assert [row["subject"] for row in document["leaderboard"]] == ["plain", "bold"]
    assert set(rows["bold"]) == {
        "subject",
        "rank",
        "correctness",
        "fluency",
        "confidence",
        "naive_score",
        "naive_rank",
        "confidently_wrong",
        "passed",
        "total",
        "correctness_ci",
        "n_cases",
        "tier",
        "detectable_drop",
        "passed_ci",
    }
    assert (
        rows["plain"]["rank"],
        rows["plain"]["correctness"],
        rows["plain"]["passed"],
        rows["plain"]["total"],
    ) == (1, 1.0, 2, 2)
    # Two of two passed: the Wilson interval of the pass rate, not certainty.
    assert rows["plain"]["passed_ci"] == [pytest.approx(0.342380, abs=1e-6), 1.0]
    assert (
        rows["bold"]["rank"],
        rows["bold"]["correctness"],
        rows["bold"]["confidently_wrong"],
    ) == (2, 0.0, 2)
    expected_naive = (0.0 + rows["bold"]["fluency"] + rows["bold"]["confidence"]) / 3
    assert rows["bold"]["naive_score"] == pytest.approx(expected_naive)
    assert document["rankings_disagree"] is (rows["bold"]["naive_rank"] != rows["bold"]["rank"])


# That these two subjects' JSON is the same with and without xdist is proved in
# test_run_modes, whose suite holds them: byte for byte, without xdist, -n 0 and -n 2.


def test_json_is_written_even_when_no_rubric_ran(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    write("test_plain.py", "def test_ok(): pass\n")
    pytester.runpytest("--rubric-json", "out.json")
    document = rubric_json()
    assert (document["run"]["judges"], document["run"]["cache"]) == (
        [],
        {"mode": "use", "hits": 0, "misses": 0},
    )
    assert graded(document) == {
        "version": 1,
        "results": [],
        "leaderboard": [],
        "rankings_disagree": False,
        "rankings_differ_within_noise": False,
        "confidence": 0.95,
        "breakdowns": [],
        "pairwise": [],
        "judge_audit": {
            "calibration": [],
            "style_probe": [],
            "probes": [],
            "panel": {},
            "evidence": {"checked": 0, "unsupported": 0},
        },
        "gates": [],
    }


def test_bundled_example_shows_the_style_trap(
    pytester: pytest.Pytester, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    pytester.makeini("[pytest]\n")
    shutil.copytree(EXAMPLES, pytester.path / "examples")
    result = pytester.runpytest("--rubric-dir", "examples/evals", "--rubric-json", "out.json")
    result.stdout.fnmatch_lines(
        ["*= rubric summary =*", "! A style-weighted rubric would rank these subjects differently."]
    )
    document = rubric_json()
    rows = {row["subject"]: row for row in document["leaderboard"]}
    assert set(rows) == {"accurate", "confident", "hedged", "mixed"}
    assert len(document["results"]) == 4 * 12
    # The confident subject is last on correctness but second or better on the naive score.
    assert rows["confident"]["rank"] == 4
    assert rows["confident"]["naive_rank"] <= 2
    assert rows["accurate"]["rank"] == 1
    assert document["rankings_disagree"] is True
    # The swapped precision/recall formulas are caught by the forbidden criterion alone.
    swapped = next(
        r
        for r in document["results"]
        if r["case"] == "ml01_precision_recall" and r["subject"] == "confident"
    )
    verdicts = {c["type"]: c["ok"] for c in swapped["criteria"]}
    assert verdicts["forbidden"] is False
    assert all(c["ok"] for c in swapped["criteria"] if c["type"] != "forbidden")
    assert swapped["passed"] is False


def test_a_failure_report_pytest_will_take_long_over_is_announced_with_the_way_out(
    team: Callable[..., None], pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest pairs each failure with its teardown by scanning every test's reports, so
    4,000 failures of 20,000 tests took 329 s to print (39 s with --tb=no). Past a size
    (lowered here) the run says so before the wait, and what prints them in linear time."""
    # The module the plugin will import: pytester drops modules an earlier in-process run
    # imported, and the package may still hold that older one.
    summary = importlib.import_module("pytest_rubric._render.summary")
    monkeypatch.setattr(summary, "SLOW_FAILURE_REPORT", 2)  # 1 failure x 2 tests
    team(answers={"refund": "No.", "cancel": "Yes, within 24 hours."})
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1, skipped=0)
    result.stdout.fnmatch_lines(
        [
            "rubric: 1 of 2 tests failed; pytest's report of the failures takes time that grows "
            "with failures x tests, a while at this size: --tb=line prints one line per "
            "failure, and the rubric summary and outputs hold every result",
            "*= FAILURES =*",
        ]
    )
    result = pytester.runpytest("--tb=line")
    result.stdout.no_fnmatch_line("rubric: * tests failed; *")
    monkeypatch.setattr(summary, "SLOW_FAILURE_REPORT", 3)
    pytester.runpytest().stdout.no_fnmatch_line("rubric: * tests failed; *")
