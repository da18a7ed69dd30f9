"""``python -m pytest_rubric history PATH``: one row per run of a ``--rubric-history`` file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._config.settings import positive_int
from .._report.history import HistoryError, read_runs, skipped_warning
from .._report.run import HistoryRun


def add_commands(commands: Any) -> None:
    cmd = commands.add_parser(
        "history",
        help="print the runs a --rubric-history file holds, one row per run",
        description="Print one row per run of a --rubric-history file, oldest first: its "
        "time, its commit and each subject's correctness with its interval; with --subject, "
        "the runs that graded it. Exit status 0, or 2 when the file cannot be read or no run "
        "graded the --subject given.",
    )
    cmd.add_argument("path", type=Path, metavar="PATH", help="the --rubric-history file")
    cmd.add_argument("--subject", metavar="S", help="only the runs that graded S, and only S")
    cmd.add_argument("--last", type=positive_int, metavar="N", help="only the last N runs")
    cmd.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    skipped: list[str] = []
    try:
        runs = read_runs(args.path, subject=args.subject, last=args.last, skipped=skipped)
    except HistoryError as exc:
        print(f"pytest-rubric history: error: {exc}", file=sys.stderr)
        return 2
    if skipped:
        warning = skipped_warning(args.path, skipped)
        print(f"pytest-rubric history: warning: {warning}", file=sys.stderr)
    print("\n".join(history_lines(runs)))
    return 0


def history_lines(runs: Sequence[HistoryRun]) -> list[str]:
    """The rows ``history`` prints: time, commit (12 characters), then each subject."""
    if not runs:
        return ["no run in this history"]
    lines = []
    for run in runs:
        cells = [
            f"{name} {value:.3f}"
            + (f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else "")
            for name, value, low, high in run.subjects
        ]
        commit = (run.git_commit or "-")[:12]
        lines.append(f"{run.started_at or '-':<20}  {commit:<12}  " + "   ".join(cells))
    return lines
