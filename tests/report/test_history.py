"""``--rubric-history``: each run appended to a SQLite file, read back by ``python -m
pytest_rubric history`` (docs/guides/history.md)."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_rubric._cli.merge import main
from pytest_rubric._report.history import SCHEMA_VERSION, read_runs
from tests.conftest import HANG_GUARD

Write = Callable[[str, str], Path]

SUITE = """
cases:
  - id: q1
    responses: {good: "It is 42.", bad: "It is 41."}
    criteria: [{id: value, type: number, value: 42}]
  - id: q2
    responses: {good: "Paris.", bad: "Paris."}
    criteria: [{id: city, type: any_of, any_of: [paris]}]
"""


def _rows(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    assert main(["history", *args]) == 0
    return capsys.readouterr().out.splitlines()


def test_each_run_is_appended_and_history_prints_one_row_per_run(
    pytester: pytest.Pytester, write: Write, capsys: pytest.CaptureFixture[str]
) -> None:
    write("s.rubric.yaml", SUITE)
    for _ in range(2):
        result = pytester.runpytest("--rubric-history=h.sqlite3", "--rubric-json=out.json")
        result.assert_outcomes(passed=3, failed=1)
    runs = read_runs(pytester.path / "h.sqlite3")
    assert len(runs) == 2
    assert [s[0] for s in runs[-1].subjects] == ["good", "bad"]  # in rank order
    good = runs[-1].subjects[0]
    assert good[1] == 1.0 and good[2] is not None and good[2] < 1.0  # its interval
    with sqlite3.connect(pytester.path / "h.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM items").fetchone() == (8,)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        # Each run's leaderboard, every row whole, as the JSON writes it.
        rows = db.execute("SELECT row FROM leaderboard WHERE run_id = 2").fetchall()
    db.close()
    document = json.loads((pytester.path / "out.json").read_text())
    assert [json.loads(row) for (row,) in rows] == document["leaderboard"]

    capsys.readouterr()
    lines = _rows(capsys, "h.sqlite3")
    assert len(lines) == 2
    assert "good 1.000 [" in lines[0] and "bad 0.500 [" in lines[0]
    assert len(_rows(capsys, "h.sqlite3", "--last", "1")) == 1
    only = _rows(capsys, "h.sqlite3", "--subject", "bad")
    assert all("good" not in line and "bad 0.500" in line for line in only)


def test_the_ini_names_the_history_and_xdist_workers_never_write_it(
    pytester: pytest.Pytester, write: Write
) -> None:
    write("s.rubric.yaml", SUITE)
    pytester.makeini("[pytest]\nrubric_history = runs/h.sqlite3\n")
    result = pytester.runpytest("-n", "1")  # a worker is a process: one is enough to write
    result.assert_outcomes(passed=3, failed=1)
    runs = read_runs(pytester.path / "runs" / "h.sqlite3")
    assert len(runs) == 1  # the controller's one row, not one per worker
    with sqlite3.connect(pytester.path / "runs" / "h.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM items").fetchone() == (4,)
    db.close()


def test_merged_shards_append_once(
    pytester: pytest.Pytester, write: Write, capsys: pytest.CaptureFixture[str]
) -> None:
    write("a.rubric.yaml", SUITE)
    write("b.rubric.yaml", SUITE.replace("q1", "q3").replace("q2", "q4"))
    for name in ("a", "b"):
        pytester.runpytest(f"{name}.rubric.yaml", f"--rubric-json={name}.json")
    assert main(["merge", "a.json", "b.json", "--history", "h.sqlite3"]) == 1  # one case fails
    (run,) = read_runs(pytester.path / "h.sqlite3")
    assert dict((s[0], s[1]) for s in run.subjects) == {"good": 1.0, "bad": 0.5}


def test_a_history_that_cannot_be_written_is_one_error_line_and_never_a_lost_run(
    pytester: pytest.Pytester, write: Write, capsys: pytest.CaptureFixture[str]
) -> None:
    write("s.rubric.yaml", SUITE)
    newer = pytester.path / "newer.sqlite3"
    with sqlite3.connect(newer) as db:
        db.execute("PRAGMA user_version = 99")
    db.close()
    result = pytester.runpytest("--rubric-history=newer.sqlite3", "--rubric-json=out.json")
    result.assert_outcomes(passed=3, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["rubric: ERROR cannot write --rubric-history */newer.sqlite3: written by a newer "
         "pytest-rubric (history schema 99; this one reads up to 2)*"]
    )  # fmt: skip
    assert (pytester.path / "out.json").exists()
    capsys.readouterr()
    assert main(["history", "newer.sqlite3"]) == 2
    assert "written by a newer pytest-rubric" in capsys.readouterr().err

    (pytester.path / "junk.sqlite3").write_bytes(b"this is not a database" * 100)
    result = pytester.runpytest("--rubric-history=junk.sqlite3")
    result.assert_outcomes(passed=3, failed=1)
    assert result.stdout.str().count("junk.sqlite3: not a readable SQLite database") == 1
    (pytester.path / "folder").mkdir()
    result = pytester.runpytest("--rubric-history=folder")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["rubric: ERROR cannot write --rubric-history */folder: not a *"])
    assert "RubricWarning" not in result.stdout.str()


_ENDLESS = "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT x FROM r"


@pytest.mark.hostile
@pytest.mark.timeout(HANG_GUARD)
@pytest.mark.parametrize(
    "planted",
    [
        f"CREATE TRIGGER runs AFTER INSERT ON items BEGIN SELECT count(*) FROM ({_ENDLESS}); END",
        f"DROP TABLE runs; CREATE VIEW runs AS SELECT x AS id, '' AS started_at, NULL AS "
        f"git_commit, '' AS run FROM ({_ENDLESS})",
    ],
    ids=["trigger", "view"],
)
def test_a_history_holding_a_query_of_its_own_under_our_name_is_not_ours(
    pytester: pytest.Pytester, write: Write, capsys: pytest.CaptureFixture[str], planted: str
) -> None:
    """A history from elsewhere: a trigger or a view named like one of ours would run its
    endless query in the append and in every read. Refused, named, before any query."""
    write("s.rubric.yaml", SUITE)
    pytester.runpytest("--rubric-history=h.sqlite3")
    with sqlite3.connect(pytester.path / "h.sqlite3") as db:
        db.executescript(planted)
    db.close()
    result = pytester.runpytest("--rubric-history=h.sqlite3")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*h.sqlite3: it holds * runs, which a pytest-rubric history*"])
    capsys.readouterr()
    assert main(["history", "h.sqlite3"]) == 2
    assert "not ours" in capsys.readouterr().err


def test_an_older_history_is_migrated(pytester: pytest.Pytester, write: Write) -> None:
    write("s.rubric.yaml", SUITE)
    older = pytester.path / "old.sqlite3"
    sqlite3.connect(older).close()  # schema 0: the file of a version before histories
    pytester.runpytest("--rubric-history=old.sqlite3").assert_outcomes(passed=3, failed=1)
    assert len(read_runs(older)) == 1


def test_the_html_draws_each_subjects_correctness_over_the_history(
    pytester: pytest.Pytester, write: Write
) -> None:
    write("s.rubric.yaml", SUITE)
    for _ in range(3):
        pytester.runpytest("--rubric-history=h.sqlite3", "--rubric-html=r.html")
    page = (pytester.path / "r.html").read_text(encoding="utf-8")
    assert '<h2 id="trend">Correctness over the last 3 runs</h2>' in page
    trend = page[page.index('<h2 id="trend">') :]
    assert trend.count("<polyline") == 2  # good and bad, one line each
    assert trend.count("<circle") == 6  # three runs each
    assert "<script" not in page.lower()
    # Without a history there is no trend to draw.
    pytester.runpytest("--rubric-html=plain.html")
    assert 'id="trend"' not in (pytester.path / "plain.html").read_text(encoding="utf-8")


def test_the_html_opens_with_the_changes_since_the_baseline(
    pytester: pytest.Pytester, write: Write
) -> None:
    write("s.rubric.yaml", SUITE)
    pytester.runpytest("--rubric-json=base.json")
    changed = SUITE.replace('bad: "It is 41."', 'bad: "It is 42."').replace(
        'good: "Paris."', 'good: "Rome."'
    )
    write("s.rubric.yaml", changed + '  - id: q3\n    responses: {good: "x", bad: "x"}\n'
          "    criteria: [{id: x, type: any_of, any_of: [x]}]\n")  # fmt: skip
    pytester.runpytest("--rubric-baseline=base.json", "--rubric-html=r.html")
    page = (pytester.path / "r.html").read_text(encoding="utf-8")
    changes = page[
        page.index('<h2 id="changes">') : page.index("<h2", page.index('id="changes"') + 5)
    ]
    assert "1 regressed" in changes and "s.rubric.yaml::q2[good]" in changes
    assert "1 improved" in changes and "s.rubric.yaml::q1[bad]" in changes
    assert "2 appeared" in changes
    ids = set(re.findall(r'id="([^"]+)"', page))
    links = re.findall(r'href="#([^"]+)"', changes)
    assert links and all(link in ids for link in links)  # each change links to its answer
    assert page.index('id="changes"') < page.index("Substance against style")
