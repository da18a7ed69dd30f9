"""Where a pytest session keeps its :class:`~.session.RubricSession`, and how it is started on
first need: light, so that the plugin module imports no more than it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .session import RubricSession

SESSION_KEY = pytest.StashKey["RubricSession"]()
"""The session's :class:`RubricSession`, once started."""

STARTER_KEY = pytest.StashKey[Callable[[], "RubricSession"]]()
"""What starts it (``plugin``), set at configure: a run that asks for no rubric work starts it
only when it needs one (a rubric file collected, a fixture, an ``llm_judge`` test,
``assert_rubric``)."""


def session_of(config: pytest.Config) -> RubricSession | None:
    """The session's :class:`RubricSession`, started now if it was not; None when the plugin
    is not configured in ``config`` (``-p no:rubric``, or a config of pytest's own making)."""
    state = config.stash.get(SESSION_KEY, None)
    if state is None and (start := config.stash.get(STARTER_KEY, None)) is not None:
        state = start()
    return state
