"""The terminal, the Markdown, the HTML and JUnit tell one story of a run: what a keyless run
skipped, a case left undecided without the judge, and a report-only case that scored lower.

A team's project (``app/`` answers support questions, a unit test in ``tests/``, ``evals/``
with a rubric file and the adapter ``evals/targets.py``, an ini file naming the judge
in ``rubric_judge``) is run on main with the judge, then on a pull request that regresses
the application, and by a colleague without ``OPENAI_API_KEY``, each time with every output.
"""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_rubric._cli.merge import main as cli
from tests.conftest import team_project
from tests.fake_llm import FakeLLM, verdict

Write = Callable[[str, str], Path]

MAIN = {
    "refund": "Refunds are possible within 30 days.",
    "cancel": "Cancel within 24 hours from the Orders page.",
    "hours": "We are open 9 to 5, Monday to Friday.",
    "tone": "Hello! Happy to help.",
}
# The pull request: the refund answer loses its window, the report-only tone case its
# greeting (it passes whatever it scores); the other answers stay as they were.
REGRESSED = {**MAIN, "refund": "Refunds are decided case by case.", "tone": "Happy to help."}

RUBRIC = """
suite: support
target: targets:bot
min_score: 0.75
cases:
  - id: refund
    question: "Can I get a refund?"
    criteria:
      - {id: window, type: any_of, any_of: ["30 days"]}
  - id: cancel
    question: "Can I cancel my order?"
    criteria:
      - {id: hours, type: any_of, any_of: ["24 hours"]}
      - {id: how, requirement: "Says how to cancel"}
  - id: hours
    question: "When are you open?"
    criteria:
      - {id: days, type: any_of, any_of: ["Monday to Friday"]}
  - id: tone
    question: "Hi!"
    min_score: null
    criteria:
      - {id: greets, type: any_of, any_of: ["hello"]}
      - {id: helps, type: any_of, any_of: ["help"]}
"""
CANCEL = "evals/support.rubric.yaml::cancel[bot]"
TONE = "evals/support.rubric.yaml::tone[bot]"
REFUND = "evals/support.rubric.yaml::refund[bot]"
INI = "rubric_judge = openai:gpt-4o-mini\n"
NO_KEY = (
    "no key for judge openai:gpt-4o-mini (ini rubric_judge in tox.ini): "
    "set OPENAI_API_KEY in the environment"
)
BOUNDS = "score between 0.50 and 1.00 whatever the judge says; min_score 0.75"
OUTPUTS = ("--rubric-markdown=out.md", "--rubric-html=out.html", "--junitxml=junit.xml")


def app(answers: dict[str, str]) -> str:
    return f"ANSWERS = {answers!r}\n\n\ndef answer(case_id: str) -> str:\n    return ANSWERS[case_id]\n"


@pytest.fixture
def judged(fake_llm: FakeLLM) -> tuple[str, ...]:
    """The arguments of a run with the judge: the fake one, which meets every criterion."""
    fake_llm.respond_with(lambda request: verdict("MET"))
    return (f"--rubric-judge-url={fake_llm.openai_url}", "--rubric-cache=off")


@pytest.fixture
def team(
    pytester: pytest.Pytester,
    write: Write,
    judged: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
) -> pytest.Pytester:
    """The project after main's run with the judge wrote ``main.json``; the application then
    regressed as the pull request has it."""
    team_project(
        pytester,
        write,
        app=app(MAIN),
        unit_test="from app.bot import answer\n\n\ndef test_answer():\n    assert answer('hours')\n",
        targets="from app.bot import answer\n\n\ndef bot(case):\n    return answer(case.id)\n",
        ini=INI,
    )
    write("evals/support.rubric.yaml", RUBRIC)
    monkeypatch.delenv("RUBRIC_JUDGE", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-for-the-fake")
    pytester.runpytest(*judged, "--rubric-json=main.json").assert_outcomes(passed=5)
    write("app/bot.py", app(REGRESSED))
    return pytester


def keyless(team: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.RunResult:
    """The colleague's run of main's application, against main's results, without the key."""
    monkeypatch.delenv("OPENAI_API_KEY")
    (team.path / "app/bot.py").write_text(app(MAIN))
    result = team.runpytest(
        "-rs", "--rubric-baseline=main.json", "--rubric-json=out.json", *OUTPUTS
    )
    result.assert_outcomes(passed=4, skipped=1)
    return result


def md(text: str) -> str:
    """``text`` as the Markdown writes it: its ``_``, ``[`` and ``]`` escaped."""
    return re.sub(r"([_\[\]])", r"\\\1", text)


def _section(page: str, ident: str) -> str:
    """The HTML from ``id="ident"`` to the next ``<h2``."""
    start = page.index(f'id="{ident}"')
    end = page.find("<h2", start)
    return page[start : end if end != -1 else None]


def test_a_keyless_run_says_in_every_format_that_the_judge_was_not_asked(
    team: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pull-request comment must not hide that the judge never ran: the Markdown and the
    HTML say what the terminal says of the judged criteria skipped, and list the case left
    undecided with its bounds."""
    result = keyless(team, monkeypatch)
    note = f"1 judged criteria SKIPPED ({NO_KEY}); each case was graded on what can be, 1 left undecided*"
    result.stdout.fnmatch_lines([f"! {note}"])  # a warning: something to act on
    markdown = (team.path / "out.md").read_text()
    assert "3 of 4 answers passed, 1 left undecided without the judge." in markdown
    assert "1 judged criteria SKIPPED (no key for judge openai:gpt-4o-mini" in markdown
    assert "### Undecided without the judge (1)" in markdown
    assert f"`{CANCEL}`" in markdown.split("### Undecided without the judge")[1]
    assert md(BOUNDS) in markdown.split("### Undecided without the judge")[1]
    page = (team.path / "out.html").read_text()
    assert "<p>3 of 4 answers passed, 1 left undecided without the judge.</p>" in page
    assert html.escape(f"1 judged criteria SKIPPED ({NO_KEY})") in page


def test_a_case_left_undecided_is_neither_gone_nor_unrun(
    team: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against a baseline that decided it, a case left undecided ran: no output calls it
    disappeared or not run, each says it was left undecided."""
    result = keyless(team, monkeypatch)
    undecided = (
        f"1 baseline case(s) left undecided without the judge this time (not compared), "
        f"e.g. {CANCEL}"
    )
    result.stdout.fnmatch_lines([f"  note: {undecided}"])
    result.stdout.no_fnmatch_line("*did not run this time*")
    markdown = (team.path / "out.md").read_text()
    assert f"- {md(undecided)}" in markdown
    assert "did not run" not in markdown
    page = (team.path / "out.html").read_text()
    assert "disappeared" not in _section(page, "changes")
    assert "did not run" not in page and html.escape(undecided) in page


def test_merge_says_a_case_was_left_undecided(
    team: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    keyless(team, monkeypatch)
    capsys.readouterr()
    cli(["merge", str(team.path / "out.json"), "--baseline", str(team.path / "main.json")])
    out = capsys.readouterr().out
    assert "did not run" not in out
    assert f"left undecided without the judge this time (not compared), e.g. {CANCEL}" in out


def test_a_case_left_undecided_shows_its_bounds_not_a_score(
    team: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The terminal gives an undecided case's bounds; the HTML does too, and plots no point
    for it; JUnit carries the bounds beside the score of what ran."""
    result = keyless(team, monkeypatch)
    result.stdout.fnmatch_lines([f"SKIPPED * {BOUNDS} ({NO_KEY})"])
    page = (team.path / "out.html").read_text()
    summary = re.search(r'<details class="a s0 skipped"[^>]*><summary>(.*?)</summary>', page)
    assert summary is not None
    assert f"bot: {BOUNDS}" in summary.group(1) and "score 1.00" not in summary.group(1)
    plot = page[page.index('<figure class="plot">') : page.index("</figure>")]
    assert "cancel[bot]" not in plot
    assert plot.count("[bot]: score") == 3  # refund, hours and tone
    case = next(
        c
        for c in ET.parse(team.path / "junit.xml").iter("testcase")
        if "cancel" in c.get("name", "")
    )
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties["rubric_skipped_bounds"] == "0.5,1.0"
    assert BOUNDS in case.find("skipped").get("message", "")  # type: ignore[union-attr]


def test_a_report_only_case_that_scored_lower_is_not_counted_as_regressed(
    team: pytest.Pytester, judged: tuple[str, ...]
) -> None:
    """The gate counts only the case that fails now; the terminal lists the report-only case
    under ``scored lower (report-only)``, and so do the Markdown and the HTML."""
    result = team.runpytest(*judged, "--rubric-baseline=main.json", *OUTPUTS)
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines([f"  scored lower (report-only): {TONE}"])
    result.stdout.fnmatch_lines(
        [
            "rubric gate FAILED (2):",
            f"  - {REFUND.replace('[bot]', '[[]bot[]]')} passed in the baseline*",
            "  - subject bot: *",
        ]
    )
    markdown = (team.path / "out.md").read_text()
    regressed, _, lower = markdown.partition("### Scored lower (report-only)")
    assert "### Regressed since the baseline" in regressed and f"`{REFUND}`" in regressed
    assert f"`{TONE}`" not in regressed.split("### Regressed since the baseline")[1]
    assert f"#### `{TONE}`" in lower and "- now (score 0.50): Happy to help." in lower
    changes = _section((team.path / "out.html").read_text(), "changes")
    assert '<h3 class="regressed">1 regressed</h3>' in changes
    assert '<h3 class="regressed">1 scored lower (report-only)</h3>' in changes
    lower_html = changes.split("scored lower (report-only)</h3>")[1]
    assert TONE in lower_html and REFUND not in lower_html
