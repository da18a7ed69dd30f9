"""Reading files and JSON within limits: what a hostile file cannot do to a reader.

Only regular files are read; JSON nests at most :data:`MAX_NESTING` levels, a number
Python cannot read is a problem, and a key given twice is reported (the YAML side is
:mod:`.yaml`). JSONL files have one reader, :func:`read_jsonl`.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .._errors import Problem
from .secrets import known_keys, redact, whole_characters

# Levels of lists and mappings inside each other; a rubric file needs about
# eight (a JSON schema inside a criterion a few more). Deeper input exhausts
# the interpreter's stack in json.loads, pydantic or a report writer.
MAX_NESTING = 100


# --- reading files ------------------------------------------------------------------------------


class NotRegular(Exception):
    """The path is a FIFO, a device, a directory...: reading it could block or never end."""


_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _check_regular(mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise NotRegular(next((kind for test, kind in _FILE_KINDS if test(mode)), "not a file"))


def read_text(path: Path) -> str:
    """The text of a regular file: UTF-8, a leading BOM dropped, newlines made ``\\n``. A FIFO
    would block and /dev/zero fill memory: the type is checked before and after opening."""
    _check_regular(os.stat(path).st_mode)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    descriptor = os.open(path, flags)
    try:
        _check_regular(os.fstat(descriptor).st_mode)
        stream = open(descriptor, encoding="utf-8-sig")  # noqa: SIM115 (closed below)
    except BaseException:
        os.close(descriptor)
        raise
    with stream:
        return stream.read()


# --- limits on what a file may hold ------------------------------------------------------------


class Limit(Exception):
    """The file holds something no rubric needs and that would not load safely."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def nesting_problem(line: int | None) -> Problem:
    return Problem(
        f"lists and mappings are nested more than {MAX_NESTING} levels deep",
        line=line,
        hint="a rubric file needs a few levels; flatten this structure or remove it",
    )


class PlainNumber(str):
    """An unquoted YAML scalar that YAML 1.1 reads as text but is written as a number
    (``1e-6``, ``1e309``: PyYAML wants a dot). A number field takes it; any other text in a
    number field was quoted (``weight: "2"``) or came from JSON as a string, and is refused."""

    __slots__ = ()


# YAML 1.2's float and int forms, which YAML 1.1 (PyYAML) leaves partly as text.
PLAIN_NUMBER = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")


def shown(name: Any) -> str:
    """A key, an anchor or a name as a message shows it: quoted if it holds anything odd."""
    text = str(name)
    if len(text) <= 60:
        return text if text and text.isprintable() else repr(text)
    return repr(redact(text, *known_keys())[:60])  # redacted before the cut


def kind_of(value: Any) -> str:
    """What a message calls the type of a value read from a file."""
    return {dict: "mapping", list: "list", str: "string", type(None): "null"}.get(
        type(value), type(value).__name__
    )


def quoted(name: Any) -> str:
    """A key as a message shows it: in backquotes, or as a repr if it holds anything odd."""
    text = shown(name)
    return f"`{text}`" if text == str(name) and isinstance(name, str) else text


def overflowing(weights: Iterable[float]) -> str | None:
    """Which sum of a case's ``weights`` overflows, "weights" or "penalties", or None: an
    infinite sum makes every score NaN or 1.0 (a rubric file's, or a document's read back)."""
    weights = list(weights)
    if not math.isfinite(sum(w for w in weights if w > 0)):
        return "weights"
    return None if math.isfinite(sum(-w for w in weights if w < 0)) else "penalties"


# --- JSON ---------------------------------------------------------------------------------------


class RepeatedKey(ValueError):
    """JSON text gave one key twice in an object: which value counts is no reader's guess."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the key {quoted(key)} appears twice in one object")
        self.key = key


def _repeats(pairs: list[tuple[str, Any]]) -> list[str]:
    """The keys an object's pairs give a second time (json alone keeps the last value)."""
    seen: set[str] = set()
    repeated = []
    for key, _ in pairs:
        if key in seen:
            repeated.append(key)
        seen.add(key)
    return repeated


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An ``object_pairs_hook`` for ``json.loads`` that raises :class:`RepeatedKey` for a key
    given twice in one object."""
    data = dict(pairs)
    if len(data) != len(pairs):
        raise RepeatedKey(_repeats(pairs)[0])
    return data


def _shape(data: Any) -> tuple[bool, int]:
    """Whether the lists and dicts of parsed JSON nest more than MAX_NESTING levels, and how
    many keys its dicts hold (counted up to that depth)."""
    # Level by level, containers only: most values are strings, skipped at once.
    level = [data] if type(data) in (dict, list) else []
    keys = 0
    for _ in range(MAX_NESTING):
        keys += sum([len(node) for node in level if type(node) is dict])
        level = [
            child
            for node in level
            for child in (node.values() if type(node) is dict else node)
            if type(child) is dict or type(child) is list
        ]
        if not level:
            return False, keys
    return True, keys


# A key's end, its closing quote and colon, written with spaces between.
_SPACED_KEY_END = re.compile(r'"[ \t\n\r]+:')


def _may_repeat_keys(text: str, keys: int) -> bool:
    """Whether JSON text whose parsed objects hold ``keys`` keys may give a key twice in one:
    as many colons (or key ends) as keys means none was dropped (a few ms, where an
    ``object_pairs_hook`` costs a third of the parse)."""
    if text.count(":") == keys:
        return False
    ends = text.count('":') + len(_SPACED_KEY_END.findall(text))
    if '\\\\"' not in text:  # then each \" is an escaped quote, in a string: no key's end
        ends -= text.count('\\":')  # (a tool call's arguments: JSON in a string)
    return ends != keys


def loads_noting_repeats(text: str) -> tuple[Any, list[str]]:
    """``json.loads(text)``, and the keys given twice in an object of it, in the order json
    reads them (json alone keeps the last value of such a key, and says nothing)."""
    repeated: list[str] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(pairs)
        if len(result) != len(pairs):  # rare: find which keys
            repeated.extend(_repeats(pairs))
        return result

    return json.loads(text, object_pairs_hook=pairs_hook), repeated


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def _json_nesting_line(text: str) -> int | None:
    """The line where JSON text opens its (MAX_NESTING + 1)th level; strings blanked to
    spaces, so brackets in them do not count and lines stay put."""
    blanked = _JSON_STRING.sub(lambda m: " " * len(m.group()), text)
    depth = 0
    for bracket in _JSON_BRACKET.finditer(blanked):
        if bracket.group() in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return text.count("\n", 0, bracket.start()) + 1
        else:
            depth -= 1
    return None


def json_loads(text: str, *, whole: bool = False) -> tuple[Any, list[str]]:
    """``json.loads`` within the limits: the data and the keys given twice in an object.
    :class:`Limit` for nesting past MAX_NESTING, a number Python refuses, or a lone surrogate
    escape (with ``whole``, U+FFFD instead: an answer's broken emoji never stops a run)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:  # json.loads recurses once per level
        raise Limit(nesting_problem(_json_nesting_line(text))) from None
    except ValueError:  # an integer longer than sys.get_int_max_str_digits()
        limit = sys.get_int_max_str_digits()
        long_number = re.search(rf"\d{{{limit + 1},}}", text)
        raise Limit(
            Problem(
                f"a number has more than {limit:,} digits, more than Python reads",
                line=text.count("\n", 0, long_number.start()) + 1 if long_number else None,
                hint="write it with fewer digits, or in quotes if it is text",
            )
        ) from None
    too_deep, keys = _shape(data)
    if too_deep:
        raise Limit(nesting_problem(_json_nesting_line(text)))
    repeated = loads_noting_repeats(text)[1] if _may_repeat_keys(text, keys) else []
    if _HALF_ESCAPE.search(text) and (fixed := _whole(data)) != data:
        if whole:
            return fixed, repeated
        # As the YAML loader does: half a character cannot be written as UTF-8, so it would
        # break every output and the test ids that carry it between xdist processes.
        escape = next((m for m in _HALF_ESCAPE.finditer(text) if _lone(text, m)), None)
        raise Limit(
            Problem(
                f"the escape {escape.group() if escape else ''} is half a character (a lone "
                "surrogate), which no output can write",
                line=text.count("\n", 0, escape.start()) + 1 if escape else None,
                hint="write the whole character, or both halves of its surrogate pair",
            )
        )
    return data, repeated


_HALF_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _lone(text: str, match: re.Match[str]) -> bool:
    if match.group()[2].lower() in "89ab":  # a high surrogate
        after = text[match.end() : match.end() + 6]
        return not re.fullmatch(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}", after)
    before = text[max(0, match.start() - 6) : match.start()]
    return not re.fullmatch(r"\\u[dD][89abAB][0-9a-fA-F]{2}", before)


def _whole(value: Any) -> Any:
    """``value`` with every lone surrogate of its strings (keys included) replaced by U+FFFD."""
    if isinstance(value, str):
        return whole_characters(value)
    if isinstance(value, dict):
        return {_whole(k): _whole(v) for k, v in value.items()}
    return [_whole(v) for v in value] if isinstance(value, list) else value


# --- JSONL --------------------------------------------------------------------------------------

_KINDS = {list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}


def read_jsonl(
    path: Path, *, example: str, whole: bool = False
) -> tuple[list[tuple[int, dict[str, Any]]], list[Problem]]:
    """The objects of a JSONL file with their line numbers, and a problem for each line that
    is not one. Only ``\n`` ends a line (JSON allows U+2028 raw in a string); ``example``
    is a line written right, for the hints."""
    rows: list[tuple[int, dict[str, Any]]] = []
    problems: list[Problem] = []
    for number, line in enumerate(read_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        hint, field = f"write one JSON object a line: {example}", None
        try:
            value, repeated = json_loads(line, whole=whole)
        except json.JSONDecodeError as exc:
            message = f"invalid JSON ({exc.msg})"
        except Limit as exc:
            message, hint = exc.problem.message, exc.problem.hint or hint
        else:
            if not repeated and isinstance(value, dict):
                rows.append((number, value))
                continue
            if repeated:
                message = (
                    f"the key {quoted(repeated[0])} is given twice in this object; only the last "
                    "one would count"
                )
                hint, field = "keep one of them", str(repeated[0])
            else:
                kind = "null" if value is None else _KINDS.get(type(value), type(value).__name__)
                message = f"expected an object, got {kind}"
        problems.append(Problem(message, line=number, path=path, field=field, hint=hint))
    return rows, problems
