"""Each statistical promise, simulated through the plugin's own code and printed beside it.

The promises of docs/explanation/statistics.md: suites whose true means are known
are drawn many times, and the figures the plugin prints are checked against the
truth. Everything goes through the functions a run uses: ``leaderboard`` (the
correctness interval, ``passed_ci``, tiers, ``detectable_drop``), ``gates.run_gates``
(the baseline gate, case and subject) and ``paired`` with
``_report.stats.paired_interval`` (tiers, pairwise). Each subject of a leaderboard is
one replication, so one call judges hundreds of them.

The families drawn:

* ``pass/fail``: one sample per case, passing with the true mean p (the hardest
  case for an interval: every case at 0 or 1);
* ``repeat 5``: each case has its own difficulty, drawn from Beta(2p, 2(1-p))
  (spread out: some cases nearly always pass, some nearly never), and five
  pass/fail samples; the case scores the mean of its samples (the gate's rows also
  draw difficulty spread wider, Beta(0.4, 0.1) and Beta(0.8, 0.2) at a mean of 0.8,
  most cases near 0 or 1, with five and three samples);
* ``4 criteria``: one sample, scored as the share of four criteria met.

Promises, as printed:

* coverage of the correctness interval: at least ``level - 0.05`` at every true
  mean, at least ``level - 0.02`` on average over true means, from n = 10;
  likewise the paired interval of two subjects' difference;
* a true drop of ``detectable_drop`` is caught by the gate 75-85 % of the time;
* two runs of an unchanged subject fail the gate at ``--rubric-gate-confidence C``
  at most ``1 - C`` of the time (case and subject gates together);
* two subjects of equal true correctness share a tier at least ``level - 0.02``
  of the time; along a chain of five, first and last share a tier only when
  their own paired interval contains 0.

Usage::

    .venv/bin/python bench/bench_promises.py [--quick] [--json PATH]

``make bench-stats`` runs it (a few minutes on two cores; ``--quick``, a
fifth of the replications, is a look rather than a measurement). Exit status 1
when a figure misses its promise.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_rubric._report import stats as _stats
from pytest_rubric._report.gates import Gates, run_gates
from pytest_rubric._report.leaderboard import leaderboard, paired
from pytest_rubric._results import CaseResult, CriterionResult, Sample, Verdict

MEANS = (0.02, 0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 0.98, 0.99)
MIN_SCORE = 0.5

_MET = [CriterionResult("c", "any_of", "substance", 1.0, Verdict.MET, 1.0, "")]
_UNMET = [CriterionResult("c", "any_of", "substance", 1.0, Verdict.UNMET, 0.0, "")]

Draw = Callable[[random.Random, float, int], list[list[float]]]


# --- suites: each case as its samples' scores -------------------------------------------------


def pass_fail(rng: random.Random, p: float, n: int) -> list[list[float]]:
    return [[1.0 if rng.random() < p else 0.0] for _ in range(n)]


def difficulties(rng: random.Random, p: float, n: int, weight: float = 2.0) -> list[float]:
    """Each case's own pass rate, mean p, spread out (Beta with a + b = ``weight``: the
    smaller, the wider, 0.5 putting most cases near 0 or 1)."""
    if p <= 0 or p >= 1:
        return [p] * n
    return [rng.betavariate(weight * p, weight * (1 - p)) for _ in range(n)]


def answers(rng: random.Random, rates: Sequence[float], k: int) -> list[list[float]]:
    return [[1.0 if rng.random() < r else 0.0 for _ in range(k)] for r in rates]


def repeat5(rng: random.Random, p: float, n: int) -> list[list[float]]:
    return answers(rng, difficulties(rng, p, n), 5)


def criteria4(rng: random.Random, p: float, n: int) -> list[list[float]]:
    return [[sum(rng.random() < p for _ in range(4)) / 4] for _ in range(n)]


FAMILIES: dict[str, tuple[Draw, int]] = {
    "pass/fail": (pass_fail, 1),
    "repeat 5": (repeat5, 5),
    "4 criteria": (criteria4, 1),
}


def results_of(subject: str, cases: Sequence[Sequence[float]]) -> list[CaseResult]:
    """CaseResults as a run makes them: a case's samples each pass at MIN_SCORE, the item
    by the mean rule."""
    out = []
    for i, scores in enumerate(cases):
        score = math.fsum(scores) / len(scores)
        samples = (
            [Sample(s, s, s >= MIN_SCORE, _MET if s >= MIN_SCORE else _UNMET) for s in scores]
            if len(scores) > 1
            else []
        )
        out.append(
            CaseResult(
                f"s.rubric.yaml::q{i:04}[{subject}]", "s", f"q{i:04}", subject, score, score,
                MIN_SCORE, score >= MIN_SCORE, _MET if score >= MIN_SCORE else _UNMET,
                0.5, 0.5, score, samples=samples,
            )
        )  # fmt: skip
    return out


# --- the simulations --------------------------------------------------------------------------


def coverage(family: str, n: int, level: float, reps: int, seed: int) -> dict[str, Any]:
    """Share of correctness intervals (leaderboard rows) holding the true mean, per mean."""
    draw, _ = FAMILIES[family]
    rng = random.Random(seed)
    by_mean = {}
    zero_width = 0
    for p in MEANS:
        results = []
        for r in range(reps):
            results += results_of(f"r{r}", draw(rng, p, n))
        rows = leaderboard(results, level=level)
        held = 0
        for row in rows:
            assert row.correctness_ci is not None
            lo, hi = row.correctness_ci
            held += lo <= p <= hi
            zero_width += lo == hi
        by_mean[p] = held / len(rows)
    return {"by_mean": by_mean, "zero_width": zero_width}


PAIRS = ((0.5, 0.5), (0.95, 0.95), (0.99, 0.95), (0.9, 0.8), (0.2, 0.02), (0.7, 0.5))


def pair_coverage(n: int, level: float, reps: int, seed: int) -> dict[str, Any]:
    """Share of paired intervals (what tiers and pairwise use) holding the true difference."""
    rng = random.Random(seed)
    by_pair = {}
    for a, b in PAIRS:
        held = 0
        for _ in range(reps):
            first = results_of("a", pass_fail(rng, a, n))
            second = results_of("b", pass_fail(rng, b, n))
            interval = _stats.paired_interval(paired(first, second), level)
            assert interval is not None
            held += interval[0] <= a - b <= interval[1]
        by_pair[f"{a:g}-{b:g}"] = held / reps
    return {"by_pair": by_pair}


def _dropped(rates: Sequence[float], drop: float) -> list[float]:
    """The rates lowered so their mean falls by ``drop`` exactly (each by the same amount,
    none below 0)."""
    lo, hi = 0.0, 1.0
    for _ in range(50):
        cut = (lo + hi) / 2
        if math.fsum(r - max(r - cut, 0.0) for r in rates) / len(rates) < drop:
            lo = cut
        else:
            hi = cut
    return [max(r - hi, 0.0) for r in rates]


def _failed_subjects(
    results: list[CaseResult], baseline: list[CaseResult], c: float | None
) -> set[str]:
    report = run_gates(results, Gates(baseline=baseline, gate_confidence=c))
    return {e.subject for e in report.entries if e.failed and e.subject is not None}


def gate(n: int, k: int, p: float, spread: float, c: float, reps: int, seed: int) -> dict[str, Any]:
    """Power at detectable_drop, and false alarms of two runs of an unchanged subject;
    ``spread`` the weight of the cases' difficulties (:func:`difficulties`), 0 for every
    case at ``p``."""
    rng = random.Random(seed)
    rates = {}
    base: list[CaseResult] = []
    same: list[CaseResult] = []
    for r in range(reps):
        subject = f"r{r}"
        rates[subject] = difficulties(rng, p, n, spread) if spread else [p] * n
        base += results_of(subject, answers(rng, rates[subject], k))
        same += results_of(subject, answers(rng, rates[subject], k))
    alarms = _failed_subjects(same, base, c)
    strict = _failed_subjects(same, base, None)
    drops = {row.subject: row.detectable_drop for row in leaderboard(base, gate_confidence=c)}
    down: list[CaseResult] = []
    tried = []
    for subject, drop in drops.items():
        truth = math.fsum(rates[subject]) / n
        if drop is None or drop >= truth:
            continue
        tried.append(subject)
        down += results_of(subject, answers(rng, _dropped(rates[subject], drop), k))
    caught = _failed_subjects(down, [r for r in base if r.subject in set(tried)], c)
    known = [d for d in drops.values() if d is not None]
    return {
        "false_alarm": len(alarms) / reps,
        "strict_false_alarm": len(strict) / reps,
        "power": len(caught) / len(tried) if tried else math.nan,
        "tried": len(tried),
        "drop": math.fsum(known) / len(known) if known else math.nan,
    }


def tiers(n: int, level: float, reps: int, seed: int) -> dict[str, Any]:
    """Equal subjects sharing a tier; a chain of five, first and last."""
    rng = random.Random(seed)
    shared = 0
    for _ in range(reps):
        rates = difficulties(rng, 0.8, n)
        results = results_of("a", answers(rng, rates, 1)) + results_of("b", answers(rng, rates, 1))
        rows = leaderboard(results, level=level)
        shared += rows[0].tier == rows[1].tier
    chain_shared = chain_resolved_shared = 0
    means = (0.9, 0.825, 0.75, 0.675, 0.6)
    for _ in range(reps):
        results = []
        for j, p in enumerate(means):
            results += results_of(f"s{j}", pass_fail(rng, p, n))
        rows = {row.subject: row for row in leaderboard(results, level=level)}
        together = rows["s0"].tier == rows["s4"].tier
        interval = _stats.paired_interval(
            paired(
                [r for r in results if r.subject == "s0"], [r for r in results if r.subject == "s4"]
            ),
            level,
        )
        chain_shared += together
        chain_resolved_shared += together and not _stats.contains_zero(interval)
    return {
        "equal_share": shared / reps,
        "chain_first_last_share": chain_shared / reps,
        "chain_shared_though_resolved": chain_resolved_shared / reps,
    }


# --- the run ----------------------------------------------------------------------------------


def _jobs(quick: bool) -> list[tuple[str, tuple[Any, ...]]]:
    scale = 5 if quick else 1
    jobs: list[tuple[str, tuple[Any, ...]]] = []
    seed = 0
    for family in FAMILIES:
        for n in (10, 30):
            for level in (0.95, 0.99):
                seed += 1
                jobs.append(("coverage", (family, n, level, 2000 // scale, seed)))
    for level in (0.8, 0.9):  # below the default, where Agresti-Coull alone dips
        seed += 1
        jobs.append(("coverage", (next(iter(FAMILIES)), 12, level, 2000 // scale, seed)))
    for n in (10, 30):
        seed += 1
        jobs.append(("pairs", (n, 0.95, 2000 // scale, seed)))
    for n, k, p, spread in (
        (30, 1, 0.5, 0), (30, 1, 0.8, 0), (30, 1, 0.95, 0), (100, 1, 0.8, 0),
        (30, 5, 0.5, 0), (30, 5, 0.8, 2), (30, 5, 0.95, 2), (100, 5, 0.8, 2),
        (30, 1, 0.8, 2), (10, 5, 0.8, 2),
    ):  # fmt: skip
        seed += 1
        jobs.append(("gate", (n, k, p, spread, 0.95, 1000 // scale, seed)))
    seed += 1
    jobs.append(("gate", (30, 5, 0.8, 2, 0.9, 1000 // scale, seed)))
    for n in (30, 100):
        seed += 1
        jobs.append(("tiers", (n, 0.95, 1000 // scale, seed)))
    # Below the default, last so the jobs above keep their seeds (and their figures).
    for n in (10, 13):
        seed += 1
        jobs.append(("pairs", (n, 0.8, 2000 // scale, seed)))
    seed += 1
    jobs.append(("tiers", (30, 0.8, 1000 // scale, seed)))
    # Difficulty spread wide (most cases near 0 or 1), with repeat: each case's own noise.
    for n, k, spread in ((10, 5, 0.5), (30, 5, 0.5), (30, 5, 1), (100, 5, 0.5), (30, 3, 0.5)):
        seed += 1
        jobs.append(("gate", (n, k, 0.8, spread, 0.95, 1000 // scale, seed)))
    return jobs


_RUN = {"coverage": coverage, "pairs": pair_coverage, "gate": gate, "tiers": tiers}


def _one(job: tuple[str, tuple[Any, ...]]) -> dict[str, Any]:
    kind, args = job
    return {"kind": kind, "args": list(args), **_RUN[kind](*args)}


def rows(found: Sequence[dict[str, Any]]) -> list[tuple[str, str, str, bool]]:
    """(what, measured, promise, kept) for each figure."""
    out = []
    for f in found:
        a = f["args"]
        if f["kind"] == "coverage":
            family, n, level = a[0], a[1], a[2]
            values = list(f["by_mean"].values())
            low = min(values)
            mean = math.fsum(values) / len(values)
            worst = min(f["by_mean"], key=f["by_mean"].get)
            out.append((
                f"coverage, {family}, n={n}, {level:g}",
                f"min {low:.3f} (at {worst:g}), mean {mean:.3f}, zero-width {f['zero_width']}",
                f">= {level - 0.05:.2f}, mean >= {level - 0.02:.2f}, none zero-width",
                low >= level - 0.05 and mean >= level - 0.02 and f["zero_width"] == 0,
            ))  # fmt: skip
        elif f["kind"] == "pairs":
            n, level = a[0], a[1]
            values = list(f["by_pair"].values())
            low, mean = min(values), math.fsum(values) / len(values)
            worst = min(f["by_pair"], key=f["by_pair"].get)
            out.append((
                f"paired coverage, pass/fail, n={n}, {level:g}",
                f"min {low:.3f} (at {worst}), mean {mean:.3f}",
                f">= {level - 0.05:.2f}, mean >= {level - 0.02:.2f}",
                low >= level - 0.05 and mean >= level - 0.02,
            ))  # fmt: skip
        elif f["kind"] == "gate":
            n, k, p, spread, c = a[:5]
            shape = f"Beta({spread * p:g},{spread * (1 - p):g})"
            spread_of = "" if not spread else ", spread" if spread == 2 else f", spread {shape}"
            what = f"n={n}, repeat {k}, mean {p:g}{spread_of}, C={c:g}"
            out.append((
                f"power at detectable_drop, {what}",
                f"{f['power']:.3f} (drop {f['drop']:.3f}, {f['tried']} subjects)",
                "0.75-0.85",
                0.75 <= f["power"] <= 0.85,
            ))  # fmt: skip
            out.append((
                f"false alarm, unchanged, {what}",
                f"{f['false_alarm']:.3f} (strict gate: {f['strict_false_alarm']:.3f})",
                f"<= {1 - c:.2f}",
                f["false_alarm"] <= 1 - c,
            ))  # fmt: skip
        else:
            n, level = a[0], a[1]
            out.append((
                f"equal subjects share a tier, n={n}, {level:g}",
                f"{f['equal_share']:.3f}",
                f">= {level - 0.02:.2f}",
                f["equal_share"] >= level - 0.02,
            ))  # fmt: skip
            out.append((
                f"chain of five, first and last share a tier, n={n}, {level:g}",
                f"{f['chain_first_last_share']:.3f}, of them resolved: "
                f"{f['chain_shared_though_resolved']:.3f}",
                "resolved: 0",
                f["chain_shared_though_resolved"] == 0,
            ))  # fmt: skip
    return out


def table(found: Sequence[tuple[str, str, str, bool]]) -> str:
    header = ("promise", "measured", "target", "")
    cells = [header] + [(*row[:3], "ok" if row[3] else "MISSED") for row in found]
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)).rstrip() for cell in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run(*, quick: bool = False, workers: int = 2) -> list[dict[str, Any]]:
    jobs = _jobs(quick)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_one, jobs))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a fifth of the replications")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    found = run(quick=args.quick, workers=args.workers)
    figures = rows(found)
    print(table(figures))
    print(f"\n{time.perf_counter() - started:.0f}s in all{' (quick)' if args.quick else ''}")
    if args.json:
        args.json.write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")
    missed = [row[0] for row in figures if not row[3]]
    if missed:
        print(f"missed: {'; '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
