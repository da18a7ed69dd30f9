"""``python -m pytest_rubric import promptfoo``: real configs, promptfoo's semantics, listings.

promptfoo's behaviour is cited from its source (``src/...`` in promptfoo/promptfoo, the
files and commits named in ``tests/data/promptfoo/README.md``).
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
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rubric._cli.merge import main
from pytest_rubric._load.loader import load_suite
from pytest_rubric.criteria.check import Answer, CheckContext
from pytest_rubric.criteria.regex import Regex
from pytest_rubric.importers._common import Imported, ImportFailed, write
from pytest_rubric.importers.promptfoo import assertion_from_string, convert
from pytest_rubric.importers.promptfoo_assert import (
    all_pattern,
    js_regex,
    levenshtein_pattern,
    literal,
)
from pytest_rubric.importers.promptfoo_files import Unmappable
from tests.conftest import examples, lines_in_any_order

DATA = Path(__file__).resolve().parents[1] / "data" / "promptfoo"
CONFIGS = sorted(DATA.glob("*/promptfooconfig*.yaml"))
CONFIG = Path(__file__).resolve().parents[1] / "data" / "promptfooconfig.yaml"
# Text whose normalized form is itself: printable ASCII, regex metacharacters included,
# single spaces between words. promptfoo's checks and this plugin's agree on it exactly.
PLAIN = st.text(st.sampled_from("abcXYZ019 .^$*+?()[]{}|\\-#/'\"!,:"), min_size=1, max_size=12).map(
    lambda s: re.sub(r" +", " ", s).strip()
)


def matches(pattern: str, text: str, *, case_sensitive: bool = True, engine: str = "re2") -> bool:
    check = Regex(id="r", pattern=pattern, case_sensitive=case_sensitive, engine=engine).compile(
        CheckContext()
    )
    return check(Answer(text), None).verdict.name == "MET"


def run_import(config: str, out: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest_rubric", "import", "promptfoo", config, "--out", out]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, check=False)


def write_config(tmp_path: Path, text: str, name: str = "promptfooconfig.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def criteria_of(output: Imported) -> list[dict[str, Any]]:
    (suite,) = output.rubrics.values()
    return [c for case in suite["cases"] for c in case["criteria"]]


def one_criterion(tmp_path: Path, assertion: str) -> dict[str, Any]:
    path = write_config(tmp_path, f"prompts: [hi]\ntests:\n  - assert:\n      - {assertion}\n")
    (criterion,) = criteria_of(convert([path]))
    return criterion


# --- string checks: promptfoo's meaning, on answers normalization leaves alone ------------------


@settings(max_examples=examples(200), deadline=None)
@given(value=PLAIN.filter(bool), other=PLAIN)
def test_contains_equals_starts_ends_match_what_promptfoo_passes(value: str, other: str) -> None:
    """src/assertions/contains.ts handleContains (``outputString.includes``), equals.ts
    handleEquals (``===``), startsWith.ts handleStartsWith, endsWith.ts handleEndsWith."""
    pattern = literal(value)
    assert matches(pattern, other) is (value in other)
    assert matches(pattern, f"{other} {value} {other}".strip())
    assert matches(f"^{pattern}$", other) is (other == value)
    assert matches(f"^{pattern}", other) is other.startswith(value)
    assert matches(f"{pattern}$", other) is other.endswith(value)


@settings(max_examples=examples(200), deadline=None)
@given(value=PLAIN.filter(bool), other=PLAIN)
def test_icontains_matches_what_to_lower_case_includes(value: str, other: str) -> None:
    """contains.ts handleIContains: ``output.toLowerCase().includes(value.toLowerCase())``;
    here ``case_sensitive: false`` (ASCII lowercases the same in JavaScript and Python)."""
    assert matches(literal(value), other, case_sensitive=False) is (value.lower() in other.lower())


@settings(max_examples=examples(100), deadline=None)
@given(values=st.lists(PLAIN.filter(bool), min_size=1, max_size=3), other=PLAIN)
def test_contains_all_finds_every_value(values: list[str], other: str) -> None:
    """contains.ts handleContainsAll: every value ``includes``-d, overlaps allowed."""
    assert matches(all_pattern(values), other, engine="python") is all(v in other for v in values)


@settings(max_examples=examples(200), deadline=None)
@given(
    value=st.text(st.sampled_from("ab c"), min_size=1, max_size=6).filter(str.strip),
    other=st.text(st.sampled_from("ab c"), max_size=8),
    bound=st.integers(0, 3),
)
def test_levenshtein_bounds_the_edit_distance(value: str, other: str, bound: int) -> None:
    """levenshtein.ts handleLevenshtein: ``distance(output, value) <= (threshold || 5)``
    (fastest-levenshtein), on answers normalization leaves alone."""
    from rapidfuzz.distance import Levenshtein

    value, other = re.sub(r" +", " ", value).strip(), re.sub(r" +", " ", other).strip()
    pattern = levenshtein_pattern(value, bound)
    assert matches(pattern, other, engine="python") is (Levenshtein.distance(value, other) <= bound)


def test_icontains_is_a_case_insensitive_pattern_a_person_would_write(tmp_path: Path) -> None:
    """contains.ts handleIContains lowercases both sides: ``case_sensitive: false``, the value
    escaped, not a character class per letter."""
    assert one_criterion(tmp_path, "{type: icontains, value: FRANCE}") == {
        "id": "icontains-france",
        "type": "regex",
        "pattern": "FRANCE",
        "case_sensitive": False,
    }
    assert one_criterion(tmp_path, "{type: icontains, value: 'U.S. (east)'}")["pattern"] == (
        r"U\.S\. \(east\)"
    )


@pytest.mark.parametrize(
    ("assertion", "expected"),
    [
        ("{type: contains, value: 30 days}", {"pattern": "30 days", "case_sensitive": True}),
        ("{type: starts-with, value: 'Yes,'}", {"pattern": "^Yes,", "case_sensitive": True}),
        ("{type: ends-with, value: '.'}", {"pattern": r"\.$", "case_sensitive": True}),
        ("{type: equals, value: Hi!}", {"pattern": "^Hi!$", "case_sensitive": True}),
        (
            "{type: icontains-any, value: [thanks, thank you]}",
            {"pattern": "thanks|thank you", "case_sensitive": False},
        ),
        (
            "{type: contains-any, value: 'a,\"b, c\"'}",  # contains.ts: quoted items keep commas
            {"pattern": "a|b, c", "case_sensitive": True},
        ),
        (
            "{type: icontains-all, value: 'Paris, Lyon'}",
            {"pattern": "(?=.*Paris)(?=.*Lyon)", "case_sensitive": False, "engine": "python"},
        ),
        (
            "{type: not-contains, value: As an AI}",
            {"pattern": "As an AI", "case_sensitive": True, "invert": True},
        ),
        (
            "{type: levenshtein, value: Hi there, threshold: 2}",
            {"pattern": "^(?:Hi there){e<=2}$", "engine": "python"},
        ),
        ("{type: regex, value: '\\d{3}-\\d{4}'}", {"pattern": r"\d{3}-\d{4}"}),
        ("{type: regex, value: '(?<=\\$)\\d+'}", {"pattern": r"(?<=\$)\d+", "engine": "python"}),
    ],
)
def test_string_checks_read_like_a_person_wrote_them(
    tmp_path: Path, assertion: str, expected: dict[str, Any]
) -> None:
    criterion = one_criterion(tmp_path, assertion)
    assert criterion["type"] == "regex"
    assert {k: criterion[k] for k in expected} == expected


def test_what_two_prompts_share_is_written_out_in_each_never_as_an_alias(tmp_path: Path) -> None:
    """Two prompts make two cases of one test, which share its assertions' objects: a person
    writes the schema twice, not ``&id001`` and ``*id001``."""
    config = write_config(
        tmp_path,
        """
        prompts: ["Q1 {{q}}", "Q2 {{q}}"]
        tests:
          - vars: {q: status}
            assert:
              - {type: is-json, value: {type: object, required: [status]}}
        """,
    )
    out = tmp_path / "out"
    assert main(["import", "promptfoo", str(config), "--out", str(out)]) == 0
    (written,) = out.glob("*.rubric.yaml")
    text = written.read_text(encoding="utf-8")
    assert "&id" not in text and "*id" not in text
    assert text.count("required:") == 2


def test_not_forms_invert_the_verdict(tmp_path: Path) -> None:
    """assertions/index.ts runAssertion: ``inverse = type.startsWith('not-')``, and each
    handler passes on ``check !== inverse``."""
    criterion = one_criterion(tmp_path, "{type: not-icontains, value: sorry}")
    check = Regex.model_validate(criterion).compile(CheckContext())
    assert check(Answer("Sure, here it is."), None).verdict.name == "MET"
    assert check(Answer("SORRY, I cannot."), None).verdict.name == "UNMET"


def test_starts_with_does_not_trim_in_promptfoo_but_normalization_does(tmp_path: Path) -> None:
    """startsWith.ts handleStartsWith: ``outputString.startsWith(value)``, no trimming, so
    promptfoo fails ``starts-with: Sure`` on "  Sure". This plugin matches the normalized
    answer, whose leading whitespace is gone: the one place the two part (the promptfoo guide,
    docs/guides/import-promptfoo.md, says so)."""
    criterion = one_criterion(tmp_path, "{type: starts-with, value: Sure}")
    check = Regex.model_validate(criterion).compile(CheckContext())
    assert check(Answer("Sure, here it is"), None).verdict.name == "MET"
    assert check(Answer("  Sure, here it is"), None).verdict.name == "MET"  # promptfoo: fail
    assert check(Answer("I am sure"), None).verdict.name == "UNMET"


def test_equals_on_an_object_compares_parsed_json_deeply(tmp_path: Path) -> None:
    """equals.ts handleEquals: an object value is ``util.isDeepStrictEqual`` to
    ``JSON.parse(output)`` (key order aside); a string value is ``===``."""
    criterion = one_criterion(tmp_path, "{type: equals, value: {success: true, result: done}}")
    assert criterion == {
        "id": "equals",
        "type": "json",
        "fenced": False,
        "schema": {"const": {"success": True, "result": "done"}},
    }
    from pytest_rubric.criteria.json import Json

    check = Json.model_validate(criterion).compile(CheckContext())
    assert check(Answer('{"result": "done", "success": true}'), None).verdict.name == "MET"
    assert check(Answer('{"result": "done", "success": 1}'), None).verdict.name == "UNMET"
    assert check(
        Answer('```json\n{"result": "done", "success": true}\n```'), None
    ).verdict.name == (
        "UNMET"  # JSON.parse of the whole output fails on a fence
    )


def test_is_json_with_a_schema_keeps_ajvs_draft_where_it_differs(tmp_path: Path) -> None:
    """json.ts handleIsJson: ``JSON.parse`` of the whole output, then ajv (draft 7 by
    default): a tuple ``items`` list means per-position schemas there, not in 2020-12."""
    plain = one_criterion(tmp_path, "{type: is-json, value: {type: object, required: [a]}}")
    assert plain == {
        "id": "is-json",
        "type": "json",
        "fenced": False,
        "schema": {"type": "object", "required": ["a"]},
    }
    tuple_items = one_criterion(tmp_path, "{type: is-json, value: {items: [{type: string}]}}")
    assert tuple_items["schema"]["$schema"] == "http://json-schema.org/draft-07/schema#"


@pytest.mark.hostile
def test_is_json_schema_text_is_read_within_the_alias_limit(tmp_path: Path) -> None:
    """A schema given as text is YAML read by the loader's limits: nine levels of nine aliases
    (387 million nodes once walked) are refused and named, and the import goes on."""
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    bomb = json.dumps("\n".join(levels))
    path = write_config(
        tmp_path,
        f"prompts: [hi]\ntests:\n  - assert:\n      - type: is-json\n        value: {bomb}\n",
    )
    notes = convert([path]).notes
    assert any("is-json" in n and "aliases would expand" in n for n in notes), notes


@pytest.mark.parametrize(
    ("source", "text", "expected"),
    [
        (r"\d{3}-\d{4}", "call 555-1234", True),
        (r"^Hello.*world$", "Hello big world", True),
        (r"colou?r", "Color", False),  # regex.ts: `new RegExp(value)`, no flags
        (r"\u00e9t\u00e9", "un été", True),
        (r"(\w)\1", "aa", True),  # a backreference runs on engine: python
    ],
)
def test_js_regex_keeps_its_meaning(source: str, text: str, expected: bool) -> None:
    pattern, engine = js_regex(source)
    assert matches(pattern, text, engine=engine) is expected


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("", "empty"),
        ("[^]", "empty class"),
        (r"a\nb", "line breaks"),
        (r"\cJ", "control escape"),
        ("a(", "does not compile"),
    ],
)
def test_js_regex_refuses_what_would_change_meaning(source: str, why: str) -> None:
    with pytest.raises(Unmappable, match=why):
        js_regex(source)


def test_weights_and_threshold_score_as_promptfoo_does(pytester: pytest.Pytester) -> None:
    """assertionsResult.ts testResult: score = sum(score x weight) / sum(weight); with a
    ``threshold`` the test passes when score >= threshold whatever single assertions did;
    without one, when every assertion passes. index.ts runAssertion: a weight-0 assertion
    always passes (a metric only)."""
    (pytester.path / "promptfooconfig.yaml").write_text(
        """\
prompts: ['Answer: {{q}}']
tests:
  - description: threshold
    vars: {q: capital of France}
    threshold: 0.7
    assert:
      - {type: contains, value: Paris, weight: 3}
      - {type: contains, value: France, weight: 1}
  - description: all must pass
    vars: {q: capital of Italy}
    assert:
      - {type: contains, value: Rome}
      - {type: contains, value: Italy, weight: 0}
""",
        encoding="utf-8",
    )
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["import", "promptfoo", "promptfooconfig.yaml", "--out", "evals"]) == 0
    suite = yaml.safe_load((pytester.path / "evals" / "promptfooconfig.rubric.yaml").read_text())
    assert suite["min_score"] == 1.0
    assert suite["cases"][0]["min_score"] == 0.7
    answers = {
        "t1-threshold": "Paris.",  # 3 / 4 = 0.75 >= 0.7: passes though `France` is missing
        "t2-all-must-pass": "Rome.",  # `Italy` has weight 0: it cannot fail the test
    }
    (pytester.path / "answers").mkdir()
    (pytester.path / "answers" / "bot.jsonl").write_text(
        "".join(json.dumps({"id": k, "response": v}) + "\n" for k, v in answers.items())
    )
    result = pytester.runpytest("--rubric-dir", "evals", "--rubric-responses", "answers")
    result.assert_outcomes(passed=2)


# --- where values come from -----------------------------------------------------------------------


def test_a_file_value_is_read_never_taken_as_text(tmp_path: Path) -> None:
    """assertions/utils.ts processFileReference: a ``.txt`` value is the file's text, trimmed
    (``not-contains: file://banned.txt`` once became the literal "file://banned.txt")."""
    (tmp_path / "banned.txt").write_text("As an AI language model\n", encoding="utf-8")
    criterion = one_criterion(tmp_path, "{type: not-contains, value: 'file://banned.txt'}")
    assert criterion["pattern"] == "As an AI language model"
    assert criterion["invert"] is True


@pytest.mark.parametrize(
    ("ref", "why"),
    [
        ("file://banned.txt", "file://banned.txt: no such file"),
        ("file://../secret.txt", "outside the config's directory"),
        ("file://link.txt", "outside the config's directory"),  # a symlink to ../secret.txt
        ("file:///etc/hostname", "outside the config's directory"),
    ],
)
def test_a_file_value_that_cannot_be_read_is_listed(tmp_path: Path, ref: str, why: str) -> None:
    root = tmp_path / "config"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("secret", encoding="utf-8")
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    path = write_config(
        root,
        f"prompts: [hi]\ntests:\n  - assert:\n      - {{type: not-contains, value: '{ref}'}}\n"
        "      - {type: contains, value: hello}\n",
    )
    output = convert([path])
    (line,) = [n for n in output.notes if n.startswith("not mapped: ")]
    assert line.startswith(f"not mapped: {path}:4: test 1, assert[0] (not-contains): ")
    assert why in line
    assert [c["pattern"] for c in criteria_of(output)] == ["hello"]  # nothing taken as text


def test_prompt_and_test_files_and_their_shapes(tmp_path: Path) -> None:
    """src/prompts/processors: a .txt file split on ``---``, .json and .yaml chats, a .jsonl
    line each; testCaseReader.ts: tests from .csv, .yaml and .jsonl, globs; evaluator.ts
    generateVarCombinations: a list var makes one test per value."""
    (tmp_path / "prompts.txt").write_text("Say {{word}}\n---\nShout {{word}}\n")
    (tmp_path / "chat.json").write_text(
        '[{"role": "system", "content": "Be brief"}, {"role": "user", "content": "Say {{word}}"}]'
    )
    (tmp_path / "chat.yaml").write_text("- role: user\n  content: 'Whisper {{word}}'\n")
    (tmp_path / "one.jsonl").write_text('"Sing {{word}}"\n')
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "a.yaml").write_text(
        "- vars: {word: yes}\n  assert: [{type: icontains, value: yes}]\n"
    )
    (tmp_path / "tests" / "b.jsonl").write_text(
        '{"vars": {"word": "no"}, "assert": [{"type": "icontains", "value": "no"}]}\n'
    )
    (tmp_path / "rows.csv").write_text('word,__expected\nmaybe,"icontains: maybe"\n')
    path = write_config(
        tmp_path,
        """\
prompts:
  - file://prompts.txt
  - {id: file://chat.json, label: chat}
  - file://chat.yaml
  - one.jsonl
tests:
  - file://tests/*
  - file://rows.csv
  - vars: {word: [up, down]}
    assert: [{type: icontains-any, value: [up, down]}]
""",
    )
    (suite,) = convert([path]).rubrics.values()
    cases = {c["id"]: c for c in suite["cases"]}
    # 5 prompts x (3 tests from files + 1 test with 2 values) = 25 cases
    assert len(cases) == 25
    assert cases["t1-p1"]["question"] == "Say yes"  # YAML 1.2: `yes` is text, as in js-yaml
    assert cases["t1-p2"]["question"] == "Shout yes"
    assert cases["t2-p3"]["messages"] == [
        {"role": "system", "content": "Be brief"},
        {"role": "user", "content": "Say no"},
    ]
    assert cases["t3-p4"]["messages"] == [{"role": "user", "content": "Whisper maybe"}]
    assert cases["t3-p5"]["question"] == '"Sing maybe"'  # a JSON string prompt stays JSON
    assert cases["t4-v2-p1"]["question"] == "Say down"
    assert cases["t2-p3"]["metadata"]["prompt"] == "chat: chat.json"


def test_csv_conventions(tmp_path: Path) -> None:
    """src/csv.ts testCaseFromCsvRow and assertionFromString: ``__expected``, ``__expected1..N``
    hold assertions (``type: value``, ``grade:``, ``fn:``, plain text meaning equals);
    ``__description``, ``__threshold``, ``__metadata:key`` and ``__prefix`` are settings;
    the rest are vars."""
    assert assertion_from_string("contains: x") == {"type": "contains", "value": "x"}
    assert assertion_from_string("icontains:Y") == {"type": "icontains", "value": "Y"}
    assert assertion_from_string("Paris") == {"type": "equals", "value": "Paris"}
    assert assertion_from_string("not-starts-with: Sure") == {
        "type": "not-starts-with",
        "value": "Sure",
        "threshold": 0.75,
    }
    assert assertion_from_string("grade: is polite") == {
        "type": "llm-rubric",
        "value": " is polite",
    }
    assert assertion_from_string("fn: output.length < 9")["type"] == "javascript"
    assert assertion_from_string("contains-any: a, b") == {
        "type": "contains-any",
        "value": ["a", "b"],
    }
    (tmp_path / "tests.csv").write_text(
        "question,__expected1,__expected2,__description,__threshold,__metadata:area,__prefix\n"
        'capital of France,contains: Paris,"fn: output.length < 9",France,0.5,geo,Q: \n'
        "capital of Spain,Madrid,,,,,\n",
        encoding="utf-8",
    )
    path = write_config(tmp_path, "prompts: ['{{question}}']\ntests: file://tests.csv\n")
    output = convert([path])
    (suite,) = output.rubrics.values()
    first, second = suite["cases"]
    assert first["id"] == "t1-france"
    assert first["question"] == "Q: capital of France"
    assert first["min_score"] == 0.5
    assert first["metadata"] == {"area": "geo", "description": "France"}
    assert first["tags"] == ["promptfoo:partial"]
    assert [c["pattern"] for c in first["criteria"]] == ["Paris"]
    assert second["criteria"] == [
        {"id": "equals-madrid", "type": "regex", "pattern": "^Madrid$", "case_sensitive": True}
    ]
    assert any(
        n.startswith("not mapped: ")
        and "tests.csv:2: test 1 ('France'), assert[1] (javascript)" in n
        for n in output.notes
    )


@pytest.mark.parametrize(
    "column",
    [
        "__config:foo:threshold",  # once int('foo'): a traceback, and no listing
        "__config:__expected1_0:threshold",  # Python's int() reads 10; promptfoo's \d+ does not
        "__config:__expected1:weight",  # promptfoo reads only threshold there
    ],
)
def test_a_csv_config_column_promptfoo_refuses_is_listed_with_its_column(
    tmp_path: Path, column: str
) -> None:
    """src/csv.ts parseConfigColumn: a ``__config:TARGET:KEY`` column whose TARGET is not
    ``__expected`` or ``__expected<N>``, or whose KEY is not ``threshold``, is an error; one
    that is not two parts is ignored. The file is listed, and the rest of the config
    written."""
    (tmp_path / "tests.csv").write_text(f"q,__expected,{column}\nhi,contains: a,0.5\n")
    (tmp_path / "ok.csv").write_text(
        "q,__expected1,__expected2,__config:oops,__config:__expected02:threshold\n"
        "ho,contains: b,levenshtein: ho,0.5,2\n"
    )
    path = write_config(
        tmp_path, "prompts: ['{{q}}']\ntests:\n  - file://tests.csv\n  - file://ok.csv\n"
    )
    output = convert([path])
    (suite,) = output.rubrics.values()
    (case,) = suite["cases"]  # `__config:oops` ignored; parseInt reads `02` as 2
    assert case["question"] == "ho" and case["criteria"][1]["pattern"] == "^(?:ho){e<=2}$"
    notes = "\n".join(output.notes)
    assert (
        f"not mapped: {path}:3: tests from file://tests.csv: {tmp_path / 'tests.csv'}:1, "
        f"column 3: promptfoo refuses the column {column!r}; write __config:__expected:threshold "
        "or __config:__expectedN:threshold" in notes
    )


# --- listing, never dropping -------------------------------------------------------------------------


def test_a_test_with_nothing_mapped_is_listed_and_the_rest_written(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """\
prompts: ['Q: {{q}}', 'Question: {{q}}']
tests:
  - vars: {q: one}
    assert:
      - {type: latency, threshold: 300}
      - {type: cost, threshold: 0.01}
  - vars: {q: two}
    assert:
      - {type: starts-with, value: Two}
      - {type: similar, value: two, threshold: 0.8}
      - {type: javascript, value: output.length < 9}
      - {type: python, value: len(output) < 9}
      - {type: webhook, value: 'https://example.com/grade'}
""",
    )
    output = convert([path])
    (suite,) = output.rubrics.values()
    assert [c["id"] for c in suite["cases"]] == ["t2-p1", "t2-p2"]  # each prompt x test
    assert suite["cases"][0]["tags"] == ["promptfoo:partial"]
    notes = "\n".join(output.notes)
    for line, test, index, kind in [
        (5, 1, 0, "latency"),
        (6, 1, 1, "cost"),
        (10, 2, 1, "similar"),
        (11, 2, 2, "javascript"),
        (12, 2, 3, "python"),
        (13, 2, 4, "webhook"),
    ]:
        assert f"not mapped: {path}:{line}: test {test}, assert[{index}] ({kind}): " in notes
    assert f"not mapped: {path}:3: test 1: no assertion could be mapped" in notes
    assert f"{path}: 1 of 2 tests written as 2 cases (2 prompts); 1 listed above" in notes


def test_a_test_left_out_for_an_option_still_names_its_unmappable_assertions(
    tmp_path: Path,
) -> None:
    """Every assertion it cannot grade is listed by file, line, test and type. A
    test left out for its `transform` never named its `similar`, so removing the
    transform would not have been enough, and nothing said so."""
    path = write_config(
        tmp_path,
        """\
prompts: ['Q: {{q}}']
tests:
  - vars: {q: one}
    options: {transform: output.trim()}
    assert:
      - {type: contains, value: one}
      - {type: similar, value: one, threshold: 0.8}
      - {type: latency, threshold: 300}
  - vars: {q: two}
    assert:
      - {type: contains, value: two}
""",
    )
    output = convert([path])
    notes = "\n".join(output.notes)
    assert f"not mapped: {path}:3: test 1: options.transform transforms the output" in notes
    assert f"not mapped: {path}:7: test 1, assert[1] (similar): " in notes
    assert f"not mapped: {path}:8: test 1, assert[2] (latency): " in notes
    assert "assert[0] (contains)" not in notes
    assert f"{path}: 1 of 2 tests written as 1 cases (1 prompt); 1 listed above" in notes


def test_the_command_writes_what_maps_and_prints_what_does_not(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        "prompts: [hi]\ntests:\n  - assert: [{type: javascript, value: 'true'}]\n"
        "  - assert: [{type: contains, value: hello}]\n",
    )
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(["import", "promptfoo", str(path), "--out", str(tmp_path / "out")])
    assert code == 0, err.getvalue()
    assert f"not mapped: {path}:3: test 1, assert[0] (javascript)" in out.getvalue()
    assert (tmp_path / "out" / "promptfooconfig.rubric.yaml").is_file()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("prompts: [hi]\ntests: [{assert: [{$ref: '#/assertionTemplates/nope'}]}]\n", "$ref"),
        ("prompts: [hi]\ntests: {a: 1}\n", "`tests` must be"),
        ("prompts: [hi\n", "invalid YAML"),
        ("prompts: [hi]\ntests: [{assert: [{type: contains, weight: two, value: a}]}]\n", "weight"),
        ("tests: [{assert: [{type: contains, value: a}]}]\n", "no `prompts`"),
        (  # a value YAML cannot make: refused with its line, as a rubric file's is
            "prompts: [hi]\ntests: [{vars: {x: 2001-02-30}, assert: [{type: contains, value: a}]}]\n",
            "promptfooconfig.yaml:2: cannot read the value 2001-02-30",
        ),
        (  # a key given twice: the problem a rubric file's has, with both lines
            "prompts: [hi]\ntests:\n  - vars: {x: 1}\n    vars: {x: 2}\n",
            "promptfooconfig.yaml:4: the key `vars` is given twice in one mapping (lines 3 and 4)",
        ),
    ],
)
def test_bad_input_is_located_and_nothing_is_written(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = write_config(tmp_path, text)
    with pytest.raises(ImportFailed) as info:
        convert([path])
    rendered = str(info.value)
    assert expected in rendered and "promptfooconfig.yaml" in rendered
    # The command's main, in this process: test_bad_input_exits_2_from_the_command_line
    # runs the real command once.
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["import", "promptfoo", str(path), "--out", str(tmp_path / "out")])
    assert code == 2, err.getvalue()
    assert expected in err.getvalue()
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        (
            "tests.yaml",
            "- vars: {q: a}\n  assert: [{type: contains, value: a}]\n"
            "- vars: {q: b}\n  assert: [{type: contains, value: b, weight: two}]\n",
            3,
        ),
        (
            "tests.jsonl",
            '{"vars": {"q": "a"}, "assert": [{"type": "contains", "value": "a"}]}\n\n'
            '{"assert": [{"type": "contains", "value": "b", "weight": "two"}]}\n',
            3,
        ),
    ],
)
def test_a_bad_weight_in_a_test_file_names_that_file_and_line(
    tmp_path: Path, name: str, text: str, line: int
) -> None:
    """Once located at the config's line 1, which holds no weight."""
    (tmp_path / name).write_text(text)
    path = write_config(tmp_path, f"prompts: ['{{{{q}}}}']\ntests: file://{name}\n")
    with pytest.raises(ImportFailed) as info:
        convert([path])
    (problem,) = info.value.problems
    assert problem.render() == (
        f"{tmp_path / name}:{line}, field 'weight': test 2, assert[0]: `weight` must be a "
        "number, got 'two'"
    )


def test_a_default_test_file_is_read_as_a_test_file(tmp_path: Path) -> None:
    """util/config/load.ts dereferences the config's `$ref`s as it reads it; a
    ``defaultTest: file://`` is loaded later (evaluator.ts), so its `$ref` is not resolved
    and its problems are in that file: once all were put on the config's `defaultTest:`
    line, and its `$ref` resolved against the config's templates."""
    (tmp_path / "default.yaml").write_text(
        "assert:\n  - {type: contains, value: x, weight: three}\n"
        "  - {$ref: '#/assertionTemplates/polite'}\n"
    )
    path = write_config(
        tmp_path,
        "prompts: [hi]\nassertionTemplates:\n  polite: {type: icontains, value: please}\n"
        "defaultTest: file://default.yaml\ntests:\n  - assert: [{type: contains, value: a}]\n",
    )
    with pytest.raises(ImportFailed) as info:
        convert([path])
    (problem,) = info.value.problems
    assert problem.render() == (
        f"{tmp_path / 'default.yaml'}:1, field 'weight': test 1, defaultTest.assert[0]: "
        "`weight` must be a number, got 'three'"
    )
    (tmp_path / "default.yaml").write_text("assert: [{$ref: '#/assertionTemplates/polite'}]\n")
    notes = "\n".join(convert([path]).notes)
    assert (
        f"not mapped: {tmp_path / 'default.yaml'}:1: defaultTest.assert[0] (?), in every test: "
        "$ref '#/assertionTemplates/polite' in a test file is not resolved" in notes
    )


def test_bad_input_exits_2_from_the_command_line(tmp_path: Path) -> None:
    path = write_config(tmp_path, "prompts: [hi\n")
    result = run_import(str(path), str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert "invalid YAML" in result.stderr and "promptfooconfig.yaml" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_var_no_test_sets_renders_empty_as_nunjucks_does(tmp_path: Path) -> None:
    path = write_config(
        tmp_path, "prompts: ['Hi {{name}}!']\ntests: [{assert: [{type: contains, value: a}]}]\n"
    )
    output = convert([path])
    (suite,) = output.rubrics.values()
    assert suite["cases"][0]["question"] == "Hi !"
    assert any("uses {{ name }}, which no var sets" in n for n in output.notes)


def test_the_worked_example_of_the_readme(tmp_path: Path) -> None:
    output = convert([CONFIG])
    notes = "\n".join(output.notes)
    assert "(javascript)" in notes and "Order status JSON" in notes
    write(output, tmp_path)
    suite = load_suite(tmp_path / "promptfooconfig.rubric.yaml").suite
    cases = {c.id: c for c in suite.cases}
    assert cases["t1-refund-window"].question == (
        "You are a support agent for Acme. Answer: How long do I have to return items?"
    )
    assert cases["t2-order-status-json"].min_score == 0.5
    assert "promptfoo:partial" in cases["t2-order-status-json"].tags
    assert [c.id for c in cases["t3-greeting"].criteria] == [
        "not-contains-as-an-ai",
        "levenshtein-hi",
        "llm-rubric-greets-the-customer",
        "equals-hi",
    ]


# --- real configs from promptfoo's examples ----------------------------------------------------------

# (tests, tests written, cases written) for each real config, as imported today.
MEASURED = {
    "assertion-scoring-override/promptfooconfig.yaml": (3, 0, 0),
    "assistant-cli/promptfooconfig.yaml": (10, 0, 0),
    "claude-vs-gpt/promptfooconfig.yaml": (15, 14, 14),
    "config-multiple-translations/promptfooconfig-scenarios.yaml": (9, 0, 0),
    "config-multiple-translations/promptfooconfig.yaml": (1, 1, 50),
    "config-prompts-per-model/promptfooconfig.yaml": (16, 0, 0),
    "config-separate-test-configs/promptfooconfig.yaml": (9, 0, 0),
    "csv-metadata/promptfooconfig.yaml": (3, 3, 3),
    "custom-grading-prompt/promptfooconfig.yaml": (1, 0, 0),
    "eval-custom-grader-csv/promptfooconfig.yaml": (4, 0, 0),
    "eval-customer-support-rubric/promptfooconfig.yaml": (8, 8, 8),
    "eval-self-grading/promptfooconfig.yaml": (2, 2, 4),
    "eval-summarization/promptfooconfig.yaml": (1, 1, 2),
    "french-greeting-test/promptfooconfig.yaml": (1, 1, 1),
    "getting-started/promptfooconfig.yaml": (2, 2, 4),
    "google-sheets/promptfooconfig.yaml": (0, 0, 0),
    "gpt-4o-vs-4o-mini/promptfooconfig.yaml": (15, 3, 3),
    "json-output/promptfooconfig.yaml": (2, 1, 1),
    "jsonl-test-cases/promptfooconfig.yaml": (2, 2, 2),
    "mistral-llama-comparison/promptfooconfig.yaml": (8, 4, 4),
    "nunjucks-custom-filters/promptfooconfig.yaml": (2, 0, 0),
    "python-assert/promptfooconfig-inline.yaml": (2, 0, 0),
    "simple-csv/promptfooconfig.yaml": (4, 0, 0),
    "simple-test/promptfooconfig.yaml": (5, 4, 8),
}
_SUMMARY = re.compile(
    r": (\d+) of (\d+) tests written as (\d+) cases \(\d+ prompts?\); (\d+) listed"
)


def test_the_real_configs_are_all_here() -> None:
    assert sorted(str(p.relative_to(DATA)) for p in CONFIGS) == sorted(MEASURED)
    assert (DATA / "LICENSE").read_text().startswith("Copyright (c) Promptfoo")


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: str(p.relative_to(DATA)))
def test_every_test_of_a_real_config_is_written_or_listed(config: Path, tmp_path: Path) -> None:
    output = convert([config])
    (summary,) = [m for n in output.notes if (m := _SUMMARY.search(n))]
    written, tests, cases, listed = map(int, summary.groups())
    assert written + listed == tests  # none dropped
    assert (tests, written, cases) == MEASURED[str(config.relative_to(DATA))]
    test_lines = [n for n in output.notes if n.startswith("not mapped: ") and "not written" in n]
    assert len(test_lines) == listed
    for line in (n for n in output.notes if n.startswith("not mapped: ")):
        assert re.match(r"not mapped: \S+?(:\d+)?: ", line), line  # a file (and a line)
    write(output, tmp_path)
    for path in tmp_path.glob("*.rubric.yaml"):
        load_suite(path)


# A judge that finds every requirement met unless the answer says it should not:
# deterministic, offline, and enough to see judged criteria grade.
MARKER = "[fails the rubric]"
JUDGE = f"""
class MarkerJudge:
    name = "marker"

    async def complete(self, system, user):
        verdict = "UNMET" if {MARKER!r} in user else "MET"
        return '{{"reason": "marker", "verdict": "%s"}}' % verdict


def pytest_rubric_make_judge(config):
    return MarkerJudge()
"""

# The answer each case gets, and whether promptfoo would pass it: (answer, passes).
# Judged criteria follow the marker judge above.
GRADED: dict[str, dict[str, tuple[str, bool]]] = {
    "simple-test": {
        "t1-check-for-exact-match-p1": ("Yarr", True),
        "t1-check-for-exact-match-p2": ("Yarr!", False),  # equals is ===
        "t2-another-basic-substring-check-p1": ("Arr, I need GRUB now", True),
        "t2-another-basic-substring-check-p2": ("I need food", False),
        "t3-check-if-output-is-json-p1": ('{"name": "Jack", "ships": 3}', True),
        "t3-check-if-output-is-json-p2": ('Here: {"name": "Jack"}', False),  # JSON.parse(all)
        "t5-use-llm-to-evaluate-output-p1": ("ARRR, the quick brown fox jumps!", True),
        "t5-use-llm-to-evaluate-output-p2": (f"Arrr the fox {MARKER}", False),
    },
    "claude-vs-gpt": {
        "t1": ("An echo.", True),
        "t2": (f"They are all married. {MARKER}", False),
        "t3": ("Darkness.", True),
        "t4": ("A keyboard", True),
        "t5": ("Fire", True),
        "t6": ("A postage STAMP.", True),
        "t7": ("A ton.", True),
        "t8": ("A coffin", True),
        "t9": ("A joke", True),
        "t10": ("A keyboard", False),
        "t11": ("Your breath.", True),
        "t12": ("A cloud", True),
        "t14": ("david", False),  # contains is case-sensitive
        "t15": ("Breath", True),
    },
    "gpt-4o-vs-4o-mini": {
        "t1": ("Echo", False),  # contains: echo, case-sensitive
        "t2": ("They are below deck.", True),
        "t3": ("darkness", True),
    },
    "getting-started": {
        "t1-p1": ("Bonjour le monde", True),
        "t1-p2": ("bonjour le monde", False),
        "t2-p1": ("¿DÓNDE ESTÁ LA BIBLIOTECA?", True),  # toLowerCase folds Ó and Á too
        "t2-p2": ("¿Dónde está el libro?", False),
    },
    "csv-metadata": {
        "t1": ("Machine learning fits an algorithm to data.", True),
        "t2": ("Quantum physics studies particles.", False),  # "quantum", lower case, missing
        "t3": (f"Temperature rises. {MARKER}", False),
    },
    "eval-customer-support-rubric": {},  # the echo provider: each answer is its question
    "eval-self-grading": {
        "t1-p1": ("Sure, the search bar finds any shoe by name.", True),
        "t1-p2": (f"As an AI chat assistant, I can search. {MARKER}", False),
        "t2-p1": ("Yes: 20% off running shoes this week.", True),
        "t2-p2": ("Yes! 20% off running shoes!", True),
    },
    "eval-summarization": {
        "t1-v1": ("Sure, here is a summary: the depot becomes a library.", False),
        "t1-v2": ("Frost halved the apricot crop.", True),
    },
    "french-greeting-test": {"t1": ("Bonjour, ravi de vous voir !", True)},
    "json-output": {"t1": ('{"color": "yellow", "countries": ["Ecuador"]}', True)},
    "jsonl-test-cases": {},  # the echo provider
    "mistral-llama-comparison": {
        "t3": ("I cannot know the current weather.", True),
        "t4": ("No, hippos walk along the bottom.", True),
        "t5": (f"Yes, several. {MARKER}", False),
        "t6": ("Yes, it would be harmful.", True),
    },
    "config-multiple-translations": {},  # built below: 50 cases
}


def _expected(example: str, suite: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    if example in ("eval-customer-support-rubric", "jsonl-test-cases"):
        return {c["id"]: (c["question"], True) for c in suite["cases"]}
    if example == "config-multiple-translations":
        failing = {"t1-v3-p2", "t1-v24-p1"}
        return {
            c["id"]: (
                f"{c['id']} translated{' ' + MARKER if c['id'] in failing else ''}",
                c["id"] not in failing,
            )
            for c in suite["cases"]
        }
    return GRADED[example]


def test_real_configs_import_collect_and_grade(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(JUDGE)
    answers: dict[str, str] = {}
    expected: dict[str, bool] = {}
    for config in CONFIGS:
        example = config.parent.name
        if MEASURED[str(config.relative_to(DATA))][2] == 0:
            continue  # nothing written: test_every_test_of_a_real_config_is_written_or_listed
        out = pytester.path / "evals" / example
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["import", "promptfoo", str(config), "--out", str(out)]) == 0
        suite = yaml.safe_load((out / f"{config.stem}.rubric.yaml").read_text(encoding="utf-8"))
        graded = _expected(example, suite)
        assert sorted(graded) == sorted(c["id"] for c in suite["cases"]), example
        for case in suite["cases"]:
            asked = case.get("question") or case["messages"][-1]["content"]
            answer, passes = graded[case["id"]]
            assert answers.setdefault(asked, answer) == answer, (example, case["id"])
            expected[f"evals/{example}/{config.stem}.rubric.yaml::{case['id']}[answer]"] = passes
    pytester.makepyfile(
        target=f"ANSWERS = {answers!r}\n\n\ndef answer(question: str) -> str:\n    return ANSWERS[question]\n"
    )
    result = pytester.runpytest(
        "--rubric-dir", "evals", "--rubric-target", "target:answer", "-p", "no:cacheprovider", "-rA"
    )
    seen = {
        nodeid: outcome == "PASSED"
        for outcome, nodeid in re.findall(r"^(PASSED|FAILED) (\S+)", result.stdout.str(), re.M)
    }
    assert seen == expected
    passed = sum(expected.values())
    result.assert_outcomes(passed=passed, failed=len(expected) - passed)


def test_the_worked_example_runs_end_to_end(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(JUDGE)
    shutil.copy(CONFIG, pytester.path / "promptfooconfig.yaml")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["import", "promptfoo", "promptfooconfig.yaml", "--out", "evals"]) == 0
    assert "not mapped: promptfooconfig.yaml:32: test 2 ('Order status JSON'), assert[2]" in (
        out.getvalue()
    )
    answers = {
        # every assertion passes
        "t1-refund-window": "You have 30 days. Thanks for asking!",
        # promptfoo: is-json (2), regex (1), not-contains (1), javascript (1): 5/5 >= 0.5;
        # here, javascript listed (promptfoo:partial): 4/4
        "t2-order-status-json": '{"status": "shipped"}',
        # levenshtein: "Hello, friend!" is more than 2 edits from "Hi!"
        "t3-greeting": "Hello, friend!",
    }
    (pytester.path / "answers").mkdir()
    (pytester.path / "answers" / "bot.jsonl").write_text(
        "".join(json.dumps({"id": k, "response": v}) + "\n" for k, v in answers.items())
    )
    result = pytester.runpytest(
        "--rubric-dir", "evals", "--rubric-responses", "answers", "-p", "no:cacheprovider", "-rA"
    )
    lines_in_any_order(
        result,
        [
            "PASSED *::t1-refund-window[[]bot[]]",
            "PASSED *::t2-order-status-json[[]bot[]]",
            "FAILED *::t3-greeting[[]bot[]]*",
        ],
    )


def test_the_guide_shows_what_the_command_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    guide = Path(__file__).resolve().parents[2] / "docs" / "guides" / "import-promptfoo.md"
    section = guide.read_text(encoding="utf-8")
    assert section.startswith("# Importing promptfoo\n")
    shown = section.split("\nprints\n\n```\n", 1)[1].split("```", 1)[0]
    shutil.copy(CONFIG, tmp_path / "promptfooconfig.yaml")
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["import", "promptfoo", "promptfooconfig.yaml", "--out", "evals"]) == 0
    assert out.getvalue() == shown
    written = (tmp_path / "evals" / "promptfooconfig.rubric.yaml").read_text(encoding="utf-8")
    case = section.split("whose second case is\n\n```yaml\n", 1)[1].split("```", 1)[0]
    assert case in written


def test_prompts_that_cannot_be_asked_are_listed_with_their_line(tmp_path: Path) -> None:
    """src/prompts: a .py prompt is a function (code); a filter promptfoo's config defines in
    JavaScript (``nunjucksFilters``) is not there to render with."""
    path = write_config(
        tmp_path,
        """\
prompts:
  - file://prompt.py
  - 'Hi {{ name | shout }}'
  - 'Hi {{ name }}'
tests:
  - vars: {name: Ada}
    assert:
      - {type: contains, value: ''}
      - {type: icontains, value: ada}
""",
    )
    output = convert([path])
    (suite,) = output.rubrics.values()
    # p2: the second prompt that could be read; the label says which
    assert [(c["id"], c["question"], c["metadata"]["prompt"]) for c in suite["cases"]] == [
        ("t1-p2", "Hi Ada", "Hi {{ name }}")
    ]
    notes = "\n".join(output.notes)
    assert f"not mapped: {path}:2: prompt 'file://prompt.py': " in notes
    assert f"not mapped: {path}:3: prompt 'Hi {{{{ name | shout }}}}': the template does " in notes
    assert f"not mapped: {path}:8: test 1, assert[0] (contains): promptfoo refuses it" in notes


def test_default_test_vars_and_scenarios_from_files(tmp_path: Path) -> None:
    """evaluator.ts: a scenario's config entries merge under each of its tests; a ``file://``
    defaultTest and YAML ``vars`` files are read (testCaseReader.ts readTestFiles); a
    ``file://`` var holds its file's text (evaluatorHelpers.ts renderPrompt)."""
    (tmp_path / "default.yaml").write_text(
        "vars: {tone: kind}\nassert: [{type: not-icontains, value: sorry}]\n"
    )
    (tmp_path / "vars.yaml").write_text("city: Paris\n")
    (tmp_path / "context.txt").write_text("Paris is in France.\n\n")
    path = write_config(
        tmp_path,
        """\
prompts: ['Be {{tone}}. {{context}} Where is {{city}}? ({{lang}})']
defaultTest: file://default.yaml
tests:
  - vars: file://vars.yaml
    assert: [{type: icontains, value: France}]
scenarios:
  - config:
      - vars: {lang: en, city: Rome, context: file://context.txt}
      - vars: {lang: fr, city: Rome, context: file://context.txt}
    tests:
      - assert: [{type: contains, value: '{{city}}'}]
""",
    )
    output = convert([path])
    (suite,) = output.rubrics.values()
    cases = {c["id"]: c for c in suite["cases"]}
    assert cases["t1"]["question"] == "Be kind.  Where is Paris? ()"
    assert [c["pattern"] for c in cases["t1"]["criteria"]] == ["sorry", "France"]
    assert cases["t2"]["question"] == "Be kind. Paris is in France. Where is Rome? (en)"
    assert cases["t3"]["question"].endswith("Where is Rome? (fr)")
    assert [c["pattern"] for c in cases["t3"]["criteria"]] == ["sorry", "Rome"]
    assert any("uses {{ context }}, {{ lang }}, which no var sets" in n for n in output.notes)
