"""The HTML report of many answers: failing ones first, passing ones counted past ``FULL``, one
scatter mark per spot, and every in-page link still landing on the page."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from pytest_rubric._render import html as _html
from pytest_rubric._report.gates import Gates
from pytest_rubric._report.report import build_report
from pytest_rubric._results import CaseResult, CriterionResult, Verdict


def _result(i: int, *, passed: bool) -> CaseResult:
    verdict = Verdict.MET if passed else Verdict.UNMET
    return CaseResult(
        nodeid=f"s.rubric.yaml::c{i:04d}[{'ab'[i % 2]}]",
        suite="s.rubric.yaml",
        case=f"c{i:04d}",
        subject="ab"[i % 2],
        score=1.0 if passed else 0.0,
        raw_score=1.0 if passed else 0.0,
        min_score=0.8,
        passed=passed,
        criteria=[CriterionResult("x", "any_of", "substance", 1.0, verdict, float(passed), "r")],
        fluency=0.5,
        confidence=0.9,
        naive_score=0.5,
        flags=[] if passed else ["confidently_wrong"],
        response="<b>answer</b>",
    )


def test_past_full_failing_answers_are_lines_and_passing_ones_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_html, "FULL", 10)
    results = [_result(i, passed=i % 3 != 0) for i in range(60)]  # 20 failing, 40 passing
    baseline = [_result(i, passed=True) for i in range(60)]
    page = _html.render_html(
        build_report(results, gates=Gates(baseline=baseline, baseline_name="b.json"))
    )
    answers = page[page.index('id="answers"') :]
    assert answers.count("<details") == 10  # the first FULL failing answers, in full
    assert answers.count('<li class="a ') == 10  # the other failing ones, a line each
    assert "40 passing" in answers and "Counted, not listed" in answers
    assert "PASSED" not in answers
    # The scatter: every answer of a subject sits on one of two spots.
    svg = page[page.index("<svg") : page.index("</svg>")]
    assert svg.count("<circle") - svg.count('class="flagged"') == 4
    assert "&#215;" not in svg and "\u00d720" in svg  # counts as labels, never one per answer
    # Every link lands on an id of the page.
    ids = set(re.findall(r'\bid="([^"]+)"', page))
    links = re.findall(r'\bhref="#([^"]+)"', page)
    assert links and all(link in ids for link in links)
    assert "<script" not in page.lower() and "&lt;b&gt;answer" in page


def test_small_runs_list_every_answer_failing_first() -> None:
    results = [_result(i, passed=i % 2 == 0) for i in range(6)]
    page = _html.render_html(build_report(results))
    answers = page[page.index('id="answers"') :]
    assert answers.count("<details") == 6
    assert answers.rindex("FAILED") < answers.index("PASSED")
    # A filter per subject, status and flag, as radios; "all" checked in each group.
    assert re.findall(r'id="(f[stf]-all)" checked', page) == ["fs-all", "ft-all", "ff-all"]
    assert "#fs-s0:checked~.list .a:not(.s0){display:none}" in page


def test_the_legend_says_an_unbacked_claim_is_flagged_too_only_when_one_is() -> None:
    """An agent's unhedged claim of an action its trace lacks is ringed as confidently_wrong
    at any confidence above the hedged threshold, so the legend says so when one is plotted."""
    results = [_result(i, passed=i % 2 == 0) for i in range(4)]
    plain = _html.render_html(build_report(results))
    assert "flagged confidently_wrong (confidence &ge; 0.7, score &lt; 0.5)</li>" in plain
    flags = ("confidently_wrong", "unbacked_claim")
    unbacked = replace(results[1], case="agent", confidence=0.5, flags=flags)
    page = _html.render_html(build_report([*results, unbacked]))
    assert "score &lt; 0.5; or an unbacked claim, confidence &gt; 0.35)</li>" in page
