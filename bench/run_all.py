"""Every benchmark in one run, and one table of ratios measured side by side (``make bench``).

Each row comes from a script in this directory, which times its two sides
alternately in the same run, so a noisy neighbour slows both:

* ``bench_items``: per rubric item against a parametrized pytest item;
* ``bench_judge``: a judged session against the concurrency floor
  ``ceil(K / C) x L`` (without and with xdist), and a warm judge cache
  against the offline run;
* ``bench_import``: pytest start-up with the plugin against without it, and a run of unit
  tests only in a project with ``rubric_dirs`` (with and without a bytecode cache);
* ``bench_memory``: the peak memory of N rubric items with every output on against N plain
  parametrized tests with JUnit (N = 20,000 and 200,000);
* ``bench_soak``: 2,000 judged criteria with 20 % injected faults;
* ``bench_stats``: the leaderboard's intervals and detectable drop over
  10,000 results, against a 2,000-resample bootstrap of the same;
* ``bench_traces``: 3,000 items whose answers carry traces of 10 tool calls each,
  against the same items without traces;
* ``bench_failures``: the failure report of N and 2N items, one in five failing.

The statistics' promises are not timings: ``bench_promises.py`` simulates
them (``make bench-stats``), apart from this table.

Exit status 1 when any row misses its target (the table says which), so a
regression cannot pass unnoticed. ``--quick`` runs fewer repeats and a
smaller soak, for a look rather than a measurement; ``--json PATH`` keeps
every script's full result.

Usage::

    .venv/bin/python bench/run_all.py [--quick] [--json bench.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_failures
import bench_import
import bench_items
import bench_judge
import bench_memory
import bench_soak
import bench_stats
import bench_traces

Row = tuple[str, str, str, str, str, bool]  # measure, measured, against, ratio, target, ok


def rows(
    items: Any,
    judge: Any,
    imports: Any,
    soak: Any,
    stats: Any,
    traces: Any,
    failures: Any,
    memory: list[Any],
) -> list[Row]:
    within = bench_judge.TARGET
    warm = bench_judge.WARM_TARGET
    floor = f"floor {judge['floor_s']:.2f}s"
    faults = sum(soak["faults"].values())
    return [
        (
            f"per rubric item, N={items['n']}",
            f"{items['rubric']['median_s']:.2f}s",
            f"parametrized {items['parametrized']['median_s']:.2f}s",
            f"{items['ratio']:.2f}",
            f"<= {bench_items.DEFAULT_TARGET:g}",
            items["ratio"] <= bench_items.DEFAULT_TARGET,
        ),
        (
            f"judged, K={judge['calls']} C={judge['concurrency']} L={judge['latency_s']:g}s",
            f"+{judge['added_s']:.2f}s",
            floor,
            f"{judge['ratio']:.2f}",
            f"<= {within:g}",
            judge["ratio"] <= within,
        ),
        (
            "judged, -n 2",
            f"+{judge['xdist_judged_s'] - judge['xdist_offline_s']:.2f}s",
            floor,
            f"{judge['xdist_ratio']:.2f}",
            f"<= {within:g}",
            judge["xdist_ratio"] <= within,
        ),
        (
            "warm judge cache",
            f"{judge['warm_s']:.2f}s",
            f"offline {judge['offline_s']:.2f}s",
            f"{judge['warm_ratio']:.2f}",
            f"<= {warm:g}",
            judge["warm_ratio"] <= warm,
        ),
        (
            "plugin import, pytest --version",
            f"{imports['version_added_ms']:+.0f} ms",
            f"bare {imports['version_without_ms']:.0f} ms",
            f"{imports['version_with_ms'] / imports['version_without_ms']:.2f}",
            f"<= +{bench_import.TARGET_MS:g} ms",
            imports["version_added_ms"] <= bench_import.TARGET_MS,
        ),
        (
            "plugin import, pytest -VV",
            f"{imports['vv_added_ms']:+.0f} ms",
            f"bare {imports['vv_without_ms']:.0f} ms",
            f"{imports['vv_with_ms'] / imports['vv_without_ms']:.2f}",
            f"<= +{bench_import.TARGET_MS:g} ms",
            imports["vv_added_ms"] <= bench_import.TARGET_MS,
        ),
        *(
            (
                f"unit tests only, rubric_dirs{label}",
                f"{imports[f'{key}_added_ms']:+.0f} ms",
                f"-p no:rubric {imports[f'{key}_without_ms']:.0f} ms",
                f"CPU {imports[f'{key}_cpu_added_ms']:+.0f} ms",
                f"<= +{bench_import.UNIT_TARGET_MS:g} ms",
                imports[f"{key}_added_ms"] <= bench_import.UNIT_TARGET_MS,
            )
            for label, key in (("", "unit"), (", no bytecode cache", "unit_uncached"))
        ),
        *(
            (
                f"peak memory, N={m['n']:,}, every output",
                f"{m['rubric_mb']:.0f} MB",
                f"plain + JUnit {m['plain_mb']:.0f} MB",
                f"{m['ratio']:.2f}",
                f"<= {bench_memory.TARGET:g}",
                m["ratio"] <= bench_memory.TARGET,
            )
            for m in memory
        ),
        (
            f"judge soak, {soak['criteria']} criteria",
            f"{soak['calls']} calls, {faults} faults",
            f"{soak['scripted']} scripted, {soak['errors']} ERROR",
            f"{soak['wrong']} wrong",
            "0 wrong",
            soak["wrong"] == 0 and soak["scripted"] + soak["errors"] == soak["criteria"],
        ),
        (
            "judge soak, outcomes",
            f"{soak['error_cases']} cases with ERROR",
            f"{soak['cases']} cases",
            f"{soak['error_passed'] + soak['wrong_outcomes']} passed wrongly",
            "0",
            soak["error_passed"] == 0 and soak["wrong_outcomes"] == 0,
        ),
        (
            "judge soak, time",
            f"{soak['seconds']:.1f}s",
            f"bound {soak['max_seconds']:g}s",
            f"{soak['seconds'] / soak['max_seconds']:.2f}",
            "<= 1",
            soak["seconds"] <= soak["max_seconds"],
        ),
        (
            f"intervals, {stats['cases']} results",
            f"{stats['closed_form_s']:.3f}s",
            f"bootstrap {stats['bootstrap_s']:.1f}s",
            f"{stats['closed_form_s'] / stats['bootstrap_s']:.3f}",
            f"< {bench_stats.TARGET_S:g}s",
            stats["closed_form_s"] < bench_stats.TARGET_S,
        ),
        (
            f"traces, N={traces['n']} x {traces['calls']} tool calls",
            f"{traces['traced']['median_s']:.2f}s",
            f"no traces {traces['plain']['median_s']:.2f}s",
            f"{traces['ratio']:.2f}",
            f"<= {bench_traces.TARGET:g}",
            traces["ratio"] <= bench_traces.TARGET,
        ),
        (
            f"failure report, --tb=line, N={2 * failures['n']}",
            f"{failures['kinds']['rubric --tb=line']['2n_s']:.2f}s",
            f"N={failures['n']} {failures['kinds']['rubric --tb=line']['n_s']:.2f}s",
            f"{failures['kinds']['rubric --tb=line']['growth']:.2f}",
            f"<= {bench_failures.LINEAR_TARGET:g}",
            failures["kinds"]["rubric --tb=line"]["growth"] <= bench_failures.LINEAR_TARGET,
        ),
    ]


def table(found: list[Row]) -> str:
    header = ("measure", "measured", "against", "ratio", "target", "")
    cells = [header] + [(*row[:5], "ok" if row[5] else "OVER") for row in found]
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)).rstrip() for cell in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, a smaller soak")
    parser.add_argument("--json", type=Path, help="write every script's full result here")
    args = parser.parse_args(argv)
    repeat = 2 if args.quick else 5
    started = time.perf_counter()
    print(
        f"pytest-rubric benchmarks: python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"{repeat} repeats per side{' (quick: a look, not a measurement)' if args.quick else ''}",
        flush=True,
    )
    print("  items ...", flush=True)
    items = bench_items.run(1000 if args.quick else bench_items.DEFAULT_N, repeat)
    print("  judge ...", flush=True)
    judge = bench_judge.run(repeat=repeat)
    print("  import ...", flush=True)
    imports = bench_import.run(repeat=7 if args.quick else 21)
    print("  soak ...", flush=True)
    soak = bench_soak.run(criteria=500 if args.quick else 2000)
    print("  intervals ...", flush=True)
    stats = bench_stats.run(repeat=repeat)
    print("  traces ...", flush=True)
    traces = bench_traces.run(1000 if args.quick else bench_traces.DEFAULT_N, repeat)
    print("  failures ...", flush=True)
    failures = bench_failures.run(1000 if args.quick else 2000, 1 if args.quick else 2)
    print("  memory ...", flush=True)
    memory = [bench_memory.run(n) for n in ((20_000,) if args.quick else bench_memory.DEFAULT_NS)]
    found = rows(items, judge, imports, soak, stats, traces, failures, memory)
    print()
    print(table(found))
    print(f"\n{time.perf_counter() - started:.0f}s in all")
    if args.json:
        results = {
            "items": items,
            "judge": judge,
            "import": imports,
            "soak": soak,
            "stats": stats,
            "traces": traces,
            "failures": failures,
            "memory": memory,
        }
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    missed = [row[0] for row in found if not row[5]]
    if missed:
        print(f"over target: {', '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
