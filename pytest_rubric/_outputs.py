"""Every output file of a run (or of ``merge``): one registry, each entry a renderer of the report.

A new format is a renderer of :class:`SessionReport`, one :class:`Output`
entry here and one flag in ``_options.OUTPUT_OPTIONS`` (same name): a run
writes it to ``--rubric-<name> PATH``, ``merge`` to ``--<name> PATH``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ._html import render_html
from ._markdown import render_markdown
from ._report import render_json
from ._session_report import SessionReport

__all__ = ["OUTPUTS", "Output", "write_outputs"]


@dataclass(frozen=True, slots=True)
class Output:
    name: str  # run: --rubric-<name> PATH; merge: --<name> PATH
    render: Callable[[SessionReport], str]
    merge_help: str
    append_to: str | None = None  # an environment variable naming a file to append it to


OUTPUTS: tuple[Output, ...] = (
    Output("json", render_json, "write the merged document here"),
    Output("html", render_html, "write the HTML report here"),
    Output(
        "markdown",
        render_markdown,
        "write the Markdown summary here (also appended to $GITHUB_STEP_SUMMARY when set)",
        append_to="GITHUB_STEP_SUMMARY",
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
        text = output.render(report)
        if path is not None:
            _write(path, text)
        if append is not None:
            with open(append, "a", encoding="utf-8") as summary:
                summary.write(text + "\n")
