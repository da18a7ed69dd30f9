"""The response folders of a session (``responses:`` in a file, ``--rubric-responses``): each
read once and shared by every rubric file, and what none of the collected cases used."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .._errors import Problem
from .._guards.outgoing import warn
from .xdist import Role

if TYPE_CHECKING:
    from .._load.responses import ResponseFile

__all__ = [
    "ResponseDir",
    "ResponseDirs",
    "no_response",
]


@dataclass(slots=True)
class ResponseDir:
    files: list[ResponseFile]
    problems: list[Problem]
    used: set[tuple[str, str]] = field(default_factory=set)  # (subject, case id)


class ResponseDirs:
    """Every response folder the session has read, by path."""

    def __init__(self, config: pytest.Config, role: Role) -> None:
        self.config = config
        self._role = role
        self._dirs: dict[Path, ResponseDir] = {}

    def get(self, directory: Path) -> ResponseDir:
        """The subject files of ``directory``, read on first use and shared by every rubric file."""
        cached = self._dirs.get(directory)
        if cached is None:
            if directory.is_dir():
                from .._load.responses import load_response_dir

                files, problems = load_response_dir(directory)
            else:
                files, problems = (
                    [],
                    [
                        Problem(
                            f"responses folder {str(directory)!r} does not exist",
                            hint="create it with one <subject>.jsonl per subject, or fix the path",
                        )
                    ],
                )
            cached = self._dirs[directory] = ResponseDir(files, problems)
        return cached

    def global_dir(self, directory: Path | None) -> ResponseDir | None:
        """``--rubric-responses DIR``; its problems stop the run before collection."""
        if directory is None:
            return None
        loaded = self.get(directory)
        if loaded.problems:
            raise pytest.UsageError(
                "--rubric-responses: cannot use the responses:\n"
                + "\n".join("  " + p.render() for p in loaded.problems)
            )
        return loaded

    def warn_unused(self) -> None:
        """Report responses that matched no collected case, so none is silently dropped.

        Every xdist worker collects the same cases: only the first one warns. What was used
        is not needed after this (collection is over), and goes.
        """
        try:
            self._warn_unused()
        finally:
            for loaded in self._dirs.values():
                loaded.used = set()

    def _warn_unused(self) -> None:
        if not self._role.first:
            return
        if self._narrowed():
            return  # the other cases exist; this run just did not ask for them
        here = self.config.invocation_params.dir
        for loaded in self._dirs.values():
            for response_file in loaded.files:
                for case_id, (_, line) in response_file.entries.items():
                    if (response_file.subject, case_id) not in loaded.used:
                        # Where, in the text: pytest would echo the line (a key, 30 MB).
                        shown = os.path.relpath(response_file.path, here)
                        warn(
                            f"the response of subject {response_file.subject!r} for case "
                            f"{case_id!r} matches no collected case; fix its id or remove the line",
                            where=f"{shown}:{line}",
                        )

    def _narrowed(self) -> bool:
        """The run collects only part of the suite: files or node ids named, -k, -m, --deselect.

        Then a response whose case was not collected is expected (a CI shard,
        a single file run by hand) and is not worth a warning.
        """
        option = self.config.option
        if getattr(option, "keyword", "") or getattr(option, "markexpr", ""):
            return True
        if getattr(option, "deselect", None):
            return True
        here = self.config.invocation_params.dir
        return any("::" in arg or (here / arg).is_file() for arg in self.config.args)


def no_response(case_id: str, dirs: Sequence[ResponseDir]) -> str:
    """Why a case has nothing to grade, and what to write, knowing which folders were read."""
    if not dirs:
        return (
            f"case {case_id!r} has no response to grade: give it `response:`, "
            "`responses: {subject: ...}` or `target:`, set `responses:` in the file, "
            "or pass --rubric-responses DIR / --rubric-target"
        )
    subjects = sorted({f.subject for d in dirs for f in d.files})
    held = (
        f"it holds {len(subjects)} subject file(s) ({', '.join(subjects[:5])}"
        + (", ..." if len(subjects) > 5 else "")
        + ")"
        if subjects
        else "it holds no <subject>.jsonl file"
    )
    return (
        f"case {case_id!r} has no response to grade: no subject in the responses folder answers "
        f'it ({held}); add a line {{"id": "{case_id}", "response": "..."}} to '
        "a <subject>.jsonl file there"
    )
