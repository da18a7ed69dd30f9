"""pytest habits: evals beside a team's unit tests, run with the habits of pytest.

Every test here runs a project laid out as a team's: an ``app/`` package, unit tests in
``tests/``, ``evals/`` with a rubric file and an adapter ``evals/targets.py``, and a
``pytest.ini`` with ``rubric_dirs = evals``.
"""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import INNER_ADDOPTS, lines_in_any_order

BOT = """
ANSWERS = {
    "refund": "You can ask for a refund within 30 days of purchase.",
    "warranty": "The warranty lasts one year.",
    "ship": "We only ship within the country.",
}


def answer(question: str) -> str:
    for word, reply in ANSWERS.items():
        if word in question.lower():
            return reply
    return "I am not sure."
"""

# The adapter names what it needs: the question text. (str() keeps it working while targets
# are handed the whole case, whose text holds the question.)
TARGETS = """
from app.bot import answer


def support_bot(question: str) -> str:
    return answer(str(question))
"""

SUPPORT = """
target: targets:support_bot
cases:
  - id: refund_window
    question: "How long do I have to ask for a refund?"
    responses: {frozen: "Refunds within 30 days."}
    criteria:
      - {id: days, type: any_of, any_of: ["30 days"]}
  - id: warranty
    question: "How long is the warranty?"
    criteria:
      - {id: two_years, type: any_of, any_of: ["two years", "2 years"]}
  - id: tone
    question: "Do you ship abroad?"
    criteria:
      - {id: abroad, type: any_of, any_of: ["we ship abroad"]}
      - {id: polite, type: judge, requirement: "The answer is polite"}
"""

UNIT_TESTS = """
from app.bot import answer


def test_warranty():
    assert "one year" in answer("warranty?")


def test_refund():
    assert "30 days" in answer("refund?")
"""

INI = "[pytest]\nrubric_dirs = evals\npythonpath = .\n"


@pytest.fixture
def team(pytester: pytest.Pytester) -> pytest.Pytester:
    """A team's project: 2 unit tests, 4 rubric items (2 pass, 2 fail: warranty, tone)."""
    files = {
        "pytest.ini": INI,
        "app/__init__.py": "",
        "app/bot.py": BOT,
        "tests/test_bot.py": UNIT_TESTS,
        "evals/targets.py": TARGETS,
        "evals/support.rubric.yaml": SUPPORT,
    }
    for name, text in files.items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return pytester


def _ini(pytester: pytest.Pytester, extra: str) -> None:
    """The project's pytest.ini with ``extra`` lines."""
    (pytester.path / "pytest.ini").write_text(INI + extra, encoding="utf-8")


def _json(pytester: pytest.Pytester, name: str = "out.json") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((pytester.path / name).read_text())
    return data


# --- Selection --------------------------------------------------------------------------------


def test_the_whole_project_runs_unit_tests_and_evals(team: pytest.Pytester) -> None:
    team.runpytest().assert_outcomes(passed=4, failed=2)


@pytest.mark.parametrize(
    ("args", "outcomes"),
    [
        (["tests/test_bot.py::test_warranty"], {"passed": 1}),
        (["tests/test_bot.py"], {"passed": 2}),
        (["evals/support.rubric.yaml::warranty[support_bot]"], {"failed": 1}),
        # A case without its subject selects each subject's item, as a parametrized test.
        (["evals/support.rubric.yaml::refund_window"], {"passed": 2}),
        (["evals/"], {"passed": 2, "failed": 2}),
        (["-k", "warranty"], {"passed": 1, "failed": 1, "deselected": 4}),
        (["-m", "not llm_judge"], {"passed": 4, "failed": 1, "deselected": 1}),
        (
            ["--deselect", "evals/support.rubric.yaml::refund_window[frozen]"],
            {"passed": 3, "failed": 2, "deselected": 1},
        ),
    ],
    ids=["unit-test", "unit-file", "item", "case", "evals-dir", "-k", "-m", "--deselect"],
)
def test_rubric_items_are_selected_as_tests_are(
    team: pytest.Pytester, args: list[str], outcomes: dict[str, int]
) -> None:
    """``rubric_dirs`` joins only a command line that names no path, as ``testpaths`` does."""
    team.runpytest(*args).assert_outcomes(**outcomes)


def test_last_failed_and_failed_first_find_rubric_items(team: pytest.Pytester) -> None:
    team.runpytest().assert_outcomes(passed=4, failed=2)
    for args in ([], ["evals/"]):
        result = team.runpytest("--lf", *args)
        result.assert_outcomes(failed=2)
        result.stdout.no_fnmatch_line("*known failures not in selected tests*")
        result.stdout.fnmatch_lines(["run-last-failure: rerun previous 2 failures*"])
    result = team.runpytest("--ff", "-v")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(["run-last-failure: rerun previous 2 failures first"])
    ran = [line.split(" ")[0] for line in result.outlines if line.endswith("%]")]
    assert {nodeid.split("[")[0] for nodeid in ran[:2]} == {
        "evals/support.rubric.yaml::warranty",
        "evals/support.rubric.yaml::tone",
    }


def test_stepwise_resumes_at_the_rubric_item_that_failed(team: pytest.Pytester) -> None:
    first = team.runpytest("--sw", "-v")
    stopped = [line.split(" ")[0] for line in first.outlines if " FAILED " in line]
    assert len(stopped) == 1
    # The same order as the first run (pytest-randomly's way to repeat one), resumed.
    second = team.runpytest("--sw", "-v", "--randomly-seed=last")
    second.stdout.fnmatch_lines(["stepwise: skipping * already passed items*"])
    assert next(line for line in second.outlines if line.endswith("%]")).startswith(stopped[0])


# --- No key, no lock-out ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "source"),
    [
        ("ini", "ini rubric_judge in pytest.ini"),
        ("-o", "-o rubric_judge"),
        ("env", "env RUBRIC_JUDGE"),
    ],
)
def test_a_judge_without_its_key_skips_judged_items_and_runs_the_rest(
    team: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, setting: str, source: str
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    if setting == "ini":
        _ini(team, "rubric_judge = openai:gpt-4o-mini\n")
    elif setting == "-o":  # pytest's own way to set an ini option for one run
        monkeypatch.setenv("PYTEST_ADDOPTS", f"{INNER_ADDOPTS} -o rubric_judge=openai:gpt-4o-mini")
    else:
        monkeypatch.setenv("RUBRIC_JUDGE", "openai:gpt-4o-mini")
    team.runpytest("tests/test_bot.py").assert_outcomes(passed=2)
    team.runpytest("-m", "not llm_judge").assert_outcomes(passed=4, failed=1, deselected=1)
    # The judged item is graded on what can be (see test_keyless.py): its deterministic half
    # already fails it, so no verdict of the judge could pass it.
    result = team.runpytest("-rs")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(
        [
            f"*polite*SKIPPED*no key for judge openai:gpt-4o-mini ({source}): set "
            "OPENAI_API_KEY in the environment"
        ]
    )
    # Where the rest of the case would pass, the judge decides: skipped, saying why.
    rubric = team.path / "evals/support.rubric.yaml"
    rubric.write_text(rubric.read_text().replace('"we ship abroad"', '"ship"'))
    result = team.runpytest("-rs")
    result.assert_outcomes(passed=4, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED [[]1[]] evals/support.rubric.yaml:*: score between 0.50 and 1.00 whatever "
            f"the judge says; min_score 0.80 (no key for judge openai:gpt-4o-mini ({source}): "
            "set OPENAI_API_KEY in the environment)"
        ]
    )
    # Asked to insist on a judge, the judged item is an error that says the same.
    result = team.runpytest("--rubric-require-judge")
    result.assert_outcomes(passed=4, failed=1, errors=1)
    result.stdout.fnmatch_lines(
        [f"!  polite *ERROR*no key for judge openai:gpt-4o-mini ({source})*"]
    )


def test_an_item_the_judge_could_not_grade_is_an_error_in_junit_too(
    team: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --rubric-require-judge, the terminal counted the judged item as an error and
    JUnit as a failure."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    _ini(team, "rubric_judge = openai:gpt-4o-mini\n")
    result = team.runpytest("--rubric-require-judge", "--junitxml=junit.xml")
    result.assert_outcomes(passed=4, failed=1, errors=1)
    suite = ET.parse(team.path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("failures"), suite.get("errors")) == ("1", "1")
    outcomes = {
        case.get("name"): [child.tag for child in case if child.tag in {"failure", "error"}]
        for case in suite.iter("testcase")
    }
    assert [name for name, tags in outcomes.items() if tags == ["error"]] == ["tone[support_bot]"]
    assert sorted(tags for tags in outcomes.values() if tags) == [["error"], ["failure"]]
    (error,) = suite.iter("error")
    assert "no key for judge openai:gpt-4o-mini" in (error.text or "")


def test_a_judge_named_on_the_command_line_without_its_key_is_a_usage_error(
    team: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = team.runpytest("--rubric-judge", "openai:gpt-4o-mini", "tests/test_bot.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--rubric-judge: openai:gpt-4o-mini needs an API key*"])


# --- What the application said ----------------------------------------------------------------


def test_a_failing_item_shows_the_question_and_the_response(team: pytest.Pytester) -> None:
    result = team.runpytest(
        "-vv", "--junitxml=junit.xml", "--rubric-markdown=out.md", "evals/support.rubric.yaml"
    )
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "x  two_years  any_of  UNMET         1  none of 'two years', '2 years' found",
            "  - score 0.00 is below min_score 0.80",
            "question: How long is the warranty?",
            "response: The warranty lasts one year.",
        ],
        consecutive=True,
    )
    cases = {case.get("name"): case for case in ET.parse(team.path / "junit.xml").iter("testcase")}
    out = cases["warranty[support_bot]"].find("system-out")
    assert out is not None and out.text == (
        "question: How long is the warranty?\nresponse: The warranty lasts one year."
    )
    assert cases["refund_window[support_bot]"].find("system-out") is None  # it passed
    markdown = (team.path / "out.md").read_text()
    assert (
        "#### `evals/support.rubric.yaml::warranty[support_bot]`\n\n"
        "- question: How long is the warranty?\n"
        "- response: The warranty lasts one year.\n"
    ) in markdown


def test_ini_rubric_show_response_cuts_or_hides_the_response(team: pytest.Pytester) -> None:
    _ini(team, "rubric_show_response = 12\n")
    result = team.runpytest("evals/support.rubric.yaml::warranty")
    result.stdout.fnmatch_lines(["response: The warranty… [16 more characters]"])
    _ini(team, "rubric_show_response = 0\n")
    result = team.runpytest("evals/support.rubric.yaml::warranty")
    result.stdout.fnmatch_lines(["question: How long is the warranty?"])
    result.stdout.no_fnmatch_line("response:*")
    _ini(team, "rubric_show_response = lots\n")
    result = team.runpytest("evals/support.rubric.yaml::warranty")
    result.stderr.fnmatch_lines(["*rubric_show_response = 'lots' must be a whole number*"])


# --- A good neighbour -------------------------------------------------------------------------

STATS_CHECK = """
import pytest


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter):
    kinds = {
        type(report).__name__
        for reports in terminalreporter.stats.values()
        for report in reports
    }
    terminalreporter.write_line(f"stats hold: {sorted(kinds)}")
"""


def test_a_failed_gate_leaves_report_objects_in_the_stats(team: pytest.Pytester) -> None:
    """Hypothesis reads every entry of ``stats`` as a report; a string there was a crash."""
    team.makeconftest(STATS_CHECK)
    result = team.runpytest("--rubric-fail-under", "0.9")
    result.stdout.fnmatch_lines(["plugins: *hypothesis-*"])
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*AttributeError*")
    result.stdout.fnmatch_lines(
        ["stats hold: ['TestReport']", "=*= 2 failed, 4 passed, 1 rubric gate failed in *"]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_an_item_run_again_counts_once_by_its_last_attempt(team: pytest.Pytester) -> None:
    result = team.runpytest(
        "evals/", "--reruns", "1", "--rubric-json", "out.json", "--junitxml", "junit.xml"
    )
    assert result.parseoutcomes() == {"passed": 2, "failed": 2, "rerun": 2}
    data = _json(team)
    assert sorted(r["nodeid"] for r in data["results"]) == [
        "evals/support.rubric.yaml::refund_window[frozen]",
        "evals/support.rubric.yaml::refund_window[support_bot]",
        "evals/support.rubric.yaml::tone[support_bot]",
        "evals/support.rubric.yaml::warranty[support_bot]",
    ]
    rows = {row["subject"]: (row["passed"], row["total"]) for row in data["leaderboard"]}
    assert rows == {"frozen": (1, 1), "support_bot": (1, 3)}
    scores = [
        p.get("value")
        for p in ET.parse(team.path / "junit.xml").iter("property")
        if p.get("name") == "rubric_score"
    ]
    assert len(scores) == 4


TEARDOWN_ASSERTION = """
import pytest
from pytest_rubric import assert_rubric


@pytest.fixture
def checked():
    yield
    assert_rubric("Refunds within 30 days.", [{"id": "days", "type": "any_of", "any_of": ["30 days"]}], subject="bot")


def test_answer(checked):
    pass
"""


def test_an_item_pytest_timeout_stops_is_an_error_in_every_output(team: pytest.Pytester) -> None:
    """pytest-timeout fails an item whose target outlasts --timeout: the item's result is an
    ERROR in the JSON (and so the leaderboard and gates), not missing from it."""
    (team.path / "evals/slow.py").write_text(
        "import time\n\n\ndef answer(question):\n    time.sleep(5)\n    return 'x'\n"
    )
    (team.path / "evals/slow.rubric.yaml").write_text(
        "cases:\n  - id: slow\n    target: slow:answer\n    question: q\n    timeout: 60\n"
        "    criteria: [{id: p, type: any_of, any_of: [x]}]\n"
    )
    # In a process of its own: the timeout's alarm signal is the process's.
    result = team.runpytest_subprocess(
        "evals/slow.rubric.yaml", "--timeout=1", "--rubric-json=out.json", timeout=120
    )
    result.assert_outcomes(errors=1)
    (item,) = _json(team)["results"]
    assert [c["verdict"] for c in item["criteria"]] == ["ERROR"] and not item["passed"]
    assert "the item was stopped: Timeout (>1.0s)" in item["criteria"][0]["reason"]
    # Its report is the message, as a test's is, not the frames it was waiting in (what
    # pytest-timeout itself prints of every thread's stack follows, as for any test).
    out = result.stdout.str()
    report = out[out.index("ERROR at call") : out.index("Captured stdout call")]
    assert "the item was stopped: Timeout (>1.0s)" in report
    assert "pluggy" not in report and "_pytest" not in report and len(report.splitlines()) < 5


def test_a_result_a_teardown_recorded_reaches_junit(team: pytest.Pytester) -> None:
    """JUnit reads the properties off the teardown report: a fixture's ``assert_rubric``
    after its ``yield`` is recorded in that phase, and its properties are there too."""
    team.makepyfile(test_teardown=TEARDOWN_ASSERTION)
    result = team.runpytest("test_teardown.py", "--junitxml", "junit.xml")
    result.assert_outcomes(passed=1)
    properties = {
        p.get("name"): p.get("value") for p in ET.parse(team.path / "junit.xml").iter("property")
    }
    assert properties["rubric_subject"] == "bot"
    assert properties["rubric_score"] == "1.0"
    assert properties["rubric_passed"] == "true"


# --- Subjects that mean something -------------------------------------------------------------

ASSERTIONS = """
from pytest_rubric import assert_rubric

CRITERIA = [{"id": "days", "type": "any_of", "any_of": ["30 days"]}]


def test_plain_check():
    assert_rubric("Refunds within 30 days.", CRITERIA)


def test_another_plain_check():
    assert_rubric("Refunds within 30 days.", CRITERIA, query="Refunds?")


def test_a_named_subject():
    assert_rubric("Refunds within 30 days.", CRITERIA, subject="bot-v1")
"""


def test_assertions_without_a_subject_are_counted_not_ranked(team: pytest.Pytester) -> None:
    team.makepyfile(**{"tests/test_answers": ASSERTIONS})
    # One subject (the summary shown on request: by default it needs two): its row, with
    # nothing to rank it against.
    result = team.runpytest("tests/", "--rubric-json", "out.json", "-o", "rubric_summary=on")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(
        [
            "subject * correctness  fluency  confidence  naive  confidently wrong *passed  *",
            "bot-v1  *1/1*",
            "correctness [[]0.95 interval over cases[]]",
            "assertions: 2 passed, 0 failed",
        ],
        consecutive=True,
    )
    result.stdout.no_fnmatch_line("rank *")
    data = _json(team)
    assert [row["subject"] for row in data["leaderboard"]] == ["bot-v1"]
    assert sorted((r["subject"], r.get("ranked", True)) for r in data["results"]) == [
        ("bot-v1", True),
        ("inline", False),
        ("inline", False),
    ]


def test_two_subjects_are_ranked(team: pytest.Pytester) -> None:
    team.makepyfile(**{"tests/test_answers": ASSERTIONS})
    result = team.runpytest()
    result.assert_outcomes(passed=7, failed=2)
    result.stdout.fnmatch_lines(
        ["rank  subject *naive rank*tier*", "assertions: 2 passed, 0 failed"]
    )
    result.stdout.no_fnmatch_line("*inline*")


# --- Found, or told why not -------------------------------------------------------------------


@pytest.mark.parametrize("option", [["--rubric-dir", "evals"], []], ids=["flag", "ini"])
def test_a_rubric_dir_of_misnamed_files_says_which_names_are_collected(
    team: pytest.Pytester, option: list[str]
) -> None:
    (team.path / "evals/support.rubric.yaml").rename(team.path / "evals/support.yaml")
    result = team.runpytest(*option)
    shown = "--rubric-dir evals" if option else "ini rubric_dirs evals"
    result.stdout.fnmatch_lines(
        [
            f"*RubricWarning: {shown} holds no rubric file (*.rubric.yaml, *.rubric.yml, "
            "*.rubric.json) but YAML or JSON files, such as evals/support.yaml: rename it to "
            "match, as support.rubric.yaml, or set ini rubric_file_patterns"
        ]
    )
    # A folder that holds a rubric file beside other YAML says nothing.
    (team.path / "evals/support.yaml").rename(team.path / "evals/support.rubric.yaml")
    (team.path / "evals/notes.yaml").write_text("a: 1\n")
    team.runpytest(*option).stdout.no_fnmatch_line("*RubricWarning*")


# --- A start ----------------------------------------------------------------------------------


def test_init_writes_a_starter_that_runs_offline_and_never_overwrites(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_rubric._cli.merge import main

    project = pytester.path
    (project / "evals").mkdir()
    (project / "evals/targets.py").write_text("MINE = True\n")
    assert main(["init", str(project)]) == 0
    out = capsys.readouterr().out
    assert f"wrote {project / 'evals/example.rubric.yaml'}" in out
    assert f"kept {project / 'evals/targets.py'}" in out
    assert "[pytest]\nrubric_dirs = evals\n" in out
    assert (project / "evals/targets.py").read_text() == "MINE = True\n"
    assert "def answer(question: str) -> str:" in (project / "evals/example_targets.py").read_text()
    assert main(["init", str(project)]) == 0  # again: the example it wrote is kept, as it is
    assert "wrote" not in capsys.readouterr().out
    # With the ini lines it printed, the example's items run offline, and pass.
    (project / "pytest.ini").write_text("[pytest]\nrubric_dirs = evals\n")
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["*::capital_of_france[[]answer[]] PASSED (judged criteria skipped)*"]
    )


# --- One round of errors ----------------------------------------------------------------------

BROKEN = """
cases:
  - id: refund_window
    question: "How long do I have to ask for a refund?"
    refnd: 30
    criteria:
      - {id: days, type: contains, any_of: ["30 days"]}
      - {id: window, type: regex, pattern: '(30 days'}
  - id: warranty
    question: "How long is the warranty?"
    criteria:
      - {id: years, type: regx, pattern: 'years?'}
      - {id: shape, type: json, schema: {type: objekt}}
"""


def test_a_files_schema_and_pattern_problems_come_in_one_round_with_did_you_mean(
    team: pytest.Pytester,
) -> None:
    (team.path / "evals/support.rubric.yaml").write_text(BROKEN.lstrip("\n"))
    result = team.runpytest("evals/")
    result.assert_outcomes(errors=1)
    lines_in_any_order(
        result,
        [
            "evals/support.rubric.yaml: 5 problems in rubric file",
            "*:6, case 'refund_window', criterion 'days', field 'type': unknown criterion type "
            "'contains'",
            "    -> did you mean `type: any_of`? use one of *",
            "*:4, case 'refund_window', field 'refnd': unknown field `refnd`",
            "    -> did you mean `reference`? Allowed here: *",
            "*:7, case 'refund_window', criterion 'window', field 'pattern': invalid regex "
            "'(30 days': missing )*",
            "*:11, case 'warranty', criterion 'years', field 'type': unknown criterion type 'regx'",
            "    -> did you mean `type: regex`? *",
            "*:12, case 'warranty', criterion 'shape', field 'schema': `schema` is not a valid "
            "JSON Schema*",
        ],
    )


def test_the_names_meant_are_the_modules_own_not_what_it_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_rubric._guards.calls import resolve_import

    (tmp_path / "adapters.py").write_text(
        "import os\nimport json\n\n\ndef post(q):\n    pass\n\n\n"
        "class Client:\n    @property\n    def session(self):\n"
        "        raise RuntimeError('not connected')\n\n    def answer(self, q):\n        pass\n"
        "\n\nclient = Client()\n"
    )
    monkeypatch.syspath_prepend(tmp_path)
    with pytest.raises(AttributeError) as raised:
        resolve_import("adapters:ost")
    assert str(raised.value) == "'adapters' has no 'ost'; did you mean 'post'?"
    # The names are read without running them: a property that connects is not called.
    with pytest.raises(AttributeError, match="did you mean 'answer'"):
        resolve_import("adapters:client.ansewr")


def test_an_unknown_target_or_function_name_says_which_one_was_meant(
    team: pytest.Pytester,
) -> None:
    rubric = team.path / "evals/support.rubric.yaml"
    rubric.write_text(SUPPORT.replace("targets:support_bot", "targets:support_bt"))
    result = team.runpytest("evals/")
    result.stdout.fnmatch_lines(
        [
            "*field 'target': cannot import target 'targets:support_bt': AttributeError: "
            "'targets' has no 'support_bt'; did you mean 'support_bot'?"
        ]
    )
    rubric.write_text(
        SUPPORT.replace(
            '{id: two_years, type: any_of, any_of: ["two years", "2 years"]}',
            '{id: two_years, type: callable, function: "targets:supportbot"}',
        )
    )
    result = team.runpytest("evals/support.rubric.yaml::warranty")
    result.stdout.fnmatch_lines(["*'targets' has no 'supportbot'; did you mean 'support_bot'?*"])
    rubric.write_text(SUPPORT.replace("targets:support_bot", "target:support_bot"))
    result = team.runpytest("evals/")
    result.stdout.fnmatch_lines(
        ["*No module named 'target'; did you mean 'targets'?*"]  # the module's name too
    )


# --- A good neighbour, all plugins at once ----------------------------------------------------

NEIGHBOURS = {
    "tests/test_async.py": """
        import asyncio

        import pytest


        @pytest.mark.asyncio
        async def test_async_bot():
            await asyncio.sleep(0)
    """,
    "tests/test_properties.py": """
        from hypothesis import given, settings, strategies as st

        from app.bot import answer


        @settings(max_examples=10)
        @given(st.text(max_size=20))
        def test_answers_anything(question):
            assert isinstance(answer(question), str)
    """,
    "evals/broken.rubric.yaml": """
        cases:
          - id: broken_pattern
            response: "Refunds within 30 days."
            criteria:
              - {id: days, type: any_of, any_of: ["30 days"]}
              - {id: bad, type: regex, pattern: '(unclosed'}
    """,
}


@pytest.mark.slow
def test_with_every_neighbour_plugin_active_runs_end_cleanly_and_agree_in_any_order(
    team: pytest.Pytester,
) -> None:
    """hypothesis, pytest-cov, -randomly, -rerunfailures, -timeout, -asyncio, -xdist and -html
    together: a failing gate under -n 2, a holding one in one process, an ERROR item, two
    orders."""
    for name, text in NEIGHBOURS.items():
        (team.path / name).write_text(textwrap.dedent(text).lstrip("\n"))
    common = ["--reruns=1", "--timeout=120", "--cov=app", "--cov-report=", "-p", "randomly"]
    runs = [
        ("1", ["-n", "2", "--rubric-fail-under=0.9"]),
        ("2", ["--rubric-fail-under=0.1"]),
    ]
    documents = []
    for seed, extra in runs:
        result = team.runpytest_subprocess(
            *common,
            f"--randomly-seed={seed}",
            f"--html=report{seed}.html",
            f"--rubric-json=out{seed}.json",
            *extra,
            timeout=300,
        )
        output = result.stdout.str() + result.stderr.str()
        assert "Traceback" not in output and "INTERNALERROR" not in output, output
        last = result.outlines[-1]  # pytest's own last line
        assert last.startswith("=") and " in " in last and last.endswith("="), last
        assert "2 failed, 6 passed, 1 error, 3 rerun" in last, last
        gate_fails = extra[-1].endswith("0.9")
        assert ("2 rubric gates failed" in last) is gate_fails, last
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        assert (team.path / f"report{seed}.html").exists()
        data = _json(team, f"out{seed}.json")
        documents.append({key: data[key] for key in ("results", "leaderboard")})
    assert documents[0] == documents[1]
    assert len(documents[0]["results"]) == 5  # each item once, reruns and all
