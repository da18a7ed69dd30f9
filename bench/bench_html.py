"""The HTML report at scale: its size, the time Chromium takes to open it, and peak memory.

What is measured
----------------
A synthetic session of N items (four subjects, N / 4 cases, three criteria each, a
one-sentence response, about one answer in six failing; a baseline where one item in
twenty scored otherwise, so the "Changes since the baseline" section is there) goes
through ``build_report`` and every writer of ``_config.outputs.OUTPUTS`` (JSON, HTML,
Markdown, CSV), in a child process per N so each peak is its own:

- **html_mb**: the HTML report's size;
- **render_s**: the time ``render_html`` takes;
- **open_s**: headless Chromium opening the file and taking a 1000 x 1100 screenshot
  (start-up included; networking off as in the tests); skipped without Chromium;
- **peak_kb_per_item**: the child's peak RSS (``ru_maxrss``) less its RSS after the
  imports, divided by N: the results, the report and every output at once;
- with ``--trace``: ``tracemalloc`` peaks by stage (results, report, each writer), to
  say what dominates.

``--html-from REV`` renders with ``pytest_rubric/_render/html.py`` as it was at the git
revision REV (everything else as it is now), to set the figures side by side.

Usage::

    .venv/bin/python bench/bench_html.py [--n 20000 200000] [--html-from REV] [--trace]

A script that prints figures, never a timed test.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SUBJECTS = ("alpha", "bravo", "charlie", "delta")


def _rss_kb() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _results(n: int, *, seed: int, shift: float = 0.0) -> list[Any]:
    from pytest_rubric._results import CaseResult, CriterionResult, Verdict

    rng = random.Random(seed)
    out = []
    for i in range(n):
        case, subject = divmod(i, len(SUBJECTS))
        met = [rng.random() < 0.93 - shift for _ in range(3)]
        criteria = [
            CriterionResult(
                id=f"c{k}",
                type=("any_of", "number", "forbidden")[k],
                axis="substance",
                weight=1.0,
                verdict=Verdict.MET if ok else Verdict.UNMET,
                credit=1.0 if ok else 0.0,
                reason="found 'one day'" if ok else "none of 'one day', '1 day' found",
            )
            for k, ok in enumerate(met)
        ]
        score = sum(met) / 3
        fluency, confidence = rng.choice((0.4, 0.55, 0.7, 0.85)), rng.random()
        flags = ["confidently_wrong"] if confidence >= 0.7 and score < 0.5 else []
        out.append(
            CaseResult(
                nodeid=f"evals/bench.rubric.yaml::case{case:06d}[{SUBJECTS[subject]}]",
                suite="evals/bench.rubric.yaml",
                case=f"case{case:06d}",
                subject=SUBJECTS[subject],
                score=score,
                raw_score=score,
                min_score=0.8,
                passed=score >= 0.8,
                criteria=criteria,
                fluency=fluency,
                confidence=confidence,
                naive_score=(score + fluency) / 2,
                flags=flags,
                question=f"What is the horizon of VaR number {case}?",
                response="One day, at the stated confidence level, as a rule of thumb.",
            )
        )
    return out


def _render_html(html_from: str | None) -> Any:
    if html_from is None:
        from pytest_rubric._render.html import render_html

        return render_html
    source = subprocess.run(
        ["git", "show", f"{html_from}:pytest_rubric/_render/html.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "_html_then.py"
    path.write_text(source)
    # In the package's namespace, so its relative imports resolve to today's modules.
    spec = importlib.util.spec_from_file_location("pytest_rubric._render._html_then", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.render_html


def child(n: int, out: Path, html_from: str | None, trace: bool) -> dict[str, Any]:
    """One measurement, in this process: build, report, write every output."""
    from pytest_rubric._render.files import write_outputs
    from pytest_rubric._report.gates import Gates
    from pytest_rubric._report.report import build_report

    render_html = _render_html(html_from)
    start_rss = _rss_kb()
    stages: dict[str, float] = {}
    if trace:
        tracemalloc.start()

    def stage(name: str) -> None:
        if trace:
            _, peak = tracemalloc.get_traced_memory()
            stages[name] = peak / n
            tracemalloc.reset_peak()

    results = _results(n, seed=1)
    baseline = _results(n, seed=2, shift=0.02)
    stage("results and baseline")
    report = build_report(results, gates=Gates(baseline=baseline, baseline_name="baseline.json"))
    del baseline
    stage("build_report")
    figures: dict[str, Any] = {"n": n}
    for name in ("json", "csv", "markdown"):  # as a run writes them (JSON and CSV in parts)
        written = out.with_suffix(f".{name}")
        write_outputs(report, {name: written}, environ={})
        figures[f"{name}_mb"] = written.stat().st_size / 1e6
        stage(name)
    began = time.perf_counter()
    page = render_html(report)
    figures["render_s"] = time.perf_counter() - began
    stage("html")
    out.write_text(page, encoding="utf-8")
    figures["html_mb"] = len(page.encode()) / 1e6
    del page
    if trace:
        tracemalloc.stop()
        figures["traced_kb_per_item"] = {k: round(v / 1024, 2) for k, v in stages.items()}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    figures["peak_kb_per_item"] = (peak - start_rss) / n
    return figures


def open_time(page: Path) -> float | None:
    """Seconds for headless Chromium to open ``page`` and take a screenshot."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        return None
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--proxy-server=127.0.0.1:9",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--user-data-dir={page.parent / 'profile'}",
        "--window-size=1000,1100",
        f"--screenshot={page.parent / 'shot.png'}",
        page.as_uri(),
    ]
    began = time.perf_counter()
    subprocess.run(command, capture_output=True, timeout=900, check=False)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[20_000, 200_000])
    parser.add_argument("--html-from", metavar="REV", help="render with _render/html.py as at REV")
    parser.add_argument("--trace", action="store_true", help="tracemalloc peaks by stage")
    parser.add_argument("--no-browser", action="store_true", help="skip the open time")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.out, args.html_from, args.trace)))
        return
    rows = []
    for n in args.n:
        with tempfile.TemporaryDirectory() as tmp:
            page = Path(tmp) / "report.html"
            command = [sys.executable, __file__, "--child", str(n), "--out", str(page)]
            if args.html_from:
                command += ["--html-from", args.html_from]
            if args.trace:
                command.append("--trace")
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            figures = json.loads(done.stdout)
            figures["open_s"] = None if args.no_browser else open_time(page)
        rows.append(figures)
        opened = "-" if figures["open_s"] is None else f"{figures['open_s']:.1f}"
        print(
            f"N={n:>7,}  html {figures['html_mb']:6.1f} MB  render {figures['render_s']:5.1f} s  "
            f"open {opened:>5} s  peak {figures['peak_kb_per_item']:5.1f} KB/item  "
            f"(json {figures['json_mb']:.0f} MB, csv {figures['csv_mb']:.0f} MB, "
            f"markdown {figures['markdown_mb']:.1f} MB)",
            flush=True,
        )
        if "traced_kb_per_item" in figures:
            print("    tracemalloc peak KB/item by stage:", figures["traced_kb_per_item"])
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
