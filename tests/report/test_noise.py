"""Repeats, pass rules, tiers, noise-aware rank disagreement and breakdowns, as pure functions."""

from __future__ import annotations

import pytest

from pytest_rubric._defaults import parse_pass_when
from pytest_rubric._grade.grader import Grader
from pytest_rubric._grade.scoring import item_passes
from pytest_rubric._render.summary import terminal_lines
from pytest_rubric._report import stats as _stats
from pytest_rubric._report.document import (
    GateModel,
    LeaderboardRowModel,
    result_data,
    result_of,
    written,
)
from pytest_rubric._report.gates import Gates
from pytest_rubric._report.leaderboard import breakdowns, leaderboard, pairwise, rank_noise
from pytest_rubric._report.report import Severity, build_report
from pytest_rubric._results import CaseResult, CriterionResult, Sample, Verdict, wilson


def _criterion(
    cid: str, met: bool, *, tags: tuple[str, ...] = (), required: bool = False
) -> CriterionResult:
    return CriterionResult(
        cid, "any_of", "substance", 1.0, Verdict.MET if met else Verdict.UNMET,
        1.0 if met else 0.0, "why", required=required, tags=tags,
    )  # fmt: skip


def _result(
    case: str, subject: str, score: float, *, naive: float | None = None, suite: str = "s"
) -> CaseResult:
    criteria = [_criterion("c", score >= 0.5)]
    return CaseResult(
        f"{suite}.rubric.yaml::{case}[{subject}]", suite, case, subject, score, score, 0.5,
        score >= 0.5, criteria, 0.5, 0.5, score if naive is None else naive,
    )  # fmt: skip


def _sample(passed: bool, score: float, *, error: bool = False, required: bool = False) -> Sample:
    verdict = Verdict.ERROR if error else (Verdict.MET if passed else Verdict.UNMET)
    criterion = CriterionResult(
        "c", "any_of", "substance", 1.0, verdict, float(passed), "", required=required
    )
    return Sample(score, score, passed, [criterion])


@pytest.mark.parametrize(
    ("rule", "expected"),
    [("mean", True), ("all", False), ("any", True), (0.75, True), (0.8, False)],
)
def test_pass_rules_over_samples(rule: str | float, expected: bool) -> None:
    samples = [_sample(True, 1.0), _sample(True, 0.9), _sample(False, 0.6), _sample(True, 0.8)]
    mean = sum(s.score for s in samples) / 4  # 0.825
    assert item_passes(samples, pass_when=rule, min_score=0.8, score=mean) is expected


def test_an_error_in_any_sample_is_never_a_pass() -> None:
    samples = [_sample(True, 1.0), _sample(False, 0.0, error=True)]
    for rule in ("mean", "all", "any", 0.5):
        assert not item_passes(samples, pass_when=rule, min_score=0.0, score=0.5)


def test_a_required_criterion_the_wrong_way_fails_the_mean_rule() -> None:
    samples = [_sample(True, 1.0), _sample(False, 0.9, required=True)]
    assert not item_passes(samples, pass_when="mean", min_score=0.5, score=0.95)


def test_pass_when_values() -> None:
    assert parse_pass_when("all") == "all"
    assert parse_pass_when(1) == 1.0
    assert parse_pass_when("0.8") == 0.8
    for bad in (0, 1.5, True, "most"):
        with pytest.raises(ValueError, match=r"write mean, all, any, or a number X in \(0, 1\]"):
            parse_pass_when(bad)


def test_combined_samples_keep_the_first_criteria_and_mean_scores() -> None:
    grader = Grader()
    first, second = _result("q", "a", 1.0), _result("q", "a", 0.0)
    combined = grader.combine([first, second], pass_when="any", level=0.95)
    assert combined.score == 0.5 and combined.n_samples == 2 and combined.passed
    assert combined.criteria is first.criteria
    assert combined.pass_rate == 0.5
    lo, hi = combined.pass_rate_ci
    assert lo < 0.5 < hi
    again = result_of(result_data(combined))
    assert result_data(again) == result_data(combined)


def test_tiers_follow_the_paired_interval() -> None:
    results = [_result(f"q{i}", "a", 1.0) for i in range(10)]
    results += [_result(f"q{i}", "b", 1.0 if i < 9 else 0.0) for i in range(10)]
    results += [_result(f"q{i}", "c", 0.0) for i in range(10)]
    rows = {row.subject: row for row in leaderboard(results)}
    # a and b differ on one case of ten: not resolved; c is below both on every case.
    assert (rows["a"].tier, rows["b"].tier, rows["c"].tier) == (1, 1, 2)
    # Ten cases all at 1 are not certainty: the Agresti-Coull lower end, 0.679.
    assert rows["a"].correctness_ci == (pytest.approx(0.679113, abs=1e-6), 1.0)
    assert rows["a"].n_cases == 10
    assert rows["b"].detectable_drop == _stats.detectable_drop([[1.0]] * 9 + [[0.0]])


def test_a_tier_is_held_against_its_top_subject_not_a_chain_of_neighbours() -> None:
    # Five subjects, each failing three more of twenty cases than the one above: every
    # neighbour is within noise, but the first and the third are told apart.
    results = [
        _result(f"q{i:02}", f"s{j}", 1.0 if i >= 3 * j else 0.0)
        for j in range(5)
        for i in range(20)
    ]
    tiers = [row.tier for row in leaderboard(results)]
    assert tiers == [1, 1, 2, 2, 3]


@pytest.mark.parametrize(("flat", "lumpy"), [("bx", "by"), ("by", "bx")])
def test_subjects_tied_on_rank_get_their_tiers_whatever_their_names(flat: str, lumpy: str) -> None:
    """Two subjects of one correctness, 0.8: one steady (told apart from the top's 0.9 on
    every case), one that swings (within noise of it). Each is held against the same top,
    so the tiers never follow the names' order."""
    results = [_result(f"q{i:02}", "top", 0.9) for i in range(40)]
    results += [_result(f"q{i:02}", flat, 0.8) for i in range(40)]
    results += [_result(f"q{i:02}", lumpy, 1.0 if i < 32 else 0.0) for i in range(40)]
    rows = {row.subject: row for row in leaderboard(results)}
    assert rows[flat].rank == rows[lumpy].rank == 2
    assert (rows["top"].tier, rows[lumpy].tier, rows[flat].tier) == (1, 1, 2)


def test_passed_ci_is_the_wilson_interval_of_passed_over_total() -> None:
    results = [_result(f"q{i}", "a", 1.0 if i < 3 else 0.0) for i in range(4)]
    (row,) = leaderboard(results, level=0.9)
    assert (row.passed, row.total) == (3, 4)
    assert row.passed_ci == wilson(3, 4, 0.9)
    assert written(LeaderboardRowModel, row)["passed_ci"] == list(wilson(3, 4, 0.9))


def test_detectable_drop_is_the_gates_as_configured() -> None:
    results = [_result(f"q{i}", "a", 1.0 if i % 4 else 0.0) for i in range(40)]
    (plain,) = leaderboard(results)
    (strict,) = leaderboard(results, gate_confidence=0.99)
    (loose,) = leaderboard(results, max_drop=0.05)
    assert plain.detectable_drop is not None
    assert strict.detectable_drop > plain.detectable_drop  # type: ignore[operator]
    assert loose.detectable_drop > plain.detectable_drop  # type: ignore[operator]


def test_a_tie_is_never_a_disagreement() -> None:
    # Both at 1.000, naive scores apart: no order to disagree with.
    results = [_result("q1", "a", 1.0, naive=0.9), _result("q1", "b", 1.0, naive=0.5)]
    report = build_report(results)
    assert not report.rankings_disagree and not report.rankings_differ_within_noise
    assert not any("differ" in line.text for line in terminal_lines(report))


def test_opposite_orders_within_noise_print_the_tilde_line() -> None:
    # a is ahead on one case of four, b reads better: opposite orders, unresolved.
    results = [_result(f"q{i}", "a", 1.0 if i == 0 else 0.5, naive=0.5) for i in range(4)]
    results += [_result(f"q{i}", "b", 0.5, naive=0.9) for i in range(4)]
    rows = leaderboard(results)
    noise = rank_noise(rows, pairwise(rows, results))
    assert (noise.disagree, noise.within_noise) == (False, True)
    report = build_report(results)
    lines = {line.text: line.severity for line in terminal_lines(report)}
    assert lines["~ Style-weighted ranks differ from correctness ranks only within noise."] is (
        Severity.CAUTION
    )


def test_a_resolved_opposite_order_prints_the_warning() -> None:
    results = [_result(f"q{i}", "a", 1.0, naive=0.5) for i in range(6)]
    results += [_result(f"q{i}", "b", 0.0, naive=0.9) for i in range(6)]
    report = build_report(results)
    assert report.rankings_disagree and not report.rankings_differ_within_noise


def test_breakdowns_by_suite_and_by_tag() -> None:
    tagged = CaseResult(
        "t.rubric.yaml::q[a]", "t", "q", "a", 0.5, 1.0, 0.5, True,
        [_criterion("x", True, tags=("axis:accuracy",)),
         _criterion("y", False, tags=("axis:accuracy", "theme:hedging")),
         CriterionResult("z", "judge", "substance", 1.0, Verdict.SKIPPED, 0.0, "no judge",
                         tags=("judged",))],
        0.5, 0.5, 0.5,
    )  # fmt: skip
    results = [tagged, _result("q2", "a", 1.0, suite="u")]
    entries = {(b.group, b.key, b.subject): b for b in breakdowns(results, subjects=["a"])}
    assert entries[("suite", "t", "a")].score == 0.5 and entries[("suite", "u", "a")].n == 1
    assert entries[("tag", "axis:accuracy", "a")].score == 0.5
    assert entries[("tag", "theme:hedging", "a")].score == 0.0
    assert ("tag", "judged", "a") not in entries  # nothing of it graded: no score, not 0
    lo, hi = entries[("tag", "theme:hedging", "a")].ci  # type: ignore[misc]
    assert lo == 0.0 < hi  # one result at 0: not certainty either
    # One suite alone: no suite entries.
    assert all(b.group == "tag" for b in breakdowns([tagged], subjects=["a"]))


def test_the_baseline_gate_with_confidence_fails_only_a_resolved_drop() -> None:
    before = [_result(f"q{i}", "a", 1.0) for i in range(8)]
    one_flip = [_result(f"q{i}", "a", 1.0 if i else 0.0) for i in range(8)]
    report = build_report(
        one_flip, gates=Gates(baseline=before, gate_confidence=0.95, max_drop=0.0)
    )
    # One sample a side: the flip is within noise, and so is the subject's drop.
    assert not report.gates.failed
    assert [(e.gate, e.failed) for e in report.gates.entries] == [
        ("baseline-case", False),
        ("baseline-subject", False),
    ]
    assert any("within noise" in note for note in report.gates.noted)
    all_down = [_result(f"q{i}", "a", 0.0) for i in range(8)]
    report = build_report(all_down, gates=Gates(baseline=before, gate_confidence=0.95))
    assert any(
        r.startswith("subject a: correctness 1.000 -> 0.000") for r in report.gates.regressions
    )
    delta = report.gates.deltas[0]
    assert delta.interval is not None and delta.interval[0] == -1.0 and delta.interval[1] < 0
    assert delta.shared == 8


def test_without_gate_confidence_every_flip_fails() -> None:
    before = [_result(f"q{i}", "a", 1.0) for i in range(8)]
    one_flip = [_result(f"q{i}", "a", 1.0 if i else 0.0) for i in range(8)]
    report = build_report(one_flip, gates=Gates(baseline=before))
    assert [(e.gate, e.nodeid, e.failed) for e in report.gates.entries] == [
        ("baseline-case", "s.rubric.yaml::q0[a]", True),
        ("baseline-subject", None, True),
    ]


def _repeated(case: str, passes: int, k: int = 5) -> CaseResult:
    """A case answered ``k`` times, ``passes`` of them right; passes by the mean rule."""
    samples = [_sample(i < passes, 1.0 if i < passes else 0.0) for i in range(k)]
    score = passes / k
    return CaseResult(
        f"s.rubric.yaml::{case}[a]", "s", case, "a", score, score, 0.5, score >= 0.5,
        samples[0].criteria, 0.5, 0.5, score, samples=samples,
    )  # fmt: skip


def test_a_case_whose_samples_collapse_fails_beyond_noise() -> None:
    # Five of five, then none of five: one-sided Fisher p = 1/252 = 0.004, below the
    # case budget (1 - 0.95) / 2 = 0.025 (nine cases that passed every sample in both runs
    # cannot fail, so they do not dilute it).
    before = [_repeated("q0", 5)] + [_repeated(f"q{i}", 5) for i in range(1, 10)]
    after = [_repeated("q0", 0)] + [_repeated(f"q{i}", 5) for i in range(1, 10)]
    report = build_report(after, gates=Gates(baseline=before, gate_confidence=0.95))
    (case,) = [e for e in report.gates.entries if e.gate == "baseline-case"]
    assert case.failed and case.nodeid == "s.rubric.yaml::q0[a]"
    assert "0 of 5 sample(s) pass now, 5 of 5 in the baseline, beyond noise" in case.message
    # Three of five, then two of five: a flip of the verdict, well within noise.
    before = [_repeated("q0", 3)] + [_repeated(f"q{i}", 5) for i in range(1, 10)]
    after = [_repeated("q0", 2)] + [_repeated(f"q{i}", 5) for i in range(1, 10)]
    report = build_report(after, gates=Gates(baseline=before, gate_confidence=0.95))
    (case,) = [e for e in report.gates.entries if e.gate == "baseline-case"]
    assert not case.failed and case.note and "within noise" in case.message


def test_every_gate_outcome_is_an_entry() -> None:
    before = [_result(f"q{i}", s, 1.0) for s in ("a", "b") for i in range(4)]
    after = [_result(f"q{i}", "a", 1.0) for i in range(4)]
    after += [_result(f"q{i}", "b", 0.0 if i == 0 else 1.0) for i in range(4)]
    report = build_report(after, gates=Gates(baseline=before, fail_under=0.9))
    entries = [written(GateModel, e) for e in report.gates.entries]
    assert entries == [
        {"gate": "baseline-case", "subject": "b", "nodeid": "s.rubric.yaml::q0[b]",
         "failed": True, "message": "s.rubric.yaml::q0[b] passed in the baseline and fails "
         "now (score 0.00, min_score 0.50)"},
        {"gate": "baseline-subject", "subject": "a", "nodeid": None, "failed": False,
         "message": "subject a: correctness 1.000 -> 1.000, no drop beyond --rubric-max-drop 0"},
        {"gate": "baseline-subject", "subject": "b", "nodeid": None, "failed": True,
         "message": "subject b: correctness 1.000 -> 0.750, a drop of 0.250 (more than "
         "--rubric-max-drop 0)"},
        {"gate": "fail-under", "subject": "a", "nodeid": None, "failed": False,
         "message": "subject a: correctness 1.000 is at or above --rubric-fail-under 0.9"},
        {"gate": "fail-under", "subject": "b", "nodeid": None, "failed": True,
         "message": "subject b: correctness 0.750 is below --rubric-fail-under 0.9"},
    ]  # fmt: skip
    # Quiet passes are data, not notes: the summary prints only what says something.
    assert report.gates.noted == ()


# --- gates that measured nothing, and drops hidden by added cases ----------------


def test_a_drop_on_shared_cases_is_not_hidden_by_added_easy_cases() -> None:
    """1.00 -> 0.60 on the shared cases while two easy cases join: the whole means read
    0.750 -> 0.775, but the gate compares the cases both runs graded."""
    from pytest_rubric._report.gates import run_gates

    baseline = [_result("a", "s", 1.0), _result("b", "s", 0.5)]
    now = [_result("a", "s", 0.6), _result("b", "s", 0.5)]
    now += [_result("easy1", "s", 1.0), _result("easy2", "s", 1.0)]
    gates = run_gates(now, Gates(baseline=baseline))
    (entry,) = [e for e in gates.entries if e.gate == "baseline-subject"]
    assert entry.failed
    assert entry.message.startswith(
        "subject s: correctness 0.750 -> 0.550 over the 2 cases both runs graded, a drop of 0.200"
    )


def test_a_baseline_that_shares_nothing_fails_the_gate() -> None:
    from pytest_rubric._report.gates import run_gates

    gates = run_gates([_result("new", "s2", 1.0)], Gates(baseline=[_result("old", "s1", 1.0)]))
    assert gates.failed
    assert any(
        e.gate == "baseline-case" and e.failed and "shares no case with this run" in e.message
        for e in gates.entries
    )


def test_a_style_probe_or_kappa_gate_that_measured_nothing_fails() -> None:
    from pytest_rubric._report.audit import ProbeFigures
    from pytest_rubric._report.gates import run_gates

    results = [_result("a", "s", 1.0)]
    nothing_probed = [ProbeFigures(judge="j", kind="tone", probed=0, flips=0)]
    for probes in ([], nothing_probed):
        gates = run_gates(results, Gates(max_flips={"tone": 0.1}), probes=probes)
        assert gates.failed, probes
        assert any("measured nothing" in e.message for e in gates.entries if e.failed)
    gates = run_gates(results, Gates(min_kappa=0.5), calibration=[])
    assert gates.failed
    assert any("no calibration label was graded" in e.message for e in gates.entries)
