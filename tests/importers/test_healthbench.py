"""``python -m pytest_rubric import healthbench``: HealthBench's JSONL as a report-only suite.

The acceptance: graded by a scripted judge that echoes recorded verdicts, the
imported suite reproduces each example's HealthBench score, computed here as
simple-evals' ``calculate_score`` does (points met over positive points).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_rubric._cli.merge import main
from pytest_rubric._load.loader import load_suite
from tests.fake_llm import FakeLLM, Recorded, verdict

DATA = Path(__file__).resolve().parents[1] / "data"


def _import(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_rubric", "import", "healthbench", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _import_in_process(*args: str) -> subprocess.CompletedProcess[str]:
    """What ``_import`` does, without a fresh interpreter: the command's ``main`` in this
    process (pytester's directory is the working directory). The tests that need the real
    command (its exit status and messages, ``--help``) run it with ``_import``."""
    argv = ["import", "healthbench", *args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def _import_sample(project: Path) -> subprocess.CompletedProcess[str]:
    assert Path.cwd() == project
    return _import_in_process(
        "healthbench_sample.jsonl",
        "--responses",
        "model-a=healthbench_completions.jsonl",
        "--out",
        "evals",
    )


def _healthbench_score(rubrics: list[dict[str, Any]], met: list[bool]) -> float:
    """simple-evals' calculate_score (healthbench_eval.py), unclipped."""
    possible = sum(r["points"] for r in rubrics if r["points"] > 0)
    return sum(r["points"] for r, m in zip(rubrics, met, strict=True) if m) / possible


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    """A user's project: its own pytest.ini, tests/ and the data to import."""
    pytester.makeini("[pytest]\nrubric_judge_backoff = 0.01\n")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_unit.py").write_text("def test_unit():\n    assert True\n")
    for name in ("healthbench_sample.jsonl", "healthbench_completions.jsonl"):
        shutil.copy(DATA / name, pytester.path / name)
    return pytester.path


def test_import_writes_a_suite_that_loads(project: Path) -> None:
    done = _import_sample(project)
    assert done.returncode == 0, done.stderr
    assert "wrote evals/healthbench.rubric.yaml" in done.stdout
    loaded = load_suite(project / "evals" / "healthbench.rubric.yaml")
    suite = loaded.suite
    assert "min_score" in suite.model_fields_set and suite.min_score is None  # report-only
    assert [c.id for c in suite.cases][:2] == ["hb-0001-emergency", "hb-0002-hypertension"]
    two = suite.cases[1]
    assert [m.role for m in two.messages or ()] == ["system", "user", "assistant", "user"]
    assert two.tags == ("theme:communication", "physician_agreed_category:health-professional")
    weights = [c.weight for c in two.criteria]
    assert weights == [7, 4, -6, 2]
    assert two.criteria[3].tags[1] == "cluster:communication_tailored_to_health_professional"
    assert two.shown_question == "No other conditions, not Black, no pregnancy."
    lines = (project / "evals" / "responses" / "model-a.jsonl").read_text().splitlines()
    assert json.loads(lines[2])["id"] == "hb-0003-infant-rash"


def test_imported_suite_reproduces_healthbench_scores(
    pytester: pytest.Pytester, project: Path, fake_llm: FakeLLM
) -> None:
    examples = [json.loads(line) for line in (DATA / "healthbench_sample.jsonl").open()]
    grades: dict[str, list[bool]] = json.loads((DATA / "healthbench_grades.json").read_text())
    completions = {
        json.loads(line)["prompt_id"]: json.loads(line)["completion"][0]["content"]
        for line in (DATA / "healthbench_completions.jsonl").open()
    }
    # The recorded verdict of each (completion, criterion): what a HealthBench grader said.
    recorded = {
        (completions[e["prompt_id"]], r["criterion"]): met
        for e in examples
        for r, met in zip(e["rubrics"], grades[e["prompt_id"]], strict=True)
    }

    def echo(request: Recorded) -> Any:
        system, user = (m["content"] for m in request.body["messages"])
        criterion = re.search(r"Requirement: (.*)", system)
        response = re.search(r"<response-\w+>\n(.*)\n</response-\w+>", user, re.S)
        assert criterion is not None and response is not None
        met = recorded[(response.group(1), criterion.group(1))]
        return verdict("MET" if met else "UNMET", "recorded")

    fake_llm.respond_with(echo)
    done = _import_sample(project)
    assert done.returncode == 0, done.stderr
    result = pytester.runpytest(
        "--rubric-dir",
        "evals",
        "--rubric-judge=openai:test-model",
        f"--rubric-judge-url={fake_llm.openai_url}",
        "--rubric-json=out.json",
        "-p",
        "no:cacheprovider",
    )
    # Report-only: every case passes, whatever its score (the third scores 0).
    result.assert_outcomes(passed=len(examples))
    document = json.loads((project / "out.json").read_text())
    by_case = {r["case"]: r for r in document["results"]}
    worst = 0.0
    for e in examples:
        expected = _healthbench_score(e["rubrics"], grades[e["prompt_id"]])
        got = by_case[e["prompt_id"]]
        assert got["min_score"] is None and got["passed"] is True
        possible = sum(r["points"] for r in e["rubrics"] if r["points"] > 0)
        worst = max(
            worst,
            abs(got["score"] - min(max(expected, 0.0), 1.0)),
            abs(got["raw_score"] / possible - expected),
        )
    assert worst < 1e-9
    # The fixture covers what matters: a negative score clipped to 0, and a penalty met.
    assert by_case["hb-0003-infant-rash"]["score"] == 0.0
    assert by_case["hb-0002-hypertension"]["score"] == pytest.approx(3 / 13)
    # The judge saw each conversation fenced turn by turn, the system turn first.
    users = [m["content"] for r in fake_llm.requests for m in r.body["messages"][1:]]
    assert any('role="system">\nYou are a helpful assistant for clinicians.' in u for u in users)


def test_bad_input_is_located_and_nothing_is_written(project: Path) -> None:
    bad = project / "bad.jsonl"
    good = (DATA / "healthbench_sample.jsonl").read_text().splitlines()[0]
    broken = json.loads(good)
    broken["rubrics"][1]["points"] = "five"
    broken["prompt"][0]["role"] = "doctor"
    broken["prompt_id"] = "other"
    huge = json.loads(good)  # each a number, together more than a float holds
    huge["prompt_id"] = "huge"
    for item in huge["rubrics"]:
        item["points"] = 1e308
    bad.write_text(f"{good}\n{json.dumps(broken)}\nnot json\n{good}\n{json.dumps(huge)}\n")
    done = _import("bad.jsonl", "--out", "evals", cwd=project)
    assert done.returncode == 2
    err = done.stderr
    assert "nothing was written" in err
    assert (
        "bad.jsonl:2, case 'other', field 'prompt[0].role': role must be one of system, user, "
        "assistant, got 'doctor'" in err
    )
    assert (
        "bad.jsonl:2, case 'other', field 'rubrics[1].points': must be a number, got 'five'" in err
    )
    assert "bad.jsonl:3: invalid JSON" in err
    assert "bad.jsonl:4, case 'hb-0001-emergency', field 'prompt_id'" in err
    assert "is also on line 1" in err
    assert (
        "bad.jsonl:5, case 'huge', field 'rubrics': the positive points of its rubric items add "
        "up to more than a number can hold" in err
    )
    assert not (project / "evals").exists()


def test_a_prompt_id_with_a_control_character_is_refused_and_nothing_written(
    project: Path,
) -> None:
    """It becomes a case id, which pytest prints raw in ``-v`` lines and the summary."""
    row = json.loads((DATA / "healthbench_sample.jsonl").read_text().splitlines()[0])
    row["prompt_id"] = "hb\x1b7\x07id\b\x7f\x9b\u202e"
    (project / "bad.jsonl").write_text(json.dumps(row) + "\n")
    done = _import_in_process("bad.jsonl", "--out", "evals")
    assert done.returncode == 2
    shown = "'hb\\x1b7\\x07id\\x08\\x7f\\x9b\\u202e'"
    assert (
        f"bad.jsonl:1, case {shown}, field 'prompt_id': prompt_id {shown} cannot be used: a line "
        "break or another control character breaks test ids and the summary table\n"
        "    -> rename it in the data" in done.stderr
    )
    assert not (project / "evals").exists()


@pytest.mark.parametrize("subject", ["../../x", "org/model", "org\\model", "..", "a..b"])
def test_a_subject_that_is_not_a_file_name_is_refused_and_nothing_written(
    project: Path, subject: str
) -> None:
    """``--responses ../../x=...`` wrote outside --out; ``org/model=...`` wrote a file the
    plugin never reads."""
    done = _import_in_process(
        "healthbench_sample.jsonl",
        "--responses",
        f"{subject}=healthbench_completions.jsonl",
        "--out",
        "evals/deep/er",
    )
    assert done.returncode == 2
    assert f"the subject {subject!r} cannot name its responses file: a path separator or '..'" in (
        done.stderr
    )
    assert "nothing was written" in done.stderr
    assert not (project / "evals").exists() and not (project / "x.jsonl").exists()


def test_an_existing_file_is_kept_unless_force(project: Path) -> None:
    assert _import_sample(project).returncode == 0
    rubric = project / "evals" / "healthbench.rubric.yaml"
    rubric.write_text("# my edits\n")
    done = _import_sample(project)
    assert done.returncode == 2
    assert "2 problems in the output; nothing was written" in done.stderr
    assert "evals/healthbench.rubric.yaml: already exists" in done.stderr
    assert "-> pass --force to overwrite it, or choose another --out" in done.stderr
    assert rubric.read_text() == "# my edits\n"
    forced = _import_in_process(
        "healthbench_sample.jsonl",
        "--responses",
        "model-a=healthbench_completions.jsonl",
        "--out",
        "evals",
        "--force",
    )
    assert forced.returncode == 0, forced.stderr
    assert load_suite(rubric).suite.suite == "healthbench"


def test_an_importer_writes_only_inside_its_output_folder(tmp_path: Path) -> None:
    from pytest_rubric.importers._common import Imported, ImportFailed, write

    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "responses").mkdir(parents=True)
    (out / "responses" / "link.jsonl").symlink_to(elsewhere / "target.jsonl")
    output = Imported(
        rubrics={"../escape.rubric.yaml": {"cases": []}},
        responses={"responses/link.jsonl": [{"id": "q1", "response": "x"}]},
    )
    with pytest.raises(ImportFailed) as failed:
        write(output, out, force=True)
    assert [p.message for p in failed.value.problems] == [
        f"would be written outside --out {out}",
        f"would be written outside --out {out}",
    ]
    assert not (tmp_path / "escape.rubric.yaml").exists()
    assert not (elsewhere / "target.jsonl").exists()


def test_responses_argument_must_name_a_subject(project: Path) -> None:
    assert Path.cwd() == project
    done = _import_in_process(
        "healthbench_sample.jsonl", "--responses", "healthbench_completions.jsonl", "--out", "x"
    )
    assert done.returncode == 2
    assert "write it as SUBJECT=FILE.jsonl" in done.stderr


def test_help_lists_the_importers(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_rubric", "import", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert "healthbench" in done.stdout
