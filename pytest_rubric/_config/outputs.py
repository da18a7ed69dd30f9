"""Every output file of a run (or of ``merge``): one registry, each entry a renderer of the report.

A new format is a renderer of :class:`SessionReport` and one :class:`Output`
entry here: a run writes it to ``--rubric-<name> PATH`` (``_config.options`` makes
the flag from the entry), ``merge`` to ``--<name> PATH``. Renderers are named
by import path and imported when a file is written, so this module stays
light enough for ``pytest --help``.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._report.report import SessionReport


@dataclass(frozen=True, slots=True)
class Output:
    name: str  # run: --rubric-<name> PATH; merge: --<name> PATH
    # "module:function", a function of a SessionReport returning the text, or an iterable
    # of its parts (written one by one: a large report is never held whole as text)
    renderer: str
    run_help: str
    merge_help: str
    append_to: str | None = None  # an environment variable naming a file to append it to
    # "module:function": a boundary of the format's own, for a text whose structure the
    # whole-text one would break (CSV: cell by cell). None: ``outgoing`` on the whole text.
    own_boundary: str | None = None

    def boundary(self, text: str) -> str:
        """``text`` through the outgoing boundary (the format's own, when it has one)."""
        if self.own_boundary is None:
            from .._guards.outgoing import outgoing  # its patterns: only when a file is written

            return outgoing(text)
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


@dataclass(frozen=True, slots=True)
class Unwritten:
    """An output that could not be written: which (a flag, or the environment variable it
    is appended to), where, and the system's reason. The run's other outputs are written."""

    output: str  # "--rubric-html", "--html" (merge), "$GITHUB_STEP_SUMMARY", "--junitxml"
    path: str
    reason: str

    @property
    def line(self) -> str:
        from .._guards.outgoing import outgoing  # its patterns: only when there is a line

        return outgoing(f"cannot write {self.output} {self.path}: {self.reason}")


def _reason(exc: OSError, path: Path) -> str:
    """What the system said, without the errno number or a repeat of the path."""
    other = exc.filename is not None and Path(exc.filename) != path
    if other and isinstance(exc, FileExistsError | NotADirectoryError):
        return f"{exc.filename} is a file, not a folder"  # a parent on the way
    said = exc.strerror or type(exc).__name__
    return f"{said}: {exc.filename}" if other else said


def unwritable(path: Path) -> str | None:
    """Why a file at ``path`` cannot be written, or None when it can: a directory, a parent
    that cannot be made, a place the system refuses. Leaves no new file behind."""
    if path.is_dir():
        return os.strerror(errno.EISDIR)
    try:
        _no_fifo(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        existed = path.exists()
        with path.open("a", encoding="utf-8"):
            pass
        if not existed:
            path.unlink()
    except OSError as exc:
        return _reason(exc, path)
    return None


def _no_fifo(path: Path) -> None:
    """Raise :class:`OSError` when ``path`` is a FIFO: opened to write, it would wait for a
    reader forever (a device such as /dev/null is written as a file is)."""
    if path.is_fifo():
        raise OSError(errno.ENXIO, "a FIFO, which would wait for a reader", str(path))


def write_outputs(
    report: SessionReport,
    paths: Mapping[str, Path | None],
    *,
    environ: Mapping[str, str] = os.environ,
    flag: str = "--rubric-",
) -> list[Unwritten]:
    """Write each output whose name has a path in ``paths``; an output with ``append_to`` set
    in ``environ`` is appended there too, and only when the report has something to show.

    An output that cannot be written (a directory, a parent that cannot be made, a path the
    system refuses) is returned, named by its ``flag`` + name, and never stops the others.
    """
    unwritten: list[Unwritten] = []

    def guarded(what: str, path: Path, parts: Iterable[str], mode: str = "w") -> None:
        try:
            _no_fifo(path)
            if mode == "w":
                path.parent.mkdir(parents=True, exist_ok=True)
            with path.open(mode, encoding="utf-8") as out:
                out.writelines(parts)
        except OSError as exc:
            unwritten.append(Unwritten(what, str(path), _reason(exc, path)))

    for output in OUTPUTS:
        path = paths.get(output.name)
        to = output.append_to
        append = (environ.get(to) or None) if to is not None and report.shown else None
        if path is None and append is None:
            continue
        rendered = output.render(report)
        parts = (rendered,) if isinstance(rendered, str) else rendered
        # Each part through the boundary, whatever the renderer wrote: a part is whole
        # elements of its format (a JSON result, a CSV row), so no key spans two.
        if append is not None:
            text = "".join(output.boundary(part) for part in parts)
            if path is not None:
                guarded(flag + output.name, path, (text,))
            guarded(f"${output.append_to}", Path(append), (text, "\n"), "a")
        elif path is not None:
            guarded(flag + output.name, path, (output.boundary(part) for part in parts))
    return unwritten
