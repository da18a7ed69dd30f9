"""The suite's own speed and steadiness: ``make test`` on a quiet machine, then several runs
in a row with busy processes beside it (``python bench/bench_suite.py``; about 15 minutes).

Each run is the command ``make test`` runs (its xdist workers, work stealing), started
from the checkout with the project's venv. "Busy" is ``--busy`` processes that spin on the
CPU the whole time (two by default, on a two-core machine: the suite gets about half of it).
Prints each run's wall time, CPU seconds (user + sys of its processes) and outcome; exits 1
when a run failed, so "five green in a row under load" is a command anyone can run. Not part of ``run_all.py``: it takes the machine.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

from _child import children_cpu

ROOT = Path(__file__).resolve().parent.parent
# The worker count is read from the Makefile's test target, so the two cannot drift apart.
WORKERS = re.search(r"^test:.*\n\t.*-n (\d+)", (ROOT / "Makefile").read_text(), re.M)
SUITE = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
SUITE += ["-n", WORKERS[1] if WORKERS else "4", "--dist", "worksteal", "-q"]
SPIN = "while True: pass"


def run_suite() -> tuple[float, float, int, str]:
    """Wall time, CPU seconds (user + sys of the suite's processes), exit status, last line.
    CPU seconds hardly move with the load beside the run; wall time does."""
    started, cpu = time.perf_counter(), children_cpu()
    done = subprocess.run(SUITE, cwd=ROOT, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    wall = time.perf_counter() - started
    return wall, children_cpu() - cpu, done.returncode, lines[-1] if lines else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quiet-runs", type=int, default=1, help="runs with nothing beside")
    parser.add_argument("--busy-runs", type=int, default=5, help="runs with busy processes")
    parser.add_argument("--busy", type=int, default=2, help="busy processes beside the suite")
    args = parser.parse_args()
    failed = 0
    rows: list[tuple[str, float, float, int, str]] = []
    for n in range(args.quiet_runs):
        wall, cpu, code, last = run_suite()
        rows.append((f"quiet {n + 1}", wall, cpu, code, last))
        failed += code != 0
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.busy)]
    try:
        for n in range(args.busy_runs):
            wall, cpu, code, last = run_suite()
            rows.append((f"busy x{args.busy} {n + 1}", wall, cpu, code, last))
            failed += code != 0
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    print(f"{'run':<12} {'wall':>8} {'cpu':>8}  exit  pytest's last line")
    for name, wall, cpu, code, last in rows:
        print(f"{name:<12} {wall:7.1f}s {cpu:7.1f}s  {code:>4}  {last}")
    print("target: quiet under 90 s; every run green")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
