"""What the importers share: located problems, and writing what they produce, all of it
or nothing, so a half-converted suite never sits next to a complete one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .._errors import Problem
from .._load.locate import Locator, validation_problems
from .._render.files import unwritable
from .._schema import Suite


class ImportFailed(Exception):
    """The input cannot be imported; every problem found in it, each located."""

    def __init__(self, problems: Sequence[Problem], *, where: str = "in the input") -> None:
        self.problems = list(problems)
        count = len(self.problems)
        head = f"{count} problem{'s' if count != 1 else ''} {where}; nothing was written"
        super().__init__("\n".join([head, *("  " + p.render() for p in self.problems)]))


@dataclass
class Imported:
    """What an import produces: files by path relative to the output folder, and notes."""

    rubrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    responses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # printed: what was not mapped, and why


def is_number(value: Any) -> bool:
    """A finite JSON or YAML number that a float holds (a bool is not one, nor an integer
    of 400 digits: past 1.8e308 a float is infinite)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def validated(name: str, data: dict[str, Any]) -> list[Problem]:
    """Problems the plugin itself would find loading ``data``: an importer's own check."""
    try:
        Suite.model_validate(data)
    except ValidationError as exc:
        return [
            Problem(f"the converted suite does not load: {p.render()}", path=name)
            for p in validation_problems(exc, data, Locator("", None, bare_list=False))
        ]
    return []


def write(output: Imported, directory: Path, *, force: bool = False) -> list[Path]:
    """Write ``output`` under ``directory``; the paths written. Raise :class:`ImportFailed`,
    writing nothing, when a path would leave ``directory`` or, without ``force``, names a
    file that exists."""
    files = [(directory / name, _yaml(data)) for name, data in output.rubrics.items()]
    files += [(directory / name, _jsonl(rows)) for name, rows in output.responses.items()]
    root = directory.resolve()
    problems = []
    for path, _ in files:
        if not path.resolve().is_relative_to(root):
            why = f"would be written outside --out {directory}"
            hint = "name it without a path separator or '..'"
        elif (path.exists() or path.is_symlink()) and not force:
            why, hint = "already exists", "pass --force to overwrite it, or choose another --out"
        elif (unwritten := unwritable(path)) is not None:  # before any file is written
            why, hint = f"cannot be written: {unwritten}", "choose another --out"
        else:
            continue
        problems.append(Problem(why, path=path, hint=hint))
    if problems:
        raise ImportFailed(problems, where="in the output")
    for path, text in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return [path for path, _ in files]


class _Dumper(yaml.SafeDumper):
    """Text of several lines as a literal block (``|``), as a person writes a prompt; a value
    two cases share written out in each, never as ``&id001`` and ``*id001``."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value.strip("\n") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def _yaml(data: dict[str, Any]) -> str:
    # Wide lines, keys in the order built, non-ASCII kept: a file a person can read and edit.
    return str(yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100))


def _jsonl(rows: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
