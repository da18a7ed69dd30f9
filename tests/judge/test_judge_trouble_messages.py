"""What a team reads when its judge misbehaves: the usage line counts the calls that left
criteria ERROR, the hints never suggest what is already in use, and a refused connection
is named as one."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest

from tests.fake_llm import FakeLLM, json_reply, text


def _judge(url: str, *extra: str) -> list[str]:
    return ["--rubric-judge=openai:judge-model", f"--rubric-judge-url={url}", *extra]


@pytest.mark.parametrize(
    ("grader", "calls", "hint"),
    [
        # one call per judged criterion (two cases, one each), each asked once more
        ("per-criterion", 4, "a larger model may follow the protocol better"),
        ("one-shot", 4, "a larger model, or --rubric-grader per-criterion, may follow*"),
        ("holistic", 4, "a larger model, or --rubric-grader per-criterion, may follow*"),
    ],
)
def test_garbage_replies_are_counted_as_errors_and_hinted_at_truthfully(
    pytester: pytest.Pytester,
    team: Callable[..., None],
    fake_llm: FakeLLM,
    grader: str,
    calls: int,
    hint: str,
) -> None:
    team()
    fake_llm.respond_with(lambda request: text("Sure! The answer looks great to me."))
    result = pytester.runpytest(*_judge(fake_llm.openai_url, f"--rubric-grader={grader}"))
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines([f"judge openai:judge-model: {calls} calls, 0 retries, 2 errors*"])
    result.stdout.fnmatch_lines([f"*{hint}*"])
    if grader == "per-criterion":
        assert "or --rubric-grader per-criterion, may" not in result.stdout.str()


def _closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_a_refused_connection_says_no_server_runs_there(
    pytester: pytest.Pytester, team: Callable[..., None]
) -> None:
    team()
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    result = pytester.runpytest(*_judge(url))
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "*judge openai:judge-model at http://127.0.0.1:*/v1/chat/completions: the server "
            "refused the connection: no server is running at that URL*"
        ]
    )
    assert "raise the timeout" not in result.stdout.str()
    assert "--rubric-judge-timeout" not in result.stdout.str()


def test_a_one_shot_reply_that_leaves_criteria_out_counts_as_an_error(
    pytester: pytest.Pytester, team: Callable[..., None], fake_llm: FakeLLM
) -> None:
    team()
    fake_llm.respond_with(lambda request: json_reply({"criteria": []}))
    result = pytester.runpytest(*_judge(fake_llm.openai_url, "--rubric-grader=one-shot"))
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["judge openai:judge-model: 4 calls, 0 retries, 2 errors*"])
