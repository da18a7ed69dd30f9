"""The `json` criterion: JSON Pointers, any JSON Schema, and deterministic checks on fields."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from pytest_rubric import RubricLoadError
from pytest_rubric._load.loader import load_suite
from pytest_rubric._results import Outcome, Verdict
from pytest_rubric.criteria import Json
from pytest_rubric.criteria import json as json_criterion
from pytest_rubric.criteria.check import Answer, CheckContext
from pytest_rubric.criteria.json import MISSING, resolve_pointer
from pytest_rubric.criteria.json_text import is_pointer
from tests.conftest import examples

MET, UNMET, ERROR = Verdict.MET, Verdict.UNMET, Verdict.ERROR
Write = Callable[[str, str], Path]


def check(criterion: dict[str, Any], text: str) -> Outcome:
    return Json(id="j", **criterion).compile(CheckContext())(Answer(text), None)


# --- pointers (RFC 6901) -------------------------------------------------------------------------

DOC = {
    "foo": ["bar", "baz"],
    "": 0,
    "a/b": 1,
    "m~n": 8,
    "~1": 9,
    "items": [{"price": 3.5}, {"price": 4}],
    "nothing": None,
}


@pytest.mark.parametrize(
    ("pointer", "expected"),
    [
        ("", DOC),  # the whole document
        ("/foo", ["bar", "baz"]),
        ("/foo/0", "bar"),
        ("/foo/1", "baz"),
        ("/", 0),  # the key ""
        ("/a~1b", 1),  # ~1 is "/"
        ("/m~0n", 8),  # ~0 is "~"
        ("/~01", 9),  # ~01 is "~1", not "/": ~1 is decoded first
        ("/items/1/price", 4),
        ("/nothing", None),  # present, and null
    ],
)
def test_a_pointer_names_a_value(pointer: str, expected: Any) -> None:
    assert resolve_pointer(DOC, pointer) == expected


@pytest.mark.parametrize(
    "pointer",
    [
        "/missing",
        "/foo/2",  # past the end
        "/foo/-",  # the element after the last: nothing there yet
        "/foo/01",  # RFC 6901 indices have no leading zero
        "/foo/-1",
        "/foo/x",
        "/foo/0/deeper",  # into a string
        "/nothing/x",  # into null
        "/a/b",  # not "/a~1b"
        "foo",  # not a pointer: no leading "/"
        "/bad~2escape",
        "/trailing~",
    ],
)
def test_a_pointer_that_names_nothing_is_missing(pointer: str) -> None:
    assert resolve_pointer(DOC, pointer) is MISSING


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
POINTERS = st.one_of(
    st.text(max_size=20),
    st.lists(st.sampled_from(["0", "1", "a", "", "~0", "~1", "01", "-", "x/y"]), max_size=4).map(
        lambda parts: "".join("/" + p for p in parts)
    ),
)
FIELD_BODIES = [
    {"type": "number", "value": 3, "abs_tol": 0.5},
    {"type": "any_of", "any_of": ["a", "1"]},
    {"type": "regex", "pattern": "^[a-z]+$"},
    {"type": "length", "max_chars": 5},
    {"type": "fuzzy", "any_of": ["abc"]},
    {"type": "metric", "expected": ["a", "b"], "metric": "recall"},
]


@settings(max_examples=examples(150), deadline=None)
@given(document=JSON_VALUES, pointer=POINTERS)
def test_any_value_and_any_pointer_give_a_value_or_missing(document: Any, pointer: str) -> None:
    found = resolve_pointer(document, pointer)
    assert found is MISSING or found is document or json.dumps(found) in json.dumps(document)


@settings(max_examples=examples(100), deadline=None)
@given(
    document=JSON_VALUES,
    pointers=st.lists(POINTERS.filter(is_pointer), min_size=1, max_size=3),
    body=st.sampled_from(FIELD_BODIES),
)
def test_any_document_and_any_pointer_give_a_verdict_never_a_crash(
    document: Any, pointers: list[str], body: dict[str, Any]
) -> None:
    criterion = {"fields": dict.fromkeys(pointers, body), "schema": {"type": ["object", "array"]}}
    outcome = check(criterion, json.dumps(document))
    assert outcome.verdict in (MET, UNMET)
    assert 0 <= outcome.credit <= 1
    if isinstance(document, dict | list):  # it fits the schema: each field is MET or listed
        for pointer in pointers:
            if resolve_pointer(document, pointer) is MISSING:
                assert f"{pointer}: missing" in outcome.reason


# --- fields: the value rules ---------------------------------------------------------------------

ORDER = '{"total": 1157.63, "currency": "USD", "note": "total 1,157.63 dollars", "paid": true}'


@pytest.mark.parametrize(
    ("pointer", "body", "expected"),
    [
        ("/total", {"type": "number", "value": 1157.63, "abs_tol": 0.01}, MET),  # the value
        ("/total", {"type": "number", "value": 1157, "abs_tol": 0.5}, UNMET),
        ("/note", {"type": "number", "value": 1157.63}, MET),  # a string: numbers found in it
        ("/paid", {"type": "number", "value": 1}, UNMET),  # true is no number: reads "true"
        ("/paid", {"type": "regex", "pattern": "^true$"}, MET),  # compact JSON text
        ("", {"type": "all_of", "all_of": ['"currency":"usd"']}, MET),  # the whole answer
        ("/currency", {"type": "any_of", "any_of": ["usd"]}, MET),  # normalized like an answer
        ("/currency", {"type": "regex", "pattern": "^EUR$"}, UNMET),
        ("/currency", {"type": "length", "max_chars": 3}, MET),
        ("/missing", {"type": "any_of", "any_of": ["x"]}, UNMET),
    ],
)
def test_field_value_rules(pointer: str, body: dict[str, Any], expected: Verdict) -> None:
    assert check({"fields": {pointer: body}}, ORDER).verdict is expected


def test_a_number_check_on_a_huge_json_integer_is_never_within() -> None:
    body = {"type": "number", "value": 1, "rel_tol": 1.0}
    assert check({"fields": {"/n": body}}, '{"n": ' + "9" * 400 + "}").verdict is UNMET
    assert check({"fields": {"/n": body}}, '{"n": 1e309}').verdict is UNMET


@pytest.mark.parametrize("digits", [400, 4_000, 5_000, 1_000_000])
def test_an_integer_of_any_length_is_json_and_only_its_field_fails(digits: int) -> None:
    """Past 4,300 digits int() refuses a literal: read as the float it overflows, it fails
    its own field as a 400-digit one does, never the whole answer as "not JSON"."""
    fields = {
        f"/{name}": {"type": "number", "value": v} for name, v in [("total", 5), ("a", 1), ("b", 2)]
    }
    answer = '{"total": 1' + "0" * (digits - 1) + ', "a": 1, "b": 2}'
    outcome = check({"fields": fields}, answer)
    assert (outcome.verdict, outcome.credit) == (UNMET, pytest.approx(2 / 3))
    assert outcome.reason == "2 of 3 fields MET; failed /total: inf is not within 5"
    # A penalty on a schema: what any number that is not finite gets (it fits no schema).
    penalty = {"weight": -1, "schema": {"type": "object"}}
    assert check(penalty, answer) == check(penalty, '{"total": 1e400, "a": 1, "b": 2}')


def test_integers_a_float_cannot_hold_exactly_are_read_exactly() -> None:
    from pytest_rubric.criteria.json_text import parse_whole

    for literal in ("9007199254740993", "-" + "7" * 3_999):
        assert parse_whole(literal) == (int(literal), None)


def test_credit_is_the_share_of_fields_met_and_the_reason_lists_each_failure() -> None:
    fields = {
        "/total": {"type": "number", "value": 1157.63, "abs_tol": 0.01},
        "/currency": {"type": "any_of", "any_of": ["EUR"]},
        "/items/0/sku": {"type": "regex", "pattern": "^[A-Z]{3}-\\d{4}$"},
        "/customer": {"type": "any_of", "any_of": ["ada"]},
    }
    outcome = check({"fields": fields}, ORDER)
    assert outcome.verdict is UNMET
    assert outcome.credit == pytest.approx(0.25)
    assert outcome.reason == (
        "1 of 4 fields MET; failed /currency: none of 'EUR' found; "
        "/items/0/sku: missing; /customer: missing"
    )
    every = check({"fields": {"/total": fields["/total"]}}, ORDER)
    assert (every.verdict, every.credit) == (MET, 1.0)


def test_a_field_that_cannot_be_evaluated_makes_the_criterion_error() -> None:
    broken = {"type": "regex", "pattern": "(unclosed", "engine": "python"}
    outcome = check({"fields": {"/currency": broken}}, ORDER)
    assert outcome.verdict is ERROR
    assert outcome.reason.startswith("field /currency: invalid regex '(unclosed'")


def test_a_callable_checks_a_field_given_its_text() -> None:
    body = {"type": "callable", "function": "tests.criteria.test_json_criterion:is_usd"}
    assert check({"fields": {"/currency": body}}, ORDER).verdict is MET


def is_usd(response: str, case: object) -> bool:
    return response == "USD"


# --- schema --------------------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "required": ["total"],
    "properties": {
        "total": {"type": "number", "minimum": 0},
        "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
    },
    "$defs": {"item": {"type": "object", "required": ["sku"]}},
}


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ('{"total": -1}', "does not fit the schema at /total: minimum (-1 is less than"),
        ('{"items": []}', "does not fit the schema at the top level: required ('total' is a"),
        ('{"total": 1, "items": [{}]}', "does not fit the schema at /items/0: required ("),
        ("[1]", "does not fit the schema at the top level: type ([1] is not of type 'object')"),
    ],
)
def test_a_schema_failure_names_the_instance_path_and_the_keyword(answer: str, reason: str) -> None:
    outcome = check({"schema": SCHEMA}, answer)
    assert (outcome.verdict, outcome.credit) == (UNMET, 0.0)
    assert outcome.reason.startswith(reason)


def test_a_boolean_schema_is_a_schema() -> None:
    assert check({"schema": True}, "[1]").verdict is MET
    refused = check({"schema": False}, "[1]")
    assert refused.reason.startswith("does not fit the schema at the top level: false (")


def test_a_schema_failure_earns_nothing_whatever_the_fields() -> None:
    fields = {"/total": {"type": "number", "value": -1}}
    outcome = check({"schema": SCHEMA, "fields": fields}, '{"total": -1}')
    assert (outcome.verdict, outcome.credit) == (UNMET, 0.0)


def test_nan_and_infinity_are_not_json() -> None:
    for literal in ("NaN", "Infinity", '{"total": -Infinity}'):
        assert check({}, literal).verdict is UNMET


def test_a_number_out_of_range_for_a_keyword_is_unmet_not_a_crash() -> None:
    outcome = check({"schema": {"multipleOf": 0.5}}, "1e309")
    assert outcome.verdict is UNMET


def test_a_ref_outside_the_schema_does_not_load() -> None:
    with pytest.raises(ValidationError, match="reaches outside the schema; nothing is fetched"):
        Json(id="j", schema={"$ref": "https://example.invalid/order.json"})


def test_the_schema_is_compiled_once_per_criterion(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[object] = []
    real = json_criterion.schema_validator

    def counting(schema: Any) -> Any:
        built.append(schema)
        return real(schema)

    criterion = Json(id="j", schema=SCHEMA)
    monkeypatch.setattr(json_criterion, "schema_validator", counting)
    compiled = criterion.compile(CheckContext())
    for answer in ('{"total": 1}', '{"total": -1}', "[]"):
        compiled(Answer(answer), None)
    assert built == [SCHEMA]


# --- loading -------------------------------------------------------------------------------------


def load_problems(tmp_path: Path, text: str) -> list[Any]:
    path = tmp_path / "orders.rubric.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    with pytest.raises(RubricLoadError) as raised:
        load_suite(path)
    return raised.value.problems


def test_field_mistakes_are_all_reported_at_their_lines(tmp_path: Path) -> None:
    problems = load_problems(
        tmp_path,
        """\
        cases:
          - id: q1
            criteria:
              - id: order
                type: json
                fields:
                  /total: {type: number, value: 1, weight: 2}
                  total: {type: any_of, any_of: [x]}
                  /a: {type: numbr}
                  /b: {type: number, valu: 3}
                  /c: {type: forbidden, phrases: [x]}
                  /d: {type: judge, requirement: "Says it"}
        """,
    )
    found = {(p.line, p.field): p.message for p in problems}
    # A judged type in a field: not "unknown", and the hint lists the types a field takes.
    judged = next(p for p in problems if p.line == 12)
    assert judged.message == "criterion type 'judge' cannot be used here"
    assert judged.hint is not None and "judge" not in judged.hint and "regex" in judged.hint
    assert all(p.criterion == "order" and p.case == "q1" for p in problems)
    assert found[(7, "fields./total")].startswith("a field's check takes no `weight`")
    assert found[(8, "fields.total")].startswith("'total' is not a JSON Pointer")
    assert found[(9, "fields./a.type")] == "unknown criterion type 'numbr'"
    assert found[(10, "fields./b.valu")] == "unknown field `valu`"  # did you mean `value`?
    assert (10, "fields./b.value") not in found  # the field it misspells: one problem
    assert found[(11, "fields./c")].startswith("a field cannot be checked with `forbidden`")
    assert len(problems) == 6
    bodies_ok = tmp_path / "ok.rubric.yaml"
    bodies_ok.write_text(
        "cases:\n  - id: q1\n    criteria:\n      - id: order\n        type: json\n"
        "        fields:\n          /d: {type: regex, pattern: '(a)\\1'}\n",
        encoding="utf-8",
    )
    with pytest.raises(RubricLoadError) as raised:
        load_suite(bodies_ok)
    (problem,) = raised.value.problems
    assert (problem.line, problem.field) == (7, "fields./d.pattern")
    assert "RE2" in problem.message


def test_a_field_at_the_empty_pointer_is_named_as_written(tmp_path: Path) -> None:
    """The pointer '' (the whole answer, RFC 6901) was named `fields..value`."""
    problems = load_problems(
        tmp_path,
        """\
        cases:
          - id: q1
            criteria:
              - id: whole
                type: json
                fields:
                  '': {type: number, valu: 3}
          - id: q2
            criteria:
              - id: rx
                type: json
                fields:
                  '': {type: regex, pattern: '(?<=a)b'}
        """,
    )
    assert sorted((p.line, p.field) for p in problems) == [
        (7, "fields.''.valu"),
        (13, "fields.''.pattern"),
    ]
    rendered = problems[0].render("orders.rubric.yaml")
    assert "field \"fields.''.val" in rendered and "fields..val" not in rendered


# --- end to end ----------------------------------------------------------------------------------

ORDER_SCHEMA = """\
      $schema: https://json-schema.org/draft/2020-12/schema
      type: object
      required: [order_id, customer, items, currency, total]
      additionalProperties: false
      properties:
        order_id: {type: string, pattern: "^ORD-[0-9]{6}$"}
        customer:
          type: object
          required: [name, email]
          properties:
            name: {type: string, minLength: 1}
            email: {type: string, pattern: "^[^@ ]+@[^@ ]+$"}
        items: {type: array, minItems: 1, items: {$ref: "#/$defs/item"}}
        currency: {enum: [USD, EUR, GBP]}
        total: {type: number, minimum: 0}
        notes: {type: [string, "null"]}
      $defs:
        item:
          type: object
          required: [sku, quantity, price]
          additionalProperties: false
          properties:
            sku: {type: string, pattern: "^[A-Z]{3}-[0-9]{4}$"}
            quantity: {type: integer, minimum: 1}
            price: {type: number, exclusiveMinimum: 0}
"""


def _order(**changes: Any) -> str:
    order = {
        "order_id": "ORD-004211",
        "customer": {"name": "Ada Lovelace", "email": "ada@example.com"},
        "items": [
            {"sku": "ABC-1234", "quantity": 2, "price": 19.99},
            {"sku": "XYZ-0001", "quantity": 1, "price": 5.5},
        ],
        "currency": "USD",
        "total": 45.48,
        "notes": None,
    }
    order.update(changes)
    return json.dumps(order)


def test_an_order_extraction_suite_end_to_end(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    write("pytest.ini", "[pytest]\nrubric_dirs = evals\n")
    schema = textwrap.indent(ORDER_SCHEMA, " " * 12)
    write(
        "evals/orders.rubric.yaml",
        f"""
        suite: orders
        min_score: 0.75
        responses: answers/
        cases:
          - id: extract_order
            question: "Extract the order from this email as JSON: ..."
            criteria:
              - id: order
                type: json
                weight: 3
                schema:
{schema}
                fields:
                  /total: {{type: number, value: 45.48, abs_tol: 0.01}}
                  /currency: {{type: any_of, any_of: [USD]}}
                  /items/0/sku: {{type: regex, pattern: '^ABC-', case_sensitive: true}}
                  /customer/email: {{type: regex, pattern: '@example\\.com$'}}
              - {{id: brief, type: length, max_chars: 2000}}
        """,
    )
    answers = {
        "exact": _order(),
        "fenced": "Here is the order:\n```json\n" + _order(total=45.0) + "\n```",
        "invalid": _order(currency="JPY"),
        "prose": "The order ORD-004211 totals $45.48.",
    }
    for subject, answer in answers.items():
        line = json.dumps({"id": "extract_order", "response": answer})
        write(f"evals/answers/{subject}.jsonl", line + "\n")
    result = pytester.runpytest("--rubric-json", "out.json")
    result.assert_outcomes(passed=2, failed=2)
    results = {r["subject"]: r for r in rubric_json()["results"]}
    order = {s: next(c for c in r["criteria"] if c["id"] == "order") for s, r in results.items()}
    assert order["exact"]["verdict"] == "MET"
    assert order["exact"]["credit"] == 1.0
    assert order["fenced"]["verdict"] == "UNMET"
    assert order["fenced"]["credit"] == 0.75
    assert order["fenced"]["reason"] == (
        "3 of 4 fields MET; failed /total: 45 is not within 45.48 ± 0.01"
    )
    assert results["fenced"]["passed"] is True  # (3 * 0.75 + 1) / 4 = 0.8125
    assert order["invalid"]["credit"] == 0.0
    assert order["invalid"]["reason"].startswith("does not fit the schema at /currency: enum (")
    assert order["prose"]["reason"].startswith("not JSON (")
    assert {s: r["passed"] for s, r in results.items()} == {
        "exact": True,
        "fenced": True,
        "invalid": False,
        "prose": False,
    }


# --- fenced: false (the whole answer only, as JSON.parse reads it) -------------------------------


@pytest.mark.parametrize(
    ("text", "fenced", "expected"),
    [
        ('```json\n{"a": 1}\n```', True, MET),
        ('```json\n{"a": 1}\n```', False, UNMET),
        (' \n{"a": 1}\t', False, MET),  # JSON's own whitespace is allowed around it
        ('\u00a0{"a": 1}', False, UNMET),  # other whitespace is not (JSON.parse refuses it)
        ("NaN", False, UNMET),
        ("[" * 100_000, False, UNMET),
    ],
)
def test_fenced_false_reads_only_the_whole_answer(
    text: str, fenced: bool, expected: Verdict
) -> None:
    assert check({"fenced": fenced}, text).verdict is expected


def test_an_unquoted_exponent_in_a_schema_is_a_number_a_quoted_one_text() -> None:
    """PyYAML (YAML 1.1) reads an unquoted ``1e3`` as text; in a schema it is the number, in
    `json`'s and in the `args` of a call criterion alike."""
    from pytest_rubric._load.loader import parse_suite

    loaded = parse_suite(
        "cases:\n  - id: q1\n    criteria:\n"
        "      - {id: j, type: json, schema: {type: number, maximum: 1e3, enum: [5, 1e2, '1e1']}}\n"
        "      - {id: t, type: tool_called, tool: pay, args: {properties: {n: {maximum: 1e3}}}}\n",
        path=Path("x.rubric.yaml"),
    )
    json_criterion, tool_called = loaded.suite.cases[0].criteria
    assert json_criterion.json_schema == {
        "type": "number",
        "maximum": 1000.0,
        "enum": [5, 100.0, "1e1"],
    }
    assert tool_called.args == {"properties": {"n": {"maximum": 1000.0}}}
