"""Nothing hostile gets through: a broken judge cache, and baseline or shard documents
that are mistyped, NaN, incomplete or self-contradictory.

A cache only saves calls: whatever is wrong with it, the run goes on with one
warning that names the file. A document read back (``--rubric-baseline``,
``merge``) is validated field by field, and its ``passed`` is recomputed.
"""

from __future__ import annotations

import copy
import json
import math
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_rubric._cli.merge import main
from pytest_rubric._llm import cache as _cache
from pytest_rubric._llm.cache import CacheFile
from pytest_rubric._render.summary import terminal_lines
from pytest_rubric._report.document import (
    DocumentError,
    DocumentModel,
    RunModel,
    VerdictName,
    document,
    parse_document,
    written,
)
from pytest_rubric._report.gates import Gates, run_gates
from pytest_rubric._report.report import build_report
from pytest_rubric._report.run import RunInfo, RunJudge
from pytest_rubric._results import CaseResult, CriterionResult, Verdict, Vote
from tests.conftest import examples
from tests.fake_llm import FakeLLM, verdict

pytestmark = pytest.mark.hostile


Write = Callable[[str, str], Path]


def _glob(text: str) -> str:
    """``text`` for fnmatch_lines, where ``[0]`` would be a character class."""
    return text.replace("[", "[[]")


# ------------------------------------------------------------------------------ the judge cache

JUDGED = """
cases:
{cases}
"""
CASE = """\
  - id: q{i}
    response: "Answer {i}: one day."
    criteria:
      - {{id: day, type: any_of, any_of: [day]}}
      - {{id: horizon, requirement: "Says one day, part {i}"}}
"""


def _judged(write: Write, n: int = 1) -> None:
    write("c.rubric.yaml", JUDGED.format(cases="".join(CASE.format(i=i) for i in range(n))))


def _run(pytester: pytest.Pytester, fake: FakeLLM, *extra: str) -> pytest.RunResult:
    return pytester.runpytest(
        "--rubric-judge=openai:m", f"--rubric-judge-url={fake.openai_url}", *extra
    )


@pytest.fixture
def judge(pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM) -> FakeLLM:
    pytester.makeini("[pytest]\nrubric_judge_backoff = 0.01\n")
    fake_llm.respond_with(lambda request: verdict("MET", "it says one day"))
    return fake_llm


def _db(pytester: pytest.Pytester) -> Path:
    return pytester.path / ".rubric_cache" / "judge.sqlite3"


def _random_bytes(path: Path) -> None:
    path.write_bytes(os.urandom(8192))


def _truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _a_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "x").write_text("x")


def _foreign_replies(path: Path) -> None:
    path.unlink()
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE replies (id INTEGER PRIMARY KEY, body TEXT)")
        db.execute("INSERT INTO replies VALUES (1, 'someone else''s data')")
    db.close()


def _other_tables(path: Path) -> None:
    path.unlink()
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE users (name TEXT)")
        db.execute("INSERT INTO users VALUES ('ada')")
    db.close()


# How to break the cache, and the reason the warning gives (in SQLite's words, or ours).
BREAKERS: dict[str, tuple[Callable[[Path], None], str]] = {
    "random-bytes": (_random_bytes, "file is not a database"),
    "truncated": (_truncated, "*"),  # SQLite words it by where the cut fell
    "a-directory": (_a_directory, "it is not a regular file"),
    "foreign-replies-table": (
        _foreign_replies,
        "its replies table has other columns (id, body): not ours",
    ),
    "other-tables": (
        _other_tables,
        "it holds table 'users', which a pytest-rubric cache does not: not ours",
    ),
}


def _assert_one_cache_warning(
    result: pytest.RunResult, db: Path, what: str, *, delete: Path | None = None
) -> None:
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            f"*RubricWarning: the judge cache {_glob(str(db))} cannot be used ({what}); this run "
            f"goes on without it. Delete {_glob(str(delete or db))} to start a new cache (or set "
            "ini rubric_cache_dir to another folder), or pass --rubric-cache off"
        ]
    )


@pytest.mark.parametrize("breaker", list(BREAKERS))
def test_a_cache_that_cannot_be_opened_is_one_warning_and_the_run_goes_on(
    pytester: pytest.Pytester, write: Write, judge: FakeLLM, breaker: str
) -> None:
    _judged(write)
    _run(pytester, judge).assert_outcomes(passed=1)  # a real cache, with the reply in it
    db = _db(pytester)
    breaks, reason = BREAKERS[breaker]
    breaks(db)
    before = db.read_bytes() if db.is_file() else None
    result = _run(pytester, judge)
    _assert_one_cache_warning(result, db, reason)
    assert len(judge.requests) == 2  # judged again: the cache was not used
    if before is not None:
        assert db.read_bytes() == before  # and left as it was, for the user to look at


def test_a_broken_cache_is_one_warning_in_every_run_mode(
    pytester: pytest.Pytester, write: Write, judge: FakeLLM, run_mode: list[str]
) -> None:
    _judged(write)
    db = _db(pytester)
    db.parent.mkdir()
    db.write_bytes(b"SQLite format 3\x00" + os.urandom(4000))
    result = _run(pytester, judge, *run_mode)
    _assert_one_cache_warning(result, db, "*")  # once, not once per xdist worker


def test_a_replay_through_a_broken_cache_says_the_cache_not_never_recorded(
    pytester: pytest.Pytester, write: Write, judge: FakeLLM
) -> None:
    _judged(write)
    db = _db(pytester)
    db.parent.mkdir()
    db.write_bytes(b"SQLite format 3\x00" + os.urandom(4000))
    result = _run(pytester, judge, "--rubric-cache=replay", "-rA")
    result.assert_outcomes(errors=1, warnings=1)
    result.stdout.fnmatch_lines(["*the judge cache * cannot be used (see its warning)*"])
    result.stdout.no_fnmatch_line("*it was never recorded*")


def test_a_cache_folder_that_is_a_file_is_one_warning(
    pytester: pytest.Pytester, write: Write, judge: FakeLLM
) -> None:
    _judged(write)
    folder = pytester.path / ".rubric_cache"
    folder.write_text("not a folder")
    result = _run(pytester, judge)
    _assert_one_cache_warning(
        result, _db(pytester), f"{_glob(str(folder))} is a file, not a folder", delete=folder
    )


def test_a_corrupt_page_loses_only_the_rows_on_it(
    pytester: pytest.Pytester, write: Write, judge: FakeLLM
) -> None:
    # Long replies spread the rows over many pages, so one page holds only a few.
    judge.respond_with(lambda request: verdict("MET", "it says one day " * 80))
    _judged(write, 30)
    _run(pytester, judge).assert_outcomes(passed=30)
    assert len(judge.requests) == 30
    db = _db(pytester)
    data = bytearray(db.read_bytes())
    pages = len(data) // 4096
    assert pages > 10
    middle = pages // 2 * 4096
    data[middle : middle + 4096] = os.urandom(4096)
    db.write_bytes(bytes(data))

    result = _run(pytester, judge)
    result.assert_outcomes(passed=30, warnings=1)
    result.stdout.fnmatch_lines(
        [
            f"*RubricWarning: the judge cache {db} could not read a stored reply (*); the run goes on*"
        ]
    )
    again = len(judge.requests) - 30
    assert 0 < again <= 6  # the rows on the broken page were judged again, the rest served


class _FullDisk:
    """A connection to the real cache whose writes fail as on a full disk."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def execute(self, sql: str, *args: Any) -> Any:
        if sql.lstrip().upper().startswith("INSERT"):
            raise sqlite3.OperationalError("database or disk is full")
        return self._db.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    connect = sqlite3.connect

    def full(*args: Any, **kwargs: Any) -> Any:
        return _FullDisk(connect(*args, **kwargs))

    monkeypatch.setattr(_cache.sqlite3, "connect", full)


def test_a_cache_that_cannot_store_warns_once_and_the_verdicts_stand(
    pytester: pytest.Pytester, write: Write, judge: FakeLLM, full_disk: None
) -> None:
    _judged(write, 3)
    result = _run(pytester, judge)  # in process: the patch applies
    result.assert_outcomes(passed=3, warnings=1)
    result.stdout.fnmatch_lines(
        [
            f"*RubricWarning: the judge cache {_glob(str(_db(pytester)))} could not store a reply (database "
            "or disk is full); the run goes on*"
        ]
    )


def test_a_stored_value_that_is_not_text_is_a_miss(tmp_path: Path) -> None:
    cache = CacheFile(tmp_path)
    cache.put("k", provider="p", model="m", raw="{}", parsed={})
    cache.close()
    with sqlite3.connect(tmp_path / "judge.sqlite3") as db:
        db.execute("UPDATE replies SET raw = ? WHERE key = 'k'", (b"\xff\xfe binary",))
    db.close()
    cache = CacheFile(tmp_path)
    assert cache.fetch("k") is None
    cache.close()


def test_a_foreign_database_is_never_written_to(tmp_path: Path) -> None:
    path = tmp_path / "judge.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE users (name TEXT)")
    db.close()
    before = path.read_bytes()
    cache = CacheFile(tmp_path)
    cache.put("k", provider="p", model="m", raw="{}", parsed={})
    assert cache.fetch("k") is None
    warning = cache.take_warning()
    assert warning is not None and "it holds table 'users'" in warning
    assert cache.take_warning() is None  # once
    cache.close()
    assert path.read_bytes() == before
    assert not (tmp_path / "judge.sqlite3-wal").exists()


# ------------------------------------------------------------------------------ baseline

SUITE = """
min_score: 0.5
cases:
  - id: q1
    responses: {a: "Two and two is four.", b: "Two and two is five."}
    criteria: [{id: four, type: any_of, any_of: [four]}]
"""


@pytest.fixture
def base(pytester: pytest.Pytester, write: Write) -> Path:
    write("s.rubric.yaml", SUITE)
    write("test_marker.py", "def test_marker(tmp_path_factory):\n    open('ran', 'w').close()\n")
    pytester.runpytest("--rubric-json", "base.json").assert_outcomes(passed=2, failed=1)
    (pytester.path / "ran").unlink()
    return pytester.path / "base.json"


def _edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))  # NaN is written as NaN, as Python's json would


def _set(*where: str | int, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        node: Any = data
        for step in where[:-1]:
            node = node[step]
        node[where[-1]] = value

    return change


def _delete(*where: str | int) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        node: Any = data
        for step in where[:-1]:
            node = node[step]
        del node[where[-1]]

    return change


def _overflowing(data: dict[str, Any]) -> None:
    """Two weights, each finite, whose sum is not: every score NaN or 0 (a collection error in
    a rubric file)."""
    result = data["results"][0]
    result["criteria"] = [{**result["criteria"][0], "weight": 1e308}] * 2


OVERFLOWING = (
    "results[0].criteria: value error, expected weights whose sum a number can hold, got a list"
)


def _traced(**trace: Any) -> Callable[[dict[str, Any]], None]:
    """The first result's one sample given a trace holding ``trace``."""
    return _set("results", 0, "samples", 0, "trace", value={"source": "returned", **trace})


def _graded(verdict: str, credit: float) -> Callable[[dict[str, Any]], None]:
    """The first criterion given ``verdict`` and ``credit``, in the result and its sample, as
    an edited document would (``ok`` as a run derives it)."""

    def change(data: dict[str, Any]) -> None:
        result = data["results"][0]
        for criterion in (result["criteria"][0], result["samples"][0]["criteria"][0]):
            criterion.update(verdict=verdict, ok=verdict == "MET", credit=credit)

    return change


# What a run never writes and a reader refuses rather than count: a NaN where any value may
# be (the application's metadata, a tool call's arguments), a pass mark no rubric file can
# set, a credit its verdict cannot have (an UNMET worth full credit would count as met), a
# count of samples that is not theirs, a pass rule written as a string.
INCONSISTENT = {
    "nan-metadata": (
        _traced(metadata={"x": math.nan}),
        "results[0].samples[0].trace.metadata.x: expected a finite number, got nan",
    ),
    "inf-argument": (
        _traced(tool_calls=[{"name": "t", "arguments": {"a": [1, math.inf]}, "ok": True}]),
        "results[0].samples[0].trace.tool_calls[0].arguments.a[1]: expected a finite number, got inf",
    ),
    "negative-min-score": (
        _set("results", 0, "min_score", value=-5),
        "results[0].min_score: expected at least 0, got -5",
    ),
    "min-score-above-1": (
        _set("results", 0, "min_score", value=1.5),
        "results[0].min_score: expected at most 1, got 1.5",
    ),
    "unmet-full-credit": (
        _graded("UNMET", 1.0),
        "results[0].criteria[0].credit: expected less than 1 with verdict UNMET, got 1.0",
    ),
    "error-credit": (
        _graded("ERROR", 1.0),
        "results[0].criteria[0].credit: expected 0 with verdict ERROR, got 1.0",
    ),
    "n-samples": (
        _set("results", 0, "n_samples", value=1_000_000),
        "results[0].n_samples: expected 1, the number of samples, got 1000000",
    ),
    "string-pass-when": (
        _set("results", 0, "pass_when", value="0.5"),
        """results[0].pass_when: expected "mean", "all", "any" or a number from 0 (excluded) to 1, got '0.5'""",
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_set("results", 0, "score", value="high"), "results[0].score: expected a number, got 'high'"),
        (_set("results", 0, "score", value=math.nan), "results[0].score: expected a finite number, got nan"),
        (_set("results", 1, "score", value=math.inf), "results[1].score: expected a finite number, got inf"),
        (_set("results", 0, "score", value=True), "results[0].score: expected a number, got true"),
        (_set("results", 0, "min_score", value="0.5"), "results[0].min_score: expected a number, got '0.5'"),
        (_set("results", 0, "criteria", 0, "credit", value=math.nan), "results[0].criteria[0].credit: expected a finite number, got nan"),
        (_set("results", 0, "flags", value="confidently_wrong"), "results[0].flags: expected a list, got 'confidently_wrong'"),
        (_delete("results", 1, "score"), "results[1].score: missing"),
        (_overflowing, OVERFLOWING),
        *INCONSISTENT.values(),
    ],
    ids=["string-score", "nan-score", "inf-score", "bool-score", "string-min-score", "nan-credit", "string-flags", "missing-score", "overflowing-weights", *INCONSISTENT],
)  # fmt: skip
def test_a_mistyped_baseline_stops_the_run_before_the_tests_naming_the_field(
    pytester: pytest.Pytester, base: Path, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    _edit(base, change)
    result = pytester.runpytest("--rubric-baseline", "base.json", "--rubric-json", "out.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --rubric-baseline: */base.json: {_glob(message)}"])
    assert not (pytester.path / "ran").exists()  # no test ran
    assert not (pytester.path / "out.json").exists()


def test_a_nan_baseline_no_longer_switches_the_drop_gate_off(
    pytester: pytest.Pytester, base: Path
) -> None:
    # Every score NaN: the mean is NaN and "drop > max_drop" is never true.
    def nan_scores(data: dict[str, Any]) -> None:
        for result in data["results"]:
            result["score"] = math.nan

    _edit(base, nan_scores)
    result = pytester.runpytest("--rubric-baseline", "base.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [_glob("*base.json: results[0].score: expected a finite number, got nan")]
    )


# ------------------------------------------------------------------------------ merge


@pytest.fixture
def shard(pytester: pytest.Pytester, write: Write) -> Path:
    write("s.rubric.yaml", SUITE)
    pytester.runpytest("s.rubric.yaml::q1[a]", "--rubric-json", "a.json").assert_outcomes(passed=1)
    return pytester.path / "a.json"


def test_a_document_of_an_older_version_without_run_still_merges(
    pytester: pytest.Pytester, write: Write, shard: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.runpytest("s.rubric.yaml::q1[b]", "--rubric-json", "b.json")
    _edit(shard, _delete("run"))  # as the previous version wrote it
    assert parse_document(shard.read_text(), name="a.json").run is None
    run = json.loads((pytester.path / "b.json").read_text())["run"]
    main(["merge", "a.json", "b.json", "--json", "merged.json"])
    assert "error" not in capsys.readouterr().err
    assert json.loads((pytester.path / "merged.json").read_text())["run"] == run
    main(["merge", "a.json", "--json", "merged.json"])
    assert json.loads((pytester.path / "merged.json").read_text())["run"] is None


def test_merge_refuses_weights_whose_sum_overflows(
    shard: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _edit(shard, _overflowing)
    assert main(["merge", "a.json"]) == 2
    assert f"a.json: {OVERFLOWING}" in capsys.readouterr().err


def test_merge_recomputes_passed_from_the_criteria(
    pytester: pytest.Pytester, shard: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["merge", "a.json"]) == 0
    capsys.readouterr()
    # The shard says passed, with its one criterion an ERROR (which earns no credit).
    _edit(shard, _set("results", 0, "criteria", 0, "verdict", value="ERROR"))
    _edit(shard, _set("results", 0, "criteria", 0, "credit", value=0.0))
    assert json.loads(shard.read_text())["results"][0]["passed"] is True

    assert main(["merge", "a.json", "--json", "merged.json"]) == 1
    out, err = capsys.readouterr()
    assert "0/1" in out
    assert "a.json: results[0] (s.rubric.yaml::q1[a]) says passed, but its criteria do not" in err
    merged = json.loads((pytester.path / "merged.json").read_text())
    assert merged["results"][0]["passed"] is False
    assert merged["leaderboard"][0]["passed"] == 0


def test_merge_recomputes_the_score_from_the_criteria(
    pytester: pytest.Pytester, shard: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A shard that claims score 1.0 and passed, over a criterion graded UNMET with no credit,
    counts what was graded: score 0, not passed."""
    _edit(shard, _set("results", 0, "criteria", 0, "verdict", value="UNMET"))
    _edit(shard, _set("results", 0, "criteria", 0, "credit", value=0.0))
    claimed = json.loads(shard.read_text())["results"][0]
    assert (claimed["score"], claimed["passed"]) == (1.0, True)

    assert main(["merge", "a.json", "--json", "merged.json"]) == 1
    out, err = capsys.readouterr()
    assert "a.json: results[0] (s.rubric.yaml::q1[a]) says score 1, but its criteria give 0" in err
    merged = json.loads((pytester.path / "merged.json").read_text())
    assert (merged["results"][0]["score"], merged["results"][0]["passed"]) == (0.0, False)
    assert merged["leaderboard"][0]["correctness"] == 0.0
    assert "0/1" in out


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_set("results", 0, "criteria", 0, "weight", value="1"), "results[0].criteria[0].weight: expected a number, got '1'"),
        (_set("results", 0, "passed", value="yes"), "results[0].passed: expected true or false, got 'yes'"),
        (_set("results", 0, "criteria", 0, "verdict", value="PASS"), "results[0].criteria[0].verdict: expected one of 'MET', 'UNMET', 'ERROR' or 'SKIPPED', got 'PASS'"),
        (_set("results", 0, "subject", value=7), "results[0].subject: expected a string, got 7"),
        (_set("results", 0, "fluency", value=None), "results[0].fluency: expected a number, got null"),
        (_delete("results", 0, "criteria", 0, "credit"), "results[0].criteria[0].credit: missing"),
        (_set("leaderboard", 0, "total", value=math.nan), "leaderboard[0].total: expected a whole number, got nan"),
        (_set("rankings_disagree", value=0), "rankings_disagree: expected true or false, got 0"),
        (_set("run", "started_at", value="yesterday"), "run.started_at: value error, expected an ISO 8601 time, e.g. 2026-12-04T09:30:00Z, got 'yesterday'"),
        (_set("run", "cache", "hits", value=-1), "run.cache.hits: expected at least 0, got -1"),
        (_delete("run", "judges"), "run.judges: missing"),
        *INCONSISTENT.values(),
    ],
    ids=["string-weight", "string-passed", "unknown-verdict", "int-subject", "null-fluency", "missing-credit", "nan-total", "int-bool", "run-time", "run-hits", "run-judges", *INCONSISTENT],
)  # fmt: skip
def test_merge_of_a_mistyped_shard_is_exit_2_naming_the_field(
    pytester: pytest.Pytester,
    shard: Path,
    capsys: pytest.CaptureFixture[str],
    change: Callable[[dict[str, Any]], None],
    message: str,
) -> None:
    _edit(shard, change)
    assert main(["merge", "a.json", "--json", "merged.json"]) == 2
    err = capsys.readouterr().err
    assert f"pytest-rubric merge: error: a.json: {message}\n" in err
    assert "write it again with --rubric-json" in err
    assert not (pytester.path / "merged.json").exists()


@pytest.mark.parametrize(
    "change",
    [_graded("UNMET", 0.5), _graded("MET", 0.5), _traced(metadata={"n": 10**400, "x": [1.5]})],
    ids=["unmet-partial-credit", "met-partial-credit", "huge-int-metadata"],
)
def test_merge_keeps_what_a_run_can_write(
    shard: Path, capsys: pytest.CaptureFixture[str], change: Callable[[dict[str, Any]], None]
) -> None:
    """A partial credit below the mark (a metric's, a judge's score) and an application's
    metadata holding a whole number no float holds are a run's own: read, never refused."""
    _edit(shard, change)
    assert main(["merge", "a.json"]) in (0, 1)
    assert "error" not in capsys.readouterr().err


def test_what_a_run_writes_is_a_valid_document(
    pytester: pytest.Pytester, write: Write, judge: FakeLLM
) -> None:
    write(
        "c.rubric.yaml",
        """
        cases:
          - id: q1
            question: "How long is the horizon?"
            response: "One day, I think."
            criteria:
              - {id: day, type: any_of, any_of: [day]}
              - {id: horizon, requirement: "Says one day"}
              - {id: clear, requirement: "Is clear", axis: style}
              - {id: wrong, type: forbidden, phrases: [week]}
              - {id: half, type: metric, expected: [day, hour], threshold: 1}
          - id: q2
            response: "Broken."
            criteria: [{id: bad, type: regex, pattern: "("}]
        """,
    )
    _run(pytester, judge, "--rubric-judge-samples=3", "--rubric-json", "out.json")
    data = json.loads((pytester.path / "out.json").read_text())
    document = DocumentModel.model_validate(data)
    assert {c.verdict for r in document.results for c in r.criteria} >= {"MET", "ERROR"}
    assert any(c.samples for r in document.results for c in r.criteria)
    assert parse_document(json.dumps(data), name="out.json").recomputed == []


def test_the_verdict_names_are_the_verdicts() -> None:
    from typing import get_args

    assert set(get_args(VerdictName)) == {str(v) for v in Verdict}


# ------------------------------------------------------------------------------ every field


def _results() -> list[CaseResult]:
    """Results of every shape a run writes: judged samples, style, ERROR, SKIPPED, None."""

    def criterion(cid: str, verdict: Verdict, **extra: Any) -> CriterionResult:
        credit = 1.0 if verdict is Verdict.MET else 0.0
        return CriterionResult(cid, "any_of", "substance", 1.0, verdict, credit, "why", **extra)

    judged = CriterionResult(
        "j", "judge", "style", 1.0, Verdict.MET, 1.0, "ok", required=True, agreement=2 / 3,
        votes=(Vote(Verdict.MET, 1.0), Vote(Verdict.UNMET, 0.0)),
    )  # fmt: skip
    return [
        CaseResult(
            "s.rubric.yaml::q1[a]", "s", "q1", "a", 1.0, 2.0, 0.8, True,
            [criterion("x", Verdict.MET), criterion("y", Verdict.SKIPPED), judged],
            0.7, 0.6, 0.77, style_score=1.0, flags=["unstable"], question="Q?", response="R",
        ),
        CaseResult(
            "s.rubric.yaml::q1[b]", "s", "q1", "b", 0.0, 0.0, 0.8, False,
            [criterion("x", Verdict.ERROR), criterion("f", Verdict.UNMET, required=True)],
            0.2, 0.9, 0.37, flags=["confidently_wrong"],
        ),
    ]  # fmt: skip


VALID = json.loads(json.dumps(document(build_report(_results()))))
VALID["run"] = written(RunModel, RunInfo(
    "0.1.0", "9.2.0", "3.11.7", "2026-12-04T09:30:00Z", 1.5, "a" * 40,
    (RunJudge("openai:m", "openai", "m", "http://127.0.0.1:8080/v1"), RunJudge("mine")),
))  # fmt: skip


def _paths(node: Any, where: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every place in the document: each key of each object, each item of each list."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*where, key)
            yield from _paths(value, (*where, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield (*where, index)
            yield from _paths(value, (*where, index))


PATHS = sorted(_paths(VALID), key=str)
DELETE = object()
WRONG = [DELETE, "high", "", math.nan, math.inf, -math.inf, None, True, False, 0, 7, -1.5,
         10**400, [], [1], {}, {"x": 1}, "MET"]  # fmt: skip


def _name(where: tuple[str | int, ...]) -> str:
    text = ""
    for part in where:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


VALUES = st.one_of(
    st.sampled_from(WRONG), st.floats(), st.integers(), st.text(max_size=5), st.booleans()
)


# Five times the default: each is cheap, and the space is every field times every kind of
# wrong value.
@settings(
    max_examples=examples(500),
    suppress_health_check=[HealthCheck.too_slow],
    deadline=None,
)
@given(where=st.sampled_from(PATHS), value=VALUES)
def test_any_field_mistyped_is_a_clean_error_naming_it_or_harmless(
    where: tuple[str | int, ...], value: Any
) -> None:
    data = copy.deepcopy(VALID)
    node: Any = data
    for step in where[:-1]:
        node = node[step]
    if value is DELETE:
        del node[where[-1]]
    else:
        node[where[-1]] = value
    try:
        read = parse_document(json.dumps(data), name="doc.json")
    except DocumentError as exc:
        # The field named is the one changed (or, for an object replaced wholesale,
        # a field inside it, whose name starts with the object's).
        assert str(exc).startswith("doc.json: ") and _name(where) in str(exc), str(exc)
        return
    # Accepted: the change was harmless (no field takes NaN or inf), and everything
    # downstream of reading works on what was read.
    assert not (isinstance(value, float) and not math.isfinite(value)), where
    results = read.results
    run_gates(results, Gates(baseline=results, baseline_name="doc.json"))
    report = build_report(results)
    terminal_lines(report, board_when_empty=True)
    json.dumps(document(report), allow_nan=False)


def test_the_reader_refuses_json_that_is_not_a_plain_document() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    for text, expected in [
        (deep, "nested too deeply"),
        ('{"results": []}', "doc.json: no version; write it again"),
        ('{"version": 1, "version": 1, "results": []}', "the key 'version' appears twice"),
        ('{"version": true, "results": [], "leaderboard": [], "rankings_disagree": false}',
         "version true is not 1"),
    ]:  # fmt: skip
        with pytest.raises(DocumentError, match=r"^doc\.json: ") as info:
            parse_document(text, name="doc.json")
        assert expected in str(info.value)


def test_a_stored_reply_is_json_whatever_its_text(tmp_path: Path) -> None:
    """A control character, then a URL's query before a quote: the parsed reply is stored as
    JSON that reads back (cutting the query once took the backslash before the quote)."""
    cache = CacheFile(tmp_path)
    text = 'see https://x.example/\x07?"'
    cache.put("k", provider="p", model="m", raw="{}", parsed={"trace": {"text": text}})
    found = cache.fetch("k")
    assert found is not None and found.parsed is not None
    assert json.loads(found.parsed) == {"trace": {"text": 'see https://x.example/\\x07?"'}}
