"""What the importers share: located problems, and writing what they produce.

An importer either writes everything or nothing: it collects every problem in
its input first, and a single one stops it before any file is written, so a
half-converted suite never sits next to a complete one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .._errors import Problem
from .._schema import Suite

__all__ = ["ImportFailed", "Output", "is_number", "validated", "write"]


class ImportFailed(Exception):
    """The input cannot be imported; every problem found in it, each located."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__(self.render())

    def render(self) -> str:
        count = len(self.problems)
        head = f"{count} problem{'s' if count != 1 else ''} in the input; nothing was written"
        return "\n".join([head, *("  " + p.render() for p in self.problems)])


@dataclass
class Output:
    """What an import produces: files by path relative to the output folder, and notes."""

    rubrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    responses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # printed: what was not mapped, and why


def is_number(value: Any) -> bool:
    """A finite JSON or YAML number (a bool is not one)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def validated(name: str, data: dict[str, Any]) -> list[Problem]:
    """Problems the plugin itself would find loading ``data``: an importer's own check."""
    from pydantic import ValidationError

    from .._locate import problems_from_validation

    try:
        Suite.model_validate(data)
    except ValidationError as exc:
        return [
            Problem(f"the converted suite does not load: {p.render()}", path=name)
            for p in problems_from_validation(exc, data)
        ]
    return []


def write(output: Output, directory: Path) -> list[Path]:
    """Write ``output`` under ``directory``; the paths written."""
    written: list[Path] = []
    for relative, data in output.rubrics.items():
        written.append(_write(directory / relative, _yaml(data)))
    for relative, rows in output.responses.items():
        written.append(_write(directory / relative, _jsonl(rows)))
    return written


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


class _Dumper(yaml.SafeDumper):
    """Text of several lines as a literal block (``|``), as a person writes a prompt."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value.strip("\n") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def _yaml(data: dict[str, Any]) -> str:
    # Wide lines, keys in the order built, non-ASCII kept: a file a person can read and edit.
    text: str = yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
        default_flow_style=False,
    )
    return text


def _jsonl(rows: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
