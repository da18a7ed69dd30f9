"""Plugin import time: pytest start-up with pytest-rubric against the same start-up without it.

What is measured
----------------
Fresh subprocesses, in an empty temporary directory, alternately (A B A B ...)
after one untimed warm-up pair:

* ``python -m pytest --version`` with the plugin installed, against
  ``python -m pytest --version -p no:rubric``;
* the same with ``-VV``, which lists the plugins;
* a run of unit tests only (``pytest tests``) in a project laid out as a team's (``app/``,
  ``tests/`` with 20 unit tests, ``evals/`` with a rubric file, ``rubric_dirs = evals`` in
  its ``pytest.ini``), with the plugin against ``-p no:rubric``: with a bytecode cache
  (written by the warm-up run, pytest's rewritten copies included), and without one
  (``PYTHONDONTWRITEBYTECODE=1`` and ``PYTHONPYCACHEPREFIX`` an empty folder, so nothing
  is read from a cache either, as in a fresh CI container).

Every row runs the plugin installed from its wheel into a fresh virtual environment
(``installed`` in ``bench/_child.py``), as users install it: pytest rewrites the asserts
of an installed plugin's modules, and without a bytecode cache does so on every run,
which an editable install never shows.

The added time is the median of the first minus the median of the second, in wall time
and in CPU time (user + sys of the child): a few tens of milliseconds in a run of two
seconds are within the wall clock's noise on a shared machine, and CPU time moves less.
Targets (bench/README.md): at most 100 ms added to ``pytest --version`` and ``-VV``; at
most 50 ms added to the unit-test run, in both cache modes.

pytest 9's ``--version`` returns before third-party plugins are imported, so
it mostly measures the interpreter; ``-VV`` imports and registers every
plugin, so its row is the honest figure for the plugin's own import cost
(``plugin.py`` imports nothing heavy: pydantic, httpx, yaml and re2 load on
first use, when a rubric file is collected).

Usage::

    .venv/bin/python bench/bench_import.py [--repeat 21] [--check]

Other scripts may ``from bench_import import run``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TypedDict

from _child import child_env, children_cpu, installed

TARGET_MS = 100.0
UNIT_TARGET_MS = 50.0


class Result(TypedDict):
    benchmark: str
    repeat: int
    version_with_ms: float  # pytest --version, median
    version_without_ms: float  # pytest --version -p no:rubric, median
    version_added_ms: float
    vv_with_ms: float  # pytest -VV
    vv_without_ms: float
    vv_added_ms: float
    unit_with_ms: float  # pytest tests, rubric_dirs in the ini, cached bytecode
    unit_without_ms: float  # the same with -p no:rubric
    unit_added_ms: float
    unit_uncached_with_ms: float  # without a bytecode cache
    unit_uncached_without_ms: float
    unit_uncached_added_ms: float
    unit_cpu_added_ms: float  # the same differences in CPU time
    unit_uncached_cpu_added_ms: float


_PROJECT = {
    "pytest.ini": "[pytest]\nrubric_dirs = evals\npythonpath = .\n",
    "app/__init__.py": "def add(a, b):\n    return a + b\n",
    "tests/test_app.py": "from app import add\n\n"
    + "".join(f"\ndef test_add_{i}():\n    assert add({i}, 1) == {i + 1}\n" for i in range(20)),
    "evals/qa.rubric.yaml": (
        "cases:\n  - id: q1\n    question: What is 2 + 2?\n    response: It is 4.\n"
        "    criteria: [{id: four, type: number, value: 4}]\n"
    ),
}


def _project(directory: Path) -> None:
    for name, text in _PROJECT.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text, encoding="utf-8")


def _timed(python: Path, args: list[str], cwd: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU milliseconds of one run."""
    start, cpu = time.perf_counter(), children_cpu()
    done = subprocess.run(
        [python, "-m", "pytest", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    elapsed, used = time.perf_counter() - start, children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"bench_import: pytest {' '.join(args)} exited {done.returncode}")
    return elapsed * 1000, used * 1000


def run(*, repeat: int = 21) -> Result:
    unit = ["-q", "-p", "no:cacheprovider", "tests"]
    sides = {
        "version_with": (["--version"], False),
        "version_without": (["--version", "-p", "no:rubric"], False),
        "vv_with": (["-VV"], False),
        "vv_without": (["-VV", "-p", "no:rubric"], False),
        "unit_with": (unit, False),
        "unit_without": ([*unit, "-p", "no:rubric"], False),
        "unit_uncached_with": (unit, True),
        "unit_uncached_without": ([*unit, "-p", "no:rubric"], True),
    }
    times: dict[str, list[float]] = {name: [] for name in sides}
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    with (
        tempfile.TemporaryDirectory(prefix="bench_import_") as cwd,
        tempfile.TemporaryDirectory(prefix="bench_import_nocache_") as empty,
        tempfile.TemporaryDirectory(prefix="bench_import_venv_") as venv,
    ):
        _project(Path(cwd))
        python = installed(Path(venv))
        cached = child_env()
        cached.pop("PYTHONDONTWRITEBYTECODE", None)  # the warm-up writes the cache
        no_cache = child_env(PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=empty)

        def timed(name: str) -> tuple[float, float]:
            args, uncached = sides[name]
            return _timed(python, args, cwd, no_cache if uncached else cached)

        for name in sides:
            timed(name)  # warm-up: the file cache, .pyc files
        for _ in range(repeat):
            for name in sides:
                wall, used = timed(name)
                times[name].append(wall)
                cpu[name].append(used)
    med = {name: statistics.median(t) for name, t in times.items()}
    med_cpu = {name: statistics.median(t) for name, t in cpu.items()}
    return {
        "benchmark": "import",
        "repeat": repeat,
        "version_with_ms": med["version_with"],
        "version_without_ms": med["version_without"],
        "version_added_ms": med["version_with"] - med["version_without"],
        "vv_with_ms": med["vv_with"],
        "vv_without_ms": med["vv_without"],
        "vv_added_ms": med["vv_with"] - med["vv_without"],
        "unit_with_ms": med["unit_with"],
        "unit_without_ms": med["unit_without"],
        "unit_added_ms": med["unit_with"] - med["unit_without"],
        "unit_uncached_with_ms": med["unit_uncached_with"],
        "unit_uncached_without_ms": med["unit_uncached_without"],
        "unit_uncached_added_ms": med["unit_uncached_with"] - med["unit_uncached_without"],
        "unit_cpu_added_ms": med_cpu["unit_with"] - med_cpu["unit_without"],
        "unit_uncached_cpu_added_ms": (
            med_cpu["unit_uncached_with"] - med_cpu["unit_uncached_without"]
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument(
        "--check", action="store_true", help=f"exit 1 when more than {TARGET_MS:g} ms is added"
    )
    args = parser.parse_args(argv)
    r = run(repeat=args.repeat)
    for flag, key in (("--version", "version"), ("-VV", "vv")):
        added = r[f"{key}_added_ms"]  # type: ignore[literal-required]
        print(
            f"pytest {flag}: {r[f'{key}_with_ms']:.0f} ms with the plugin, "  # type: ignore[literal-required]
            f"{r[f'{key}_without_ms']:.0f} ms without: {added:+.0f} ms "  # type: ignore[literal-required]
            f"({'within' if added <= TARGET_MS else 'over'} the {TARGET_MS:g} ms target)"
        )
    for label, key in (("cached", "unit"), ("no bytecode cache", "unit_uncached")):
        added = r[f"{key}_added_ms"]  # type: ignore[literal-required]
        print(
            f"unit tests only, rubric_dirs in the ini ({label}): "
            f"{r[f'{key}_with_ms']:.0f} ms with the plugin, "  # type: ignore[literal-required]
            f"{r[f'{key}_without_ms']:.0f} ms without: {added:+.0f} ms "  # type: ignore[literal-required]
            f"({'within' if added <= UNIT_TARGET_MS else 'over'} the {UNIT_TARGET_MS:g} ms target); "
            f"CPU {r[f'{key}_cpu_added_ms']:+.0f} ms"  # type: ignore[literal-required]
        )
    over = max(r["version_added_ms"], r["vv_added_ms"]) > TARGET_MS or (
        max(r["unit_added_ms"], r["unit_uncached_added_ms"]) > UNIT_TARGET_MS
    )
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
