"""Round four of hostile input, on the run's edges: outputs that cannot be written,
exceptions that fight back, files from elsewhere, the promptfoo importer's total, lost
workers and interrupted runs, batch files, CSV cells and ``init``
(docs/development/reliability.md)."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_rubric._cli.merge import main as cli
from pytest_rubric._errors import LLMError
from tests.conftest import HANG_GUARD, SUPPORT, lines_in_any_order
from tests.guards.test_user_code import JUDGED

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


# --- exceptions that fight back --------------------------------------------------------------

FIGHTING = """
import threading


class RaisesWhenPrinted(Exception):
    def __str__(self):
        raise TypeError("no str for you")

    def __repr__(self):
        raise TypeError("no repr either")


class BlocksWhenPrinted(Exception):
    def __str__(self):
        threading.Event().wait()  # forever
        return "never"


class ReprBlocks(Exception):
    def __repr__(self):
        threading.Event().wait()
        return "never"


class BlocksWhenPrintedAgain(Exception):
    # Prints once, as checked, then blocks when the traceback prints it.
    printed = 0

    def __str__(self):
        type(self).printed += 1
        if type(self).printed > 1:
            threading.Event().wait()
        return "printed once"


class Liar(str):
    # Every way a check might read the text says what the criterion wants.
    def lower(self):
        return "one day"

    casefold = lower

    def __contains__(self, item):
        return True

    def __str__(self):
        return "one day"


def raises(question):
    raise RaisesWhenPrinted()


def blocks(question):
    raise BlocksWhenPrinted()


def blocks_later(question):
    raise BlocksWhenPrintedAgain()


def repr_blocks(question):
    raise ValueError("the cause does not print") from ReprBlocks()


def lies(question):
    return Liar("Nothing useful.")


def fine(question):
    return "One day."


class Answered:
    # What a target returns is read within its bound: its properties are its code too.
    def __init__(self, block):
        self.block = block

    @property
    def answer(self):
        if self.block:
            threading.Event().wait()
        raise RaisesWhenPrinted()


def answer_raises(question):
    return Answered(block=False)


def answer_blocks(question):
    return Answered(block=True)


def check_raises(response, case):
    raise RaisesWhenPrinted()


def check_blocks(response, case):
    raise BlocksWhenPrinted()


class Odd:
    def __repr__(self):
        threading.Event().wait()
        return "never"


def check_returns_odd(response, case):
    return [Odd()]
"""

FIGHTING_SUITE = """
targets: {raises: "targets:raises", blocks: "targets:blocks", chain: "targets:repr_blocks",
          lies: "targets:lies", fine: "targets:fine", answer_raises: "targets:answer_raises",
          answer_blocks: "targets:answer_blocks", blocks_later: "targets:blocks_later"}
cases:
  - id: horizon
    question: "What is the horizon?"
    timeout: 2
    criteria:
      - {id: day, type: any_of, any_of: ["one day"]}
  - id: checked
    question: "And again?"
    timeout: 2
    criteria:
      - {id: raises, type: callable, function: "targets:check_raises", timeout: 2}
      - {id: blocks, type: callable, function: "targets:check_blocks", timeout: 2}
      - {id: odd, type: callable, function: "targets:check_returns_odd", timeout: 2}
"""


@pytest.mark.timeout(HANG_GUARD)
def test_exceptions_that_do_not_print_are_errors_within_the_calls_bound(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    write("evals/targets.py", FIGHTING)
    write("evals/e.rubric.yaml", FIGHTING_SUITE)
    result = pytester.runpytest("--rubric-dir=evals", "--rubric-json=out.json", "--tb=short")
    result.assert_outcomes(passed=1, failed=1, errors=14)  # lies: its own text fails
    lines_in_any_order(
        result,
        [
            "*target targets:raises raised RaisesWhenPrinted: <unprintable RaisesWhenPrinted>*",
            "*target targets:blocks raised BlocksWhenPrinted: <unprintable BlocksWhenPrinted>*",
            "*target targets:repr_blocks raised ValueError: the cause does not print*",
            "*target targets:answer_raises raised RaisesWhenPrinted: <unprintable Raises*",
            "*target targets:answer_blocks did not return within 2 s*",
            "*target targets:blocks_later raised BlocksWhenPrintedAgain: *",
            "*targets:check_raises raised RaisesWhenPrinted: <unprintable RaisesWhenPrinted>*",
            "*targets:check_blocks raised BlocksWhenPrinted: <unprintable BlocksWhenPrinted>*",
            "*targets:check_returns_odd returned ?<Odd object>?; *",
            # The application's traceback is still shown, to its line.
            "*in raises*",
            "*raise RaisesWhenPrinted()*",
        ],
    )
    results = rubric_json()["results"]
    assert len(results) == 16  # no result lost
    by = {(r["subject"], r["case"]): r for r in results}
    assert by["lies", "horizon"]["criteria"][0]["verdict"] == "UNMET"  # the plain str it holds
    assert by["lies", "horizon"]["response"] == "Nothing useful."
    assert by["fine", "horizon"]["passed"]
    verdicts = {c["verdict"] for r in results if r["subject"] != "fine" for c in r["criteria"]}
    assert verdicts <= {"ERROR", "UNMET"}


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no")


def test_described_and_contained_never_raise_on_an_exception_that_does_not_print() -> None:
    from pytest_rubric._guards.calls import UserCodeError, contained, described, plain

    assert described(_Unprintable()) == "_Unprintable: <unprintable _Unprintable>"
    kept = contained(_Unprintable())
    assert isinstance(kept, UserCodeError) and kept.unprintable
    assert kept.__cause__ is None and kept.__suppress_context__
    error = ValueError("fine")
    assert contained(error) is error

    class Sub(str):
        def upper(self) -> str:
            return "LIES"

    text = plain({"answer": Sub("quiet"), "more": [Sub("x"), (Sub("y"),)]})
    assert text == {"answer": "quiet", "more": ["x", ("y",)]}
    assert type(text["answer"]) is str and text["answer"].upper() == "QUIET"
    looped: list[Any] = []
    looped.append(looped)
    assert plain(looped)  # a list that holds itself ends


OWN_JUDGE = """
import threading


class Unprintable(Exception):
    def __str__(self):
        threading.Event().wait()  # forever
        return "never"


class Judge:
    async def complete(self, system, user):
        raise Unprintable()


def pytest_rubric_make_judge(config):
    return Judge()
"""


def test_an_own_judge_raising_what_does_not_print_is_an_error_not_a_hang(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    pytester.makeconftest(OWN_JUDGE)
    write("j.rubric.yaml", JUDGED)
    result = pytester.runpytest("--rubric-json=out.json", "--rubric-judge-timeout=5")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*judge Judge raised Unprintable: <unprintable Unprintable>*"])
    criteria = rubric_json()["results"][0]["criteria"]
    assert [c["verdict"] for c in criteria] == ["MET", "ERROR"]


# --- files from elsewhere are data -----------------------------------------------------------


def test_a_history_with_values_of_the_wrong_type_is_one_warning_and_those_rows_skipped(
    pytester: pytest.Pytester, team: Callable[..., None], capsys: pytest.CaptureFixture[str]
) -> None:
    team(support=PASSING)
    for _ in range(4):
        pytester.runpytest("--rubric-history=h.sqlite3").assert_outcomes(passed=2)
    db = sqlite3.connect(pytester.path / "h.sqlite3")
    with db:
        db.execute("UPDATE subjects SET correctness = 'high' WHERE run_id = 1")
        db.execute("UPDATE subjects SET ci_low = x'ff00' WHERE run_id = 2")
        db.execute("UPDATE runs SET started_at = x'00' WHERE id = 3")  # bytes, not text
        db.execute("UPDATE runs SET git_commit = x'c3' WHERE id = 2")
        db.execute("UPDATE subjects SET ci_high = 1e308 WHERE run_id = 3")  # not in [0, 1]
        db.execute("UPDATE runs SET started_at = 12345 WHERE id = 4")  # text, not a time
    db.close()

    result = pytester.runpytest("--rubric-history=h.sqlite3", "--rubric-html=r.html")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(["*--rubric-history *h.sqlite3: 6 rows with values of the wrong*"])
    assert "Correctness over the last" in (pytester.path / "r.html").read_text()

    capsys.readouterr()
    assert cli(["history", "h.sqlite3"]) == 0  # the command reads what it can
    out, err = capsys.readouterr()
    assert err.count("warning") == 1 and "6 rows with values of the wrong type" in err
    assert len(out.splitlines()) == 2  # runs 1 (without its subject) and 5


def test_a_cached_reply_larger_than_a_live_one_is_a_miss(tmp_path: Path) -> None:
    """A row above a live reply's cap (its reply or its parsed column; a target's recorded
    answer too, which had no cap when live) is a miss, never read into memory."""
    from pytest_rubric._llm.base import CallStats
    from pytest_rubric._llm.cache import CachedCalls, CacheFile
    from pytest_rubric._llm.http import MAX_REPLY_BYTES

    cache = CacheFile(tmp_path)
    calls = CachedCalls(cache, "use", stats=CallStats())
    keys = {}
    providers = {"big": "openai", "parsed": "openai", "small": "openai"}
    for name, provider in {**providers, "answer": "target", "answer trace": "target"}.items():
        key = calls.lookup({"call": name}, missing="").key
        assert key is not None
        cache.put(key, provider=provider, model="m", raw='{"verdict": "MET"}', parsed={})
        keys[name] = key
    big = '{"verdict": "MET", "reason": "' + "x" * MAX_REPLY_BYTES + '"}'
    with sqlite3.connect(cache.path) as connection:  # rows grown past the cap, as a copy could
        for name, column, value in (
            ("big", "raw", big),
            ("parsed", "parsed", json.dumps(["y" * MAX_REPLY_BYTES])),
            ("answer", "raw", big),
            ("answer trace", "parsed", json.dumps({"trace": {"metadata": big}})),
        ):
            connection.execute(
                f"UPDATE replies SET {column} = ? WHERE key = ?", (value, keys[name])
            )
    assert calls.stats is not None
    calls.stats.cache_misses = 0

    for name in ("big", "parsed", "answer", "answer trace"):
        assert not calls.lookup({"call": name}, missing="").cached, name  # a miss: asked again
    assert calls.lookup({"call": "small"}, missing="").cached
    assert calls.stats.cache_misses == 4
    with pytest.raises(LLMError, match="not recorded"):  # replay: a miss like any other
        CachedCalls(cache, "replay").lookup({"call": "answer"}, missing="not recorded")
    cache.close()


def test_a_reply_larger_than_the_cache_serves_is_never_stored(tmp_path: Path) -> None:
    """A target's answer of megabytes is not written, and the answer it replaces is dropped:
    neither would be served."""
    from pytest_rubric._llm.cache import CachedCalls, CacheFile
    from pytest_rubric._llm.http import MAX_REPLY_BYTES

    cache = CacheFile(tmp_path)
    calls = CachedCalls(cache, "use")
    key = calls.lookup({"call": "answer"}, missing="").key
    assert key is not None
    cache.put(key, provider="target", model="app:answer", raw="small", parsed={})
    assert calls.lookup({"call": "answer"}, missing="").text == "small"
    cache.put(
        key, provider="target", model="app:answer", raw="x" * (MAX_REPLY_BYTES + 1), parsed={}
    )
    assert not calls.lookup({"call": "answer"}, missing="").cached
    with sqlite3.connect(cache.path) as connection:
        assert connection.execute("SELECT count(*) FROM replies").fetchone() == (0,)
    assert cache.take_warning() is None  # not a failure: the answer is asked for again
    cache.close()


def test_a_response_cache_trace_nested_past_the_limit_cannot_be_read() -> None:
    """Read as a target's return is: an error naming it (a miss: the application is asked
    again under ``use``, the item an ERROR saying why under ``replay``), never no trace."""
    from pytest_rubric._load.traces import ShapeError, recorded_trace

    deep = '{"trace": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(ShapeError, match="nested more than 100 levels"):
        recorded_trace(deep)
    with pytest.raises(ShapeError, match="cannot be read"):
        recorded_trace('{"trace": {"x": ' + "9" * 5000 + "}}")


def test_a_healthbench_points_of_400_digits_is_a_located_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = Path(__file__).resolve().parents[1] / "data" / "healthbench_sample.jsonl"
    first = json.loads(data.read_text().splitlines()[0])
    first["rubrics"][0]["points"] = int("9" * 400)
    bad = tmp_path / "big.jsonl"
    bad.write_text(json.dumps(first) + "\n")
    code = cli(["import", "healthbench", str(bad), "--out", str(tmp_path / "evals")])
    assert code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "OverflowError" not in err
    assert "big.jsonl:1, case 'hb-0001-emergency', field 'rubrics[0].points': must be a" in err
    assert not (tmp_path / "evals").exists()


# --- the promptfoo importer is bounded in total ----------------------------------------------


def _promptfoo(tmp_path: Path, config: str) -> Path:
    folder = tmp_path / "pf"
    folder.mkdir(exist_ok=True)
    path = folder / "promptfooconfig.yaml"
    path.write_text(config, encoding="utf-8")
    return path


# The import's limits as documented (docs/development/reliability.md: 100,000 tests, 100,000
# cases, 256 MB of text). The tests below lower them, to prove each stops the import as it is
# spent at a tenth of the work: what they prove is the counting, not the number.
DOCUMENTED_BUDGET = {"MAX_CASES": 100_000, "MAX_TEXT": 256 * 2**20}
SMALL_BUDGET = {"MAX_CASES": 10_000, "MAX_TEXT": 32 * 2**20}


def test_the_import_budget_is_the_documented_one() -> None:
    from pytest_rubric.importers import promptfoo_files

    assert {name: getattr(promptfoo_files, name) for name in DOCUMENTED_BUDGET} == (
        DOCUMENTED_BUDGET
    )


@pytest.fixture
def small_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """The promptfoo import's budget at :data:`SMALL_BUDGET`."""
    from pytest_rubric.importers import promptfoo_files

    for name, value in SMALL_BUDGET.items():
        monkeypatch.setattr(promptfoo_files, name, value)


def _refused(path: Path) -> str:
    from pytest_rubric.importers._common import ImportFailed
    from pytest_rubric.importers.promptfoo import convert

    with pytest.raises(ImportFailed) as failed:
        convert([path])
    return str(failed.value)


# Each render is under the per-template cap (1,000,000 characters); 100 x 100 values make
# 10,000 combinations of the test, each asked with ten prompts: about 100 GB of prompts, which
# pass a 32 MB budget (SMALL_BUDGET) as they passed the documented 256 MB.
GROWING = (
    "prompts:\n"
    + "".join(
        f"  - '{i}{{% for i in range(99) %}}{{{{ big }}}}{{{{ a }}}}{{{{ b }}}}{{% endfor %}}'\n"
        for i in range(10)
    )
    + "tests:\n  - vars:\n      big: '"
    + "x" * 1000
    + "'\n      a: ["
    + ", ".join(f"a{i}" for i in range(100))
    + "]\n      b: ["
    + ", ".join(f"b{i}" for i in range(100))
    + "]\n    assert:\n      - {type: contains, value: x}\n"
)


def test_a_small_config_that_would_grow_to_gigabytes_stops_at_the_text_budget(
    tmp_path: Path, small_budget: None
) -> None:
    import tracemalloc

    assert len(GROWING) < 4_000
    path = _promptfoo(tmp_path, GROWING)
    tracemalloc.start()
    try:
        message = _refused(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "the import makes more than 32 MB of text" in message
    assert "promptfooconfig.yaml" in message
    assert peak < 128 * 2**20  # the budget and what one case holds, never the GBs


def test_an_import_past_its_cases_stops(tmp_path: Path, small_budget: None) -> None:
    values = ", ".join(f"v{i}" for i in range(30))
    # One test of 900 combinations, six times over (YAML aliases), asked with two prompts.
    test = f"  - &t {{vars: {{a: [{values}], b: [{values}]}}, assert: [{{type: contains, value: v}}]}}\n"
    path = _promptfoo(
        tmp_path, "prompts: ['{{a}} {{b}}', 'again {{a}}']\ntests:\n" + test + "  - *t\n" * 5
    )
    message = _refused(path)
    assert "the import makes more than 10,000 cases" in message


def test_a_glob_never_follows_a_symlink_nor_leaves_the_config_folder(tmp_path: Path) -> None:
    from pytest_rubric.importers.promptfoo_files import Tree, Unmappable

    path = _promptfoo(tmp_path, "prompts: [hi]\n")
    folder = path.parent
    (folder / "prompts" / "deep").mkdir(parents=True)
    (folder / "prompts" / "one.txt").write_text("one")
    (folder / "prompts" / "deep" / "two.txt").write_text("two")
    (folder / "prompts" / "loop").symlink_to(folder)  # a loop: ** would never end
    (folder / "prompts" / "root").symlink_to("/")  # out of the tree
    (folder / "prompts" / "link.txt").symlink_to(folder / "prompts" / "one.txt")
    (tmp_path / "secret.txt").write_text("outside")
    tree = Tree(path)
    found = tree.paths("file://**/*.txt")
    assert [p.relative_to(folder).as_posix() for p in found] == [
        "prompts/deep/two.txt",
        "prompts/one.txt",
    ]
    for outside in ("file://../*.txt", "file://../../**/*.txt", "file:///**/*.txt", "/etc/*"):
        with pytest.raises(Unmappable, match="outside the config's directory"):
            tree.paths(outside)
    with pytest.raises(Unmappable, match="symlink"):
        tree.paths("file://prompts/root/**/*.txt")


# --- lost workers and interrupted runs are visible -------------------------------------------

LOSING = """
import os


def fine(question):
    return "One day."


def crash(question):
    os._exit(3)


def interrupted(question):
    raise KeyboardInterrupt
"""


# pytest-rerunfailures runs the crashed item again, and reports an attempt only once it
# ends: the item's last attempt crashes before any report of it reached the controller.
@pytest.mark.parametrize("reruns", [[], ["--reruns=1"]], ids=["once", "reruns"])
def test_an_item_whose_worker_crashed_is_an_error_in_every_output(
    pytester: pytest.Pytester, write: Write, reruns: list[str]
) -> None:
    write("evals/targets.py", LOSING)
    write(
        "evals/e.rubric.yaml",
        """
        targets: {fine: "targets:fine", crash: "targets:crash"}
        cases:
          - id: horizon
            question: "What is the horizon?"
            criteria:
              - {id: day, type: any_of, any_of: ["one day"]}
        """,
    )
    # The controller in process: the worker that crashes is a process of its own, and xdist
    # starts another for what is left.
    result = pytester.runpytest(
        "-n",
        "1",
        "--rubric-dir=evals",
        "--rubric-json=out.json",
        "--rubric-csv=out.csv",
        "--rubric-history=h.sqlite3",
        "--junitxml=j.xml",
        *reruns,
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["ERROR evals/e.rubric.yaml::horizon?crash? - worker * crashed*"])
    (crashed,) = [
        c
        for c in ET.parse(pytester.path / "j.xml").iter("testcase")
        if "crash" in c.get("name", "") and c.find("error") is not None
    ]
    properties = {p.get("name"): p.get("value") for p in crashed.iter("property")}
    assert properties["rubric_passed"] == "false" and properties["rubric_subject"] == "crash"
    document = json.loads((pytester.path / "out.json").read_text())
    by = {r["subject"]: r for r in document["results"]}
    assert by["crash"]["passed"] is False
    assert [c["verdict"] for c in by["crash"]["criteria"]] == ["ERROR"]
    assert "worker running it crashed" in by["crash"]["criteria"][0]["reason"]
    totals = {row["subject"]: (row["passed"], row["total"]) for row in document["leaderboard"]}
    assert totals == {"fine": (1, 1), "crash": (0, 1)}
    assert document["run"]["complete"] is True  # the run went on after the crash
    csv = (pytester.path / "out.csv").read_text()
    assert "horizon[crash]" in csv and "ERROR" in csv
    with sqlite3.connect(pytester.path / "h.sqlite3") as db:
        rows = db.execute("SELECT nodeid, passed, errors FROM items ORDER BY nodeid").fetchall()
    db.close()
    assert rows == [
        ("evals/e.rubric.yaml::horizon[crash]", 0, 1),
        (
            "evals/e.rubric.yaml::horizon[fine]",
            1,
            0,
        ),
    ]


def test_an_interrupted_run_says_so_and_merge_refuses_it_unless_allowed(
    pytester: pytest.Pytester, write: Write, capsys: pytest.CaptureFixture[str]
) -> None:
    write("evals/targets.py", LOSING)
    suite = """
        target: "targets:{target}"
        cases:
          - id: horizon
            question: "What is the horizon?"
            criteria:
              - {{id: day, type: any_of, any_of: ["one day"]}}
        """
    write("evals/a.rubric.yaml", suite.format(target="fine"))
    done = pytester.runpytest("--rubric-dir=evals", "--rubric-json=whole.json")
    assert json.loads((pytester.path / "whole.json").read_text())["run"]["complete"] is True
    done.assert_outcomes(passed=1)

    write("evals/b.rubric.yaml", suite.format(target="interrupted"))
    stopped = pytester.runpytest(  # KeyboardInterrupt: Ctrl-C, without a signal to send
        "evals/b.rubric.yaml", "--rubric-json=b.json", no_reraise_ctrlc=True
    )
    assert stopped.ret == pytest.ExitCode.INTERRUPTED
    assert json.loads((pytester.path / "b.json").read_text())["run"]["complete"] is False

    capsys.readouterr()
    assert cli(["merge", "whole.json", "b.json"]) == 2
    err = capsys.readouterr().err
    assert "b.json: its run was interrupted (run.complete is false)" in err
    assert "--allow-incomplete" in err
    assert cli(["merge", "whole.json", "b.json", "--allow-incomplete", "--json", "m.json"]) == 0
    assert json.loads((pytester.path / "m.json").read_text())["run"]["complete"] is False


def test_a_run_ended_by_an_internal_error_is_not_complete(
    pytester: pytest.Pytester, write: Write
) -> None:
    """An internal error ends the run with items left unrun (xdist losing track of a crashed
    worker's file under --dist loadfile, say): its JSON is a part of a run, as a Ctrl-C's."""
    write("evals/targets.py", LOSING)
    write(
        "evals/i.rubric.yaml",
        """
        target: "targets:fine"
        cases:
          - {id: a, question: "?", criteria: [{id: c, type: any_of, any_of: ["one day"]}]}
          - {id: b, question: "?", criteria: [{id: c, type: any_of, any_of: ["one day"]}]}
        """,
    )
    pytester.makeconftest(
        "def pytest_runtest_logreport(report):\n"
        "    if report.when == 'call':\n"
        "        raise RuntimeError('a plugin broke')\n"
    )
    ended = pytester.runpytest("--rubric-dir=evals", "--rubric-json=i.json")
    assert ended.ret == pytest.ExitCode.INTERNAL_ERROR
    assert json.loads((pytester.path / "i.json").read_text())["run"]["complete"] is False


@pytest.mark.parametrize("mode", [["-p", "no:xdist"], ["-n", "2"]], ids=["no-xdist", "xdist-n2"])
def test_a_run_stopped_by_x_is_complete_in_every_mode(
    pytester: pytest.Pytester, write: Write, mode: list[str]
) -> None:
    """``-x`` is asked for, not a Ctrl-C: xdist stops such a run by raising an interrupt of its
    own, and the JSON said it was interrupted (``merge`` refused it) only under xdist."""
    write(
        "evals/x.rubric.yaml",
        """
        cases:
          - {id: a, response: "no", criteria: [{id: c, type: any_of, any_of: ["yes"]}]}
          - {id: b, response: "no", criteria: [{id: c, type: any_of, any_of: ["yes"]}]}
        """,
    )
    pytester.runpytest("--rubric-dir=evals", "-x", "--rubric-json=x.json", *mode)
    assert json.loads((pytester.path / "x.json").read_text())["run"]["complete"] is True


# --- batch files and polls --------------------------------------------------------------------


def test_a_batch_results_file_is_split_on_newlines_only() -> None:
    from pytest_rubric._llm.batch import _Wire

    odd = "a\u2028b\u0085c\x0cd\u2029e"  # each a line break to str.splitlines
    lines = [
        json.dumps({"custom_id": "1", "text": odd}, ensure_ascii=False),
        json.dumps({"custom_id": "2", "text": "plain"}),
    ]
    body = ("\n".join(lines) + "\r\n").encode()
    found = _Wire(None).lines(body)  # type: ignore[arg-type]
    assert found == [{"custom_id": "1", "text": odd}, {"custom_id": "2", "text": "plain"}]


@pytest.mark.parametrize("retry_after", [0.0, 0.001, 0.5])
def test_a_poll_retry_after_below_one_second_is_one_second(
    monkeypatch: pytest.MonkeyPatch, retry_after: float
) -> None:
    import asyncio

    from pytest_rubric._llm import batch
    from pytest_rubric._llm.batch import _Status

    polls: list[str] = []
    sleeps: list[float] = []

    class Wire:
        async def poll(self, batch_id: str) -> tuple[_Status, float | None]:
            polls.append(batch_id)
            return _Status(len(polls) == 5), retry_after

    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:  # counted, not waited
        sleeps.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(batch.asyncio, "sleep", sleep)

    async def wait() -> _Status | None:
        deadline = asyncio.get_running_loop().time() + 3600
        return await batch._wait(Wire(), "b1", deadline, first_poll=1.0, max_poll=30.0)  # type: ignore[arg-type]

    status = asyncio.run(wait())
    assert status is not None and status.ended
    assert len(polls) == 5
    assert sleeps == [batch.MIN_RETRY_AFTER] * 4 == [1.0] * 4


# --- CSV cells ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        " =1+1",
        "\u3000=HYPERLINK(1)",  # an ideographic space first
        "\u00a0@SUM(A1)",
        "\u200b=1+1",  # a zero-width space first
        "\uff1d1+1",  # full-width ＝
        "\uff0bcmd",  # ＋
        "\uff0d1+2",  # －
        "\uff20SUM(A1)",  # ＠
        "\ufe661+1",  # small ﹦
        "  -1+2",
        "+cmd|' /C calc'!A0",
    ],
)
def test_a_cell_whose_first_visible_character_starts_a_formula_is_prefixed(text: str) -> None:
    from pytest_rubric._render.csv import cell

    assert cell(text) == "'" + text


@pytest.mark.parametrize("text", ["-5", "+1.5e3", " -2.25 ", "-0.5", "plain", "a=b", "", "  "])
def test_a_number_or_plain_text_is_left_as_it_is(text: str) -> None:
    from pytest_rubric._render.csv import cell

    assert cell(text) == text


@given(st.text(st.sampled_from(" \u3000\u00a0\u200b\t"), max_size=3), st.text(max_size=8))
def test_no_formula_start_reaches_a_spreadsheet_unprefixed(spaces: str, rest: str) -> None:
    import unicodedata

    from pytest_rubric._render.csv import cell

    for start in "=+-@\uff1d\uff0b\uff0d\uff20":
        text = spaces + start + rest
        shown = cell(text)
        visible = shown.lstrip(" \u3000\u00a0\u200b")
        first = unicodedata.normalize("NFKC", visible[:1])
        assert shown.startswith("'") or first not in "=+-@" or _is_number(text)


# The number pattern cells were checked with before, quadratic on a run of digits that ends in
# no number ("-111...1x"): the reference the one-way pattern must agree with.
_OLD_NUMBER = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*")


@given(st.lists(st.sampled_from(["1", "12", ".", "-", "+", "e", "E", " ", "x", "\t"]), max_size=12))
def test_the_one_way_number_pattern_accepts_what_the_old_one_did(pieces: list[str]) -> None:
    from pytest_rubric._render.csv import _NUMBER

    text = "".join(pieces)
    assert (_NUMBER.fullmatch(text) is None) == (_OLD_NUMBER.fullmatch(text) is None)


# In a child process, as the outgoing boundary's shapes are (a regex holds the interpreter):
# the old pattern took many minutes on the first of these, the bound is generous.
_LINEAR_CELLS = """
from pytest_rubric._render.csv import cell

n = 1_000_000
shapes = ["-" + "1" * n + "x", "=" + "1" * n + "x", "-1." + "1" * n + "x", "-1e" + "1" * n + "x"]
shapes += [" " * n + "-1x", "-" + "1" * n, "+." + "1" * n + "x"]
print(sum(cell(text).startswith("'") for text in shapes), len(shapes))
"""


def test_a_megabyte_cell_of_digits_is_checked_in_linear_time() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _LINEAR_CELLS], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["6", "7"]  # all but the number "-111...1"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.strip().lstrip("+-")[:1].isdigit() or text.strip().lstrip("+-")[:1] == "."


# --- init on odd paths -------------------------------------------------------------------------


def _init(where: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = cli(["init", str(where)])
    err = capsys.readouterr().err
    return code, err


def test_init_where_evals_is_a_file_a_symlink_out_or_unwritable_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    cases = {
        "file": tmp_path / "file",
        "link": tmp_path / "link",
        "dir_is_a_file": tmp_path / "plain.txt",
        "proc": Path("/proc/no-such-project"),
    }
    (cases["file"]).mkdir()
    (cases["file"] / "evals").write_text("not a folder")
    (cases["link"]).mkdir()
    (cases["link"] / "evals").symlink_to(outside)
    cases["dir_is_a_file"].write_text("a file where the project goes")
    for name, where in cases.items():
        code, err = _init(where, capsys)
        assert code == 2, name
        assert err.count("\n") == 1 and err.startswith("pytest-rubric init: error: "), err
        assert "Traceback" not in err
    assert list(outside.iterdir()) == []  # nothing written through the link


def test_init_never_writes_through_a_symlinked_file_nor_reads_one_out_of_the_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "secret.py"
    secret.write_text("def answer(question):\n    return 'x'\n")
    project = tmp_path / "project"
    (project / "evals").mkdir(parents=True)
    (project / "evals" / "example.rubric.yaml").symlink_to(tmp_path / "elsewhere.yaml")
    (project / "evals" / "targets.py").symlink_to(secret)
    (project / "evals" / "example_targets.py").symlink_to("/dev/zero")
    code, err = _init(project, capsys)
    assert code == 0, err
    assert not (tmp_path / "elsewhere.yaml").exists()  # the dangling link was kept, not followed
    assert secret.read_text() == "def answer(question):\n    return 'x'\n"


def test_scenarios_that_multiply_configs_by_tests_stop_as_the_product_is_made(
    tmp_path: Path, small_budget: None
) -> None:
    # 120 configs x 120 tests through aliases: 14,400 tests from a few hundred bytes.
    config = (
        "prompts: [hi]\n"
        "configs: &c [" + ", ".join(["{vars: {x: a}}"] * 120) + "]\n"
        "tests: &t [" + ", ".join(["{assert: [{type: contains, value: a}]}"] * 120) + "]\n"
        "scenarios:\n  - {config: *c, tests: *t}\n"
    )
    message = _refused(_promptfoo(tmp_path, config))
    assert "more than 10,000 tests" in message


def test_a_fifo_as_an_output_is_refused_not_waited_on(
    pytester: pytest.Pytester, team: Callable[..., None]
) -> None:
    import os

    team(support=PASSING)
    os.mkfifo(pytester.path / "pipe")
    result = pytester.runpytest("--rubric-json=pipe", "--junitxml=pipe", "--rubric-csv=o.csv")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines_random(
        [
            "rubric: ERROR cannot write --rubric-json */pipe: a FIFO, *",
            "rubric: ERROR cannot write --junitxml */pipe: a FIFO, *",
        ]
    )
    assert (pytester.path / "o.csv").read_text().startswith("nodeid,")


def test_an_exception_group_with_a_member_that_does_not_print_is_unprintable() -> None:
    from pytest_rubric._guards.calls import UserCodeError, contained

    group = ExceptionGroup("two", [ValueError("fine"), _Unprintable()])
    kept = contained(group)
    assert isinstance(kept, UserCodeError) and kept.unprintable
    assert str(kept) == "two (2 sub-exceptions)"  # its own text still reads


def test_import_and_collect_name_an_out_folder_they_cannot_write_and_ask_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setattr(sys, "path", list(sys.path))  # collect puts evals/ on it
    config = _promptfoo(
        tmp_path, "prompts: [hi]\ntests:\n  - assert: [{type: contains, value: a}]\n"
    )
    (tmp_path / "afile").write_text("a file where --out goes")
    capsys.readouterr()
    code = cli(["import", "promptfoo", str(config), "--out", str(tmp_path / "afile")])
    assert code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "promptfooconfig.rubric.yaml: cannot be written: " in err

    evals = tmp_path / "evals"
    evals.mkdir()
    (evals / "r4_collected.py").write_text(
        "CALLS = []\n\ndef answer(question):\n    CALLS.append(1)\n    return 'x'\n"
    )
    (evals / "s.rubric.yaml").write_text(
        "target: r4_collected:answer\ncases:\n  - {id: q, question: hi, criteria: "
        "[{id: c, type: any_of, any_of: [x]}]}\n"
    )
    code = cli(
        [
            "collect",
            *("--rubric-dir", str(evals), "--target", "r4_collected:answer"),
            *("--out", "/proc/no/out"),
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("pytest-rubric collect: error: cannot write /proc/no/out/")
    assert err.count("\n") == 1
    sys.modules.pop("r4_collected", None)
