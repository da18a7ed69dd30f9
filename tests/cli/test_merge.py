"""``python -m pytest_rubric merge``: shards of a suite merge into the whole suite's results."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_rubric._cli.merge import main
from tests.conftest import EXAMPLES, INNER_ADDOPTS, graded, timeless


def _summary(lines: list[str]) -> list[str]:
    start = next(i for i, line in enumerate(lines) if "rubric summary" in line) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("=")), len(lines))
    return lines[start:end]


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


SHARD_FILES = ("whole.json", "a.json", "b.json", "whole.html", "w.md")


@pytest.fixture(scope="module")
def shard_runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, pytest.RunResult]]:
    """The bundled example run whole, and as two shards (one by file): once for the module, as
    no test changes them; each test gets copies (``shards``). No shard runs under xdist:
    e2e/test_run_modes finds the JSON a ``-n 2`` run writes the same as a serial run's."""
    directory = tmp_path_factory.mktemp("shards")
    (directory / "pytest.ini").write_text("[pytest]\n")
    shutil.copytree(EXAMPLES, directory / "examples")
    # The environment conftest's pytester gives its sessions; and no step summary to append to.
    env = {**os.environ, "PY_COLORS": "0", "PYTEST_ADDOPTS": INNER_ADDOPTS}
    env.pop("GITHUB_STEP_SUMMARY", None)

    evals = "examples/evals"
    first = [f"{evals}/finance.rubric.yaml", f"{evals}/statistics.rubric.yaml"]
    argvs = {
        "whole": [
            evals,
            *("--rubric-json", "whole.json", "--rubric-html", "whole.html"),
            *("--rubric-markdown", "w.md"),
        ],
        "a": [*first, "--rubric-json", "a.json"],
        "b": [evals, "--rubric-json", "b.json", *(f"--deselect={f}" for f in first)],
    }
    # The three runs one after the other in one fresh interpreter (the example's modules
    # stay out of this one), each run's exit status and output printed as JSON.
    probe = (
        "import contextlib, io, json, pytest\n"
        "runs = []\n"
        f"for argv in {list(argvs.values())!r}:\n"
        "    out, err = io.StringIO(), io.StringIO()\n"
        "    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):\n"
        "        code = pytest.main(['-p', 'no:cacheprovider', *argv])\n"
        "    runs.append([int(code), out.getvalue(), err.getvalue()])\n"
        "print(json.dumps(runs))\n"
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    took = time.monotonic() - started
    runs = {
        name: pytest.RunResult(code, out.splitlines(), err.splitlines(), took)
        for name, (code, out, err) in zip(
            argvs, json.loads(done.stdout.splitlines()[-1]), strict=True
        )
    }
    for name in SHARD_FILES:
        run_name = name.removesuffix(".json") if name.endswith(".json") else "whole"
        assert (directory / name).is_file(), runs[run_name].stdout.str()
    return directory, runs


@pytest.fixture
def shards(
    pytester: pytest.Pytester, shard_runs: tuple[Path, dict[str, pytest.RunResult]]
) -> dict[str, pytest.RunResult]:
    """The example and the three runs' JSON (and the whole run's HTML and Markdown) in this
    test's directory, and how they ended."""
    directory, runs = shard_runs
    pytester.makeini("[pytest]\n")
    shutil.copytree(EXAMPLES, pytester.path / "examples")
    for name in SHARD_FILES:
        shutil.copy(directory / name, pytester.path / name)
    return runs


def test_merging_two_halves_gives_the_leaderboard_of_the_whole(
    pytester: pytest.Pytester,
    shards: dict[str, pytest.RunResult],
    capsys: pytest.CaptureFixture[str],
) -> None:
    a, b = _load(pytester.path / "a.json"), _load(pytester.path / "b.json")
    whole = _load(pytester.path / "whole.json")
    assert a["results"] and b["results"]
    assert len(a["results"]) + len(b["results"]) == len(whole["results"])
    assert a["leaderboard"] != whole["leaderboard"]  # a half alone ranks differently

    code = main(["merge", "a.json", "b.json", "--json", "merged.json"])
    merged = _load(pytester.path / "merged.json")
    assert graded(merged) == graded(whole)  # results, leaderboard and rankings_disagree alike
    # The run of both shards: the first's versions, from the first start to the last end.
    run, runs = merged["run"], (a["run"], b["run"])
    assert run["started_at"] == min(r["started_at"] for r in runs)
    assert run["duration_s"] >= max(r["duration_s"] for r in runs)
    assert {k: v for k, v in run.items() if k not in ("started_at", "duration_s")} == {
        k: v for k, v in a["run"].items() if k not in ("started_at", "duration_s")
    }
    # What merge prints is the summary the whole run printed.
    printed = capsys.readouterr().out.splitlines()
    assert _summary(printed) == _summary(shards["whole"].outlines)
    assert code == 1  # the example has failing cases, as the whole run did
    assert shards["whole"].ret == pytest.ExitCode.TESTS_FAILED


def test_merge_runs_as_a_module(pytester: pytest.Pytester, shards: dict[str, Any]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_rubric", "merge", "a.json", "b.json"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "! A style-weighted rubric would rank these subjects differently." in done.stdout


def test_overlapping_shards_and_foreign_files_are_input_errors(
    pytester: pytest.Pytester, shards: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["merge", "a.json", "whole.json"]) == 2
    err = capsys.readouterr().err
    assert "is in both a.json and whole.json: shards must not overlap" in err

    (pytester.path / "junk.json").write_text('{"tests": []}')
    assert main(["merge", "a.json", "junk.json"]) == 2
    assert 'junk.json: not a --rubric-json document (no "results" list)' in capsys.readouterr().err
    (pytester.path / "bad.json").write_text("{")
    assert main(["merge", "bad.json"]) == 2
    assert "bad.json: not JSON" in capsys.readouterr().err
    assert main(["merge", "missing.json"]) == 2
    assert "missing.json: cannot read it" in capsys.readouterr().err

    # One shard holding one item six times would count it six times.
    document = json.loads((pytester.path / "a.json").read_text())
    document["results"] = document["results"][:1] * 6
    (pytester.path / "six.json").write_text(json.dumps(document))
    assert main(["merge", "six.json"]) == 2
    assert f"six.json holds {document['results'][0]['nodeid']} twice" in capsys.readouterr().err


def test_a_tests_several_assert_rubric_results_merge(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """One test, three calls: three results under its node id, each its own case and
    subject. A run's document is a shard like any other."""
    pytester.makepyfile(
        test_a="""
        from pytest_rubric import assert_rubric

        C = [{"id": "c", "type": "any_of", "any_of": ["paris"]}]

        def test_capital():
            assert_rubric("Paris.", C, subject="careful")
            assert_rubric("PARIS!", C, subject="careful")
            assert_rubric("Paris", C, subject="bold")
        """
    )
    pytester.runpytest("--rubric-json=r.json").assert_outcomes(passed=1)
    capsys.readouterr()
    assert main(["merge", "r.json", "--json", "m.json"]) == 0, capsys.readouterr().err
    merged = json.loads((pytester.path / "m.json").read_text())
    assert len(merged["results"]) == 3


def test_a_merge_of_passing_shards_exits_zero(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makeini("[pytest]\n")
    for name in ("x", "y"):
        (pytester.path / f"{name}.rubric.yaml").write_text(
            f"- id: {name}\n  response: fine\n  criteria: [{{type: any_of, any_of: [fine]}}]\n"
        )
        pytester.runpytest(f"{name}.rubric.yaml", "--rubric-json", f"{name}.json")
    assert main(["merge", "x.json", "y.json"]) == 0
    assert "2/2" in capsys.readouterr().out


def test_merge_writes_the_reports_and_applies_the_gates_of_the_whole(
    pytester: pytest.Pytester,
    shards: dict[str, pytest.RunResult],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    whole = shards["whole"]  # it wrote whole.html and w.md too
    step = pytester.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    code = main(["merge", "a.json", "b.json", "--html", "m.html", "--markdown", "m.md"])
    assert code == 1 and whole.ret == 1
    # The same but for when each run started and how long it took.
    text = {name: timeless((pytester.path / name).read_text()) for name in ("m.html", "whole.html")}
    assert text["m.html"] == text["whole.html"]
    assert timeless((pytester.path / "m.md").read_text()) == timeless(
        (pytester.path / "w.md").read_text()
    )
    assert step.read_text() == (pytester.path / "m.md").read_text() + "\n"
    capsys.readouterr()

    # Against the whole run as baseline nothing regressed; a drop is named.
    assert main(["merge", "a.json", "b.json", "--baseline", "whole.json"]) == 1  # cases fail
    passed = capsys.readouterr().out
    assert (
        "rubric gate passed: no case regressed, no subject dropped more than 0 (--max-drop)"
        in passed
    )
    assert main(["merge", "b.json", "--baseline", "whole.json", "--fail-under", "0.9"]) == 1
    out = capsys.readouterr().out
    assert "note: " in out and "is below --fail-under 0.9" in out
    assert main(["merge", "a.json", "--baseline", "junk.json"]) == 2


NINE = """
min_score: 1
cases:
{cases}
"""


def _nine(pytester: pytest.Pytester, wrong: int, json_path: str, *flags: str) -> pytest.RunResult:
    """Nine cases of subject a, ``wrong`` of them answered wrong, run into ``json_path``."""
    cases = "".join(
        f"  - id: q{i}\n    responses: {{a: {'five' if i < wrong else 'four'}}}\n"
        "    criteria: [{id: four, type: any_of, any_of: [four]}]\n"
        for i in range(9)
    )
    (pytester.path / "s.rubric.yaml").write_text(NINE.format(cases=cases))
    return pytester.runpytest("s.rubric.yaml", "--rubric-json", json_path, *flags)


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (
            ["--max-drop", "0.02"],
            [
                "*s.rubric.yaml::q0[[]a] passed in the baseline and fails now (score 0.00, min_score 1.00)",
                "*subject a: correctness 1.000 -> 0.889, a drop of 0.111 (more than --max-drop 0.02)",
            ],
        ),
        (
            ["--max-drop", "0.02", "--gate-confidence", "0.9"],
            [
                "*q0[[]a] passed in the baseline and fails now *, within noise at --gate-confidence 0.9 (not a failure)*",
                "*subject a: the drop of 0.111 is within noise at --gate-confidence 0.9 (not a failure)",
            ],
        ),
        (["--fail-under", "0.9"], ["*subject a: correctness 0.889 is below --fail-under 0.9"]),
    ],
    ids=["max-drop", "gate-confidence", "fail-under"],
)  # fmt: skip
def test_merge_gates_name_the_flags_of_merge(
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    said: list[str],
) -> None:
    """The user typed merge's --max-drop, so its gate says --max-drop, not the pytest flag
    --rubric-max-drop that merge has not got: in the summary and in the merged document."""
    pytester.makeini("[pytest]\n")
    _nine(pytester, 0, "base.json")
    _nine(pytester, 1, "now.json")
    code = main(["merge", "now.json", "--baseline", "base.json", "--json", "m.json", *flags])
    assert code == 1
    out = capsys.readouterr().out
    pytest.LineMatcher(out.splitlines()).fnmatch_lines(said)
    gates = [e["message"] for e in _load(pytester.path / "m.json")["gates"]]
    assert gates and not [m for m in gates if "--rubric-" in m]
    entries = [line for line in out.splitlines() if line.startswith(("  - ", "  note: "))]
    assert entries and not [line for line in entries if "--rubric-" in line]


def test_a_merge_with_nothing_to_gate_names_its_own_flag(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makeini("[pytest]\n")
    (pytester.path / "s.rubric.yaml").write_text("cases: []\n")
    pytester.runpytest("s.rubric.yaml", "--rubric-json", "empty.json")
    assert main(["merge", "empty.json", "--fail-under", "0.5"]) == 1
    out = capsys.readouterr().out
    assert "so --fail-under 0.5 measured nothing" in out
    assert "--rubric-" not in out


def test_a_merge_prints_the_notes_its_shard_printed(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """A shard gated against a baseline the merge is not given: its outcomes are kept, and
    the merge prints as notes what the shard's run printed as notes, the drop within noise
    (a passing baseline-subject entry) as well as the flip within noise."""
    pytester.makeini("[pytest]\n")
    _nine(pytester, 0, "base.json")
    gated = ("--rubric-baseline=base.json", "--rubric-max-drop=0.02")
    shard = _nine(pytester, 1, "now.json", *gated, "--rubric-gate-confidence=0.9")
    notes = [line for line in shard.outlines if line.startswith("  note: ")]
    assert any("subject a: the drop of 0.111 is within noise" in note for note in notes)
    # The contract's five fields, and no sixth to say which passes were notes.
    gates = _load(pytester.path / "now.json")["gates"]
    assert gates and {tuple(e) for e in gates} == {
        ("gate", "subject", "nodeid", "failed", "message")
    }
    capsys.readouterr()  # the shard's run printed there too
    assert main(["merge", "now.json"]) == 1  # q0 fails
    merged = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  note: ")]
    assert merged == notes


def _answers(pytester: pytest.Pytester, name: str, right: int, wrong: int) -> None:
    """``name``.rubric.yaml: report-only cases of subject answer (a pass whatever they score,
    so only a gate fails a run), ``right`` of them answered right and ``wrong`` wrong."""
    cases = "".join(
        f"  - id: {name}{i}\n    responses: {{answer: {'four' if i < right else 'five'}}}\n"
        "    criteria: [{id: four, type: any_of, any_of: [four]}]\n"
        for i in range(right + wrong)
    )
    (pytester.path / f"{name}.rubric.yaml").write_text(f"min_score: null\ncases:\n{cases}")


def test_a_gate_the_shards_asked_is_measured_on_the_whole(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """Shards each run with --rubric-fail-under measured a subject on their part of it: merge
    refuses to keep those verdicts, and given --fail-under measures the whole suite, as one
    run over it does."""
    pytester.makeini("[pytest]\n")
    _answers(pytester, "x", 1, 0)
    _answers(pytester, "y", 0, 2)
    gate = "--rubric-fail-under=0.3"
    assert pytester.runpytest("x.rubric.yaml", gate, "--rubric-json=x.json").ret == 0
    assert pytester.runpytest("y.rubric.yaml", gate, "--rubric-json=y.json").ret == 1
    whole = pytester.runpytest("x.rubric.yaml", "y.rubric.yaml", gate, "--rubric-json=w.json")
    assert whole.ret == 0
    capsys.readouterr()

    # Set on the shards only, the gate is never dropped, nor kept from a part: no green.
    assert main(["merge", "x.json", "y.json", "--json", "m.json"]) == 2
    err = capsys.readouterr().err
    assert "subject answer was gated by fail-under in x.json and graded in y.json" in err
    assert "pass --fail-under X (the shards' threshold)" in err

    args = ["merge", "x.json", "y.json", "--fail-under", "0.3", "--json", "m.json"]
    assert main(args) == 0, capsys.readouterr()
    assert "rubric gate passed" in capsys.readouterr().out
    outcomes = [
        [(g["gate"], g["subject"], g["failed"]) for g in _load(pytester.path / name)["gates"]]
        for name in ("m.json", "w.json")
    ]
    assert outcomes[0] == outcomes[1]
    assert main(["merge", "x.json", "y.json", "--fail-under", "0.5"]) == 1
    out = capsys.readouterr().out
    assert "subject answer: correctness 0.333 is below --fail-under 0.5" in out


def test_a_subjects_drop_measured_on_shards_is_not_the_wholes(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """Shards gated against a baseline each measured a subject's drop over their part of it:
    merge measures it on the whole with --baseline, and without one refuses to keep them."""
    pytester.makeini("[pytest]\n")
    _answers(pytester, "x", 1, 0)
    _answers(pytester, "y", 2, 0)
    pytester.runpytest("x.rubric.yaml", "y.rubric.yaml", "--rubric-json=base.json")
    _answers(pytester, "y", 1, 1)
    gate = ("--rubric-baseline=base.json", "--rubric-max-drop=0.4")
    pytester.runpytest("x.rubric.yaml", *gate, "--rubric-json=x.json")
    pytester.runpytest("y.rubric.yaml", *gate, "--rubric-json=y.json")
    whole = pytester.runpytest("x.rubric.yaml", "y.rubric.yaml", *gate, "--rubric-json=w.json")
    assert whole.ret == 0  # a drop of 0.333 over the whole; of 0.5 in y's shard
    capsys.readouterr()
    assert main(["merge", "x.json", "y.json"]) == 2
    err = capsys.readouterr().err
    assert "subject answer was gated by baseline-subject in x.json and graded in y.json" in err
    args = ["merge", "x.json", "y.json", "--baseline", "base.json", "--max-drop", "0.4"]
    assert main(args) == 0


def test_a_merge_keeps_the_confidence_level_of_its_shards(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """Shards run at ini rubric_confidence 0.8 merge at 0.8, as one run over both does;
    shards run at different levels merge only at the one --confidence names."""
    pytester.makeini("[pytest]\nrubric_confidence = 0.8\n")
    _answers(pytester, "x", 2, 1)
    _answers(pytester, "y", 1, 2)
    pytester.runpytest("x.rubric.yaml", "--rubric-json=x.json")
    pytester.runpytest("y.rubric.yaml", "--rubric-json=y.json")
    pytester.runpytest("x.rubric.yaml", "y.rubric.yaml", "--rubric-json=w.json")
    capsys.readouterr()
    assert main(["merge", "x.json", "y.json", "--json", "m.json"]) == 0, capsys.readouterr()
    merged, whole = _load(pytester.path / "m.json"), _load(pytester.path / "w.json")
    assert merged["confidence"] == 0.8
    assert graded(merged) == graded(whole)

    pytester.runpytest("y.rubric.yaml", "--rubric-confidence=0.9", "--rubric-json=y9.json")
    capsys.readouterr()
    assert main(["merge", "x.json", "y9.json"]) == 2
    err = capsys.readouterr().err
    assert "the shards ran at confidence 0.8 in x.json and 0.9 in y9.json" in err
    assert main(["merge", "x.json", "y9.json", "--confidence", "0.9", "--json", "n.json"]) == 0
    assert {r["level"] for r in _load(pytester.path / "n.json")["results"]} == {0.9}


def test_a_merge_of_an_interrupted_shard_says_it_is_partial(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """With --allow-incomplete, the merged run is incomplete: the summary says so, and so does
    the run's header in the Markdown and the HTML, naming the shard."""
    pytester.makeini("[pytest]\n")
    _answers(pytester, "x", 1, 0)
    _answers(pytester, "y", 1, 0)
    pytester.runpytest("x.rubric.yaml", "--rubric-json=x.json")
    pytester.runpytest("y.rubric.yaml", "--rubric-json=y.json")
    document = _load(pytester.path / "y.json")
    document["run"]["complete"] = False  # as a run stopped by Ctrl-C writes it
    (pytester.path / "y.json").write_text(json.dumps(document))
    capsys.readouterr()
    args = ["x.json", "y.json", "--allow-incomplete", "--markdown", "m.md", "--html", "m.html"]
    assert main(["merge", *args]) == 0
    said = "incomplete: shard y.json was interrupted"
    assert said in capsys.readouterr().out
    assert "incomplete `shard y.json was interrupted`" in (pytester.path / "m.md").read_text()
    html = (pytester.path / "m.html").read_text()
    assert "incomplete <code>shard y.json was interrupted</code>" in html
    # A merge of complete shards says nothing of it.
    assert main(["merge", "x.json"]) == 0
    assert "incomplete" not in capsys.readouterr().out


def test_merge_says_what_it_does_in_its_own_words(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its help gives every reason for exit 1, and its messages name the flags the user
    typed: --history, never the pytest flag --rubric-history that merge has not got."""
    with pytest.raises(SystemExit):
        main(["merge", "--help"])
    helped = " ".join(capsys.readouterr().out.split())
    assert "1 when one failed or could not be evaluated or a gate failed" in helped

    pytester.makeini("[pytest]\n")
    _answers(pytester, "x", 1, 0)
    pytester.runpytest("x.rubric.yaml", "--rubric-json=x.json")
    pytester.mkdir("evals")
    capsys.readouterr()
    assert main(["merge", "x.json", "--history", "evals"]) == 0
    err = capsys.readouterr().err
    assert "--history evals: not a regular file" in err
    assert "--rubric-history" not in err
