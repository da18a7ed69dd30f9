"""JSON and CSV are written a part at a time; the parts join into the same text as a whole,
and the JSON is json's own ``indent=2`` text, byte for byte."""

from __future__ import annotations

import enum
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rubric import CaseResult, CriterionResult, Verdict
from pytest_rubric._guards.outgoing import outgoing_data, outgoing_strings
from pytest_rubric._guards.secrets import Secret
from pytest_rubric._render.csv import csv_chunks
from pytest_rubric._report.document import document, indented, json_chunks
from pytest_rubric._report.report import build_report
from tests.conftest import examples


def _result(i: int) -> CaseResult:
    criterion = CriterionResult(
        "c", "any_of", "substance", 1.0, Verdict.MET if i % 2 else Verdict.UNMET, 1.0, 'why,\n"q"'
    )
    return CaseResult(
        nodeid=f"s.rubric.yaml::q{i}[a]",
        suite="s",
        case=f"q{i}",
        subject="a" if i % 3 else "b",
        score=float(i % 2),
        raw_score=float(i % 2),
        min_score=0.8,
        passed=bool(i % 2),
        criteria=[criterion],
        fluency=0.5,
        confidence=0.5,
        naive_score=0.5,
        response="=SUM(A1) answer",
    )


def test_the_json_parts_join_into_the_whole_document_byte_for_byte() -> None:
    for results in ([], [_result(1)], [_result(i) for i in range(7)]):
        report = build_report(results)
        whole = json.dumps(outgoing_data(document(report)), indent=2) + "\n"
        assert "".join(json_chunks(report)) == whole


def test_the_csv_parts_are_whole_records_and_join_into_the_same_text() -> None:
    report = build_report([_result(i) for i in range(7)])
    parts = list(csv_chunks(report, rows=2))
    assert len(parts) == 4
    assert all(part.endswith("\r\n") for part in parts)
    assert "".join(parts) == "".join(csv_chunks(report, rows=1_000))


class _Same(dict[str, str]):
    def __missing__(self, text: str) -> str:
        return text


class _Word(enum.StrEnum):
    MET = "MET"


class _Level(enum.IntEnum):
    HIGH = 3


KEY = "sk-test-0123456789abcdefghijklmnop"
_strings = st.text() | st.sampled_from(["\x1b[31m", "\ud83d", "https://u:p@h/x?k=1", KEY, "é😀"])
_scalars = st.none() | st.booleans() | st.integers() | st.floats() | _strings
_scalars |= st.sampled_from([_Word.MET, _Level.HIGH, -0.0, 1e16, float("nan")])
_keys = _strings | st.integers() | st.floats() | st.booleans() | st.none()
_keys |= st.sampled_from([_Word.MET, _Level.HIGH])
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(_keys, inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=examples(200), deadline=None)
@given(value=_values, depth=st.integers(0, 3))
def test_the_indented_writer_is_jsons_own_byte_for_byte(value: Any, depth: int) -> None:
    """Keys of every kind json takes, non-numbers, unicode, empty and nested empty containers,
    enum members; at any indentation, as a result is written four spaces in."""
    expected = json.dumps(value, indent=2).replace("\n", "\n" + "  " * depth)
    assert indented(value, _Same(), "\n" + "  " * depth) == expected
    fit = outgoing_strings(Secret(KEY))
    assert indented(value, fit) == json.dumps(outgoing_data(value, Secret(KEY)), indent=2)


@pytest.mark.parametrize("value", [{"a": object()}, {(1, 2): 1}])
def test_the_indented_writer_refuses_what_json_refuses(value: Any) -> None:
    with pytest.raises(TypeError) as refused:
        json.dumps(value, indent=2)
    with pytest.raises(TypeError, match=re.escape(str(refused.value))):
        indented(value, _Same())
