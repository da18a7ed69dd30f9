"""``python -m pytest_rubric collect``: a model's answers are frozen under the subject a live
run gives it, so ``responses:`` grades them as the same items.

The project is a team's: a ``pytest.ini`` that collects ``evals/``, a unit test in ``tests/``,
and the rubric file, asked of local models (an Ollama-style ``llama3.1:8b``) through an
OpenAI-compatible server (tests/fake_llm.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_rubric._cli.merge import main as cli
from tests.fake_llm import FakeLLM, Recorded, text

Write = Callable[[str, str], Path]

SUPPORT = """
suite: support
cases:
  - id: refund_window
    question: "How long do I have to return a jacket?"
    criteria: [{id: days, type: any_of, any_of: ["30 days"]}]
"""
# Two local models whose names differ only before their last ':'.
MODELS = ["openai:llama3.1:8b", "openai:qwen2.5:8b"]


def _by_model(request: Recorded) -> Any:
    right = request.body["model"] == "llama3.1:8b"
    return text("Within 30 days." if right else "Within 14 days.")


@pytest.fixture
def team(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    pytester.makeini("[pytest]\nrubric_dirs = evals\ntestpaths = tests\n")
    write("tests/test_units.py", "def test_units():\n    assert 30 > 14\n")
    write("evals/support.rubric.yaml", SUPPORT)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fake_llm.respond_with(_by_model)
    return pytester


def _graded(pytester: pytest.Pytester, *args: str) -> dict[str, bool]:
    result = pytester.runpytest("--rubric-json=out.json", *args)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stderr.str()
    result.assert_outcomes(passed=2, failed=1)
    results = json.loads((pytester.path / "out.json").read_text())["results"]
    return {r["nodeid"]: r["passed"] for r in results}


def test_a_model_whose_name_holds_a_colon_is_one_subject_live_and_frozen(
    team: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """The subject of ``openai:llama3.1:8b`` is the model, ``llama3.1:8b``, everywhere: two
    models that share the part after their last ':' are not one subject, and ``collect``
    writes ``llama3.1:8b.jsonl``, which grades as the live run's items."""
    live = _graded(team, *(f"--rubric-model={m}" for m in MODELS))
    assert live == {
        "evals/support.rubric.yaml::refund_window[llama3.1:8b]": True,
        "evals/support.rubric.yaml::refund_window[qwen2.5:8b]": False,
    }

    models = [arg for m in MODELS for arg in ("--model", m)]
    code = cli(["collect", "--rubric-dir", "evals", *models, "--out", "answers"])
    assert code == 0, capsys.readouterr().err
    written = sorted(p.name for p in (team.path / "answers").iterdir())
    assert written == ["llama3.1:8b.jsonl", "qwen2.5:8b.jsonl"]
    assert _graded(team, "--rubric-responses=answers") == live


@pytest.mark.parametrize(
    ("model", "subject", "why"),
    [
        ("openai:meta-llama/Llama-3-8b", "meta-llama/Llama-3-8b", "a path separator"),
        ("openai:ft:gpt-4o-mini:org::id", "ft:gpt-4o-mini:org::id", "'::', '[' and ']'"),
    ],
)
def test_a_model_whose_name_cannot_name_a_file_is_refused_before_it_is_asked(
    team: pytest.Pytester,
    fake_llm: FakeLLM,
    capsys: pytest.CaptureFixture[str],
    model: str,
    subject: str,
    why: str,
) -> None:
    """Its subject is its name, as in a live run, and no file of another name is written in
    its place: ``collect`` says so and how to name it."""
    assert cli(["collect", "--rubric-dir", "evals", "--model", model, "--out", "answers"]) == 2
    err = capsys.readouterr().err
    assert f"--model {model}: subject {subject!r} cannot name a file: {why}" in err
    assert f"give it a name that can, --model NAME={model}" in err
    assert not (team.path / "answers").exists() and not fake_llm.requests


def test_a_rubric_dir_that_is_not_there_is_said_before_a_target_is_imported(
    team: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """The folder typed wrong is the error to fix, not the target module it would have put on
    the import path."""
    args = ["collect", "--rubric-dir", "evlas", "--target", "targets:answer", "--out", "answers"]
    assert cli(args) == 2
    err = capsys.readouterr().err
    assert "--rubric-dir evlas is not a directory" in err and "ModuleNotFound" not in err


FAQ = """
{suite}cases:
  - id: q1
    question: "How long do I have to return a jacket?"
    criteria: [{{id: days, type: any_of, any_of: ["30 days"]}}]
"""


def test_two_files_of_one_suite_name_and_case_id_are_refused_before_anyone_is_asked(
    team: pytest.Pytester, write: Write, fake_llm: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    """Their lines would both be ``{"id": "q1", "suite": "faq"}``, which no run can tell
    apart: ``collect`` names both files and the ``suite:`` that separates them."""
    for folder in ("a", "b"):
        write(f"e5/{folder}/faq.rubric.yaml", FAQ.format(suite=""))
    frozen = ["collect", "--rubric-dir", "e5", "--model", MODELS[0], "--out", "answers"]
    assert cli(frozen) == 2
    pytest.LineMatcher(capsys.readouterr().err.splitlines()).fnmatch_lines(
        [
            "pytest-rubric collect: error: e5/a/faq.rubric.yaml and e5/b/faq.rubric.yaml are "
            "both suite 'faq' with a case 'q1', which their answers could not tell apart; give "
            "one of them a `suite:` name of its own*"
        ]
    )
    assert not (team.path / "answers").exists() and not fake_llm.requests

    write("e5/b/faq.rubric.yaml", FAQ.format(suite="suite: faq_b\n"))
    assert cli(frozen) == 0, capsys.readouterr().err
    team.makeini("[pytest]\n")
    team.runpytest("e5", "--rubric-responses=answers").assert_outcomes(passed=2)


SLOW = """
import time


def slow(question: str) -> str:
    time.sleep(2)
    return "Within 30 days."
"""


@pytest.mark.parametrize(
    ("ini", "case", "flag", "bound"),
    [
        ("", "timeout: 0.2", [], "0.2"),  # the case's, as a run's
        ("rubric_call_timeout = 0.2", "", [], "0.2"),  # the ini's where the case sets none
        ("rubric_call_timeout = 30", "", ["--timeout", "0.3"], "0.3"),  # the flag over the ini
        ("", "timeout: 0.2", ["--timeout", "30"], "0.2"),  # the case's over the flag
    ],
)
def test_a_target_call_is_bounded_as_a_run_bounds_it(
    team: pytest.Pytester,
    write: Write,
    capsys: pytest.CaptureFixture[str],
    ini: str,
    case: str,
    flag: list[str],
    bound: str,
) -> None:
    """The case's ``timeout:``, else ``--timeout``, else ini ``rubric_call_timeout``, else
    60 s: a target that takes longer is listed, not waited for."""
    team.makeini(f"[pytest]\nrubric_dirs = evals\n{ini}\n")
    write("evals/targets.py", SLOW)
    write(
        "evals/support.rubric.yaml", SUPPORT.replace("    question:", f"    {case}\n    question:")
    )
    command = ["collect", "--rubric-dir", "evals", "--target", "targets:slow", *flag]
    # Not waited for: the target sleeps 2 s, so a call not bounded would have been written.
    assert cli([*command, "--out", "answers"]) == 1
    pytest.LineMatcher(capsys.readouterr().err.splitlines()).fnmatch_lines(
        [
            "pytest-rubric collect: not written: *support.rubric.yaml: suite 'support', case "
            f"'refund_window': target targets:slow did not return within {bound} s*"
        ]
    )
    assert (team.path / "answers/slow.jsonl").read_text() == ""


def test_the_ini_repeat_asks_each_case_that_many_times_as_a_run_does(
    team: pytest.Pytester,
    fake_llm: FakeLLM,
    capsys: pytest.CaptureFixture[str],
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    """``rubric_repeat`` is the run's ``repeat`` where the file sets none: the frozen answers
    are as many samples as a live run would grade."""
    team.makeini("[pytest]\nrubric_dirs = evals\ntestpaths = tests\nrubric_repeat = 3\n")
    code = cli(["collect", "--rubric-dir", "evals", "--model", MODELS[0], "--out", "answers"])
    assert code == 0, capsys.readouterr().err
    assert len(fake_llm.requests) == 3
    lines = (team.path / "answers/llama3.1:8b.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["refund_window"] * 3
    team.runpytest("--rubric-responses=answers", "--rubric-json=out.json").assert_outcomes(passed=2)
    (result,) = rubric_json()["results"]
    assert result["n_samples"] == 3


@pytest.mark.parametrize("seconds", ["-1", "0", "nan", "inf", "1e9"])
def test_a_timeout_that_bounds_nothing_is_bad_input(
    team: pytest.Pytester, fake_llm: FakeLLM, capsys: pytest.CaptureFixture[str], seconds: str
) -> None:
    """``--timeout`` is read as ini ``rubric_call_timeout`` is: positive, at most a day."""
    command = ["collect", "--rubric-dir", "evals", "--model", MODELS[0], "--out", "answers"]
    with pytest.raises(SystemExit) as exited:
        cli([*command, f"--timeout={seconds}"])
    assert exited.value.code == 2
    pytest.LineMatcher(capsys.readouterr().err.splitlines()).fnmatch_lines(
        [f"*: error: argument --timeout: *{seconds}* must be *"]
    )
    assert not (team.path / "answers").exists() and not fake_llm.requests


@pytest.mark.parametrize("force", [[], ["--force"]])
@pytest.mark.parametrize("dangling", [True, False])
def test_an_answer_file_that_is_a_symlink_is_never_written_through(
    team: pytest.Pytester,
    fake_llm: FakeLLM,
    capsys: pytest.CaptureFixture[str],
    force: list[str],
    dangling: bool,
) -> None:
    """A link in ``--out`` to a file elsewhere, there or not yet, is refused with or without
    ``--force``, as the importers refuse a file "written outside --out": nothing is created,
    overwritten or asked."""
    outside = team.path / "outside.jsonl"
    if not dangling:
        outside.write_text("kept\n")
    (team.path / "answers").mkdir()
    (team.path / "answers/llama3.1:8b.jsonl").symlink_to(outside)
    command = ["collect", "--rubric-dir", "evals", "--model", MODELS[0], "--out", "answers"]
    assert cli([*command, *force]) == 2
    pytest.LineMatcher(capsys.readouterr().err.splitlines()).fnmatch_lines(
        [
            "pytest-rubric collect: error: answers/llama3.1:8b.jsonl is a symbolic link (to "
            f"{outside}), which could write outside --out answers; remove it, or choose "
            "another --out"
        ]
    )
    assert outside.exists() is not dangling and not fake_llm.requests
    if not dangling:
        assert outside.read_text() == "kept\n"
