"""Recordings that merge: judge replies kept as text, one
JSON file per rubric file and case, so two branches that each record a case merge without a
conflict, re-recording a case changes one file, a keyless clone replays the same verdicts,
and unused entries are counted, and pruned only after a full run.

The project is a team's: ``app/`` answers HR questions, a unit test in ``tests/``,
``evals/`` with a rubric file whose cases have judged criteria and the adapter
``evals/targets.py``, and a ``pytest.ini`` that names the local judge and the recordings.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_rubric._llm.recordings import Recordings, folder, location
from pytest_rubric._session.caches import JudgeRecordings
from tests.conftest import RUN_MODES, graded, team_project
from tests.fake_llm import FakeLLM, Recorded, text, verdict

Write = Callable[[str, str], Path]

FAQ = """
suite: faq
target: targets:hr_bot
cases:
  - id: remote
    question: "Can I work remotely?"
    criteria:
      - {id: days, type: any_of, any_of: ["two days"]}
      - {id: policy, requirement: "Says how many days of remote work are allowed"}
  - id: leave
    question: "How much parental leave do I get?"
    criteria:
      - {id: weeks, type: any_of, any_of: ["16 weeks"]}
      - {id: paid, requirement: "Says whether the leave is paid"}
"""


def judge_says(request: Recorded) -> Any:
    """MET, unless the answer judged says nothing of pay."""
    text = json.dumps(request.body)
    return verdict("UNMET" if "paid" in text and "salary" not in text else "MET")


@pytest.fixture
def team(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    team_project(
        pytester,
        write,
        app="""
        ANSWERS = {
            "remote": "You may work remotely two days a week.",
            "leave": "You get 16 weeks of leave on full salary.",
        }


        def answer(question: str) -> str:
            return ANSWERS["remote" if "remote" in question else "leave"]
        """,
        unit_test="""
        from app.bot import answer


        def test_remote():
            assert "two days" in answer("Can I work remotely?")
        """,
        targets="""
        from app.bot import answer


        def hr_bot(question: str) -> str:
            return answer(question)
        """,
        ini=f"rubric_judge = openai:local\nrubric_judge_url = {fake_llm.openai_url}\n"
        "rubric_recordings = recordings\n",
    )
    write("evals/faq.rubric.yaml", FAQ)
    fake_llm.respond_with(judge_says)
    return pytester


def recording(pytester: pytest.Pytester, case: str) -> Path:
    return pytester.path / f"recordings/evals/faq.rubric.yaml/{case}.json"


def entries(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_each_case_is_one_readable_file(team: pytest.Pytester) -> None:
    result = team.runpytest("--rubric-cache", "use")
    result.assert_outcomes(passed=3)
    for case in ("remote", "leave"):
        text = recording(team, case).read_text()
        data = json.loads(text)
        # Keys sorted, two-space indents, a trailing newline: what the writer always writes.
        assert text == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        (key, entry) = data.popitem()
        assert len(key) == 64 and not data  # one entry, under the request's hash
        assert set(entry) == {"judge", "reply", "tokens_in", "tokens_out"}
        assert json.loads(entry["reply"])["verdict"] == "MET"
    # The local cache stays SQLite, and is never committed.
    assert (team.path / ".rubric_cache/.gitignore").read_text().splitlines()[-1] == "*"


def test_a_long_case_id_records_and_a_folder_that_cannot_be_written_is_one_error_line(
    team: pytest.Pytester,
) -> None:
    long = "退休金计划的雇主缴费比例是多少以及何时开始生效呢请说明一下"
    faq = (team.path / "evals/faq.rubric.yaml").read_text().replace("id: remote", f"id: {long}")
    (team.path / "evals/faq.rubric.yaml").write_text(faq)
    team.runpytest("--rubric-cache", "use").assert_outcomes(passed=3)
    shutil.rmtree(team.path / ".rubric_cache")  # replayed from the recordings alone
    result = team.runpytest("--rubric-cache", "replay")
    result.assert_outcomes(passed=3)
    shutil.rmtree(team.path / ".rubric_cache")  # asked again, so recorded again
    (team.path / "taken").write_text("a file, not a folder\n")
    result = team.runpytest(
        "--rubric-cache", "use", "--rubric-recordings", "taken", "--rubric-json", "out.json"
    )
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["rubric: ERROR cannot write --rubric-recordings */taken: Not a directory"]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert (team.path / "out.json").exists()


def test_a_clone_without_a_key_replays_the_same_verdicts(
    team: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLM
) -> None:
    team.runpytest("--rubric-cache", "use", "--rubric-json", "out.json").assert_outcomes(passed=3)
    recorded = graded(json.loads((team.path / "out.json").read_text()))
    shutil.rmtree(team.path / ".rubric_cache")  # a clone has the recordings alone
    asked = len(fake_llm.requests)
    monkeypatch.delenv("OPENAI_API_KEY")
    result = team.runpytest("--rubric-cache", "replay", "--rubric-json", "out.json")
    result.assert_outcomes(passed=3)
    assert len(fake_llm.requests) == asked  # no call
    assert graded(json.loads((team.path / "out.json").read_text())) == recorded
    # Run as usual (the cache mode is use) at the provider's own URL, which needs the key:
    # the missing key's reason says how to replay.
    result = team.runpytest("-rs", "-o", "rubric_judge_url=")
    result.stdout.fnmatch_lines(["*, or grade from the recordings with --rubric-cache replay*"])


def test_a_replay_miss_is_an_error_naming_the_file_and_the_command(
    team: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    result = team.runpytest("--rubric-cache", "replay", "-k", "remote")
    result.assert_outcomes(passed=1, errors=1, deselected=1)  # the unit test_remote passes
    result.stdout.fnmatch_lines(
        [
            "*no recorded reply of judge openai:local for criterion 'policy' in "
            "recordings/evals/faq.rubric.yaml/remote.json; record it with "
            "`pytest --rubric-cache use --rubric-recordings recordings` (and a judge)*"
        ]
    )


@pytest.mark.hostile
def test_a_recording_left_with_a_merge_conflict_is_named_in_the_error(
    team: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    team.runpytest("--rubric-cache", "use").assert_outcomes(passed=3)
    path = recording(team, "remote")
    path.write_text("<<<<<<< HEAD\n" + path.read_text() + "=======\n>>>>>>> other\n")
    shutil.rmtree(team.path / ".rubric_cache")
    monkeypatch.delenv("OPENAI_API_KEY")
    result = team.runpytest("--rubric-cache", "replay")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        ["*remote.json (the file cannot be read: it is not JSON (line 1: *merge conflict*"]
    )


def conflicted(path: Path) -> bytes:
    """Leave ``path`` as git leaves it when another branch recorded another reply to the same
    request: both sides inside the object, between the markers."""
    ours = entries(path)
    other = json.dumps({"reason": "the other branch's judge", "verdict": "UNMET"})
    theirs = {key: {**entry, "reply": other} for key, entry in ours.items()}

    def inside(data: dict[str, Any]) -> str:
        return "".join(json.dumps(data, indent=2, sort_keys=True).splitlines(True)[1:-1])

    text = f"{{\n<<<<<<< HEAD\n{inside(ours)}=======\n{inside(theirs)}>>>>>>> other\n}}\n"
    path.write_text(text)
    return text.encode()


LEFT = (
    "recordings: warning: recordings/evals/faq.rubric.yaml/remote.json cannot be read "
    "(it is not JSON (line 2: Expecting property name enclosed in double quotes); a merge "
    "conflict left in it?): left as it was, {done}; resolve a merge conflict left in it, or "
    "fix or delete the file, then run again"
)


@pytest.mark.hostile
@pytest.mark.parametrize("mode", list(RUN_MODES))
def test_a_recording_left_with_a_merge_conflict_is_never_written_over(
    team: pytest.Pytester, mode: str
) -> None:
    """Merged with {} for what it holds, it would be rewritten as clean JSON holding this
    run's entries alone: the other branch's lost, and the conflict resolved for git."""
    team.runpytest("--rubric-cache", "use").assert_outcomes(passed=3)
    conflict = conflicted(recording(team, "remote"))
    recording(team, "leave").unlink()  # written again by the run, from the local cache
    result = team.runpytest("--rubric-cache", "use", *RUN_MODES[mode])
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.OK
    assert recording(team, "remote").read_bytes() == conflict
    assert len(entries(recording(team, "leave"))) == 1
    said = LEFT.format(done="this run's 1 new entry for it not written")
    result.stdout.fnmatch_lines([said])
    assert result.stdout.str().count("remote.json cannot be read") == 1
    recording(team, "remote").unlink()  # as the warning says: the next run writes it
    # In one process whatever the mode: a recording written from workers' entries under -n 2
    # is test_workers_recording_one_case_lose_no_entry[xdist-n2]'s to prove.
    result = team.runpytest("--rubric-cache", "use")
    result.assert_outcomes(passed=3)
    result.stdout.no_fnmatch_line("recordings:*")
    assert len(entries(recording(team, "remote"))) == 1


@pytest.mark.hostile
def test_a_recording_left_with_a_merge_conflict_is_never_pruned(team: pytest.Pytester) -> None:
    team.runpytest("--rubric-cache", "use").assert_outcomes(passed=3)
    conflict = conflicted(recording(team, "remote"))
    # The case removed (its recording an orphan), the other's criterion reworded (its old
    # entry unused): a full run prunes the one it can read.
    faq = team.path / "evals/faq.rubric.yaml"
    header, _, leave = FAQ.partition("  - id: remote")
    leave = "  - id: leave" + leave.partition("  - id: leave")[2]
    faq.write_text(header + leave.replace("Says whether the leave is paid", "Says it is paid"))
    result = team.runpytest("--rubric-cache", "use", "--rubric-recordings-prune")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    assert recording(team, "remote").read_bytes() == conflict
    assert len(entries(recording(team, "leave"))) == 1
    result.stdout.fnmatch_lines(
        ["recordings: 1 unused deleted", LEFT.format(done="not pruned")], consecutive=True
    )
    assert result.stdout.str().count("remote.json cannot be read") == 1


@pytest.mark.hostile
@pytest.mark.parametrize(
    "entry",
    [
        {"judge": "x", "reply": "x" * (1024 * 1024 + 1)},  # larger than a live reply may be
        {"judge": "x"},  # no reply
    ],
)
def test_a_recording_is_held_to_a_live_replys_limits(
    team: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, entry: dict[str, Any]
) -> None:
    team.runpytest("--rubric-cache", "use").assert_outcomes(passed=3)
    path = recording(team, "remote")
    data = json.loads(path.read_text())
    key = next(iter(data))
    data[key] = entry
    path.write_text(json.dumps(data))
    shutil.rmtree(team.path / ".rubric_cache")
    monkeypatch.delenv("OPENAI_API_KEY")
    result = team.runpytest("--rubric-cache", "replay")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*remote.json (the file cannot be read: entry *"])


def test_a_recorded_reply_is_validated_as_a_live_one(
    team: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    team.runpytest("--rubric-cache", "use").assert_outcomes(passed=3)
    path = recording(team, "remote")
    data = json.loads(path.read_text())
    for entry in data.values():
        entry["reply"] = '{"reason": "ok", "verdict": "PROBABLY"}'
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    shutil.rmtree(team.path / ".rubric_cache")
    monkeypatch.delenv("OPENAI_API_KEY")
    result = team.runpytest("--rubric-cache", "replay")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*remote.json (the file cannot be read: a reply it holds did not fit the protocol: "
            '*"verdict" must be exactly "MET" or "UNMET"*'
        ]
    )


LINKED = (
    "recordings: warning: {where} cannot be read (it is a symbolic link, which may lead out "
    "of the recordings folder: nothing is read, written or deleted through one; put a folder "
    "or a file in its place): left as it was, {done}; resolve a merge conflict left in it, or "
    "fix or delete the file, then run again"
)


def files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``, with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder outside the project, where a link committed on a branch may point."""
    return tmp_path_factory.mktemp("elsewhere")


@pytest.mark.hostile
def test_a_recordings_folder_that_is_a_symlink_is_never_written_through(
    team: pytest.Pytester, elsewhere: Path
) -> None:
    """In one process: the merge-conflict test above finds the controller's warning under
    xdist too."""
    (team.path / "recordings").mkdir()
    (team.path / "recordings/evals").symlink_to(elsewhere, target_is_directory=True)
    result = team.runpytest("--rubric-cache", "use")
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.OK
    assert files(elsewhere) == {}  # nothing made there, not even a folder
    assert list(elsewhere.iterdir()) == []
    done = "this run's 2 new entries for it not written"
    result.stdout.fnmatch_lines([LINKED.format(where="recordings/evals", done=done)])
    assert result.stdout.str().count("a symbolic link") == 1  # the link, once: not each file


@pytest.mark.hostile
def test_recordings_through_a_symlink_are_never_pruned(
    team: pytest.Pytester, elsewhere: Path
) -> None:
    team.runpytest("--rubric-cache", "use").assert_outcomes(passed=3)
    # The recordings moved out of the project, a link left in their place.
    shutil.move(team.path / "recordings/evals", elsewhere / "evals")
    (team.path / "recordings/evals").symlink_to(elsewhere / "evals", target_is_directory=True)
    before = files(elsewhere)
    faq = team.path / "evals/faq.rubric.yaml"
    header, _, leave = FAQ.partition("  - id: remote")
    faq.write_text(header + "  - id: leave" + leave.partition("  - id: leave")[2])
    result = team.runpytest("--rubric-cache", "use", "--rubric-recordings-prune")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    assert files(elsewhere) == before  # remote.json, an orphan, still there
    done = "this run's 1 new entry for it not written"
    result.stdout.fnmatch_lines([LINKED.format(where="recordings/evals", done=done)])
    result.stdout.no_fnmatch_line("recordings: * unused deleted")


@pytest.mark.hostile
def test_a_recording_file_that_is_a_symlink_is_neither_read_nor_written(
    team: pytest.Pytester, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    team.runpytest("--rubric-cache", "use").assert_outcomes(passed=3)
    target = elsewhere / "remote.json"
    shutil.move(recording(team, "remote"), target)
    recording(team, "remote").symlink_to(target)
    before = target.read_bytes()
    shutil.rmtree(team.path / ".rubric_cache")
    with monkeypatch.context() as keyless:
        keyless.delenv("OPENAI_API_KEY")
        result = team.runpytest("--rubric-cache", "replay")
    result.assert_outcomes(passed=2, errors=1)  # its reply, however good, not replayed
    result.stdout.fnmatch_lines(
        ["*remote.json (the file cannot be read: it is a symbolic link, which may lead out*"]
    )
    result = team.runpytest("--rubric-cache", "use")
    result.assert_outcomes(passed=3)
    assert target.read_bytes() == before
    assert recording(team, "remote").is_symlink()
    where = "recordings/evals/faq.rubric.yaml/remote.json"
    done = "this run's 1 new entry for it not written"
    result.stdout.fnmatch_lines([LINKED.format(where=where, done=done)])


# --- git --------------------------------------------------------------------------------------


def git(project: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(project),
    }
    done = subprocess.run(
        ["git", "-C", str(project), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture
def repository(team: pytest.Pytester) -> pytest.Pytester:
    git(team.path, "init", "-q", "-b", "main")
    git(team.path, "add", "-A")
    git(team.path, "commit", "-q", "-m", "the evals")
    return team


def test_two_branches_that_record_different_cases_merge_without_conflict(
    repository: pytest.Pytester,
) -> None:
    project = repository.path
    git(project, "checkout", "-q", "-b", "remote")
    repository.runpytest("--rubric-cache", "use", "-k", "remote").assert_outcomes(
        passed=2, deselected=1
    )
    git(project, "add", "-A")
    assert git(project, "status", "--porcelain", "--untracked-files=all").splitlines() == [
        "A  recordings/evals/faq.rubric.yaml/remote.json"
    ]  # the local cache is ignored
    git(project, "commit", "-q", "-m", "record remote")
    git(project, "checkout", "-q", "main")
    git(project, "checkout", "-q", "-b", "leave")
    shutil.rmtree(project / ".rubric_cache")  # what the other branch's machine had
    repository.runpytest("--rubric-cache", "use", "-k", "leave").assert_outcomes(
        passed=1, deselected=2
    )
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "record leave")
    git(project, "merge", "-q", "--no-edit", "remote")
    assert recording(repository, "remote").exists() and recording(repository, "leave").exists()
    assert "<<<<<<<" not in recording(repository, "remote").read_text()


def test_rerecording_one_case_changes_one_file_and_unused_entries_are_pruned_after_a_full_run(
    repository: pytest.Pytester,
) -> None:
    project = repository.path
    repository.runpytest("--rubric-cache", "use").assert_outcomes(passed=3)
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "record")
    faq = project / "evals/faq.rubric.yaml"
    faq.write_text(faq.read_text().replace("Says whether the leave is paid", "Says it is paid"))
    git(project, "commit", "-q", "-am", "reword the criterion")
    result = repository.runpytest("--rubric-cache", "use")
    result.assert_outcomes(passed=3)
    assert git(project, "status", "--porcelain").splitlines() == [
        " M recordings/evals/faq.rubric.yaml/leave.json"
    ]
    # The old wording's reply is now recorded but used by no request.
    assert len(entries(recording(repository, "leave"))) == 2
    result.stdout.fnmatch_lines(  # in the summary
        [
            "*= rubric summary =*",
            "recordings: 1 unused; run with --rubric-recordings-prune to delete them",
        ]
    )
    # A selection leaves entries of the items it left out unused: never the prune advice.
    result = repository.runpytest("-k", "leave")
    result.stdout.fnmatch_lines(["recordings: 1 not used by this run, a selection (*"])
    result.stdout.no_fnmatch_line("*--rubric-recordings-prune*")
    # After a selection, nothing is pruned.
    for selection in (
        ["-k", "leave"],
        ["evals/faq.rubric.yaml::leave[hr_bot]"],
        ["evals/faq.rubric.yaml"],
    ):
        result = repository.runpytest("--rubric-recordings-prune", *selection)
        result.stdout.fnmatch_lines(["recordings: not pruned: this run was a selection (*"])
        assert len(entries(recording(repository, "leave"))) == 2
    result = repository.runpytest("--rubric-recordings-prune", "evals", "tests")  # every file
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["recordings: 1 unused deleted"])
    assert len(entries(recording(repository, "leave"))) == 1
    assert len(entries(recording(repository, "remote"))) == 1
    repository.runpytest("--rubric-cache", "use").stdout.no_fnmatch_line("recordings:*")


def test_a_run_of_subjects_from_the_command_line_is_a_selection_for_recordings(
    team: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Subjects on the command line replace the rubric file's: its subject's entries are not
    used by such a run, so it neither counts them unused nor prunes them."""
    targets = team.path / "evals/targets.py"
    targets.write_text(
        targets.read_text() + "\n\ndef terse(question: str) -> str:\n"
        '    return "In short: " + answer(question)\n'
    )
    team.runpytest("--rubric-cache", "use").assert_outcomes(passed=3)
    recorded = {path: path.read_bytes() for path in (team.path / "recordings").rglob("*.json")}
    assert len(recorded) == 2
    terse = ["--rubric-cache", "use", "--rubric-target", "targets:terse"]
    result = team.runpytest(*terse)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "recordings: 2 not used by this run, a selection (subjects from the command line); "
            "a run of every rubric file says which are unused"
        ]
    )
    result.stdout.no_fnmatch_line("*--rubric-recordings-prune*")
    result = team.runpytest(*terse, "--rubric-recordings-prune", "evals")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "recordings: not pruned: this run was a selection (subjects from the command line); "
            "prune after a run of every rubric file (2 unused so far)"
        ]
    )
    for path, before in recorded.items():  # the file subject's entries, and terse's beside them
        assert json.loads(before).items() < entries(path).items()
    shutil.rmtree(team.path / ".rubric_cache")  # a clone has the recordings alone
    monkeypatch.delenv("OPENAI_API_KEY")
    team.runpytest("--rubric-cache", "replay").assert_outcomes(passed=3)


def test_the_recording_of_a_case_removed_is_unused(repository: pytest.Pytester) -> None:
    repository.runpytest("--rubric-cache", "use").assert_outcomes(passed=3)
    # Asked again without the cache, every entry is still some request's: none is unused.
    result = repository.runpytest("--rubric-cache", "off", "--rubric-recordings-prune")
    result.assert_outcomes(passed=3)
    result.stdout.no_fnmatch_line("recordings:*")
    assert recording(repository, "leave").exists()
    faq = repository.path / "evals/faq.rubric.yaml"
    faq.write_text(FAQ.split("  - id: leave")[0])
    result = repository.runpytest()
    result.stdout.fnmatch_lines(["recordings: 1 unused; *"])
    repository.runpytest("--rubric-recordings-prune").stdout.fnmatch_lines(
        ["recordings: 1 unused deleted"]
    )
    assert not recording(repository, "leave").exists()
    assert recording(repository, "remote").exists()


def test_a_rubric_file_with_a_long_name_keeps_its_recordings(
    team: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long part of a rubric file's path is cut (and a hash added) to name its folder of
    recordings: the rubric file is still found there, so its entries are neither unused nor
    pruned while it exists, and are once it is gone."""
    long = "evals/退休金计划的雇主缴费比例是多少以及何时开始生效呢请说明一下.rubric.yaml"
    (team.path / "evals/faq.rubric.yaml").rename(team.path / long)
    team.runpytest("--rubric-cache", "use").assert_outcomes(passed=3)
    folder = team.path / "recordings" / location(long, "remote").rpartition("/")[0]
    assert "~" in folder.name  # cut to a file name
    recorded = {path: path.read_bytes() for path in folder.glob("*.json")}
    assert len(recorded) == 2
    result = team.runpytest("--rubric-cache", "use")
    result.assert_outcomes(passed=3)
    result.stdout.no_fnmatch_line("recordings:*")
    with monkeypatch.context() as keyless:
        keyless.delenv("OPENAI_API_KEY")
        # The provider's own URL without its key: no judge, so no case is judged by its entries.
        result = team.runpytest("-o", "rubric_judge_url=", "--rubric-recordings-prune")
        result.stdout.no_fnmatch_line("recordings:*")
        assert {path: path.read_bytes() for path in folder.glob("*.json")} == recorded
        shutil.rmtree(team.path / ".rubric_cache")  # a clone has the recordings alone
        team.runpytest("--rubric-cache", "replay").assert_outcomes(passed=3)
    (team.path / long).unlink()  # its recordings are now unused, and pruned
    result = team.runpytest("--rubric-cache", "use", "--rubric-recordings-prune")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["recordings: 2 unused deleted"])
    assert not list(folder.glob("*.json"))


def test_the_recording_of_a_judged_criterion_removed_is_unused_once_its_case_is_graded(
    repository: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A case graded with a judge at hand whose requests used none of its entries: they are
    unused (a criterion removed, a requirement reworded); graded with no judge, they are not."""
    repository.runpytest("--rubric-cache", "use").assert_outcomes(passed=3)
    faq = repository.path / "evals/faq.rubric.yaml"
    reworded = FAQ.replace("Says whether the leave is paid", "Says it is paid")
    faq.write_text(reworded)
    result = repository.runpytest("--rubric-cache", "replay")  # the new wording: a miss
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["recordings: 1 unused; *"])
    faq.write_text(reworded.replace('      - {id: paid, requirement: "Says it is paid"}\n', ""))
    with monkeypatch.context() as keyless:  # the provider's own URL, no key: no judge to ask
        keyless.delenv("OPENAI_API_KEY")
        result = repository.runpytest("-o", "rubric_judge_url=", "--rubric-recordings-prune")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.no_fnmatch_line("recordings:*")
    result = repository.runpytest("--rubric-cache", "replay", "--rubric-recordings-prune")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["recordings: 1 unused deleted"])
    assert not recording(repository, "leave").exists()
    assert len(entries(recording(repository, "remote"))) == 1


# --- xdist ------------------------------------------------------------------------------------

TWO_SUBJECTS = """
suite: faq
targets: {first: "targets:hr_bot", second: "targets:hr_bot_too"}
cases:
  - id: remote
    question: "Can I work remotely?"
    criteria:
      - {id: policy, requirement: "Says how many days of remote work are allowed"}
  - id: leave
    question: "How much parental leave do I get?"
    criteria:
      - {id: paid, requirement: "Says whether the leave is paid"}
"""


@pytest.mark.parametrize("mode", list(RUN_MODES))
def test_workers_recording_one_case_lose_no_entry(
    team: pytest.Pytester, write: Write, mode: str
) -> None:
    # Two subjects of one case, answered differently, on two workers under --dist load:
    # both write the same case's file.
    write("evals/faq.rubric.yaml", TWO_SUBJECTS)
    targets = team.path / "evals/targets.py"
    targets.write_text(
        targets.read_text()
        + "\n\ndef hr_bot_too(question: str) -> str:\n    return 'Ask HR. ' + answer(question)\n"
    )
    extra = ["--dist", "load"] if mode == "xdist-n2" else []
    result = team.runpytest("--rubric-cache", "use", *RUN_MODES[mode], *extra)
    result.assert_outcomes(passed=5)
    for case in ("remote", "leave"):
        assert len(entries(recording(team, case))) == 2
    # Recorded once, they replay: nothing unused, nothing asked again.
    shutil.rmtree(team.path / ".rubric_cache")
    result = team.runpytest("--rubric-cache", "replay", *RUN_MODES[mode], *extra)
    result.assert_outcomes(passed=5)
    result.stdout.no_fnmatch_line("recordings:*")


# --- where a recording goes -------------------------------------------------------------------


@pytest.mark.hostile
@given(
    file=st.lists(st.sampled_from(["..", ".", "evals", "a b", "x%2F", "é", ""]), max_size=4).map(
        "/".join
    ),
    case=st.text(min_size=1, max_size=100),
)
def test_a_recording_never_climbs_out_of_its_folder(file: str, case: str) -> None:
    root = Path("/recordings")
    where = location(file, case)
    path = (root / where).resolve()
    assert path.is_relative_to(root) and path.name.endswith(".json")
    assert "/" not in where.rpartition("/")[2][: -len(".json")]  # one file per case
    assert all(len(part.encode()) <= 255 for part in where.split("/"))  # a name the OS takes


def test_long_case_ids_are_cut_to_a_file_name_and_kept_apart() -> None:
    """Percent-encoded, 29 Chinese characters are 270 bytes, past what a file system names."""
    long = "退休金计划的雇主缴费比例是多少以及何时开始生效呢请说明一下"
    names = {location("evals/f.rubric.yaml", long + end) for end in ("", "?", "!")}
    assert len(names) == 3 and all(len(n.rpartition("/")[2]) <= 255 for n in names)
    assert location("evals/f.rubric.yaml", long) == location("evals/f.rubric.yaml", long)


def test_a_recording_is_named_as_the_node_id_reads() -> None:
    assert location("evals/faq.rubric.yaml", "q1") == "evals/faq.rubric.yaml/q1.json"


def _decoded(value: Any) -> str:
    """Every string in ``value``, JSON text inside strings decoded too."""
    if isinstance(value, dict):
        return " ".join(_decoded(v) for v in value.values())
    if isinstance(value, list):
        return " ".join(_decoded(v) for v in value)
    if isinstance(value, str):
        try:
            inner = json.loads(value)
        except ValueError:
            return value
        return value + " " + _decoded(inner)
    return str(value)


def test_a_key_a_judge_writes_with_json_escapes_is_in_no_recording_or_cache(
    team: pytest.Pytester, fake_llm: FakeLLM
) -> None:
    """A judge (or a proxy before it, which sees the key) writes the key into its reason with
    a JSON escape or two: the recordings a team commits, and the cache, hold it masked."""
    escaped = "sk-test-\\u00301234567\\u00389abcdef"  # the key, two of its digits escaped
    fake_llm.respond_with(
        lambda request: text(f'{{"verdict": "MET", "reason": "the key is {escaped}"}}')
    )
    team.runpytest("--rubric-cache", "use").assert_outcomes(passed=3)
    kept = [_decoded(entries(recording(team, case))) for case in ("remote", "leave")]
    with sqlite3.connect(team.path / ".rubric_cache/judge.sqlite3") as db:
        for table in [
            row[0] for row in db.execute("select name from sqlite_master where type = 'table'")
        ]:
            kept += [_decoded(list(row)) for row in db.execute(f"select * from {table}")]
    assert any("the key is ***" in text for text in kept)
    assert not any("123456789abcdef" in text for text in kept)


def test_a_cached_reply_that_does_not_fit_blames_no_recording_file(
    team: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replay reads the recordings, then the local cache: a reply of the local cache that
    does not fit is no fault of the recording file, which here does not even exist."""
    team.runpytest("--rubric-cache", "use").assert_outcomes(passed=3)
    recording(team, "remote").unlink()
    with sqlite3.connect(team.path / ".rubric_cache/judge.sqlite3") as db:
        db.execute("UPDATE replies SET raw = ?", ['{"verdict": "PROBABLY"}'])
    monkeypatch.delenv("OPENAI_API_KEY")
    result = team.runpytest("--rubric-cache", "replay")
    result.assert_outcomes(passed=2, errors=1)  # leave's recording holds its replies
    result.stdout.fnmatch_lines(
        [
            "*no recorded reply of judge openai:local for criterion 'policy' in "
            "recordings/evals/faq.rubric.yaml/remote.json; record it with *"
        ]
    )
    assert "did not fit the protocol" not in result.stdout.str()


def out_of_protocol_first(request: Recorded) -> Any:
    """Out of protocol for the remote case's judged criterion, until the error is fed back."""
    body = json.dumps(request.body)
    if "remote work" in body and "could not be used" not in body:
        return text("I think it is fine.")
    return judge_says(request)


@pytest.mark.parametrize("batch", [[], ["--rubric-judge-batch"]], ids=["live", "batch"])
def test_a_reply_the_judge_got_right_on_its_retry_replays_from_the_recordings(
    team: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLM, batch: list[str]
) -> None:
    """The recording holds the first request's entry, marked unusable with the error fed
    back, so a clone without the local cache replays the retry as the recording run made it."""
    fake_llm.script_batch(poll_after=0)
    fake_llm.respond_with(out_of_protocol_first)
    result = team.runpytest("--rubric-cache", "use", *batch, "--rubric-json", "out.json")
    result.assert_outcomes(passed=3)
    assert bool(fake_llm.batched) == bool(batch)
    recorded = graded(json.loads((team.path / "out.json").read_text()))
    marked = [e for e in entries(recording(team, "remote")).values() if "unusable" in e]
    assert [set(e) for e in marked] == [{"judge", "unusable"}]
    assert "contains no JSON object" in marked[0]["unusable"]
    shutil.rmtree(team.path / ".rubric_cache")  # a clone has the recordings alone
    asked = len(fake_llm.requests)
    monkeypatch.delenv("OPENAI_API_KEY")
    result = team.runpytest("--rubric-cache", "replay", "--rubric-json", "out.json")
    result.assert_outcomes(passed=3)
    assert len(fake_llm.requests) == asked  # no call
    assert graded(json.loads((team.path / "out.json").read_text())) == recorded
    result.stdout.no_fnmatch_line("recordings:*")  # both of remote's entries used


def test_a_replay_of_a_recorded_unusable_reply_says_it_was_unusable(
    team: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLM
) -> None:
    """Out of protocol twice: the recording keeps both entries marked unusable, and a clone's
    replay says so, never that the reply was not recorded."""
    fake_llm.respond_with(
        lambda request: (
            text("I think it is fine.")
            if "remote work" in json.dumps(request.body)
            else judge_says(request)
        )
    )
    team.runpytest("--rubric-cache", "use").assert_outcomes(passed=2, errors=1)
    assert len(entries(recording(team, "remote"))) == 2
    shutil.rmtree(team.path / ".rubric_cache")
    monkeypatch.delenv("OPENAI_API_KEY")
    result = team.runpytest("--rubric-cache", "replay")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*--rubric-cache replay: the last reply of judge openai:local to criterion 'policy' "
            "was unusable (the reply contains no JSON object*"
        ]
    )
    assert "no recorded reply" not in result.stdout.str()


CALIBRATION = """
calibration:
  - {case: leave, criterion: paid, response: "16 weeks on full salary.", verdict: MET}
  - {case: leave, criterion: paid, response: "You get 16 weeks, paid.", verdict: UNMET}
  - {case: leave, criterion: paid, response: "It is unpaid leave.", verdict: UNMET}
  - {case: leave, criterion: paid, response: "Full salary, 16 weeks.", verdict: MET}
"""


@pytest.mark.parametrize("mode", list(RUN_MODES))
def test_calibration_recordings_are_used_never_pruned_and_a_replay_miss_names_them(
    team: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLM, mode: str
) -> None:
    """Calibration is graded on one worker, every worker hands over what it used."""
    (team.path / "evals/faq.rubric.yaml").write_text(FAQ + CALIBRATION)
    calibration = team.path / "recordings/evals/faq.rubric.yaml/[calibration].json"
    result = team.runpytest("--rubric-cache", "use", *RUN_MODES[mode])
    result.assert_outcomes(passed=3)
    result.stdout.no_fnmatch_line("recordings:*")  # the run used every entry it recorded
    assert len(entries(calibration)) == 4
    result = team.runpytest("--rubric-cache", "use", "--rubric-recordings-prune", *RUN_MODES[mode])
    result.assert_outcomes(passed=3)
    result.stdout.no_fnmatch_line("recordings:*")
    assert len(entries(calibration)) == 4
    # A colleague replays every reply, calibration's too, from the recordings.
    shutil.rmtree(team.path / ".rubric_cache")
    asked = len(fake_llm.requests)
    monkeypatch.delenv("OPENAI_API_KEY")
    min_kappa = "--rubric-judge-min-kappa=0.5"
    result = team.runpytest("--rubric-cache", "replay", min_kappa)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["judge calibration faq: n 4, accuracy 1.000, kappa 1.000*"])
    assert len(fake_llm.requests) == asked
    # Without its recording, calibration grades nothing, and says why: not the labels' fault.
    calibration.unlink()
    result = team.runpytest("--rubric-cache", "replay", min_kappa, *RUN_MODES[mode])
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*judge calibration of suite 'faq': none of its 4 examples was graded, so kappa "
            "cannot be computed (--rubric-judge-min-kappa 0.5): --rubric-cache replay: no "
            "recorded reply of judge openai:local for criterion 'paid' in "
            "recordings/evals/faq.rubric.yaml/[[]calibration].json; record it with "
            "`pytest --rubric-cache use --rubric-recordings recordings` (and a judge)*"
        ]
    )
    assert "all one way" not in result.stdout.str()


def test_a_rubric_file_not_collected_is_found_by_its_recordings_folder(tmp_path: Path) -> None:
    """Whether a recording file's rubric file still exists is read forward from the files
    there, whether its folder's name was cut short or not; a deleted one is gone."""
    recordings = JudgeRecordings(Recordings(tmp_path / "recordings"), tmp_path, False)
    long = "evals/" + "退休金计划的雇主缴费比例" * 4 + ".rubric.yaml"
    for name in (long, "evals/faq.rubric.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("cases: []\n", encoding="utf-8")
    assert "~" in folder(long)  # cut short, with a hash
    assert recordings._exists(folder(long))
    assert recordings._exists(folder("evals/faq.rubric.yaml"))
    assert not recordings._exists(folder("evals/gone.rubric.yaml"))
    (tmp_path / long).unlink()
    assert not recordings._exists(folder(long))


def test_the_recordings_of_a_deleted_rubric_file_are_looked_up_once_per_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every recording file of a deleted rubric file is unused, and its folder is decided
    once, not once per file (5,000 of them walked the directories 5,000 times)."""
    store = Recordings(tmp_path / "recordings")
    gone = folder("evals/" + "退休金计划的雇主缴费比例" * 4 + ".rubric.yaml")
    (tmp_path / "evals").mkdir()
    for i in range(50):
        path = store.path(f"{gone}/q{i}.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"a" * 64: {"judge": "j", "reply": "{}"}}), encoding="utf-8")
    listed: list[str] = []
    real = os.listdir

    def listdir(path: Any) -> list[str]:
        listed.append(str(path))
        return real(path)

    monkeypatch.setattr(os, "listdir", listdir)
    unused = JudgeRecordings(store, tmp_path, False)._gone(store)
    assert len(unused) == 50
    assert len(listed) <= 2  # the rootdir and evals/, for the one folder
