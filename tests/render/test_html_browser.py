"""The comparing report in a real browser: a run with a baseline and a history of earlier runs,
opened in headless Chromium (docs/guides/comparing.md).

It renders (the changes since the baseline, the trend lines), every in-page link lands on an
id of the page, no script ran, and the filters work by CSS alone."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.png import colours
from tests.render.test_formats import _render

Write = Callable[[str, str], Path]

SUITE = """
cases:
  - id: q1
    question: "What is 6 x 7?"
    responses: {good: "It is 42.", bad: "%s"}
    criteria: [{id: value, type: number, value: 42}]
  - id: q2
    question: "Capital of France?"
    responses: {good: "%s", bad: "Paris, definitely."}
    criteria: [{id: city, type: any_of, any_of: [paris]}]
  - id: q3
    question: "Horizon of a 1-day VaR?"
    responses: {good: "One day.", bad: "Ten days, certainly, always."}
    criteria:
      - {id: day, type: any_of, any_of: [one day]}
      - {id: wrong, type: forbidden, phrases: [ten days], penalty: 1}
"""


def _browser() -> None:
    if shutil.which("chromium") is None and shutil.which("chromium-browser") is None:
        pytest.skip("no Chromium binary on PATH (chromium or chromium-browser): `make browser`")


@pytest.fixture
def page(pytester: pytest.Pytester, write: Write) -> Path:
    """A report with a baseline and a history of three earlier runs."""
    _browser()
    for bad, good in (("It is 41.", "Paris."), ("It is 42.", "Paris."), ("It is 41.", "Paris.")):
        write("s.rubric.yaml", SUITE % (bad, good))
        pytester.runpytest("--rubric-history=h.sqlite3", "--rubric-json=base.json")
    write("s.rubric.yaml", SUITE % ("It is 42.", "Rome."))  # one improved, one regressed
    pytester.runpytest(
        "--rubric-history=h.sqlite3", "--rubric-baseline=base.json", "--rubric-html=r.html"
    )
    return pytester.path / "r.html"


def test_the_comparing_report_renders_and_runs_nothing(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert '<h2 id="changes">Changes since the baseline</h2>' in text
    assert '<h2 id="trend">Correctness over the last 4 runs</h2>' in text
    assert text.index('id="changes"') < text.index('id="trend"') < text.index('id="answers"')
    # Every in-page link lands on an id of the page; none points elsewhere.
    ids = set(re.findall(r'\bid="([^"]+)"', text))
    links = re.findall(r'\bhref="([^"]*)"', text)
    assert links and all(link.startswith("#") and link[1:] in ids for link in links)
    # Failing answers first.
    answers = text[text.index('id="answers"') :]
    assert answers.index("FAILED") < answers.index("PASSED")

    shot = page.parent / "shot.png"
    done = _render(page, "--window-size=1000,1600", "--hide-scrollbars", f"--screenshot={shot}")
    assert shot.exists(), done.stderr[-2000:]
    seen = colours(shot, step=2)
    assert seen[(255, 255, 255)] / sum(seen.values()) < 0.97, "the page rendered blank"
    assert len(seen) > 50
    # The trend lines: both subjects' colours, drawn solid.
    for rgb in ((0x00, 0x72, 0xB2), (0xE6, 0x9F, 0x00)):
        assert any(all(abs(a - b) <= 8 for a, b in zip(c, rgb, strict=True)) for c in seen), rgb

    # What a script would do is not there: the page as Chromium holds it after loading has
    # no script, its title and first heading unchanged, and the console logged nothing.
    logged = _render(page, "--dump-dom", "--enable-logging=stderr", "--v=0")
    dom = logged.stdout
    assert "<script" not in text.lower() and "<script" not in dom.lower()
    assert "<title>pytest-rubric report</title>" in dom
    assert "<h1>pytest-rubric report</h1>" in dom
    assert dom.count("<details") == text.count("<details")
    assert "CONSOLE" not in logged.stderr and "Refused to" not in logged.stderr


def test_the_filters_work_without_a_script(page: Path) -> None:
    """Checking a filter's radio (here in the file: no script could click it) hides what it
    excludes; the page looks otherwise the same."""
    _browser()
    text = page.read_text(encoding="utf-8")
    assert 'id="ft-passed"' in text
    passed_only = page.parent / "passed.html"
    passed_only.write_text(
        text.replace('id="ft-all" checked', 'id="ft-all"').replace(
            'id="ft-passed"', 'id="ft-passed" checked'
        ),
        encoding="utf-8",
    )
    shots = {}
    for name, source in (("all", page), ("passed", passed_only)):
        shots[name] = page.parent / f"{name}.png"
        _render(source, "--window-size=1000,3000", f"--screenshot={shots[name]}")
    # The failing answers' red status is gone with only passed answers shown.
    red = (0xBB, 0x00, 0x00)

    def reds(shot: Path) -> int:
        return sum(
            n
            for c, n in colours(shot, step=2).items()
            if all(abs(a - b) <= 40 for a, b in zip(c, red, strict=True))
        )

    assert reds(shots["all"]) > reds(shots["passed"])
