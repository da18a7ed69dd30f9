"""``assert_rubric`` in plain tests: the forms of rubric it takes, what it raises, and the summary.

The session test runs in one mode: test_run_modes proves ``assert_rubric`` results reach the
summary, the JSON and JUnit the same without xdist, with ``-n 0`` and with ``-n 2``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_rubric import (
    CaseResult,
    Rubric,
    RubricAssertionError,
    RubricEvaluationError,
    RubricLoadError,
    assert_rubric,
)
from pytest_rubric._results import without_subject
from pytest_rubric.criteria import AnyOf
from tests.conftest import team_project

Write = Callable[[str, str], Path]

CRITERIA = [
    {"id": "npv", "type": "any_of", "any_of": ["net present value"]},
    {"id": "value", "type": "number", "value": 157.63, "abs_tol": 0.01},
]


def test_returns_the_result_when_the_response_passes() -> None:
    result = assert_rubric("The net present value is $157.63.", CRITERIA)
    assert isinstance(result, CaseResult)
    assert (result.score, result.passed, result.subject) == (1.0, True, "inline")


def test_raises_an_assertion_error_with_the_criterion_table() -> None:
    with pytest.raises(RubricAssertionError) as info:
        assert_rubric("The NPV is about $150.", CRITERIA, min_score=0.5, query="NPV?")
    assert isinstance(info.value, AssertionError)
    assert info.value.result.score == 0.0
    lines = str(info.value).splitlines()
    # Inside a test, an unnamed rubric is named after the test.
    assert lines[0] == (
        "rubric test_raises_an_assertion_error_with_the_criterion_table[inline]: "
        "score 0.00 (min_score 0.50, raw 0) FAILED"
    )
    assert lines[2].startswith(
        "x  npv        any_of  UNMET         1  none of 'net present value' found"
    )
    assert lines[3].startswith(
        "x  value      number  UNMET         1  no number within 157.63 ± 0.01; saw 150"
    )
    assert lines[-1] == "  - score 0.00 is below min_score 0.50"


def test_min_score_defaults_to_0_8() -> None:
    four_of_five = [{"id": f"c{i}", "type": "any_of", "any_of": [f"w{i}"]} for i in range(5)]
    assert assert_rubric("w0 w1 w2 w3", four_of_five).score == pytest.approx(0.8)
    with pytest.raises(RubricAssertionError):
        assert_rubric("w0 w1 w2", four_of_five)


def test_an_error_criterion_raises_evaluation_error_not_a_pass() -> None:
    with pytest.raises(RubricEvaluationError) as info:
        assert_rubric(
            "x",
            [
                {"id": "a", "type": "any_of", "any_of": ["x"]},
                {"id": "re", "type": "regex", "pattern": "("},
            ],
        )
    assert not isinstance(info.value, AssertionError)
    assert info.value.result.status == "error"


def test_rubric_object_and_mapping_forms() -> None:
    rubric = Rubric(criteria=[AnyOf(id="paris", any_of=["Paris"])], min_score=1.0)
    assert assert_rubric("It is Paris.", rubric).passed
    assert assert_rubric(
        "It is Paris.", {"criteria": [{"id": "p", "type": "any_of", "any_of": ["paris"]}]}
    ).passed


def test_malformed_criteria_raise_a_load_error_that_says_what_to_write() -> None:
    with pytest.raises(RubricLoadError) as info:
        assert_rubric("x", [{"id": "a", "type": "any_off", "any_of": ["x"]}])
    assert "criterion 'a', field 'type': unknown criterion type 'any_off'" in str(info.value)
    assert "did you mean `type: any_of`?" in str(info.value)


def test_an_unknown_key_of_a_rubric_dict_lists_what_a_rubric_takes() -> None:
    """A rubric dict is one rubric, not a rubric file: the keys it may hold are a rubric's."""
    with pytest.raises(RubricLoadError) as info:
        assert_rubric("x", {"criteria": CRITERIA, "quesiton": "What?", "repeat": 3})
    said = str(info.value)
    assert "field 'quesiton': unknown field `quesiton`" in said
    assert "did you mean `question`?" in said and "did you mean `repeat`" not in said
    assert "Allowed here: id, question, messages, criteria, min_score" in said


@pytest.mark.parametrize(
    ("rubric", "min_score", "expected"),
    [
        ([], None, "case 'rubric', field 'criteria': the case has no substance criterion"),
        ([{"id": "r", "type": "any_of", "any_of": ["x"], "axis": "style"}], None, "no substance"),
        ({"criteria": [{"type": "any_of", "any_of": ["x"], "weight": 0}]}, 0, "no substance"),
        (CRITERIA, 1.5, "field 'min_score': `min_score`: Input should be less than or equal to 1"),
        (Rubric(criteria=[AnyOf(id="p", any_of=["x"], axis="style")]), None, "no substance"),
    ],
)
def test_a_rubric_is_checked_as_a_file_case_is(rubric: Any, min_score: Any, expected: str) -> None:
    with pytest.raises(RubricLoadError, match="1 problem in rubric file") as info:
        assert_rubric("x", rubric, min_score=min_score)
    assert expected in str(info.value)


def test_path_with_case_id_uses_the_file_globals_and_min_score(tmp_path: Path) -> None:
    path = tmp_path / "fin.rubric.yaml"
    path.write_text(
        """
min_score: 0.5
global:
  - {id: no_guarantee, type: forbidden, phrases: [guaranteed]}
cases:
  - id: q1
    criteria: [{id: npv, type: any_of, any_of: [npv]}, {id: rate, type: any_of, any_of: [discount]}]
  - id: q2
    criteria: [{id: var, type: any_of, any_of: [var]}]
""",
        encoding="utf-8",
    )
    result = assert_rubric("NPV only", f"{path}::q1")
    assert (result.score, result.min_score, result.case) == (0.5, 0.5, "q1")
    assert [c.id for c in result.criteria] == ["no_guarantee", "npv", "rate"]
    with pytest.raises(RubricAssertionError):
        assert_rubric("NPV is guaranteed", f"{path}::q1")
    # A rubric error, as every mistake in a rubric is (RubricError catches it), saying what to
    # write instead.
    with pytest.raises(RubricLoadError, match=r"2 cases, and no case named") as info:
        assert_rubric("x", path)
    assert "name one as '" in str(info.value) and "::<case id>'" in str(info.value)
    with pytest.raises(RubricLoadError, match=r"no case 'q3'") as info:
        assert_rubric("x", f"{path}::q3")
    assert "name one of its cases: q1, q2" in str(info.value)


def test_subjects_graded_on_one_question_in_one_test_share_its_case(
    pytester: pytest.Pytester,
) -> None:
    """Each subject's n-th call in a test is its n-th case: the parametrized test's two
    subjects are compared case by case (pairwise shares every question)."""
    pytester.makepyfile(
        test_two="""
        import pytest
        from pytest_rubric import assert_rubric

        CRITERIA = [
            {"id": "four", "type": "number", "value": 4},
            {"id": "sum", "type": "any_of", "any_of": ["sum"]},
        ]

        @pytest.mark.parametrize("q", range(3))
        def test_both(q):
            assert_rubric("The sum is 4.", CRITERIA, subject="good", min_score=0.5)
            assert_rubric("The sum is 4, or 5.", CRITERIA, subject="good", min_score=0.5)
            assert_rubric("It is 4.", CRITERIA, subject="bad", min_score=0.5)
        """
    )
    pytester.runpytest("--rubric-json=out.json").assert_outcomes(passed=3)
    document = json.loads((pytester.path / "out.json").read_text())
    cases = {(r["subject"], r["case"]) for r in document["results"]}
    assert ("good", "test_both[0]") in cases and ("good", "test_both[0]#2") in cases
    (pair,) = document["pairwise"]
    assert pair["shared"] == 3  # the first call of each subject in each of the three tests


def test_a_test_parametrized_over_its_subjects_compares_them_case_by_case(
    pytester: pytest.Pytester,
) -> None:
    """``subject=`` from a parameter: the subject's id is no part of the case, so the two
    subjects' results of one question pair (the question's own parameter still tells the
    cases apart)."""
    pytester.makepyfile(
        test_models="""
        import pytest
        from pytest_rubric import assert_rubric

        CRITERIA = [{"id": "four", "type": "number", "value": 4}]
        ANSWERS = {"good": "It is 4.", "gpt-4o": "It is 5."}

        @pytest.mark.parametrize("model", ["good", "gpt-4o"])
        def test_one(model):
            assert_rubric(ANSWERS[model], CRITERIA, subject=model, min_score=0)

        @pytest.mark.parametrize("model", ["good", "gpt-4o"])
        @pytest.mark.parametrize("q", ["q1", "q2", "q3"])
        def test_each(q, model):
            assert_rubric(ANSWERS[model], CRITERIA, subject=model, min_score=0)
        """
    )
    pytester.runpytest("--rubric-json=out.json").assert_outcomes(passed=8)
    document = json.loads((pytester.path / "out.json").read_text())
    cases = sorted({r["case"] for r in document["results"]})
    assert cases == ["test_each[q1]", "test_each[q2]", "test_each[q3]", "test_one"]
    (pair,) = document["pairwise"]
    assert pair["shared"] == 4 and pair["diff"] == pytest.approx(1.0)


def test_calls_from_threads_the_test_started_are_each_a_case_of_their_own(
    pytester: pytest.Pytester,
) -> None:
    """Eight calls at once for one subject: eight cases, numbered as they start, none twice."""
    pytester.makepyfile(
        test_pool="""
        from concurrent.futures import ThreadPoolExecutor

        from pytest_rubric import assert_rubric

        CRITERIA = [{"id": "four", "type": "number", "value": 4}]

        def test_pool():
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda _: assert_rubric("4", CRITERIA, subject="bot"), range(8)))
        """
    )
    pytester.runpytest("--rubric-json=out.json").assert_outcomes(passed=1)
    cases = sorted(
        r["case"] for r in json.loads((pytester.path / "out.json").read_text())["results"]
    )
    assert cases == sorted(["test_pool", *(f"test_pool#{n}" for n in range(2, 9))])


@pytest.mark.parametrize(
    ("name", "subject", "expected"),
    [
        ("f.rubric.yaml::q1[bot]", "bot", "f.rubric.yaml::q1"),
        ("test_each[q1-gpt-4o]", "gpt-4o", "test_each[q1]"),
        ("test_each[gpt-4o-q1]", "gpt-4o", "test_each[q1]"),
        ("test_each[a-gpt-4o-b]", "gpt-4o", "test_each[a-b]"),
        ("test_each[q1-bot2]", "bot", "test_each[q1-bot2]"),
        ("test_plain", "bot", "test_plain"),
        ("evals[v2]/t.rubric.yaml::q1[bot]", "bot", "evals[v2]/t.rubric.yaml::q1"),
        ("evals[bot]/t.rubric.yaml::q1", "bot", "evals[bot]/t.rubric.yaml::q1"),
        ("test_each[mod\\xe8le-q1]", "modèle", "test_each[q1]"),  # as pytest escapes it
        ("f.rubric.yaml::q1[modèle]", "modèle", "f.rubric.yaml::q1"),
    ],
)
def test_a_subject_is_taken_out_of_parameter_ids_only_whole(
    name: str, subject: str, expected: str
) -> None:
    assert without_subject(name, subject) == expected


def test_results_join_the_session_summary_and_json(
    pytester: pytest.Pytester,
    write: Write,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    write(
        "test_app.py",
        """
        import pytest
        from pytest_rubric import assert_rubric

        CRITERIA = [{"id": "capital", "type": "any_of", "any_of": ["paris"]}]

        @pytest.mark.parametrize("model,answer", [("good-model", "Paris."), ("bad-model", "Lyon.")])
        def test_capital(model, answer):
            assert_rubric(answer, CRITERIA, subject=model, query="Capital of France?")
            assert_rubric(answer.upper(), CRITERIA, subject=model)
        """,
    )
    result = pytester.runpytest("--rubric-json", "out.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        consecutive=True,
        lines2=[
            '>       assert_rubric(answer, CRITERIA, subject=model, query="Capital of France?")',
            "E       pytest_rubric.RubricAssertionError: rubric test_capital[[]Lyon.[]][[]bad-model[]]: "
            "score 0.00 (min_score 0.80, raw 0) FAILED",
            "E          criterion  type    verdict  weight  reason",
            "E       x  capital    any_of  UNMET         1  none of 'paris' found",
            "E         - score 0.00 is below min_score 0.80",
        ],
    )
    result.stdout.fnmatch_lines(
        [
            "*= rubric summary =*",
            "rank  subject  *correctness*",
            "   1  good-model  1.000 *2/2*",
            "   2  bad-model   0.000 *0/1*",
        ],
        consecutive=True,
    )
    results = sorted(rubric_json()["results"], key=lambda r: (r["subject"], r["case"]))
    assert [(r["subject"], r["case"], r["passed"]) for r in results] == [
        # The subject's id is no part of the case: the answer's is.
        ("bad-model", "test_capital[Lyon.]", False),
        ("good-model", "test_capital[Paris.]", True),
        ("good-model", "test_capital[Paris.]#2", True),
    ]
    assert results[1]["nodeid"] == "test_app.py::test_capital[good-model-Paris.]"
    assert results[1]["question"] == "Capital of France?"
    assert results[1]["suite"] == "test_app"


def test_a_failure_the_test_catches_does_not_count(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    """A test that expects an answer to fail (``pytest.raises``) decided that failure is
    fine: it joins neither the leaderboard, the JSON nor the gates. One that escapes does."""
    write(
        "test_app.py",
        """
        import pytest
        from pytest_rubric import RubricAssertionError, RubricEvaluationError, assert_rubric

        CRITERIA = [{"id": "capital", "type": "any_of", "any_of": ["paris"]}]
        BROKEN = CRITERIA + [{"id": "rx", "type": "regex", "pattern": "(unclosed"}]

        def test_expected_failures():
            with pytest.raises(RubricAssertionError):
                assert_rubric("Lyon.", CRITERIA, subject="caught")
            with pytest.raises(RubricEvaluationError):
                assert_rubric("Paris.", BROKEN, subject="caught")
            assert_rubric("Paris.", CRITERIA, subject="kept")

        def test_escaping_failure():
            assert_rubric("Lyon.", CRITERIA, subject="escaped")
        """,
    )
    result = pytester.runpytest("--rubric-json", "out.json", "--junitxml", "j.xml")
    result.assert_outcomes(passed=1, failed=1)
    results = sorted((r["subject"], r["passed"]) for r in rubric_json()["results"])
    assert results == [("escaped", False), ("kept", True)]
    assert "caught" not in (pytester.path / "j.xml").read_text()


def test_the_rubric_fixture_is_assert_rubric_bound_to_its_test(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    write(
        "test_fixture.py",
        """
        import pytest

        CRITERIA = [{"id": "capital", "type": "any_of", "any_of": ["paris"]}]

        @pytest.mark.parametrize("answer", ["Paris.", "Lyon."])
        def test_capital(rubric, answer):
            result = rubric(answer, CRITERIA, subject="app", query="Capital of France?")
            assert result.passed

        def test_repr(rubric, request):
            assert repr(rubric) == f"RubricFixture({request.node.nodeid!r})"
        """,
    )
    result = pytester.runpytest("--rubric-json", "out.json")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["E       pytest_rubric.RubricAssertionError: rubric test_capital[[]Lyon.[]]*FAILED"]
    )
    results = sorted((r["nodeid"], r["passed"]) for r in rubric_json()["results"])
    assert results == [
        ("test_fixture.py::test_capital[Lyon.]", False),
        ("test_fixture.py::test_capital[Paris.]", True),
    ]


SUMMARY_TESTS = """
from pytest_rubric import assert_rubric

CRITERIA = [{"id": "city", "type": "any_of", "any_of": ["paris"]}]

def test_one():
    assert_rubric("Paris", CRITERIA, subject=FIRST)

def test_two():
    assert_rubric("Paris.", CRITERIA, subject=SECOND)
"""


@pytest.mark.parametrize(
    ("ini", "subjects", "rubric_file", "shown"),
    [
        ("", (None, None), False, False),  # plain assertions in unit tests print nothing
        ("", (None, "other"), False, False),  # one subject: a leaderboard of one ranks nothing
        ("", ("one", "other"), False, True),  # assert_rubric graded two subjects
        ("", (None, None), True, True),  # rubric items ran
        ("rubric_summary = on", (None, None), False, True),
        ("rubric_summary = off", ("one", "other"), True, False),
    ],
)
def test_ini_rubric_summary_decides_when_the_summary_is_printed(
    pytester: pytest.Pytester,
    ini: str,
    subjects: tuple[str | None, str | None],
    rubric_file: bool,
    shown: bool,
) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    first, second = (repr(s) for s in subjects)
    pytester.makepyfile(
        test_answers=SUMMARY_TESTS.replace("FIRST", first).replace("SECOND", second)
    )
    if rubric_file:
        pytester.makefile(
            ".rubric.yaml",
            evals="cases:\n  - id: q1\n    response: 'yes'\n"
            "    criteria: [{id: c, type: any_of, any_of: ['yes']}]\n",
        )
    result = pytester.runpytest()
    result.assert_outcomes(passed=3 if rubric_file else 2)
    assert ("rubric summary" in result.stdout.str()) is shown


def test_a_wrong_rubric_summary_value_says_what_to_write(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nrubric_summary = sometimes\n")
    result = pytester.runpytest()
    result.stderr.fnmatch_lines(["*rubric_summary = 'sometimes' must be one of auto, on, off*"])


PROJECT_TEST = """
from pytest_rubric import assert_rubric

def test_from_the_rootdir():
    assert_rubric("Paris", "evals/geo.rubric.yaml::q1")

def test_from_the_tests_folder():
    assert_rubric("Paris", "geo_cases.yaml")  # not a *.rubric.yaml: not collected
"""
GEO = "cases:\n  - id: q1\n    criteria: [{id: city, type: any_of, any_of: ['paris']}]\n"


@pytest.mark.parametrize("where", [".", "tests", ".."])
def test_a_rubric_path_resolves_against_the_rootdir_then_the_tests_folder(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """pytest run from the project, from its tests/ folder or from the folder above it."""
    project = pytester.mkdir("project")
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "evals").mkdir()
    (project / "evals" / "geo.rubric.yaml").write_text(GEO)
    (project / "tests").mkdir()
    (project / "tests" / "geo_cases.yaml").write_text(GEO)
    (project / "tests" / "test_app.py").write_text(PROJECT_TEST)
    monkeypatch.chdir(project / where if where != ".." else pytester.path)
    target = "project/tests" if where == ".." else ("." if where == "tests" else "tests")
    result = pytester.runpytest_inprocess(target)
    result.assert_outcomes(passed=2)


def test_a_rubric_path_that_is_nowhere_says_where_it_looked(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(
        test_app="""
        from pytest_rubric import assert_rubric

        def test_missing():
            assert_rubric("Paris", "evals/nope.rubric.yaml::q1")
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*evals/nope.rubric.yaml: 1 problem in rubric file*",
            "*no such rubric file under*",
            "*give the path relative to the rootdir*",
        ]
    )
    result.stdout.no_fnmatch_line("*FileNotFoundError*")


HR_RUBRIC = """
suite: hr
style_field: /answer
target: targets:json_bot
cases:
  - id: remote
    question: "Can I work remotely?"
    criteria:
      - {id: remote, type: any_of, any_of: ["remotely"]}
"""
HR_APP = """
import json


def reply(question: str) -> str:
    return json.dumps({"answer": "You may work remotely up to two days a week.", "section": "4.2"})
"""


def test_a_rubric_file_named_by_path_keeps_its_style_field(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    """``assert_rubric(..., "path::case")`` grades the file's case as the run grades its item:
    style is measured where the file's ``style_field:`` points, which wins over the ini's."""
    team_project(
        pytester,
        write,
        app=HR_APP,
        unit_test="from pytest_rubric import assert_rubric\nfrom app.bot import reply\n\n\n"
        "def test_reply():\n"
        "    assert_rubric(reply('?'), 'evals/hr.rubric.yaml::remote', subject='asserted')\n",
        targets="from app.bot import reply\n\n\ndef json_bot(question: str) -> str:\n"
        "    return reply(question)\n",
        ini="rubric_style_field = /section\n",
    )
    write("evals/hr.rubric.yaml", HR_RUBRIC)
    pytester.runpytest("--rubric-json=out.json").assert_outcomes(passed=2)
    by = {r["subject"]: r for r in rubric_json()["results"]}
    for measure in ("fluency", "confidence", "flags"):
        assert by["asserted"][measure] == by["json_bot"][measure], measure
