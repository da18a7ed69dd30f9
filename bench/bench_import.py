"""Plugin import time: pytest start-up with pytest-rubric against the same start-up without it.

What is measured
----------------
Fresh subprocesses, in an empty temporary directory, alternately (A B A B ...)
after one untimed warm-up pair:

* ``python -m pytest --version`` with the plugin installed, against
  ``python -m pytest --version -p no:rubric``;
* the same with ``-VV``, which lists the plugins.

The added time is the median of the first minus the median of the second.
Target (from the issue): at most 100 ms added to ``pytest --version``.

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
from typing import TypedDict

from _child import child_env

TARGET_MS = 100.0


class Result(TypedDict):
    benchmark: str
    repeat: int
    version_with_ms: float  # pytest --version, median
    version_without_ms: float  # pytest --version -p no:rubric, median
    version_added_ms: float
    vv_with_ms: float  # pytest -VV
    vv_without_ms: float
    vv_added_ms: float


def _timed(args: list[str], cwd: str) -> float:
    env = child_env()
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"bench_import: pytest {' '.join(args)} exited {done.returncode}")
    return elapsed * 1000


def run(*, repeat: int = 21) -> Result:
    sides = {
        "version_with": ["--version"],
        "version_without": ["--version", "-p", "no:rubric"],
        "vv_with": ["-VV"],
        "vv_without": ["-VV", "-p", "no:rubric"],
    }
    times: dict[str, list[float]] = {name: [] for name in sides}
    with tempfile.TemporaryDirectory(prefix="bench_import_") as cwd:
        for args in sides.values():
            _timed(args, cwd)  # warm-up: the file cache, .pyc files
        for _ in range(repeat):
            for name, args in sides.items():
                times[name].append(_timed(args, cwd))
    med = {name: statistics.median(t) for name, t in times.items()}
    return {
        "benchmark": "import",
        "repeat": repeat,
        "version_with_ms": med["version_with"],
        "version_without_ms": med["version_without"],
        "version_added_ms": med["version_with"] - med["version_without"],
        "vv_with_ms": med["vv_with"],
        "vv_without_ms": med["vv_without"],
        "vv_added_ms": med["vv_with"] - med["vv_without"],
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
    over = max(r["version_added_ms"], r["vv_added_ms"]) > TARGET_MS
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
