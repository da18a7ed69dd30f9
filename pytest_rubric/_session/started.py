"""Where a pytest session keeps its :class:`~.session.RubricSession`, and how it is started on
first need: light, so that the plugin module imports no more than it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .session import RubricSession

SESSION_KEY = pytest.StashKey["RubricSession"]()
"""The session's :class:`RubricSession`, once started."""


def session_of(config: pytest.Config) -> RubricSession:
    """The session's :class:`RubricSession`, started now if it was not: ``plugin`` starts it at
    configure when the run asks for rubric work, else on first need (a rubric file collected,
    a fixture, an ``llm_judge`` test, ``assert_rubric``)."""
    state = config.stash.get(SESSION_KEY, None)
    if state is None:
        from .session import start

        state = config.stash[SESSION_KEY] = start(config)
    return state
