"""Every output file of a run (or of ``merge``): one registry, each entry a renderer of the report.

A new format is a renderer of :class:`SessionReport` and one :class:`Output`
entry here: a run writes it to ``--rubric-<name> PATH`` (``_config.settings`` makes
the flag from the entry), ``merge`` to ``--<name> PATH``; ``_render.files`` writes them.
Renderers are named by import path and imported when a file is written, so this module
stays light enough for every pytest run's start-up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._report.report import SessionReport


@dataclass(frozen=True, slots=True)
class Output:
    """One output format: its flags (a run's and ``merge``'s), its renderer and its boundary."""

    name: str  # run: --rubric-<name> PATH; merge: --<name> PATH
    # "module:function", a function of a SessionReport returning the text, or an iterable
    # of its parts (written one by one: a large report is never held whole as text)
    renderer: str
    run_help: str
    merge_help: str
    append_to: str | None = None  # an environment variable naming a file to append it to
    # "module:function": the outgoing boundary, on the whole text unless the format has its
    # own for a text whose structure the whole-text one would break (CSV: cell by cell).
    own_boundary: str = "pytest_rubric._guards.outgoing:outgoing"

    def boundary(self, text: str) -> str:
        """``text`` through the outgoing boundary (the format's own, when it has one), imported
        only when a file is written."""
        from .._guards.calls import resolve_import

        own: Callable[[str], str] = resolve_import(self.own_boundary)
        return own(text)

    @property
    def render(self) -> Callable[[SessionReport], str | Iterable[str]]:
        from .._guards.calls import resolve_import

        renderer: Callable[[SessionReport], str | Iterable[str]] = resolve_import(self.renderer)
        return renderer


OUTPUTS: tuple[Output, ...] = (
    Output(
        "json",
        "pytest_rubric._report.document:json_chunks",
        "write every result and the leaderboard to PATH as JSON.",
        "write the merged document here",
        own_boundary="pytest_rubric._report.document:boundary",
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
        "pytest_rubric._render.csv:csv_chunks",
        "write one row per criterion result (each sample's when repeated) to PATH as CSV.",
        "write the CSV (one row per criterion result) here",
        own_boundary="pytest_rubric._render.csv:boundary",
    ),
)
