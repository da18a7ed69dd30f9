"""How the failure report grows: N items, one in five failing, at N and at 2N.

What is measured
----------------
The time pytest takes to print the failures (its ``FAILURES`` section), measured inside
each run by a small plugin (``_summary_timer.py``) around the terminal reporter's
``summary_failures``, so start-up, collection, grading and the other summaries do not
blur it. Four kinds, each at N and 2N, every run alternated, ``--repeat`` times, medians
kept:

* **rubric**: N rubric items (an inline answer, a ``number`` and an ``any_of``
  criterion), one in five failing, with pytest's default ``--tb``;
* **rubric --tb=line**: the same, printed one line per failure;
* **plain**: one test parametrized over ``range(N)``, one in five failing an
  ``assert``, the default ``--tb`` (pytest's own floor);
* **plain --tb=line**.

Each row prints the time at N, at 2N and their ratio: about 2 when the report is
linear in N, about 4 when it is quadratic.

What it found
-------------
pytest's default failure report is quadratic whatever the items are: for each failed
report it looks for that test's teardown report by scanning every setup and teardown
report of the session (``TerminalReporter._get_teardown_reports``), failures x tests
steps, each a ``NodeId`` dataclass ``__eq__`` since pytest 9.2. The plain rows grow the
same way. A rubric item's own share is linear: its failure text is a string built once,
in its call (the ``--tb=line`` rows, which skip the scan, grow about 2x). Each scan step
costs a rubric run more than a plain one (a larger heap around the reports, so more cache
misses), never more steps. The plugin cannot skip pytest's scan without editing
pytest's counters; past :data:`pytest_rubric._render.summary.SLOW_FAILURE_REPORT` steps
it says so before the wait, and that ``--tb=line`` prints one line per failure.

The target: rubric ``--tb=line`` grows at most 3x when N doubles (linear is 2, quadratic
4; those runs take tens of milliseconds, so a loaded machine adds noise).

Usage::

    .venv/bin/python bench/bench_failures.py [--n 4000] [--repeat 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _child import child_env

__all__ = ["LINEAR_TARGET", "run"]

DEFAULT_N = 4000
DEFAULT_REPEAT = 3
LINEAR_TARGET = 3.0  # rubric --tb=line, 2N against N: linear is 2, quadratic 4
TIMEOUT_S = 900.0
BENCH = Path(__file__).resolve().parent
KINDS = {
    "rubric": ("--rubric-dir", "evals"),
    "rubric --tb=line": ("--rubric-dir", "evals", "--tb=line"),
    "plain": ("test_plain.py",),
    "plain --tb=line": ("test_plain.py", "--tb=line"),
}


def generate(directory: Path, n: int) -> None:
    """N rubric cases and a test parametrized over N, one in five failing on each side."""
    (directory / "evals").mkdir(parents=True)
    (directory / "pytest.ini").write_text("[pytest]\n")
    cases = [
        {
            "id": f"c{i:06d}",
            "question": f"What is {i} plus one?",
            "response": f"It is {i + 1 if i % 5 else i + 2}.",
            "criteria": [
                {"id": "value", "type": "number", "value": i + 1},
                {"id": "says", "type": "any_of", "any_of": ["it is"]},
            ],
        }
        for i in range(n)
    ]
    (directory / "evals" / "b.rubric.json").write_text(
        json.dumps({"suite": "b", "min_score": 0.8, "cases": cases})
    )
    (directory / "test_plain.py").write_text(
        "import pytest\n\n\n"
        f"@pytest.mark.parametrize('i', range({n}))\n"
        "def test_plain(i):\n"
        "    assert i % 5, f'{i} is a multiple of five'\n"
    )


def _summary_seconds(directory: Path, args: tuple[str, ...], n: int) -> float:
    out = directory / "summary.txt"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "_summary_timer", *args]
    env = child_env(PYTHONPATH=str(BENCH), SUMMARY_TIMER_OUT=str(out))
    done = subprocess.run(
        command, cwd=directory, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    failed = n // 5
    if f"{failed} failed, {n - failed} passed" not in done.stdout:
        raise RuntimeError(f"{' '.join(args)} did not run as meant:\n{done.stdout[-2000:]}")
    return float(out.read_text())


def run(n: int = DEFAULT_N, repeat: int = DEFAULT_REPEAT) -> dict[str, Any]:
    """The summary's median seconds per kind at ``n`` and ``2n``, and their ratios."""
    with tempfile.TemporaryDirectory(prefix="bench_failures_") as tmp:
        directories = {size: Path(tmp) / str(size) for size in (n, 2 * n)}
        for size, directory in directories.items():
            generate(directory, size)
        times: dict[str, dict[int, list[float]]] = {k: {n: [], 2 * n: []} for k in KINDS}
        for _ in range(repeat):
            for kind, args in KINDS.items():
                for size, directory in directories.items():
                    times[kind][size].append(_summary_seconds(directory, args, size))
    rows = {}
    for kind, by_size in times.items():
        small, large = (statistics.median(by_size[s]) for s in (n, 2 * n))
        rows[kind] = {"n_s": small, "2n_s": large, "growth": large / small}
    return {
        "benchmark": "failures",
        "n": n,
        "repeat": repeat,
        "kinds": rows,
        "rubric_over_plain": rows["rubric"]["2n_s"] / rows["plain"]["2n_s"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=DEFAULT_N, help="items of the smaller run")
    parser.add_argument("--repeat", type=int, default=DEFAULT_REPEAT)
    parser.add_argument("--json", type=Path, help="write the result here")
    args = parser.parse_args(argv)
    result = run(args.n, args.repeat)
    n = result["n"]
    print(f"printing the failures, {n // 5} of {n} and {2 * n // 5} of {2 * n} items failing:")
    print(f"{'':18}{f'N={n}':>10}{f'2N={2 * n}':>12}{'2N/N':>8}")
    for kind, row in result["kinds"].items():
        print(f"{kind:18}{row['n_s']:>9.2f}s{row['2n_s']:>11.2f}s{row['growth']:>8.2f}")
    linear = result["kinds"]["rubric --tb=line"]["growth"]
    ok = linear <= LINEAR_TARGET
    print(
        f"rubric --tb=line grows {linear:.2f}x (target <= {LINEAR_TARGET:g}): "
        f"{'ok' if ok else 'OVER'}; rubric against plain at 2N, default --tb: "
        f"{result['rubric_over_plain']:.2f} (pytest's scan, see the docstring)"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
