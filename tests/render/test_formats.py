"""What a reviewer and CI see: the HTML report (rendered in a real browser), Markdown and the
GitHub step summary, JUnit properties.

Each runs in one mode: test_run_modes proves the HTML, the Markdown, the step summary and the
JUnit properties the same without xdist, with ``-n 0`` and with ``-n 2``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from pytest_rubric._render.html import PALETTE
from pytest_rubric._render.markdown import code, escape
from tests.fake_llm import FakeLLM, score
from tests.png import colours

Write = Callable[[str, str], Path]

HOSTILE = (
    "</pre></details><script>document.title='PWNED';document.body.innerHTML='PWNED'</script>"
    "<img src=x onerror=\"document.title='PWNED'\"> | ** [link](http://evil.example) "
    "<!-- & \"quotes\" 'single' -->"
)

SUITE = f"""
cases:
  - id: var
    question: "What is the horizon of a 1-day VaR?"
    responses:
      careful: "One day, at the stated confidence level, as a rule."
      bold: "Definitely ten days. This is always the case, without any doubt."
      hostile: {json.dumps(HOSTILE)}
    criteria:
      - {{id: day, type: any_of, any_of: [one day]}}
      - {{id: wrong, type: forbidden, phrases: [ten days], penalty: 1}}
  - id: sharpe
    question: "What does the Sharpe ratio divide by? <b>bold?</b>"
    responses:
      careful: "The standard deviation of excess returns, usually."
      bold: "Clearly the mean return. Certainly."
      hostile: {json.dumps(HOSTILE)}
    criteria:
      - {{id: sd, type: any_of, any_of: [standard deviation]}}
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, write: Write) -> Path:
    return write("s.rubric.yaml", SUITE)


# --- HTML ------------------------------------------------------------------------------------


def test_the_html_report_is_self_contained_and_escapes_everything(
    pytester: pytest.Pytester, suite: Path
) -> None:
    pytester.runpytest("--rubric-html", "report/r.html")
    page = (pytester.path / "report" / "r.html").read_text()
    # Nothing to run, nothing to fetch: no script, no reference to anything outside.
    tags = _tags(page)
    assert "script" not in {tag for tag, _ in tags}
    attributes = {name for _, attrs in tags for name, _ in attrs}
    assert not attributes & {"src", "href", "srcset", "action", "style"}
    assert not [name for name in attributes if name.startswith("on")]
    assert re.findall(r"https?://[^\s\"'<]+", page.split("</style>")[0]) == []
    assert "default-src 'none'" in page
    # The hostile response is there, as text.
    assert "&lt;/pre&gt;&lt;/details&gt;&lt;script&gt;document.title=&#x27;PWNED&#x27;" in page
    assert "&lt;b&gt;bold?&lt;/b&gt;" in page
    # The plot: one mark per spot (hostile's two same answers share one), a ring around each
    # spot holding a confidently wrong one.
    svg = page[page.index("<svg") : page.index("</svg>")]
    assert svg.count("<circle") - svg.count('class="flagged"') == 5
    assert svg.count('class="flagged"') == 2
    assert 'class="trap"' in svg
    # Each subject's correctness interval, drawn on the plot.
    assert svg.count('<g class="interval"') == 3
    # Leaderboard with both ranks and every answer's criteria. bold and hostile tie at
    # 0.000, and a tie is never an order: no disagreement notice.
    assert "<th>naive rank</th>" in page
    assert "1.000 [0.290, 1.000]" in page  # two cases, both right: not certainty
    assert "rank these subjects differently" not in page
    assert "states known-wrong claim &#x27;ten days&#x27;" in page
    assert page.count("<details") == 6


def _tags(page: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """Every start tag of ``page`` with its attributes, as a browser's parser sees them."""
    found: list[tuple[str, list[tuple[str, str | None]]]] = []

    class Parser(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.append((tag, attrs))

    Parser().feed(page)
    return found


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("RUBRIC_NO_BROWSER") == "1":
            pytest.skip("RUBRIC_NO_BROWSER=1: the browser test was switched off")
        pytest.fail(
            "Debian's chromium is not installed: `make test` installs it (apt-get install "
            "chromium); set RUBRIC_NO_BROWSER=1 to skip this test on purpose"
        )
    return found


def _render(page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium with networking off: its own empty network namespace where the
    machine allows one, and in any case no proxy, no DNS and no background traffic."""
    command = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--proxy-server=127.0.0.1:9",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--user-data-dir={page.parent / 'chromium-profile'}",
        *args,
        page.as_uri(),
    ]
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        command = [unshare, "-n", *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_the_html_report_renders_in_a_real_browser(pytester: pytest.Pytester, suite: Path) -> None:
    pytester.runpytest("--rubric-html", "r.html")
    page = pytester.path / "r.html"
    shot = pytester.path / "shot.png"
    done = _render(page, "--window-size=900,1000", f"--screenshot={shot}")
    assert shot.exists(), done.stderr[-2000:]
    seen = colours(shot, step=2)
    total = sum(seen.values())
    white = seen[(255, 255, 255)]
    assert white / total < 0.97, "the page rendered blank"
    assert len(seen) > 50  # text, the plot's colours, table rules
    # The subjects' colours are on screen: the points, drawn at 85 % opacity on white.
    for hex_colour in PALETTE[:3]:
        rgb = tuple(round(int(hex_colour[i : i + 2], 16) * 0.85 + 255 * 0.15) for i in (1, 3, 5))
        assert any(_near(c, rgb) for c in seen), hex_colour

    dom = _render(page, "--dump-dom").stdout
    assert "<title>pytest-rubric report</title>" in dom  # no script retitled the page
    assert "PWNED</body>" not in dom and "<script" not in dom.lower()
    assert "&lt;script&gt;document.title=" in dom  # the hostile text is shown as text


def _near(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return all(abs(x - y) <= 12 for x, y in zip(a, b, strict=True))


# --- Markdown and the GitHub step summary ----------------------------------------------------


def test_markdown_file_and_step_summary(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step = pytester.path / "step.md"
    step.write_text("earlier step output\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    pytester.runpytest("--rubric-markdown", "comment.md")
    comment = (pytester.path / "comment.md").read_text()
    assert step.read_text() == "earlier step output\n" + comment + "\n"  # appended
    assert comment.startswith("## pytest-rubric\n")
    assert "| rank | subject | correctness |" in comment
    assert "rank these subjects differently" not in comment  # a tie at 0.000 is no order
    assert "### Failing cases (4)" in comment
    assert "| `s.rubric.yaml::var[bold]` |" in comment  # a node id reads as it is
    # Nothing from a response can open a tag, a link or a table cell.
    assert "<script" not in comment and "<img" not in comment
    assert not re.search(r"(?<!\\)\]\(", comment)  # no "](" whose "]" is not escaped
    hostile_rows = [line for line in comment.splitlines() if line.startswith("| `s.rubric.yaml")]
    assert hostile_rows and all(line.count(" | ") == 5 for line in hostile_rows)
    # Under each failing case, what the application was asked and said, as inert text.
    answers = comment.split("#### `s.rubric.yaml::var[hostile]`\n\n", 1)[1].split("\n\n", 1)[0]
    assert answers.startswith("- question: ") and "\n- response: " in answers


def test_a_step_summary_of_plain_assertions_counts_them_and_draws_no_empty_table(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``assert_rubric`` without ``subject=`` ranks nobody: the page says how many passed, as
    the terminal does, and has no leaderboard of no rows."""
    pytester.makepyfile(
        test_plain="""
        from pytest_rubric import assert_rubric

        CRITERIA = [{"id": "four", "type": "number", "value": 4}]

        def test_ok():
            assert_rubric("It is 4.", CRITERIA)

        def test_bad():
            assert_rubric("It is 5.", CRITERIA)
        """
    )
    step = pytester.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    pytester.runpytest().assert_outcomes(passed=1, failed=1)
    page = step.read_text(encoding="utf-8")
    assert "assertions: 1 passed, 1 failed" in page and "| rank |" not in page


def test_no_step_summary_without_results(
    pytester: pytest.Pytester, write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    write("test_plain.py", "def test_ok():\n    pass\n")
    step = pytester.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    pytester.runpytest().assert_outcomes(passed=1)
    assert not step.exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<b>x</b>", "&lt;b&gt;x&lt;/b&gt;"),
        ("a | b", "a \\| b"),
        ("[x](http://e)", "\\[x\\](http\\://e)"),
        ("see www.e.com", "see www\\.e.com"),  # no autolink
        ("line\nbreak", "line break"),
        # Only what would change the rendering is escaped: the text still reads as written.
        ('it\'s & "so": 1.5 - (x)', 'it\'s &amp; "so": 1.5 - (x)'),
        ("_a_ *b* `c` ~d~", "\\_a\\_ \\*b\\* \\`c\\` \\~d\\~"),
    ],
)
def test_markdown_escape(text: str, expected: str) -> None:
    assert escape(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "evals/support.rubric.yaml::q1_refund[botB]",
            "`evals/support.rubric.yaml::q1_refund[botB]`",
        ),
        ("a|b", "`a\\|b`"),  # a pipe ends a table cell even in a code span
        ("x`y", "``x`y``"),
        ("`x", "`` `x ``"),
    ],
)
def test_markdown_node_ids_are_code_spans(text: str, expected: str) -> None:
    assert code(text) == expected


# --- JUnit -----------------------------------------------------------------------------------


def test_junit_carries_the_rubric_properties(pytester: pytest.Pytester, suite: Path) -> None:
    pytester.runpytest("--junitxml", "junit.xml")
    tree = ET.parse(pytester.path / "junit.xml")
    cases = {tc.get("name"): tc for tc in tree.iter("testcase")}
    props = {
        name: {p.get("name"): p.get("value") for p in tc.iter("property")}
        for name, tc in cases.items()
    }
    assert props["var[careful]"] == {
        "rubric_case": "var",
        "rubric_subject": "careful",
        "rubric_score": "1.0",
        "rubric_min_score": "0.8",
        "rubric_passed": "true",
    }
    assert props["var[bold]"]["rubric_score"] == "0.0"
    assert props["var[bold]"]["rubric_failed_criteria"] == "day,wrong"
    assert props["var[bold]"]["rubric_passed"] == "false"


# --- which run: the JSON's run, the HTML and Markdown header -----------------------------------

COMMIT = "4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39"


def _git_checkout(root: Path, commit: str) -> None:
    """The files git keeps for a checkout of ``commit`` on branch main, its refs packed."""
    (root / ".git" / "refs" / "heads").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".git" / "packed-refs").write_text(
        f"# pack-refs with: peeled fully-peeled sorted\n{commit} refs/heads/main\n"
    )


def test_the_run_is_in_the_json_and_a_header_line_with_no_token_in_any_url(
    pytester: pytest.Pytester,
    team: Callable[..., None],
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import platform
    import sqlite3
    import time
    from datetime import datetime
    from importlib.metadata import version

    team()
    _git_checkout(pytester.path, COMMIT)
    step = pytester.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    fake_llm.respond_with(lambda request: score(90))
    host = fake_llm.url.removeprefix("http://")
    endpoint = f"http://{host}/v1"  # as every output may show it
    # A gateway URL with a token in its query string (one as userinfo is refused).
    url = f"http://{host}/v1?api-key=tok-query-7"
    outputs = ("--rubric-json=out.json", "--rubric-html=out.html", "--rubric-markdown=out.md")

    def run() -> tuple[pytest.RunResult, dict[str, Any], float, float]:
        before = time.time()
        result = pytester.runpytest(
            "--rubric-judge=openai:m",
            f"--rubric-judge-url={url}",
            "--rubric-grader=holistic",
            "--junitxml=out.xml",
            *outputs,
        )
        result.assert_outcomes(passed=2)
        document = json.loads((pytester.path / "out.json").read_text())
        return result, document["run"], before, time.time()

    result, first, before, after = run()
    assert len(fake_llm.requests) == 2  # one call per case
    started = datetime.fromisoformat(first.pop("started_at")).timestamp()
    assert before - 1 <= started <= after
    assert 0 <= first.pop("duration_s") <= after - before
    assert first == {
        "plugin_version": version("pytest-rubric"),
        "pytest_version": pytest.__version__,
        "python_version": platform.python_version(),
        "git_commit": COMMIT,
        "judges": [{"name": "openai:m", "provider": "openai", "model": "m", "url": endpoint}],
        "grader": "holistic",
        "cache": {"mode": "use", "hits": 0, "misses": 2},
        "responses_replayed": 0,
        "complete": True,
    }
    # A warm run: the same run but for the cache's counts.
    result, second, _, _ = run()
    assert second["cache"] == {"mode": "use", "hits": 2, "misses": 0}

    html = (pytester.path / "out.html").read_text()
    markdown = (pytester.path / "out.md").read_text()
    version_cell = f"pytest-rubric <code>{version('pytest-rubric')}</code>"
    assert (
        f'<p class="run">{version_cell} · judge <code>openai:m at {endpoint} (holistic)</code> '
        f"· commit <code>{COMMIT[:12]}</code> · started <code>{second['started_at']} ("
    ) in html
    assert markdown.splitlines()[2] == (
        f"pytest-rubric `{version('pytest-rubric')}` · judge `openai:m at {endpoint} "
        f"(holistic)` · commit `{COMMIT[:12]}` · started `{second['started_at']} "
        f"({second['duration_s']:.1f} s)`"
    )
    # Neither token anywhere: terminal, JSON, HTML, Markdown, step summary, JUnit, the cache.
    with sqlite3.connect(pytester.path / ".rubric_cache" / "judge.sqlite3") as db:
        rows = repr(db.execute("SELECT * FROM replies").fetchall())
    db.close()
    assert endpoint in rows  # the endpoint each reply was recorded against
    texts = [str(result.stdout), rows, html, markdown, step.read_text()]
    texts += [(pytester.path / name).read_text() for name in ("out.json", "out.xml")]
    assert not [t for t in texts if "tok-query-7" in t]


def test_the_commit_is_read_from_what_git_keeps(tmp_path: Path) -> None:
    from pytest_rubric._report.run import git_commit

    repo = tmp_path / "repo"
    assert git_commit(repo) is None  # no checkout anywhere above
    _git_checkout(repo, COMMIT)
    nested = repo / "app" / "evals"
    nested.mkdir(parents=True)
    assert git_commit(nested) == COMMIT  # from the rootdir upward; packed
    loose = "0123456789abcdef0123456789abcdef01234567"
    (repo / ".git" / "refs" / "heads" / "main").write_text(loose + "\n")
    assert git_commit(repo) == loose  # a loose ref wins over a packed one, as in git
    # A linked worktree: its .git is a file; HEAD in its own folder, refs in the common one.
    own = repo / ".git" / "worktrees" / "feature"
    own.mkdir(parents=True)
    (own / "commondir").write_text("../..\n")
    (own / "HEAD").write_text("ref: refs/heads/feature\n")
    (repo / ".git" / "refs" / "heads" / "feature").write_text("f" * 40 + "\n")
    worktree = tmp_path / "feature"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {own}\n")
    assert git_commit(worktree) == "f" * 40
    (own / "HEAD").write_text("e" * 64 + "\n")  # detached, in a SHA-256 repository
    assert git_commit(worktree) == "e" * 64
    for head in ("ref: refs/heads/none", "ref: ../../../etc/passwd", "not a commit", ""):
        (own / "HEAD").write_text(head)
        assert git_commit(worktree) is None, head


def test_merge_writes_the_run_of_the_shards_together() -> None:
    from pytest_rubric._report.document import RunJudgeModel, RunModel, written
    from pytest_rubric._report.run import RunInfo, RunJudge, merged

    judge = RunJudge("openai:m", "openai", "m", "http://u:tok@gw.example/v1?k=tok")
    assert judge.url == "http://gw.example/v1"  # whatever a document held
    a = RunInfo("1", "9", "3.11", "2026-12-04T09:00:10Z", 5.0, "c" * 40, (judge,), "one-shot",
                "replay", cache_hits=3, cache_misses=1, responses_replayed=2)  # fmt: skip
    b = RunInfo("2", "9", "3.12", "2026-12-04T09:00:00Z", 30.0, None, (judge, RunJudge("x")),
                "holistic", "use", cache_hits=4, responses_replayed=1)  # fmt: skip
    assert merged([]) is None and merged([a]) is a
    both = merged([a, b])
    assert both is not None
    assert written(RunModel, both) == {
        **written(RunModel, a),
        "started_at": "2026-12-04T09:00:00Z",  # the first start, to the last end
        "duration_s": 30.0,
        "judges": [
            written(RunJudgeModel, judge),
            {"name": "x", "provider": None, "model": None, "url": None},
        ],
        "cache": {"mode": "replay", "hits": 7, "misses": 1},
        "responses_replayed": 3,
    }
