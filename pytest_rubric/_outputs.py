"""Every output file of a run (or of ``merge``), written from the results and the gates."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ._gates import GateReport
from ._html import html_report
from ._markdown import markdown_report
from ._report import write_json
from ._result import CaseResult
from ._style import StyleThresholds

__all__ = ["write_outputs"]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def write_outputs(
    results: Sequence[CaseResult],
    gates: GateReport,
    *,
    json_path: Path | None = None,
    html_path: Path | None = None,
    markdown_path: Path | None = None,
    step_summary: str | None = None,
    thresholds: StyleThresholds | None = None,
) -> None:
    """Write the requested files. ``step_summary`` (``$GITHUB_STEP_SUMMARY``) is appended
    to, and only when there is something to show.

    Results go out in node id order, as in the JSON: every output is then the
    same however the run was split (xdist workers, merged shards)."""
    results = sorted(results, key=lambda r: r.nodeid)
    if json_path is not None:
        write_json(json_path, results)
    if html_path is not None:
        _write(html_path, html_report(results, gates=gates, thresholds=thresholds))
    if markdown_path is not None or (step_summary and (results or gates.active)):
        markdown = markdown_report(results, gates=gates)
        if markdown_path is not None:
            _write(markdown_path, markdown)
        if step_summary and (results or gates.active):
            with open(step_summary, "a", encoding="utf-8") as summary:
                summary.write(markdown + "\n")
