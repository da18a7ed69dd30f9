"""Every deterministic criterion type at its edges, through the grader and through its compiled check."""

from __future__ import annotations

import asyncio
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from pytest_rubric import CaseResult, CriterionResult, Grader, Rubric, Verdict
from pytest_rubric._errors import RubricLoadError
from pytest_rubric._grade.grader import NO_JUDGE_REASON
from pytest_rubric._guards import engines as _engines
from pytest_rubric._guards.engines import PATTERN_TIMEOUT
from pytest_rubric._load.loader import parse_suite
from pytest_rubric._report.document import CriterionResultModel, written
from pytest_rubric._results import Outcome
from pytest_rubric._schema import Criterion
from pytest_rubric.criteria.check import Answer, CheckContext
from pytest_rubric.criteria.normalize import normalize
from tests.conftest import HANG_GUARD, examples

ROOT = Path(__file__).resolve().parents[2]
_CRITERION = TypeAdapter(Criterion)


def grade(text: str, *criteria: dict[str, Any], min_score: float | None = None) -> CaseResult:
    grader = Grader()
    compiled = grader.compile(Rubric(id="r1", criteria=list(criteria), min_score=min_score))
    return grader.grade(text, compiled)


def only(text: str, criterion: dict[str, Any]) -> CriterionResult:
    """The result of a single criterion graded against ``text``."""
    criterion = {"id": "c", **criterion}
    (result,) = grade(text, criterion).criteria
    return result


def check(criterion: dict[str, Any], text: str, case: Any = None) -> Outcome:
    """The compiled check on its own, without the grader."""
    model = _CRITERION.validate_python({"id": "c", **criterion})
    return model.compile(CheckContext())(Answer(text), case)


def verdict(criterion: dict[str, Any], text: str) -> Verdict:
    return check(criterion, text).verdict


MET, UNMET, ERROR, SKIPPED = Verdict.MET, Verdict.UNMET, Verdict.ERROR, Verdict.SKIPPED


# --- any_of / all_of / forbidden -------------------------------------------------------------


@pytest.mark.parametrize(
    ("phrases", "text", "expected"),
    [
        (["café"], "We met at the CAFE.", MET),
        (["cafe"], "We met at the Café.", MET),
        (["café"], "We met at the cafe\u0301.", MET),
        (["long-term"], "a long\u2013term view", MET),
        (["long-term"], "a long\u2014term view", MET),
        (["long-term"], "a long\u2212term view", MET),
        (["long–term"], "a long-term view", MET),  # the phrase is normalized too
        (["long-term"], "a long term view", UNMET),
        (["Net Present Value"], "the net present value is", MET),
        (["net present value"], "the NET\n  PRESENT\tvalue", MET),
        (["straße"], "STRASSE", MET),
        (["don't"], "I don\u2019t know", MET),
        (["loss"], "large losses", MET),
        (["loss"], "a glossy gloss", UNMET),
        (["loss"], "glossy, then a loss", MET),  # a later occurrence at a word start
        (["loss"], "the-loss", MET),
        (["1%"], "a 1% chance", MET),
        (["1%"], "(1%)", MET),
        (["1%"], "an 11% chance", UNMET),
        (["1%"], "a 0.1% chance", UNMET),
        (["1%"], "a 1.5% chance", UNMET),
        (["99"], "995 cases", UNMET),
        (["99"], "1.99 dollars", UNMET),
        (["99"], "99.5 percent", UNMET),
        (["99"], "99 cases", MET),
        (["99%", "1%"], "at the 99% level", MET),
        (["99%", "1%"], "at the 95% level", UNMET),
        (["anything"], "", UNMET),
    ],
)
def test_any_of(phrases: list[str], text: str, expected: Verdict) -> None:
    assert verdict({"type": "any_of", "any_of": phrases}, text) is expected


def test_any_of_reason_names_the_phrase_found() -> None:
    result = only("a 99% VaR", {"type": "any_of", "any_of": ["1%", "99%"]})
    assert result.verdict is MET
    assert result.credit == 1.0
    assert "'99%'" in result.reason


def reference_match(phrase: str, text: str) -> bool:
    """The documented phrase rule as a regex: the phrase at a word start; a phrase that
    starts or ends with a digit does not continue or extend another number."""
    needle = normalize(phrase)
    head, tail = needle[:1], needle[-1:]
    left = ""
    if head.isascii() and head.isalnum():
        left = r"(?<![0-9a-z])" + (r"(?<![0-9][.,])" if head.isdigit() else "")
    right = r"(?![0-9])(?![.,][0-9])" if tail.isdigit() else ""
    return re.search(left + re.escape(needle) + right, normalize(text)) is not None


_PHRASE_ALPHABET = st.sampled_from(list("01ab.,%- "))


@settings(max_examples=examples(500))
@given(
    st.text(_PHRASE_ALPHABET, min_size=1, max_size=4).filter(lambda p: p.strip()),
    st.text(_PHRASE_ALPHABET, max_size=12),
)
def test_phrase_matching_follows_the_documented_rule(phrase: str, text: str) -> None:
    expected = MET if reference_match(phrase, text) else UNMET
    assert verdict({"type": "any_of", "any_of": [phrase]}, text) is expected


def test_any_of_unmet_has_zero_credit_and_lists_phrases() -> None:
    result = only("nothing relevant", {"type": "any_of", "any_of": ["alpha", "beta"]})
    assert result.verdict is UNMET
    assert result.credit == 0.0
    assert "'alpha'" in result.reason and "'beta'" in result.reason


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Precision and RECALL", MET),
        ("precision only", UNMET),
        ("recall only", UNMET),
        ("", UNMET),
        ("Précision – recall", MET),
    ],
)
def test_all_of(text: str, expected: Verdict) -> None:
    assert verdict({"type": "all_of", "all_of": ["precision", "recall"]}, text) is expected


def test_all_of_reason_lists_only_the_missing_phrases() -> None:
    result = only("precision", {"type": "all_of", "all_of": ["precision", "recall", "f1"]})
    assert result.verdict is UNMET
    assert "'recall'" in result.reason and "'f1'" in result.reason
    assert "'precision'" not in result.reason


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("That is the Maximum Loss.", MET),
        ("that is the maximum losses", MET),
        ("the worst\u2013case", UNMET),  # "worst case" with a dash is a different phrase
        ("the WORST CASE", MET),
        ("the maximum is not a loss", UNMET),
        ("", UNMET),
    ],
)
def test_forbidden(text: str, expected: Verdict) -> None:
    assert (
        verdict({"type": "forbidden", "phrases": ["maximum loss", "worst case"]}, text) is expected
    )


def test_forbidden_hit_counts_as_negative_penalty_and_is_not_ok() -> None:
    result = only("the maximum loss", {"type": "forbidden", "phrases": ["maximum loss"]})
    assert result.verdict is MET
    assert result.weight == -1.0
    assert result.credit == 1.0
    assert result.ok is False


def test_forbidden_miss_is_ok() -> None:
    result = only("a loss", {"type": "forbidden", "phrases": ["maximum loss"], "penalty": 2.5})
    assert result.verdict is UNMET
    assert result.weight == -2.5
    assert result.ok is True


# --- regex ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("criterion", "text", "expected"),
    [
        ({"pattern": r"\bloss"}, "Losses mount", MET),
        ({"pattern": r"\bloss"}, "gloss", UNMET),
        ({"pattern": r"\bloss"}, "", UNMET),
        ({"pattern": r"LOSS"}, "a loss", MET),  # case-insensitive by default
        ({"pattern": r"Loss", "case_sensitive": True}, "Loss", MET),
        ({"pattern": r"Loss", "case_sensitive": True}, "loss", UNMET),
        ({"pattern": r"Loss", "case_sensitive": True}, "LOSS", UNMET),
        ({"pattern": r"Cafe", "case_sensitive": True}, "Café", MET),  # normalized, not folded
        ({"pattern": r"café"}, "CAFE", MET),  # the pattern's literals are normalized too
        ({"pattern": r"a–b"}, "a—b", MET),
        ({"pattern": r"\d+%"}, "about 12 %", UNMET),
        ({"pattern": r"\d+ ?%"}, "about 12\u00a0%", MET),
        ({"pattern": r"net present value"}, "NET\n present   value", MET),
        ({"pattern": r"\bloss", "invert": True}, "Losses mount", UNMET),
        ({"pattern": r"\bloss", "invert": True}, "gloss", MET),
        ({"pattern": r"\bloss", "invert": True}, "", MET),
        ({"pattern": r"Loss", "case_sensitive": True, "invert": True}, "loss", MET),
        ({"pattern": r"Loss", "case_sensitive": True, "invert": True}, "Loss", UNMET),
    ],
)
def test_regex(criterion: dict[str, Any], text: str, expected: Verdict) -> None:
    assert verdict({"type": "regex", **criterion}, text) is expected


def test_regex_with_sharp_s_matches_like_a_phrase() -> None:
    assert verdict({"type": "any_of", "any_of": ["straße"]}, "Straße") is MET  # phrases do
    assert verdict({"type": "regex", "pattern": "straße"}, "Straße") is MET


@pytest.mark.parametrize(
    ("pattern", "engine"),
    [
        ("(unclosed", "re2"),
        ("[a-", "re2"),
        ("*x", "re2"),
        ("(unclosed", "python"),
        ("[z-a]", "python"),
    ],
)
@pytest.mark.parametrize("invert", [False, True])
def test_broken_regex_is_error_with_reason(pattern: str, engine: str, invert: bool) -> None:
    result = grade(
        "any text",
        {"id": "a", "type": "any_of", "any_of": ["any"]},
        {
            "id": "bad",
            "type": "regex",
            "pattern": pattern,
            "invert": invert,
            "engine": engine,
        },
    )
    bad = result.criteria[1]
    assert bad.verdict is ERROR
    assert bad.credit == 0.0
    assert bad.ok is False
    assert "invalid regex" in bad.reason
    assert result.passed is False
    assert result.status == "error"
    # The error earns nothing: P counts it, so the score is 1 of 2.
    assert result.score == 0.5


def test_a_catastrophic_pattern_runs_in_linear_time_on_re2() -> None:
    """``(a|a)+$`` backtracks 2^n ways in Python's engine; RE2 answers at once. Counted, not
    timed: a 10,000-character answer could not finish on a backtracking engine at all."""
    for pattern in ("(a|a)+$", "(a+)+$", "(x+x+)+y", "^(a|aa)+$"):
        assert verdict({"type": "regex", "pattern": pattern}, "a" * 10_000 + "!") is UNMET


@pytest.mark.parametrize(
    "pattern", [r"(\w)\1", r"(?=x)x", r"(?!no)\w+", r"(?<=a)b", r"(?<!not )sure"]
)
def test_what_re2_lacks_is_a_load_error_unless_the_criterion_opts_into_python(
    pattern: str,
) -> None:
    rubric = (
        "cases:\n  - id: q1\n    criteria:\n"
        f"      - {{id: ok, type: any_of, any_of: [x]}}\n"
        f"      - {{id: rx, type: regex, pattern: {json.dumps(pattern)}}}\n"
    )
    with pytest.raises(RubricLoadError) as info:
        parse_suite(rubric, path=Path("x.rubric.yaml"))
    (problem,) = info.value.problems
    assert (problem.line, problem.case, problem.criterion, problem.field) == (
        5,
        "q1",
        "rx",
        "pattern",
    )
    assert "RE2 has no backreferences and no lookaround" in problem.message
    assert "add `engine: python` to this criterion" in (problem.hint or "")
    loaded = parse_suite(
        rubric.replace("pattern:", "engine: python, pattern:"), path=Path("x.rubric.yaml")
    )
    assert loaded.suite.cases[0].criteria[1].engine == "python"


def test_the_python_engine_searches_the_whole_answer() -> None:
    long = "x" * 50_000 + "tail"
    assert verdict({"type": "regex", "pattern": r"(t)a\1?il", "engine": "python"}, long) is MET
    assert verdict({"type": "regex", "pattern": r"(x)\1", "engine": "python"}, long) is MET
    assert verdict({"type": "regex", "pattern": r"(?<=a)b", "engine": "python"}, long) is UNMET


@pytest.mark.timeout(HANG_GUARD)
def test_a_catastrophic_python_engine_pattern_is_an_error_after_its_time_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``(a|aa)+$`` on 60 characters would backtrack for longer than the universe has
    existed; the search stops at the bound and the criterion is ERROR, never UNMET.

    The bound is shortened here, as each search spends all of it backtracking;
    criteria/test_check_limits runs such a pattern in a session against the real one."""
    bound = PATTERN_TIMEOUT / 4
    monkeypatch.setattr(_engines, "PATTERN_TIMEOUT", bound)
    rubric = {"type": "regex", "pattern": r"(a|aa)+$", "engine": "python"}
    outcome = check(rubric, "a" * 60 + "!")
    assert outcome.verdict is ERROR
    assert f"after {bound:g} s of backtracking" in outcome.reason
    assert "RE2" in outcome.reason
    assert check({**rubric, "invert": True}, "a" * 60 + "!").verdict is ERROR


def test_broken_regex_is_not_a_load_error() -> None:
    text = (
        "cases:\n  - id: q1\n    criteria:\n      - {id: bad, type: regex, pattern: '(unclosed'}\n"
    )
    loaded = parse_suite(text, path=Path("x.rubric.yaml"))
    compiled = Grader().compile(loaded.suite.cases[0])
    (result,) = Grader().grade("text", compiled).criteria
    assert result.verdict is ERROR
    assert "(unclosed" in result.reason


# --- number --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("criterion", "text", "expected"),
    [
        ({"value": 1157.63, "abs_tol": 0.01}, "NPV: $1,157.63", MET),
        ({"value": 1157.63, "abs_tol": 0.01}, "NPV: 1157.64", MET),  # exactly at the bound
        ({"value": 1157.63, "abs_tol": 0.01}, "NPV: 1157.62", MET),
        ({"value": 1157.63, "abs_tol": 0.01}, "NPV: 1157.65", UNMET),
        ({"value": 1157.63, "abs_tol": 0.01}, "NPV: 1157.61", UNMET),
        ({"value": 1157.63, "abs_tol": 0.01}, "no number at all", UNMET),
        ({"value": 1157.63, "abs_tol": 0.01}, "", UNMET),
        ({"value": 1157.63}, "1157.63", MET),
        ({"value": 1157.63}, "1,157.630", MET),
        ({"value": 1157.63}, "1157.64", UNMET),  # no tolerance means exact
        ({"value": 1157.63}, "1157.631", UNMET),
        ({"value": 100, "rel_tol": 0.05}, "105", MET),  # exactly at the relative bound
        ({"value": 100, "rel_tol": 0.05}, "95", MET),
        ({"value": 100, "rel_tol": 0.05}, "105.01", UNMET),
        ({"value": 100, "rel_tol": 0.05}, "94.99", UNMET),
        ({"value": -200, "rel_tol": 0.1}, "-220", MET),  # relative to |value|
        ({"value": -200, "rel_tol": 0.1}, "-221", UNMET),
        ({"value": 0.1, "abs_tol": 0.01}, "0.11", MET),
        ({"value": 0.1, "abs_tol": 0.01}, "0.111", UNMET),
        # abs_tol and rel_tol together: the looser one wins.
        ({"value": 100, "abs_tol": 1, "rel_tol": 0.05}, "104", MET),
        ({"value": 100, "abs_tol": 10, "rel_tol": 0.05}, "109", MET),
        ({"value": 100, "abs_tol": 10, "rel_tol": 0.05}, "111", UNMET),
        # Percentages: either the written value or the fraction.
        ({"value": 12}, "a 12% return", MET),
        ({"value": 0.12}, "a 12% return", MET),
        ({"value": 0.12}, "a 12 return", UNMET),
        ({"value": 0.12, "abs_tol": 0.001}, "a 12.1% return", MET),
        ({"value": 0.12, "abs_tol": 0.0005}, "a 12.1% return", UNMET),
        # Other written forms.
        ({"value": -3.5}, "it fell \u22123.5 points", MET),
        ({"value": -4.5}, "a loss of (4.5)", MET),
        ({"value": 1e6}, "a VaR of $1 million", MET),
        ({"value": 1200}, "1.2e3 units", MET),
        ({"value": -12}, "- 12%", UNMET),  # a bullet, not a minus sign
        ({"value": 1.2}, "version v1.2", UNMET),
        # Some number in the answer is enough.
        ({"value": 7}, "between 3, 5 and 7", MET),
    ],
)
def test_number(criterion: dict[str, Any], text: str, expected: Verdict) -> None:
    assert verdict({"type": "number", **criterion}, text) is expected


def test_number_reason_shows_target_and_what_was_seen() -> None:
    outcome = check({"type": "number", "value": 1157.63, "abs_tol": 0.01}, "1157.65 or 3")
    assert outcome.verdict is UNMET
    assert "1157.63 ± 0.01" in outcome.reason
    assert "1157.65" in outcome.reason and "3" in outcome.reason


@pytest.mark.parametrize(
    ("criterion", "text", "said"),
    [
        ({"value": 100, "abs_tol": 2}, "102.0001", "no number within 100 ± 2; saw 102.0001"),
        ({"value": 1157.63, "abs_tol": 0.01}, "1157.6401", "saw 1157.6401"),
        ({"value": 1000}, "1000.0000001", "no number within 1000; saw 1000.0000001"),
    ],
)
def test_a_number_reason_never_rounds_what_it_saw_into_the_target(
    criterion: dict[str, Any], text: str, said: str
) -> None:
    outcome = check({"type": "number", **criterion}, text)
    assert outcome.verdict is UNMET and said in outcome.reason


def test_number_exact_small_values() -> None:
    assert verdict({"type": "number", "value": 1e-10}, "p = 2e-10") is UNMET
    assert verdict({"type": "number", "value": 0}, "0.0000000005") is UNMET


def test_number_tolerance_holds_for_large_values() -> None:
    assert verdict({"type": "number", "value": 1e9, "abs_tol": 0.5}, "1000000001") is UNMET


# --- fuzzy ---------------------------------------------------------------------------------------


def test_fuzzy_threshold_at_and_below() -> None:
    # "net presnt value" is "net present value" less one letter: partial_ratio 2*16/34 = 94.1.
    typo = "the net presnt value is positive"
    fuzzy = {"type": "fuzzy", "any_of": ["net present value"]}
    assert verdict({**fuzzy, "threshold": 94}, typo) is MET
    assert verdict({**fuzzy, "threshold": 94.2}, typo) is UNMET
    assert verdict(fuzzy, typo) is MET  # default threshold 90
    # At 100 only an exact span passes: the threshold is inclusive.
    assert verdict({**fuzzy, "threshold": 100}, "the NET PRESENT VALUE is") is MET
    assert verdict({**fuzzy, "threshold": 100}, typo) is UNMET


def test_fuzzy_reason_reports_the_best_score() -> None:
    outcome = check(
        {"type": "fuzzy", "any_of": ["net present value"]}, "the net presnt value is positive"
    )
    assert "best match 94" in outcome.reason
    assert "threshold 90" in outcome.reason


def test_fuzzy_matches_normalized_text() -> None:
    assert (
        verdict({"type": "fuzzy", "any_of": ["café au lait"], "threshold": 100}, "CAFE AU LAIT")
        is MET
    )


def test_fuzzy_any_phrase_is_enough() -> None:
    fuzzy = {"type": "fuzzy", "any_of": ["zzzzzz", "net present value"]}
    assert verdict(fuzzy, "the net present value") is MET


@pytest.mark.parametrize("text", ["a", "Paris", "net present"])
def test_fuzzy_an_answer_shorter_than_the_phrase_is_scored_whole_not_found_inside_it(
    text: str,
) -> None:
    outcome = check({"type": "fuzzy", "any_of": ["the net present value of Paris a"]}, text)
    assert outcome.verdict is UNMET, outcome.reason


def test_fuzzy_an_answer_as_long_as_the_phrase_with_a_typo_still_matches() -> None:
    assert verdict({"type": "fuzzy", "any_of": ["net present value"]}, "net presnt value") is MET


@pytest.mark.parametrize("text", ["", "   ", "xyz"])
def test_fuzzy_empty_or_unrelated_answer_is_unmet(text: str) -> None:
    outcome = check({"type": "fuzzy", "any_of": ["net present value"]}, text)
    assert outcome.verdict is UNMET
    assert outcome.credit == 0.0


# --- length --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bounds", "text", "expected"),
    [
        ({"min_words": 3}, "one two", UNMET),
        ({"min_words": 3}, "one two three", MET),
        ({"max_words": 3}, "one two three", MET),
        ({"max_words": 3}, "one two three four", UNMET),
        ({"min_words": 2, "max_words": 2}, "one\n\ttwo", MET),
        ({"min_chars": 3}, "ab", UNMET),
        ({"min_chars": 3}, "abc", MET),
        ({"max_chars": 5}, "abcde", MET),
        ({"max_chars": 5}, "abcdef", UNMET),
        ({"max_chars": 3}, "   abc   ", MET),  # surrounding whitespace is not counted
        ({"min_words": 1}, "", UNMET),
        ({"max_words": 0}, "", MET),
        ({"max_words": 0}, "word", UNMET),
        ({"min_words": 2, "max_chars": 5}, "ab cd", MET),
        ({"min_words": 2, "max_chars": 5}, "ab cde", UNMET),
    ],
)
def test_length_bounds_are_inclusive(bounds: dict[str, int], text: str, expected: Verdict) -> None:
    assert verdict({"type": "length", **bounds}, text) is expected


def test_length_reason_names_every_violated_bound() -> None:
    outcome = check({"type": "length", "max_words": 1, "max_chars": 3}, "four five")
    assert outcome.verdict is UNMET
    assert "2 words > max 1" in outcome.reason
    assert "9 chars > max 3" in outcome.reason


# --- json ----------------------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "count": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        "level": {"enum": ["low", "high"]},
    },
    "required": ["name"],
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', MET),
        ("  [1, 2]\n", MET),
        ("null", MET),
        ('"a string"', MET),
        ('```json\n{"a": 1}\n```', MET),
        ('Here it is:\n```\n{"a": 1}\n```\nDone.', MET),
        ('```json\n{"a": 1}\n```\n```json\n{bad}\n```', MET),  # the first fenced block
        # A fence closes on a line of its own: one inside a JSON string does not end it.
        ('```json\n{"code": "```"}\n```', MET),
        ('~~~\n{"a": 1}\n~~~', MET),
        ('Sure: ```json\n{"a": 1}``` (closed on its line)', MET),
        ('Draft:\n~~~\n{"k": oops}\n~~~\nFinal:\n```json\n{"k": 1}\n```', UNMET),  # the first
        ("not json", UNMET),
        ("", UNMET),
        ('{"a": 1,}', UNMET),
        ("```json\n{bad}\n```", UNMET),
        ("{'a': 1}", UNMET),
    ],
)
def test_json_without_schema(text: str, expected: Verdict) -> None:
    assert verdict({"type": "json"}, text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"name": "x"}', MET),
        ('```json\n{"name": "x", "count": 3}\n```', MET),
        ('{"name": "x", "count": 3.0}', MET),  # 3.0 is an integer in JSON Schema
        ('{"name": "x", "extra": [1]}', MET),  # additionalProperties not given
        ('{"name": "x", "tags": ["a", "b"], "level": "low"}', MET),
        ('{"count": 3}', UNMET),  # required
        ('{"name": 1}', UNMET),  # properties.type
        ('{"name": "x", "count": 3.5}', UNMET),
        ('{"name": "x", "count": true}', UNMET),  # a boolean is not an integer
        ('{"name": "x", "tags": ["a", "c"]}', UNMET),  # items.enum
        ('{"name": "x", "tags": "a"}', UNMET),
        ('{"name": "x", "level": "mid"}', UNMET),  # enum
        ('[{"name": "x"}]', UNMET),  # type
        ("not json", UNMET),
    ],
)
def test_json_with_schema(text: str, expected: Verdict) -> None:
    assert verdict({"type": "json", "schema": SCHEMA}, text) is expected


def test_json_schema_reason_gives_the_path_and_the_keyword() -> None:
    outcome = check({"type": "json", "schema": SCHEMA}, '{"name": "x", "tags": ["a", "c"]}')
    assert outcome.verdict is UNMET
    assert outcome.reason.startswith("does not fit the schema at /tags/1: enum (")
    assert "'c'" in outcome.reason


def test_json_schema_type_list_and_number() -> None:
    nullable = {"type": "json", "schema": {"type": ["string", "null"]}}
    assert verdict(nullable, "null") is MET
    assert verdict(nullable, '"x"') is MET
    assert verdict(nullable, "1") is UNMET
    number = {"type": "json", "schema": {"type": "number"}}
    assert verdict(number, "1") is MET
    assert verdict(number, "1.5") is MET
    assert verdict(number, "true") is UNMET


def test_json_invalid_is_unmet_not_error() -> None:
    outcome = check({"type": "json"}, "{oops")
    assert outcome.verdict is UNMET
    assert "not JSON" in outcome.reason


# --- metric --------------------------------------------------------------------------------------

# expected a b c d e, unexpected x y z; the answer names a, b, c and x:
# tp 3, fn 2, fp 1, tn 2.
ITEMS = {
    "expected": ["alpha", "bravo", "charlie", "delta", "echo"],
    "unexpected": ["xray", "yankee", "zulu"],
}
ANSWER = "Alpha, Bravo and Charlie; also Xray."
METRICS = {
    "precision": 3 / 4,
    "recall": 3 / 5,
    "f1": 2 * (3 / 4) * (3 / 5) / (3 / 4 + 3 / 5),  # 2/3
    "accuracy": (3 + 2) / 8,
    "specificity": 2 / 3,
}


@pytest.mark.parametrize(("metric", "value"), METRICS.items())
def test_metric_fractional_credit(metric: str, value: float) -> None:
    below = only(ANSWER, {"type": "metric", "metric": metric, "threshold": value, **ITEMS})
    assert below.credit == pytest.approx(value)
    assert below.verdict is MET  # at the threshold
    above = only(ANSWER, {"type": "metric", "metric": metric, "threshold": value + 0.01, **ITEMS})
    assert above.verdict is UNMET
    assert above.credit == pytest.approx(value)  # credit does not depend on the threshold


def test_metric_default_is_f1_and_enters_the_score_fractionally() -> None:
    result = grade(ANSWER, {"id": "m", "type": "metric", **ITEMS})
    (m,) = result.criteria
    assert m.credit == pytest.approx(2 / 3)
    assert m.verdict is MET  # default threshold 0.5
    assert result.score == pytest.approx(2 / 3)
    assert result.raw_score == pytest.approx(2 / 3)


def test_metric_reason_has_the_counts() -> None:
    outcome = check({"type": "metric", "metric": "recall", **ITEMS}, ANSWER)
    assert "tp 3, fp 1, fn 2, tn 2" in outcome.reason


def test_metric_uses_word_start_matching() -> None:
    outcome = check(
        {"type": "metric", "metric": "recall", "expected": ["loss", "1%"]}, "gloss at 11%"
    )
    assert outcome.credit == 0.0
    assert outcome.verdict is UNMET


def test_metric_on_empty_answer() -> None:
    assert check({"type": "metric", "expected": ["a"]}, "").credit == 0.0
    spec = check({"type": "metric", "metric": "specificity", "unexpected": ["wrong"]}, "")
    assert spec.credit == 1.0
    assert spec.verdict is MET


# --- callable ------------------------------------------------------------------------------------
# Functions graded as "tests.criteria.test_checks:<name>".


def returns_true(response: str, case: Any) -> bool:
    return True


def returns_false(response: str, case: Any) -> bool:
    return False


def mentions_npv(response: str, case: Any) -> bool:
    return "npv" in response.lower()


def returns_point_seven(response: str, case: Any) -> float:
    return 0.7


def returns_one_int(response: str, case: Any) -> int:
    return 1


def returns_zero_int(response: str, case: Any) -> int:
    return 0


def returns_half(response: str, case: Any) -> float:
    return 0.5


def returns_just_below_half(response: str, case: Any) -> float:
    return 0.49


def returns_tuple(response: str, case: Any) -> tuple[float, str]:
    return 0.25, "only a quarter of the steps"


def returns_bool_tuple(response: str, case: Any) -> tuple[bool, str]:
    return True, "polite enough"


def returns_case_id(response: str, case: Any) -> tuple[bool, str]:
    return case.id == "r1", f"case is {case.id}"


def raises(response: str, case: Any) -> bool:
    raise RuntimeError("grader exploded")


def returns_too_big(response: str, case: Any) -> float:
    return 1.5


def returns_negative(response: str, case: Any) -> float:
    return -0.1


def returns_nan(response: str, case: Any) -> float:
    return math.nan


def returns_none(response: str, case: Any) -> None:
    return None


def returns_string(response: str, case: Any) -> str:
    return "yes"


async def async_true(response: str, case: Any) -> bool:
    await asyncio.sleep(0)
    return True


class Graders:
    @staticmethod
    def nested(response: str, case: Any) -> float:
        return 1.0


@pytest.fixture
def importable_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``tests`` importable as from the rootdir, however pytest was started."""
    monkeypatch.syspath_prepend(str(ROOT))


def fn(name: str) -> dict[str, Any]:
    return {"type": "callable", "function": f"tests.criteria.test_checks:{name}"}


def test_tests_package_is_importable_from_the_rootdir(importable_tests: None) -> None:
    import importlib

    module = importlib.import_module("tests.criteria.test_checks")
    assert module.returns_true("", None) is True


@pytest.mark.usefixtures("importable_tests")
@pytest.mark.parametrize(
    ("name", "text", "expected", "credit"),
    [
        ("returns_true", "", MET, 1.0),
        ("returns_false", "", UNMET, 0.0),
        ("mentions_npv", "The NPV is positive", MET, 1.0),
        ("mentions_npv", "It is positive", UNMET, 0.0),
        ("returns_point_seven", "", MET, 0.7),
        ("returns_one_int", "", MET, 1.0),
        ("returns_zero_int", "", UNMET, 0.0),
        ("returns_half", "", MET, 0.5),  # at the default threshold 0.5
        ("returns_just_below_half", "", UNMET, 0.49),
        ("returns_tuple", "", UNMET, 0.25),
        ("returns_bool_tuple", "", MET, 1.0),
        ("returns_case_id", "", MET, 1.0),
        ("async_true", "", MET, 1.0),
        ("Graders.nested", "", MET, 1.0),
    ],
)
def test_callable_results(name: str, text: str, expected: Verdict, credit: float) -> None:
    result = only(text, fn(name))
    assert result.verdict is expected
    assert result.credit == pytest.approx(credit)


@pytest.mark.usefixtures("importable_tests")
def test_callable_tuple_reason_is_used() -> None:
    assert only("", fn("returns_tuple")).reason == "only a quarter of the steps"
    assert only("", fn("returns_case_id")).reason == "case is r1"


@pytest.mark.usefixtures("importable_tests")
def test_callable_threshold_decides_verdict() -> None:
    assert only("", {**fn("returns_point_seven"), "threshold": 0.7}).verdict is MET
    assert only("", {**fn("returns_point_seven"), "threshold": 0.71}).verdict is UNMET


@pytest.mark.usefixtures("importable_tests")
def test_callable_fractional_credit_enters_score() -> None:
    result = grade(
        "",
        {"id": "a", **fn("returns_point_seven"), "weight": 2},
        {"id": "b", **fn("returns_true"), "weight": 2},
    )
    assert result.score == pytest.approx((0.7 * 2 + 2) / 4)
    assert result.raw_score == pytest.approx(3.4)


@pytest.mark.usefixtures("importable_tests")
def test_callable_that_raises_is_error() -> None:
    result = grade("", {"id": "a", **fn("raises")})
    (c,) = result.criteria
    assert c.verdict is ERROR
    assert "RuntimeError" in c.reason and "grader exploded" in c.reason
    assert result.passed is False
    assert result.status == "error"


@pytest.mark.usefixtures("importable_tests")
@pytest.mark.parametrize(
    "name",
    ["returns_too_big", "returns_negative", "returns_nan", "returns_none", "returns_string"],
)
def test_callable_bad_return_is_error(name: str) -> None:
    result = only("", fn(name))
    assert result.verdict is ERROR
    assert "return a bool, a float in [0, 1] or (value, reason)" in result.reason


@pytest.mark.usefixtures("importable_tests")
@pytest.mark.parametrize(
    "path",
    [
        "no_such_package_xyz.module:function",
        "tests.criteria.test_checks:no_such_function",
        "tests.criteria.test_checks:Graders.missing",
    ],
)
def test_callable_unimportable_is_error_at_grade_time(path: str) -> None:
    grader = Grader()
    # Compiling does not raise: the problem is reported on the criterion.
    compiled = grader.compile(Rubric(criteria=[{"id": "a", "type": "callable", "function": path}]))
    result = grader.grade("text", compiled)
    (c,) = result.criteria
    assert c.verdict is ERROR
    assert "cannot import" in c.reason
    assert result.status == "error"


# --- judge without a judge ----------------------------------------------------------------------


def test_judge_criteria_are_skipped_without_a_judge() -> None:
    result = grade(
        "The horizon is one day.",
        {"id": "a", "type": "any_of", "any_of": ["one day"]},
        {"id": "j", "type": "judge", "requirement": "Says the horizon is one day", "weight": 5},
        {"id": "k", "weight": 3, "requirement": "Is polite"},  # the weight-and-requirement form
    )
    a, j, k = result.criteria
    assert a.verdict is MET
    assert j.verdict is SKIPPED and k.verdict is SKIPPED
    assert j.type == "judge" and k.type == "judge"
    assert j.reason == NO_JUDGE_REASON
    assert j.ok is False
    assert j.credit == 0.0
    # The item scores what ran.
    assert result.score == 1.0
    assert result.passed is True
    assert [c.id for c in result.skipped] == ["j", "k"]


# --- ok semantics ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("weight", "text", "expected_verdict", "expected_ok"),
    [
        (1, "loss", MET, True),
        (1, "gain", UNMET, False),
        (-2, "loss", MET, False),  # an error criterion that hit
        (-2, "gain", UNMET, True),
        (0, "loss", MET, True),
    ],
)
def test_ok_semantics(
    weight: float, text: str, expected_verdict: Verdict, expected_ok: bool
) -> None:
    result = only(text, {"type": "any_of", "any_of": ["loss"], "weight": weight})
    assert result.verdict is expected_verdict
    assert result.weight == weight
    assert result.ok is expected_ok
    assert written(CriterionResultModel, result)["ok"] is expected_ok


def test_points_alias_sets_the_weight() -> None:
    assert only("loss", {"type": "any_of", "any_of": ["loss"], "points": 3}).weight == 3.0


# --- reasons and robustness ----------------------------------------------------------------------


def long_reason(response: str, case: object) -> tuple[bool, str]:
    return False, "missing " + "k" * 4_999_992


def test_a_verdict_reason_is_cut_once_to_2000_characters_with_the_true_count() -> None:
    """Text copied into a result is cut to 2,000 characters with a count of what was cut.
    A callable's reason of 5,000,000 characters was cut by its check, then again by the
    grader, and ended with a count of 29 characters instead of the 4,998,000 cut."""
    result = only("{}", {"type": "callable", "function": "tests.criteria.test_checks:long_reason"})
    assert result.verdict is UNMET
    assert result.reason.startswith("missing kkk")
    assert result.reason == "missing " + "k" * 1_992 + "… [4,998,000 more characters]"


@pytest.mark.parametrize(
    ("value", "expected"), [(345, Verdict.MET), (12, Verdict.MET), (12345, Verdict.UNMET)]
)
def test_a_number_check_on_a_json_list_compares_each_of_its_numbers(
    value: int, expected: Verdict
) -> None:
    """``[12, 345]`` as compact text is ``[12,345]``, which reads as 12345 (a thousands
    separator): the list's numbers are compared as the values they are."""
    answer = '{"quantities": [12, 345], "nested": {"n": [1.5]}}'
    number = {"type": "number", "value": value}
    assert check({**number, "field": "/quantities"}, answer).verdict is expected
    fields = {"/quantities": number}
    assert check({"type": "json", "fields": fields}, answer).verdict is expected


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [("/prices", 12.5, MET), ("/prices", 3, MET), ("/obj", 1157.63, MET), ("/mixed", 2, MET)],
)
def test_a_number_check_on_a_json_list_reads_the_numbers_its_strings_say(
    field: str, value: float, expected: Verdict
) -> None:
    """Each string in a list or an object is read as an answer's text is: "$12.50" says
    12.5, as a number check on the string alone would find."""
    answer = '{"prices": ["$12.50", "$3"], "obj": {"total": "1,157.63"}, "mixed": [1, "2 items"]}'
    number = {"type": "number", "value": value, "abs_tol": 0.01}
    assert check({**number, "field": field}, answer).verdict is expected
    assert check({"type": "json", "fields": {field: number}}, answer).verdict is expected


def test_a_json_integer_is_compared_exactly_with_an_integer_value() -> None:
    """Past 2**53 two integers are told apart as they are written, never as the float both
    round to."""
    answer = '{"b": 9007199254740992}'
    near = {"type": "number", "value": 9007199254740993, "abs_tol": 0, "field": "/b"}
    outcome = check(near, answer)
    assert outcome.verdict is UNMET
    assert outcome.reason.endswith("9007199254740992 is not within 9007199254740993")
    assert check({**near, "abs_tol": 1}, answer).verdict is MET
    assert check({**near, "value": 9007199254740992}, answer).verdict is MET
    # A tolerance that is not whole keeps the float slack: 0.29 * 100 is 28.999999999999996.
    relative = {"type": "number", "value": 100, "rel_tol": 0.29, "field": "/x"}
    assert check(relative, '{"x": 129}').verdict is MET


def test_a_json_reason_has_room_for_every_failed_field() -> None:
    fields = {f"/{name}": {"type": "any_of", "any_of": ["yes"]} for name in "abcdefghij"}
    outcome = check({"type": "json", "fields": fields}, "{}")
    assert outcome.reason.startswith("0 of 10 fields MET; failed /a: missing; /b: missing;")
    assert outcome.reason.endswith("/j: missing")


def test_error_reasons_are_kept_whole() -> None:
    pattern = "(" + "a" * 300
    outcome = check({"type": "regex", "pattern": pattern}, "")
    assert outcome.verdict is ERROR
    assert pattern in outcome.reason


def test_answer_forms_are_normalized() -> None:
    answer = Answer("Café \u2013 “Quoted”  text (4.5)")
    assert answer.folded == 'cafe - "quoted" text (4.5)'
    assert answer.cased == 'Cafe - "Quoted" text (4.5)'
    assert answer.numbers == (-4.5, 4.5)


# --- regex with normalize: false (exact matching, as imported promptfoo checks need) ------------


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("cafe", "café", Verdict.UNMET),  # normalized, "café" would be "cafe"
        ("café", "café", Verdict.MET),
        ("a  b", "a  b", Verdict.MET),  # whitespace runs are kept
        ("a b", "a\tb", Verdict.UNMET),
        ("Paris", "paris", Verdict.UNMET),
        ("-", "\u2013", Verdict.UNMET),  # dashes are not folded
        ("^x$", " x", Verdict.UNMET),  # nor is the answer trimmed
    ],
)
def test_regex_normalize_false_matches_the_answer_as_written(
    pattern: str, text: str, expected: Verdict
) -> None:
    criterion = {
        "id": "r",
        "type": "regex",
        "pattern": pattern,
        "case_sensitive": True,
        "normalize": False,
    }
    assert verdict(criterion, text) is expected
    assert verdict({**criterion, "invert": True}, text) is (
        Verdict.UNMET if expected is Verdict.MET else Verdict.MET
    )
