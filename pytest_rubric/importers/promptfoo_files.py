"""Files a promptfoo config names, read safely: its directory tree, YAML read as js-yaml
reads it (YAML 1.2) with the line of every place, and ``JSON.stringify``.

promptfoo reads ``file://`` references relative to the config. Here they are read
only inside the config's directory tree (a path that resolves outside it, through
``..``, an absolute path or a symlink, is not read), only as regular files, and a
reference that cannot be read is :class:`Unmappable`: listed, never taken as literal
text. A glob is walked here, not by :mod:`glob`: checked before any walking (no absolute
pattern, no ``..``, a start inside the tree), it never follows a symlink, and it stops
past :data:`MAX_WALKED` entries.

The whole import is bounded in total, whatever the number of tests or the size of their
vars: what it reads, and the tests, cases and text it makes, are spent from one
:class:`Quota` as they are made, and past a limit it stops (:class:`TooLarge`).
"""

from __future__ import annotations

import fnmatch
import functools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .._errors import RubricLoadError
from .._guards.limits import NotRegular, PlainNumber, read_text

FILE = "file://"
GLOB = re.compile(r"[*?\[]")
CODE = (".js", ".cjs", ".mjs", ".ts", ".cts", ".mts", ".py", ".rb")
MAX_WALKED = 100_000  # directory entries one glob may look at
# The text a whole import may make (read, rendered, written): no file read is larger.
MAX_TEXT = 256 * 1024 * 1024
# The tests and cases (each vars combination asked with each prompt) of the whole import,
# each counted before it is made.
MAX_CASES = 100_000


class Unmappable(ValueError):
    """No criterion keeps promptfoo's meaning; the message says why."""


class TooLarge(Exception):
    """The import passed its :class:`Quota`: it stops, and nothing is written."""


class Quota:
    """What the whole import may make, spent as it is made (see :data:`MAX_CASES`)."""

    def __init__(self) -> None:
        self.tests = self.cases = self.text = 0

    def spend(self, *, tests: int = 0, cases: int = 0, text: int = 0) -> None:
        """Count ``tests``, ``cases`` and ``text`` characters; raise :class:`TooLarge` past
        a limit."""
        self.tests += tests
        self.cases += cases
        self.text += text
        if self.tests > MAX_CASES:  # each test makes a case at least
            raise TooLarge(
                f"the import reads more than {MAX_CASES:,} tests (scenarios multiply their "
                "configs by their tests), more than a suite anyone runs"
            )
        if self.cases > MAX_CASES:
            raise TooLarge(
                f"the import makes more than {MAX_CASES:,} cases (each vars combination with "
                "each prompt), more than a suite anyone runs"
            )
        if self.text > MAX_TEXT:
            raise TooLarge(
                f"the import makes more than {MAX_TEXT // 2**20:,} MB of text (prompts "
                "rendered with their vars, values read from files), more than a suite holds"
            )

    def spend_on(self, value: Any) -> None:
        """Count the text ``value`` holds (its strings, in its lists and dicts) as made."""
        size, stack = 0, [value]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                size += len(item)
            elif isinstance(item, dict):
                stack += item.values()
            elif isinstance(item, list | tuple):
                stack += item
        self.spend(text=size)


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

    def __init__(self, config: Path, budget: Quota | None = None) -> None:
        self.config = config
        self.root = config.parent.resolve()
        self.budget = Quota() if budget is None else budget  # what is read is spent

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
            if not (found := self._glob(name, where, ref)):
                raise Unmappable(f"{ref} matches no file")
            return [self._inside(p, ref) for p in found]
        return [self._inside(where / name, ref)]

    def _glob(self, pattern: str, where: Path, ref: str) -> list[Path]:
        """The regular files under ``where`` that ``pattern`` matches (``*``, ``?``, ``[...]``
        within a name, ``**`` for any folders), sorted; no symlink is followed, no hidden name
        matched by a wildcard, and nothing outside the tree is ever looked at."""
        parts = [part for part in pattern.split("/") if part not in ("", ".")]
        if pattern.startswith("/") or ".." in parts or not where.is_relative_to(self.root):
            raise Unmappable(
                f"{ref} reaches outside the config's directory ({self.root}), which is all an "
                "import reads"
            )
        fixed = 0
        while fixed < len(parts) - 1 and not GLOB.search(parts[fixed]):
            fixed += 1
        start = where.joinpath(*parts[:fixed])
        for fixed_folder in (start, *start.parents):  # the fixed ones: real, in the tree
            if fixed_folder == where:
                break
            if fixed_folder.is_symlink():
                raise Unmappable(f"{ref} goes through the symlink {self.shown(fixed_folder)}")
        wanted = tuple(parts[fixed:])
        found: list[Path] = []
        walked = 0
        for folder, dirs, files in os.walk(start, followlinks=False):
            walked += len(dirs) + len(files)
            if walked > MAX_WALKED:
                raise Unmappable(
                    f"{ref} walks more than {MAX_WALKED:,} files and folders; name a narrower "
                    "folder or pattern"
                )
            here = Path(folder)
            relative = here.relative_to(start).parts
            # Only into real folders a match may lie under: a walk goes no deeper than it must.
            dirs[:] = [
                d
                for d in dirs
                if not (here / d).is_symlink() and _matches(wanted, (*relative, d), folder=True)
            ]
            for file in files:
                path = here / file
                if _matches(wanted, (*relative, file)) and not path.is_symlink():
                    found.append(path)
        return sorted(found)

    def path(self, ref: str) -> Path:
        found = self.paths(ref)
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
            if path.is_file() and path.stat().st_size > MAX_TEXT:
                raise Unmappable(f"{ref} is larger than {MAX_TEXT // 2**20:,} MB")
            text = read_text(path)
        except FileNotFoundError:
            raise Unmappable(f"{ref}: no such file") from None
        except NotRegular as exc:
            raise Unmappable(f"{ref} is {exc}, not a file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise Unmappable(f"{ref} cannot be read ({exc})") from None
        self.budget.spend(text=len(text))  # a file read for each test that names it counts
        return text

    def document(self, path: Path, ref: str) -> Parsed:
        """A YAML or JSON file, parsed as promptfoo's js-yaml would."""
        try:
            return parse_yaml(self.text(path, ref), path)
        except RubricLoadError as exc:
            raise Unmappable(
                f"{ref} is not valid YAML or JSON ({exc.problems[0].render()})"
            ) from None


def _matches(pattern: tuple[str, ...], path: tuple[str, ...], *, folder: bool = False) -> bool:
    """Whether the names of ``path`` match the parts of ``pattern`` (``**``: any folders);
    with ``folder``, whether ``path`` is a folder a match may lie under."""

    @functools.cache
    def match(i: int, j: int) -> bool:
        if j == len(path) and folder:
            return i < len(pattern)
        if i == len(pattern):
            return j == len(path)
        if pattern[i] == "**":
            return match(i + 1, j) or (
                j < len(path) and not path[j].startswith(".") and match(i, j + 1)
            )
        # One name against one part: a hidden name only when the part says so.
        return (
            j < len(path)
            and (pattern[i].startswith(".") or not path[j].startswith("."))
            and fnmatch.fnmatchcase(path[j], pattern[i])
            and match(i + 1, j + 1)
        )

    return match(0, 0)


def parse_yaml(text: str, path: Path) -> Parsed:
    """YAML (or JSON) as js-yaml reads it: YAML 1.2 booleans and numbers, with the limits of
    the plugin's own loader (nesting, aliases, keys given twice); raise ``RubricLoadError``."""
    from .._load.loader import _parse_yaml
    from .._load.locate import duplicate_problem

    parsed = _parse_yaml(text, path, node_tree=True)
    if parsed.duplicates:
        duplicate = duplicate_problem(
            parsed.duplicates[0], parsed.data, bare_list=False, json_file=path.suffix == ".json"
        )
        raise RubricLoadError(path, [duplicate])
    return Parsed(_yaml12(parsed.data, parsed.node), _lines(parsed.node))


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
        children = [(k.value, v) for k, v in node.value if k.value in data]
    elif isinstance(node, yaml.SequenceNode) and isinstance(data, list):
        children = list(zip(range(len(data)), node.value, strict=False))
    else:
        return data
    for key, child in children:
        if (
            isinstance(child, yaml.ScalarNode)
            and child.tag == "tag:yaml.org,2002:bool"
            # js-yaml reads YAML 1.2, where only true/false are booleans; PyYAML (1.1) also
            # reads yes/no/on/off.
            and child.value.lower() not in {"true", "false"}
        ):
            data[key] = child.value
        else:
            data[key] = _yaml12(data[key], child)
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
    separators = (",", ":") if indent is None else (",", ": ")
    return json.dumps(value, ensure_ascii=False, indent=indent, separators=separators)
