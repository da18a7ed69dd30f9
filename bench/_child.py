"""What every benchmark's pytest subprocesses share."""

from __future__ import annotations

import importlib.util
import os
import resource
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child_env(**extra: str) -> dict[str, str]:
    """This environment without the variables that would change what a child pytest
    measures (``PYTEST_ADDOPTS``, ``PYTEST_PLUGINS``, a ``RUBRIC_JUDGE`` ...), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "RUBRIC_"))}
    return env | extra


def children_cpu() -> float:
    """CPU seconds (user + sys) of the child processes waited for so far: the difference
    around one run is that run's CPU time."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def compile_plugin() -> None:
    """Write the plugin's bytecode. pytest and every other plugin were installed with theirs;
    an editable install has none, and with ``PYTHONDONTWRITEBYTECODE`` set a child would
    compile the plugin's hundred modules from source on every run. An editable install is
    not marked for pytest's assertion rewriting, so its modules then load as this bytecode,
    as an installed wheel's do once pytest has cached its rewritten copies (see
    :func:`installed`)."""
    spec = importlib.util.find_spec("pytest_rubric")
    assert spec is not None and spec.submodule_search_locations
    package = spec.submodule_search_locations[0]
    subprocess.run([sys.executable, "-m", "compileall", "-q", package], check=True, timeout=300)


def installed(directory: Path) -> Path:
    """The Python of a fresh virtual environment in ``directory`` with the plugin installed
    from its wheel, as users install it, and this environment's packages (pytest, pydantic,
    the other plugins) as a folder on its path.

    The install matters for start-up: pytest marks every module of an entry-point plugin's
    distribution for assertion rewriting, and loads a marked module through its own hook,
    which reads only the rewritten bytecode it cached (never the one pip wrote), and without
    a bytecode cache parses, rewrites and compiles the module on every run. An editable
    install lists no modules, so nothing of it is marked: timed as it is, it hides that cost.
    """
    wheels = directory / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", wheels, ROOT],
        check=True,
        timeout=600,
    )
    venv = directory / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    # Only a folder on the path: the editable install's own .pth hook there is not followed.
    (Path(purelib) / "_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]
    wheel = [str(path) for path in wheels.glob("*.whl")]
    subprocess.run([*pip, "--no-deps", "--no-index", *wheel], check=True, timeout=600)
    return python
