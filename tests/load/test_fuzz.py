"""Fuzzing the loader and the checks: bad input ends as a located problem, never a traceback.

The loader properties start from a valid rubric file and break one thing in
it (a wrong type in any field, an unknown key, a deleted key, a huge or empty
value, odd Unicode), or feed arbitrary text. Whatever comes in, the loader
either returns a suite or raises one :class:`RubricLoadError` whose problems
say where: the line, and the case, criterion and field the mistake is in.

The check properties run every criterion type on arbitrary strings: each
returns a verdict or ERROR, credit in [0, 1], and never gets to the guard that
turns an exception inside a check into ERROR (reaching it would mean a bug).

Example counts are bounded so ``make test`` stays quick; ``HYPOTHESIS_PROFILE=fuzz``
(tests/conftest.py) runs many more.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_rubric import Grader, RubricLoadError, Verdict
from pytest_rubric._load.loader import load_suite, parse_suite
from pytest_rubric._load.responses import load_response_dir
from pytest_rubric._schema import Suite
from pytest_rubric._trace import Passage, ToolCall, Trace, Usage
from pytest_rubric.criteria.check import Answer, CheckContext
from tests.conftest import examples

ROOT = Path(__file__).resolve().parents[2]
YAML = Path("fuzz.rubric.yaml")
JSON = Path("fuzz.rubric.json")

# One of every deterministic criterion type, plus a judged one, over two cases
# and the file-level `global` list: a mutation can land anywhere in it.
BASE: dict[str, Any] = {
    "suite": "fuzz",
    "min_score": 0.6,
    "global": [{"id": "no_guarantee", "type": "forbidden", "phrases": ["guaranteed"]}],
    "cases": [
        {
            "id": "q1",
            "question": "What is VaR?",
            "response": "VaR is the maximum loss at 99% confidence over one day.",
            "criteria": [
                {"id": "conf", "type": "any_of", "any_of": ["99%", "1%"], "weight": 2},
                {"id": "both", "type": "all_of", "all_of": ["loss", "confidence"]},
                {"id": "word", "type": "regex", "pattern": "\\bloss\\b", "invert": False},
                {"id": "num", "type": "number", "value": 99, "abs_tol": 0.5},
                {"id": "fz", "type": "fuzzy", "any_of": ["maximum loss"], "threshold": 85},
                {"id": "len", "type": "length", "min_words": 3, "max_chars": 400},
                {"id": "horizon", "requirement": "Says the horizon is one day", "kind": "boolean"},
            ],
        },
        {
            "id": "q2",
            "responses": {"alpha": '{"answer": 42}'},
            "criteria": [
                {
                    "id": "js",
                    "type": "json",
                    "schema": {"type": "object", "required": ["answer"]},
                    "fields": {"/answer": {"type": "number", "value": 42, "abs_tol": 0.5}},
                },
                {"id": "m", "type": "metric", "expected": ["42"], "metric": "recall"},
                {
                    "id": "cl",
                    "type": "callable",
                    "function": "tests.criteria.test_checks:returns_half",
                },
                {"id": "tone", "type": "judge", "requirement": "Polite", "axis": "style"},
                # The criteria over a trace (each check below runs on a TRACE).
                {"id": "tc", "type": "tool_called", "tool": "lookup", "args": {"type": "object"}},
                {"id": "ts", "type": "tool_sequence", "tools": ["lookup"], "match": "superset"},
                {"id": "tl", "type": "trace_limits", "max_tool_calls": 5, "max_cost_usd": 1},
                {"id": "cr", "type": "context_recall", "facts": [["30 days", "a month"]]},
                {"id": "ci", "type": "citations", "min": 0},
                {
                    "id": "cb",
                    "type": "claims_backed",
                    "claims": [{"id": "r", "any_of": ["refunded"], "tool": "refund"}],
                },
                {"id": "gr", "type": "grounded"},
            ],
        },
    ],
}
# What the answers are graded with, so the trace criteria reach a verdict.
TRACE = Trace(
    "returned",
    (ToolCall("lookup", {"id": 1}, True, "{}"),),
    llm_calls=2,
    context=(Passage("Refunds within 30 days.", "p1"),),
    usage=Usage(10, 5, 0.01),
    latency_s=0.5,
)

ODD_TEXT = st.text(
    alphabet=st.characters(
        codec="utf-8",
        categories=("L", "M", "N", "P", "S", "Z", "Cf", "Co"),
        include_characters="\u200b\u200d\u202e\ufeff\u0301:#'\"[]{}&*!|>%@`\\-",
    ),
    max_size=40,
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    ODD_TEXT,
    st.just(""),
    st.just(" \t "),
    st.just("x" * 20_000),
    st.sampled_from(["yes", "no", "on", "null", "~", "1e999", "0x1F", ".nan", "::", "[", "a::b"]),
)
JUNK = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(ODD_TEXT, inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(data: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every path in the data, the root excluded."""
    found = []
    items = (
        data.items()
        if isinstance(data, dict)
        else enumerate(data)
        if isinstance(data, list)
        else ()
    )
    for key, value in items:
        found.append((*prefix, key))
        found += _paths(value, (*prefix, key))
    return found


ALL_PATHS = _paths(BASE)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[dict[str, Any], tuple[str | int, ...], str]:
    """BASE with one thing broken: the data, the path of what was broken, and how."""
    data = copy.deepcopy(BASE)
    path = draw(st.sampled_from(ALL_PATHS))
    parent = data
    for step in path[:-1]:
        parent = parent[step]
    leaf = path[-1]
    action = draw(st.sampled_from(["replace", "delete", "unknown_key"]))
    if action == "delete" and isinstance(parent, dict):
        del parent[leaf]
    elif action == "unknown_key" and isinstance(parent[leaf], dict):
        parent[leaf][draw(ODD_TEXT.filter(lambda k: k not in parent[leaf]))] = draw(JUNK)
    else:
        action = "replace"
        parent[leaf] = draw(JUNK)
    return data, path, action


def _dump(data: Any, path: Path) -> str:
    if path.suffix == ".json":
        return json.dumps(data, ensure_ascii=False, indent=1, allow_nan=True)
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=80)


def _case_label(data: dict[str, Any], index: int) -> str:
    case_id = data["cases"][index].get("id") if isinstance(data["cases"][index], dict) else None
    if isinstance(case_id, bool) or not isinstance(case_id, str | int) or case_id == "":
        return f"#{index + 1}"
    return str(case_id)


def _assert_well_formed(error: RubricLoadError, path: Path) -> None:
    assert error.problems, "a RubricLoadError always lists its problems"
    text = str(error)
    assert text.startswith(f"{path}: "), text
    assert "Traceback" not in text
    for problem in error.problems:
        assert problem.message.strip()
        assert problem.line is None or problem.line >= 1
        rendered = problem.render(path)
        assert rendered in text


FUZZ = settings(
    max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def test_the_base_file_is_valid() -> None:
    for path in (YAML, JSON):
        loaded = parse_suite(_dump(BASE, path), path=path)
        assert [c.id for c in loaded.suite.cases] == ["q1", "q2"]


def _whole_item(path: tuple[str | int, ...]) -> bool:
    """The path is a case or a criterion itself, not one of its fields."""
    return (len(path) == 2 and path[0] in ("cases", "global")) or (
        len(path) == 4 and path[0] == "cases" and path[2] == "criteria"
    )


@FUZZ
@given(mutated(), st.sampled_from([YAML, JSON]))
def test_one_broken_field_is_one_located_error(
    case: tuple[dict[str, Any], tuple[str | int, ...], str], path: Path
) -> None:
    data, broken, action = case
    try:
        text = _dump(data, path)
    except ValueError:  # JSON cannot hold every float hypothesis draws
        return
    try:
        parse_suite(text, path=path)
    except RubricLoadError as exc:
        _assert_well_formed(exc, path)
        problems = exc.problems
    else:
        return  # the change was harmless (a new description, an equivalent value...)

    shown = (broken, action, [p.render(path) for p in problems])
    assert all(p.line is not None for p in problems), shown
    if broken[0] == "cases" and len(broken) >= 3:
        label = _case_label(data, int(broken[1]))
        assert any(p.case == label for p in problems), shown
        if broken[2] == "criteria" and len(broken) >= 4:
            assert any(p.case == label and p.criterion for p in problems), shown
    if broken[0] == "global" and len(broken) >= 2:
        assert any(p.criterion and p.criterion.startswith("global") for p in problems), shown
    if not (action == "replace" and _whole_item(broken)):
        # Anything but a whole case or criterion replaced: the problem names a field,
        # or the case or criterion that is not a mapping.
        assert any(
            p.field is not None or p.message.startswith(("a case ", "a criterion "))
            for p in problems
        ), shown


@FUZZ
@given(st.text(max_size=400), st.sampled_from([YAML, JSON]))
def test_any_text_loads_or_is_a_located_error(text: str, path: Path) -> None:
    try:
        loaded = parse_suite(text, path=path)
    except RubricLoadError as exc:
        _assert_well_formed(exc, path)
    else:
        assert isinstance(loaded.suite, Suite)


YAMLISH = st.lists(
    st.sampled_from(
        [
            "cases:",
            "  - id: q1",
            "  - id: [q1]",
            "    criteria:",
            "      - {id: a, type: any_of, any_of: [x]}",
            "      - {id: a, type: regex, pattern: '(?<=x)y'}",
            "      - id: b",
            "        type: nope",
            "        requirement: yes",
            "      - &anchor {id: c, type: number, value: .inf}",
            "      - *anchor",
            "      - <<: {id: d}",
            "    question: !!binary aGVsbG8=",
            "    response: !!python/object:os.system x",
            "global: oops",
            "min_score: 2",
            "\t- tab",
            "---",
            "? [complex, key]",
            ": value",
            "'unterminated",
            "\ufeffcases: []",
        ]
    ),
    max_size=12,
)


@FUZZ
@given(YAMLISH)
def test_rubric_shaped_yaml_loads_or_is_a_located_error(lines: list[str]) -> None:
    text = "\n".join(lines)
    try:
        parse_suite(text, path=YAML)
    except RubricLoadError as exc:
        _assert_well_formed(exc, YAML)


@settings(max_examples=examples(100), deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_on_disk_load_or_are_a_located_error(tmp_path_factory: Any, raw: bytes) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "bytes.rubric.yaml"
    path.write_bytes(raw)
    try:
        load_suite(path)
    except RubricLoadError as exc:
        _assert_well_formed(exc, path)


# A line of text, with anything in it but the characters that end a line; \x85, \u2028 and
# \x1e stay in, since JSON allows them inside a string and they must not split a line.
LINE_TEXT = st.text(
    st.characters(exclude_characters="\r\n", exclude_categories=["Cs"]), max_size=60
)


@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(st.one_of(LINE_TEXT, JUNK.map(json.dumps)), max_size=8),
    st.sampled_from(["\n", "\r\n"]),
)
def test_any_responses_file_gives_entries_or_located_problems(
    tmp_path_factory: Any, lines: list[str], newline: str
) -> None:
    directory = tmp_path_factory.mktemp("responses")
    (directory / "alpha.jsonl").write_bytes(newline.join(lines).encode())
    files, problems = load_response_dir(directory)
    assert [f.subject for f in files] == ["alpha"]
    for problem in problems:
        assert problem.path == directory / "alpha.jsonl"
        assert problem.line is not None and 1 <= problem.line <= len(lines)
        assert problem.hint
    for text, line in files[0].entries.values():
        assert isinstance(text, str) and 1 <= line <= len(lines)


# --- checks ------------------------------------------------------------------------------------

ANSWERS = st.one_of(
    st.text(max_size=300),
    ODD_TEXT,
    st.builds(
        lambda n, s: s * n, st.integers(0, 400), st.sampled_from(["9", "a ", "é", "1,0.", "```"])
    ),
    st.just('```json\n{"answer": 42}\n```'),
    st.just("1e309 -0 NaN inf 1_000 ١٢٣ ½ 99 %"),
)


def _deterministic_criteria() -> list[Any]:
    loaded = parse_suite(_dump(BASE, YAML), path=YAML)
    found = list(loaded.suite.global_criteria)
    for case in loaded.suite.cases:
        found += [c for c in case.criteria if not c.is_judged]
    extra = {
        "cases": [
            {
                "id": "x",
                "criteria": [
                    {"id": "inv", "type": "regex", "pattern": "[0-9]+", "invert": True},
                    {"id": "py", "type": "regex", "pattern": "(\\w)\\1", "engine": "python"},
                    {"id": "cs", "type": "regex", "pattern": "Loss", "case_sensitive": True},
                    {"id": "rel", "type": "number", "value": -1e6, "rel_tol": 0.01},
                    {
                        "id": "acc",
                        "type": "metric",
                        "expected": ["a"],
                        "unexpected": ["b"],
                        "metric": "accuracy",
                    },
                    {"id": "spec", "type": "metric", "unexpected": ["b"], "metric": "specificity"},
                    {"id": "bare", "type": "json"},
                    {"id": "fz0", "type": "fuzzy", "any_of": ["é"], "threshold": 0},
                ],
            }
        ]
    }
    found += parse_suite(_dump(extra, YAML), path=YAML).suite.cases[0].criteria
    return found


@pytest.fixture(scope="module")
def checks() -> list[tuple[Any, Any]]:
    """Every deterministic criterion, compiled (the callable one imports from ``tests``)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(ROOT))
        return [(c, c.compile(CheckContext())) for c in _deterministic_criteria()]


@settings(max_examples=examples(300), deadline=None)
@given(ANSWERS)
def test_every_check_returns_a_verdict_or_error_for_any_string(
    checks: list[tuple[Any, Any]], text: str
) -> None:
    answer = Answer(text, TRACE)
    assert len(checks) >= 24
    for criterion, check in checks:
        outcome = check(answer, None)
        assert outcome.verdict in (Verdict.MET, Verdict.UNMET, Verdict.ERROR)
        assert 0.0 <= outcome.credit <= 1.0 and not math.isnan(outcome.credit)
        assert outcome.reason, criterion.id
        assert not outcome.reason.startswith("check failed"), (criterion.id, outcome.reason)
        # A valid deterministic criterion is ERROR only when Python's engine runs out
        # of time, which no pattern of these can on a short answer.
        assert outcome.verdict is not Verdict.ERROR, (criterion.id, outcome.reason)


@pytest.fixture(scope="module")
def compiled_case() -> Any:
    """Case q1 with the file's global criterion, the judged criterion left out."""
    loaded = parse_suite(_dump(BASE, YAML), path=YAML)
    case = loaded.suite.cases[0]
    case = case.model_copy(update={"criteria": [c for c in case.criteria if not c.is_judged]})
    return Grader().compile(case, global_criteria=loaded.suite.global_criteria)


@settings(max_examples=examples(150), deadline=None)
@given(ANSWERS)
def test_grading_any_string_gives_a_score_in_range(compiled_case: Any, text: str) -> None:
    result = Grader().grade(text, compiled_case)
    assert 0.0 <= result.score <= 1.0 and not math.isnan(result.score)
    assert result.passed is (result.score >= compiled_case.min_score and not result.errors)
