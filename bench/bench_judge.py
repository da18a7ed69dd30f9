"""A judged session against the concurrency limit: time added by K judge calls of latency L.

What is measured
----------------
One generated rubric file with K judged criteria (16 cases x 3), graded
twice, in fresh subprocesses, alternately:

* **offline**: no judge, so the judged criteria are SKIPPED;
* **judged**: ``--rubric-judge openai:bench`` against ``tests/fake_llm.py``
  on 127.0.0.1, which answers every call after a fixed latency L.

The time the judge adds is ``median(judged) - median(offline)``. With at
most C calls in flight across the session, the floor is ``ceil(K / C) x L``;
the target (bench/README.md) is an added time of at most 1.15x that floor
(K = 48, C = 8, L = 0.25 s: 1.5 s floor, 1.725 s allowed). The judged runs
use ``--rubric-cache off``, so each makes its K calls.

A third run per round judges again with the cache on and warm (every reply
from the cache); the target for it is at most 1.2x the offline run.

The offline and cold judged runs are repeated under pytest-xdist (``-n 2``):
each worker judges the items it has been handed ahead, with half the bound
each, so the floor is the same ``ceil(K / C) x L``.

Usage::

    .venv/bin/python bench/bench_judge.py [--repeat 5] [--latency 0.25] [--concurrency 8] [--check]

Other scripts may ``from bench_judge import run``.
"""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TypedDict

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _child import child_env  # noqa: E402

from tests.fake_llm import FakeLLM, verdict  # noqa: E402

CASES, PER_CASE = 16, 3
TARGET = 1.15
WARM_TARGET = 1.2


class Result(TypedDict):
    benchmark: str
    calls: int
    concurrency: int
    latency_s: float
    offline_s: float
    judged_s: float
    added_s: float
    floor_s: float
    ratio: float  # added / floor
    warm_s: float  # judged again, every reply from the judge cache
    warm_ratio: float  # warm / offline; target 1.2
    xdist_offline_s: float  # the offline and judged runs again with -n 2
    xdist_judged_s: float
    xdist_ratio: float  # (judged - offline) / floor under -n 2


def generate(directory: Path) -> Path:
    lines = ["cases:"]
    for i in range(CASES):
        lines += [
            f"  - id: q{i:02d}",
            f"    question: 'Question {i}?'",
            f"    response: 'Answer {i}: the value is {i * 7}.'",
            "    criteria:",
            f"      - {{id: value, type: number, value: {i * 7}}}",
        ]
        lines += [
            f"      - {{id: j{k}, requirement: 'Requirement {k} of case {i}'}}"
            for k in range(PER_CASE)
        ]
    path = directory / "judged.rubric.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (directory / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return path


def _timed(args: list[str], cwd: Path, *, workers: int = 0) -> float:
    env = child_env()
    xdist = ["-n", str(workers)] if workers else ["-p", "no:xdist"]
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *xdist, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0 or f"{CASES} passed" not in done.stdout.splitlines()[-1]:
        raise SystemExit(f"bench_judge: a run failed ({' '.join(args)}):\n{done.stdout[-3000:]}")
    return elapsed


def run(*, repeat: int = 5, latency: float = 0.25, concurrency: int = 8) -> Result:
    directory = Path(tempfile.mkdtemp(prefix="bench_judge_"))
    calls = CASES * PER_CASE
    try:
        generate(directory)
        offline: list[float] = []
        judged: list[float] = []
        warm: list[float] = []
        xdist_offline: list[float] = []
        xdist_judged: list[float] = []
        with FakeLLM(latency=latency) as fake:
            fake.respond_with(lambda request: verdict("MET"))
            judge = [
                "--rubric-judge=openai:bench",
                f"--rubric-judge-url={fake.openai_url}",
                f"--rubric-concurrency={concurrency}",
            ]
            cold = [*judge, "--rubric-cache=off"]  # every judged run makes its K calls
            _timed(judge, directory)  # warm-up: file cache, server threads, and the judge cache
            for _ in range(repeat):
                offline.append(_timed([], directory))
                judged.append(_timed(cold, directory))
                warm.append(_timed(judge, directory))
                xdist_offline.append(_timed([], directory, workers=2))
                xdist_judged.append(_timed(cold, directory, workers=2))
            expected = calls * (2 * repeat + 1)
            if len(fake.requests) != expected:
                raise SystemExit(
                    f"bench_judge: {len(fake.requests)} judge calls, expected {expected}"
                )
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    floor = math.ceil(calls / concurrency) * latency
    added = statistics.median(judged) - statistics.median(offline)
    return {
        "benchmark": "judge",
        "calls": calls,
        "concurrency": concurrency,
        "latency_s": latency,
        "offline_s": statistics.median(offline),
        "judged_s": statistics.median(judged),
        "added_s": added,
        "floor_s": floor,
        "ratio": added / floor,
        "warm_s": statistics.median(warm),
        "warm_ratio": statistics.median(warm) / statistics.median(offline),
        "xdist_offline_s": statistics.median(xdist_offline),
        "xdist_judged_s": statistics.median(xdist_judged),
        "xdist_ratio": (statistics.median(xdist_judged) - statistics.median(xdist_offline)) / floor,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.25)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--check", action="store_true", help=f"exit 1 when the ratio exceeds {TARGET}"
    )
    args = parser.parse_args(argv)
    r = run(repeat=args.repeat, latency=args.latency, concurrency=args.concurrency)
    print(
        f"judged session: K={r['calls']} calls, C={r['concurrency']}, L={r['latency_s']:g}s: "
        f"offline {r['offline_s']:.2f}s, judged {r['judged_s']:.2f}s, added {r['added_s']:.2f}s "
        f"against a floor of ceil(K/C) x L = {r['floor_s']:.2f}s: ratio {r['ratio']:.2f} "
        f"({'within' if r['ratio'] <= TARGET else 'over'} the {TARGET}x target)"
    )
    print(
        f"warm judge cache: {r['warm_s']:.2f}s against offline {r['offline_s']:.2f}s: "
        f"ratio {r['warm_ratio']:.2f} ({'within' if r['warm_ratio'] <= WARM_TARGET else 'over'} "
        f"the {WARM_TARGET}x target)"
    )
    print(
        f"judged session with -n 2: offline {r['xdist_offline_s']:.2f}s, judged "
        f"{r['xdist_judged_s']:.2f}s, added {r['xdist_judged_s'] - r['xdist_offline_s']:.2f}s "
        f"against the same floor: ratio {r['xdist_ratio']:.2f} "
        f"({'within' if r['xdist_ratio'] <= TARGET else 'over'} the {TARGET}x target)"
    )
    over = r["ratio"] > TARGET or r["warm_ratio"] > WARM_TARGET or r["xdist_ratio"] > TARGET
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
