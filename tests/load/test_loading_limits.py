"""Hostile rubric and responses files: each is one located collection error, never a crash,
a hang or a machine out of memory, and the good files beside it still run.

The limits are those of docs/development/reliability.md: aliases may
add at most 100,000 nodes, lists and mappings nest at most 100 levels, a key
given twice is an error, a UTF-8 BOM is fine, only regular files are read,
and all of one file's problems are reported together.

Tests that would eat memory or block on the code these limits replaced run
pytest in a subprocess with a memory limit and a timeout, or read in a thread
that is released when it blocks, so a regression fails instead of hanging.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_rubric import RubricLoadError
from pytest_rubric._errors import Problem
from pytest_rubric._guards.limits import MAX_NESTING, json_loads
from pytest_rubric._guards.yaml import MAX_ALIAS_NODES, YamlLoader
from pytest_rubric._guards.yaml import construct as _construct
from pytest_rubric._load.loader import LoadedSuite, load_suite, parse_suite
from pytest_rubric._load.responses import load_response_dir
from tests.conftest import examples

pytestmark = pytest.mark.hostile

Write = Callable[[str, str], Path]

YAML = Path("x.rubric.yaml")
JSON = Path("x.rubric.json")

GOOD = """
cases:
  - id: q1
    response: "Paris"
    criteria: [{id: city, type: any_of, any_of: [paris]}]
"""

# 546 bytes, as a red team sent it: nine levels of nine aliases, 9**9 = 387 million nodes once built.
BOMB = (
    "cases:\n"
    "  - id: q1\n"
    '    response: "Paris"\n'
    "    criteria: [{id: city, type: any_of, any_of: [paris]}]\n"
    "    metadata:\n"
    "      a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    + "".join(
        f"      {name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
        for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
    )
)

needs_posix = pytest.mark.skipif(
    sys.platform == "win32", reason="FIFOs, /dev/zero and rlimits are POSIX"
)


def load(text: str, path: Path = YAML) -> LoadedSuite:
    return parse_suite(textwrap.dedent(text), path=path)


def problems(text: str, path: Path = YAML) -> list[Problem]:
    with pytest.raises(RubricLoadError) as info:
        load(text, path)
    assert info.value.problems
    return info.value.problems


def one_problem(text: str, path: Path = YAML) -> Problem:
    found = problems(text, path)
    assert len(found) == 1, found
    return found[0]


def bomb(levels: int, width: int = 9) -> str:
    """A rubric whose metadata holds ``levels`` levels of ``width`` aliases: width**levels nodes."""
    lines = [
        "cases:",
        "  - id: q1",
        "    response: x",
        "    criteria: [{id: a, type: any_of, any_of: [x]}]",
        "    metadata:",
        f"      l0: &l0 [{', '.join(['x'] * width)}]",
    ]
    lines += [f"      l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * width)}]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


def exact(text: str) -> str:
    """``text`` as an fnmatch pattern that matches only itself."""
    return "".join({"[": "[[]", "]": "[]]", "*": "[*]", "?": "[?]"}.get(c, c) for c in text)


def limit_memory(write: Write) -> None:
    """A conftest.py that caps the subprocess's address space at 2 GiB.

    The loader this replaced would take 12 GB on the alias bomb, or read
    /dev/zero until memory ran out: capped, a regression is a MemoryError.
    """
    write(
        "conftest.py",
        """
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
        """,
    )


# --- end to end: one collection error, the good file still runs ---------------------------------


@needs_posix
def test_alias_bomb_is_one_collection_error(pytester: pytest.Pytester, write: Write) -> None:
    assert len(BOMB.encode()) < 600
    write("good.rubric.yaml", GOOD)
    write("bomb.rubric.yaml", BOMB)
    limit_memory(write)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "bomb.rubric.yaml: 1 problem in rubric file",
            exact(
                "  bomb.rubric.yaml:11: aliases would expand this file by more than 100,000 "
                "nodes; the alias *e here takes it past that"
            ),
            "    -> use anchors and aliases to reuse a criterion or a short list;"
            " write larger structures out, without aliases of aliases",
        ],
        consecutive=True,
    )


def test_json_nested_100000_deep_is_one_collection_error(
    pytester: pytest.Pytester, write: Write
) -> None:
    """test_run_modes has this file in its suite: the same error without xdist and with it."""
    write("good.rubric.yaml", GOOD)
    write("deep.rubric.json", '{"cases": ' + "[" * 100_000 + "]" * 100_000 + "}")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "deep.rubric.json: 1 problem in rubric file",
            "  deep.rubric.json:1: lists and mappings are nested more than 100 levels deep",
            "    -> a rubric file needs a few levels; flatten this structure or remove it",
        ],
        consecutive=True,
    )


def test_duplicate_key_names_the_key_and_both_lines(
    pytester: pytest.Pytester, write: Write
) -> None:
    write("good.rubric.yaml", GOOD)
    write(
        "dup.rubric.yaml",
        """
        cases:
          - id: q1
            response: "4"
            criteria:
              - id: four
                type: number
                value: 4
                value: 5
        """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "dup.rubric.yaml: 1 problem in rubric file",
            "  dup.rubric.yaml:8, case 'q1', criterion 'four', field 'value': the key `value`"
            " is given twice in one mapping (lines 7 and 8); only the last one would count",
            "    -> keep one of them, or rename the other",
        ],
        consecutive=True,
    )


def test_a_bad_weight_and_a_duplicate_id_are_reported_together(
    pytester: pytest.Pytester, write: Write
) -> None:
    write("good.rubric.yaml", GOOD)
    write(
        "two.rubric.yaml",
        """
        cases:
          - id: q1
            response: "4"
            criteria:
              - {id: four, type: number, value: 4, weight: heavy}
              - {id: four, type: any_of, any_of: ["4"]}
        """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "two.rubric.yaml: 2 problems in rubric file",
            "  two.rubric.yaml:5, case 'q1', criterion 'four', field 'weight': must be a number,"
            " got the text 'heavy'; write the number without quotes, such as 1 or 0.5",
            "  two.rubric.yaml:6, case 'q1', criterion 'four', field 'id': criterion id 'four'"
            " is used twice (also earlier in this case)",
            "    -> give every criterion of a case a unique id",
        ],
        consecutive=True,
    )


def test_a_wrong_value_says_what_to_write_instead(pytester: pytest.Pytester, write: Write) -> None:
    """Hints by pydantic's kind of error, for every field alike; a YAML list is a list."""
    write("good.rubric.yaml", GOOD)
    write(
        "bad.rubric.yaml",
        """
        cases:
          - id: q1
            response: x
            min_score: 1.5
            criteria:
              - {id: a, type: any_of, any_of: []}
              - {id: b, type: all_of, all_of: "x", required: maybe}
              - {id: c, type: number, value: 1, abs_tol: -2}
              - {id: d, type: any_of, any_of: [x, "   "]}
        """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "bad.rubric.yaml: 6 problems in rubric file",
            "  bad.rubric.yaml:6, case 'q1', criterion 'a', field 'any_of': `any_of`: List should"
            " have at least 1 item, not 0",
            "    -> write at least one item: `any_of: [[]...]`",
            "  bad.rubric.yaml:7, case 'q1', criterion 'b', field 'required': `required`: Input"
            " should be a valid boolean, unable to interpret input, got 'maybe'",
            "    -> write true or false",
            "  bad.rubric.yaml:7, case 'q1', criterion 'b', field 'all_of': `all_of`: Input should"
            " be a list, got 'x'",
            "    -> write a list: `all_of: [[]...]`",
            "  bad.rubric.yaml:8, case 'q1', criterion 'c', field 'abs_tol': `abs_tol`: Input"
            " should be greater than or equal to 0, got -2",
            "    -> write a number of 0 or more",
            "  bad.rubric.yaml:9, case 'q1', criterion 'd', field 'any_of.1': a phrase must contain"
            " more than whitespace (it would match every answer)",
            "    -> write the words to look for, or remove the item",
            "  bad.rubric.yaml:4, case 'q1', field 'min_score': `min_score`: Input should be less"
            " than or equal to 1, got 1.5",
            "    -> write a number of 1 or less",
        ],
        consecutive=True,
    )


def test_an_id_given_by_position_that_another_criterion_uses_says_so(
    pytester: pytest.Pytester, write: Write
) -> None:
    """A criterion without an id is named c<position>: the error says which one, not only
    that 'c2' (written once) is used twice."""
    write(
        "ids.rubric.yaml",
        """
        cases:
          - id: q1
            response: "abc"
            criteria:
              - {id: c2, type: any_of, any_of: ["abc"]}
              - {type: any_of, any_of: ["a"]}
        """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "  ids.rubric.yaml:6, case 'q1', criterion 'c2', field 'id': criterion id 'c2' is "
            "used twice (also earlier in this case); criterion 2 has no id and is named 'c2' "
            "by its position",
            "    -> give every criterion of a case a unique id, written out where one has none",
        ],
        consecutive=True,
    )


def test_an_id_with_a_control_character_is_refused_and_never_printed_raw(
    pytester: pytest.Pytester, write: Write
) -> None:
    """Case and criterion ids go into test ids, which pytest prints raw (``-v``, the summary):
    an escape, bell, backspace, DEL, C1 or bidi override is refused as in a subject name."""
    write("good.rubric.yaml", GOOD)
    write(
        "ids.rubric.yaml",
        r"""
        cases:
          - id: "hb\e7\aid\b\x7f\x9b\u202e"
            response: "x"
            criteria: [{id: "c\x08", type: any_of, any_of: [x]}]
        """,
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=1, errors=1)
    why = "cannot be used: a line break or another control character breaks test ids and the "
    why += "summary table"
    case = r"case 'hb\x1b7\x07id\x08\x7f\x9b\u202e'"
    result.stdout.fnmatch_lines(
        [
            "ids.rubric.yaml: 2 problems in rubric file",
            exact(f"  ids.rubric.yaml:2, {case}, field 'id': the id {case[5:]} {why}"),
            exact("    -> use letters, digits, '_', '-' or '.', such as 'hb_7_id____'"),
            exact(
                rf"  ids.rubric.yaml:4, {case}, criterion 'c\x08', field 'id': the id 'c\x08' {why}"
            ),
            "    -> use letters, digits, '_', '-' or '.', such as 'c_'",
        ],
        consecutive=True,
    )
    assert not any(c in result.stdout.str() for c in "\x1b\x07\x08\x7f\x9b\u202e")


def test_utf8_bom_is_accepted_in_json_yaml_and_jsonl(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    bom = b"\xef\xbb\xbf"
    case = {"id": "q1", "criteria": [{"id": "city", "type": "any_of", "any_of": ["paris"]}]}
    (pytester.path / "a.rubric.json").write_bytes(
        bom + json.dumps({"cases": [{**case, "response": "Paris"}]}).encode()
    )
    (pytester.path / "b.rubric.yaml").write_bytes(bom + textwrap.dedent(GOOD).encode())
    (pytester.path / "c.rubric.json").write_bytes(
        json.dumps({"responses": "answers", "cases": [case]}).encode()
    )
    (pytester.path / "answers").mkdir()
    (pytester.path / "answers" / "bot.jsonl").write_bytes(
        bom + b'{"id": "q1", "response": "Paris"}\n'
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["c.rubric.json::q1[[]bot[]] PASSED*"])


def test_a_responses_file_that_is_not_utf8_is_said_as_a_rubric_file_is(
    pytester: pytest.Pytester, write: Write
) -> None:
    # It was Python's "cannot read: 'utf-8' codec can't decode byte 0xe9 in position 29: ...".
    write("good.rubric.yaml", GOOD)
    (pytester.path / "latin.rubric.yaml").write_bytes(
        textwrap.dedent(GOOD).encode("latin-1") + b"# caf\xe9\n"
    )
    write(
        "fin.rubric.yaml",
        """
        responses: answers/
        cases:
          - id: q1
            criteria: [{id: city, type: any_of, any_of: [paris]}]
        """,
    )
    write("answers/ok.jsonl", '{"id": "q1", "response": "Paris"}\n')
    (pytester.path / "answers" / "latin.jsonl").write_bytes(
        b'{"id": "q1", "response": "caf\xe9"}\n'
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=2)
    for lines in (
        [
            "latin.rubric.yaml: 1 problem in rubric file",
            "  latin.rubric.yaml: not UTF-8 text (invalid continuation byte)",
        ],
        [
            "fin.rubric.yaml: 1 problem in rubric file",
            "  answers/latin.jsonl, field 'responses': not UTF-8 text (invalid continuation byte)",
        ],
    ):
        result.stdout.fnmatch_lines([*lines, "    -> save the file as UTF-8"], consecutive=True)


@needs_posix
def test_fifo_and_dev_zero_in_a_responses_folder_are_errors_not_hangs(
    pytester: pytest.Pytester, write: Write
) -> None:
    write("good.rubric.yaml", GOOD)
    write(
        "fin.rubric.yaml",
        """
        responses: answers/
        cases:
          - id: q1
            criteria: [{id: four, type: number, value: 4}]
        """,
    )
    write("answers/ok.jsonl", '{"id": "q1", "response": "4"}\n')
    os.mkfifo(pytester.path / "answers" / "pipe.jsonl")
    (pytester.path / "answers" / "zero.jsonl").symlink_to("/dev/zero")
    limit_memory(write)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "fin.rubric.yaml: 2 problems in rubric file",
            "  answers/pipe.jsonl, field 'responses': this is a named pipe (FIFO), not a"
            " regular file; responses are read only from regular files",
            "    -> replace it with a regular file, or remove it from the folder",
            "  answers/zero.jsonl, field 'responses': this is a character device, not a"
            " regular file; responses are read only from regular files",
            "    -> replace it with a regular file, or remove it from the folder",
        ],
        consecutive=True,
    )


@pytest.mark.parametrize(
    ("name", "shown", "why", "renamed"),
    [
        ("x::y", "x::y", "'::', '[' and ']' break test ids", "x_y"),
        (
            "two\nlines",
            "two\\nlines",
            "a line break or another control character breaks test ids and the summary table",
            "two_lines",
        ),
    ],
)
def test_subject_file_name_that_breaks_ids_is_a_collection_error(
    pytester: pytest.Pytester, write: Write, name: str, shown: str, why: str, renamed: str
) -> None:
    write("good.rubric.yaml", GOOD)
    write(
        "fin.rubric.yaml",
        """
        responses: answers/
        cases:
          - id: q1
            criteria: [{id: four, type: number, value: 4}]
        """,
    )
    write("answers/ok.jsonl", '{"id": "q1", "response": "4"}\n')
    write(f"answers/{name}.jsonl", '{"id": "q1", "response": "4"}\n')
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "fin.rubric.yaml: 1 problem in rubric file",
            "  answers, field 'responses': "
            + exact(
                f"the file name '{shown}.jsonl' gives the subject name '{shown}', which cannot "
                f"be used: {why}"
            ),
            f"    -> rename the file to '{renamed}.jsonl'",
        ],
        consecutive=True,
    )


@pytest.mark.parametrize("number", ["NaN", "-Infinity", "1e999", "1" + "0" * 400])
def test_a_latency_that_is_not_finite_is_a_located_error(
    pytester: pytest.Pytester, write: Write, number: str
) -> None:
    # It was read as it is: `latency_s nan <= 5` MET, and NaN in a --rubric-json document.
    write(
        "fin.rubric.yaml",
        """
        responses: answers/
        cases:
          - id: q1
            criteria: [{id: quick, type: trace_limits, max_latency_s: 5}]
        """,
    )
    write("answers/bot.jsonl", f'{{"id": "q1", "response": "4", "latency_s": {number}}}\n')
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["  answers/bot.jsonl:1, case 'q1', field 'latency_s': `latency_s` must be a number*"]
    )


def test_a_schema_uri_that_is_not_a_string_is_a_located_error_beside_the_files_problems(
    pytester: pytest.Pytester, write: Write
) -> None:
    """jsonschema reads `$schema` as a URI: a number there was a traceback, and the other
    file's cases never ran."""
    write("good.rubric.yaml", GOOD)
    write(
        "uri.rubric.yaml",
        """
        cases:
          - id: q1
            response: '{"a": 1}'
            criteria:
              - id: shape
                type: json
                schema: {$schema: 5, type: object}
          - id: q2
            response: "x"
            criteria: [{id: c, type: any_of, any_of: 3}]
        """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "uri.rubric.yaml: 2 problems in rubric file",
            exact(
                "  uri.rubric.yaml:7, case 'q1', criterion 'shape', field 'schema': `schema` is "
                "not a valid JSON Schema: at /$schema, `$schema` is int, not a string (the URI "
                "of a draft)"
            ),
            exact(
                "    -> write a draft's URI, such as `$schema: https://json-schema.org/draft/"
                "2020-12/schema`, or leave `$schema` out (draft 2020-12)"
            ),
            "  uri.rubric.yaml:10, case 'q2', criterion 'c', field 'any_of': *",
        ],
        consecutive=True,
    )
    assert "Traceback" not in result.stdout.str() and "AttributeError" not in result.stdout.str()


def test_tool_args_holding_a_number_that_is_not_finite_fit_no_schema_and_stay_json(
    pytester: pytest.Pytester, write: Write
) -> None:
    # NaN passed `maximum: 100`, 1e999 `minimum: 0`, and the document held NaN and Infinity.
    write(
        "fin.rubric.yaml",
        """
        responses: answers/
        cases:
          - id: q1
            criteria:
              - {id: capped, type: tool_called, tool: refund, args: {properties: {amount: {maximum: 100}}}}
              - id: backed
                type: claims_backed
                claims: [{id: r, any_of: [refunded], tool: refund, args: {properties: {amount: {minimum: 0}}}}]
        """,
    )
    for subject, number in [("nan", "NaN"), ("big", "1e999")]:
        arguments = f'{{"amount": {number}}}'
        call = {
            "id": "a",
            "type": "function",
            "function": {"name": "refund", "arguments": arguments},
        }
        messages = [
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "a", "content": "{}"},
        ]
        line = {"id": "q1", "response": "refunded", "messages": messages}
        write(f"answers/{subject}.jsonl", json.dumps(line) + "\n")
    result = pytester.runpytest("--rubric-json=out.json")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        ["*capped*UNMET*refund: a number that is not finite (it overflowed) fits no schema"] * 2
    )

    def refused(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    document = json.loads((pytester.path / "out.json").read_text(), parse_constant=refused)
    shown = {r["subject"]: r["samples"][0]["trace"]["tool_calls"] for r in document["results"]}
    assert {s: c[0]["arguments"] for s, c in shown.items()} == {
        "nan": '{"amount": NaN}',
        "big": '{"amount": 1e999}',
    }
    assert all("fits no schema" in c["reason"] for r in document["results"] for c in r["criteria"])


# --- aliases ------------------------------------------------------------------------------------


def test_aliases_past_the_limit_are_an_error_before_anything_is_built() -> None:
    # 9**6 = 531,441 nodes: past the limit, yet small enough not to hurt if it were built.
    problem = one_problem(bomb(6))
    assert problem.message.startswith("aliases would expand this file by more than 100,000 nodes")
    assert problem.line == 11  # l5, whose aliases take it past
    assert problem.hint


def test_aliases_within_the_limit_load() -> None:
    loaded = load(bomb(5))  # 9**5 = 59,049 nodes
    assert len(loaded.suite.cases[0].metadata["l4"]) == 9
    assert MAX_ALIAS_NODES == 100_000


def test_an_alias_inside_its_own_anchor_is_an_error() -> None:
    problem = one_problem(
        """\
        cases:
          - id: q1
            response: x
            criteria: [{id: a, type: any_of, any_of: [x]}]
            metadata: &loop {again: *loop}
        """
    )
    assert problem.message == (
        "the alias *loop is inside the anchor &loop it refers to, so it would repeat without end"
    )
    assert problem.line == 5


def test_anchors_and_merge_keys_build_as_yaml_merges_say() -> None:
    text = textwrap.dedent(
        """\
        base: &base {type: any_of, weight: 2}
        other: &other {weight: 3, axis: style}
        one: {<<: *base, id: a, any_of: [x]}
        two: {<<: [*other, *base], id: b, weight: 5}
        three: {<<: [*base, *other]}
        list: [*base, *base]
        """
    )
    loader = yaml.CSafeLoader(text)
    data, duplicates = _construct(loader, loader.get_single_node())
    assert duplicates == []
    assert data["one"] == {"type": "any_of", "weight": 2, "id": "a", "any_of": ["x"]}
    # The mapping's own keys win over merged ones...
    assert data["two"] == {"type": "any_of", "weight": 5, "axis": "style", "id": "b"}
    # ...and of the mappings merged, the earlier wins (the YAML merge key spec; PyYAML 6.0.4
    # lets the later win when the two key strings are distinct objects).
    assert data["three"] == {"type": "any_of", "weight": 2, "axis": "style"}
    assert data["list"] == [data["base"], data["base"]]
    assert data["list"][0] is not data["list"][1]  # a copy per alias, as PyYAML's are not


def test_aliases_within_the_limit_build_what_pyyaml_builds() -> None:
    text = bomb(5)  # 59,049 nodes built through aliases
    loaded = load(text)
    assert (
        loaded.suite.cases[0].metadata
        == yaml.load(text, Loader=yaml.CSafeLoader)["cases"][0]["metadata"]
    )


def test_an_alias_bomb_stops_building_at_the_limit() -> None:
    # Built out, BOMB is 387 million nodes and gigabytes; refused after 100,000 it is a few MB.
    tracemalloc.start()
    try:
        with pytest.raises(RubricLoadError) as info:
            parse_suite(BOMB, path=YAML)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [p.line for p in info.value.problems] == [11]
    assert peak < 64 << 20, f"{peak / 2**20:.0f} MiB"


def test_aliases_are_counted_as_built_whatever_the_text_around_them() -> None:
    # Scalar aliases, merges of aliases and of an aliased list come before the alias that
    # takes the count past the limit: they must not shift which alias is named.
    lines = [
        "cases: []",
        "s: &s text",
        "m: &m {a: 1, b: [x, y]}",
        "bases: &bases [{c: 2}, {d: 3}]",
        "uses: [*s, {<<: *m, e: 4}, {<<: [*m, {f: 5}]}, {<<: *bases}, *s]",
        "l0: &l0 [" + ", ".join(["x"] * 9) + "]",
    ]
    for n in range(1, 6):
        lines.append(f"l{n}: &l{n}")
        lines += ["  - *s", f"  - *l{n - 1}"] * 9
    found = one_problem("\n".join(lines) + "\n")
    assert found.message == (
        "aliases would expand this file by more than 100,000 nodes; the alias *l4 here takes "
        "it past that"
    )
    # l1..l4 hold 990 + 8,190 + 73,800 nodes through aliases (with their *s); l5 starts at
    # line 83 with "*s", then its first *l4 (73,810 nodes) takes the count past 100,000.
    assert found.line == 85


# --- nesting ------------------------------------------------------------------------------------


def _nested_metadata(depth: int, path: Path) -> str:
    """A valid rubric whose case metadata nests lists so that the file is ``depth`` deep."""
    inner = "[" * (depth - 4) + "]" * (depth - 4)  # root, cases, case, metadata: 4 levels
    if path.suffix == ".json":
        return (
            '{"cases": [{"id": "q1", "response": "x", "metadata": {"m": ' + inner + "},"
            ' "criteria": [{"id": "a", "type": "any_of", "any_of": ["x"]}]}]}'
        )
    return (
        "cases:\n  - id: q1\n    response: x\n    criteria: [{id: a, type: any_of, any_of: [x]}]\n"
        f"    metadata: {{m: {inner}}}\n"
    )


@pytest.mark.parametrize("path", [YAML, JSON])
def test_nesting_101_levels_is_an_error_and_100_loads(path: Path) -> None:
    assert MAX_NESTING == 100
    load(_nested_metadata(100, path), path)
    problem = one_problem(_nested_metadata(101, path), path)
    assert problem.message == "lists and mappings are nested more than 100 levels deep"
    assert problem.line == (1 if path.suffix == ".json" else 5)


def test_yaml_nested_past_libyaml_limit_is_the_same_error() -> None:
    problem = one_problem("cases: " + "[" * 5000 + "]" * 5000)
    assert problem.message == "lists and mappings are nested more than 100 levels deep"


def test_aliases_count_towards_nesting() -> None:
    # metadata is 4 levels deep: 4 + 60 is fine where the anchor is, but the
    # alias brings those 60 levels 50 levels further down.
    deep, opening, closing = "[" * 60 + "]" * 60, "[" * 50, "]" * 50
    problem = one_problem(
        f"""\
        cases:
          - id: q1
            response: x
            criteria: [{{id: a, type: any_of, any_of: [x]}}]
            metadata: {{a: &deep {deep}, b: {opening}*deep{closing}}}
        """
    )
    assert "nested more than 100 levels" in problem.message


# --- duplicate keys -----------------------------------------------------------------------------


def test_duplicate_key_in_a_json_object_names_both_lines() -> None:
    problem = one_problem(
        """\
        {"cases": [
          {"id": "q1",
           "response": "x",
           "criteria": [{"id": "a", "type": "any_of", "any_of": ["x"]}],
           "response": "y"}
        ]}
        """,
        JSON,
    )
    assert problem.message == (
        "the key `response` is given twice in one JSON object (lines 3 and 5); "
        "only the last one would count"
    )
    assert (problem.line, problem.case, problem.field) == (5, "q1", "response")


def test_duplicate_top_level_key_in_a_bare_list_file() -> None:
    problem = one_problem(
        """\
        - id: q1
          response: x
          criteria: [{id: a, type: any_of, any_of: [x], any_of: [y]}]
        """
    )
    assert (problem.line, problem.case, problem.criterion, problem.field) == (
        3,
        "q1",
        "a",
        "any_of",
    )


def test_each_repeated_key_names_its_own_first_line() -> None:
    found = problems(
        """\
        cases: []
        a: 1
        b: 2
        b: 3
        a: 4
        a: 5
        """
    )
    assert [(p.field, p.line) for p in found[:3]] == [("b", 4), ("a", 5), ("a", 6)]
    assert [p.message[42:57] for p in found[:3]] == [
        "(lines 3 and 4)",
        "(lines 2 and 5)",
        "(lines 2 and 6)",
    ]


def test_two_merge_keys_in_one_mapping_are_a_duplicate() -> None:
    problem = one_problem(
        """\
        cases:
          - &q {id: q1, response: x, criteria: [{id: a, type: any_of, any_of: [x]}]}
          - {<<: *q, <<: *q, id: q2}
        """
    )
    assert "the key `<<` is given twice" in problem.message


def test_keys_equal_once_read_are_duplicates() -> None:
    # `1` and `1.0` are one dict key: the data would silently keep the last.
    (problem, _not_text) = problems(
        """\
        cases:
          - id: q1
            response: x
            criteria: [{id: a, type: any_of, any_of: [x]}]
            metadata: {1: one, 1.0: also one}
        """
    )
    assert problem.message.startswith("the key 1.0 is given twice in one mapping (lines 5 and 5)")


def test_duplicate_key_in_a_jsonl_line_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "bot.jsonl").write_text(
        '{"id": "q1", "response": "a"}\n{"id": "q2", "response": "b", "response": "c"}\n'
    )
    files, found = load_response_dir(tmp_path)
    assert [(p.line, p.field) for p in found] == [(2, "response")]
    assert "the key `response` is given twice" in found[0].message
    assert list(files[0].entries) == [(None, "q1")]


def test_a_json_key_given_twice_with_spaces_before_its_colon_is_found() -> None:
    problem = one_problem(
        '{"cases": [{"id" : "q1", "response" : "a: b",\n'
        '  "criteria": [{"id": "a", "type": "any_of", "any_of": ["x"]}],\n'
        '  "response"  : "c"}]}\n',
        JSON,
    )
    assert problem.message == (
        "the key `response` is given twice in one JSON object (lines 1 and 3); "
        "only the last one would count"
    )
    assert problem.line == 3


# --- JSONL: one reader for responses, calibration and HealthBench ------------------------------

# Raw in a JSON string, each of these is data; str.splitlines() would end a line at it.
LINE_SEPARATORS = ["\u2028", "\u2029", "\x85", "\x1c", "\x1d", "\x1e", "\x0b", "\x0c"]


def _jsonl(*rows: dict[str, Any]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def _calibration_rows(tmp_path: Path, text: str) -> tuple[list[Any], list[Problem]]:
    from pytest_rubric._load.examples import read_labelled
    from pytest_rubric._schema import CalibrationExample

    (tmp_path / "labels.jsonl").write_text(text, encoding="utf-8")
    rows, problems = read_labelled(
        tmp_path / "labels.jsonl", CalibrationExample, what="calibration example"
    )
    return [row for _, row in rows], problems


def _healthbench_rows(tmp_path: Path, text: str) -> tuple[list[Any], list[Problem]]:
    from pytest_rubric.importers.healthbench import read_completions

    (tmp_path / "done.jsonl").write_text(text, encoding="utf-8")
    problems: list[Problem] = []
    return list(read_completions(tmp_path / "done.jsonl", problems).values()), problems


def _responses_rows(tmp_path: Path, text: str) -> tuple[list[Any], list[Problem]]:
    (tmp_path / "bot.jsonl").write_text(text, encoding="utf-8")
    files, problems = load_response_dir(tmp_path)
    return [text for text, _ in files[0].entries.values()], problems


READERS = {
    "responses": (_responses_rows, lambda n, text: {"id": f"q{n}", "response": text}),
    "calibration": (
        _calibration_rows,
        lambda n, text: {"case": "c", "criterion": "j", "response": text, "verdict": "MET"},
    ),
    "healthbench": (_healthbench_rows, lambda n, text: {"prompt_id": f"p{n}", "completion": text}),
}


@pytest.mark.parametrize("reader", list(READERS))
def test_jsonl_lines_end_at_newlines_only_and_a_repeated_key_is_named(
    tmp_path: Path, reader: str
) -> None:
    read, row = READERS[reader]
    texts = [f"one{sep}two" for sep in LINE_SEPARATORS]
    key = list(row(99, "x"))[-1]
    repeated = json.dumps(row(99, "x"))[:-1] + f', "{key}": "y"}}'
    body = _jsonl(*(row(n, text) for n, text in enumerate(texts)))
    rows, problems = read(tmp_path, body + repeated + "\n" + _jsonl(row(100, "last")))
    got = [getattr(r, "response", r) for r in rows]
    assert got == [*texts, "last"]
    (problem,) = problems
    assert (problem.line, problem.field) == (len(texts) + 1, key)
    assert f"the key `{key}` is given twice in this object" in problem.message
    assert Path(str(problem.path)).parent == tmp_path  # the file is named too


def test_jsonl_duplicate_keys_in_healthbench_data_stop_the_import(tmp_path: Path) -> None:
    from pytest_rubric.importers._common import ImportFailed
    from pytest_rubric.importers.healthbench import convert

    good = {
        "prompt_id": "p1",
        "prompt": [{"role": "user", "content": "Is it safe?\u2028Really?"}],
        "rubrics": [{"criterion": "Says see a doctor", "points": 5, "tags": []}],
    }
    data = tmp_path / "data.jsonl"
    data.write_text(_jsonl(good) + json.dumps(good)[:-1] + ', "prompt_id": "p2"}\n')
    with pytest.raises(ImportFailed) as failed:
        convert(data)
    (problem,) = failed.value.problems
    assert (problem.path, problem.line, problem.field) == (data, 2, "prompt_id")
    data.write_text(_jsonl(good))
    (case,) = convert(data).rubrics["healthbench.rubric.yaml"]["cases"]
    assert case["messages"][0]["content"] == "Is it safe?\u2028Really?"


@settings(max_examples=examples(100), deadline=None)
@given(
    texts=st.lists(
        st.text(
            alphabet=st.sampled_from(["a", " ", "\n", '"', "\\", *LINE_SEPARATORS]), max_size=8
        ),
        min_size=1,
        max_size=5,
    )
)
def test_any_strings_survive_a_jsonl_round_trip(texts: list[str]) -> None:
    import tempfile

    from pytest_rubric._guards.limits import read_jsonl

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.jsonl"
        path.write_text(_jsonl(*({"t": t} for t in texts)), encoding="utf-8")
        rows, problems = read_jsonl(path, example="{}")
    assert problems == []
    assert rows == [(n, {"t": t}) for n, t in enumerate(texts, start=1)]


# --- one file, every problem --------------------------------------------------------------------


def test_validation_and_semantic_problems_are_reported_together() -> None:
    found = problems(
        """\
        cases:
          - id: q1
            response: x
            criteria:
              - {id: a, type: any_of, any_of: [x], weight: heavy}
              - {id: a, type: any_of, any_of: [y]}
          - id: q1
            response: x
            criteria:
              - {id: r, type: regex, pattern: '(?<=x)y'}
        """
    )
    assert [(p.line, p.case, p.criterion, p.field) for p in found] == [
        (5, "q1", "a", "weight"),
        (6, "q1", "a", "id"),
        (7, "q1", None, "id"),
        (10, "q1", "r", "pattern"),
    ]
    assert all(p.hint for p in found[1:])


def test_a_duplicate_key_does_not_hide_validation_problems() -> None:
    found = problems(
        """\
        cases:
          - id: q1
            id: q2
            response: x
            criteria:
              - {id: n, type: number, value: many}
        """
    )
    assert [(p.line, p.field) for p in found] == [(3, "id"), (6, "value")]


def test_duplicate_ids_in_global_are_an_error() -> None:
    problem = one_problem(
        """\
        global:
          - {id: g, type: any_of, any_of: [x]}
          - {id: g, type: any_of, any_of: [y]}
        cases:
          - {id: q1, response: x, criteria: [{id: a, type: any_of, any_of: [x]}]}
        """
    )
    assert (problem.line, problem.criterion, problem.field) == (3, "global g", "id")


# --- numbers and tolerances ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    ["value: 1.0e+308, rel_tol: 1.0e+308", "value: -1.0e+300, rel_tol: 1.0e+10"],
)
def test_a_tolerance_that_overflows_is_an_error(fields: str) -> None:
    problem = one_problem(
        f"""\
        cases:
          - id: q1
            response: x
            criteria:
              - {{id: n, type: number, {fields}}}
        """
    )
    assert (problem.line, problem.case, problem.criterion, problem.field) == (
        5,
        "q1",
        "n",
        "rel_tol",
    )
    assert "overflows to infinity" in problem.message
    assert problem.hint == "write a smaller `rel_tol` (such as 0.01), or an `abs_tol`"


def test_a_large_but_finite_tolerance_loads() -> None:
    loaded = load(
        """\
        cases:
          - id: q1
            response: x
            criteria:
              - {id: n, type: number, value: 1.0e+300, rel_tol: 1.0e+7, abs_tol: 1.0e+308}
        """
    )
    (criterion,) = loaded.suite.cases[0].criteria
    assert (criterion.rel_tol, criterion.abs_tol) == (1.0e7, 1.0e308)  # kept as written


@pytest.mark.parametrize("value", ["1e309", "1.0e+309", ".inf"])
def test_an_infinite_value_is_an_error_with_a_hint(value: str) -> None:
    problem = one_problem(
        f"""\
        cases:
          - id: q1
            response: x
            criteria:
              - {{id: n, type: number, value: {value}}}
        """
    )
    assert (problem.line, problem.case, problem.criterion, problem.field) == (5, "q1", "n", "value")
    assert problem.message.startswith("`value` must be a finite number, got ")
    assert problem.hint == "write an ordinary number, such as `value: 1`"


@pytest.mark.parametrize("path", [YAML, JSON])
def test_a_number_with_5000_digits_is_an_error(path: Path) -> None:
    text = (
        '{"cases": [], "n": ' + "7" * 5000 + "}"
        if path.suffix == ".json"
        else "cases: []\nn: " + "7" * 5000
    )
    problem = one_problem(text, path)
    assert "4300" in problem.message.replace(",", "")
    assert problem.line == (1 if path.suffix == ".json" else 2)


def test_an_impossible_date_is_an_error() -> None:
    problem = one_problem("cases: []\nwhen: 2001-02-30\n")
    assert problem.message == "cannot read the value 2001-02-30: day is out of range for month"
    assert problem.line == 2


# --- subjects -----------------------------------------------------------------------------------


def test_inline_subject_names_that_break_ids_are_errors() -> None:
    found = problems(
        """\
        cases:
          - id: q1
            responses: {"a::b": x, "": y, "fine": z}
            criteria: [{id: a, type: any_of, any_of: [x]}]
          - id: q2
            response: x
            subject: "bad]"
            criteria: [{id: a, type: any_of, any_of: [x]}]
        """
    )
    assert [(p.line, p.case, p.field, p.hint) for p in found] == [
        (3, "q1", "responses", "rename it, for example to 'a_b'"),
        (3, "q1", "responses", "rename it, for example to 'subject'"),
        (7, "q2", "subject", "rename it, for example to 'bad_'"),
    ]


# --- only regular files -------------------------------------------------------------------------


def _read_in_thread(fifo: Path, read: Callable[[], Any]) -> tuple[bool, list[BaseException]]:
    """Run ``read``; if it blocks on ``fifo``, release it by opening the writing end."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            read()
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(10)
    blocked = thread.is_alive()
    if blocked:
        with open(fifo, "w"):
            pass
        thread.join(10)
    return blocked, raised


@needs_posix
def test_a_rubric_file_that_is_a_fifo_is_an_error_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.rubric.yaml"
    os.mkfifo(fifo)
    blocked, raised = _read_in_thread(fifo, lambda: load_suite(fifo))
    assert not blocked, "reading the FIFO blocked"
    (error,) = raised
    assert isinstance(error, RubricLoadError)
    (problem,) = error.problems
    assert problem.message == (
        "this is a named pipe (FIFO), not a regular file; rubric files are read only from "
        "regular files"
    )


@needs_posix
def test_a_responses_file_that_is_a_fifo_is_a_problem_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "bot.jsonl"
    os.mkfifo(fifo)
    result: list[Any] = []
    blocked, raised = _read_in_thread(fifo, lambda: result.append(load_response_dir(tmp_path)))
    assert not blocked and not raised, "reading the FIFO blocked"
    _, found = result[0]
    assert [p.path for p in found] == [fifo]


def test_a_directory_named_like_a_responses_file_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "odd.jsonl").mkdir()
    _, found = load_response_dir(tmp_path)
    assert [p.message for p in found] == [
        "this is a directory, not a regular file; responses are read only from regular files"
    ]


# --- properties ---------------------------------------------------------------------------------


def _settings(n: int) -> settings:
    """``n`` examples (:func:`tests.conftest.examples`)."""
    return settings(
        max_examples=examples(n), deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )


PROPERTY = _settings(60)


def _outcome(text: str, path: Path) -> list[Problem]:
    """The problems of loading ``text``, [] when it loads; any other exception fails the test."""
    try:
        parse_suite(text, path=path)
    except RubricLoadError as exc:
        assert exc.problems
        return exc.problems
    return []


@PROPERTY
@given(
    depth=st.integers(1, 400),
    style=st.sampled_from(["flow", "block", "json", "mapping"]),
)
def test_any_nesting_is_data_or_the_nesting_error(depth: int, style: str) -> None:
    # `depth` lists under the top-level mapping, or `depth` mappings in all.
    nesting = depth + 1
    if style == "flow":
        text, path = "cases: " + "[" * depth + "]" * depth, YAML
    elif style == "block":
        text, path = "cases:\n" + "".join("  " * i + "-\n" for i in range(depth)), YAML
    elif style == "json":
        text, path = '{"cases": ' + "[" * depth + "]" * depth + "}", JSON
    else:
        text = "cases: []\nm:" + "".join("\n" + "  " * i + "k:" for i in range(1, depth))
        path, nesting = YAML, max(2, depth)  # `cases: []` is 2 levels
    found = _outcome(text, path)
    too_deep = [p for p in found if "nested more than" in p.message]
    assert bool(too_deep) == (nesting > MAX_NESTING), (depth, style, found)


@st.composite
def alias_chains(draw: st.DrawFn) -> tuple[str, int]:
    """YAML with levels of anchors, each aliasing the one before some times; and its size.

    Sizes stay below 9**6, so even a loader that built them all would not hurt.
    """
    levels = draw(st.integers(1, 6))
    widths = [draw(st.integers(1, 9)) for _ in range(levels)]
    lines = [f"l0: &l0 [{', '.join(['x'] * widths[0])}]"]
    size = 1 + widths[0]
    added = 0
    for n in range(1, levels):
        lines.append(f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * widths[n])}]")
        added += widths[n] * size
        size = 1 + widths[n] * size
    return "cases: []\n" + "\n".join(lines) + "\n", added


@PROPERTY
@given(alias_chains())
def test_aliases_are_an_error_exactly_past_the_limit(chain: tuple[str, int]) -> None:
    text, added = chain
    found = _outcome(text, YAML)
    too_many = [p for p in found if p.message.startswith("aliases would expand")]
    assert bool(too_many) == (added > MAX_ALIAS_NODES), (added, found)


def _alias_past_the_limit(text: str) -> tuple[str, int] | None:
    """The alias that takes the nodes built through aliases past the limit, counted over
    the event stream (an oracle: the loader counts while building) -> its name and line.

    An alias adds the nodes under its anchor; one written in the text to a scalar adds
    nothing, since writing the scalar out would cost the same.
    """
    sizes: dict[str, tuple[int, bool]] = {}  # anchor -> (nodes under it, whether a collection)
    open_nodes: list[tuple[str | None, int]] = []
    count = added = 0
    for event in yaml.parse(text, Loader=yaml.CSafeLoader):
        if isinstance(event, yaml.AliasEvent):
            size, collection = sizes[event.anchor]
            count += size
            added += size if collection else 0
            if added > MAX_ALIAS_NODES:
                return event.anchor, event.start_mark.line + 1
        elif isinstance(event, yaml.ScalarEvent):
            count += 1
            if event.anchor is not None:
                sizes[event.anchor] = (1, False)
        elif isinstance(event, yaml.CollectionStartEvent):
            open_nodes.append((event.anchor, count))
            count += 1
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, before = open_nodes.pop()
            if anchor is not None:
                sizes[anchor] = (count - before, True)
    return None


_ALIAS_NOISE = [
    "*s",
    "*m",
    "x",
    "{<<: *m, z: 1}",
    "{<<: [*m, *n]}",
    "{<<: *bases, <<: *n}",
    "[*s, *m]",
    "*t",
]


@st.composite
def aliased_files(draw: st.DrawFn) -> str:
    """Block-style YAML, one alias a line: levels of anchors that alias the one before, with
    scalar aliases, merges of aliases and of an aliased list in between."""
    lines = [
        "cases: []",
        "s: &s text",
        "t: &t text",
        "m: &m {a: 1, b: [x, y]}",
        "n: &n {c: 2}",
        "bases: &bases [{d: 3}, {e: 4}]",
    ]
    for n in range(draw(st.integers(1, 7))):
        lines.append(f"l{n}: &l{n}")
        for _ in range(draw(st.integers(1, 9))):
            lines += [f"  - {item}" for item in draw(st.lists(st.sampled_from(_ALIAS_NOISE)))]
            lines.append(f"  - *l{n - 1}" if n else "  - x")
    return "\n".join(lines) + "\n"


@PROPERTY
@given(aliased_files())
def test_the_alias_named_is_the_one_that_passes_the_limit(text: str) -> None:
    expected = _alias_past_the_limit(text)
    found = [p for p in _outcome(text, YAML) if p.message.startswith("aliases would expand")]
    if expected is None:
        assert found == []
    else:
        name, line = expected
        assert [(p.message, p.line) for p in found] == [
            (
                f"aliases would expand this file by more than 100,000 nodes; the alias *{name} "
                "here takes it past that",
                line,
            )
        ]


_JSON_SPACE = st.sampled_from(["", " ", "\n", " \t", "\r\n  "])
_JSON_TEXT = st.sampled_from(
    ["x", "a: b", 'say \\": no', '{\\"k\\" :1}', "\\u003a", "\\\\", "[{", ""]
)


@st.composite
def json_texts(draw: st.DrawFn, depth: int = 0) -> str:
    """A JSON value written with any spacing, whose objects may give a key twice and whose
    strings may hold colons, escaped quotes before a colon or an escaped colon."""
    kind = draw(st.sampled_from(["object", "list", "text", "number"] if depth < 3 else ["text"]))
    if kind == "text":
        return f'"{draw(_JSON_TEXT)}"'
    if kind == "number":
        return "1"
    if kind == "list":
        items = draw(st.lists(json_texts(depth + 1), max_size=3))
        return "[" + ",".join(draw(_JSON_SPACE) + item for item in items) + "]"
    keys = draw(st.lists(st.sampled_from(["a", "b", "c:d", 'e\\"', "f\\\\", "a b"]), max_size=5))
    members = [
        f'{draw(_JSON_SPACE)}"{key}"{draw(_JSON_SPACE)}:{draw(_JSON_SPACE)}'
        + draw(json_texts(depth + 1))
        for key in keys
    ]
    return "{" + ",".join(members) + draw(_JSON_SPACE) + "}"


@PROPERTY
@given(json_texts())
def test_json_keys_given_twice_are_found_however_the_text_is_written(text: str) -> None:
    expected: list[str] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                expected.append(key)
            seen.add(key)
        return dict(pairs)

    data = json.loads(text, object_pairs_hook=pairs_hook)
    assert json_loads(text) == (data, expected)


YAML_TOKENS = st.lists(
    st.sampled_from(
        [
            "cases:",
            "  - id: q1",
            "    response: x",
            "    criteria:",
            "      - &c {id: a, type: any_of, any_of: [x]}",
            "      - *c",
            "      - {<<: *c, id: b}",
            "      - {<<: [*c, *m], id: d}",
            "      - <<: *c",
            "        <<: *c",
            "    metadata: &m {k: &v [1, 2], j: *v}",
            "    metadata: &m [*m]",
            "    metadata: {k: v, k: w}",
            "    metadata: " + "[" * 120 + "]" * 120,
            "  - &q {id: q2, response: y, criteria: [*c]}",
            "  - *q",
            "  - {<<: *q, id: q3}",
            "m: &x [*x, *x]",
            "? [a, b]",
            ": c",
            "when: 2001-02-30",
            "n: " + "9" * 5000,
            "---",
            "'",
        ]
    ),
    max_size=14,
)


@_settings(200)
@given(YAML_TOKENS)
def test_yaml_with_anchors_merges_and_junk_loads_or_is_a_load_error(lines: list[str]) -> None:
    _outcome("\n".join(lines), YAML)


@_settings(200)
@given(YAML_TOKENS)
def test_anchors_and_merges_build_what_pyyaml_builds(lines: list[str]) -> None:
    text = "\n".join(lines)
    try:
        expected = yaml.load(text, Loader=yaml.CSafeLoader)
    except (yaml.YAMLError, ValueError, RecursionError):
        return  # PyYAML refuses it too (or recurses): nothing to compare
    loader = yaml.CSafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return
        try:
            data, duplicates = _construct(loader, node)
        except Exception as exc:  # only the limits may refuse what PyYAML builds
            assert "nested more than" in str(exc), exc
            return
    finally:
        loader.dispose()
    if not duplicates:  # with duplicates, both keep the last, but in another order
        assert data == expected


# Plain scalars of every implicit type the safe loader knows, near misses and words.
_SCALAR_TEXT = st.one_of(
    st.sampled_from(
        [
            "1",
            "-2",
            "+3",
            "0x1F",
            "0o17",
            "1_000",
            "1.5",
            ".5",
            "-.inf",
            ".NaN",
            "1e3",
            "1:20",
            "true",
            "True",
            "TRUE",
            "yes",
            "No",
            "on",
            "Off",
            "y",
            "n",
            "null",
            "Null",
            "~",
            "",
            "2001-02-03",
            "2001-02-03T04:05:06Z",
            "2001-02-30",
            "<<",
            "=",
            "type",
            "total",
            "offset",
            "nothing",
            "false positive",
            "1 2",
            "- a",
            "0.1.2",
            "tru",
        ]
    ),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=8),
)


@_settings(300)
@given(st.lists(_SCALAR_TEXT, min_size=1, max_size=12), st.booleans())
def test_the_quick_tag_resolver_gives_the_safe_loaders_tags(words: list[str], quoted: bool) -> None:
    """YamlLoader memoizes tags per text and skips words no implicit type starts with; every
    scalar still gets the tag the safe loader gives it, plain or quoted, as key or value, and
    the value built from it (decimal integers take a quicker path) is the safe loader's."""
    body = [f"- {json.dumps(w) if quoted else w}" for w in words]
    body += [f"- {{{w}: {w}}}" for w in words]
    text = "\n".join(body)

    def tags(loader_class: type[yaml.SafeLoader]) -> list[tuple[str, str]] | None:
        loader = loader_class(text)
        try:
            node = loader.get_single_node()
        except yaml.YAMLError:
            return None
        finally:
            loader.dispose()
        found: list[tuple[str, str]] = []
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, yaml.ScalarNode):
                found.append((n.tag, n.value))
            elif isinstance(n, yaml.SequenceNode):
                stack += n.value
            elif isinstance(n, yaml.MappingNode):
                stack += [x for pair in n.value for x in pair]
        return found

    assert tags(YamlLoader) == tags(yaml.CSafeLoader)
    try:
        expected = yaml.load(text, Loader=yaml.CSafeLoader)
    except (yaml.YAMLError, ValueError):
        return
    loader = YamlLoader(text)
    try:
        built, _ = _construct(loader, loader.get_single_node())
    finally:
        loader.dispose()
    assert built == expected  # PyYAML builds one nan object, so even .nan compares equal


def test_half_a_character_in_a_json_rubric_is_a_collection_error(
    pytester: pytest.Pytester,
) -> None:
    """The YAML loader refuses a lone surrogate escape; JSON took it, and a case id holding
    one ended an `-n 2` run in INTERNALERROR (execnet cannot send it)."""
    pytester.makeini("[pytest]\n")
    (pytester.path / "s.rubric.json").write_text(
        '{"cases": [\n {"id": "q\\ud83d", "response": "ok",'
        ' "criteria": [{"type": "any_of", "any_of": ["ok"]}]}]}',
        encoding="utf-8",
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*s.rubric.json:2: the escape \\ud83d is half a character (a lone surrogate)*"]
    )


def test_half_a_character_in_an_answer_is_written_as_u_fffd_and_the_run_goes_on(
    team: Callable[..., None], pytester: pytest.Pytester
) -> None:
    """Lone surrogates are replaced at the output boundary. One `\\ud83d` escape in a
    line of a responses file stopped the whole run (exit 4, no report), where the same text
    from a target was graded and written with U+FFFD."""
    broken = "Yes, within 24 hours \ud83d from the Orders page."
    team(answers={"refund": "Within 30 days only.", "cancel": broken})
    (pytester.path / "answers").mkdir()
    (pytester.path / "answers" / "bot.jsonl").write_text(
        '{"id": "refund", "response": "Within 30 days only."}\n'
        '{"id": "cancel", "response": "Yes, within 24 hours \\ud83d from the Orders page."}\n',
        encoding="utf-8",
    )
    # The target answers too: the same text, from both sources, in one run.
    result = pytester.runpytest("--rubric-responses", "answers", "--rubric-json", "out.json")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=4)
    results = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))["results"]
    cancel = {r["subject"]: r["response"] for r in results if r["case"] == "cancel"}
    assert cancel == dict.fromkeys(
        ["answer", "bot"], "Yes, within 24 hours \ufffd from the Orders page."
    )
