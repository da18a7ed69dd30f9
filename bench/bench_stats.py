"""The intervals' cost: a suite of 10,000 case results, against a bootstrap of the same.

What is measured
----------------
What the leaderboard computes per subject from its cases, on 10,000 per-case
scores: ``pytest_rubric._report.stats.mean_interval`` (the correctness interval),
``paired_difference`` (a tier or a baseline delta) and ``detectable_drop``; the
median of ``repeat`` runs. Against it, a 2,000-resample percentile bootstrap of
the mean in pure Python (what the plugin computed before its intervals became
closed forms, then with numpy), timed once on a tenth of the resamples and
scaled up.

Target (bench/README.md): under 0.5 s, the bootstrap's budget.

Usage::

    .venv/bin/python bench/bench_stats.py [--repeat 5] [--check]

Other scripts may ``from bench_stats import run``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_rubric._report import stats as _stats

TARGET_S = 0.5
CASES = 10_000
RESAMPLES = 2000


class Result(TypedDict):
    cases: int
    resamples: int
    closed_form_s: float
    bootstrap_s: float
    speedup: float


def _bootstrap(values: list[float], resamples: int) -> tuple[float, float]:
    rng = random.Random(0)
    n = len(values)
    means = []
    for _ in range(resamples):
        total = 0.0
        for _ in range(n):
            total += values[int(rng.random() * n)]
        means.append(total / n)
    means.sort()
    return means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def _leaderboard_figures(values: list[float], other: list[float]) -> None:
    _stats.mean_interval(values)
    _stats.paired_difference(list(zip(values, other, strict=True)))
    _stats.detectable_drop([[v] for v in values])


def run(*, repeat: int = 5, cases: int = CASES) -> Result:
    draw = random.Random(1)
    values = [draw.random() for _ in range(cases)]
    other = [draw.random() for _ in range(cases)]
    _leaderboard_figures(values, other)  # untimed: the first call's imports
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        _leaderboard_figures(values, other)
        timings.append(time.perf_counter() - started)
    share = RESAMPLES // 10
    started = time.perf_counter()
    _bootstrap(values, share)
    bootstrap_s = (time.perf_counter() - started) * RESAMPLES / share
    closed_form_s = statistics.median(timings)
    return Result(
        cases=cases,
        resamples=RESAMPLES,
        closed_form_s=closed_form_s,
        bootstrap_s=bootstrap_s,
        speedup=bootstrap_s / closed_form_s,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--check", action="store_true", help="exit 1 over the target")
    args = parser.parse_args()
    result = run(repeat=args.repeat)
    print(
        f"intervals and detectable drop over {result['cases']} cases: "
        f"{result['closed_form_s'] * 1000:.1f} ms; a {result['resamples']}-resample bootstrap "
        f"in pure Python {result['bootstrap_s']:.1f}s ({result['speedup']:.0f}x); "
        f"target < {TARGET_S:g}s"
    )
    return 1 if args.check and result["closed_form_s"] >= TARGET_S else 0


if __name__ == "__main__":
    sys.exit(main())
