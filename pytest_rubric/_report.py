"""The ``--rubric-json`` document: written by a run, read back by ``merge`` and ``--rubric-baseline``.

Everything a report shows is computed from the results alone, so a document
read back (one run's, or several shards' merged) gives the same leaderboard
and the same verdicts as the run that wrote it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ._result import CaseResult
from ._summary import leaderboard, rankings_disagree

__all__ = ["VERSION", "DocumentError", "json_document", "read_document", "write_json"]

VERSION = 1


class DocumentError(Exception):
    """A file that is not a readable ``--rubric-json`` document; the message names it."""


def json_document(results: Iterable[CaseResult]) -> dict[str, Any]:
    """The document of ``results``. Results are in node id order, so the document is the
    same however the run was split (xdist workers, merged shards)."""
    ordered = sorted(results, key=lambda r: r.nodeid)
    rows = leaderboard(ordered)
    return {
        "version": VERSION,
        "results": [r.to_dict() for r in ordered],
        "leaderboard": [row.to_dict() for row in rows],
        "rankings_disagree": rankings_disagree(rows),
    }


def write_json(path: Path, results: Sequence[CaseResult]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(json_document(results), indent=2) + "\n", encoding="utf-8")


def read_document(path: Path) -> list[CaseResult]:
    """The results of a ``--rubric-json`` file (its leaderboard is recomputed, not trusted)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DocumentError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise DocumentError(
            f"{path}: not JSON ({exc}); pass a file written by --rubric-json"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise DocumentError(
            f'{path}: not a --rubric-json document (no "results" list); pass a file written by '
            "--rubric-json"
        )
    if data.get("version") != VERSION:
        raise DocumentError(
            f"{path}: version {data.get('version')!r} is not {VERSION}; write it again with this "
            "pytest-rubric"
        )
    results = []
    for index, entry in enumerate(data["results"]):
        try:
            results.append(CaseResult.from_dict(entry))
        except (KeyError, TypeError, ValueError) as exc:
            raise DocumentError(
                f"{path}: results[{index}] is not a result ({type(exc).__name__}: {exc})"
            ) from None
    return results
