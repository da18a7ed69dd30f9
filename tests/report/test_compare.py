"""Comparing subjects: the CSV of every criterion result, the pairwise comparison of every pair
of subjects, and the holistic judge's 0-100 reply kept as ``llm_raw_score``."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_rubric._cli.merge import main as merge_main
from pytest_rubric._config.outputs import OUTPUTS
from pytest_rubric._guards.outgoing import outgoing
from pytest_rubric._llm.base import mean_raw_score
from pytest_rubric._render.csv import HEADER, boundary, cell, csv_chunks
from pytest_rubric._render.files import write_outputs
from pytest_rubric._report import stats as _stats
from pytest_rubric._report.document import PairModel, written
from pytest_rubric._report.leaderboard import compare, paired, pairwise
from pytest_rubric._report.report import build_report
from pytest_rubric._results import CaseResult, CriterionResult, Verdict
from tests.fake_llm import Action, FakeLLM, Recorded, score, verdict

Write = Callable[[str, str], Path]


def _result(
    case: str, subject: str, value: float, *, reason: str = "why", weight: float = 1.0
) -> CaseResult:
    criterion = CriterionResult(
        id="c",
        type="contains",
        axis="substance",
        weight=weight,
        verdict=Verdict.MET if value else Verdict.UNMET,
        credit=value,
        reason=reason,
    )
    return CaseResult(
        nodeid=f"s.rubric.yaml::{case}[{subject}]",
        suite="s",
        case=case,
        subject=subject,
        score=value,
        raw_score=value,
        min_score=0.5,
        passed=value >= 0.5,
        criteria=[criterion],
        fluency=0.5,
        confidence=0.5,
        naive_score=value,
    )


def _csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


# --- pairwise -------------------------------------------------------------------------------


def test_a_pair_counts_wins_losses_ties_and_the_mean_difference_with_its_interval() -> None:
    pairs = [(1.0, 0.0), (0.5, 0.5), (0.0, 1.0), (1.0, 0.5)]
    pair = compare("x", "y", pairs, 0.9)
    assert (pair.shared, pair.wins, pair.losses, pair.ties) == (4, 2, 1, 1)
    assert pair.diff == pytest.approx((1 + 0 - 1 + 0.5) / 4)
    # Below 0.95 computed at the covering level, as correctness_ci is: 0.9 at 0.95.
    assert pair.ci == _stats.paired_difference(pairs, 0.95)
    assert written(PairModel, pair) == {
        "a": "x",
        "b": "y",
        "shared": 4,
        "wins": 2,
        "losses": 1,
        "ties": 1,
        "diff": 0.125,
        "ci": list(_stats.paired_difference(pairs, 0.95) or ()),
    }


def test_pairs_follow_the_leaderboard_and_subjects_without_shared_cases_have_no_difference() -> (
    None
):
    results = [
        _result("q1", "low", 0.0),
        _result("q1", "high", 1.0),
        _result("q1", "mid", 0.5),
        _result("q2", "high", 1.0),
        _result("q9", "alone", 1.0),  # no case shared with anyone
    ]
    report = build_report(results)
    ranked = [row.subject for row in report.leaderboard]
    assert ranked == ["alone", "high", "mid", "low"]
    assert [(p.a, p.b) for p in report.pairwise] == [
        (a, b) for i, a in enumerate(ranked) for b in ranked[i + 1 :]
    ]
    alone = report.pairwise[0]
    assert (alone.shared, alone.wins, alone.diff, alone.ci) == (0, 0, None, None)
    high_low = next(p for p in report.pairwise if (p.a, p.b) == ("high", "low"))
    assert (high_low.shared, high_low.wins, high_low.diff) == (1, 1, 1.0)
    assert pairwise(report.leaderboard, results) == report.pairwise
    # The pairs are paired() pairs, the tiers' and the gate's, in the same order.
    by_subject = {s: [r for r in results if r.subject == s] for s in ranked}
    assert report.pairwise == tuple(
        compare(p.a, p.b, paired(by_subject[p.a], by_subject[p.b]), 0.95) for p in report.pairwise
    )


# --- CSV ------------------------------------------------------------------------------------


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t"])
def test_a_text_cell_that_starts_a_formula_is_prefixed(start: str) -> None:
    assert cell(f"{start}HYPERLINK(1)") == f"'{start}HYPERLINK(1)"
    assert cell(f"a {start}b") == f"a {start}b"


def test_a_carriage_return_is_prefixed_at_the_start_and_escaped_so_no_record_is_cut() -> None:
    assert cell("\r=1+1") == "'\r=1+1"
    text = "a,b\r\n" + '"' + cell("\r=1+1") + '","x\ry"\r\n'
    assert boundary(text) == "a,b\r\n'\\x0d=1+1,x\\x0dy\r\n"


def test_the_csv_round_trips_commas_quotes_newlines_and_keeps_numbers_numbers(
    tmp_path: Path,
) -> None:
    hostile = 'say "hi", then\nnew line\r\nand =1+1'
    report = build_report(
        [
            _result("q1", "=cmd|' /C calc'!A0", 1.0, reason=hostile, weight=-2.0),
            _result("q1", "plain", 0.0, reason="-2 is wrong"),
            # A URL with a query string and no space after it: made public in its own cell,
            # never running on into the next ones.
            _result("q1", "http://h.example/p?token=abc", 1.0, reason="ok"),
        ]
    )
    text = "".join(csv_chunks(report))
    assert text.startswith(",".join(HEADER) + "\r\n")
    write_outputs(report, {"csv": tmp_path / "out.csv"}, environ={})
    written = (tmp_path / "out.csv").read_bytes().decode("utf-8")
    assert written == boundary(text) and written.count("\r\n") == 4  # every record end kept
    rows = _csv_rows(written)
    assert list(rows[0]) == list(HEADER)
    first, url, second = sorted(rows, key=lambda row: row["subject"])
    assert url["subject"] == "http://h.example/p" and url["reason"] == "ok"
    assert url["nodeid"] == outgoing("s.rubric.yaml::q1[http://h.example/p?token=abc]")
    assert (url["criterion"], url["weight"], url["verdict"]) == ("c", "1.0", "MET")
    assert first["subject"] == "'=cmd|' /C calc'!A0"
    assert first["reason"] == 'say "hi", then\nnew line\\x0d\nand =1+1'
    assert (first["weight"], first["credit"], first["score"]) == ("-2.0", "1.0", "1.0")
    assert (first["verdict"], first["ok"], first["passed"], first["sample"]) == (
        "MET",
        "false",
        "true",
        "1",
    )
    assert second["reason"] == "'-2 is wrong"


def test_csv_is_an_output_like_the_others() -> None:
    (output,) = [o for o in OUTPUTS if o.name == "csv"]
    assert output.render is csv_chunks


# --- end to end: three subjects from responses files ----------------------------------------

SUITE = """
suite: "=compare"
min_score: 0.5
responses: answers/
cases:
  - id: q1
    criteria:
      - {id: alpha, type: any_of, any_of: [alpha]}
      - {id: beta, type: any_of, any_of: [beta]}
  - id: q2
    criteria:
      - {id: alpha, type: any_of, any_of: [alpha]}
      - {id: beta, type: any_of, any_of: [beta]}
  - id: q3
    criteria:
      - {id: alpha, type: any_of, any_of: [alpha]}
      - {id: beta, type: any_of, any_of: [beta]}
"""
# Scores: a 1, 0.5, 1; b 0.5, 0.5, 0; c 0.5, 1, 0.5. Ranks: a, c, b.
ANSWERS = {
    "a": ["alpha beta", "alpha", "alpha beta"],
    "b": ["alpha", "alpha", "none"],
    "c": ["beta", "alpha beta", "alpha"],
}


def _answers(write: Write) -> None:
    for subject, responses in ANSWERS.items():
        lines = [
            json.dumps({"id": f"q{i}", "response": r}) for i, r in enumerate(responses, start=1)
        ]
        write(f"answers/{subject}.jsonl", "\n".join(lines) + "\n")


def test_three_subjects_compared_pair_by_pair_and_row_by_row(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    write("s.rubric.yaml", SUITE)
    _answers(write)
    pytester.runpytest(
        "--rubric-json=out.json", "--rubric-csv=out.csv", "--rubric-html=out.html"
    ).assert_outcomes(passed=8, failed=1)
    document = rubric_json()
    assert [row["subject"] for row in document["leaderboard"]] == ["a", "c", "b"]
    by_hand = {  # (a, b): (wins, losses, ties, the per-case differences)
        ("a", "c"): (2, 1, 0, [0.5, -0.5, 0.5]),
        ("a", "b"): (2, 0, 1, [0.5, 0.0, 1.0]),
        ("c", "b"): (2, 0, 1, [0.0, 0.5, 0.5]),
    }
    assert [(p["a"], p["b"]) for p in document["pairwise"]] == list(by_hand)
    for entry in document["pairwise"]:
        wins, losses, ties, diffs = by_hand[(entry["a"], entry["b"])]
        assert (entry["shared"], entry["wins"], entry["losses"], entry["ties"]) == (
            3,
            wins,
            losses,
            ties,
        )
        assert entry["diff"] == pytest.approx(sum(diffs) / 3)
        interval = _stats.paired_difference([(d, 0.0) for d in diffs], 0.95)
        assert entry["ci"] == pytest.approx(list(interval or ()))
    # The CSV: 3 subjects x 3 cases x 2 criteria, the suite's name prefixed.
    csv_text = (pytester.path / "out.csv").read_bytes().decode("utf-8")
    rows = _csv_rows(csv_text)
    assert len(rows) == 18 and {row["suite"] for row in rows} == {"'=compare"}
    b_q3 = [row for row in rows if row["subject"] == "b" and row["case"] == "q3"]
    assert [(r["criterion"], r["verdict"], r["ok"], r["score"]) for r in b_q3] == [
        ("alpha", "UNMET", "false", "0.0"),
        ("beta", "UNMET", "false", "0.0"),
    ]
    # The HTML: a matrix, the row's subject against the column's, and still no script.
    page = (pytester.path / "out.html").read_text(encoding="utf-8")
    assert '<table class="pairwise">' in page and "<script" not in page
    assert '<td class="even">2–1–0<br>+0.167' in page  # a against c
    assert "1–2–0<br>-0.167" in page  # c against a: the same pair seen from c
    # merge recomputes the pairwise and writes the same CSV.
    merged = pytester.path / "merged.json"
    argv = ["merge", str(pytester.path / "out.json"), "--json", str(merged)]
    assert merge_main([*argv, "--csv", str(pytester.path / "merged.csv")]) == 1  # q3[b] fails
    assert json.loads(merged.read_text())["pairwise"] == document["pairwise"]
    assert (pytester.path / "merged.csv").read_bytes().decode("utf-8") == csv_text


# --- holistic: llm_raw_score ----------------------------------------------------------------

HOLISTIC = """
suite: h
responses: answers/
repeat: 2
cases:
  - id: q1
    criteria:
      - {id: a, weight: 3, requirement: "Explains A"}
      - {id: b, weight: 1, requirement: "Explains B"}
      - {id: word, type: any_of, any_of: [answer]}
"""


def _by_answer(request: Recorded) -> Action:
    """Deterministic in the answer judged, never in the order the calls arrive."""
    user = str(request.body["messages"][-1]["content"])
    if "an integer from 0 to 100" not in str(request.body["messages"][0]["content"]):
        return verdict("MET", "judged")  # a per-criterion call (the second run)
    return score(60 if "first answer" in user else 80, "fair")


def test_holistic_results_keep_the_judges_reply_and_other_graders_leave_it_null(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    pytester.makeini("[pytest]\nrubric_judge_backoff = 0.01\n")
    write("h.rubric.yaml", HOLISTIC)
    write(
        "answers/m.jsonl",
        '{"id": "q1", "response": "The first answer."}\n'
        '{"id": "q1", "response": "The second answer."}\n',
    )
    fake_llm.respond_with(_by_answer)
    judge = [
        "--rubric-judge=openai:test-model",
        f"--rubric-judge-url={fake_llm.openai_url}",
        "--rubric-cache=off",
    ]
    pytester.runpytest(*judge, "--rubric-grader=holistic", "--rubric-json=out.json")
    (only,) = rubric_json()["results"]
    # Each sample keeps its own reply; the item keeps their mean, as its score is theirs.
    assert [s["llm_raw_score"] for s in only["samples"]] == [60.0, 80.0]
    assert only["llm_raw_score"] == 70.0
    # Through merge and the JSON read back, unchanged.
    merged = pytester.path / "merged.json"
    merge_main(["merge", str(pytester.path / "out.json"), "--json", str(merged)])
    (again,) = json.loads(merged.read_text())["results"]
    assert again["llm_raw_score"] == 70.0
    assert [s["llm_raw_score"] for s in again["samples"]] == [60.0, 80.0]
    # Another grader: null, in the item and in every sample.
    pytester.runpytest(*judge, "--rubric-json=out.json").assert_outcomes(passed=1)
    (judged,) = rubric_json()["results"]
    assert judged["llm_raw_score"] is None
    assert [s["llm_raw_score"] for s in judged["samples"]] == [None, None]


def test_a_mean_of_replies_needs_every_reply() -> None:
    assert mean_raw_score([60.0, 80.0]) == 70.0
    assert mean_raw_score([60.0, None]) is None
    assert mean_raw_score([]) is None
