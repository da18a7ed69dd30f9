"""Outcomes a user sees: pass, fail with the criterion table, ERROR, SKIPPED, broken files."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import lines_in_any_order

Write = Callable[[str, str], Path]

VAR_CASE = """
suite: finance
min_score: 0.8
cases:
  - id: q02_var
    question: "A portfolio's 1-day 99% VaR is $1 million. What does that mean?"
    responses:
      good: "There is a 1% chance that the one-day loss will exceed $1 million."
      bad: "VaR is the maximum loss: in the worst case you lose $1 million."
    criteria:
      - {id: tail_probability, type: any_of, points: 1, any_of: ["1%", "99%"]}
      - {id: exceedance, type: any_of, points: 1, any_of: ["exceed", "more than", "greater than"]}
      - {id: about_losses, type: regex, points: 1, pattern: "\\\\bloss"}
      - {id: not_a_max, type: forbidden, penalty: 1.5, phrases: ["maximum loss", "worst case"]}
"""


def test_pass_and_fail_with_the_criterion_table(pytester: pytest.Pytester, write: Write) -> None:
    write("fin.rubric.yaml", VAR_CASE)
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*_ rubric: q02_var[[]bad[]] _*",
            "rubric q02_var[[]bad[]]: score 0.00 (min_score 0.80, raw -0.5) FAILED",
            "   criterion         type       verdict  weight  reason",
            "x  tail_probability  any_of     UNMET         1  none of '1%', '99%' found",
            "x  exceedance        any_of     UNMET         1  none of 'exceed', 'more than', 'greater than' found",
            "   about_losses      regex      MET           1  matched 'loss'",
            "x  not_a_max         forbidden  MET        -1.5  states known-wrong claim 'maximum loss'",
            "  - score 0.00 is below min_score 0.80",
        ],
        consecutive=True,
    )


def test_required_criterion_fails_the_case_whatever_the_score(
    pytester: pytest.Pytester, write: Write
) -> None:
    write(
        "r.rubric.yaml",
        """
        min_score: 0.5
        cases:
          - id: q1
            response: "The NPV is positive, so accept."
            criteria:
              - {id: sign, type: any_of, weight: 3, any_of: [positive]}
              - {id: value, type: number, value: 157.63, abs_tol: 0.01, required: true}
        """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "rubric q1[[]inline[]]: score 0.75 (min_score 0.50, raw 3) FAILED",
            "*",
            "*",
            "x  value*UNMET*no number in the answer (target 157.63 ± 0.01)",
            "  - required criterion 'value' went the wrong way (UNMET)",
        ],
        consecutive=True,
    )


def test_a_criterion_that_cannot_be_evaluated_is_an_error_never_a_pass(
    pytester: pytest.Pytester, write: Write
) -> None:
    write("checks.py", "def boom(response, case):\n    raise ValueError('no idea')\n")
    write(
        "e.rubric.yaml",
        """
        min_score: 0.1
        cases:
          - id: broken_regex
            response: "anything"
            criteria:
              - {id: ok, type: any_of, any_of: [anything]}
              - {id: bad, type: regex, pattern: "(unclosed"}
          - id: raising_callable
            response: "anything"
            criteria:
              - {id: ok, type: any_of, any_of: [anything]}
              - {id: custom, type: callable, function: "checks:boom"}
        """,
    )
    pytester.syspathinsert()
    result = pytester.runpytest("--rubric-json", "out.json")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at call of rubric: broken_regex[[]inline[]]*",
            "rubric broken_regex[[]inline[]]: score 0.50 (min_score 0.10, raw 1) ERROR",
            "*",
            "   ok*MET*",
            "!  bad        regex   ERROR*invalid regex '(unclosed': missing )*",
            "  - bad: ERROR: invalid regex*",
        ]
    )
    result.stdout.fnmatch_lines(["!  custom*ERROR*checks:boom raised ValueError: no idea"])
    result.stdout.fnmatch_lines(
        ["2 answer(s) could not be fully evaluated (ERROR); they count as not passed."]
    )


def test_judged_criteria_are_skipped_without_a_judge(
    pytester: pytest.Pytester, write: Write
) -> None:
    write(
        "j.rubric.yaml",
        """
        cases:
          - id: mixed
            response: "It is 4."
            criteria:
              - {id: four, type: number, value: 4}
              - {id: explains, weight: 3, requirement: "Explains why"}
          - id: judged_only
            response: "It is 4."
            criteria:
              - {id: explains, weight: 3, requirement: "Explains why"}
          # Every positive weight judged: its error criterion alone would pass it at 1.0,
          # unless that one is required and went the wrong way.
          - id: judged_positives
            response: "It is 4."
            criteria:
              - {id: five, type: forbidden, phrases: ["5"]}
              - {id: explains, weight: 3, requirement: "Explains why"}
          - id: required_error
            response: "It is 4."
            criteria:
              - {id: four, type: forbidden, phrases: ["4"], required: true}
              - {id: explains, weight: 3, requirement: "Explains why"}
          # An error made that fails the case whatever the judge says: (3 - 1) / 3 at best.
          - id: error_made
            response: "It is 4."
            criteria:
              - {id: four, type: forbidden, phrases: ["4"]}
              - {id: explains, weight: 3, requirement: "Explains why"}
          # The same error, which the judge could still outweigh: (10 - 1) / 10 at best.
          - id: error_outweighed
            response: "It is 4."
            criteria:
              - {id: four, type: forbidden, phrases: ["4"]}
              - {id: explains, weight: 10, requirement: "Explains why"}
        """,
    )
    result = pytester.runpytest("-v", "-rs")
    result.assert_outcomes(passed=1, skipped=3, failed=2)
    lines_in_any_order(
        result,
        [
            "j.rubric.yaml::mixed[[]inline[]] PASSED (judged criteria skipped)*",
            "j.rubric.yaml::judged_only[[]inline[]] SKIPPED*",
            "j.rubric.yaml::judged_positives[[]inline[]] SKIPPED*",
            "j.rubric.yaml::required_error[[]inline[]] FAILED*",
            "j.rubric.yaml::error_made[[]inline[]] FAILED*",
            "j.rubric.yaml::error_outweighed[[]inline[]] SKIPPED*",
        ],
    )
    result.stdout.fnmatch_lines(["*x  four  *forbidden  MET*"])
    result.stdout.fnmatch_lines(
        ["SKIPPED * nothing graded: no judge configured: set --rubric-judge PROVIDER:MODEL*"]
    )
    # Every case's, those with nothing graded too: each is in the outputs as undecided.
    result.stdout.fnmatch_lines(["6 judged criteria SKIPPED (no judge configured)*"])


def test_a_forbidden_claim_with_no_penalty_counts_through_required_alone(
    pytester: pytest.Pytester, write: Write
) -> None:
    """``penalty: 0`` is a weight of -0.0: still an error to avoid, so a clean answer went the
    right way and the claim made fails the case, flagged as a known-wrong claim."""
    write(
        "f.rubric.yaml",
        """
        cases:
          - id: q
            responses: {clean: "It is 4.", wrong: "It is 5."}
            criteria:
              - {id: four, type: number, value: 4}
              - {id: five, type: forbidden, phrases: ["is 5"], penalty: 0, required: true}
        """,
    )
    result = pytester.runpytest("-v", "--rubric-json=out.json")
    lines_in_any_order(result, ["*::q[[]clean[]] PASSED*", "*::q[[]wrong[]] FAILED*"])
    results = {
        r["subject"]: r for r in json.loads((pytester.path / "out.json").read_text())["results"]
    }
    assert [c["ok"] for c in results["clean"]["criteria"]] == [True, True]
    assert [c["ok"] for c in results["wrong"]["criteria"]] == [False, False]
    assert "known_wrong_claim" in results["wrong"]["flags"]


def test_broken_file_is_one_collection_error_and_the_rest_still_runs(
    pytester: pytest.Pytester, write: Write
) -> None:
    write("good.rubric.yaml", VAR_CASE)
    write(
        "broken.rubric.yaml",
        """
        cases:
          - id: q1
            response: "x"
            criteria:
              - {id: a, type: anyof, any_of: [x]}
              - {id: b, type: regex, pattrn: "x"}
          - id: q2
            response: "y"
            criteria:
              - {id: c, type: number}
        """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*_ ERROR collecting broken.rubric.yaml _*",
            "*broken.rubric.yaml: 3 problems in rubric file",
            "  *broken.rubric.yaml:5, case 'q1', criterion 'a', field 'type': unknown criterion type 'anyof'",
            "    -> did you mean `type: any_of`? use one of any_of, all_of, *",
            "  *broken.rubric.yaml:6, case 'q1', criterion 'b', field 'pattrn': unknown field `pattrn`",
            "    -> did you mean `pattern`? Allowed here: *",
            "  *broken.rubric.yaml:10, case 'q2', criterion 'c', field 'value': missing required field `value`",
            "    -> add `value: 42`",
        ],
        consecutive=True,
    )
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*Interrupted*")


def test_yaml_syntax_error_names_the_line(pytester: pytest.Pytester, write: Write) -> None:
    write("bad.rubric.yaml", "cases:\n  - id: q1\n    criteria: [\n  oops: 1\n")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "bad.rubric.yaml: 1 problem in rubric file",
            "  bad.rubric.yaml:5: invalid YAML: did not find expected ',' or ']'"
            " (while parsing a flow sequence that starts at line 3)",
            "    -> check the indentation*",
        ]
    )


def test_json_syntax_error_names_the_line(pytester: pytest.Pytester, write: Write) -> None:
    write("bad.rubric.json", '{"cases": [\n  {"id": "q1",}\n]}\n')
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["  *bad.rubric.json:2: invalid JSON: *"])


def test_case_without_substance_is_a_collection_error(
    pytester: pytest.Pytester, write: Write
) -> None:
    write(
        "s.rubric.yaml",
        """
        cases:
          - id: only_style
            response: "x"
            criteria:
              - {id: tone, type: length, max_words: 50, axis: style}
        """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "  *s.rubric.yaml:2, case 'only_style', field 'criteria': the case has no substance criterion*",
            "    -> add a criterion with `axis: substance` (the default) and a non-zero weight",
        ]
    )


def test_short_summary_names_the_failing_items(pytester: pytest.Pytester, write: Write) -> None:
    write("fin.rubric.yaml", VAR_CASE)
    result = pytester.runpytest("-rf")
    result.stdout.fnmatch_lines(
        ["FAILED fin.rubric.yaml::q02_var[[]bad[]] - rubric q02_var[[]bad[]]: score 0.00*"]
    )


def test_yaml_booleans_as_ids_get_a_quoting_hint(pytester: pytest.Pytester, write: Write) -> None:
    write(
        "b.rubric.yaml",
        """
        cases:
          - id: 7
            response: "yes"
            criteria:
              - {id: yes, type: any_of, any_of: ["yes"]}
        """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "  b.rubric.yaml:5, case '7', criterion '#1', field 'id': `id` must be text, but YAML read"
            " a bare yes/no/on/off/true/false as True",
            '    -> quote it: `id: "..."`',
        ],
        consecutive=True,
    )
