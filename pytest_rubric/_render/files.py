"""The output files of a run (or of ``merge``): each output of ``_config.outputs.OUTPUTS``
rendered, through its boundary, and written; and why a path cannot be written, which a run
reports and never stops for.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .._config.outputs import OUTPUTS
from .._guards.outgoing import outgoing

if TYPE_CHECKING:
    from .._report.report import SessionReport


@dataclass(frozen=True, slots=True)
class Unwritten:
    """An output that could not be written: which (a flag, or the environment variable it
    is appended to), where, and the system's reason. The run's other outputs are written."""

    output: str  # "--rubric-html", "--html" (merge), "$GITHUB_STEP_SUMMARY", "--junitxml"
    path: str
    reason: str

    @property
    def line(self) -> str:
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
