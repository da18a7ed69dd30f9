"""Hooks pytest-rubric adds, for a ``conftest.py`` or a plugin to implement."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ._llm.base import JudgeClient


@pytest.hookspec(firstresult=True)
def pytest_rubric_make_judge(config: pytest.Config) -> JudgeClient | None:
    """Return the LLM judge to use instead of the built-in clients, or None.

    The object needs one method, ``async complete(system: str, user: str) -> str``,
    which sends the two messages to a model and returns its reply text. The reply
    protocol (one JSON object per call) is the same as for the built-in judges;
    a reply that does not fit it is retried once, then the criterion is ERROR,
    and so is any exception ``complete`` raises.

    An optional ``name`` attribute names the judge in the summary. For example,
    in ``conftest.py``::

        class MyJudge:
            name = "my-gateway"

            async def complete(self, system: str, user: str) -> str:
                reply = await my_gateway.chat(system=system, user=user, temperature=0)
                return reply.text

        def pytest_rubric_make_judge(config):
            return MyJudge()
    """
