"""What every benchmark's pytest subprocesses share."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys


def child_env(**extra: str) -> dict[str, str]:
    """This environment without the variables that would change what a child pytest
    measures (``PYTEST_ADDOPTS``, ``PYTEST_PLUGINS``, a ``RUBRIC_JUDGE`` ...), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "RUBRIC_"))}
    return env | extra


def compile_plugin() -> None:
    """Write the plugin's bytecode, as installing its wheel does. pytest and every other
    plugin were installed with theirs; an editable install has none, and with
    ``PYTHONDONTWRITEBYTECODE`` set a child would compile the plugin's hundred modules from
    source on every run, which no installed copy does."""
    spec = importlib.util.find_spec("pytest_rubric")
    assert spec is not None and spec.submodule_search_locations
    package = spec.submodule_search_locations[0]
    subprocess.run([sys.executable, "-m", "compileall", "-q", package], check=True, timeout=300)
