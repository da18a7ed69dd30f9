"""Judge settings in one place: ini ``rubric_judge_url``
beside ``--rubric-judge-url``; keys still come from the environment only.

The project is a team's: ``app/``, a unit test in ``tests/``, ``evals/`` with a rubric file
whose criterion is judged, and a ``pytest.ini`` that names the local judge and its URL.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fake_llm import FakeLLM, verdict

Write = Callable[[str, str], Path]


@pytest.fixture
def team(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> Callable[[str], None]:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-from-the-environment")

    def _team(ini: str) -> None:
        pytester.makeini(
            "[pytest]\nrubric_dirs = evals\ntestpaths = tests\npythonpath = .\n"
            "rubric_judge = openai:local\nrubric_judge_backoff = 0.01\n" + ini
        )
        write("app/__init__.py", "")
        write(
            "app/bot.py", 'def answer(question: str) -> str:\n    return "Yes, two days a week."\n'
        )
        write(
            "tests/test_bot.py",
            "from app.bot import answer\n\n\ndef test_answer():\n    assert answer('?')\n",
        )
        write(
            "evals/remote.rubric.yaml",
            """
            suite: remote
            target: app.bot:answer
            cases:
              - id: remote
                question: "Can I work remotely?"
                criteria:
                  - {id: policy, requirement: "Says how many days of remote work are allowed"}
            """,
        )

    return _team


def test_the_ini_names_the_judge_url(
    pytester: pytest.Pytester, team: Callable[[str], None], fake_llm: FakeLLM
) -> None:
    team(f"rubric_judge_url = {fake_llm.openai_url}\n")
    fake_llm.respond_with(lambda request: verdict("MET"))
    result = pytester.runpytest()
    result.assert_outcomes(passed=2)
    assert fake_llm.requests  # the judge at the URL was asked
    assert "sk-test-key" not in result.stdout.str()


def test_the_flag_wins_over_the_ini(
    pytester: pytest.Pytester, team: Callable[[str], None], fake_llm: FakeLLM
) -> None:
    team("rubric_judge_url = http://127.0.0.1:9/v1\n")
    fake_llm.respond_with(lambda request: verdict("MET"))
    result = pytester.runpytest("--rubric-judge-url", fake_llm.openai_url)
    result.assert_outcomes(passed=2)
    assert fake_llm.requests  # the judge at the URL was asked
