"""CI gates: ``--rubric-baseline`` with ``--rubric-max-drop``, and ``--rubric-fail-under``.

The baseline tests run in one mode: test_run_modes proves a baseline gate's lines and exit
status the same without xdist, with ``-n 0`` and with ``-n 2``. The fail-under test runs all
three, as the gate alone turns a session whose tests all passed into a failed one, and under
xdist that exit status is the controller's to set."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_rubric._cli.merge import main as merge_main

Write = Callable[[str, str], Path]


def _suite(write: Write, *, q2: str = "Ten and ten is twenty.") -> None:
    """Two cases answered by one subject; q2 has two criteria, so it can lose half."""
    write(
        "s.rubric.yaml",
        f"""
        min_score: 0.5
        cases:
          - id: q1
            responses: {{a: "Two and two is four."}}
            criteria: [{{id: four, type: any_of, any_of: [four]}}]
          - id: q2
            responses: {{a: "{q2}"}}
            criteria:
              - {{id: twenty, type: any_of, any_of: [twenty]}}
              - {{id: ten, type: any_of, any_of: [ten]}}
        """,
    )


@pytest.fixture
def baseline(pytester: pytest.Pytester, write: Write) -> Path:
    _suite(write)
    pytester.runpytest("--rubric-json", "base.json").assert_outcomes(passed=2)
    return pytester.path / "base.json"


def test_an_unchanged_run_passes_against_its_own_baseline(
    pytester: pytest.Pytester, baseline: Path
) -> None:
    result = pytester.runpytest("--rubric-baseline", "base.json")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "baseline base.json: correctness per subject (change [[]0.95 paired interval over "
            "shared cases[]])",
            # Two cases say little: an unchanged run's change is 0, give or take 0.69.
            "  a: 1.000 -> 1.000 (+0.000 [[]-0.693, +0.693[]])",
            "rubric gate passed: no case regressed, no subject dropped more than 0 "
            "(--rubric-max-drop)",
        ]
    )


def test_a_case_that_passed_and_fails_now_fails_the_session_and_is_named(
    pytester: pytest.Pytester, write: Write, baseline: Path
) -> None:
    _suite(write, q2="No idea.")
    result = pytester.runpytest("--rubric-baseline", "base.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "  a: 1.000 -> 0.500 (-0.500 [[]-1.000, +0.561[]])",
            "rubric gate FAILED (2):",
            "  - s.rubric.yaml::q2[[]a[]] passed in the baseline and fails now (score 0.00, "
            "min_score 0.50)",
            "  - subject a: correctness 1.000 -> 0.500, a drop of 0.500 (more than "
            "--rubric-max-drop 0)",
        ]
    )


def test_a_drop_within_max_drop_passes_and_beyond_it_fails(
    pytester: pytest.Pytester, write: Write, baseline: Path
) -> None:
    _suite(write, q2="Twenty, I think.")  # q2 still passes at 0.5; a's mean is 0.75
    result = pytester.runpytest("--rubric-baseline", "base.json", "--rubric-max-drop", "0.25")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["  a: 1.000 -> 0.750 (-0.250 [[]-0.853, +0.598[]])", "rubric gate passed: *"]
    )

    result = pytester.runpytest("--rubric-baseline", "base.json", "--rubric-max-drop", "0.2")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "  - subject a: correctness 1.000 -> 0.750, a drop of 0.250 (more than "
            "--rubric-max-drop 0.2)"
        ]
    )
    result = pytester.runpytest("--rubric-baseline", "base.json")  # default 0: any drop fails
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_fail_under_fails_a_session_whose_cases_all_passed(
    pytester: pytest.Pytester, write: Write, run_mode: list[str]
) -> None:
    _suite(write, q2="Twenty, I think.")
    result = pytester.runpytest("--rubric-fail-under", "0.8", *run_mode)
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "rubric gate FAILED (1):",
            "  - subject a: correctness 0.750 is below --rubric-fail-under 0.8",
        ]
    )
    # The reason for exit 1 is in pytest's last line too, not only in the summary above.
    assert re.search(r"=+ 2 passed, 1 rubric gate failed in [\d.]+s", result.outlines[-1])
    passing = pytester.runpytest("--rubric-fail-under", "0.75")
    assert passing.ret == pytest.ExitCode.OK
    assert "rubric gate" not in passing.outlines[-1]


def test_fail_under_with_no_subject_graded_measured_nothing_and_fails(
    pytester: pytest.Pytester, write: Write
) -> None:
    """A run of unit tests only, or a selection with no rubric item, cannot say every subject
    is at or above the mark: the gate measured nothing, and says so."""
    _suite(write, q2="Twenty, I think.")
    pytester.makepyfile(test_unit="def test_x():\n    assert True\n")
    result = pytester.runpytest("test_unit.py", "--rubric-fail-under", "0.8")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["  - no subject was graded in this run, so --rubric-fail-under 0.8 measured nothing*"]
    )


def test_an_error_now_is_a_regression(
    pytester: pytest.Pytester, write: Write, baseline: Path
) -> None:
    write(
        "s.rubric.yaml",
        """
        min_score: 0.5
        cases:
          - id: q1
            responses: {a: "Two and two is four."}
            criteria: [{id: four, type: regex, pattern: "(four"}]
          - id: q2
            responses: {a: "Ten and ten is twenty."}
            criteria:
              - {id: twenty, type: any_of, any_of: [twenty]}
              - {id: ten, type: any_of, any_of: [ten]}
        """,
    )
    result = pytester.runpytest("--rubric-baseline", "base.json", "--rubric-max-drop", "1")
    result.stdout.fnmatch_lines(
        ["  - s.rubric.yaml::q1[[]a[]] passed in the baseline and is an ERROR now"]
    )


def test_cases_missing_from_this_run_are_noted_not_failed(
    pytester: pytest.Pytester, baseline: Path
) -> None:
    result = pytester.runpytest("--rubric-baseline", "base.json", "-k", "q1")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["  note: 1 baseline case(s) did not run this time, e.g. s.rubric.yaml::q2[[]a[]]"]
    )


def test_the_gate_is_in_the_markdown_and_html(
    pytester: pytest.Pytester, write: Write, baseline: Path
) -> None:
    _suite(write, q2="No idea.")
    pytester.runpytest(
        "--rubric-baseline", "base.json", "--rubric-markdown", "m.md", "--rubric-html", "r.html"
    )
    markdown = (pytester.path / "m.md").read_text()
    assert "| a | 1.000 | 0.500 | -0.500 [-1.000, +0.561] |" in markdown
    assert "**Gate failed** (2):" in markdown
    page = (pytester.path / "r.html").read_text()
    # The delta table once, under "Changes since the baseline", not again under "Gates".
    assert "Gate failed:" in page and page.count("<td>-0.500 [-1.000, +0.561]</td>") == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "--rubric-baseline: *missing.json: cannot read it*"),
        ("{", "--rubric-baseline: *missing.json: not JSON*"),
        ('{"results": 3}', "--rubric-baseline: *missing.json: not a --rubric-json document*"),
        ('{"version": 9, "results": []}', "--rubric-baseline: *version 9 is not 1*"),
    ],
)
def test_a_bad_baseline_is_a_usage_error(
    pytester: pytest.Pytester, write: Write, content: str | None, message: str
) -> None:
    _suite(write)
    if content is not None:
        (pytester.path / "missing.json").write_text(content)
    result = pytester.runpytest("--rubric-baseline", "missing.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}"])


def test_gate_values_are_checked(pytester: pytest.Pytester, write: Write) -> None:
    _suite(write)
    result = pytester.runpytest("--rubric-fail-under", "80")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--rubric-fail-under: '80' is not a number from 0 to 1*"])


# --- gates under noise (--rubric-gate-confidence) and as data (the JSON's "gates") ----------

NOISY = """
repeat: 3
min_score: 0.5
responses: answers
cases:
"""


def _noisy(write: Write, answers: dict[str, list[str]]) -> None:
    """Six cases, one criterion ("right"), three answers each from subject a's file."""
    write(
        "n.rubric.yaml",
        NOISY + "".join(
            f"  - id: {case}\n    criteria: [{{id: right, type: any_of, any_of: [right]}}]\n"
            for case in answers
        ),
    )  # fmt: skip
    lines = [
        json.dumps({"id": case, "response": text}) for case, texts in answers.items() for text in texts
    ]  # fmt: skip
    write("answers/a.jsonl", "\n".join(lines) + "\n")


def test_a_noisy_flip_is_a_note_and_a_real_regression_still_fails(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    steady = ["right", "right", "right"]
    before = {"q1": ["right", "right", "wrong"], **{f"q{i}": steady for i in range(2, 7)}}
    _noisy(write, before)
    pytester.runpytest("--rubric-json", "base.json").assert_outcomes(passed=6)
    # The same stochastic subject again: q1 answered right once in three this time (it
    # fails now), q2 twice. Two of three, then one of three: Fisher p = 0.5.
    again = {**before, "q1": ["wrong", "right", "wrong"], "q2": ["right", "wrong", "right"]}
    _noisy(write, again)
    gate = ["--rubric-baseline", "base.json", "--rubric-gate-confidence", "0.95"]
    result = pytester.runpytest(*gate, "--rubric-json", "out.json")
    result.assert_outcomes(passed=5, failed=1)  # q1's own verdict is pytest's to give
    result.stdout.fnmatch_lines(
        [
            "  note: n.rubric.yaml::q1[[]a[]] passed in the baseline and fails now (score 0.33, "
            "min_score 0.50): 1 of 3 sample(s) pass now, 2 of 3 in the baseline, within noise "
            "at --rubric-gate-confidence 0.95 (not a failure); one-sided Fisher p = 0.5, above "
            "0.025",
            "  note: subject a: the drop of 0.111 is within noise at --rubric-gate-confidence "
            "0.95 (not a failure)",
            "rubric gate passed: no case fell and no subject dropped more than 0 beyond noise "
            "(--rubric-max-drop, --rubric-gate-confidence 0.95)",
        ],
        consecutive=True,
    )
    assert "rubric gate" not in result.outlines[-1]
    gates = rubric_json()["gates"]
    assert [(g["gate"], g["subject"], g["nodeid"], g["failed"]) for g in gates] == [
        ("baseline-case", "a", "n.rubric.yaml::q1[a]", False),
        ("baseline-subject", "a", None, False),
    ]
    # Without a gate confidence the same flip fails the gate, as it always did.
    strict = pytester.runpytest("--rubric-baseline", "base.json")
    strict.stdout.fnmatch_lines(["rubric gate FAILED (2):"])
    # A real regression: every answer wrong now. Each case alone (three of three, then
    # none: p = 0.05) is within the case budget, but the subject's drop is not.
    _noisy(write, {case: ["wrong", "wrong", "wrong"] for case in before})
    result = pytester.runpytest(*gate)
    result.stdout.fnmatch_lines(
        [
            "rubric gate FAILED (1):",
            "  - subject a: correctness 0.944 -> 0.000, a drop of 0.944; its 0.95 interval over "
            "6 shared cases, *, lies below 0 (--rubric-max-drop, --rubric-gate-confidence)",
        ]
    )
    assert re.search(r"6 failed, 1 rubric gate failed", result.outlines[-1])


def test_every_gate_outcome_is_in_the_json_and_kept_through_merge(
    pytester: pytest.Pytester, write: Write, baseline: Path
) -> None:
    _suite(write, q2="No idea.")
    args = ["--rubric-baseline", "base.json", "--rubric-fail-under", "0.9"]
    pytester.runpytest(*args, "--rubric-json", "out.json", "--rubric-markdown", "m.md")
    gates = json.loads((pytester.path / "out.json").read_text())["gates"]
    assert gates == [
        {"gate": "baseline-case", "subject": "a", "nodeid": "s.rubric.yaml::q2[a]",
         "failed": True, "message": "s.rubric.yaml::q2[a] passed in the baseline and fails "
         "now (score 0.00, min_score 0.50)"},
        {"gate": "baseline-subject", "subject": "a", "nodeid": None, "failed": True,
         "message": "subject a: correctness 1.000 -> 0.500, a drop of 0.500 (more than "
         "--rubric-max-drop 0)"},
        {"gate": "fail-under", "subject": "a", "nodeid": None, "failed": True,
         "message": "subject a: correctness 0.500 is below --rubric-fail-under 0.9"},
    ]  # fmt: skip
    assert "- subject a: correctness 0.500 is below --rubric-fail-under 0.9" in (
        (pytester.path / "m.md").read_text()
    )
    # A merge given no gate keeps every outcome, and fails as the run did.
    assert merge_main(["merge", "out.json", "--json", "merged.json"]) == 1
    assert json.loads((pytester.path / "merged.json").read_text())["gates"] == gates
    # A merge applying a gate itself judges it again, naming its own flag; the others are kept.
    assert merge_main(["merge", "out.json", "--fail-under", "0.4", "--json", "merged.json"]) == 1
    merged = json.loads((pytester.path / "merged.json").read_text())["gates"]
    assert merged[:2] == gates[:2]
    assert merged[2] == {
        "gate": "fail-under", "subject": "a", "nodeid": None, "failed": False,
        "message": "subject a: correctness 0.500 is at or above --fail-under 0.4",
    }  # fmt: skip


def _cases(*ids: str, **phrases: str) -> str:
    """A suite whose cases pass when the answer says ``sure`` (or their own phrase)."""
    rows = "".join(
        f"  - {{id: {i}, question: 'Case {i}?', "
        f"criteria: [{{id: ok, type: any_of, any_of: [{phrases.get(i, 'sure')}]}}]}}\n"
        for i in ids
    )
    return f"suite: faq\ntarget: app.bot:answer\nmin_score: 1\ncases:\n{rows}"


def test_the_change_shown_is_the_paired_one_the_gate_judges(
    team: Callable[..., None], pytester: pytest.Pytester
) -> None:
    """Cases added and removed: the summary and the HTML showed the unpaired change
    (0.750 -> 0.750, +0.000) while the gate failed on a paired drop of 0.333 over the
    shared cases. The change shown is the gate's."""
    answers = {"a": "sure", "b": "sure", "c": "nope", "d": "nope", "e": "sure"}
    team(faq=_cases("a", "b", "c", "d", c="nope"), answers=answers)
    pytester.runpytest("--rubric-json", "main.json")
    # c regresses (its phrase changed), d is gone, e is new: 3 of 4 pass on both sides.
    team(faq=_cases("a", "b", "c", "e"), answers=answers)
    result = pytester.runpytest("--rubric-baseline", "main.json", "--rubric-html", "out.html")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            # Baseline and now over all their cases; the change and its means over the shared.
            "  answer: 0.750 -> 0.750 (-0.333 [[]*[]] over the 3 shared cases, 1.000 -> 0.667)",
            "  - subject answer: correctness 1.000 -> 0.667 over the 3 cases both runs graded, "
            "a drop of 0.333 (more than --rubric-max-drop 0)",
        ]
    )
    assert "+0.000" not in result.stdout.str()
    html = (pytester.path / "out.html").read_text(encoding="utf-8")
    assert "<td>-0.333 [" in html
    assert "+0.000" not in html


def test_a_baseline_that_shares_no_case_names_the_rootdir_and_what_to_do(
    pytester: pytest.Pytester,
) -> None:
    """A team with no ini keeps main's results outside the project: pytest takes
    `--rubric-baseline PATH` for a path when it looks for the rootdir, the rootdir moves up,
    every node id changes, and the gate said "shares no case" without saying why."""
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "faq.rubric.yaml").write_text(
        "cases:\n"
        + "".join(
            f"  - {{id: {i}, responses: {{bot: sure}}, criteria: [{{type: any_of, any_of: [sure]}}]}}\n"
            for i in "ab"
        )
    )
    elsewhere = pytester.path.parent / f"{pytester.path.name}-main"
    elsewhere.mkdir()
    main = elsewhere / "main.json"
    pytester.runpytest("--rubric-dir", "evals", "--rubric-json", str(main)).assert_outcomes(
        passed=2
    )
    result = pytester.runpytest("--rubric-dir", "evals", "--rubric-baseline", str(main))
    rootdir = pytester.path.parent
    result.stdout.fnmatch_lines(
        [
            "rubric gate FAILED (1):",  # once, not again for each subject
            f"  - the baseline ({main}) shares no case with this run: nothing was compared. "
            f"Cases are matched by node id, relative to pytest's rootdir, {rootdir} in this run; "
            "the baseline's node ids read like evals/faq.rubric.yaml::a[[]bot[]], this run's "
            f"like {pytester.path.name}/evals/faq.rubric.yaml::a[[]bot[]]. With no ini file "
            "pytest takes the rootdir from the paths on the command line, the baseline's too: "
            "add an ini file (pytest.ini, or [[]tool.pytest.ini_options[]] in pyproject.toml) "
            "at the project's root, or pass --rootdir, or write --rubric-baseline=PATH; else "
            "give the baseline of this suite",
        ]
    )
    # Said before the run too, where the imports of targets and callables move with it.
    result.stdout.fnmatch_lines(
        [
            f"*RubricWarning: --rubric-baseline {main}: with no ini file, pytest took this path "
            f"for a test path and chose the rootdir {rootdir}, so node ids are relative to it*"
        ]
    )
    # What the messages say to do works.
    result = pytester.runpytest("--rubric-dir", "evals", f"--rubric-baseline={main}")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["rubric gate passed: *"])
    result.stdout.no_fnmatch_line("*RubricWarning*")
