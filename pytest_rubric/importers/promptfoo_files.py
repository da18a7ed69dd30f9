"""Files a promptfoo config names, read safely: its directory tree, YAML read as js-yaml
reads it (YAML 1.2) with the line of every place, and ``JSON.stringify``.

promptfoo reads ``file://`` references relative to the config. Here they are read
only inside the config's directory tree (a path that resolves outside it, through
``..``, an absolute path or a symlink, is not read), only as regular files, and a
reference that cannot be read is :class:`~.promptfoo_match.Unmappable`: listed,
never taken as literal text. What is read from them, prompts and tests, is
:mod:`.promptfoo_prompts`' and :mod:`.promptfoo_read`'s.
"""

from __future__ import annotations

import glob as globbing
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .._errors import Problem, RubricLoadError
from .._guards.limits import NotRegular, PlainNumber, read_text
from .promptfoo_match import Unmappable

__all__ = [
    "CODE",
    "FILE",
    "GLOB",
    "Parsed",
    "Tree",
    "is_file_ref",
    "json_stringify",
    "parse_yaml",
]

FILE = "file://"
GLOB = re.compile(r"[*?\[]")
CODE = (".js", ".cjs", ".mjs", ".ts", ".cts", ".mts", ".py", ".rb")
# js-yaml reads YAML 1.2, where only true/false are booleans; PyYAML (1.1) also reads yes/no/on/off.
_YAML12_BOOLS = {"true", "false"}
_BOOL_TAG = "tag:yaml.org,2002:bool"


def is_file_ref(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(FILE)


@dataclass
class Parsed:
    """A YAML or JSON document and the line of each place in it."""

    data: Any
    lines: dict[tuple[Any, ...], int]

    def line(self, where: tuple[Any, ...]) -> int | None:
        while where and where not in self.lines:
            where = where[:-1]
        return self.lines.get(where)


class Tree:
    """The config's directory: the only place its ``file://`` references are read from."""

    def __init__(self, config: Path) -> None:
        self.config = config
        self.root = config.parent.resolve()

    def shown(self, path: Path) -> str:
        """A path as messages show it: next to the config's, as the user named that one."""
        try:
            return str(self.config.parent / path.resolve().relative_to(self.root))
        except ValueError:
            return str(path)

    def paths(self, ref: str, *, base: Path | None = None) -> list[Path]:
        """The files ``ref`` names (a path or a glob, ``file://`` or not), sorted; raise
        :class:`Unmappable` when it names none inside the tree."""
        name = ref.removeprefix(FILE)
        where = (base or self.root).resolve()
        if GLOB.search(name):
            found = [
                Path(p)
                for p in sorted(globbing.glob(name, root_dir=where, recursive=True))
                if not Path(p).name.startswith(".")
            ]
            if not found:
                raise Unmappable(f"{ref} matches no file")
            return [self._inside(where / p, ref) for p in found]
        return [self._inside(where / name, ref)]

    def path(self, ref: str, *, base: Path | None = None) -> Path:
        found = self.paths(ref, base=base)
        if len(found) != 1:
            raise Unmappable(f"{ref} names {len(found)} files where promptfoo reads one")
        return found[0]

    def _inside(self, path: Path, ref: str) -> Path:
        resolved = path.resolve()
        if not resolved.is_relative_to(self.root):
            raise Unmappable(
                f"{ref} is outside the config's directory ({self.root}), which is all an "
                "import reads"
            )
        return resolved

    def text(self, path: Path, ref: str) -> str:
        try:
            return read_text(path)
        except FileNotFoundError:
            raise Unmappable(f"{ref}: no such file") from None
        except NotRegular as exc:
            raise Unmappable(f"{ref} is {exc}, not a file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise Unmappable(f"{ref} cannot be read ({exc})") from None

    def document(self, path: Path, ref: str) -> Parsed:
        """A YAML or JSON file, parsed as promptfoo's js-yaml would."""
        try:
            return parse_yaml(self.text(path, ref), path)
        except RubricLoadError as exc:
            raise Unmappable(
                f"{ref} is not valid YAML or JSON ({exc.problems[0].render()})"
            ) from None


def parse_yaml(text: str, path: Path) -> Parsed:
    """YAML (or JSON) as js-yaml reads it: YAML 1.2 booleans and numbers, with the limits of
    the plugin's own loader (nesting, aliases, keys given twice); raise ``RubricLoadError``."""
    from .._load.loader import _parse_yaml

    parsed = _parse_yaml(text, path, node_tree=True)
    if parsed.duplicates:
        dup = parsed.duplicates[0]
        raise RubricLoadError(
            path,
            [
                Problem(
                    f"key {dup.key!r} is given twice"
                    + (f" (lines {dup.lines[0]} and {dup.lines[1]})" if dup.lines else ""),
                    line=dup.lines[1] if dup.lines else None,
                    hint="keep one",
                )
            ],
        )
    data = _yaml12(parsed.data, parsed.node)
    return Parsed(data, _lines(parsed.node))


def _yaml12(data: Any, node: Any) -> Any:
    """``yes``/``no``/``on``/``off`` back to the text they are in YAML 1.2, and plain numbers
    PyYAML leaves as text (``1e-3``) to numbers."""
    if isinstance(data, PlainNumber):
        number = float(data)
        return (
            int(number)
            if number.is_integer() and "." not in data and "e" not in data.lower()
            else number
        )
    if isinstance(node, yaml.MappingNode) and isinstance(data, dict):
        for key_node, value_node in node.value:
            key = key_node.value
            if key in data:
                if (
                    isinstance(value_node, yaml.ScalarNode)
                    and value_node.tag == _BOOL_TAG
                    and value_node.value.lower() not in _YAML12_BOOLS
                ):
                    data[key] = value_node.value
                else:
                    data[key] = _yaml12(data[key], value_node)
    elif isinstance(node, yaml.SequenceNode) and isinstance(data, list):
        for i, (item, item_node) in enumerate(zip(data, node.value, strict=False)):
            if (
                isinstance(item_node, yaml.ScalarNode)
                and item_node.tag == _BOOL_TAG
                and item_node.value.lower() not in _YAML12_BOOLS
            ):
                data[i] = item_node.value
            else:
                data[i] = _yaml12(item, item_node)
    return data


def _lines(root: Any) -> dict[tuple[Any, ...], int]:
    found: dict[tuple[Any, ...], int] = {}
    stack: list[tuple[Any, tuple[Any, ...]]] = [(root, ())] if root is not None else []
    seen: set[int] = set()
    while stack:
        node, where = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        found.setdefault(where, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            stack += [(v, (*where, k.value)) for k, v in node.value]
        elif isinstance(node, yaml.SequenceNode):
            stack += [(v, (*where, i)) for i, v in enumerate(node.value)]
    return found


def json_stringify(value: Any, indent: int | None = None) -> str:
    """``JSON.stringify(value, null, indent)``."""
    if indent is None:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(value, ensure_ascii=False, indent=indent)
