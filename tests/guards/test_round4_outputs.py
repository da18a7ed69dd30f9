"""Round four of hostile input, on the run's edges: outputs that cannot be written,
exceptions that fight back, files from elsewhere, the promptfoo importer's total, lost
workers and interrupted runs, batch files, CSV cells and ``init``
(docs/development/reliability.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_rubric._cli.merge import main as cli
from tests.conftest import SUPPORT

pytestmark = pytest.mark.hostile

Write = Callable[[str, str], Path]

# The team's suite without its judged criteria: the run passes without a judge.
PASSING = "\n".join(line for line in SUPPORT.splitlines() if "requirement:" not in line)


# --- outputs that cannot be written ---------------------------------------------------------


def test_unwritable_outputs_are_one_line_each_and_the_others_are_written(
    pytester: pytest.Pytester,
    team: Callable[..., None],
    write: Write,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    team(support=PASSING)
    (pytester.path / "folder").mkdir()
    write("afile", "not a folder")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "folder"))
    result = pytester.runpytest(
        "--rubric-json=folder",  # a directory
        "--rubric-html=afile/report.html",  # a parent that cannot be made
        "--rubric-csv=/proc/rubric.csv",  # a place the system refuses
        "--rubric-markdown=summary.md",
        "--junitxml=afile/junit.xml",
    )
    assert result.ret == pytest.ExitCode.OK  # the tests' own: they all passed
    lines = [line for line in result.outlines if "cannot write" in line]
    assert len(lines) == 5, lines
    result.stdout.fnmatch_lines_random(
        [
            "rubric: ERROR cannot write --rubric-json */folder: Is a directory",
            "rubric: ERROR cannot write --rubric-html */afile/report.html: */afile is a file*",
            "rubric: ERROR cannot write --rubric-csv /proc/rubric.csv: *",
            "rubric: ERROR cannot write $GITHUB_STEP_SUMMARY */folder: Is a directory",
            "rubric: ERROR cannot write --junitxml */afile/junit.xml: */afile is a file*",
        ]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*= 2 passed in *"])  # pytest's last line
    assert "2 of 2 answers passed" in (pytester.path / "summary.md").read_text()  # written


def test_merge_writes_the_outputs_it_can_and_names_the_one_it_cannot(
    pytester: pytest.Pytester, team: Callable[..., None], capsys: pytest.CaptureFixture[str]
) -> None:
    team(support=PASSING)
    pytester.runpytest("--rubric-json=shard.json").assert_outcomes(passed=2)
    (pytester.path / "folder").mkdir()
    capsys.readouterr()
    code = cli(["merge", "shard.json", "--html", "folder", "--json", "merged.json"])
    assert code == 0  # every case passed
    err = capsys.readouterr().err
    assert err.count("cannot write") == 1
    assert "pytest-rubric merge: error: cannot write --html folder: Is a directory" in err
    assert len(json.loads((pytester.path / "merged.json").read_text())["results"]) == 2
