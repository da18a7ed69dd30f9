"""The application under test: called live, visibly replayed, with what its signature names,
as many subjects as given (docs/guides/responses.md).

The projects here are laid out as a team's: an ``app/`` package, unit tests in
``tests/``, ``evals/`` with a rubric file and a separate target adapter
(``evals/targets.py``), and a ``pytest.ini`` with ``rubric_dirs = evals``.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_rubric._cli.merge import main as cli
from tests.fake_llm import FakeLLM, Recorded, status, text

Write = Callable[[str, str], Path]

BOT = """
def answer(question: str) -> str:
    if "return" in question.lower():
        return "{policy}"
    return "I can help with orders and returns."
"""
GOOD = "You can return it within 30 days for a full refund."
REGRESSED = "You can return it within 14 days for store credit."

ADAPTER = """
from app.bot import answer


def support_bot(question: str) -> str:
    return answer(question)
"""

SUITE = """
suite: support
target: targets:support_bot
cases:
  - id: refund_window
    question: "How long do I have to return a jacket?"
    criteria:
      - {id: days, type: any_of, any_of: ["30 days"]}
      - {id: refund, type: any_of, any_of: ["full refund"], required: true}
      - {id: no_credit, type: forbidden, phrases: ["store credit"]}
"""


@pytest.fixture
def team(pytester: pytest.Pytester, write: Write) -> Callable[[str], None]:
    """A team's project, its app answering with the policy given (call again to edit it)."""
    pytester.makeini("[pytest]\nrubric_dirs = evals\n")
    write("app/__init__.py", "")
    write(
        "tests/test_bot.py",
        """
        from app.bot import answer

        def test_answers_something():
            assert answer("hi")
        """,
    )
    write("evals/targets.py", ADAPTER)
    write("evals/support.rubric.yaml", SUITE)

    def set_policy(policy: str) -> None:
        write("app/bot.py", BOT.format(policy=policy))

    set_policy(GOOD)
    return set_policy


def _git(where: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=dev", "-c", "user.email=dev@example.com", *args],
        cwd=where,
        check=True,
        capture_output=True,
    )


def test_an_edit_to_the_app_fails_the_item_on_the_next_run(
    pytester: pytest.Pytester, team: Callable[[str], None]
) -> None:
    """Two commits: the second regresses app/bot.py, and the same command now fails.

    The judge cache is on (its default), as in a team's checkout: it holds judge
    calls only, so nothing of the first run's answer is replayed.
    """
    _git(pytester.path, "init", "-q")
    _git(pytester.path, "add", "-A")
    _git(pytester.path, "commit", "-qm", "the bot")
    result = pytester.runpytest()
    result.assert_outcomes(passed=2)

    team(REGRESSED)
    _git(pytester.path, "commit", "-qam", "shorter return window")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*refund_window[[]support_bot[]]*"])
    result.stdout.no_fnmatch_line("*replayed from the cache*")


def test_answers_replay_only_when_asked_and_the_summary_says_so(
    pytester: pytest.Pytester, team: Callable[[str], None]
) -> None:
    recorded = pytester.runpytest("--rubric-response-cache=use")
    recorded.assert_outcomes(passed=2, warnings=0)  # the key holds each criterion whole
    recorded.stdout.no_fnmatch_line("*replayed from the cache*")  # asked, and recorded

    team(REGRESSED)  # an edit to the app only: the adapter is unchanged
    replayed = pytester.runpytest("--rubric-response-cache=use")
    replayed.assert_outcomes(passed=2, warnings=0)  # what was asked for: the recorded answer
    replayed.stdout.fnmatch_lines(
        ["*responses: 1 of 1 replayed from the cache; the application was not called for them*"]
    )
    live = pytester.runpytest()
    live.assert_outcomes(passed=1, failed=1)
    live.stdout.no_fnmatch_line("*replayed from the cache*")
    # More samples: the recorded one is the first, the second is asked.
    grown = pytester.runpytest("--rubric-response-cache=use", "--rubric-repeat=2")
    grown.stdout.fnmatch_lines(["*responses: 1 of 2 replayed from the cache*"])


def test_a_call_that_failed_counts_as_asked_in_the_replayed_line(
    pytester: pytest.Pytester, write: Write
) -> None:
    """A failed call is not cached, so a warm run calls the application for it again: the
    summary never says every answer was replayed when one was asked."""
    write("two.py", "def good(question):\n    return 'One day.'\n\n\ndef bad(question):\n"
          "    raise OSError('down')\n")  # fmt: skip
    write(
        "t.rubric.yaml",
        "targets: {good: 'two:good', bad: 'two:bad'}\ncases:\n"
        '  - {id: q, question: "q", criteria: [{id: d, type: any_of, any_of: ["one day"]}]}\n',
    )
    for _ in range(2):
        result = pytester.runpytest("--rubric-response-cache=use")
        result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*responses: 1 of 2 replayed from the cache*"])


def test_the_ini_sets_the_response_cache_and_replay_calls_nothing(
    pytester: pytest.Pytester, team: Callable[[str], None], write: Write
) -> None:
    pytester.makeini("[pytest]\nrubric_dirs = evals\nrubric_response_cache = use\n")
    pytester.runpytest().assert_outcomes(passed=2)
    write(  # the app is down for the eval's question: replay must not call it
        "app/bot.py",
        "def answer(question: str) -> str:\n"
        "    if 'return' in question.lower():\n"
        "        raise RuntimeError('down')\n"
        "    return 'ok'\n",
    )
    result = pytester.runpytest("--rubric-response-cache=replay")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*responses: 1 of 1 replayed*"])

    write(
        "evals/support.rubric.yaml",
        SUITE.replace("How long do I have", "How many days do I have"),
    )
    result = pytester.runpytest("--rubric-response-cache=replay")
    result.assert_outcomes(passed=1, errors=1)  # the case changed: nothing recorded for it
    result.stdout.fnmatch_lines(
        [
            "*--rubric-response-cache replay: no recorded answer of target "
            "targets:support_bot for case 'refund_window'*"
        ]
    )
    # The plugin's own miss: the target never ran, so it neither raised nor has a traceback.
    result.stdout.no_fnmatch_line("*raised LLMError*")
    result.stdout.no_fnmatch_line("*sources.py*")


def test_a_bad_ini_response_cache_is_a_usage_error(
    pytester: pytest.Pytester, team: Callable[[str], None]
) -> None:
    pytester.makeini("[pytest]\nrubric_dirs = evals\nrubric_response_cache = always\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*rubric_response_cache = 'always' must be one of off, use, replay*"]
    )


FORMS = """
from pytest_rubric import Case


def by_str(q: str) -> str:
    return f"got text {q}"


def by_question(question):
    return f"got text {question}"


def by_prompt(prompt, style="plain"):
    return f"got text {prompt}"


async def by_text(text):
    return f"got text {text}"


def by_case(case):
    return f"got case {case.id}"


def by_annotation(c: Case) -> str:
    return f"got case {c.id}"


def by_messages(messages):
    return "got turns " + " | ".join(f"{m['role']}:{m['content']}" for m in messages)


def keyword_only(*, question: str) -> str:
    return f"got text {question}"
"""


def test_a_target_receives_what_its_signature_names(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    write("forms.py", FORMS)
    names = ["by_str", "by_question", "by_prompt", "by_text", "by_case", "by_annotation"]
    names += ["by_messages", "keyword_only"]
    write(
        "forms.rubric.yaml",
        "targets: {"
        + ", ".join(f"{n}: 'forms:{n}'" for n in names)
        + "}\n"
        + textwrap.dedent(
            """
            cases:
              - id: plain
                question: "Where is my order?"
                criteria: [{id: any, type: any_of, any_of: ["got"]}]
              - id: chat
                messages:
                  - {role: system, content: "Be brief."}
                  - {role: user, content: "Hello"}
                  - {role: assistant, content: "Hi!"}
                  - {role: user, content: "Refund?"}
                criteria: [{id: any, type: any_of, any_of: ["got"]}]
            """
        ),
    )
    result = pytester.runpytest("--rubric-json", "out.json")
    result.assert_outcomes(passed=16)
    got = {(r["case"], r["subject"]): r["response"] for r in rubric_json()["results"]}
    for name in ("by_str", "by_question", "by_prompt", "by_text", "keyword_only"):
        assert got["plain", name] == "got text Where is my order?"
        assert got["chat", name] == "got text Refund?"  # the last user message
    for name in ("by_case", "by_annotation"):
        assert got["plain", name] == "got case plain"
    assert got["plain", "by_messages"] == "got turns user:Where is my order?"
    assert got["chat", "by_messages"] == (
        "got turns system:Be brief. | user:Hello | assistant:Hi! | user:Refund?"
    )


SHARED = """
import asyncio

LOCK = asyncio.Lock()  # at module level, as a team keeps its client: bound to the first loop
LOOPS = set()


async def answer(question: str) -> str:
    async with LOCK:  # a case's samples wait for each other here
        LOOPS.add(id(asyncio.get_running_loop()))
        await asyncio.sleep(0.01)
    return f"{len(LOOPS)} loop(s)"
"""


def test_async_targets_share_one_loop_as_the_application_does(
    pytester: pytest.Pytester, write: Write
) -> None:
    """What the application keeps at module level (an async client, a lock) works on every
    call, a case's samples at once included: every call runs on one event loop."""
    write("shared.py", SHARED)
    case = '{id: %s, question: "q", criteria: [{id: one, type: any_of, any_of: ["1 loop(s)"]}]}'
    write(
        "s.rubric.yaml",
        "target: shared:answer\nrepeat: 3\ncases:\n"
        + "".join(f"  - {case % name}\n" for name in "abc"),
    )
    pytester.runpytest().assert_outcomes(passed=3)


def test_the_texts_of_a_targets_metadata_are_kept_cut_as_any_text_a_result_copies(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    """Metadata is kept in the JSON, and its texts are cut to 2,000 characters with the count,
    as a reason or a tool result is: a 5 MB blob the application returns is not copied whole."""
    write(
        "meta.py",
        "def answer(question: str):\n"
        "    return {'answer': 'One day.', 'metadata': {'run': 'r1', 'blob': 'z' * 5_000_000,"
        " 'parts': [{'note': 'y' * 3_000}, 7]}}\n",
    )
    write(
        "m.rubric.yaml",
        'target: meta:answer\ncases:\n  - {id: q, question: "q", '
        'criteria: [{id: d, type: any_of, any_of: ["one day"]}]}\n',
    )
    pytester.runpytest("--rubric-json", "out.json").assert_outcomes(passed=1)
    (result,) = rubric_json()["results"]
    metadata = result["samples"][0]["trace"]["metadata"]
    assert metadata["run"] == "r1" and metadata["parts"][1] == 7
    assert metadata["blob"].endswith("[4,998,000 more characters]")
    assert len(metadata["blob"]) < 2_100
    assert metadata["parts"][0]["note"].endswith("[1,000 more characters]")
    assert (pytester.path / "out.json").stat().st_size < 100_000


def test_a_target_of_another_signature_is_a_collection_error_listing_the_forms(
    pytester: pytest.Pytester, write: Write
) -> None:
    write(
        "bad.py",
        "def answer(query, context):\n    return ''\n\ndef odd(x):\n    return ''\n\n"
        "def star(*args):\n    return ''\n",
    )
    write(
        "a.rubric.yaml",
        """
        cases:
          - id: two
            target: bad:answer
            question: Q
            criteria: [{id: any, type: any_of, any_of: ["x"]}]
          - id: one
            target: bad:odd
            question: Q
            criteria: [{id: any, type: any_of, any_of: ["x"]}]
          - id: three
            target: bad:star
            question: Q
            criteria: [{id: any, type: any_of, any_of: ["x"]}]
        """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*a.rubric.yaml:2, case 'two', field 'target': target 'bad:answer' cannot be "
            "called: it takes query, context; a target takes one parameter, one of: a "
            "parameter annotated `str`, or named `question`, `prompt` or `text`*",
            "*a.rubric.yaml:6, case 'one', field 'target': target 'bad:odd' cannot be called: "
            "its parameter 'x' names none of the forms*named `case`*named `messages`*",
            "*case 'three', field 'target': target 'bad:star' cannot be called: it takes "
            "*args; a target takes one parameter*",
        ]
    )


def _answer_by_model(request: Recorded) -> Any:
    model = request.body["model"]
    return text("It is 42." if model == "m1" else "It is 41.")


def test_repeated_models_each_get_a_leaderboard_row(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    write(
        "m.rubric.yaml",
        """
        cases:
          - id: q1
            question: "What is 6 times 7?"
            criteria: [{id: value, type: number, value: 42}]
          - id: q2
            question: "And 7 times 6?"
            criteria: [{id: value, type: number, value: 42}]
        """,
    )
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_url)
    fake_llm.respond_with(_answer_by_model)
    result = pytester.runpytest(
        "--rubric-model=openai:m1", "--rubric-model=fine-tuned=openai:m2", "--rubric-json=out.json"
    )
    result.assert_outcomes(passed=2, failed=2)
    rows = {row["subject"]: row for row in rubric_json()["leaderboard"]}
    assert set(rows) == {"m1", "fine-tuned"}
    assert (rows["m1"]["passed"], rows["fine-tuned"]["passed"]) == (2, 0)
    assert sorted(r.body["model"] for r in fake_llm.requests) == ["m1", "m1", "m2", "m2"]
    result.stdout.fnmatch_lines(["FAILED m.rubric.yaml::q1[[]fine-tuned[]]*"])


def test_a_model_that_cannot_be_reached_says_model_and_where_its_address_is_set(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The application's model is no judge: its failure says model, and its endpoint is the
    provider's variable (OPENAI_BASE_URL), not --rubric-judge-url."""
    write(
        "m.rubric.yaml",
        "cases:\n  - id: q\n    question: 'Q?'\n    criteria: [{id: v, type: number, value: 42}]\n",
    )
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_url)
    fake_llm.respond_with(lambda request: status(404))
    result = pytester.runpytest("--rubric-model=openai:m1", "--rubric-json=out.json")
    result.assert_outcomes(errors=1)
    (item,) = json.loads((pytester.path / "out.json").read_text())["results"]
    reason = item["criteria"][0]["reason"]
    assert "model openai:m1 at " in reason and "check OPENAI_BASE_URL and the model name" in reason
    assert "judge" not in reason


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--rubric-model=openai:m1", "--rubric-model=openai:m1"],
            "*--rubric-model openai:m1 is given twice; give each subject once*",
        ),
        (
            ["--rubric-model=openai:m1", "--rubric-model=anthropic:m1"],
            "*--rubric-model: openai:m1 and anthropic:m1 are both subject 'm1'; name one of "
            "them, --rubric-model OTHER=anthropic:m1*",
        ),
        (
            ["--rubric-target=a=app:one", "--rubric-target=a=app:two"],
            "*--rubric-target: a=app:one and a=app:two are both subject 'a'*",
        ),
        (
            ["--rubric-target=app:m1", "--rubric-model=openai:m1"],
            "*--rubric-model: openai:m1 and --rubric-target app:m1 are both subject 'm1'*",
        ),
        (
            ["--rubric-target=bot=app.bot"],
            "*--rubric-target bot=app.bot: write MODULE:FUNCTION, the module and the function "
            "the answers come from, e.g. --rubric-target app.bot:answer*",
        ),
    ],
)
def test_a_subject_given_twice_or_not_as_module_function_is_a_usage_error(
    pytester: pytest.Pytester, write: Write, args: list[str], message: str
) -> None:
    write("m.rubric.yaml", "cases: [{id: q, question: Q, criteria: [{type: any_of, any_of: [x]}]}]")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_repeated_targets_and_a_targets_map_name_their_subjects(
    pytester: pytest.Pytester, write: Write, rubric_json: Callable[[], dict[str, Any]]
) -> None:
    write(
        "bots.py",
        """
        def old(question: str) -> str:
            return "Within 14 days."

        def new(question: str) -> str:
            return "Within 30 days."
        """,
    )
    suite = textwrap.dedent(
        """
        cases:
          - id: window
            question: "How long?"
            criteria: [{id: days, type: any_of, any_of: ["30 days"]}]
        """
    )
    write("flags.rubric.yaml", suite)
    pytester.syspathinsert()
    result = pytester.runpytest(
        "--rubric-target=bots:old", "--rubric-target=v2=bots:new", "--rubric-json=out.json"
    )
    result.assert_outcomes(passed=1, failed=1)
    assert {(r["subject"], r["passed"]) for r in rubric_json()["results"]} == {
        ("old", False),
        ("v2", True),
    }

    write("flags.rubric.yaml", "targets: {before: 'bots:old', after: 'bots:new'}\n" + suite)
    result = pytester.runpytest("--rubric-json=out.json")
    result.assert_outcomes(passed=1, failed=1)
    assert {r["nodeid"] for r in rubric_json()["results"]} == {
        "flags.rubric.yaml::window[before]",
        "flags.rubric.yaml::window[after]",
    }

    write("flags.rubric.yaml", "targets: {before: 'bots:old', after: 'bots:old'}\n" + suite)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*field 'targets'*target 'bots:old' is given twice, as 'before' and 'after'*"]
    )


def test_the_json_reads_back_what_the_target_said(
    pytester: pytest.Pytester,
    team: Callable[[str], None],
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    pytester.runpytest("--rubric-json=out.json").assert_outcomes(passed=2)
    (result,) = rubric_json()["results"]
    assert result["subject"] == "support_bot"
    assert result["response"] == GOOD
    assert json.dumps(result)  # plain data


def test_collect_writes_two_suites_cases_of_one_id_and_each_grades_its_own(
    pytester: pytest.Pytester, write: Write, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each line names its suite, so one responses folder holds both suites' answers."""
    write("app/__init__.py", "")
    write("app/bot.py", BOT.format(policy=GOOD))
    write("evals/targets.py", ADAPTER)
    for suite, phrase in (("support", "30 days"), ("returns", "full refund")):
        write(
            f"evals/{suite}.rubric.yaml",
            f"""
            suite: {suite}
            cases:
              - id: window
                question: "How long do I have to return a jacket?"
                criteria: [{{id: said, type: any_of, any_of: ["{phrase}"]}}]
            """,
        )
    frozen = ["--rubric-dir", "evals", "--target", "targets:support_bot", "--out", "answers"]
    assert cli(["collect", *frozen]) == 0, capsys.readouterr().err
    rows = [json.loads(line) for line in (pytester.path / "answers/support_bot.jsonl").open()]
    assert sorted((r["suite"], r["id"]) for r in rows) == [
        ("returns", "window"),
        ("support", "window"),
    ]
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest("--rubric-dir=evals", "--rubric-responses=answers")
    result.assert_outcomes(passed=2)


def test_collect_freezes_answers_that_responses_then_grade(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """llm-rubric-eval's collect-then-score: ask once, write responses files, grade later."""
    write("app/__init__.py", "")
    write("app/bot.py", BOT.format(policy=GOOD))
    write(
        "evals/targets.py",
        ADAPTER + "\n\ndef broken(question: str) -> str:\n    raise OSError('no route')\n",
    )
    write(
        "evals/support.rubric.yaml",
        """
        suite: support
        cases:
          - id: refund_window
            question: "How long do I have to return a jacket?"
            repeat: 2
            criteria: [{id: days, type: any_of, any_of: ["30 days"]}]
          - id: greeting
            question: "Hello?"
            criteria: [{id: help, type: any_of, any_of: ["help", "42"]}]
        """,
    )
    fake_llm.respond_with(lambda request: text("It is 42."))
    # The command in process, as tests/cli's merge runs: `python -m pytest_rubric` is its
    # main (cli/test_merge and guards/test_round4_replies run the module itself).
    command = ["collect", "--rubric-dir", "evals"]
    env = {"OPENAI_BASE_URL": fake_llm.openai_url, "OPENAI_API_KEY": "sk-test"}
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        frozen = ["--target", "targets:support_bot", "--model", "m1=openai:m1", "--out", "answers"]
        code = cli([*command, *frozen])
        assert code == 0, capsys.readouterr().err
        capsys.readouterr()
        assert cli([*command, "--target", "targets:support_bot", "--out", "answers"]) == 2
        pytest.LineMatcher(capsys.readouterr().err.splitlines()).fnmatch_lines(
            ["*answers/support_bot.jsonl already exist(s); pass --force*"]
        )
        # One application under two names is asked twice for nothing: refused, as by pytest.
        twice = ["--target", "a=targets:support_bot", "--target", "b=targets:support_bot"]
        assert cli([*command, *twice, "--out", "twice"]) == 2
        assert "--target targets:support_bot is given twice" in capsys.readouterr().err
        code = cli([*command, "--target", "targets:broken", "--out", "broken"])
    assert code == 1
    pytest.LineMatcher(capsys.readouterr().err.splitlines()).fnmatch_lines(
        [
            "*not written: *support.rubric.yaml: suite 'support', case 'refund_window': "
            "sample 1 of 2: target targets:broken raised OSError: no route*"
        ]
    )
    rows = [json.loads(line) for line in (pytester.path / "answers/support_bot.jsonl").open()]
    assert rows == [
        {"id": "refund_window", "suite": "support", "response": GOOD},
        {"id": "refund_window", "suite": "support", "response": GOOD},
        {"id": "greeting", "suite": "support", "response": "I can help with orders and returns."},
    ]
    assert len(fake_llm.requests) == 3  # two samples and one answer, asked once each
    assert (pytester.path / "broken/broken.jsonl").read_text() == ""

    pytester.makeini("[pytest]\n")
    result = pytester.runpytest(
        "--rubric-dir=evals", "--rubric-responses=answers", "--rubric-json=out.json"
    )
    result.assert_outcomes(passed=3, failed=1)
    graded = {(r["case"], r["subject"]): r for r in rubric_json()["results"]}
    assert graded["refund_window", "support_bot"]["n_samples"] == 2
    assert not graded["refund_window", "m1"]["passed"]
    assert len(fake_llm.requests) == 3  # grading asked nobody


def test_a_sample_whose_target_raised_leaves_the_others_graded_in_an_error_item(
    pytester: pytest.Pytester, team: Callable[[str], None], write: Write
) -> None:
    """Under ``repeat: 3`` the application fails once: the item is an ERROR whose traceback is
    the application's, and its result keeps the two answers it gave, graded, beside the one
    it did not (every criterion ERROR), with the file's ``pass_when``."""
    write(
        "evals/targets.py",
        ADAPTER
        + textwrap.dedent(
            """
            import itertools

            _calls = itertools.count()


            def flaky_bot(question: str) -> str:
                if next(_calls) == 1:
                    raise ConnectionError("the order service timed out")
                return answer(question)
            """
        ),
    )
    write(
        "evals/support.rubric.yaml",
        SUITE.replace("support_bot", "flaky_bot").replace(
            "cases:", "repeat: 3\npass_when: any\ncases:"
        ),
    )
    result = pytester.runpytest("--rubric-json=out.json", "--rubric-concurrency=1", "--tb=short")
    result.assert_outcomes(passed=1, errors=1)  # the unit test, and the item
    result.stdout.fnmatch_lines(
        ["*raise ConnectionError*", "E   ConnectionError: the order service timed out"]
    )
    (item,) = json.loads((pytester.path / "out.json").read_text())["results"]
    assert (item["passed"], item["pass_when"], item["n_samples"]) == (False, "any", 3)
    verdicts = [[c["verdict"] for c in s["criteria"]] for s in item["samples"]]
    assert verdicts == [["MET", "MET", "UNMET"], ["ERROR"] * 3, ["MET", "MET", "UNMET"]]
    assert [s["response"] for s in item["samples"]] == [GOOD, "", GOOD]
    reason = item["samples"][1]["criteria"][0]["reason"]
    assert reason.startswith("sample 2 of 3: target targets:flaky_bot raised ConnectionError")
