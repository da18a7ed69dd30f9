"""What every benchmark's pytest subprocesses share."""

from __future__ import annotations

import os


def child_env(**extra: str) -> dict[str, str]:
    """This environment without the variables that would change what a child pytest
    measures (``PYTEST_ADDOPTS``, ``PYTEST_PLUGINS``, a ``RUBRIC_JUDGE`` ...), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "RUBRIC_"))}
    return env | extra
