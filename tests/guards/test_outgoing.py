"""Text that leaves the process passes one boundary (``_guards.outgoing``): keys and their
fragments redacted, URLs without userinfo or query string, terminal control characters
escaped, lone surrogates replaced, and in Markdown no live mention
(docs/development/reliability.md). A property pushes generated hostile text through every
output writer; a session pushes it through a real run."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_rubric._guards.outgoing import (
    _ESCAPED,
    _outgoing,
    _public_urls,
    inert_mentions,
    outgoing,
    outgoing_data,
)
from pytest_rubric._guards.secrets import Secret, clip, redact, whole_characters
from pytest_rubric._render.files import write_outputs
from pytest_rubric._render.summary import terminal_lines
from pytest_rubric._render.table import answer_lines, criteria_table
from pytest_rubric._report.report import build_report
from pytest_rubric._results import CaseResult, CriterionResult, Verdict
from tests.conftest import examples
from tests.fake_llm import FakeLLM, Recorded, verdict

pytestmark = pytest.mark.hostile

Write = Callable[[str, str], Path]

KEY = "sk-test-0123456789abcdefghijklmnop"
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
SURROGATE = re.compile("[\ud800-\udfff]")
HOSTILE_PIECES = [
    "\x1b[2K\r\x1b[32m1 passed",  # rewrites pytest's last line
    "\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07",  # an OSC 8 link and BEL
    "\x9b31m",  # a C1 control sequence introducer
    "\ud83d",  # half an emoji
    "https://team:tok-userinfo-42@gateway.example/v1?api-key=tok-query-42",
    "@octocat @acme/security-team #1 ops@example.com",
    KEY,
    KEY[3:20],  # a fragment of the key, 17 characters
    "{" * 50,
    "x" * 3_000,
]


def _has_no_key(text: str) -> bool:
    return not any(KEY[i : i + 12] in text for i in range(len(KEY) - 11))


def _check(text: str) -> None:
    assert not RAW_CONTROL.search(text), RAW_CONTROL.search(text)
    assert not SURROGATE.search(text)
    assert _has_no_key(text)
    assert "tok-userinfo-42" not in text and "tok-query-42" not in text


def _result(text: str) -> CaseResult:
    # Every field holds the text whole, as a run gives it: the plugin never cuts a URL without
    # saying so ("..."), which the boundary reads as a cut that may have kept a credential.
    criterion = CriterionResult(text or "c", "judge", "substance", 1.0, Verdict.UNMET, 0.0, text)
    return CaseResult(
        f"e.rubric.yaml::{text}[{text}]", text, text, text or "s",
        0.0, 0.0, 0.8, False, [criterion], 0.5, 0.5, 0.3, question=text, response=text,
    )  # fmt: skip


hostile_text = st.lists(
    st.one_of(st.sampled_from(HOSTILE_PIECES), st.text(max_size=30)), min_size=1, max_size=6
).map("".join)


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(text=hostile_text)
# A control character escaped once read as part of the URL around it when the JSON's text
# passed the boundary again, and cutting the query took the backslash before a quote.
@example(text='\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07?"')
@example(text="000000000000https://team:tok-userinfo-42@gateway.example/v1?api-key=tok-query-42")
def test_hostile_text_leaves_through_every_writer_defused(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    report = build_report([_result(text)])
    paths = {name: tmp_path / f"out.{name}" for name in ("json", "html", "markdown")}
    write_outputs(report, paths, environ={})
    for path in paths.values():
        written = path.read_text(encoding="utf-8")
        _check(written)
    json.loads(paths["json"].read_text(encoding="utf-8"))  # still a document
    # Outside code spans (where GitHub links and notifies nothing), no mention is live.
    markdown = re.sub(r"(`+).*?\1", "", paths["markdown"].read_text(encoding="utf-8"))
    assert not re.search(r"(?<![\w])@[A-Za-z0-9]", markdown)
    assert not re.search(r"(?<![\w&])#[0-9]", markdown)
    # The terminal: the summary's lines and an item's failure text, as the plugin prints them.
    for line in terminal_lines(report):
        _check(outgoing(line.text))
    _check(
        outgoing("\n".join([criteria_table(report.results[0]), *answer_lines(report.results[0])]))
    )


@settings(max_examples=examples(200), deadline=None)
@given(text=hostile_text, keyed=st.booleans())
def test_text_passed_by_one_search_is_what_every_step_gives(text: str, keyed: bool) -> None:
    """Text with no control character, surrogate or URL skips the steps for them: the same."""
    keys = (Secret(KEY),) if keyed else ()
    every_step = redact(whole_characters(text), *keys)
    if "://" in every_step:
        every_step = _public_urls(every_step)
    assert _outgoing(text, keys) == every_step.translate(_ESCAPED)


def test_the_boundary_keeps_what_it_may_keep() -> None:
    assert outgoing("tab\tand\nnewline, é, 😀, https://example.com/a/b") == (
        "tab\tand\nnewline, é, 😀, https://example.com/a/b"
    )
    assert outgoing("\x1b[31mred\x07") == "\\x1b[31mred\\x07"
    assert outgoing("half \ud83d emoji") == "half \ufffd emoji"
    assert outgoing("see http://u:p@h:8080/v1?key=1#frag now") == "see http://h:8080/v1 now"
    assert outgoing_data({"a\x07": ["\x1b", 1, None, True]}) == {"a\\x07": ["\\x1b", 1, None, True]}
    assert inert_mentions("@octocat, @acme/team, #12, a@b.com; C#, x#1, `@code`") == (
        "@\u200boctocat, @\u200bacme/team, #\u200b12, a@\u200bb.com; C#, x#1, `@code`"
    )


def _hostile_judge(request: Recorded) -> object:
    return verdict(
        "UNMET",
        "\x1b[2K\r\x1b[32m1 passed\x07 \ud83d see @octocat #1 ops@example.com "
        f"https://u:tok-userinfo-42@gw.example/v1?api-key=tok-query-42 {KEY}",
    )


def test_a_session_with_hostile_text_ends_with_pytests_last_line_and_defused_outputs(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    write(
        "app.py",
        f"def answer(question: str) -> str:\n    raise RuntimeError('auth failed for {KEY}')\n",
    )
    write(
        "h.rubric.yaml",
        """
        cases:
          - id: judged
            question: "Q?"
            response: "An answer \\U0001F600 with \\x1b[31m colour\\r\\v\\f\\x1c\\x1d\\x1e\\x85 end"
            criteria: [{id: says, requirement: "Says it"}]
          - id: broken
            target: app:answer
            question: "Q?"
            criteria: [{id: any, type: any_of, any_of: ["x"]}]
        """,
    )
    pytester.syspathinsert()
    fake_llm.respond_with(_hostile_judge)
    result = pytester.runpytest(
        "--rubric-judge=openai:m",
        f"--rubric-judge-url={fake_llm.openai_url}",
        "--rubric-json=out.json",
        "--rubric-html=out.html",
        "--junitxml=junit.xml",
    )
    result.assert_outcomes(failed=1, errors=1)
    output = result.stdout.str()
    _check(output)
    # Line breaks other than \n stay in the response's line, escaped (not split there).
    line_breaks = "colour\\x0d\\x0b\\x0c\\x1c\\x1d\\x1e\\x85 end"
    assert f"response: An answer \U0001f600 with \\x1b[31m {line_breaks}" in output
    assert re.search(r"=+ 1 failed, 1 error in [\d.]+s", result.stdout.lines[-1])
    for name in ("out.json", "out.html", "junit.xml", "summary.md"):
        written = (pytester.path / name).read_text(encoding="utf-8")
        assert written.strip(), name
        _check(written)
    assert line_breaks in (pytester.path / "junit.xml").read_text(encoding="utf-8")
    assert "@octocat" not in summary.read_text(encoding="utf-8")
    document = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))
    reasons = [c["reason"] for r in document["results"] for c in r["criteria"]]
    assert any("\\x1b[2K" in reason for reason in reasons)  # shown, escaped


SURROGATE_JUDGE = """
import json


class HalfEmoji:
    async def complete(self, system, user):
        return json.dumps({"reason": "fine \\ud83d", "verdict": "MET"}, ensure_ascii=False)


def pytest_rubric_make_judge(config):
    return HalfEmoji()
"""


def test_half_an_emoji_from_the_judge_travels_between_xdist_processes(
    pytester: pytest.Pytester, write: Write
) -> None:
    """A lone surrogate in a result broke execnet ("strings must be utf-8 encodable"): the
    workers died and the run ended in INTERNALERROR (found by the soak's own judge)."""
    pytester.makeconftest(SURROGATE_JUDGE)
    write(
        "j.rubric.yaml",
        "cases:\n"
        + "".join(
            f"  - {{id: c{i}, response: 'ok', criteria: [{{id: says, requirement: 'Says'}}]}}\n"
            for i in range(4)
        ),
    )
    result = pytester.runpytest("-n", "1", "--rubric-json=out.json")  # a worker is a process
    result.assert_outcomes(passed=4)
    document = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))
    assert {c["reason"] for r in document["results"] for c in r["criteria"]} == {"fine \ufffd"}


def test_every_providers_key_variable_is_redacted_from_outputs() -> None:
    from pytest_rubric._defaults import PROVIDERS
    from pytest_rubric._guards.secrets import known_keys

    environ = {p.key_variable: f"sk-{name}-0123456789abcdef" for name, p in PROVIDERS.items()}
    assert {k.reveal() for k in known_keys(environ)} == set(environ.values())


@given(st.integers(2_001, 5_000), st.integers(1, 2_500))
def test_a_stored_answer_cut_again_counts_what_the_first_cut_hid(length: int, shown: int) -> None:
    """The JSON keeps an answer cut to 2,000 characters; a report showing fewer of them counts
    every character of the answer it does not show, not the first cut's marker."""
    stored = clip("x" * length)
    again = clip(stored, limit=shown)
    if shown >= 2_000:
        assert again == stored
    else:
        assert again == "x" * shown + f"… [{length - shown:,} more characters]"


def test_what_the_application_prints_and_logs_leaves_through_the_boundary(
    pytester: pytest.Pytester, write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A target that prints and logs its key, an escape sequence and a URL with a query: the
    failure report's captured sections and JUnit's system-out show none of them as such."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    write(
        "bot.py",
        f"""
        import logging, sys


        def answer(question):
            print("debug: using key {KEY} at https://api.example/v1?sig=SECRETSIG")
            sys.stderr.write("\\x1b]52;c;aGk=\\x07 cleared\\n")
            logging.getLogger("bot").warning("using key %s", "{KEY}")
            return "nothing useful"
        """,
    )
    write(
        "evals/b.rubric.yaml",
        """
        target: bot:answer
        cases:
          - id: q
            question: "Anything?"
            criteria: [{id: says, type: any_of, any_of: ["useful answer"]}]
        """,
    )
    pytester.syspathinsert()
    result = pytester.runpytest(
        "--rubric-dir=evals", "-rA", "-o", "junit_logging=all", "--junitxml=out.xml"
    )
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "Captured stdout call" in out and "debug: using key ***" in out
    junit = (pytester.path / "out.xml").read_text(encoding="utf-8")
    for shown in (out, junit):
        assert KEY[:12] not in shown and "SECRETSIG" not in shown and "\x1b" not in shown


@pytest.mark.parametrize("ending", ["… [, more characters]", "… [3 more characters]", "… [7]"])
def test_an_answer_that_ends_like_a_cut_is_counted_as_the_text_it_is(ending: str) -> None:
    """Only an answer cut where the stored answers are cut has its count carried on: any
    other ending is the answer's own text, counted character by character."""
    text = "y" * 3_000 + ending
    assert clip(text, limit=1_000) == "y" * 1_000 + f"… [{len(text) - 1_000:,} more characters]"
