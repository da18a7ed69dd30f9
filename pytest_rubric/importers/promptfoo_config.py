"""One promptfoo config's conversion as the steps share it: the config's file, tree and
parsed lines, its assertion templates, the problems found (input promptfoo itself would
refuse), the notes for the user (what is not mapped, and why) and the counts the summary
note gives. The steps that read tests (:mod:`.promptfoo_merge`) and write cases
(:mod:`.promptfoo_cases`) report through one :class:`Conversion`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import Problem
from .promptfoo_files import Budget
from .promptfoo_read import Parsed, Tree

__all__ = ["Conversion", "Stats", "shown_value", "var_names"]


@dataclass
class Stats:
    """The counts of the conversion's closing note: tests read, written, cases, listed."""

    tests: int = 0
    written: int = 0
    cases: int = 0
    listed: int = 0


class Conversion:
    """One config's conversion: where it is read from, its problems (input promptfoo refuses),
    its notes and its counts. Every step of the conversion reports through it."""

    def __init__(
        self, path: Path, problems: list[Problem], notes: list[str], budget: Budget
    ) -> None:
        self.path, self.problems, self.notes = path, problems, notes
        self.budget = budget  # the whole import's, shared by every config
        self.tree = Tree(path, budget)
        self.parsed = Parsed(None, {})
        self.templates: dict[str, Any] = {}
        self.stats = Stats()
        self._seen: set[str] = set(notes)

    def problem(
        self, message: str, where: tuple[Any, ...], hint: str | None = None, **kw: Any
    ) -> None:
        found = Problem(message, line=self.parsed.line(where), path=self.path, hint=hint, **kw)
        if found not in self.problems:  # defaultTest's are met once per test
            self.problems.append(found)

    def note(self, text: str) -> None:
        if text not in self._seen:
            self._seen.add(text)
            self.notes.append(text)

    def unmapped(self, where: str, what: str, why: str) -> None:
        self.note(f"not mapped: {where}: {what}: {why}")

    def at(self, where: tuple[Any, ...]) -> str:
        line = self.parsed.line(where)
        return f"{self.path}:{line}" if line else str(self.path)

    def skip(self, where: str, label: str, why: str) -> None:
        self.stats.listed += 1
        self.unmapped(where, label, f"{why}; the test is not written")


def var_names(names: set[str]) -> str:
    """Template variables as a message names them: ``{{ a }}, {{ b }}``."""
    return ", ".join(f"{{{{ {n} }}}}" for n in sorted(names))


def shown_value(value: Any) -> str:
    """A value as a message quotes it: on one line, cut to 60 characters."""
    text = value if isinstance(value, str) else repr(value)
    text = text.replace("\n", " ")
    return repr(text if len(text) <= 60 else text[:57] + "...")
