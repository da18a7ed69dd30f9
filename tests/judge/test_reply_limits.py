"""Nothing hostile gets through: judge replies that try to crash the reader, keys that
come back in pieces, and text too long to copy whole into a result.

Every test here failed before the fix it pins (checked against the code before it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_rubric import Grader, Rubric, Verdict
from pytest_rubric._guards.secrets import Secret, clip, redact
from pytest_rubric._llm.base import Judged
from pytest_rubric._report.document import result_data
from pytest_rubric._results import Outcome
from pytest_rubric.criteria import Requirement
from pytest_rubric.judge.replies import Graded, ReplyError, read_holistic, read_one, read_one_shot
from pytest_rubric.judge.requests import JudgeKey, JudgeRequest
from pytest_rubric.judge.runner import JudgeRunner
from tests.conftest import RUN_MODES
from tests.fake_llm import FakeLLM, text, verdict

pytestmark = pytest.mark.hostile

BOOL = Requirement(id="a", requirement="Says A")
SCORE = Requirement(id="s", requirement="How good?", kind="score")
KEY = "sk-test-9QvX2mLp7RtW4yZb8NcK3hJd"
HUGE = "1" + "0" * 399  # a 400-digit score
DEEP = '{"a": ' * 100_000 + "1" + "}" * 100_000


def windows(key: str, size: int = 12) -> set[str]:
    """Every piece of ``key`` that is long enough to count as the key."""
    return {key[i : i + size] for i in range(len(key) - size + 1)}


def leaked(key: str, output: str) -> list[str]:
    return sorted(w for w in windows(key) if w in output)


# --- keys, and pieces of keys ----------------------------------------------------------------


@pytest.mark.parametrize(
    "piece",
    [KEY[:-1], KEY[1:], KEY[5:17], KEY[:12], KEY[-12:]],
    ids=["minus-last", "minus-first", "middle-12", "first-12", "last-12"],
)
def test_a_piece_of_a_key_of_12_characters_or_more_is_redacted(piece: str) -> None:
    got = redact(f"the judge said {piece}, twice: {piece}!", Secret(KEY))
    assert got == "the judge said ***, twice: ***!"


@given(
    key=st.text(min_size=12, max_size=40),
    pieces=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=6),
    noise=st.lists(st.text(max_size=15), max_size=7),
)
def test_no_12_character_piece_of_a_key_survives_redaction(
    key: str, pieces: list[tuple[int, int]], noise: list[str]
) -> None:
    parts = [key[a:b] for a, b in pieces] + [key]
    text = "".join(p + n for p, n in zip(parts, noise + [""] * len(parts), strict=False))
    assert leaked(key, redact(text, Secret(key))) == []


def test_text_is_redacted_then_cut_to_2000_characters_with_a_count() -> None:
    assert clip("short", Secret(KEY)) == "short"
    long = "x" * 3_000
    assert clip(long) == "x" * 2_000 + "… [1,000 more characters]"
    # A key across the cut would leave a piece behind if the cut came first.
    straddling = "y" * 1_990 + KEY + "z" * 12_345
    got = clip(straddling, Secret(KEY))
    assert got == "y" * 1_990 + "***" + "z" * 7 + "… [12,338 more characters]"
    assert leaked(KEY, got) == []


# --- the readers: any reply is a grade or a ReplyError ---------------------------------------


@pytest.mark.parametrize(
    ("read", "reply"),
    [
        (lambda t: read_one(t, SCORE), f'{{"reason": "r", "score": {HUGE}}}'),
        (lambda t: read_one(t, SCORE), f'{{"reason": "r", "score": -{HUGE}}}'),
        (read_holistic, f'{{"reason": "r", "score": {HUGE}}}'),
    ],
    ids=["score-kind", "negative", "holistic"],
)
def test_a_400_digit_score_is_out_of_range(read: Callable[[str], Any], reply: str) -> None:
    with pytest.raises(ReplyError, match=r"score -?10{10}.*\(40[01] characters\) is out of range"):
        read(reply)


def test_a_400_digit_score_in_a_one_shot_reply_is_that_criterion_s_error() -> None:
    reply = json.dumps(
        {
            "criteria": [
                {"id": "a", "reason": "r", "verdict": "MET"},
                {"id": "s", "reason": "r", "score": 10**400},
            ]
        }
    )
    got = read_one_shot(reply, [BOOL, SCORE])
    assert isinstance(got["a"], Graded)
    assert isinstance(got["s"], ReplyError) and "out of range 1-5" in str(got["s"])


@pytest.mark.parametrize(
    "read",
    [lambda t: read_one(t, BOOL), read_holistic, lambda t: read_one_shot(t, [BOOL])],
    ids=["per-criterion", "holistic", "one-shot"],
)
@pytest.mark.parametrize(
    "reply",
    [DEEP, f"Here it is: {DEEP}", f"```json\n{DEEP}\n```", "[" * 100_000 + "]" * 100_000],
    ids=["bare", "prose", "fenced", "list"],
)
def test_json_nested_100000_deep_is_a_reply_error(read: Callable[[str], Any], reply: str) -> None:
    with pytest.raises(ReplyError, match=r"nested too deeply|no JSON object"):
        read(reply)


def test_a_quoted_value_in_an_error_is_short_whatever_its_size_or_depth() -> None:
    """Errors are fed back to the judge and end up in reasons: they quote, never copy."""
    nested: Any = 1
    for _ in range(500):
        nested = [nested]
    for value in ("x" * 100_000, nested, 10**4000, -(10**4000)):
        with pytest.raises(ReplyError) as caught:
            read_one(json.dumps({"reason": "r", "verdict": value}), BOOL)
        assert len(str(caught.value)) < 200
    with pytest.raises(ReplyError) as caught:
        read_one("no object here " + "y" * 100_000, BOOL)
    assert len(str(caught.value)) < 200


# What a reply can be made of: every JSON type, huge ints, non-finite floats, depth.
_NUMBER = (
    st.sampled_from([10**400, -(10**400), 2**1024, 10**4000, 0, 1, 3, 5, 100, 101])
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
)
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | _NUMBER
    | st.text(max_size=20)
    | st.sampled_from(["MET", "UNMET", "met", "a", "s", "<placeholder>"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["reason", "verdict", "score", "id", "x"]), inner)
    ),
    max_leaves=20,
)
# Objects shaped like a reply, so that validation gets past "reason" to the hostile parts.
_ENTRY = st.fixed_dictionaries(
    {},
    optional={
        "id": st.sampled_from(["a", "s"]) | _JSON,
        "reason": st.just("because") | _JSON,
        "verdict": st.sampled_from(["MET", "UNMET"]) | _JSON,
        "score": _NUMBER | _JSON,
    },
)
_REPLY = _ENTRY | st.fixed_dictionaries({"criteria": st.lists(_ENTRY | _JSON, max_size=3)}) | _JSON
_DEEP_LIST = "[" * 5_000 + "{}" + "]" * 5_000


@given(
    value=_REPLY,
    prose=st.sampled_from(["{}", "Verdict: {} Thanks.", "```json\n{}\n```", _DEEP_LIST]),
)
def test_any_json_reply_is_a_grade_or_a_reply_error(value: Any, prose: str) -> None:
    reply = prose.replace("{}", json.dumps(value))
    for read in (
        lambda t: read_one(t, BOOL),
        lambda t: read_one(t, SCORE),
        read_holistic,
        lambda t: read_one_shot(t, [BOOL, SCORE]),
    ):
        try:
            got = read(reply)
        except ReplyError:
            continue
        if isinstance(got, Graded):
            assert 0 <= got.credit <= 1
        elif isinstance(got, tuple):
            assert 0 <= got[0] <= 100
        else:
            assert all(isinstance(g, Graded | ReplyError) for g in got.values())


# --- the reply is its one object that gives a grade ----------------------------------------

QUOTED = '{"reason": "quoted from the answer", "verdict": "MET"}'


@pytest.mark.parametrize(
    "own",
    [
        '{"reason": "it misses the horizon", "verdict": "Unmet"}',
        '{"reason": "it misses the horizon", "verdict": ["UNMET"]}',
        '{"verdict": "UNMET"}',
    ],
)
def test_a_quoted_grade_never_stands_in_for_the_judges_malformed_one(own: str) -> None:
    """The judge's own object comes last; when it is malformed the reply is asked again
    (then ERROR), never read from the MET object it quoted from the answer."""
    with pytest.raises(ReplyError):
        read_one(f"The answer contains {QUOTED}. My grade: {own}", BOOL)


@pytest.mark.parametrize(
    ("read", "reply"),
    [
        (
            lambda t: read_one(t, BOOL),
            f'The answer says {QUOTED}. My grade: {{"reason": "it is not so", "verdict": "UNMET"}}',
        ),
        (
            lambda t: read_one(t, BOOL),
            f'My grade: {{"reason": "it is not so", "verdict": "UNMET"}}. The answer says {QUOTED}',
        ),
        (
            lambda t: read_one(t, SCORE),
            'It quotes {"reason": "x", "score": 5}; I give {"reason": "weak", "score": 1}',
        ),
        (
            read_holistic,
            'It quotes {"reason": "x", "score": 100}; I give {"reason": "weak", "score": 10}',
        ),
        (
            lambda t: read_one_shot(t, [BOOL]),
            'The answer says ```json\n{"criteria": [{"id": "a", "reason": "q", "verdict": "MET"}]}'
            '\n```; mine: {"criteria": [{"id": "a", "reason": "no", "verdict": "UNMET"}]}',
        ),
        (
            lambda t: read_one(t, BOOL),
            '{"reason": "good", "verdict": "MET"} and again {"reason": "good", "verdict": "MET"}',
        ),
        (
            lambda t: read_one(t, BOOL),
            '```json\n{"reason": "good", "verdict": "MET"}\n```\n{"reason": "good", "verdict": "MET"}',
        ),
    ],
    ids=["quoted-first", "quoted-last", "score-kind", "holistic", "one-shot", "twice", "fenced"],
)
def test_two_objects_that_give_a_grade_are_no_reply(read: Callable[[str], Any], reply: str) -> None:
    """Neither the first nor the last grade wins: one of them may be the answer's own."""
    with pytest.raises(ReplyError, match="2 JSON objects that each give a grade"):
        read(reply)


def test_a_fenced_grade_is_one_object_not_its_block_and_its_braces() -> None:
    assert read_one('Mine:\n```json\n {"reason": "r", "verdict": "MET"} \n```', BOOL).met


def test_objects_that_give_no_grade_are_passed_over() -> None:
    reply = 'Answer: {"x": 1} Grade: {"reason": "no", "verdict": "UNMET"} Note: {"y": 2}'
    assert read_one(reply, BOOL).met is False


def test_when_no_object_fits_the_last_ones_error_is_raised() -> None:
    with pytest.raises(ReplyError, match='missing "reason"'):
        read_one('First {"reason": "r", "note": "PASS"}, then {"note": "MET"}', BOOL)


def test_a_stray_brace_in_prose_does_not_hide_the_reply() -> None:
    reply = 'I would say {maybe, but: {"reason": "r", "verdict": "UNMET"}'
    assert read_one(reply, BOOL).met is False


# --- the judge session: a reader that raises is a bad reply, never a crash -----------------


class _Scripted:
    """A user's judge (the hook's kind): replies from a list, in turn."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)

    async def complete(self, system: str, user: str) -> str:
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


@pytest.fixture
def session() -> Iterator[Callable[..., JudgeRunner]]:
    made: list[JudgeRunner] = []

    def make(*replies: str, grader: str = "per-criterion") -> JudgeRunner:
        made.append(JudgeRunner(_Scripted(*replies), name="scripted", strategy=grader))
        return made[-1]

    yield make
    for s in made:
        s.close()


@pytest.mark.parametrize(
    ("grader", "criteria", "reply"),
    [
        ("holistic", [BOOL], f'{{"reason": "r", "score": {HUGE}}}'),
        ("per-criterion", [SCORE], f'{{"reason": "r", "score": {HUGE}}}'),
        ("per-criterion", [BOOL], DEEP),
        ("one-shot", [BOOL], DEEP),
    ],
    ids=["holistic-huge", "score-huge", "per-criterion-deep", "one-shot-deep"],
)
def test_a_hostile_reply_twice_is_an_error_not_a_crash(
    session: Callable[..., JudgeRunner], grader: str, criteria: list[Requirement], reply: str
) -> None:
    judge = session(reply, grader=grader)
    judged = judge.result(
        JudgeRequest(JudgeKey("k"), criteria, question=None, response="an answer")
    )
    assert {o.verdict for o in judged.outcomes.values()} == {Verdict.ERROR}
    assert all("replied out of protocol twice" in o.reason for o in judged.outcomes.values())


def test_anything_a_reader_raises_is_a_bad_reply(
    session: Callable[..., JudgeRunner], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(text: str, criterion: Any, **_: Any) -> Graded:
        raise ZeroDivisionError("a bug in reading")

    monkeypatch.setattr("pytest_rubric.judge.strategies.read_one", broken)
    judged = session('{"reason": "r", "verdict": "MET"}').result(
        JudgeRequest(JudgeKey("k"), [BOOL], question=None, response="an answer")
    )
    (outcome,) = judged.outcomes.values()
    assert outcome.verdict is Verdict.ERROR
    assert "could not be read (ZeroDivisionError: a bug in reading)" in outcome.reason


def test_anything_judging_raises_is_an_error_for_each_criterion(
    session: Callable[..., JudgeRunner], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*args: Any) -> Judged:
        raise KeyError("a bug in grading")

    judge = session('{"reason": "r", "verdict": "MET"}')
    monkeypatch.setattr(judge, "_vote", broken)
    judged = judge.result(
        JudgeRequest(JudgeKey("k"), [BOOL, SCORE], question=None, response="an answer")
    )
    assert {cid: o.verdict for cid, o in judged.outcomes.items()} == {
        "a": Verdict.ERROR,
        "s": Verdict.ERROR,
    }
    assert "judge scripted failed: KeyError: 'a bug in grading'" in judged.outcomes["a"].reason


# --- end to end: what a user sees ------------------------------------------------------------

Write = Callable[[str, str], Path]
FAST_RETRIES = "[pytest]\nrubric_judge_backoff = 0.01\n"
ONE_JUDGED = """
cases:
  - id: q1
    response: "An answer."
    criteria:
      - {id: local, type: any_of, any_of: [answer]}
      - {id: judged, type: judge, kind: score, requirement: "How complete is it?"}
"""


def judge_args(fake: FakeLLM, *extra: str) -> list[str]:
    return ["--rubric-judge=openai:test-model", f"--rubric-judge-url={fake.openai_url}", *extra]


@pytest.mark.parametrize(
    ("reply", "grader", "why"),
    [
        (f'{{"reason": "r", "score": {HUGE}}}', "per-criterion", "is out of range 1-5"),
        (f'{{"reason": "r", "score": {HUGE}}}', "holistic", "is out of range 0-100"),
        (DEEP, "per-criterion", "nested too deeply"),
    ],
    ids=["huge-score", "huge-holistic", "deep"],
)
def test_a_hostile_judge_reply_ends_as_error_and_is_still_reported(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
    reply: str,
    grader: str,
    why: str,
) -> None:
    pytester.makeini(FAST_RETRIES)
    write("h.rubric.yaml", ONE_JUDGED)
    fake_llm.respond_with(lambda request: text(reply))
    result = pytester.runpytest(
        *judge_args(fake_llm, f"--rubric-grader={grader}"), "--rubric-json", "out.json"
    )
    result.assert_outcomes(errors=1)
    assert "Traceback" not in str(result.stdout) and "RecursionError" not in str(result.stdout)
    (only,) = rubric_json()["results"]
    judged = {c["id"]: c for c in only["criteria"]}["judged"]
    assert judged["verdict"] == "ERROR"
    assert why in judged["reason"]
    assert [row["subject"] for row in rubric_json()["leaderboard"]] == ["inline"]
    assert len(fake_llm.requests) == 2  # the first reply, and the retry with the error fed back


# --- results keep clipped copies; the whole response is still graded ------------------------


def leaky_callable(answer: str, case: Any) -> tuple[bool, str]:
    """A user's callable that quotes most of the key."""
    return True, "found " + KEY[:-1]


def failing_callable(answer: str, case: Any) -> bool:
    """A user's callable whose error message is a novel."""
    raise ValueError("no: " + "e" * 10_000)


def test_results_keep_a_clipped_redacted_copy_of_the_response_and_reasons(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    grader = Grader()
    compiled = grader.compile(
        Rubric(
            criteria=[
                {"id": "end", "type": "any_of", "any_of": ["the very end"]},
                {"id": "leak", "type": "callable", "function": f"{__name__}:leaky_callable"},
                {"id": "long", "type": "callable", "function": f"{__name__}:failing_callable"},
                {"id": "j", "requirement": "Is right"},
            ]
        )
    )
    response = KEY[:-1] + " " + "w" * 100_000 + " the very end"
    judged = Judged({"j": Outcome(Verdict.MET, 1.0, "r" * 1_995 + KEY)})
    result = grader.grade(response, compiled, judged=judged)
    by_id = {c.id: c for c in result.criteria}
    assert by_id["end"].verdict is Verdict.MET  # graded on the whole response
    assert result.response.startswith("*** www")
    assert result.response.endswith("… [98,017 more characters]")
    assert by_id["leak"].reason == "found ***"
    assert by_id["long"].verdict is Verdict.ERROR
    assert re.fullmatch(
        r".*failing_callable raised ValueError: no: e+… \[8,\d{3} more characters\]",
        by_id["long"].reason,
    )
    assert by_id["j"].reason == "r" * 1_995 + "***"
    assert leaked(KEY, json.dumps(result_data(result))) == []


# --- end to end: no piece of a key reaches an output ----------------------------------------


JUDGED = """
suite: judged
cases:
  - id: q1
    response: "There is a 1% chance of losing more than $1 million in one day."
    criteria:
      - {id: horizon, weight: 1, requirement: "Says the horizon is one day"}
"""


# In process; test_run_modes's judge quotes the same reason, checked in every mode.
@pytest.mark.parametrize("mode", ["no-xdist", "xdist-n0"])
def test_a_piece_of_the_key_in_a_judge_reason_reaches_no_output(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    """The judge quotes the key minus its last character, and pieces cut from long text."""
    run_mode = RUN_MODES[mode]
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "step-summary.md"))
    pytester.makeini(FAST_RETRIES)
    write("judged.rubric.yaml", JUDGED)
    reason = f"the key is {KEY[:-1]}; " + "z" * 1_980 + KEY  # a cut at 2,000 would halve it
    fake_llm.respond_with(lambda request: verdict("MET", reason))
    result = pytester.runpytest(
        *run_mode,
        *judge_args(fake_llm),
        *("--rubric-json", "out.json", "--rubric-html", "out.html"),
        *("--rubric-markdown", "out.md", "--junitxml", "junit.xml", "-vv", "-rA"),
    )
    result.assert_outcomes(passed=1)
    outputs = {"terminal": str(result.stdout) + str(result.stderr)}
    for name in ("out.json", "out.html", "out.md", "junit.xml", "step-summary.md"):
        outputs[name] = (pytester.path / name).read_text(encoding="utf-8")
    assert "the key is ***" in outputs["out.json"]
    assert {name: out for name, out in outputs.items() if leaked(KEY, out)} == {}
