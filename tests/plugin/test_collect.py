"""Collection end to end: which files become items, their ids, and where responses come from."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import RUN_MODES, lines_in_any_order

Write = Callable[[str, str], Path]

SIMPLE = """
suite: basics
cases:
  - id: q1
    question: "What is 2 + 2?"
    responses: {alice: "It is 4.", bob: "It is 5."}
    criteria:
      - {id: four, type: number, value: 4}
"""


def test_rubric_dir_collects_items_with_case_and_subject_ids(
    pytester: pytest.Pytester, write: Write
) -> None:
    write("evals/basics.rubric.yaml", SIMPLE)
    write("test_other.py", "def test_unrelated(): pass\n")
    result = pytester.runpytest("--rubric-dir", "evals", "--collect-only", "-q")
    lines_in_any_order(
        result, ["evals/basics.rubric.yaml::q1[[]alice[]]", "evals/basics.rubric.yaml::q1[[]bob[]]"]
    )
    # Without test paths, --rubric-dir runs only the rubric directories.
    result.stdout.no_fnmatch_line("*test_unrelated*")


def test_rubric_dir_adds_to_explicit_test_paths(pytester: pytest.Pytester, write: Write) -> None:
    write("evals/basics.rubric.yaml", SIMPLE)
    write("test_other.py", "def test_unrelated(): pass\n")
    result = pytester.runpytest("test_other.py", "--rubric-dir", "evals", "--collect-only", "-q")
    lines_in_any_order(
        result, ["test_other.py::test_unrelated", "evals/basics.rubric.yaml::q1[[]alice[]]"]
    )


def test_rubric_dir_is_repeatable(pytester: pytest.Pytester, write: Write) -> None:
    write("a/one.rubric.yaml", SIMPLE)
    write("b/two.rubric.yml", SIMPLE)
    result = pytester.runpytest("--rubric-dir", "a", "--rubric-dir", "b", "-q")
    result.assert_outcomes(passed=2, failed=2)


def test_ini_rubric_dirs_and_file_patterns(pytester: pytest.Pytester, write: Write) -> None:
    """Patterns are separated by spaces or lines, as pytest's own ``python_files``."""
    write("evals/basics.evals.yaml", SIMPLE)
    write("evals/more.checks.yaml", SIMPLE)
    write("evals/left.rubric.yaml", SIMPLE)  # the default pattern no longer applies
    pytester.makeini(
        "[pytest]\nrubric_dirs = evals\nrubric_file_patterns = *.evals.yaml\n    *.checks.yaml\n"
    )
    result = pytester.runpytest("-q")
    result.assert_outcomes(passed=2, failed=2)
    pytester.makeini(
        "[pytest]\nrubric_dirs = evals\nrubric_file_patterns = *.evals.yaml *.checks.yaml\n"
    )
    result = pytester.runpytest("-q")
    result.assert_outcomes(passed=2, failed=2)


@pytest.mark.parametrize(
    ("ini", "args", "outcomes"),
    [
        ("", (), {"passed": 2, "failed": 1}),
        ("testpaths = tests\n", (), {"passed": 2, "failed": 1}),
        # Like testpaths, rubric_dirs is not added to a command line that names a path.
        ("", ("tests/test_unit.py",), {"passed": 1}),
    ],
    ids=["no-testpaths", "testpaths", "named-test-file"],
)
def test_ini_rubric_dirs_never_hide_the_projects_tests(
    pytester: pytest.Pytester,
    write: Write,
    ini: str,
    args: tuple[str, ...],
    outcomes: dict[str, int],
) -> None:
    """A project adds ``rubric_dirs`` to its own pytest.ini: its unit tests still run, and
    a rubric file is collected once even where the normal collection reaches it too."""
    pytester.makeini("[pytest]\nrubric_dirs = evals\n" + ini)
    write("tests/test_unit.py", "def test_unit(): pass\n")
    write("evals/basics.rubric.yaml", SIMPLE)
    result = pytester.runpytest("-v", *args)
    result.assert_outcomes(**outcomes)
    result.stdout.fnmatch_lines(["*tests/test_unit.py::test_unit PASSED*"])


def test_rubric_files_on_the_normal_collection_path(
    pytester: pytest.Pytester, write: Write
) -> None:
    write("sub/basics.rubric.yaml", SIMPLE)
    write("sub/ignored.yaml", SIMPLE)
    result = pytester.runpytest("-q")
    result.assert_outcomes(passed=1, failed=1)


def test_json_rubric_and_bare_list_of_cases(pytester: pytest.Pytester, write: Write) -> None:
    write(
        "questions.rubric.json",
        """
        [{"id": "q1", "response": "Paris", "subject": "geo-bot",
          "criteria": [{"id": "city", "type": "any_of", "any_of": ["paris"]}]}]
        """,
    )
    result = pytester.runpytest("-v")
    result.stdout.fnmatch_lines(["questions.rubric.json::q1[[]geo-bot[]] PASSED*"])


def test_inline_response_defaults_to_subject_inline(
    pytester: pytest.Pytester, write: Write
) -> None:
    write(
        "x.rubric.yaml",
        """
        cases:
          - id: q1
            response: "Paris"
            criteria: [{id: city, type: any_of, any_of: [paris]}]
        """,
    )
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["x.rubric.yaml::q1[[]inline[]]"])


def test_responses_folder_of_subject_files(pytester: pytest.Pytester, write: Write) -> None:
    write(
        "evals/fin.rubric.yaml",
        """
        responses: answers/
        cases:
          - id: q1
            criteria: [{id: four, type: number, value: 4}]
          - id: q2
            criteria: [{id: npv, type: any_of, any_of: [npv]}]
        """,
    )
    write(
        "evals/answers/model-a.jsonl",
        '{"id": "q1", "response": "4"}\n{"id": "q2", "answer": "NPV"}\n',
    )
    write(
        "evals/answers/model-b.jsonl",
        '{"id": "q1", "response": "5"}\n{"id": "q2", "response": "no"}\n',
    )
    result = pytester.runpytest("--rubric-dir", "evals", "-v")
    lines_in_any_order(
        result,
        [
            "evals/fin.rubric.yaml::q1[[]model-a[]] PASSED*",
            "evals/fin.rubric.yaml::q1[[]model-b[]] FAILED*",
            "evals/fin.rubric.yaml::q2[[]model-a[]] PASSED*",
            "evals/fin.rubric.yaml::q2[[]model-b[]] FAILED*",
        ],
    )


def test_a_lines_suite_gives_each_suites_case_of_one_id_its_own_line(
    pytester: pytest.Pytester, write: Write
) -> None:
    """Two suites with a case of one id, in one responses folder: each line's ``suite`` says
    whose it is, so they are neither two samples of one case nor missing, and no warning."""
    for suite in ("one", "two"):
        write(
            f"evals/{suite}.rubric.yaml",
            f"""
            suite: {suite}
            responses: ../answers/
            cases:
              - id: shared
                criteria: [{{id: said, type: any_of, any_of: ["{suite}"]}}]
            """,
        )
    write(
        "answers/al.jsonl",
        '{"id": "shared", "suite": "one", "response": "one"}\n'
        '{"id": "shared", "suite": "two", "response": "two"}\n',
    )
    result = pytester.runpytest("--rubric-dir", "evals", "-v", "-W", "error::UserWarning")
    result.assert_outcomes(passed=2)


def test_case_missing_from_a_subject_file_is_an_error_not_dropped(
    pytester: pytest.Pytester, write: Write
) -> None:
    write(
        "fin.rubric.yaml",
        """
        responses: answers/
        cases:
          - id: q1
            criteria: [{id: four, type: number, value: 4}]
          - id: q2
            criteria: [{id: four, type: number, value: 4}]
        """,
    )
    write("answers/model-a.jsonl", '{"id": "q1", "response": "4"}\n')
    result = pytester.runpytest("-q", "--rubric-json", "out.json")
    result.assert_outcomes(passed=1, errors=1)
    # It still counts for its subject: not passed, score 0, every criterion ERROR.
    document = json.loads((pytester.path / "out.json").read_text())
    missing = next(r for r in document["results"] if r["case"] == "q2")
    assert (missing["subject"], missing["score"], missing["passed"]) == ("model-a", 0.0, False)
    assert [c["verdict"] for c in missing["criteria"]] == ["ERROR"]
    assert document["leaderboard"][0]["total"] == 2
    result.stdout.fnmatch_lines(
        [
            "*ERROR at call of rubric: q2[[]model-a[]]*",
            "subject 'model-a' has no response for case 'q2': add a line to *model-a.jsonl:"
            ' {"id": "q2", "response": "..."}',
        ]
    )


# In process; with two workers, test_run_modes's suite holds such a response.
@pytest.mark.parametrize("mode", ["no-xdist", "xdist-n0"])
def test_response_without_a_case_is_reported_as_a_warning(
    pytester: pytest.Pytester, write: Write, mode: str
) -> None:
    run_mode = RUN_MODES[mode]
    write(
        "fin.rubric.yaml",
        """
        responses: answers/
        cases:
          - id: q1
            criteria: [{id: four, type: number, value: 4}]
        """,
    )
    write("answers/model-a.jsonl", '{"id": "q1", "response": "4"}\n{"id": "q9", "response": "?"}\n')
    result = pytester.runpytest("-q", *run_mode)
    result.assert_outcomes(passed=1, warnings=1)  # once, however many xdist workers
    result.stdout.fnmatch_lines(
        [
            "*: RubricWarning: answers/model-a.jsonl:2: the response of subject 'model-a' for case "
            "'q9' matches no collected case*"
        ]
    )


def test_a_responses_file_with_a_bad_line_warns_about_none_of_its_good_ones(
    pytester: pytest.Pytester, write: Write
) -> None:
    """The bad line fails the rubric file's collection, so no case used the good lines: they
    match cases all the same, and no warning tells the user to change them."""
    write(
        "fin.rubric.yaml",
        """
        responses: answers/
        cases:
          - id: q1
            criteria: [{id: four, type: number, value: 4}]
          - id: q2
            criteria: [{id: four, type: number, value: 4}]
        """,
    )
    write("answers/model-a.jsonl", '{"id": "q1", "response": "4"}\n{"id": "q2", "response": 4}\n')
    result = pytester.runpytest("-q")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*model-a.jsonl:2, case 'q2', field 'response'*"])
    result.stdout.no_fnmatch_line("*matches no collected case*")


@pytest.mark.parametrize(
    "narrowing", [["fin.rubric.yaml"], ["fin.rubric.yaml::q1"], ["-k", "q1"], ["--deselect=x"]]
)
def test_a_narrowed_run_does_not_warn_about_cases_it_did_not_collect(
    pytester: pytest.Pytester, write: Write, narrowing: list[str]
) -> None:
    """A CI shard or a file run by hand leaves the other files' cases out on purpose."""
    write(
        "fin.rubric.yaml",
        """
        responses: answers/
        cases:
          - id: q1
            criteria: [{id: four, type: number, value: 4}]
        """,
    )
    write("answers/model-a.jsonl", '{"id": "q1", "response": "4"}\n{"id": "q9", "response": "?"}\n')
    pytester.runpytest("-q", *narrowing).assert_outcomes(passed=1, warnings=0)


def test_rubric_responses_flag(pytester: pytest.Pytester, write: Write) -> None:
    write(
        "evals/fin.rubric.yaml",
        """
        cases:
          - id: q1
            criteria: [{id: four, type: number, value: 4}]
        """,
    )
    write("run-7/gpt.jsonl", '{"id": "q1", "response": "four, i.e. 4"}\n')
    result = pytester.runpytest("--rubric-dir", "evals", "--rubric-responses", "run-7", "-v")
    result.stdout.fnmatch_lines(["evals/fin.rubric.yaml::q1[[]gpt[]] PASSED*"])


def test_broken_rubric_responses_file_is_a_usage_error(
    pytester: pytest.Pytester, write: Write
) -> None:
    write("fin.rubric.yaml", SIMPLE)
    write("run/gpt.jsonl", '{"id": "q1", "response": "4"}\nnot json\n')
    result = pytester.runpytest("--rubric-responses", "run")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*run/gpt.jsonl:2: invalid JSON*"])


def test_target_sync_and_async(pytester: pytest.Pytester, write: Write) -> None:
    write(
        "myapp.py",
        """
        import asyncio

        def answer(case):
            return f"The answer to {case.id} is 4."

        async def answer_async(case):
            await asyncio.sleep(0)
            return "It is 5."
        """,
    )
    write(
        "app.rubric.yaml",
        """
        target: "myapp:answer"
        cases:
          - id: q1
            criteria: [{id: four, type: number, value: 4}]
          - id: q2
            target: "myapp:answer_async"
            criteria: [{id: four, type: number, value: 4}]
        """,
    )
    pytester.syspathinsert()
    result = pytester.runpytest("-v")
    lines_in_any_order(
        result,
        [
            "app.rubric.yaml::q1[[]answer[]] PASSED*",
            "app.rubric.yaml::q2[[]answer_async[]] FAILED*",
        ],
    )


def test_target_that_raises_is_an_error(pytester: pytest.Pytester, write: Write) -> None:
    write("myapp.py", "def answer(case):\n    raise RuntimeError('model down')\n")
    write(
        "app.rubric.yaml",
        """
        cases:
          - id: q1
            criteria: [{id: four, type: number, value: 4}]
        """,
    )
    pytester.syspathinsert()
    result = pytester.runpytest("--rubric-target", "myapp:answer")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["target myapp:answer raised RuntimeError: model down"])


def test_case_without_any_response_is_an_error(pytester: pytest.Pytester, write: Write) -> None:
    write(
        "app.rubric.yaml",
        """
        cases:
          - id: q1
            criteria: [{id: four, type: number, value: 4}]
        """,
    )
    result = pytester.runpytest("-q")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["case 'q1' has no response to grade: give it `response:`*"])


def test_judge_items_carry_the_llm_judge_marker(pytester: pytest.Pytester, write: Write) -> None:
    write(
        "mixed.rubric.yaml",
        """
        cases:
          - id: offline
            response: "4"
            criteria: [{id: four, type: number, value: 4}]
          - id: judged
            response: "4"
            criteria:
              - {id: four, type: number, value: 4}
              - {weight: 3, id: explains, requirement: "Explains the arithmetic"}
        """,
    )
    result = pytester.runpytest("-m", "not llm_judge", "-v")
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["mixed.rubric.yaml::offline[[]inline[]] PASSED*"])
    result = pytester.runpytest("-m", "llm_judge", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["mixed.rubric.yaml::judged[[]inline[]]", "1/2 tests collected*"])


def test_item_location_is_the_case_line(pytester: pytest.Pytester, write: Write) -> None:
    write(SIMPLE_NAME := "basics.rubric.yaml", SIMPLE)
    items, _ = pytester.inline_genitems(SIMPLE_NAME)
    assert [item.location[1] for item in items] == [2, 2]  # 0-based line of "- id: q1"
    assert items[0].location[2] == "rubric: q1[alice]"


def test_each_case_is_compiled_once_whatever_the_number_of_subjects(
    pytester: pytest.Pytester, write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_rubric._grade.grader import Grader
    from pytest_rubric.criteria.regex import RegexCheck

    write(
        "many.rubric.yaml",
        """
        cases:
          - id: q1
            responses: {a: "loss of 4", b: "gain of 5", c: "4 losses"}
            criteria:
              - {id: loss, type: regex, pattern: '\\bloss'}
              - {id: four, type: number, value: 4}
          - id: q2
            responses: {a: "x", b: "y", c: "z"}
            criteria: [{id: x, type: any_of, any_of: [x]}]
        """,
    )
    compiled: list[str] = []
    regexes: list[str] = []
    real_compile, real_regex = Grader.compile, RegexCheck.__init__

    def counting_compile(self: Grader, rubric: object, **kwargs: object) -> object:
        compiled.append(rubric.id)  # type: ignore[attr-defined]
        return real_compile(self, rubric, **kwargs)  # type: ignore[arg-type]

    def counting_regex(self: object, c: object) -> None:
        regexes.append(c.pattern)  # type: ignore[attr-defined]
        real_regex(self, c)  # type: ignore[arg-type]

    monkeypatch.setattr(Grader, "compile", counting_compile)
    monkeypatch.setattr(RegexCheck, "__init__", counting_regex)
    result = pytester.inline_run()
    result.assertoutcome(passed=3, failed=3)
    assert compiled == ["q1", "q2"]  # six items, two compilations
    assert regexes == ["\\bloss"]


def test_callables_and_targets_import_from_the_rootdir_and_the_rubric_folder_under_plain_pytest(
    pytester: pytest.Pytester, write: Write
) -> None:
    """``pytest`` (the console script, not ``python -m pytest``) does not put the rootdir on
    the import path; a ``checks.py`` next to pytest.ini must import all the same."""
    pytester.makeini("[pytest]\nrubric_dirs = evals\n")
    write("checks.py", "def says_paris(answer, case):\n    return 'Paris' in answer\n")
    write("evals/bot.py", "def answer(case):\n    return 'Paris'\n")
    write(
        "evals/geo.rubric.yaml",
        """
        target: bot:answer
        cases:
          - id: q1
            question: Capital of France?
            criteria: [{id: city, type: callable, function: 'checks:says_paris'}]
        """,
    )
    script = Path(sys.executable).with_name("pytest")
    result = pytester.run(str(script), "-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=1)


def test_two_rubric_folders_with_a_module_of_one_name_are_told_apart_not_mixed_up(
    pytester: pytest.Pytester, write: Write
) -> None:
    """Python imports one module of a name: the second folder's ``checks.py`` would silently
    be the first's (its target answering with the other's words), so its file says so."""
    pytester.makeini("[pytest]\nrubric_dirs = evals\n")
    for name in ("a", "b"):
        write(f"evals/{name}/checks.py", f"def t(question):\n    return 'from {name}'\n")
        write(
            f"evals/{name}/s.rubric.yaml",
            f"""
            target: checks:t
            cases:
              - id: q
                question: "q?"
                criteria: [{{id: own, type: any_of, any_of: ["from {name}"]}}]
            """,
        )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "  evals/b/s.rubric.yaml: module 'checks' would be imported from *evals/a/checks.py, "
            "not from beside this rubric file",
            "    -> rename one of them: Python imports one module of a name",
        ]
    )


def test_an_empty_responses_folder_says_what_is_missing_not_to_set_it(
    pytester: pytest.Pytester, write: Write
) -> None:
    (pytester.path / "answers").mkdir()
    write(
        "a.rubric.yaml",
        "responses: answers/\ncases:\n  - id: q1\n    criteria: [{id: c, type: any_of, any_of: [x]}]\n",
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*no subject in the responses folder answers it (it holds no <subject>.jsonl file)*"]
    )
    result.stdout.no_fnmatch_line("*set `responses:` in the file*")
