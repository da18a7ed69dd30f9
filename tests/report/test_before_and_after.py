"""Before and after: with ``--rubric-baseline``, a case that
regressed shows the baseline's response beside today's and the criteria whose verdict
changed, in the terminal failure report, the Markdown and the HTML's "Changes since the
baseline".

The project is a team's: ``app/`` answers HR questions (main's answer, then a pull request
that regresses it), a unit test in ``tests/``, ``evals/`` with a rubric file and the adapter
``evals/targets.py``, and a ``pytest.ini``.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import team_project

Write = Callable[[str, str], Path]

GOOD = "You may work remotely two days a week, with your manager's approval."
REGRESSED = "Remote work is decided case by case."


def app(answer: str) -> str:
    return f"def answer(question: str) -> str:\n    return {answer!r}\n"


@pytest.fixture
def team(pytester: pytest.Pytester, write: Write) -> pytest.Pytester:
    team_project(
        pytester,
        write,
        app=app(GOOD),
        unit_test="from app.bot import answer\n\n\ndef test_answer():\n    assert answer('?')\n",
        targets="from app.bot import answer\n\n\ndef hr_bot(question: str) -> str:\n"
        "    return answer(question)\n",
    )
    write(
        "evals/remote.rubric.yaml",
        """
        suite: remote
        target: targets:hr_bot
        cases:
          - id: remote
            question: "Can I work remotely?"
            criteria:
              - {id: days, type: any_of, any_of: ["two days"]}
              - {id: approval, type: any_of, any_of: ["approval"]}
              - {id: no_vague, type: forbidden, phrases: ["case by case"]}
              - {id: remote, type: any_of, any_of: ["remote"]}
        """,
    )
    pytester.runpytest("--rubric-json", "main.json").assert_outcomes(passed=2)
    write("app/bot.py", app(REGRESSED))
    return pytester


def test_the_failure_report_shows_before_and_after(team: pytest.Pytester) -> None:
    """In one process: e2e/test_run_modes finds a regressed case's before and after in the
    failure report under -n 2 too."""
    result = team.runpytest("--rubric-baseline", "main.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "since the baseline:",
            "verdicts changed: days MET -> UNMET, approval MET -> UNMET, no_vague UNMET -> MET",
            f"baseline (score 1.00): {GOOD}",
            f"now (score 0.*): {REGRESSED}",
        ],
        consecutive=True,
    )


def test_criteria_added_and_removed_since_the_baseline_are_said_so(
    team: pytest.Pytester,
) -> None:
    """A case that regressed because a criterion was added (or renamed) shows it: the
    verdicts that changed alone would say nothing of why."""
    rubric = team.path / "evals/remote.rubric.yaml"
    text = rubric.read_text().replace("id: remote, type: any_of", "id: remote_ok, type: any_of")
    rubric.write_text(
        text.replace(
            '["remote"]}', '["remote"]}\n      - {id: extra, type: any_of, any_of: ["never"]}'
        )
    )
    result = team.runpytest("--rubric-baseline", "main.json")
    result.stdout.fnmatch_lines(
        ["verdicts changed: *remote_ok absent -> *, extra absent -> UNMET, remote MET -> absent"]
    )


def test_the_markdown_and_the_html_show_before_and_after(team: pytest.Pytester) -> None:
    result = team.runpytest(
        "--rubric-baseline", "main.json", "--rubric-markdown", "out.md", "--rubric-html", "out.html"
    )
    result.assert_outcomes(passed=1, failed=1)
    markdown = (team.path / "out.md").read_text()
    assert "### Regressed since the baseline" in markdown
    assert "- verdicts changed: days MET -&gt; UNMET, approval MET -&gt; UNMET" in markdown
    assert "- baseline (score 1.00): You may work remotely two days a week" in markdown
    assert "- now (score 0." in markdown and "case by case" in markdown
    page = (team.path / "out.html").read_text()
    changes = page[page.index('id="changes"') :]
    changes = changes[: changes.index("<h2", 10)] if "<h2" in changes[10:] else changes
    assert html.escape(GOOD) in changes
    assert REGRESSED in changes
    assert "days MET -&gt; UNMET" in changes


def test_a_report_only_case_that_scored_lower_shows_before_and_after(
    team: pytest.Pytester, write: Write
) -> None:
    """A report-only case (an imported HealthBench suite's) passes whatever it scores: its
    regression is a lower score, shown before and after in the summary (there is no failure
    report), the Markdown and the HTML, beside the subject's drop."""
    rubric = team.path / "evals/remote.rubric.yaml"
    rubric.write_text(f"min_score: null\n{rubric.read_text()}")
    write("app/bot.py", app(GOOD))
    team.runpytest("--rubric-json", "main.json").assert_outcomes(passed=2)
    write("app/bot.py", app(REGRESSED))
    result = team.runpytest(
        "--rubric-baseline", "main.json", "--rubric-markdown", "out.md", "--rubric-html", "out.html"
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "  scored lower (report-only): evals/remote.rubric.yaml::remote[[]hr_bot[]]",
            "    verdicts changed: days MET -> UNMET, approval MET -> UNMET, no_vague UNMET -> MET",
            f"    baseline (score 1.00): {GOOD}",
            f"    now (score 0.*): {REGRESSED}",
        ],
        consecutive=True,
    )
    result.stdout.fnmatch_lines(["rubric gate FAILED (1):", "*hr_bot: correctness 1.000 -> 0.*"])
    markdown = (team.path / "out.md").read_text()
    assert "### Scored lower (report-only)" in markdown
    assert "### Regressed since the baseline" not in markdown  # it passes either way
    page = (team.path / "out.html").read_text()
    changes = page[page.index('id="changes"') :]
    assert '<h3 class="regressed">1 scored lower (report-only)</h3>' in changes
    assert REGRESSED in changes


def test_an_assert_rubric_that_regressed_shows_before_and_after(
    pytester: pytest.Pytester, write: Write
) -> None:
    """A case graded by ``assert_rubric`` in a unit test is a case too: its failure shows the
    baseline's answer beside today's, as a rubric item's does."""
    team_project(
        pytester,
        write,
        app=app(GOOD),
        unit_test=(
            "from app.bot import answer\nfrom pytest_rubric import assert_rubric\n\n\n"
            "def test_remote():\n"
            "    rubric = {'id': 'remote', 'criteria': [\n"
            "        {'id': 'days', 'type': 'any_of', 'any_of': ['two days']},\n"
            "        {'id': 'approval', 'type': 'any_of', 'any_of': ['approval']},\n"
            "    ]}\n"
            "    assert_rubric(answer('Can I work remotely?'), rubric, min_score=1.0)\n"
        ),
        targets="",
    )
    pytester.runpytest("--rubric-json", "main.json").assert_outcomes(passed=1)
    write("app/bot.py", app(REGRESSED))
    result = pytester.runpytest("--rubric-baseline", "main.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*since the baseline:",
            "*verdicts changed: days MET -> UNMET, approval MET -> UNMET",
            f"*baseline (score 1.00): {GOOD}",
            f"*now (score 0.00): {REGRESSED}",
        ],
        consecutive=True,
    )


def test_a_case_that_regressed_over_samples_shows_its_lowest_one(team: pytest.Pytester) -> None:
    """With ``repeat``, the regressed case shows the sample that failed and its verdicts, as
    its failure report does: the first sample, still the old answer, would show nothing
    changed."""
    rubric = team.path / "evals/remote.rubric.yaml"
    rubric.write_text(rubric.read_text().replace("cases:", "repeat: 3\ncases:"))
    (team.path / "app/bot.py").write_text(app(GOOD))
    team.runpytest("--rubric-json", "main.json").assert_outcomes(passed=2)
    (team.path / "app/bot.py").write_text(
        "import collections, itertools\n\n"
        "_calls = collections.defaultdict(itertools.count)\n\n\n"
        "def answer(question: str) -> str:\n"
        f"    return {GOOD!r} if next(_calls[question]) == 0 else {REGRESSED!r}\n"
    )
    result = team.runpytest("--rubric-baseline", "main.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "since the baseline:",
            "verdicts changed: days MET -> UNMET, approval MET -> UNMET, no_vague UNMET -> MET",
            f"baseline (score 1.00): {GOOD}",
            f"now (score 0.33; sample 2 of 3 scored 0.*): {REGRESSED}",
        ],
        consecutive=True,
    )
