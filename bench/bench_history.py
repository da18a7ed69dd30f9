"""History at scale: 1,000 runs x 2,000 items, appended and read back.

What is measured
----------------
A ``--rubric-history`` file is filled with ``--runs`` runs of ``--items`` results each
(two subjects), through the plugin's own ``_report.history.append``; then, on that full file, the
time of one more append (median of ``--repeat``) and of ``read_runs(last=20)``, what
``python -m pytest_rubric history PATH --last 20`` reads (median of ``--repeat``).

Targets (bench/README.md): an append under 0.2 s a run; ``--last 20`` under 0.5 s.

Usage::

    .venv/bin/python bench/bench_history.py [--runs 1000] [--items 2000] [--check]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_rubric._cli.history import history_lines  # noqa: E402
from pytest_rubric._report.history import append, read_runs  # noqa: E402
from pytest_rubric._report.report import build_report  # noqa: E402
from pytest_rubric._results import CaseResult, CriterionResult, Verdict  # noqa: E402

APPEND_TARGET_S = 0.2
READ_TARGET_S = 0.5


def _results(items: int) -> list[CaseResult]:
    results = []
    for i in range(items):
        subject = "a" if i % 2 else "b"
        met = i % 3 != 0
        criterion = CriterionResult(
            "c", "any_of", "substance", 1.0, Verdict.MET if met else Verdict.UNMET, float(met), ""
        )
        nodeid = f"s.rubric.yaml::q{i // 2}[{subject}]"
        score = float(met)
        fields = (nodeid, "s", f"q{i // 2}", subject, score, score, 0.8, met, [criterion])
        results.append(CaseResult(*fields, 0.5, 0.5, 0.5))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--check", action="store_true", help="exit 1 over a target")
    args = parser.parse_args(argv)
    report = build_report(_results(args.items))
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "history.sqlite3"
        started = time.perf_counter()
        for _ in range(args.runs):
            append(path, report)
        filled = time.perf_counter() - started
        appends, reads = [], []
        for _ in range(args.repeat):
            t = time.perf_counter()
            append(path, report)
            appends.append(time.perf_counter() - t)
            t = time.perf_counter()
            lines = history_lines(read_runs(path, last=20))
            reads.append(time.perf_counter() - t)
        size = path.stat().st_size
    append_s, read_s = statistics.median(appends), statistics.median(reads)
    print(
        f"history: {args.runs} runs x {args.items} items filled in {filled:.1f}s "
        f"({size / 2**20:.0f} MiB); one more append {append_s * 1000:.0f} ms (target "
        f"< {APPEND_TARGET_S * 1000:.0f} ms); --last 20 read in {read_s * 1000:.0f} ms, "
        f"{len(lines)} rows (target < {READ_TARGET_S * 1000:.0f} ms)"
    )
    over = append_s >= APPEND_TARGET_S or read_s >= READ_TARGET_S
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
