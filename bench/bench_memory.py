"""Peak memory of a whole pytest run of N rubric items with every output on, against N plain
parametrized tests with JUnit.

What is measured
----------------
Two pytest runs, in fresh subprocesses, in one invocation, alternately (A B A B ...):

* **rubric**: ``evals/bench.rubric.yaml`` with N cases, each answered from a responses file
  (``answers/bench.jsonl``, one line per case) and graded by three deterministic criteria
  (``any_of``, ``number``, ``forbidden``), every case passing; run with ``--rubric-json``,
  ``--rubric-csv``, ``--rubric-html``, ``--junitxml`` and ``$GITHUB_STEP_SUMMARY`` set.
* **plain**: ``test_param.py``, one test parametrized over ``range(N)`` doing comparable
  trivial work, with ``--junitxml``.

Each side's figure is the child's peak resident set (``ru_maxrss`` from ``os.wait4``), the
whole process, interpreter and pytest included. The target (bench/README.md): the rubric
run's peak at most 1.5x the plain run's, at N = 20,000 and N = 200,000. ``--repeat`` runs
each side that many times (peak memory barely varies; the median is reported).

``--trace`` instead runs the rubric side once in this process's child under ``tracemalloc``
and prints the 25 biggest allocation sites alive at the end of the session, to say where the
memory goes.

Usage::

    .venv/bin/python bench/bench_memory.py [--n 20000 200000] [--repeat 1] [--check]

Other scripts may ``from bench_memory import run``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _child import child_env
from bench_items import _PARAM_TEST, BenchError, _python

__all__ = ["DEFAULT_NS", "TARGET", "MemoryResult", "generate", "run"]

DEFAULT_NS = (20_000, 200_000)
TARGET = 1.5
TIMEOUT_S = 3600.0
_BASE = ("-m", "pytest", "-q", "-p", "no:cacheprovider")
RUBRIC_ARGS = (
    *_BASE,
    "--rubric-dir",
    "evals",
    "--rubric-json",
    "out/results.json",
    "--rubric-csv",
    "out/results.csv",
    "--rubric-html",
    "out/report.html",
    "--junitxml",
    "out/junit.xml",
)
PLAIN_ARGS = (*_BASE, "test_param.py", "--junitxml", "out/plain-junit.xml")


class MemoryResult(TypedDict):
    benchmark: str
    n: int
    repeat: int
    rubric_mb: float  # peak RSS, median of the repeats
    plain_mb: float
    ratio: float  # rubric / plain
    rubric_s: float  # wall time of the rubric run, median (for information)
    plain_s: float


def _answer(i: int) -> str:
    return f"{3 * i + 1} plus {i % 97 + 2} is {3 * i + i % 97 + 3}, the total of the two numbers."


def _case(i: int) -> str:
    total = 3 * i + i % 97 + 3
    return (
        f"  - id: c{i:06d}\n"
        f'    question: "What is {3 * i + 1} plus {i % 97 + 2}?"\n'
        "    criteria:\n"
        '      - {id: says_total, type: any_of, any_of: ["total", "sum"]}\n'
        f"      - {{id: value, type: number, value: {total}}}\n"
        f'      - {{id: off_by_one, type: forbidden, phrases: ["is {total + 1}", "cannot be added"]}}\n'
    )


def generate(directory: Path, n: int) -> None:
    """The rubric file, its responses file, the parametrized test and an empty ini."""
    (directory / "evals").mkdir(parents=True, exist_ok=True)
    (directory / "answers").mkdir(exist_ok=True)
    (directory / "out").mkdir(exist_ok=True)
    (directory / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (directory / "test_param.py").write_text(_PARAM_TEST.format(n=n), encoding="utf-8")
    with (directory / "evals/bench.rubric.yaml").open("w", encoding="utf-8") as out:
        out.write("suite: bench\nmin_score: 0.8\nresponses: ../answers/\ncases:\n")
        out.writelines(_case(i) for i in range(n))
    with (directory / "answers/bench.jsonl").open("w", encoding="utf-8") as out:
        out.writelines(
            json.dumps({"id": f"c{i:06d}", "response": _answer(i)}) + "\n" for i in range(n)
        )


def _peak(python: str, args: tuple[str, ...], cwd: Path, n: int, label: str) -> tuple[float, float]:
    """Run one pytest process; return its peak RSS in MB and its wall seconds."""
    env = child_env(GITHUB_STEP_SUMMARY=str(cwd / "out/summary.md"))
    start = time.perf_counter()
    with open(cwd / "out/output.txt", "w", encoding="utf-8") as log:
        child = subprocess.Popen(
            [python, *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log
        )
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - start
    output = (cwd / "out/output.txt").read_text(encoding="utf-8")
    last = output.strip().splitlines()[-1] if output.strip() else ""
    if child.returncode != 0 or f"{n} passed" not in last:
        raise BenchError(f"{label} run exited {child.returncode}:\n{output[-3000:]}")
    return usage.ru_maxrss / 1024, elapsed


def run(n: int, repeat: int = 1) -> MemoryResult:
    python = _python()
    directory = Path(tempfile.mkdtemp(prefix="bench_memory_"))
    try:
        generate(directory, n)
        rubric: list[tuple[float, float]] = []
        plain: list[tuple[float, float]] = []
        for _ in range(repeat):
            rubric.append(_peak(python, RUBRIC_ARGS, directory, n, "rubric"))
            plain.append(_peak(python, PLAIN_ARGS, directory, n, "plain"))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    rubric_mb = statistics.median(m for m, _ in rubric)
    plain_mb = statistics.median(m for m, _ in plain)
    return {
        "benchmark": "memory",
        "n": n,
        "repeat": repeat,
        "rubric_mb": rubric_mb,
        "plain_mb": plain_mb,
        "ratio": rubric_mb / plain_mb,
        "rubric_s": statistics.median(s for _, s in rubric),
        "plain_s": statistics.median(s for _, s in plain),
    }


_TRACE = """
import gc, sys, tracemalloc, pytest
tracemalloc.start(12)
snapshots = []
class Probe:
    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        gc.collect()
        snapshots.append(tracemalloc.take_snapshot())
code = pytest.main(sys.argv[1:], plugins=[Probe()])
peak = tracemalloc.get_traced_memory()[1]
stats = snapshots[0].statistics("traceback")
print(f"tracemalloc peak {peak / 2**20:.1f} MB; alive at sessionfinish "
      f"{sum(s.size for s in stats) / 2**20:.1f} MB in {sum(s.count for s in stats)} blocks")
for stat in stats[:25]:
    print(f"{stat.size / 2**20:8.2f} MB {stat.count:9d} blocks")
    for line in stat.traceback.format()[-8:]:
        print("    " + line)
"""


def trace(n: int) -> str:
    """The rubric side once under tracemalloc: the biggest allocation sites alive at the end."""
    python = _python()
    directory = Path(tempfile.mkdtemp(prefix="bench_memory_"))
    try:
        generate(directory, n)
        done = subprocess.run(
            [python, "-c", _TRACE, *RUBRIC_ARGS[2:]],
            cwd=directory,
            env=child_env(GITHUB_STEP_SUMMARY=str(directory / "out/summary.md")),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return done.stdout[-20000:] + done.stderr[-3000:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=list(DEFAULT_NS))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--check", action="store_true", help=f"exit 1 above {TARGET}x")
    parser.add_argument("--trace", action="store_true", help="tracemalloc of the rubric side")
    args = parser.parse_args(argv)
    if args.trace:
        print(trace(args.n[0]))
        return 0
    over = False
    for n in args.n:
        r = run(n, args.repeat)
        over |= r["ratio"] > TARGET
        print(
            f"N={n}: rubric with JSON, CSV, HTML, JUnit and the step summary {r['rubric_mb']:.0f} MB "
            f"({r['rubric_s']:.1f}s), plain parametrized with JUnit {r['plain_mb']:.0f} MB "
            f"({r['plain_s']:.1f}s): ratio {r['ratio']:.2f} (target <= {TARGET:g})",
            flush=True,
        )
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
