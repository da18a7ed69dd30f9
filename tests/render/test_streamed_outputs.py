"""JSON and CSV are written a part at a time; the parts join into the same text as a whole."""

from __future__ import annotations

import json

from pytest_rubric import CaseResult, CriterionResult, Verdict
from pytest_rubric._guards.outgoing import outgoing_data
from pytest_rubric._render.csv import csv_chunks
from pytest_rubric._report.document import document, json_chunks
from pytest_rubric._report.report import build_report


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
