"""Every output file of a run (or of ``merge``): one registry, each entry a renderer of the report.

A new format is a renderer of :class:`SessionReport` and one :class:`Output`
entry here: a run writes it to ``--rubric-<name> PATH`` (``_options`` makes
the flag from the entry), ``merge`` to ``--<name> PATH``. Renderers are named
by import path and imported when a file is written, so this module stays
light enough for ``pytest --help``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._guards.outgoing import outgoing

if TYPE_CHECKING:
    from .._report.report import SessionReport

__all__ = ["OUTPUTS", "Output", "write_outputs"]


@dataclass(frozen=True, slots=True)
class Output:
    name: str  # run: --rubric-<name> PATH; merge: --<name> PATH
    renderer: str  # "module:function", a function of a SessionReport returning the text
    run_help: str
    merge_help: str
    append_to: str | None = None  # an environment variable naming a file to append it to
    # "module:function": a boundary of the format's own, for a text whose structure the
    # whole-text one would break (CSV: cell by cell). None: ``outgoing`` on the whole text.
    own_boundary: str | None = None

    def boundary(self, text: str) -> str:
        """``text`` through the outgoing boundary (the format's own, when it has one)."""
        if self.own_boundary is None:
            return outgoing(text)
        own: Callable[[str], str] = _function(self.own_boundary)
        return own(text)

    @property
    def render(self) -> Callable[[SessionReport], str]:
        renderer: Callable[[SessionReport], str] = _function(self.renderer)
        return renderer


def _function(name: str) -> Any:
    """The function named ``module:function`` (a dotted path), imported now."""
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module, __package__), function)


OUTPUTS: tuple[Output, ...] = (
    Output(
        "json",
        "pytest_rubric._render.json:render_json",
        "write every result and the leaderboard to PATH as JSON.",
        "write the merged document here",
    ),
    Output(
        "html",
        "pytest_rubric._render.html:render_html",
        "write a self-contained HTML report (scatter plot, leaderboard, every answer).",
        "write the HTML report here",
    ),
    Output(
        "markdown",
        "pytest_rubric._render.markdown:render_markdown",
        "write the leaderboard and failing cases as Markdown (also appended to "
        "$GITHUB_STEP_SUMMARY when set).",
        "write the Markdown summary here (also appended to $GITHUB_STEP_SUMMARY when set)",
        append_to="GITHUB_STEP_SUMMARY",
    ),
    Output(
        "csv",
        "pytest_rubric._render.csv:render_csv",
        "write one row per criterion result (each sample's when repeated) to PATH as CSV.",
        "write the CSV (one row per criterion result) here",
        own_boundary="pytest_rubric._render.csv:boundary",
    ),
)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def write_outputs(
    report: SessionReport,
    paths: Mapping[str, Path | None],
    *,
    environ: Mapping[str, str] = os.environ,
) -> None:
    """Write each output whose name has a path in ``paths``; an output with ``append_to`` set
    in ``environ`` is appended there too, and only when the report has something to show."""
    for output in OUTPUTS:
        path = paths.get(output.name)
        append = (environ.get(output.append_to) or None) if output.append_to else None
        if not report.shown:
            append = None
        if path is None and append is None:
            continue
        text = output.boundary(output.render(report))  # whatever the renderer wrote
        if path is not None:
            _write(path, text)
        if append is not None:
            with open(append, "a", encoding="utf-8") as summary:
                summary.write(text + "\n")
