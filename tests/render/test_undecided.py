"""A case left undecided without the judge (SKIPPED with its bounds, see _grade.bounds) is
not a failing one, in the HTML as in the terminal and the Markdown.

A team names its judge in ``pytest.ini``; a colleague without the key runs the evals with
the HTML and Markdown reports: one case fails whatever the judge says, one passes whatever
it says, one could go either way."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

INI = "[pytest]\nrubric_dirs = evals\nrubric_judge = openai:gpt-4o-mini\n"

# Two deterministic points and a judged one, min_score 0.5: neither deterministic point
# scores at most 1/3 (fails), both at least 2/3 (passes), one between 1/3 and 2/3.
RUBRIC = """
min_score: 0.5
cases:
{cases}
"""
CASE = """
  - id: {id}
    question: "Which wines go with fish?"
    responses: {{bot: "{answer}"}}
    criteria:
      - {{id: chablis, type: any_of, any_of: [chablis]}}
      - {{id: muscadet, type: any_of, any_of: [muscadet]}}
      - {{id: why, type: judge, requirement: "Says why the wines suit fish"}}
"""
ANSWERS = {"wrong": "Red wine.", "right": "Chablis or Muscadet.", "open": "Chablis."}


def test_the_html_counts_an_undecided_case_as_the_markdown_does(
    pytester: pytest.Pytester,
    write: Callable[[str, str], Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("RUBRIC_JUDGE", raising=False)
    write("pytest.ini", INI)
    cases = "".join(CASE.format(id=case, answer=answer) for case, answer in ANSWERS.items())
    write("evals/fish.rubric.yaml", RUBRIC.format(cases=cases))
    result = pytester.runpytest("--rubric-html", "r.html", "--rubric-markdown", "r.md")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    assert "### Failing cases (1)" in (pytester.path / "r.md").read_text()
    page = (pytester.path / "r.html").read_text()
    answers = page[page.index('id="answers"') :]
    # Each heading of the listing, and the answers under it.
    headings = re.split(r'<h3 id="(\w+)">', answers)[1:]
    listed = {
        heading: re.findall(r'<span class="status">(\w+)</span>', text)
        for heading, text in zip(headings[::2], headings[1::2], strict=True)
    }
    assert listed == {"failing": ["FAILED"], "undecided": ["SKIPPED"], "passing": ["PASSED"]}
    assert '<h3 id="failing">1 failing</h3>' in answers
    assert 'id="ft-skipped"' in answers  # and the status filter offers it
