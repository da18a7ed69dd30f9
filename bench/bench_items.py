"""Per-item cost of rubric items against pytest's own floor.

What is measured
----------------
Two pytest runs over N items each, in fresh subprocesses, timed by wall
clock around the whole process:

* **rubric**: ``python -m pytest -q -p no:cacheprovider --rubric-dir evals``
  on a generated ``evals/bench.rubric.yaml`` (or ``.json``) with N cases.
  Each case is realistic but trivial: an id, a question, a one-sentence
  inline ``response:`` and three deterministic criteria (``any_of``,
  ``number``, ``forbidden``), all of which go the right way, so every item
  passes. The text varies per case, so no work is shared by accident.
* **parametrized**: ``python -m pytest -q -p no:cacheprovider test_param.py``
  on one ``@pytest.mark.parametrize("i", range(N))`` test whose body does
  comparable trivial work (it builds a sentence and checks substrings).

Both run in the same temporary directory (with an empty ``pytest.ini``, so
no surrounding configuration is picked up), with the same interpreter, the
same environment (``PYTHONDONTWRITEBYTECODE=1``) and the same plugins:
pytest-rubric is loaded on both sides through its entry point, so the floor
includes importing the plugin and the ratio isolates what a rubric item
costs over a plain item (loading and validating the file, compiling the
criteria, grading, the summary). Nothing is subtracted from either side.
The plugin's bytecode is written once before the runs (pytest and the other
plugins were installed with theirs; without it the rubric side alone would
compile a hundred modules on every run): the editable install loads it as a
wheel's modules load once pytest has cached its rewritten copies of them.
Without any bytecode cache a wheel's modules are rewritten and compiled on
every run; ``bench_import.py`` measures that at start-up.

Like for like
-------------
The plugin has two switchable tricks with Python's garbage collector (see
``pytest_rubric/_session/heap.py``). ``rubric_gc_freeze`` keeps the full
collections during the run off the objects alive when collection ends;
it is on in the headline, as users run it. ``rubric_fast_exit`` freezes
the heap at interpreter exit; that also spares pytest's own objects the
shutdown walks the parametrized side still pays for, so the headline runs
the rubric side with it off. Two more columns time the rubric side with
neither trick and exactly as users run it (both on).

Why interleaved, and why the median
-----------------------------------
The machines are shared and noisy. Running the two commands alternately
(A B A B ...) in one invocation exposes both to the same background load;
the median of R repeats ignores the occasional run that a neighbour slowed
down, without the optimism of the minimum (which is reported as well: it is
the best the machine managed, a lower bound on each side's cost). One
untimed warm-up pair first primes the OS file cache. The CPU time (user +
sys) of each process is reported as a third ratio: on a shared machine it is
the least disturbed by neighbours, since waiting for a core costs wall time
but no CPU time.

The table has a row at N and at N/10: every run pays the same start-up
(interpreter, pytest, plugin imports), which dominates at small N, so the
N/10 row shows start-up while the N row shows per-item cost.

The target (bench/README.md): at N = 3000 the rubric run takes at most 1.15x
the parametrized run (median against median). ``--check`` turns that into
the exit status.

Usage::

    .venv/bin/python bench/bench_items.py [--n 3000] [--repeat 5] [--format yaml|json]
                                          [--target 1.15] [--check] [--profile]

Other scripts may ``from bench_items import run`` and aggregate its dict.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, TypedDict

from _child import children_cpu, compile_plugin

__all__ = ["BenchError", "Result", "SideTimes", "generate", "main", "profile", "run"]

Format = Literal["yaml", "json"]

DEFAULT_N = 3000
DEFAULT_REPEAT = 5
DEFAULT_TARGET = 1.15
TIMEOUT_S = 900.0

_BASE_ARGS = ("-m", "pytest", "-q", "-p", "no:cacheprovider")
# The headline: the plugin as configured by default, except its quick exit (it freezes
# the heap at exit, which would spare pytest's own objects the walks the parametrized side
# pays for). Two more runs: with no GC trick at all, and exactly as users run it.
RUBRIC_ARGS = (*_BASE_ARGS, "--rubric-dir", "evals", "-o", "rubric_fast_exit=false")
RUBRIC_NO_TRICKS_ARGS = (*RUBRIC_ARGS, "-o", "rubric_gc_freeze=false")
RUBRIC_DEFAULT_ARGS = (*_BASE_ARGS, "--rubric-dir", "evals")
PARAM_ARGS = (*_BASE_ARGS, "test_param.py")

# Variables that would make the two runs differ from what is meant (extra
# options, extra or no plugins, a judge); they are removed from the children.
_SCRUBBED_ENV = (
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
    "RUBRIC_JUDGE",
)


class BenchError(RuntimeError):
    """A benchmark run did not do what it must (non-zero exit, wrong item count)."""


class SideTimes(TypedDict):
    median_s: float
    min_s: float
    times_s: list[float]
    ms_per_item: float  # median_s / n, in milliseconds; start-up included
    cpu_median_s: float  # user + sys CPU seconds of the process, median


class Result(TypedDict):
    benchmark: str
    n: int
    repeat: int
    format: str
    rubric: SideTimes
    parametrized: SideTimes
    ratio: float  # rubric median / parametrized median
    ratio_min: float  # rubric min / parametrized min
    ratio_cpu: float  # rubric CPU median / parametrized CPU median: least sensitive to neighbours
    ratio_fast_exit: float  # the rubric side as users run it (quick exit on) / parametrized
    ratio_no_tricks: float  # the rubric side with neither GC trick / parametrized


# --- generated inputs -------------------------------------------------------------------------


def _case(i: int) -> dict[str, Any]:
    """Case ``i``: one of three question shapes, with numbers that depend on ``i``."""
    kind = i % 3
    if kind == 0:
        a, b = 3 * i + 1, i % 97 + 2
        total = a + b
        return {
            "id": f"c{i:05d}_sum",
            "question": f"What is {a} plus {b}?",
            "response": f"{a} plus {b} is {total}, the total of the two numbers.",
            "criteria": [
                {"id": "says_total", "type": "any_of", "any_of": ["total", "sum"]},
                {"id": "value", "type": "number", "value": total},
                {
                    "id": "off_by_one",
                    "type": "forbidden",
                    "phrases": [f"is {total + 1}", "cannot be added"],
                },
            ],
        }
    if kind == 1:
        pct, base = i % 90 + 5, 100 * (i % 13 + 1)
        part = pct * base // 100
        return {
            "id": f"c{i:05d}_percent",
            "question": f"What is {pct}% of {base}?",
            "response": f"{pct}% of {base} is {part}, since {pct} hundredths of {base} is {part}.",
            "criteria": [
                {"id": "explains", "type": "any_of", "any_of": ["hundredths", "per cent"]},
                {"id": "value", "type": "number", "value": part, "abs_tol": 0.01},
                {
                    "id": "not_the_fraction",
                    "type": "forbidden",
                    "penalty": 1.5,
                    "phrases": [f"is {pct / 100:g}"],
                },
            ],
        }
    km = i % 500 + 1
    meters = km * 1000
    return {
        "id": f"c{i:05d}_units",
        "question": f"How many meters are in {km} kilometers?",
        "response": f"There are {meters:,} meters in {km} kilometers, 1,000 in each kilometer.",
        "criteria": [
            {"id": "unit", "type": "any_of", "any_of": ["meters", "metres"]},
            {"id": "value", "type": "number", "value": meters},
            {"id": "not_centimeters", "type": "forbidden", "phrases": [f"{km * 100:,} meters"]},
        ],
    }


def suite(n: int) -> dict[str, Any]:
    """The rubric file's content, as data (the YAML and JSON renderings share it)."""
    return {"suite": "bench", "min_score": 0.8, "cases": [_case(i) for i in range(n)]}


def _flow(value: Any) -> str:
    """A YAML flow rendering: bare keys, JSON scalars (JSON is a subset of YAML)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_bare(k, v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _bare(key: str, value: Any) -> str:
    """Ids and type names unquoted, as in the docs' examples; everything else via JSON."""
    if key in ("id", "type") and isinstance(value, str) and re.fullmatch(r"[a-z][a-z0-9_]*", value):
        return value
    return _flow(value)


def render_yaml(data: dict[str, Any]) -> str:
    """Block style for the file and cases, flow style for criteria, as users write them."""
    lines = [f"suite: {data['suite']}", f"min_score: {data['min_score']}", "cases:"]
    for case in data["cases"]:
        lines.append(f"  - id: {case['id']}")
        lines.append(f"    question: {_flow(case['question'])}")
        lines.append(f"    response: {_flow(case['response'])}")
        lines.append("    criteria:")
        lines.extend(f"      - {_flow(c)}" for c in case["criteria"])
    return "\n".join(lines) + "\n"


_PARAM_TEST = '''\
"""N trivial parametrized tests: the floor the rubric items are compared with."""

import pytest


@pytest.mark.parametrize("i", range({n}))
def test_case(i: int) -> None:
    total = 4 * i + 3
    s = f"case {{i}}: the answer is {{total}}, the total of the two numbers."
    assert "total" in s and str(total) in s
'''


def generate(directory: Path, n: int, fmt: Format = "yaml") -> Path:
    """Write the rubric file, the parametrized test and an empty ``pytest.ini``; return the rubric file."""
    (directory / "pytest.ini").write_text("", encoding="utf-8")
    (directory / "test_param.py").write_text(_PARAM_TEST.format(n=n), encoding="utf-8")
    evals = directory / "evals"
    evals.mkdir(exist_ok=True)
    data = suite(n)
    if fmt == "json":
        path = evals / "bench.rubric.json"
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    else:
        path = evals / "bench.rubric.yaml"
        path.write_text(render_yaml(data), encoding="utf-8")
    return path


# --- running ----------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED_ENV}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _python() -> str:
    if importlib.util.find_spec("pytest_rubric") is None:
        raise BenchError(
            f"{sys.executable} cannot import pytest_rubric; run this script with the venv's "
            "python: .venv/bin/python bench/bench_items.py"
        )
    return sys.executable


_PASSED = re.compile(r"\b(\d+) passed\b")
_BAD = re.compile(r"\b\d+ (failed|errors?|skipped|xfailed|xpassed)\b")


def _timed(python: str, args: Sequence[str], cwd: Path, n: int, label: str) -> tuple[float, float]:
    """Run one pytest process; return its wall and CPU (user + sys) seconds, or raise if it
    did not pass N items."""
    command = [python, *args]
    cpu_before = children_cpu()
    start = time.perf_counter()
    done = subprocess.run(
        command,
        cwd=cwd,
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    elapsed = time.perf_counter() - start
    cpu = children_cpu() - cpu_before
    tail = done.stdout[-4000:]
    if done.returncode != 0:
        raise BenchError(
            f"{label} run exited {done.returncode} (want 0): {' '.join(command)}\n"
            f"--- output (tail) ---\n{tail}"
        )
    # The last line is pytest's "N passed in Xs"; the rubric summary section comes before it.
    counts = [int(m) for m in _PASSED.findall(done.stdout)]
    if (
        not counts
        or counts[-1] != n
        or _BAD.search(done.stdout.splitlines()[-1] if done.stdout else "")
    ):
        raise BenchError(
            f"{label} run did not pass exactly {n} items: {' '.join(command)}\n"
            f"--- output (tail) ---\n{tail}"
        )
    return elapsed, cpu


def _side(times: list[float], cpu: list[float], n: int) -> SideTimes:
    median = statistics.median(times)
    return {
        "median_s": median,
        "min_s": min(times),
        "times_s": times,
        "ms_per_item": 1000.0 * median / n,
        "cpu_median_s": statistics.median(cpu),
    }


def run(n: int, repeat: int = DEFAULT_REPEAT, fmt: Format = "yaml", *, warmup: int = 1) -> Result:
    """Time N rubric items against N parametrized tests, interleaved, ``repeat`` times each.

    Raises :class:`BenchError` when either side does not exit 0 with N passed.
    """
    if n < 1 or repeat < 1 or warmup < 0:
        raise ValueError("n and repeat must be at least 1, warmup at least 0")
    python = _python()
    directory = Path(tempfile.mkdtemp(prefix="bench_items_"))
    try:
        generate(directory, n, fmt)
        compile_plugin()
        rubric: list[float] = []
        param: list[float] = []
        rubric_cpu: list[float] = []
        param_cpu: list[float] = []
        fast_exit: list[float] = []
        no_tricks: list[float] = []
        for round_ in range(warmup + repeat):
            a, a_cpu = _timed(python, RUBRIC_ARGS, directory, n, "rubric")
            b, b_cpu = _timed(python, PARAM_ARGS, directory, n, "parametrized")
            c, _ = _timed(python, RUBRIC_DEFAULT_ARGS, directory, n, "rubric (fast exit)")
            d, _ = _timed(python, RUBRIC_NO_TRICKS_ARGS, directory, n, "rubric (no GC tricks)")
            if round_ >= warmup:
                no_tricks.append(d)
                rubric.append(a)
                param.append(b)
                rubric_cpu.append(a_cpu)
                param_cpu.append(b_cpu)
                fast_exit.append(c)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    r, p = _side(rubric, rubric_cpu, n), _side(param, param_cpu, n)
    return {
        "benchmark": "items",
        "n": n,
        "repeat": repeat,
        "format": fmt,
        "rubric": r,
        "parametrized": p,
        "ratio": r["median_s"] / p["median_s"],
        "ratio_min": r["min_s"] / p["min_s"],
        "ratio_cpu": r["cpu_median_s"] / p["cpu_median_s"],
        "ratio_fast_exit": statistics.median(fast_exit) / p["median_s"],
        "ratio_no_tricks": statistics.median(no_tricks) / p["median_s"],
    }


_OWN_CODE = r"pytest_rubric[/\\]"


def profile(n: int, fmt: Format = "yaml", top: int = 25) -> str:
    """Run the rubric side once under cProfile; return the top entries in pytest_rubric by cumulative time."""
    python = _python()
    directory = Path(tempfile.mkdtemp(prefix="bench_items_"))
    try:
        generate(directory, n, fmt)
        compile_plugin()
        out = directory / "rubric.prof"
        args = ("-m", "cProfile", "-o", str(out), *RUBRIC_ARGS)
        elapsed, _ = _timed(python, args, directory, n, "rubric (profiled)")
        stream = io.StringIO()
        stats = pstats.Stats(str(out), stream=stream)
        stats.sort_stats(pstats.SortKey.CUMULATIVE).print_stats(_OWN_CODE, top)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    header = (
        f"cProfile of the rubric side, N={n} ({fmt}), wall {elapsed:.2f}s under the profiler; "
        f"top {top} pytest_rubric functions by cumulative time:"
    )
    return header + "\n" + stream.getvalue().strip("\n")


# --- report -----------------------------------------------------------------------------------


def table(results: Sequence[Result]) -> str:
    header = (
        "N",
        "rubric med s",
        "rubric min s",
        "param med s",
        "param min s",
        "rubric ms/item",
        "param ms/item",
        "ratio",
        "ratio (min)",
        "ratio (cpu)",
        "ratio (fast exit)",
        "ratio (no GC tricks)",
    )
    rows = [
        (
            str(r["n"]),
            f"{r['rubric']['median_s']:.3f}",
            f"{r['rubric']['min_s']:.3f}",
            f"{r['parametrized']['median_s']:.3f}",
            f"{r['parametrized']['min_s']:.3f}",
            f"{r['rubric']['ms_per_item']:.3f}",
            f"{r['parametrized']['ms_per_item']:.3f}",
            f"{r['ratio']:.2f}x",
            f"{r['ratio_min']:.2f}x",
            f"{r['ratio_cpu']:.2f}x",
            f"{r['ratio_fast_exit']:.2f}x",
            f"{r['ratio_no_tricks']:.2f}x",
        )
        for r in results
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in (header, *rows)
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Time pytest --rubric-dir on N generated cases against N parametrized tests."
    )
    parser.add_argument(
        "--n", type=int, default=DEFAULT_N, help="items per run (default %(default)s)"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=DEFAULT_REPEAT,
        help="timed runs of each side (default %(default)s)",
    )
    parser.add_argument(
        "--target",
        type=float,
        default=DEFAULT_TARGET,
        help="highest acceptable ratio rubric/parametrized at N (default %(default)s)",
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when the ratio at N exceeds --target"
    )
    parser.add_argument(
        "--format", dest="fmt", choices=("yaml", "json"), default="yaml", help="rubric file format"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="instead of timing, run the rubric side once under cProfile and print the top 25 "
        "pytest_rubric functions by cumulative time",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.n < 1 or args.repeat < 1:
        _parser().error("--n and --repeat must be at least 1")
    if args.profile and args.check:
        _parser().error("--profile does not time anything; run --check without it")
    try:
        if args.profile:
            print(profile(args.n, args.fmt))
            return 0
        sizes = [args.n] + ([args.n // 10] if args.n // 10 >= 1 else [])
        print(
            f"pytest-rubric items benchmark: {args.repeat} interleaved run(s) per side after 1 warm-up, "
            f"{args.fmt} rubric file, python {sys.version.split()[0]}, {os.cpu_count()} CPUs",
            flush=True,
        )
        results = [run(n, args.repeat, args.fmt) for n in sizes]
    except BenchError as exc:
        print(f"bench_items: FAILED\n{exc}", file=sys.stderr)
        return 2
    print(table(results))
    main_result = results[0]
    over = main_result["ratio"] > args.target
    print(
        f"ratio at N={main_result['n']}: {main_result['ratio']:.2f}x wall, "
        f"{main_result['ratio_cpu']:.2f}x cpu "
        f"({'over' if over else 'within'} the {args.target:g}x target on wall time)"
    )
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
