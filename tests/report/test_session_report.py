"""The one report value: built once, every output renders it, severities decide the colours."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_rubric._cli.merge import _parser
from pytest_rubric._config.outputs import OUTPUTS
from pytest_rubric._render.files import write_outputs
from pytest_rubric._render.markdown import render_markdown
from pytest_rubric._render.summary import terminal_lines
from pytest_rubric._report.document import json_chunks
from pytest_rubric._report.gates import Gates
from pytest_rubric._report.leaderboard import COLUMNS
from pytest_rubric._report.report import Severity, build_report
from pytest_rubric._results import CaseResult, CriterionResult, Verdict


def _result(case: str, subject: str, score: float, confidence: float) -> CaseResult:
    ok = score >= 0.5
    criterion = CriterionResult(
        "c", "contains", "substance", 1.0, Verdict.MET if ok else Verdict.UNMET, score, "why"
    )
    return CaseResult(
        f"s.rubric.yaml::{case}[{subject}]", "s", case, subject, score, score, 0.5, ok,
        [criterion], 0.9, confidence, (score + 0.9 + confidence) / 3,
    )  # fmt: skip


# "bold" is wrong but confident: a style-weighted rubric ranks it first. Eight cases, so
# that the difference is resolved (two cases would resolve nothing).
RESULTS = [
    result
    for i in range(8)
    for result in (
        _result(f"q{i}", "careful", 1.0 if i % 2 else 0.8, 0.0),
        _result(f"q{i}", "bold", 0.4 if i % 2 else 0.0, 1.0),
    )
]


def test_the_report_orders_results_by_node_id_and_gates_them_once() -> None:
    report = build_report(reversed(RESULTS), gates=Gates(baseline=RESULTS, fail_under=0.5))
    assert [r.nodeid for r in report.results] == sorted(r.nodeid for r in RESULTS)
    assert [row.subject for row in report.leaderboard] == ["careful", "bold"]
    assert report.rankings_disagree
    assert report.gates.failed and not report.ok
    assert [d.cells(missing="-") for d in report.gates.deltas] == [
        ("bold", "0.200", "0.200", "+0.000 [-0.274, +0.274]"),
        ("careful", "0.900", "0.900", "+0.000 [-0.274, +0.274]"),
    ]


def test_terminal_lines_carry_the_severity_that_picks_their_colour() -> None:
    lines = terminal_lines(build_report(RESULTS, gates=Gates(fail_under=0.5)))
    severity = {line.text: line.severity for line in lines}
    assert severity["! A style-weighted rubric would rank these subjects differently."] is (
        Severity.WARNING
    )
    assert severity["rubric gate FAILED (1):"] is Severity.ERROR
    assert severity["  - subject bold: correctness 0.200 is below --rubric-fail-under 0.5"] is (
        Severity.ERROR
    )
    assert lines[0].text.split() == " ".join(c.header for c in COLUMNS).split()
    assert {line.severity: line.markup for line in lines} == {
        Severity.INFO: {},
        Severity.WARNING: {"yellow": True},
        Severity.ERROR: {"red": True},
    }


def test_markdown_shows_the_warning_once_without_its_terminal_mark() -> None:
    markdown = render_markdown(build_report(RESULTS))
    assert "> **A style-weighted rubric would rank these subjects differently.**" in markdown
    assert "!" not in markdown.split("### Failing")[0]


def test_every_output_has_a_merge_flag_and_writes_what_its_renderer_renders(
    tmp_path: Path,
) -> None:
    args = _parser().parse_args(
        ["merge", "a.json", *(f"--{o.name}={tmp_path / o.name}" for o in OUTPUTS)]
    )
    report = build_report(RESULTS)
    write_outputs(report, {o.name: getattr(args, o.name) for o in OUTPUTS}, environ={})
    for output in OUTPUTS:
        # Bytes: CSV's CRLF record ends are the file's, not a newline translation's.
        written = (tmp_path / output.name).read_bytes().decode("utf-8")
        rendered = output.render(report)
        assert written == (rendered if isinstance(rendered, str) else "".join(rendered))
    assert json.loads("".join(json_chunks(report)))["rankings_disagree"] is True


@pytest.mark.parametrize("shown", [True, False])
def test_the_step_summary_is_appended_only_when_there_is_something_to_show(
    tmp_path: Path, shown: bool
) -> None:
    summary = tmp_path / "step.md"
    report = build_report(RESULTS if shown else [])
    write_outputs(report, {}, environ={"GITHUB_STEP_SUMMARY": str(summary)})
    assert summary.exists() is shown


def test_every_output_is_a_run_flag_and_a_merge_flag(pytester: pytest.Pytester) -> None:
    """A format is one renderer and one ``OUTPUTS`` entry: both flags come from it."""
    help_text = pytester.runpytest("--help").stdout.str()
    merge_args = _parser().parse_args(["merge", "a.json"])
    for output in OUTPUTS:
        assert f"--rubric-{output.name}=PATH" in help_text
        assert hasattr(merge_args, output.name)
        assert callable(output.render)


def test_a_subjects_cost_is_unknown_when_one_of_its_answers_has_no_trace() -> None:
    from dataclasses import replace

    from pytest_rubric._report.leaderboard import TraceFigures
    from pytest_rubric._trace import Trace, Usage

    def traced(case: str, cost: float | None) -> CaseResult:
        trace = Trace("returned", usage=Usage(cost_usd=cost), latency_s=1.0)
        return replace(_result(case, "bot", 1.0, 0.5), trace=trace)

    def cost(*results: CaseResult) -> float | None:
        figures = TraceFigures.of(results)
        return None if figures is None else figures.cost_usd

    assert cost(traced("a", 0.25), traced("b", 0.5)) == 0.75
    assert cost(traced("a", 0.25), traced("b", None)) is None
    assert cost(traced("a", 0.25), _result("b", "bot", 1.0, 0.5)) is None  # b's is not known
    assert TraceFigures.of([_result("b", "bot", 1.0, 0.5)]) is None  # no trace: no figures
