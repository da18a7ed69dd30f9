"""The ``--rubric-json`` document: written by a run, read back by ``merge`` and ``--rubric-baseline``.

Everything a report shows is computed from the results alone, so a document
read back (one run's, or several shards' merged) gives the same leaderboard
and the same verdicts as the run that wrote it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._report.document_format import VERSION, DocumentError
from .._report.report import SessionReport, build_report
from .._results import CaseResult

if TYPE_CHECKING:
    # Imported where used: building its pydantic models costs every pytest start
    # about 12 ms, and only a run with --rubric-baseline, or merge, reads a document.
    from .._report.document import Document

__all__ = [
    "VERSION",
    "DocumentError",
    "document",
    "json_chunks",
    "json_document",
    "load_document",
    "read_document",
    "render_json",
]


def document(report: SessionReport) -> dict[str, Any]:
    """The document of ``report``: which run it is, its results, its leaderboard, whether
    the ranks disagree, and every gate's outcome."""
    return {
        "version": VERSION,
        "run": report.run.to_dict() if report.run is not None else None,
        "results": [r.to_dict() for r in report.results],
        "leaderboard": [row.to_dict() for row in report.leaderboard],
        "rankings_disagree": report.rankings_disagree,
        "rankings_differ_within_noise": report.rankings_differ_within_noise,
        "confidence": report.level,
        "breakdowns": [b.to_dict() for b in report.breakdowns],
        "pairwise": [p.to_dict() for p in report.pairwise],
        "judge_audit": report.judge_audit.to_dict(),
        "gates": [entry.to_dict() for entry in report.gates.entries],
    }


def render_json(report: SessionReport) -> str:
    """The document as text: :func:`json_chunks` joined."""
    return "".join(json_chunks(report))


def json_chunks(report: SessionReport) -> Iterator[str]:
    """The document's text, a result at a time: what ``--rubric-json`` writes, byte for byte
    ``json.dumps(document, indent=2)``, without holding every result's dict and the whole
    text at once (at 200,000 results those were most of the run's memory)."""
    from .._guards.outgoing import outgoing_data  # the boundary every output passes

    whole = document(replace(report, results=()))  # every part but the results, in order
    keys = list(whole)
    at = keys.index("results")
    head = {k: whole[k] for k in keys[:at]}
    tail = {k: whole[k] for k in keys[at + 1 :]}
    yield json.dumps(outgoing_data(head), indent=2)[:-2] + ',\n  "results": ['
    for i, result in enumerate(report.results):
        text = json.dumps(outgoing_data(result.to_dict()), indent=2).replace("\n", "\n    ")
        yield ("," if i else "") + "\n    " + text
    end = "\n  ]" if report.results else "]"
    yield end + ",\n" + json.dumps(outgoing_data(tail), indent=2)[2:] + "\n"


def json_document(results: Iterable[CaseResult]) -> dict[str, Any]:
    """The document of ``results`` alone."""
    return document(build_report(results))


def load_document(path: Path) -> Document:
    """A ``--rubric-json`` file, validated field by field (see ``_report.document``); its leaderboard
    is recomputed and its ``passed`` verdicts too, neither is trusted."""
    if path.exists() and not path.is_file():
        # A directory, a FIFO or a device: reading it would fail, or never end.
        raise DocumentError(f"{path}: not a regular file; pass a file written by --rubric-json")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise DocumentError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise DocumentError(
            f"{path}: not JSON (not UTF-8 text: {exc.reason} at byte {exc.start}); pass a file "
            "written by --rubric-json"
        ) from None
    from .._report.document import parse_document

    return parse_document(text, name=str(path))


def read_document(path: Path) -> list[CaseResult]:
    """The results of a ``--rubric-json`` file (see :func:`load_document`)."""
    return load_document(path).results
