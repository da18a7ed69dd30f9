"""Hooks pytest-rubric adds, for a ``conftest.py`` or a plugin to implement."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ._llm.base import JudgeClient
    from .criteria.model import CriterionModel


@pytest.hookspec(firstresult=True)
def pytest_rubric_make_judge(config: pytest.Config) -> JudgeClient | None:
    """Return the LLM judge to use instead of the built-in clients, or None.

    The object needs one method, ``async complete(system: str, user: str) -> str``,
    which sends the two messages to a model and returns its reply text. The reply
    protocol (one JSON object per call) is the same as for the built-in judges;
    a reply that does not fit it is retried once, then the criterion is ERROR,
    and so is any exception ``complete`` raises.

    An optional ``name`` attribute names the judge in the summary. The judge is made as the
    session starts, before the conftest files of the folders collected are read: write the
    hook in the rootdir's ``conftest.py`` (or a plugin). For example::

        class MyJudge:
            name = "my-gateway"

            async def complete(self, system: str, user: str) -> str:
                reply = await my_gateway.chat(system=system, user=user, temperature=0)
                return reply.text

        def pytest_rubric_make_judge(config):
            return MyJudge()
    """


@pytest.hookspec
def pytest_rubric_criterion_types(config: pytest.Config) -> Sequence[type[CriterionModel]] | None:
    """Return criterion types to add to the built-in ones, for rubric files in its scope.

    Each is a ``pytest_rubric.criteria.CriterionModel`` subclass with a
    ``type`` literal (the name rubric files write) and its fields, whose
    ``compile`` returns the check: a ``pytest_rubric.criteria.Check`` whose
    ``run(answer, case)`` returns ``met(reason)``, ``unmet(reason)`` or
    ``error(reason)``. A type added in a ``conftest.py`` is known to the rubric
    files under its folder; a name already taken is a collection error. For
    example, in ``evals/conftest.py``::

        from typing import Literal

        from pytest_rubric.criteria import Check, CriterionModel, met, unmet

        class WordCountAtLeast(CriterionModel):
            type: Literal["word_count_at_least"] = "word_count_at_least"
            words: int

            def compile(self, context):
                return WordCountCheck(self)

        class WordCountCheck(Check[WordCountAtLeast]):
            def run(self, answer, case):
                count = len(answer.text.split())
                if count >= self.c.words:
                    return met(f"{count} words")
                return unmet(f"{count} words < {self.c.words}")

        def pytest_rubric_criterion_types(config):
            return [WordCountAtLeast]
    """
