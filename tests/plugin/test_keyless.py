"""A keyless colleague: a case's pass or fail is never hidden by a missing judge.

A project laid out as a team's (an ``app/`` package, unit tests in ``tests/``,
``evals/`` with a rubric file and the adapter ``evals/targets.py``, a
``pytest.ini`` naming the judge in ``rubric_judge``) is run by a colleague who
has no key for that judge. Each case is graded on what can be (see
``pytest_rubric._grade.bounds``): FAILED when no verdict of the judge could
pass it, PASSED when none could fail it, SKIPPED with its bounds otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_rubric._cli.merge import main as merge_main
from tests.conftest import lines_in_any_order
from tests.fake_llm import FakeLLM, verdict

WINE = """
def answer(question: str) -> str:
    if "fish" in question:
        # The regression: the pairing list went missing from the answer.
        return "It depends."
    if "steak" in question:
        return "Cabernet Sauvignon, Malbec, Syrah, Zinfandel, Merlot and Tempranillo go well."
    return "Chablis is a dry white from Burgundy, made from Chardonnay grapes."
"""

TARGETS = """
from app.wine import answer


def wine_bot(question: str) -> str:
    return answer(question)
"""

UNIT_TESTS = """
from app.wine import answer


def test_answers_something():
    assert answer("anything")
"""

# Six deterministic criteria and one judged: the fish answer fails all six (at best 1/7);
# the steak answer passes all six (at worst 6/7); Chablis earns 4 of 5 deterministic points
# beside 5 judged ones: between 4/10 and 9/10 whatever the judge says.
RUBRIC = """
target: targets:wine_bot
min_score: 0.8
cases:
  - id: fish
    question: "What wine goes with fish?"
    criteria:
      - {id: sauvignon, type: any_of, any_of: ["sauvignon blanc"]}
      - {id: chablis, type: any_of, any_of: ["chablis"]}
      - {id: albarino, type: any_of, any_of: ["albarino"]}
      - {id: muscadet, type: any_of, any_of: ["muscadet"]}
      - {id: riesling, type: any_of, any_of: ["riesling"]}
      - {id: vermentino, type: any_of, any_of: ["vermentino"]}
      - {id: why, type: judge, requirement: "Says why the wines suit fish"}
  - id: steak
    question: "What wine goes with steak?"
    criteria:
      - {id: cabernet, type: any_of, any_of: ["cabernet"]}
      - {id: malbec, type: any_of, any_of: ["malbec"]}
      - {id: syrah, type: any_of, any_of: ["syrah"]}
      - {id: zinfandel, type: any_of, any_of: ["zinfandel"]}
      - {id: merlot, type: any_of, any_of: ["merlot"]}
      - {id: tempranillo, type: any_of, any_of: ["tempranillo"]}
      - {id: why, type: judge, requirement: "Says why the wines suit steak"}
  - id: chablis
    question: "What is Chablis?"
    criteria:
      - {id: dry, type: any_of, points: 1, any_of: ["dry"]}
      - {id: white, type: any_of, points: 1, any_of: ["white"]}
      - {id: burgundy, type: any_of, points: 1, any_of: ["burgundy"]}
      - {id: grape, type: any_of, points: 1, any_of: ["chardonnay"]}
      - {id: region, type: any_of, points: 1, any_of: ["yonne"]}
      - {id: accurate, type: judge, points: 5, requirement: "Everything it says is accurate"}
"""

INI = "[pytest]\nrubric_dirs = evals\nrubric_judge = openai:gpt-4o-mini\npythonpath = .\n"


@pytest.fixture
def team(
    pytester: pytest.Pytester,
    write: Callable[[str, str], Path],
    monkeypatch: pytest.MonkeyPatch,
) -> pytest.Pytester:
    """The project, run by a colleague without ``OPENAI_API_KEY``."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("RUBRIC_JUDGE", raising=False)
    write("pytest.ini", INI)
    write("app/__init__.py", "")
    write("app/wine.py", WINE)
    write("tests/test_wine.py", UNIT_TESTS)
    write("evals/targets.py", TARGETS)
    write("evals/wine.rubric.yaml", RUBRIC)
    return pytester


def _line_with(result: pytest.RunResult, *parts: str) -> bool:
    return any(all(part in line for part in parts) for line in result.outlines)


NO_KEY = (
    "no key for judge openai:gpt-4o-mini (ini rubric_judge in pytest.ini): "
    "set OPENAI_API_KEY in the environment"
)


def test_a_keyless_fail_under_judges_each_subject_at_its_bounds(
    team: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """The steak case passes whatever the judge says, scored 6/6 on what ran; with the judge
    it scores 6/7 or 7/7. --rubric-fail-under 0.9 is then not decided without the judge: it
    fails, naming the key, never green on the partial 1.000 (a keyed run could fail it)."""
    result = team.runpytest("-k", "steak", "--rubric-fail-under=0.9")
    result.assert_outcomes(passed=1, deselected=3)  # the unit test too
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [f"*subject wine_bot: correctness between 0.857 and 1.000 whatever the judge says, so "
         f"--rubric-fail-under 0.9 is not decided without it ({NO_KEY})"]
    )  # fmt: skip
    result = team.runpytest("-k", "steak", "--rubric-fail-under=0.85", "--rubric-json=s.json")
    assert result.ret == pytest.ExitCode.OK  # at least 0.857 whatever the judge says
    # Merged, the keyless shard's figures are bounds there too.
    assert merge_main(["merge", str(team.path / "s.json"), "--fail-under", "0.9"]) == 1
    assert f"so --fail-under 0.9 is not decided without it ({NO_KEY})" in capsys.readouterr().out
    # The whole suite, its undecided Chablis case at its bounds too: at most 0.681.
    result = team.runpytest("--rubric-fail-under=0.7")
    result.stdout.fnmatch_lines(["*subject wine_bot: correctness at most 0.681 whatever the*"])


def test_a_keyless_run_over_a_regression_fails(team: pytest.Pytester) -> None:
    result = team.runpytest("-k", "fish")
    result.assert_outcomes(failed=1, deselected=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAILED evals/wine.rubric.yaml::fish[[]wine_bot[]]*"])


# In every run mode: a run without the judge's key never passes on what it could not grade,
# checked as CI runs it too (with -n, where the controller chooses the verbose word).
def test_a_keyless_run_passes_skips_and_fails_each_case_on_what_can_be_graded(
    team: pytest.Pytester, run_mode: list[str]
) -> None:
    result = team.runpytest("-v", "-rs", "--rubric-json", "out.json", *run_mode)
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    # Verbose lines read "item PASSED ..." without xdist, "[gw0] ... PASSED ... item" with it.
    assert _line_with(result, "steak[wine_bot]", "PASSED (judged criteria skipped)")
    assert _line_with(result, "fish[wine_bot]", "FAILED")
    lines_in_any_order(
        result,
        [
            f"SKIPPED [[]1[]] evals/wine.rubric.yaml:*: score between 0.40 and 0.90 whatever the "
            f"judge says; min_score 0.80 ({NO_KEY})",
        ],
    )
    data: dict[str, Any] = json.loads((team.path / "out.json").read_text())
    by_case = {r["case"]: r for r in data["results"]}
    assert by_case["chablis"]["skipped_bounds"] == pytest.approx([0.4, 0.9])
    assert by_case["chablis"]["passed"] is False
    assert by_case["steak"]["skipped_bounds"] is None
    assert by_case["steak"]["passed"] is True
    assert by_case["fish"]["skipped_bounds"] is None
    assert by_case["fish"]["passed"] is False
    # The undecided case neither passed nor failed: it is in no subject's count.
    (row,) = data["leaderboard"]
    assert (row["passed"], row["total"]) == (1, 2)


def test_a_judged_error_criterion_can_only_lower_the_score(team: pytest.Pytester) -> None:
    """A negative-weight judged criterion MET is the error happening: at worst it costs its
    weight, at best nothing. The steak answer passes its six points whatever it says when
    the error weighs 1 (6/6 - 1/6 = 0.83), and is undecided when it weighs 3 (0.50)."""
    rubric = team.path / "evals/wine.rubric.yaml"
    text = rubric.read_text().replace(
        'requirement: "Says why the wines suit steak"',
        'requirement: "Recommends a sweet wine", weight: -1',
    )
    rubric.write_text(text)
    team.runpytest("-k", "steak").assert_outcomes(passed=1, deselected=3)
    rubric.write_text(text.replace("weight: -1", "weight: -3"))
    result = team.runpytest("-k", "steak", "-rs")
    result.assert_outcomes(skipped=1, deselected=3)
    result.stdout.fnmatch_lines(
        ["*score between 0.50 and 1.00 whatever the judge says; min_score 0.80*"]
    )


def test_assert_rubric_in_a_test_is_graded_on_what_can_be(team: pytest.Pytester) -> None:
    team.makepyfile(
        test_inline="""
        from pytest_rubric import assert_rubric

        CRITERIA = [
            {"id": "dry", "type": "any_of", "any_of": ["dry"]},
            {"id": "sweet", "type": "any_of", "any_of": ["sweet"]},
            {"id": "accurate", "type": "judge", "requirement": "It is accurate"},
        ]

        def test_regression():
            assert_rubric("It is red.", CRITERIA, min_score=0.6)

        def test_undecided():
            assert_rubric("It is dry.", CRITERIA, min_score=0.6)

        def test_nothing_to_score():
            assert_rubric("It is dry.", {"criteria": CRITERIA[2:], "min_score": None})
        """
    )
    result = team.runpytest("test_inline.py", "-rfs")
    result.assert_outcomes(failed=1, skipped=2)
    lines_in_any_order(
        result,
        [
            "*score between 0.33 and 0.67 whatever the judge says; min_score 0.60*",
            f"*test_inline.py:*: nothing graded: {NO_KEY}",
            "FAILED test_inline.py::test_regression*",
        ],
    )


def test_the_rubric_grader_fixture_is_graded_on_what_can_be(team: pytest.Pytester) -> None:
    """``rubric_grader.grade()`` hides no pass or fail either: a result the judge could still
    fail is not passed, and carries its bounds."""
    team.makepyfile(
        test_graded="""
        from pytest_rubric import Rubric

        CRITERIA = [
            {"id": "dry", "type": "any_of", "any_of": ["dry"]},
            {"id": "accurate", "type": "judge", "requirement": "It is accurate"},
        ]

        def test_undecided(rubric_grader):
            result = rubric_grader.grade("It is dry.", rubric_grader.compile(Rubric(criteria=CRITERIA)))
            assert not result.passed and result.skipped_bounds == (0.5, 1.0)

        def test_failed_whatever(rubric_grader):
            result = rubric_grader.grade("It is red.", rubric_grader.compile(Rubric(criteria=CRITERIA)))
            assert not result.passed and result.skipped_bounds is None
        """
    )
    team.runpytest("test_graded.py").assert_outcomes(passed=2)


def test_the_rubric_judge_fixture_is_an_error_with_require_judge(team: pytest.Pytester) -> None:
    """As for a test marked llm_judge: skipped without the key, an error when a judge is
    required."""
    team.makepyfile(test_judge="def test_asks(rubric_judge):\n    pass\n")
    team.runpytest("test_judge.py").assert_outcomes(skipped=1)
    required = team.runpytest("test_judge.py", "--rubric-require-judge")
    required.assert_outcomes(errors=1)
    required.stdout.fnmatch_lines(["*no key for judge*"])


def test_without_any_judge_a_case_scores_what_ran(team: pytest.Pytester) -> None:
    """The scoring rule stands when no judge is configured at all: the Chablis case
    scores its deterministic points (4 of 5, 0.80) and passes, where a keyless run, whose
    judge is on its way, skips it."""
    (team.path / "pytest.ini").write_text("[pytest]\nrubric_dirs = evals\npythonpath = .\n")
    result = team.runpytest("evals", "-v")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*chablis*PASSED (judged criteria skipped)*"])
    # Its fail-under measures what ran too (steak 1.000 and Chablis 0.800, fish 0.000): the
    # bounds are a keyless run's, whose judge was set and not asked.
    result = team.runpytest("evals", "-k", "not fish", "--rubric-fail-under=0.85")
    result.stdout.fnmatch_lines(["rubric gate passed: every subject at or above 0.85 *"])
    assert result.ret == pytest.ExitCode.OK


def test_a_baseline_case_left_undecided_is_not_compared(
    team: pytest.Pytester, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keyless run's undecided Chablis case is in its JSON (0.80 on what ran) but not in
    its leaderboard (steak, 1.000): the gate of a run with the judge (steak 1.000, Chablis
    0.40) reads it as a case the baseline does not have, never as a drop of 0.900 -> 0.700.
    Steak was decided keyless on its phrases alone: its score there is over other criteria
    than today's, so it is not compared either, and a gate that compared nothing fails."""
    team.runpytest("-k", "steak or chablis", "--rubric-json", "base.json")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fake_llm.respond_with(lambda r: verdict("UNMET" if "accurate" in str(r.body) else "MET"))
    result = team.runpytest(
        "-k", "steak or chablis", f"--rubric-judge-url={fake_llm.openai_url}",
        "--rubric-baseline", "base.json", "--rubric-json", "now.json",
    )  # fmt: skip
    result.assert_outcomes(passed=1, failed=1, deselected=2)
    [gate] = json.loads((team.path / "now.json").read_text())["gates"]
    assert (gate["gate"], gate["failed"]) == ("baseline-subject", True)
    assert "graded in both runs on the same criteria" in gate["message"]
    result.stdout.fnmatch_lines(["*1 case(s) graded on other criteria than in the baseline*"])


def test_a_keyless_gate_that_measured_nothing_says_the_key_is_missing(
    team: pytest.Pytester,
) -> None:
    """The files have calibration examples: the kappa gate fails for the missing key, and so
    does the style probe's, neither asking for examples that are there."""
    labels = '[{case: chablis, criterion: accurate, response: "Dry.", verdict: MET}]'
    path = team.path / "evals/wine.rubric.yaml"
    path.write_text(f"calibration: {labels}\n{path.read_text()}")
    (team.path / "pytest.ini").write_text(f"{INI}rubric_judge_min_kappa = 0.5\n")
    result = team.runpytest("evals", "--rubric-judge-max-style-flips=0.2")
    result.stdout.fnmatch_lines_random(
        [
            f"*the style probe judged no verdict again ({NO_KEY}), so *measured nothing",
            f"*no calibration label was graded ({NO_KEY}), so *min-kappa measured nothing",
        ]
    )
    assert "add `calibration:` examples" not in result.stdout.str()


@pytest.mark.parametrize("ini", [INI, "[pytest]\nrubric_dirs = evals\n"], ids=["keyless", "none"])
def test_grounded_without_a_context_is_error_without_a_judge(
    team: pytest.Pytester, ini: str
) -> None:
    """Seeing that an answer has no context to check needs no judge: ERROR, as with one."""
    (team.path / "pytest.ini").write_text(ini)
    (team.path / "evals/wine.rubric.yaml").write_text(
        'cases:\n  - {id: rag, response: "Dry.", criteria: [{id: g, type: grounded}]}\n'
    )
    result = team.runpytest("evals", "-rA")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*g *grounded *ERROR *the answer has no context to check*"])


def test_a_report_only_case_with_nothing_to_grade_is_skipped_not_scored_zero(
    team: pytest.Pytester, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An imported HealthBench case is report-only and judged throughout: keyless, it passes
    whatever the judge says but has nothing to score. It is skipped, as without a judge, not
    scored 0 in the leaderboard and a baseline's drop of 1.000 -> 0.000."""
    (team.path / "evals/wine.rubric.yaml").write_text(
        "min_score: null\ntarget: targets:wine_bot\ncases:\n"
        '  - {id: chablis, question: "What is Chablis?", criteria: '
        '[{id: accurate, type: judge, requirement: "It is accurate"}]}\n'
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fake_llm.respond_with(lambda r: verdict("MET"))
    judged = ["evals", f"--rubric-judge-url={fake_llm.openai_url}", "--rubric-json", "base.json"]
    team.runpytest(*judged).assert_outcomes(passed=1)
    monkeypatch.delenv("OPENAI_API_KEY")
    result = team.runpytest(
        "evals", "-rs", "--rubric-baseline", "base.json", "--rubric-json", "now.json"
    )
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [f"SKIPPED [[]1[]] evals/wine.rubric.yaml:*: nothing graded: {NO_KEY}"]
    )
    # Nothing compared is no pass either: the gate says why.
    result.stdout.fnmatch_lines(
        [
            "*the baseline (base.json) shares no case with this run: nothing was compared: no "
            f"case was graded without the judge ({NO_KEY})"
        ]
    )
    assert "0.000" not in result.stdout.str()
    now = json.loads((team.path / "now.json").read_text())
    assert now["leaderboard"] == []
    # In the outputs as undecided, its score anywhere: not a case that did not run.
    [chablis] = now["results"]
    assert (chablis["passed"], chablis["skipped_bounds"]) == (False, [0.0, 1.0])
    result.stdout.fnmatch_lines(["*1 baseline case(s) left undecided without the judge*"])
    assert "did not run" not in result.stdout.str()


PAIR = """
target: targets:wine_bot
min_score: 0.4
cases:
  - id: steak
    question: "What wine goes with steak?"
    criteria:
      - {id: cabernet, type: any_of, any_of: ["cabernet"]}
      - {id: why, type: judge, requirement: "Says why the wines suit steak"}
  - id: chablis
    question: "What is Chablis?"
    criteria:
      - {id: dry, type: any_of, any_of: ["dry"]}
      - {id: white, type: any_of, any_of: ["white"]}
"""


def test_a_keyless_gate_never_compares_a_score_over_fewer_criteria(
    team: pytest.Pytester,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    write: Callable[[str, str], Path],
) -> None:
    """main, with the judge: steak 0.50 (its judged criterion UNMET), Chablis 1.00. The pull
    request drops "dry" from Chablis (0.50), and the keyless colleague's run scores steak
    1.00 on its phrase alone: the means (0.75 both) would hide the drop. Steak's score is
    over other criteria than the baseline's, so only Chablis is compared, and the gate fails."""
    write("evals/wine.rubric.yaml", PAIR)
    with monkeypatch.context() as keyed:
        keyed.setenv("OPENAI_API_KEY", "sk-test")
        fake_llm.respond_with(lambda r: verdict("UNMET"))
        main = team.runpytest(
            "evals", f"--rubric-judge-url={fake_llm.openai_url}", "--rubric-json", "main.json"
        )
        main.assert_outcomes(passed=2)
    write("app/wine.py", WINE.replace("a dry white", "a white"))
    result = team.runpytest("evals", "--rubric-baseline", "main.json", "--rubric-max-drop", "0.05")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*1 case(s) graded on other criteria than in the baseline*e.g. *steak*",
            "*rubric gate FAILED*",
            "*subject wine_bot: correctness 1.000 -> 0.500 over the 1 cases both runs graded*",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
