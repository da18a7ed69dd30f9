"""Untrusted engines (``pytest_rubric._guards.engines``): no retrieval ever, RE2 or a time bound for
every pattern, a time bound for every check that can grow faster than the answer.

Each test here failed before the guard it names: a schema's ``$ref`` was
fetched from a server and decided the verdict, ``^(a+)+$`` in a schema ran
past 30 s on 41 characters, ``uniqueItems`` on 8,000 objects past 25 s, a
``delete_all`` nested 300 levels deep lifted its penalty as UNMET, and
``{"count": 1e400}`` fitted ``minimum: 0``.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from pytest_rubric import RubricLoadError
from pytest_rubric._guards import engines as _engines
from pytest_rubric._guards import schemas as _schemas
from pytest_rubric._guards.engines import CheckTimeout, Deadline
from pytest_rubric._guards.schemas import schema_problems, schema_validator
from pytest_rubric._load.loader import load_suite
from pytest_rubric._results import Outcome, Verdict
from pytest_rubric._trace import Passage
from pytest_rubric.criteria import Json
from pytest_rubric.criteria import json as _json_criterion
from pytest_rubric.criteria import json_text as _json_text
from pytest_rubric.criteria.check import Answer, CheckContext
from pytest_rubric.judge.evidence import Quoted, check_evidence
from pytest_rubric.judge.grounding import supported
from tests.conftest import HANG_GUARD, examples
from tests.fake_llm import FakeLLM, json_reply, raw

pytestmark = pytest.mark.hostile

Write = Callable[[str, str], Path]
MET, UNMET, ERROR = Verdict.MET, Verdict.UNMET, Verdict.ERROR


def check(schema: Any, answer: str, *, timeout: float = 5.0) -> Outcome:
    return Json(id="j", schema=schema).compile(CheckContext(check_timeout=timeout))(
        Answer(answer), None
    )


# --- no schema reaches outside itself -------------------------------------------------------


def test_a_ref_to_a_server_is_a_collection_error_and_nothing_is_fetched(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM
) -> None:
    # The server would answer with a schema every answer fits: it decided the verdict before.
    fake_llm.respond_with(lambda request: raw(json.dumps({"type": "string"})))
    secret = pytester.path / "secret.json"
    secret.write_text('{"type": "string", "description": "TOP-SECRET-CONTENT"}')
    write("evals/other.json", '{"type": "string"}')
    write(
        "evals/refs.rubric.yaml",
        f"""
        cases:
          - id: q1
            response: '"free text"'
            criteria:
              - id: remote
                type: json
                schema: {{$ref: "{fake_llm.url}/s.json"}}
          - id: q2
            response: '"free text"'
            criteria:
              - id: local_file
                type: json
                schema:
                  properties:
                    a: {{$ref: "file://{secret}"}}
          - id: q3
            response: '"free text"'
            criteria:
              - id: relative
                type: json
                schema: {{items: {{$ref: "other.json#/x"}}}}
        """,
    )
    result = pytester.runpytest("--rubric-dir", "evals")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*refs.rubric.yaml:7, case 'q1', criterion 'remote', field 'schema': `schema` cannot "
            f"be used: at /$ref, $ref '{fake_llm.url}/s.json' reaches outside the schema; "
            "nothing is fetched or read",
            "    -> copy what it names under this schema's $defs (definitions before draft "
            "2019-09) and refer to it as '#/$defs/NAME'",
            "*refs.rubric.yaml:15, case 'q2', criterion 'local_file', field 'schema': * at "
            f"/properties/a/$ref, $ref 'file://{secret}' reaches outside the schema*",
            "*refs.rubric.yaml:21, case 'q3', criterion 'relative', field 'schema': * at "
            "/items/$ref, $ref 'other.json#/x' reaches outside the schema*",
        ]
    )
    assert fake_llm.requests == []
    assert "TOP-SECRET-CONTENT" not in result.stdout.str()


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/a", "$defs": {"a": {"type": "string"}}},
        {"$ref": "#name", "$defs": {"a": {"$anchor": "name", "type": "string"}}},
        {
            "$id": "https://example.test/root.json",
            "$ref": "item.json",
            "$defs": {"item": {"$id": "item.json", "type": "string"}},
        },
        {"$dynamicRef": "#meta", "$defs": {"m": {"$dynamicAnchor": "meta", "type": "string"}}},
        {"properties": {"next": {"$ref": "#"}}, "type": ["string", "object"]},
    ],
)
def test_references_inside_the_document_resolve(schema: dict[str, Any]) -> None:
    assert schema_problems(schema) == []
    assert check(schema, '"text"').verdict is MET
    assert check(schema, "12").verdict is UNMET


@pytest.mark.parametrize(
    ("schema", "where", "says"),
    [
        ({"$ref": "https://json-schema.org/draft/2020-12/schema"}, ("$ref",), "reaches outside"),
        ({"$ref": "urn:example:thing"}, ("$ref",), "reaches outside"),
        ({"$id": "https://x.test/a.json", "$ref": "b.json"}, ("$ref",), "reaches outside"),
        ({"$ref": "#/$defs/missing"}, ("$ref",), "names nothing"),
        ({"$dynamicRef": "http://x.test/s#a"}, ("$dynamicRef",), "reaches outside"),
        ({"$ref": "#/enum", "enum": [1]}, ("$ref",), "names a value that is not a schema"),
        # What a reference reaches is checked too, even where no keyword would look.
        ({"$ref": "#/x", "x": {"$ref": "http://x.test/s"}}, ("x", "$ref"), "reaches outside"),
        (
            {"allOf": [{"$schema": "http://json-schema.org/draft-07/schema#"}]},
            ("allOf", 0, "$schema"),
            "below the top",
        ),
        ({"pattern": "(unclosed"}, ("pattern",), "not a valid regex"),
        ({"patternProperties": {"[z-a]": {}}}, ("patternProperties", "[z-a]"), "not a valid regex"),
        ({"minimum": float("nan")}, ("minimum",), "not finite"),
        ({"enum": [1, float("inf")]}, ("enum", 1), "not finite"),
        (
            {"patternProperties": {"^a": {}}, "unevaluatedProperties": False},
            ("patternProperties",),
            "no time bound can stop",
        ),
    ],
)
def test_what_a_schema_may_not_hold_is_found_at_its_path(
    schema: dict[str, Any], where: tuple[Any, ...], says: str
) -> None:
    (problem,) = schema_problems(schema)
    assert (problem.path, says in problem.message) == (where, True)
    with pytest.raises(ValidationError, match="`schema` cannot be used"):
        Json(id="j", schema=schema)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.sampled_from(["#", "(x"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["$ref", "pattern", "a"]), inner, max_size=2)
    ),
    max_leaves=6,
)
_NAMES = st.sampled_from(["a", "const", "$ref"])


def _schema(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries(
        {},
        optional={
            "const": _JSON,
            "default": _JSON,
            "enum": st.lists(_JSON, min_size=1, max_size=3),
            "minimum": st.floats(),
            "pattern": st.sampled_from(["^a", "(x"]),
            "$ref": st.sampled_from(
                ["#", "#/$defs/a", "#/properties/a/const", "#/enum/0", "urn:x"]
            ),
            "$schema": st.just("http://json-schema.org/draft-07/schema#"),
            "properties": st.dictionaries(_NAMES, inner, max_size=2),
            "$defs": st.dictionaries(_NAMES, inner, max_size=2),
            "patternProperties": st.dictionaries(
                st.sampled_from(["^a", "[z-a]"]), inner, max_size=1
            ),
            "unevaluatedProperties": st.booleans(),
            "items": inner,
            "allOf": st.lists(inner, min_size=1, max_size=2),
        },
    )


SCHEMAS = st.recursive(st.booleans() | _schema(st.booleans()), _schema, max_leaves=6)


@settings(max_examples=examples(300), deadline=None)
@given(schema=SCHEMAS)
def test_schemas_that_differ_only_where_the_shape_blanks_share_one_safety_check(
    schema: dict[str, Any],
) -> None:
    """A rubric's cases each name their own `const`; the check of what a schema may not hold
    is made once for their shape, and only where it finds there what it finds in each."""
    if not isinstance(schema, dict) or "$schema" in schema:
        return  # a `$schema` at the top sets the draft; below it, a problem the test looks for
    if _json_text._same_in_shape(schema):
        assert schema_problems(_json_text._shape(schema)) == schema_problems(schema)


@pytest.mark.parametrize(
    ("schema", "shared"),
    [
        ({"properties": {"order_id": {"const": "7"}}, "required": ["order_id"]}, True),
        # A reference can reach what the shape blanks; a `const` can hold what the check reads.
        ({"$ref": "#/enum/0", "enum": [False]}, False),
        ({"const": {"patternProperties": {"^a": {}}, "unevaluatedProperties": False}}, False),
        ({"properties": {"a": {"enum": [1, float("inf")]}}}, False),
    ],
)
def test_the_safety_check_is_shared_only_where_the_shape_finds_the_same(
    schema: dict[str, Any], shared: bool
) -> None:
    same = schema_problems(_json_text._shape(schema)) == schema_problems(schema)
    assert (_json_text._same_in_shape(schema), same) == (shared, shared)


def test_the_validator_itself_refuses_to_retrieve(fake_llm: FakeLLM) -> None:
    """Behind the check at load, the validator's registry refuses every retrieval."""
    from referencing.exceptions import Unresolvable

    validator = schema_validator({"$ref": f"{fake_llm.url}/s.json"})
    with pytest.raises(Unresolvable):
        list(validator.iter_errors("x"))
    assert fake_llm.requests == []


_REFS = st.sampled_from(
    [
        "#",
        "#/$defs/a",
        "#/$defs/b",
        "#/$defs/missing",
        "#anchor",
        "#/properties/x",
        "a.json",
        "../etc/passwd",
        "file:///etc/passwd",
        "http://127.0.0.1:9/s.json",
        "https://example.test/s.json#/a",
        "urn:x",
        "//host/s.json",
    ]
)
_SCHEMAS = st.recursive(
    st.one_of(
        st.builds(lambda ref: {"$ref": ref}, _REFS),
        st.builds(lambda ref: {"$dynamicRef": ref}, _REFS),
        st.just({"type": "string"}),
        st.just({"$anchor": "anchor"}),
    ),
    lambda inner: st.one_of(
        st.builds(lambda s: {"items": s}, inner),
        st.builds(lambda a, b: {"allOf": [a, b]}, inner, inner),
        st.builds(lambda s: {"properties": {"x": s}}, inner),
        st.builds(lambda a, b: {"$defs": {"a": a, "b": b}, "anyOf": [a]}, inner, inner),
        st.builds(lambda s, i: {"$id": i, "items": s}, inner, st.sampled_from(["s.json", "urn:y"])),
    ),
    max_leaves=6,
)
_INSTANCES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.just("x"), inner, max_size=1),
    max_leaves=6,
)


@settings(max_examples=examples(200), deadline=None)
@given(schema=_SCHEMAS, instances=st.lists(_INSTANCES, min_size=1, max_size=3))
def test_a_schema_that_loads_never_retrieves_anything(schema: Any, instances: list[Any]) -> None:
    asked: list[str] = []

    def spy(uri: str) -> Any:
        asked.append(uri)
        raise AssertionError(f"retrieval asked for {uri}")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_schemas, "_refuse", spy)
        patch.setattr(urllib.request, "urlopen", spy)  # jsonschema's own retrieval
        try:
            criterion = Json(id="j", schema=schema)
        except ValidationError:
            return  # a collection error: nothing ever runs
        compiled = criterion.compile(CheckContext(check_timeout=1.0))
        for instance in instances:
            outcome = compiled(Answer(json.dumps(instance)), None)
            assert outcome.verdict in (MET, UNMET, ERROR)
            assert "retrieval asked" not in outcome.reason
    assert asked == []


def test_a_panic_of_the_compiled_schema_library_is_an_error_not_a_crash() -> None:
    """A ``$ref`` that refers to itself can recurse inside the compiled ``rpds`` library,
    which raises pyo3's ``PanicException`` (a ``BaseException``, not an ``Exception``):
    hypothesis found one (``--hypothesis-seed=259042580634759449508458318858031247662``)."""

    class PanicException(BaseException):  # pyo3_runtime's, by name
        pass

    class Panicking:
        def iter_errors(self, value: Any) -> Any:
            raise PanicException("__eq__ failed!: RecursionError")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_json_criterion, "schema_validator", lambda schema: Panicking())
        compiled = Json(id="j", schema={"$ref": "#"}).compile(CheckContext(check_timeout=1.0))
        outcome = compiled(Answer("[1]"), None)
    assert outcome.verdict is ERROR
    assert "recursed past the interpreter's limit" in outcome.reason


# --- every pattern on RE2 or under a time bound ------------------------------------------


@pytest.mark.timeout(HANG_GUARD)
def test_a_catastrophic_schema_pattern_runs_in_linear_time() -> None:
    """``^(a+)+$`` on 41 characters ran past 30 s on Python's ``re``; on 60 it would run for
    longer than the universe has existed, and RE2 takes under a millisecond."""
    answer = json.dumps("a" * 60 + "!")
    outcome = check({"type": "string", "pattern": "^(a+)+$"}, answer)
    assert outcome.verdict is UNMET
    assert "pattern" in outcome.reason
    keyed = json.dumps({"a" * 60 + "!": 1, "a" * 30: "x"})
    for schema in (
        {"patternProperties": {"^(a+)+$": {"type": "integer"}}},
        {"patternProperties": {"^(a+)+$": {}}, "additionalProperties": False},
        {"propertyNames": {"pattern": "^(a+)+$"}},
    ):
        assert check(schema, keyed).verdict is UNMET, schema


@pytest.mark.timeout(HANG_GUARD)
def test_a_schema_pattern_re2_cannot_run_is_bounded_in_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lookaround needs the backtracking engine: each search is cut off, and the
    criterion is ERROR (the bound is shortened here)."""
    monkeypatch.setattr(_engines, "PATTERN_TIMEOUT", 0.2)
    schema = {"type": "string", "pattern": "^(?=a)(a|aa)+$"}
    outcome = check(schema, json.dumps("a" * 60 + "!"))
    assert outcome.verdict is ERROR
    assert "gave up after 0.2 s of backtracking" in outcome.reason
    assert check(schema, json.dumps("aaa")).verdict is MET
    assert check(schema, json.dumps("baa")).verdict is UNMET


_ATOMS = st.sampled_from(["a", "aa", "a?", "[a-z]", ".", "\\w", "(?=a)", "(?!b)", "(a)\\1", "b"])
_PATTERNS = st.recursive(
    _ATOMS,
    lambda inner: st.one_of(
        st.builds("({})+".format, inner),
        st.builds("({})*".format, inner),
        st.builds("({}|{})".format, inner, inner),
        st.builds("{}{}".format, inner, inner),
        st.builds("({}){{1,20}}".format, inner),
    ),
    max_leaves=6,
).map(lambda body: f"^{body}$")


@pytest.mark.timeout(HANG_GUARD)
@settings(max_examples=examples(60), deadline=None)
@given(pattern=_PATTERNS, length=st.integers(min_value=0, max_value=60))
def test_any_schema_pattern_on_any_answer_ends_within_its_bounds(pattern: str, length: int) -> None:
    """Nested repetition, alternation, lookaround and backreferences: RE2 runs what it can in
    linear time, the rest stops at the regex time bound, the whole check at its own."""
    text = "a" * length + "!"
    schemas = [
        {"type": "string", "pattern": pattern},
        {"patternProperties": {pattern: {"type": "integer"}}, "additionalProperties": False},
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_engines, "PATTERN_TIMEOUT", 0.05)
        for schema, answer in zip(
            schemas, (json.dumps(text), json.dumps({text: 1, "a": 2})), strict=True
        ):
            try:
                criterion = Json(id="j", schema=schema)
            except ValidationError:
                continue  # a pattern that compiles nowhere: a collection error
            outcome = criterion.compile(CheckContext(check_timeout=0.3))(Answer(answer), None)
            assert outcome.verdict in (MET, UNMET, ERROR)
            if outcome.verdict is ERROR:
                assert "gave up after" in outcome.reason


def test_schema_patterns_read_the_text_as_json_schema_means_it() -> None:
    """RE2 like ECMA-262: ``$`` is the end of the text, ``\\d`` an ASCII digit."""
    assert check({"pattern": "^[0-9]+$"}, json.dumps("123\n")).verdict is UNMET
    assert check({"pattern": "^\\d+$"}, json.dumps("١٢٣")).verdict is UNMET
    assert check({"pattern": "é"}, json.dumps("café")).verdict is MET


# --- a time bound for every super-linear check ------------------------------------------


def test_unique_items_on_thousands_of_objects_is_linear_and_exact() -> None:
    """jsonschema compares every pair of objects: 8,000 ran past 25 s."""
    many = json.dumps([{"k": i, "v": [i, str(i)]} for i in range(8000)])
    outcome = check({"type": "array", "uniqueItems": True}, many)
    # MET, not ERROR: a quadratic check would run past rubric_check_timeout (5 s) on these
    # (26 ms measured).
    assert outcome.verdict is MET
    unique = {"uniqueItems": True}
    assert check(unique, '[{"a": 1, "b": [2]}, {"b": [2], "a": 1}]').verdict is UNMET
    assert check(unique, "[1, 1.0]").verdict is UNMET  # one number, as JSON Schema says
    assert check(unique, "[true, 1, false, 0, null]").verdict is MET  # booleans are not numbers
    assert check(unique, "[[1, 2], [2, 1]]").verdict is MET  # order matters in an array
    assert check(unique, '[{"a": 1}, {"a": 1, "b": 0}]').verdict is MET


def _exponential(levels: int) -> dict[str, Any]:
    """A schema of linear size whose validation takes 2**levels steps: each level tries
    the one below it twice, and the bottom never fits."""
    defs: dict[str, Any] = {"d0": {"type": "string", "minLength": 10**6}}
    for i in range(1, levels + 1):
        below = {"$ref": f"#/$defs/d{i - 1}"}
        defs[f"d{i}"] = {"anyOf": [below, below]}
    return {"$defs": defs, "$ref": f"#/$defs/d{levels}"}


@pytest.mark.timeout(HANG_GUARD)
def test_a_validation_past_its_time_bound_is_an_error() -> None:
    outcome = check(_exponential(40), '"x"', timeout=0.3)  # cut off, not run to 2**40 steps
    assert outcome.verdict is ERROR
    assert "could not finish" in outcome.reason and "rubric_check_timeout" in outcome.reason


@pytest.mark.timeout(HANG_GUARD)
def test_the_time_bound_is_the_ini_option_end_to_end(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    pytester.makeini("[pytest]\nrubric_check_timeout = 0.3\n")
    write(
        "evals/slow.rubric.yaml",
        "cases:\n  - id: q1\n    response: '\"x\"'\n    criteria:\n"
        f"      - {{id: shaped, type: json, schema: {json.dumps(_exponential(40))}}}\n",
    )
    result = pytester.runpytest("--rubric-dir", "evals", "--rubric-json", "out.json")
    result.assert_outcomes(errors=1)
    (case,) = rubric_json()["results"]
    assert case["criteria"][0]["verdict"] == "ERROR"
    assert "gave up after 0.3 s" in case["criteria"][0]["reason"]


def test_the_ini_time_bound_must_be_a_positive_number(
    pytester: pytest.Pytester, write: Write
) -> None:
    pytester.makeini("[pytest]\nrubric_check_timeout = soon\n")
    write(
        "evals/a.rubric.yaml",
        "cases:\n  - {id: q1, response: x, criteria: [{type: any_of, any_of: [x]}]}\n",
    )
    result = pytester.runpytest("--rubric-dir", "evals")
    result.stderr.fnmatch_lines(["*rubric_check_timeout = 'soon' must be a positive number*"])


def test_a_deadline_bounds_whatever_runs_inside_it() -> None:
    deadline = Deadline(0.05)
    deadline.check()
    time.sleep(0.06)
    with pytest.raises(CheckTimeout, match=r"gave up after 0\.05 s"):
        deadline.check()


# --- a validation that could not finish is ERROR, never UNMET -----------------------------

DELETE_ALL = {
    "$defs": {
        "call": {
            "type": "object",
            "properties": {"tool": {"const": "delete_all"}},
            "required": ["tool"],
        },
        "anywhere": {
            "anyOf": [
                {"$ref": "#/$defs/call"},
                {"type": "object", "additionalProperties": {"$ref": "#/$defs/anywhere"}},
                {"type": "array", "items": {"$ref": "#/$defs/anywhere"}},
            ]
        },
    },
    "$ref": "#/$defs/anywhere",
}


def _nested(depth: int) -> str:
    document: Any = {"tool": "delete_all"}
    for _ in range(depth):
        document = {"step": document}
    return json.dumps(document)


def test_a_penalty_is_not_lifted_by_nesting_the_call_deeper(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    """At depth 300 the validator ran out of stack and said UNMET: the case passed."""
    write(
        "evals/tools.rubric.yaml",
        f"""
        cases:
          - id: q1
            responses:
              shallow: '{_nested(30)}'
              deep: '{_nested(300)}'
              clean: '{{"tool": "list_files"}}'
            criteria:
              - {{id: valid, type: json}}
              - {{id: deletes, type: json, weight: -1, schema: {json.dumps(DELETE_ALL)}}}
        """,
    )
    result = pytester.runpytest("--rubric-dir", "evals", "--rubric-json", "out.json")
    result.assert_outcomes(passed=1, failed=1, errors=1)
    verdicts = {
        r["subject"]: (r["passed"], r["criteria"][1]["verdict"]) for r in rubric_json()["results"]
    }
    assert verdicts == {
        "shallow": (False, "MET"),
        "deep": (False, "ERROR"),
        "clean": (True, "UNMET"),
    }


@pytest.mark.parametrize("fenced", [True, False])
def test_an_answer_too_deep_to_parse_is_an_error_unless_it_is_malformed(fenced: bool) -> None:
    """Past the parser's stack a well-nested answer may still be valid JSON holding the call
    a penalty is about: ERROR. Brackets that never close are simply not JSON: UNMET."""
    deep = '{"step": ' * 5_000 + '{"tool": "delete_all"}' + "}" * 5_000
    wrapped = f"```json\n{deep}\n```" if fenced else deep
    criterion = Json(id="j", weight=-1, schema=DELETE_ALL, fenced=fenced)
    outcome = criterion.compile(CheckContext())(Answer(wrapped), None)
    assert outcome.verdict is ERROR
    assert "nests deeper than the JSON parser can follow" in outcome.reason
    for malformed in ("[" * 100_000, '{"a": ' * 5_000 + "1" + "}" * 4_999 + "]"):
        assert criterion.compile(CheckContext())(Answer(malformed), None).verdict is UNMET


def test_a_number_too_large_to_check_is_an_error() -> None:
    outcome = check({"multipleOf": 0.1}, "1" + "0" * 400)
    assert outcome.verdict in (UNMET, ERROR)  # exact arithmetic or a could-not-finish
    if outcome.verdict is ERROR:
        assert "could not finish" in outcome.reason


# --- numbers that are not finite --------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        '{"count": 1e400}',
        '{"count": -1e400}',
        "[1, 2, 1e999]",
        "1e309",
        '{"count": ' + "9" * 400 + "}",
        '{"count": ' + "9" * 5_000 + "}",  # past the digits int() reads: still JSON
        '{"count": -' + "9" * 1_000_000 + "}",
    ],
    ids=["1e400", "-1e400", "1e999-in-a-list", "1e309", "400-digits", "5000-digits", "-1M-digits"],
)
def test_a_number_that_is_not_finite_fits_no_schema(answer: str) -> None:
    schema = {"type": ["object", "array", "number"], "properties": {"count": {"minimum": 0}}}
    outcome = check(schema, answer)
    assert outcome.verdict is UNMET
    assert "not finite" in outcome.reason
    assert check(True, answer).verdict is UNMET  # not even the schema that allows everything
    assert (
        Json(id="j").compile(CheckContext())(Answer(answer), None).verdict is MET
    )  # no schema: JSON


def test_non_finite_numbers_in_a_schema_and_overflowing_weights_are_collection_errors(
    tmp_path: Path,
) -> None:
    path = tmp_path / "n.rubric.yaml"
    path.write_text(
        "cases:\n"
        "  - id: q1\n"
        "    criteria:\n"
        "      - {id: count, type: json, schema: {properties: {count: {minimum: .nan}}}}\n"
        "      - {id: huge, type: json, schema: {maximum: 1e400}}\n"
        "  - id: q2\n"
        "    criteria:\n"
        "      - {id: ok, type: any_of, any_of: [x]}\n"
        "      - {id: bad1, type: forbidden, phrases: [rm -rf], penalty: 1e308}\n"
        "      - {id: bad2, type: forbidden, phrases: [drop table], penalty: 1e308}\n",
        encoding="utf-8",
    )
    with pytest.raises(RubricLoadError) as raised:
        load_suite(path)
    found = {(p.line, p.case, p.criterion): p.message for p in raised.value.problems}
    assert (
        "at /properties/count/minimum, holds a number that is not finite"
        in found[(4, "q1", "count")]
    )
    assert "at /maximum, holds a number that is not finite" in found[(5, "q1", "huge")]
    assert "penalties add up to more than a number can hold" in found[(6, "q2", None)]
    assert len(found) == 3


# --- evidence: linear in the response, bounded in time ---------------------------------------

_VOCABULARY = [
    "the",
    "refund",
    "policy",
    "is",
    "thirty",
    "days",
    "and",
    "you",
    "can",
    "return",
    "any",
    "item",
    "that",
    "is",
    "unused",
    "in",
    "its",
    "original",
    "box",
    "with",
    "the",
    "receipt",
    "we",
    "pay",
    "for",
    "shipping",
    "when",
    "the",
    "item",
    "arrived",
    "damaged",
]


def _prose(characters: int, seed: int) -> str:
    import random

    pick = random.Random(seed).choice
    words: list[str] = []
    length = 0
    while length < characters:
        words.append(pick(_VOCABULARY))
        length += len(words[-1]) + 1
    return " ".join(words)


def test_long_invented_quotes_are_not_found_quickly() -> None:
    """Five 10 KB invented quotes against a 20 KB answer kept one criterion past 45 s. Each
    search runs under the check's deadline (``rubric_check_timeout``, 5 s), past which it
    raises: a False is a search that finished."""
    response = _prose(20_000, seed=1)
    found = [Quoted(response).has(_prose(10_000, seed=n)) for n in range(2, 7)]
    assert found == [False] * 5


def test_a_long_true_quote_is_found_and_not_with_a_slip_or_an_invented_passage() -> None:
    response = _prose(20_000, seed=1)
    start, end = response.index(" ", 5_000), response.index(" ", 15_000)
    quote = response[start:end]
    slipped = quote[:3_000] + "x" + quote[3_000:7_000] + quote[7_001:]
    assert Quoted(response).has(quote)
    assert not Quoted(response).has(slipped)  # a word that differs is a word not said
    invented = quote[:5_000] + " and we never charge a fee for any of it, ever. " + quote[5_000:]
    assert not Quoted(response).has(invented)
    assert not Quoted(quote).has(quote + " and more that it never said")


def test_a_quote_longer_than_the_response_is_not_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    import rapidfuzz.fuzz

    def searched(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("searched")

    for name in ("partial_ratio_alignment", "partial_ratio", "ratio"):
        monkeypatch.setattr(rapidfuzz.fuzz, name, searched)
    response = "The refund policy is thirty days."
    assert not Quoted(response).has(f"As it says: {response} And it is always right.")


def test_an_evidence_search_past_its_time_bound_is_an_error() -> None:
    """Every place the quote is found follows a negation, so each is looked at: past the
    bound (here shorter than reading the response takes), the criterion is ERROR."""
    response = "not a " * 200_000
    met = Outcome(MET, 1.0, "judged")
    criterion = SimpleNamespace(id="c", kind="boolean", effective_weight=-1.0)
    outcome = check_evidence(
        met, criterion, response, mode="check", quotes=["a not a"], timeout=0.001
    )
    assert (outcome.verdict, outcome.credit) == (ERROR, 0.0)
    assert "its evidence could not be checked" in outcome.reason
    assert "gave up after 0.001 s" in outcome.reason
    # Given the time (a bound no machine's load reaches), the same search ends: not found.
    found = check_evidence(met, criterion, response, mode="check", quotes=["a not a"], timeout=600)
    assert (found.verdict, found.evidence_ok) == (MET, False)


def test_quotes_never_found_in_long_passages_are_bounded_too() -> None:
    """A grounded reply of many claims whose quotes no passage holds: each search is short,
    but they add up (claims x passages x context), so each is a step of the bound; past it,
    the criterion is ERROR, never UNMET."""
    claims = [(f"claim {i}", f"a quote the context never says {i}") for i in range(300)]
    context = [Passage(_prose(2_000, seed=n)) for n in range(5)]
    outcome = supported("judged", claims, context, timeout=0.0)
    assert outcome.verdict is ERROR and "could not all be checked" in outcome.reason
    # Given the time, the same search ends: none supported.
    assert supported("judged", claims, context, timeout=600).verdict is Verdict.UNMET


def test_invented_long_quotes_end_to_end(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    response = _prose(20_000, seed=1)
    quotes = [_prose(10_000, seed=n) for n in range(2, 7)]
    fake_llm.respond_with(
        lambda request: json_reply({"reason": "judged", "verdict": "MET", "evidence": quotes})
    )
    write(
        "evals/long.rubric.yaml",
        f"""
        cases:
          - id: q1
            response: "{response}"
            criteria:
              - {{id: refund, requirement: "Says the refund window is thirty days"}}
        """,
    )
    result = pytester.runpytest(
        "--rubric-judge=openai:m",
        f"--rubric-judge-url={fake_llm.openai_url}",
        "--rubric-judge-timeout=2",
        "--rubric-json=out.json",
    )
    result.assert_outcomes(passed=1)
    (criterion,) = rubric_json()["results"][0]["criteria"]
    assert (criterion["verdict"], criterion["evidence_ok"]) == ("MET", False)
