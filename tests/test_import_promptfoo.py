"""``python -m pytest_rubric import promptfoo``: mappings, exactness, and an end-to-end run."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rubric._loader import load_suite
from pytest_rubric._merge import main
from pytest_rubric.criteria.check import Answer
from pytest_rubric.criteria.regex import Regex
from pytest_rubric.criteria.registry import compile_check
from pytest_rubric.importers._common import ImportFailed
from pytest_rubric.importers.promptfoo import convert
from pytest_rubric.importers.promptfoo_match import (
    Unmappable,
    all_pattern,
    equals_pattern,
    icontains_pattern,
    js_regex,
    literal,
    starts_pattern,
)

CONFIG = Path(__file__).parent / "data" / "promptfooconfig.yaml"
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


def matches(pattern: str, text: str, engine: str = "re2") -> bool:
    check = compile_check(
        Regex(id="r", pattern=pattern, case_sensitive=True, normalize=False, engine=engine)
    )
    return check(Answer(text), None).verdict.name == "MET"


@settings(max_examples=300, deadline=None)
@given(value=TEXT.filter(bool), before=TEXT, after=TEXT, other=TEXT)
def test_contains_matches_exactly_what_includes_matches(
    value: str, before: str, after: str, other: str
) -> None:
    pattern = literal(value)
    assert matches(pattern, before + value + after)
    assert matches(pattern, other) is (value in other)
    assert matches(equals_pattern(value), other) is (other == value)
    assert matches(equals_pattern(value), value)
    assert matches(starts_pattern(value), other) is other.startswith(value)


@settings(max_examples=300, deadline=None)
@given(
    value=st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=8),
    other=st.text(st.sampled_from("aAiIkKsS \u0130\u212a\u017f\u00e9x.-"), max_size=12),
)
def test_icontains_matches_what_to_lower_case_includes(value: str, other: str) -> None:
    # Python's str.lower and JavaScript's toLowerCase agree on these characters.
    assert matches(icontains_pattern(value), other) is (value.lower() in other.lower())


@settings(max_examples=200, deadline=None)
@given(values=st.lists(TEXT.filter(bool), min_size=1, max_size=3), other=TEXT)
def test_contains_all_finds_every_value(values: list[str], other: str) -> None:
    assert matches(all_pattern(values), other, engine="python") is all(v in other for v in values)


@pytest.mark.parametrize(
    ("source", "text", "expected"),
    [
        (r"\d{3}-\d{4}", "call 555-1234", True),
        (r"^Hello.*world$", "Hello big world", True),
        (r"^Hello.*world$", "Hello\nworld", False),  # `.` stops at line ends in JavaScript
        (r"\s+x", "\u00a0x", True),  # JavaScript's \s includes NBSP
        (r"colou?r", "Color", False),  # no flags: case-sensitive
        (r"[^a]+b", "xyb", True),
    ],
)
def test_js_regex_translation(source: str, text: str, expected: bool) -> None:
    assert matches(js_regex(source), text) is expected


@pytest.mark.parametrize("source", ["a.b", ".{3}", "(?=x)", r"\1", "", "a(", "😀+"])
def test_js_regex_refuses_what_would_change_meaning(source: str) -> None:
    with pytest.raises(Unmappable):
        js_regex(source)


def test_icontains_refuses_non_ascii() -> None:
    with pytest.raises(Unmappable):
        icontains_pattern("Straße")


def run_import(config: str, out: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest_rubric", "import", "promptfoo", config, "--out", out]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, check=False)


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("prompts: [hi]\ntests: [{assert: [{$ref: '#/assertionTemplates/nope'}]}]\n", "$ref"),
        ("prompts: ['{{x}}']\ntests: [{assert: [{type: contains, value: a}]}]\n", "no var"),
        ("prompts: [hi]\ntests: {a: 1}\n", "`tests` must be"),
        ("prompts: [hi\n", "invalid YAML"),
        ("prompts: [hi]\ntests: [{assert: [{type: contains, weight: two, value: a}]}]\n", "weight"),
    ],
)
def test_bad_input_is_located_and_nothing_is_written(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = write_config(tmp_path, text)
    with pytest.raises(ImportFailed) as info:
        convert([path])
    rendered = info.value.render()
    assert expected in rendered and "promptfooconfig.yaml" in rendered
    # The command's main, in this process: test_bad_input_exits_2_from_the_command_line
    # runs the real command once.
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["import", "promptfoo", str(path), "--out", str(tmp_path / "out")])
    assert code == 2, err.getvalue()
    assert expected in err.getvalue()
    assert not (tmp_path / "out").exists()


def test_bad_input_exits_2_from_the_command_line(tmp_path: Path) -> None:
    path = write_config(tmp_path, "prompts: [hi\n")
    result = run_import(str(path), str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert "invalid YAML" in result.stderr and "promptfooconfig.yaml" in result.stderr
    assert not (tmp_path / "out").exists()


def test_the_written_suite_loads_and_lists_what_is_not_mapped(tmp_path: Path) -> None:
    output = convert([CONFIG])
    notes = "\n".join(output.notes)
    assert "(javascript)" in notes and "(levenshtein)" in notes
    assert "not mapped: " in notes and ":32:" in notes
    path = tmp_path / "promptfooconfig.rubric.yaml"
    from pytest_rubric.importers._common import write

    write(output, tmp_path)
    suite = load_suite(path)
    cases = {c.id: c for c in suite.suite.cases}
    assert cases["t1-refund-window"].min_score is None
    assert cases["t1-refund-window"].question == (
        "You are a support agent for Acme. Answer: How long do I have to return items?"
    )
    assert all(c.required for c in cases["t1-refund-window"].criteria)
    assert cases["t2-order-status-json"].min_score == 0.5
    assert "promptfoo:partial" in cases["t2-order-status-json"].tags


E2E_ANSWERS = {
    # promptfoo: every assertion passes -> PASS
    "t1-refund-window": "You have 30 days. Thanks for asking!",
    # promptfoo: is-json (2), regex (1), not-contains (1), javascript (1) pass: 5/5 -> PASS;
    # the written case, without javascript (listed, tagged promptfoo:partial): 4/4 -> PASS
    "t2-order-status-json": '{"status": "shipped"}',
    # promptfoo: equals (weight 0) fails -> the test FAILS although its score is 1
    "t3-greeting": "Hi! ",
}


def test_end_to_end_import_then_run(pytester: pytest.Pytester) -> None:
    shutil.copy(CONFIG, pytester.path / "promptfooconfig.yaml")
    result = run_import("promptfooconfig.yaml", "evals", cwd=pytester.path)
    assert result.returncode == 0, result.stderr
    assert "not mapped: promptfooconfig.yaml:32: test 2" in result.stdout
    answers = pytester.path / "answers"
    answers.mkdir()
    (answers / "bot.jsonl").write_text(
        "".join(json.dumps({"id": k, "response": v}) + "\n" for k, v in E2E_ANSWERS.items()),
        encoding="utf-8",
    )
    run = pytester.runpytest(
        "--rubric-dir",
        "evals",
        "--rubric-responses",
        "answers",
        "-p",
        "no:cacheprovider",
        "-rA",
    )
    out = run.stdout.str()
    assert re.search(r"PASSED .*t1-refund-window\[bot\]", out), out
    assert re.search(r"FAILED .*t3-greeting\[bot\]", out), out
    assert re.search(r"PASSED .*t2-order-status-json\[bot\]", out), out
