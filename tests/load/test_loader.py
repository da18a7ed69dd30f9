"""parse_suite: every mistake becomes a located Problem in one RubricLoadError."""

from __future__ import annotations

import json
import textwrap
import warnings
from pathlib import Path

import pytest
import yaml

from pytest_rubric import Grader, RubricLoadError, RubricWarning, Verdict
from pytest_rubric._errors import Problem
from pytest_rubric._load.loader import LoadedSuite, load_suite, parse_suite
from pytest_rubric._load.locate import Locator
from pytest_rubric._load.semantics import semantic_problems
from pytest_rubric._schema import Suite
from pytest_rubric.criteria import AnyOf, Forbidden, Requirement

YAML = Path("x.rubric.yaml")
JSON = Path("x.rubric.json")


def load(text: str, path: Path = YAML) -> LoadedSuite:
    return parse_suite(textwrap.dedent(text), path=path)


def problems(text: str, path: Path = YAML) -> list[Problem]:
    with pytest.raises(RubricLoadError) as info:
        load(text, path)
    assert info.value.problems, "a RubricLoadError always lists its problems"
    assert info.value.path == path
    return info.value.problems


def one_problem(text: str, path: Path = YAML) -> Problem:
    found = problems(text, path)
    assert len(found) == 1, found
    return found[0]


# --- valid files -------------------------------------------------------------------------------


def test_minimal_file_loads() -> None:
    loaded = load(
        """\
        suite: finance
        min_score: 0.6
        cases:
          - id: q1
            question: "What is VaR?"
            criteria:
              - {id: a, type: any_of, any_of: ["1%", "99%"]}
          - id: q2
            criteria:
              - {id: b, type: regex, pattern: '\\bloss'}
        """
    )
    assert loaded.name == "finance"
    assert loaded.suite.min_score == 0.6
    assert [c.id for c in loaded.suite.cases] == ["q1", "q2"]
    assert loaded.case_lines == [4, 8]
    assert loaded.suite.cases[0].question == "What is VaR?"


def test_suite_name_defaults_to_file_stem() -> None:
    loaded = parse_suite(
        "cases: [{id: q1, criteria: [{id: a, type: any_of, any_of: [x]}]}]",
        path=Path("evals/finance.rubric.yaml"),
    )
    assert loaded.name == "finance"


def test_points_alias_sets_weight() -> None:
    loaded = load(
        """\
        cases:
          - id: q1
            criteria:
              - {id: a, type: any_of, any_of: [x], points: 3}
              - {id: b, type: any_of, any_of: [x], points: -2}
              - {id: c, type: any_of, any_of: [x]}
        """
    )
    assert [c.weight for c in loaded.suite.cases[0].criteria] == [3.0, -2.0, 1.0]


def test_forbidden_penalty_is_its_negative_weight() -> None:
    loaded = load(
        """\
        cases:
          - id: q1
            criteria:
              - {id: a, type: any_of, any_of: [x]}
              - {id: f, type: forbidden, phrases: [maximum loss], penalty: 1.5}
              - {id: g, type: forbidden, phrases: [worst case]}
        """
    )
    _, f, g = loaded.suite.cases[0].criteria
    assert isinstance(f, Forbidden) and isinstance(g, Forbidden)
    assert f.effective_weight == -1.5
    assert g.effective_weight == -1.0


def test_weight_and_requirement_form_with_id_is_a_judge_criterion() -> None:
    loaded = load(
        """\
        cases:
          - id: q1
            criteria:
              - {id: horizon, weight: 3, requirement: "Says the horizon is one day"}
        """
    )
    (criterion,) = loaded.suite.cases[0].criteria
    assert isinstance(criterion, Requirement)
    assert criterion.type == "judge"
    assert criterion.weight == 3.0
    assert criterion.kind == "boolean"
    assert criterion.requirement == "Says the horizon is one day"


def test_weight_and_requirement_form_loads_unchanged() -> None:
    loaded = load(
        """\
        cases:
          - id: q1
            criteria:
              - {weight: 3, requirement: "Says the horizon is one day"}
              - {weight: 1, requirement: "Mentions the confidence level"}
        """
    )
    criteria = loaded.suite.cases[0].criteria
    assert all(isinstance(c, Requirement) for c in criteria)
    assert [c.weight for c in criteria] == [3.0, 1.0]
    assert len({c.id for c in criteria}) == 2


def test_bare_list_of_cases() -> None:
    loaded = load(
        """\
        - id: q1
          criteria:
            - {id: a, type: any_of, any_of: [x]}
        - id: q2
          criteria:
            - {id: a, type: any_of, any_of: [y]}
        """
    )
    assert [c.id for c in loaded.suite.cases] == ["q1", "q2"]
    assert loaded.case_lines == [1, 4]
    assert loaded.name == "x"


def test_bare_list_problem_is_located() -> None:
    problem = one_problem(
        """\
        - id: q1
          criteria:
            - {id: a, type: any_of, any_of: [x]}
        - id: q2
          criteria:
            - {id: b, type: regex}
        """
    )
    assert (problem.line, problem.case, problem.criterion, problem.field) == (
        6,
        "q2",
        "b",
        "pattern",
    )


def test_json_file_loads() -> None:
    data = {
        "suite": "s",
        "cases": [{"id": "q1", "criteria": [{"id": "a", "type": "any_of", "any_of": ["x"]}]}],
    }
    loaded = parse_suite(json.dumps(data), path=JSON)
    assert loaded.name == "s"
    assert isinstance(loaded.suite.cases[0].criteria[0], AnyOf)


def test_json_bare_list_loads() -> None:
    data = [{"id": "q1", "criteria": [{"id": "a", "type": "any_of", "any_of": ["x"]}]}]
    loaded = parse_suite(json.dumps(data), path=JSON)
    assert [c.id for c in loaded.suite.cases] == ["q1"]


def test_load_suite_reads_the_file(tmp_path: Path) -> None:
    path = tmp_path / "fin.rubric.yaml"
    path.write_text(
        "cases:\n  - id: q1\n    criteria: [{id: a, type: any_of, any_of: [café]}]\n",
        encoding="utf-8",
    )
    loaded = load_suite(path)
    assert loaded.path == path
    assert loaded.name == "fin"
    assert loaded.suite.cases[0].criteria[0].any_of == ("café",)


# --- global criteria ---------------------------------------------------------------------------


GLOBAL = """\
    global:
      - {id: clarity, type: any_of, any_of: [clear], axis: style}
      - {id: no_max, type: forbidden, phrases: [maximum loss]}
      - {id: mentions_var, type: any_of, any_of: [var]}
    cases:
      - id: q1
        criteria:
          - {id: horizon, type: any_of, any_of: [one day]}
      - id: q2
        criteria:
          - {id: tone, type: any_of, any_of: [polite], axis: style}
    """


def test_global_criteria_are_merged_into_every_case() -> None:
    suite = load(GLOBAL).suite
    grader = Grader()
    q1 = grader.compile(suite.cases[0], global_criteria=suite.global_criteria)
    assert [c.id for c in q1.criteria] == ["clarity", "no_max", "mentions_var", "horizon"]
    result = grader.grade("VaR over one day is not the maximum loss. Clear?", q1)
    verdicts = {c.id: c.verdict for c in result.criteria}
    assert verdicts == {
        "clarity": Verdict.MET,
        "no_max": Verdict.MET,
        "mentions_var": Verdict.MET,
        "horizon": Verdict.MET,
    }
    assert result.score == pytest.approx((1 + 1 - 1) / 2)
    assert "known_wrong_claim" in result.flags


def test_a_case_scored_only_by_global_criteria_loads() -> None:
    # q2 has only a style criterion of its own; `mentions_var` from global scores it.
    suite = load(GLOBAL).suite
    q2 = Grader().compile(suite.cases[1], global_criteria=suite.global_criteria)
    result = Grader().grade("VaR", q2)
    assert result.score == 1.0
    assert [c.id for c in q2.criteria][-1] == "tone"


def test_criterion_id_clashing_with_global_is_an_error() -> None:
    problem = one_problem(
        """\
        global:
          - {id: a, type: any_of, any_of: [x]}
        cases:
          - id: q1
            criteria:
              - {id: a, type: any_of, any_of: [y]}
        """
    )
    assert "'a'" in problem.message and "global" in problem.message
    assert (problem.line, problem.case, problem.field) == (6, "q1", "id")


def test_problem_in_a_global_criterion_is_located() -> None:
    problem = one_problem(
        """\
        global:
          - {id: ok, type: any_of, any_of: [x]}
          - id: g
            type: regex
        cases:
          - id: q1
            criteria:
              - {id: a, type: any_of, any_of: [y]}
        """
    )
    assert problem.message == "missing required field `pattern`"
    assert problem.case is None
    assert problem.criterion == "global g"
    assert problem.field == "pattern"
    assert problem.line == 3


def test_a_global_regex_re2_cannot_run_is_named_as_a_global_criterion() -> None:
    # It was "criterion 'g'": a case's criterion, for all the message said.
    problem = one_problem(
        """\
        global:
          - {id: g, type: regex, pattern: '(?=a)b'}
        cases:
          - {id: q1, criteria: [{id: a, type: any_of, any_of: [y]}]}
        """
    )
    assert problem.render(YAML).splitlines()[0] == (
        "x.rubric.yaml:2, criterion 'global g', field 'pattern': the pattern '(?=a)b' needs "
        "what the RE2 engine does not have (invalid perl operator: (?=): RE2 has no "
        "backreferences and no lookaround"
    )


@pytest.mark.parametrize("key", ["global", "global_criteria"])
def test_problems_under_either_spelling_of_global_are_at_their_line(key: str) -> None:
    # Under `global_criteria:` they were at line 1: the file was searched for `global:`.
    found = problems(
        f"""\
        suite: s
        {key}:
          - {{id: lookahead, type: regex, pattern: '(?=a)b'}}
          - {{id: unclosed, type: regex, pattern: '('}}
        cases:
          - {{id: q1, criteria: [{{id: a, type: any_of, any_of: [y]}}]}}
        """
    )
    assert [p.render(YAML).splitlines()[0] for p in found] == [
        "x.rubric.yaml:3, criterion 'global lookahead', field 'pattern': the pattern '(?=a)b' "
        "needs what the RE2 engine does not have (invalid perl operator: (?=): RE2 has no "
        "backreferences and no lookaround",
        "x.rubric.yaml:4, criterion 'global unclosed', field 'pattern': invalid regex '(': "
        "missing ) at position 1",
    ]
    with pytest.warns(RubricWarning) as warned:
        load(
            f"""\
            suite: s
            {key}:
              - {{id: g, type: fuzzy, any_of: [x], threshold: 0.9}}
            cases:
              - {{id: q1, criteria: [{{id: a, type: any_of, any_of: [y]}}]}}
            """
        )
    assert [str(w.message) for w in warned] == [
        "x.rubric.yaml:3, criterion 'global g', field 'threshold': threshold 0.9 is on "
        "rapidfuzz's 0-100 scale; write 90 for 90 %"
    ]


@pytest.mark.parametrize(
    ("given", "said"),
    [("weight: -3", "penalty: 3"), ("points: 1.5", "penalty: 1.5"), ("weight: x", "penalty: 2")],
)
def test_a_forbidden_weight_says_the_penalty_to_write_instead(given: str, said: str) -> None:
    problem = one_problem(
        f"""\
        cases:
          - id: q1
            criteria:
              - {{id: a, type: any_of, any_of: [x]}}
              - {{id: f, type: forbidden, phrases: [y], {given}}}
        """
    )
    assert f"write `{said}` instead of `{given.split(':')[0]}`" in problem.message


@pytest.mark.parametrize(
    ("field", "example"),
    [
        ("calibration", '{case: q1, criterion: j, response: "b", verdict: %s}'),
        ("judge_examples", '{criterion: j, response: "b", verdict: %s, reason: r}'),
    ],
)
def test_a_bad_example_is_one_problem_on_its_line_not_also_not_a_path(
    field: str, example: str
) -> None:
    """The field is a list of examples or the path of a JSONL file: a list is read as a list,
    so its bad example is the one problem, located, and never also "not a string"."""
    problem = one_problem(
        f"""\
        {field}:
          - {example % "MET"}
          - {example % "maybe"}
        cases:
          - id: q1
            response: "x"
            criteria:
              - {{id: j, type: judge, requirement: "Says x"}}
        """
    )
    assert (problem.line, problem.field) == (3, f"{field}.1.verdict")
    assert "'MET' or 'UNMET'" in problem.message


def test_a_required_style_criterion_is_an_error_style_never_fails_a_case() -> None:
    problem = one_problem(
        """\
        cases:
          - id: q1
            criteria:
              - {id: a, type: any_of, any_of: [x]}
              - {id: tone, type: length, max_words: 50, axis: style, required: true}
        """
    )
    assert "style never fails a case" in problem.message
    assert (problem.line, problem.case, problem.criterion, problem.field) == (
        5,
        "q1",
        "tone",
        "required",
    )


# --- unknown types and fields --------------------------------------------------------------------


def test_unknown_criterion_type_suggests_the_closest() -> None:
    problem = one_problem(
        """\
        cases:
          - id: q1
            criteria:
              - {id: a, type: any_of, any_of: [x]}
              - {id: b, type: regx, pattern: x}
        """
    )
    assert problem.message == "unknown criterion type 'regx'"
    assert problem.hint is not None
    assert problem.hint.startswith("did you mean `type: regex`?")
    assert "any_of, all_of, forbidden" in problem.hint
    assert (problem.line, problem.case, problem.criterion, problem.field) == (5, "q1", "b", "type")


def test_unknown_criterion_type_without_close_match_lists_types() -> None:
    problem = one_problem(
        """\
        cases:
          - id: q1
            criteria:
              - {id: a, type: zzzzzz}
        """
    )
    assert problem.hint is not None
    assert "did you mean" not in problem.hint
    assert "judge" in problem.hint


def test_criterion_without_type_or_requirement() -> None:
    problem = one_problem(
        """\
        cases:
          - id: q1
            criteria:
              - {id: a, any_of: [x]}
        """
    )
    assert problem.message == "criterion has no `type`"
    assert (problem.line, problem.case, problem.criterion) == (4, "q1", "a")


def test_misspelled_criterion_field_suggests_the_right_one() -> None:
    found = problems(
        """\
        cases:
          - id: q1
            criteria:
              - id: a
                type: regex
                pattern: x
                case_sensitve: true
        """
    )
    (problem,) = found
    assert problem.message == "unknown field `case_sensitve`"
    assert problem.hint is not None
    assert problem.hint.startswith("did you mean `case_sensitive`?")
    assert (problem.line, problem.case, problem.criterion, problem.field) == (
        7,
        "q1",
        "a",
        "case_sensitve",
    )


def test_misspelled_case_and_suite_fields() -> None:
    found = problems(
        """\
        suite: s
        globl: []
        cases:
          - id: q1
            critera: []
        """
    )
    by_field = {p.field: p for p in found}
    assert set(by_field) == {"globl", "critera"}
    assert by_field["globl"].line == 2
    assert by_field["globl"].case is None
    assert by_field["globl"].hint is not None
    assert by_field["globl"].hint.startswith("did you mean `global`?")
    assert by_field["critera"].line == 5
    assert by_field["critera"].case == "q1"
    assert by_field["critera"].hint is not None
    assert by_field["critera"].hint.startswith("did you mean `criteria`?")


def test_missing_required_field() -> None:
    problem = one_problem(
        """\
        cases:
          - id: q1
            criteria:
              - {id: a, type: any_of, any_of: [x]}
              - id: n
                type: number
                abs_tol: 0.01
        """
    )
    assert problem.message == "missing required field `value`"
    assert problem.hint == "add `value: 42`"
    # The field is absent, so the line is the criterion's.
    assert (problem.line, problem.case, problem.criterion, problem.field) == (5, "q1", "n", "value")


def test_missing_case_id() -> None:
    problem = one_problem(
        """\
        cases:
          - question: "no id"
            criteria:
              - {id: a, type: any_of, any_of: [x]}
        """
    )
    assert problem.message == "missing required field `id`"
    assert (problem.line, problem.case, problem.field) == (2, "#1", "id")


def test_wrong_value_type_names_the_field_and_line() -> None:
    problem = one_problem(
        """\
        cases:
          - id: q1
            criteria:
              - id: n
                type: number
                value: abc
        """
    )
    assert problem.field == "value"
    assert problem.line == 6
    assert "'abc'" in problem.message


def test_all_problems_are_reported_together() -> None:
    found = problems(
        """\
        cases:
          - id: q1
            criteria:
              - {id: a, type: regx}
          - id: q2
            criteria:
              - {id: b, type: number}
        """
    )
    assert [(p.case, p.criterion, p.line) for p in found] == [("q1", "a", 4), ("q2", "b", 7)]


# --- weights ---------------------------------------------------------------------------------


def test_weight_and_points_together_is_an_error() -> None:
    problem = one_problem(
        """\
        cases:
          - id: q1
            criteria:
              - {id: a, type: any_of, any_of: [x], weight: 2, points: 2}
        """
    )
    assert "`weight`" in problem.message and "`points`" in problem.message
    assert (problem.line, problem.case, problem.criterion) == (4, "q1", "a")


@pytest.mark.parametrize("key", ["weight", "points"])
def test_forbidden_with_weight_is_an_error(key: str) -> None:
    problem = one_problem(
        f"""\
        cases:
          - id: q1
            criteria:
              - {{id: a, type: any_of, any_of: [x]}}
              - {{id: f, type: forbidden, phrases: [y], {key}: 2}}
        """
    )
    assert "penalty" in problem.message
    assert (problem.line, problem.case, problem.criterion) == (5, "q1", "f")


def test_negative_penalty_is_an_error() -> None:
    problem = one_problem(
        """\
        cases:
          - id: q1
            criteria:
              - {id: a, type: any_of, any_of: [x]}
              - {id: f, type: forbidden, phrases: [y], penalty: -1}
        """
    )
    assert problem.field == "penalty"
    assert problem.criterion == "f"


@pytest.mark.parametrize("weight", [".nan", ".inf", "-.inf"])
def test_non_finite_weight_is_an_error(weight: str) -> None:
    problem = one_problem(
        f"""\
        cases:
          - id: q1
            criteria:
              - {{id: a, type: any_of, any_of: [x], weight: {weight}}}
        """
    )
    assert problem.field == "weight"


# --- duplicates and unscorable cases -------------------------------------------------------------


def test_duplicate_case_ids() -> None:
    problem = one_problem(
        """\
        cases:
          - id: q1
            criteria: [{id: a, type: any_of, any_of: [x]}]
          - id: q1
            criteria: [{id: a, type: any_of, any_of: [x]}]
        """
    )
    assert problem.message == (
        "duplicate case id 'q1': a case of this id is already at line 2, and each case id "
        "names one test"
    )
    assert (problem.line, problem.case, problem.field) == (4, "q1", "id")
    assert problem.hint is not None and "`id: q1_2`" in problem.hint


def test_duplicate_criterion_ids() -> None:
    problem = one_problem(
        """\
        cases:
          - id: q1
            criteria:
              - {id: a, type: any_of, any_of: [x]}
              - {id: b, type: any_of, any_of: [y]}
              - {id: a, type: any_of, any_of: [z]}
        """
    )
    assert "criterion id 'a' is used twice" in problem.message
    assert (problem.line, problem.case, problem.field) == (6, "q1", "id")


def test_duplicate_criterion_id_problem_names_the_criterion() -> None:
    problem = one_problem(
        """\
        cases:
          - id: q1
            criteria:
              - {id: a, type: any_of, any_of: [x]}
              - {id: a, type: any_of, any_of: [z]}
        """
    )
    assert problem.criterion == "a"


def test_same_criterion_id_in_different_cases_is_fine() -> None:
    loaded = load(
        """\
        cases:
          - id: q1
            criteria: [{id: a, type: any_of, any_of: [x]}]
          - id: q2
            criteria: [{id: a, type: any_of, any_of: [x]}]
        """
    )
    assert len(loaded.suite.cases) == 2


@pytest.mark.parametrize(
    "criteria",
    [
        "[]",
        "[{id: s, type: any_of, any_of: [x], axis: style}]",
        "[{id: z, type: any_of, any_of: [x], weight: 0}]",
        "[{id: f, type: forbidden, phrases: [x], penalty: 0}]",
        "[{id: s, type: judge, requirement: clear, axis: style, weight: 5}]",
    ],
)
def test_case_without_nonzero_substance_criterion(criteria: str) -> None:
    problem = one_problem(
        f"""\
        cases:
          - id: ok
            criteria: [{{id: a, type: any_of, any_of: [x]}}]
          - id: q2
            criteria: {criteria}
        """
    )
    assert "no substance criterion with a non-zero weight" in problem.message
    assert (problem.line, problem.case, problem.field) == (4, "q2", "criteria")


def test_negative_only_substance_case_is_scorable() -> None:
    loaded = load(
        """\
        cases:
          - id: q1
            criteria: [{id: f, type: forbidden, phrases: [x]}]
        """
    )
    assert loaded.suite.cases[0].criteria[0].effective_weight == -1.0


# --- json schema ---------------------------------------------------------------------------


def test_an_invalid_json_schema_is_one_problem_at_its_path() -> None:
    problem = one_problem(
        """\
        cases:
          - id: q1
            criteria:
              - id: j
                type: json
                schema:
                  type: object
                  properties:
                    name: {type: string, minLength: -1}
        """
    )
    assert problem.message.startswith(
        "`schema` is not a valid JSON Schema: at /properties/name/minLength, -1 is less than"
    )
    assert (problem.case, problem.criterion, problem.field) == ("q1", "j", "schema")
    assert problem.line == 9  # the line of the bad keyword, inside the schema
    assert problem.hint is not None and "2020-12" in problem.hint


def test_a_schema_written_as_quoted_json_text_is_one_problem_saying_so() -> None:
    """Not pydantic's two union branches ("schema.dict[str,any]", "schema.bool")."""
    problem = one_problem(
        """\
        cases:
          - id: q1
            criteria:
              - {id: j, type: json, schema: '{"type": "array"}'}
        """
    )
    assert (problem.case, problem.criterion, problem.field) == ("q1", "j", "schema")
    assert problem.message == (
        "a JSON Schema is a mapping (or true or false), not text: write it unquoted, such as "
        "{type: array}"
    )


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        ("{type: strin}", "/type"),
        ("{required: name}", "/required"),
        ("{enum: a}", "/enum"),
        ("{type: array, items: {minimum: x}}", "/items/minimum"),
        ("{$defs: {a: {pattern: 3}}}", "/$defs/a/pattern"),
    ],
)
def test_an_invalid_json_schema_names_the_path(schema: str, path: str) -> None:
    problem = one_problem(
        f"""\
        cases:
          - id: q1
            criteria:
              - {{id: j, type: json, schema: {schema}}}
        """
    )
    assert (problem.criterion, problem.field) == ("j", "schema")
    assert f"at {path}," in problem.message


@pytest.mark.parametrize(
    ("declared", "kind"),
    [("5", "int"), ("[a]", "list"), ("{a: 1}", "mapping"), ("null", "null"), ("true", "bool")],
)
def test_a_schema_uri_that_is_not_a_string_is_one_problem_at_its_path(
    declared: str, kind: str
) -> None:
    """jsonschema looks a `$schema` up as a URI: any other value crashed the load."""
    problem = one_problem(
        f"""\
        cases:
          - id: q1
            criteria:
              - id: j
                type: json
                schema:
                  type: object
                  $schema: {declared}
        """
    )
    assert problem.message == (
        f"`schema` is not a valid JSON Schema: at /$schema, `$schema` is {kind}, not a string "
        "(the URI of a draft)"
    )
    assert (problem.case, problem.criterion, problem.field) == ("q1", "j", "schema")
    assert problem.line == 8  # the line of `$schema`, inside the schema
    assert problem.hint is not None and "draft/2020-12/schema" in problem.hint


def test_any_json_schema_is_accepted() -> None:
    loaded = load(
        """\
        cases:
          - id: q1
            criteria:
              - id: j
                type: json
                schema:
                  $schema: https://json-schema.org/draft/2020-12/schema
                  type: object
                  additionalProperties: false
                  required: [name]
                  properties:
                    name: {type: string, pattern: "^a", minLength: 1}
                    tags: {type: array, prefixItems: [{const: a}], items: {$ref: "#/$defs/tag"}}
                    total: {type: number, minimum: 0, exclusiveMaximum: 1000000}
                  $defs:
                    tag: {type: string, enum: [a, b]}
                  oneOf: [{required: [name]}, {required: [id]}]
        """
    )
    (criterion,) = loaded.suite.cases[0].criteria
    assert criterion.json_schema["required"] == ["name"]


# --- syntax errors and empty files -------------------------------------------------------------


def test_json_syntax_error_gives_the_line() -> None:
    text = '{"cases": [\n  {"id": "q1",\n   "criteria": [\n     {"id": "a", "type": "any_of",}\n   ]}\n]}'
    problem = one_problem(text, JSON)
    assert problem.message.startswith("invalid JSON:")
    assert problem.line == 4


def test_json_semantic_error_is_located_through_yaml() -> None:
    text = (
        '{"cases": [\n'
        '  {"id": "q1",\n'
        '   "criteria": [\n'
        '     {"id": "a", "type": "any_off", "any_of": ["x"]}\n'
        "   ]}\n"
        "]}"
    )
    problem = one_problem(text, JSON)
    assert problem.message == "unknown criterion type 'any_off'"
    assert (problem.line, problem.case, problem.criterion) == (4, "q1", "a")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("cases:\n  - id: q1\n    question: a: b\n", 3),
        (
            "cases:\n  - id: q1\n    criteria:\n      - {id: a, type: any_of, any_of: [x]\n  - id: q2\n",
            5,
        ),
        ("cases:\n  - id: q1\n\tquestion: x\n", 3),
    ],
)
def test_yaml_syntax_error_gives_the_line(text: str, line: int) -> None:
    problem = one_problem(text)
    assert problem.message.startswith("invalid YAML:")
    assert problem.line == line
    assert problem.hint is not None


@pytest.mark.parametrize("text", ["", "   \n", "# only a comment\n", "---\n"])
def test_empty_file(text: str) -> None:
    problem = one_problem(text)
    assert problem.message == "the file is empty"
    assert problem.hint is not None and "cases:" in problem.hint


def test_empty_json_file() -> None:
    problem = one_problem("", JSON)
    assert problem.message.startswith("invalid JSON:")


def test_top_level_scalar() -> None:
    problem = one_problem("just a string\n")
    assert problem.message == "the top level is a string"
    assert problem.line == 1


def test_mapping_without_cases() -> None:
    problem = one_problem("suite: s\nmin_score: 0.5\n")
    assert problem.field == "cases"
    assert "no `cases:`" in problem.message


# --- the error text --------------------------------------------------------------------------


def test_error_message_names_file_line_case_criterion_and_field() -> None:
    with pytest.raises(RubricLoadError) as info:
        load(
            """\
            cases:
              - id: q1
                criteria:
                  - {id: a, type: regex}
            """
        )
    text = str(info.value)
    assert text.startswith("x.rubric.yaml: 1 problem in rubric file")
    assert "x.rubric.yaml:4, case 'q1', criterion 'a', field 'pattern': missing required" in text
    assert "-> add `pattern:" in text


def test_whitespace_only_phrase_is_rejected() -> None:
    problem = one_problem(
        """\
        cases:
          - id: q1
            criteria:
              - {id: a, type: any_of, any_of: [" "]}
        """
    )
    assert problem.criterion == "a"
    assert "more than whitespace" in problem.message


@pytest.mark.parametrize(
    ("criterion", "field"),
    [
        ("{id: a, type: any_of, any_of: [x], weight: yes}", "weight"),
        ("{id: a, type: number, value: on}", "value"),
        ("{id: a, type: length, max_words: true}", "max_words"),
        ("{id: a, type: fuzzy, any_of: [x], threshold: no}", "threshold"),
    ],
)
def test_a_yaml_yes_or_no_is_never_read_as_a_number(criterion: str, field: str) -> None:
    problem = one_problem(f"cases:\n  - id: q1\n    criteria:\n      - {criterion}\n")
    assert (problem.line, problem.case, problem.criterion, problem.field) == (4, "q1", "a", field)
    assert problem.message.startswith("must be a number, but YAML read a bare yes/no")


@pytest.mark.parametrize(
    ("path", "pattern", "name"),
    [
        (YAML, '"\\bloss"', "backspace"),  # YAML double quotes: \b is a backspace
        (YAML, '"\\floss"', "form feed"),
        (Path("x.rubric.json"), None, "backspace"),  # JSON: the same escape
    ],
)
def test_a_regex_escape_the_file_turned_into_a_control_character_is_a_load_error(
    path: Path, pattern: str | None, name: str
) -> None:
    if path.suffix == ".json":
        text = json.dumps(
            {
                "cases": [
                    {"id": "q1", "criteria": [{"id": "l", "type": "regex", "pattern": "\bloss"}]}
                ]
            }
        )
    else:
        text = f"cases:\n  - id: q1\n    criteria:\n      - {{id: l, type: regex, pattern: {pattern}}}\n"
    problem = one_problem(text, path)
    assert problem.criterion == "l" and problem.field == "pattern"
    assert f"holds a {name} character" in problem.message
    assert "single quotes" in (problem.hint or "") and "double the backslash" in (
        problem.hint or ""
    )
    # Written as meant, the same pattern loads.
    load("cases:\n  - id: q1\n    criteria:\n      - {id: l, type: regex, pattern: '\\bloss'}\n")


@pytest.mark.parametrize("weight", ['"2"', '"two"'])
def test_a_quoted_number_is_refused_with_what_to_write(weight: str) -> None:
    problem = one_problem(
        f"cases:\n  - id: q1\n    criteria:\n      - {{id: c, type: any_of, any_of: [x], weight: {weight}}}\n"
    )
    assert (problem.criterion, problem.field, problem.line) == ("c", "weight", 4)
    assert "must be a number, got the text" in problem.message
    assert "write the number without quotes" in problem.message
    assert "Input should be" not in problem.message  # no raw pydantic text


def test_criteria_at_the_files_level_say_where_they_belong() -> None:
    found = problems(
        "cases:\n  - id: q1\n    response: x\ncriteria:\n  - {id: c, type: any_of, any_of: [x]}\n"
    )
    (unknown,) = [p for p in found if p.field == "criteria" and p.case is None]
    assert "belongs to a case" in (unknown.hint or "") and "global:" in (unknown.hint or "")
    assert "global_criteria" not in (unknown.hint or "")  # an old alias, not advertised


def test_a_tab_in_the_indentation_is_named_as_one() -> None:
    problem = one_problem("cases:\n  - id: q1\n\tresponse: x\n")
    assert "tab character" in problem.message
    assert problem.hint is not None and "spaces only" in problem.hint and "line 3" in problem.hint


@pytest.mark.parametrize("written", ["1e-2", "+5", ".5", "1E3"])
def test_an_unquoted_number_yaml_1_1_reads_as_text_is_still_a_number(written: str) -> None:
    """PyYAML wants a dot in a float (``1e-2`` is text to it): written unquoted, it is a number."""
    loaded = load(
        f"cases:\n  - id: q1\n    criteria:\n      - {{id: n, type: number, value: 1, abs_tol: {written}}}\n"
    )
    (criterion,) = loaded.suite.cases[0].criteria
    assert criterion.abs_tol == float(written)


# --- what to write instead, for every kind of mistake ------------------------------------------

CLAIMS = "cases:\n  - id: q1\n    response: x\n    criteria:\n      - id: c\n        type: claims_backed\n        claims:\n"  # fmt: skip


def test_a_claim_without_its_tool_is_that_one_problem_not_also_an_empty_list() -> None:
    """pydantic counts the claims that validated: `claims` (one claim) is not "0 items"."""
    problem = one_problem(CLAIMS + "          - id: refund\n            any_of: [refunded]\n")
    assert (problem.line, problem.case, problem.criterion) == (8, "q1", "c")
    assert (problem.field, problem.message) == ("claims.0.tool", "missing required field `tool`")


def test_a_claims_pattern_that_does_not_compile_is_named_and_says_how_to_write_it() -> None:
    problem = one_problem(
        CLAIMS + '          - {id: refund, pattern: "(issued", tool: issue_refund}\n'
    )
    assert (problem.line, problem.criterion, problem.field) == (8, "c", "claims.0.pattern")
    assert problem.message.startswith("invalid pattern '(issued': missing )")
    assert problem.hint is not None
    assert "in YAML, write it in single quotes or double every backslash" in problem.hint


@pytest.mark.parametrize(
    ("text", "line", "hint"),
    [
        (  # block mapping
            'cases:\n  - id: q1\n    criteria:\n      - id: c\n        type: regex\n        pattern: "\\d+ people"\n',
            6,
            "write the string in single quotes, `pattern: '\\d+ people'`, or double the "
            'backslash, `pattern: "\\\\d+ people"`',
        ),
        (  # flow mapping, which the parser reads whole: found all the same
            'cases:\n  - id: q1\n    criteria:\n      - {id: c, type: regex, pattern: "^\\d\\.\\d$"}\n',
            4,
            "write the string in single quotes, `pattern: '^\\d\\.\\d$'`, or double the "
            'backslash, `pattern: "^\\\\d\\\\.\\\\d$"`',
        ),
        (  # an escape YAML knows stays as written; single quotes would change it
            '- id: q1\n  criteria:\n    - {type: any_of, any_of: [a]}\n    - {type: regex, pattern: "a\\tb\\s"}\n',
            4,
            'double the backslash, `pattern: "a\\tb\\\\s"`',
        ),
        (  # another string of the kind after it: still found
            'global:\n  - {id: g, type: any_of, any_of: ["\\w+"]}\ncases:\n  - {id: q1, question: "\\d"}\n',
            2,
            "write the string in single quotes, `'\\w+'`, or double the backslash, `\"\\\\w+\"`",
        ),
    ],
)
def test_an_unknown_escape_in_double_quotes_says_to_single_quote_or_double_the_backslash(
    text: str, line: int, hint: str
) -> None:
    problem = one_problem(text)
    assert problem.message.startswith("invalid YAML: \\")
    assert "in a double-quoted string starts no escape YAML knows" in problem.message
    assert problem.line == line
    assert problem.hint is not None and problem.hint.endswith(hint), problem.hint
    assert problem.hint.startswith("in double quotes a backslash starts an escape")


def test_an_unknown_escape_in_a_string_over_lines_still_says_what_to_do() -> None:
    problem = one_problem('cases:\n  - question: "what\n      is \\d"\n    id: q9\n')
    assert problem.line == 3
    assert problem.hint is not None
    assert problem.hint.endswith("write the string in single quotes, or double the backslash")


EXAMPLE = "judge_examples:\n  - {{criterion: j, response: b, verdict: {}, reason: r}}\ncases:\n  - id: q1\n    response: x\n    criteria: [{{id: j, type: judge, requirement: Says x}}]\n"  # fmt: skip


def test_a_bare_word_yaml_reads_as_a_boolean_in_a_field_of_a_few_values_says_them() -> None:
    problem = one_problem(EXAMPLE.format("YES"))
    assert problem.field == "judge_examples.0.verdict"
    assert problem.message == (
        "`judge_examples.0.verdict` must be 'MET' or 'UNMET', but YAML read a bare "
        "yes/no/on/off/true/false as True"
    )
    # Quoting would not help: "YES" is no verdict either.
    assert (
        problem.hint
        == "write `verdict: MET` or `verdict: UNMET` (quoted, `YES` is still none of them)"
    )
    quoted = one_problem(EXAMPLE.format('"YES"'))
    assert quoted.hint == "write `verdict: MET` or `verdict: UNMET`"
    assert one_problem(EXAMPLE.format("met")).hint == (
        "did you mean `verdict: MET`? write `verdict: MET` or `verdict: UNMET`"
    )


@pytest.mark.parametrize(
    ("written", "field", "message", "hint"),
    [
        (  # a bare number where text goes: quote it
            "    question: 42\n",
            "question",
            "`question` must be text, but YAML read the bare 42 as a number",
            'quote it: `question: "..."`',
        ),
        (
            "    reference: [Paris]\n",
            "reference",
            "`reference`: Input should be a valid string, got list",
            'write a string: `reference: "..."`',
        ),
        (
            "    responses: {good: [hello, there]}\n",
            "responses.good",
            "`responses.good`: Input should be a valid string, got list",
            'write a string: `good: "..."`',
        ),
        (
            "    targets: {conv: 5}\n",
            "targets.conv",
            "`targets.conv` must be text, but YAML read the bare 5 as a number",
            'quote it: `conv: "..."`',
        ),
        (
            "    metadata: [1]\n",
            "metadata",
            "`metadata` must be a mapping, got list",
            "write a mapping: `metadata: {name: value, ...}`",
        ),
    ],
)
def test_a_value_of_the_wrong_type_says_what_to_write(
    written: str, field: str, message: str, hint: str
) -> None:
    problem = one_problem(
        "cases:\n  - id: q1\n    response: x\n"
        + written
        + "    criteria: [{id: a, type: any_of, any_of: [x]}]\n"
    )
    assert (problem.line, problem.case, problem.field) == (4, "q1", field)
    assert (problem.message, problem.hint) == (message, hint)


@pytest.mark.parametrize(
    ("text", "field", "hint"),
    [
        ('judge_instructions: ["Be strict"]\n', "judge_instructions", 'write a string: `judge_instructions: "..."`'),
        ("global:\n    {id: g, type: any_of, any_of: [x]}\n", "global", "write a list: `global: [...]`"),
    ],
)  # fmt: skip
def test_a_files_field_of_the_wrong_type_says_what_to_write(
    text: str, field: str, hint: str
) -> None:
    problem = one_problem(
        text + "cases:\n  - {id: q1, criteria: [{id: a, type: any_of, any_of: [x]}]}\n"
    )
    assert (problem.line, problem.field, problem.hint) == (1, field, hint)


@pytest.mark.parametrize(
    ("criterion", "field", "hint"),
    [
        ('tags: [1, "theme: x"]', "tags.0", 'quote it: `"..."`'),
        ("tags: [theme: x]", "tags.0", 'write a string: `"..."`; quote text that holds ": "'),
        ("type: number, value: " + "9" * 400, "value", "write a number a float holds (below 1.8e308), such as `value: 2.1e6`"),
        ("type: number, value: [1]", "value", "write a number: `value: 1`"),
        ("type: length, min_words: 1.5", "min_words", "write a whole number: `min_words: 3`"),
        ("type: tool_sequence, tools: [a], match: any", "match", "write one of subsequence, exact, unordered, subset, superset"),
    ],
)  # fmt: skip
def test_a_criterions_field_of_the_wrong_type_says_what_to_write(
    criterion: str, field: str, hint: str
) -> None:
    if "type:" not in criterion:
        criterion = f"type: any_of, any_of: [x], {criterion}"
    problem = one_problem(f"cases:\n  - id: q1\n    criteria:\n      - {{id: c, {criterion}}}\n")
    assert (problem.line, problem.criterion, problem.field, problem.hint) == (4, "c", field, hint)
    assert ", got" not in problem.message.partition(", got")[2]  # pydantic's "got" said once


def test_a_field_of_another_type_is_not_taken_for_a_misspelled_near_name() -> None:
    """`requirement` on `grounded` is not a misspelled `required`: it is the judge's field."""
    problem = one_problem(
        "cases:\n  - id: q1\n    criteria:\n      - {id: g, type: grounded, requirement: x}\n"
    )
    assert (problem.criterion, problem.field) == ("g", "requirement")
    assert problem.message == "unknown field `requirement`"
    assert problem.hint is not None and "did you mean" not in problem.hint
    assert problem.hint.startswith(
        "`grounded` has no `requirement` (a field of `judge`); its requirement is always "
        '"every factual claim of the response is supported by the retrieved context".'
    )
    assert problem.hint.endswith(
        "Allowed here: id, weight, axis, required, description, tags, type."
    )


@pytest.mark.parametrize(
    ("criterion", "message", "swapped"),
    [
        (
            "type: length, min_words: 60, max_words: 50",
            "min_words (60) is greater than max_words (50)",
            "min_words: 50, max_words: 60",
        ),
        (
            "type: tool_called, tool: t, min_times: 3, max_times: 1",
            "min_times (3) is greater than max_times (1)",
            "min_times: 1, max_times: 3",
        ),
    ],
)
def test_a_lower_bound_above_its_upper_bound_says_what_to_write(
    criterion: str, message: str, swapped: str
) -> None:
    problem = one_problem(f"cases:\n  - id: q1\n    criteria:\n      - {{id: c, {criterion}}}\n")
    high = message.split()[-2]
    assert (problem.criterion, problem.field, problem.message) == ("c", high, message)
    low = message.split()[0]
    assert problem.hint == (
        f"write {low} no greater than {high}; if they are the wrong way round, swap them: "
        f"`{swapped}`"
    )


FUZZY = "cases:\n  - id: q1\n    response: x\n    criteria:\n      - {{id: f, type: fuzzy, any_of: [x], threshold: {}}}\n"  # fmt: skip


@pytest.mark.parametrize(("threshold", "meant"), [("0.9", "90"), ("0.855", "85.5"), ("1", "100")])
def test_a_fuzzy_threshold_written_as_a_fraction_loads_with_a_warning(
    threshold: str, meant: str
) -> None:
    """The contract's scale is rapidfuzz's 0-100: 0.9 is valid, and lets almost anything match."""
    with pytest.warns(RubricWarning) as warned:
        loaded = load(FUZZY.format(threshold))
    assert loaded.suite.cases[0].criteria[0].threshold == float(threshold)  # still the contract's
    (warning,) = warned
    assert str(warning.message) == (
        f"x.rubric.yaml:5, case 'q1', criterion 'f', field 'threshold': threshold {threshold} is on "
        f"rapidfuzz's 0-100 scale; write {meant} for {meant} %"
    )


@pytest.mark.parametrize("threshold", ["0", "1.5", "90"])
def test_a_fuzzy_threshold_on_the_0_100_scale_loads_without_a_warning(threshold: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load(FUZZY.format(threshold))


def test_the_fuzzy_threshold_warning_names_the_file_when_the_locator_knows_it() -> None:
    text = FUZZY.format("0.9")
    data = yaml.safe_load(text)
    locator = Locator(text, None, bare_list=False, path=Path("evals/x.rubric.yaml"))
    with pytest.warns(RubricWarning, match=r"^evals/x\.rubric\.yaml:5, case 'q1', criterion 'f'"):
        semantic_problems(data, Suite.model_validate(data), locator, failed=False)


def test_a_fuzzy_threshold_written_as_a_fraction_is_warned_about_at_collection(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".rubric.yaml", f=FUZZY.format("0.9"))
    result = pytester.runpytest("--collect-only")
    result.assert_outcomes()
    result.stdout.fnmatch_lines(
        [
            "*RubricWarning: f.rubric.yaml:5, case 'q1', criterion 'f', field 'threshold': "
            "threshold 0.9 "
            "is on rapidfuzz's 0-100 scale; write 90 for 90 %",
        ]
    )
