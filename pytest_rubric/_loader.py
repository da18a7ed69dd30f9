"""Loading rubric files (YAML or JSON) and responses files (JSONL).

Every mistake a user can make in a file becomes a :class:`Problem` that
names the file, the line, the case, the criterion and the field, and says
what to write instead; all problems of one file are raised together as one
:class:`RubricLoadError`. Line numbers come from the YAML node tree, which
the C parser builds at little cost; JSON files are parsed with ``json`` and
located through the YAML parser only when something is wrong.

A hostile file is one more collection error, never a crash, a hang or a
machine out of memory: only regular files are read, aliases may add at most
:data:`MAX_ALIAS_NODES` nodes, lists and mappings nest at most
:data:`MAX_NESTING` levels deep, and a key given twice in one mapping is an
error rather than silently overridden.
"""

from __future__ import annotations

import contextlib
import difflib
import gc
import json
import os
import re
import stat
import sys
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ._checks import PYTHON_REGEX_TIMEOUT, regex_problem
from ._errors import Problem, RubricLoadError
from ._schema import CRITERION_TYPES, Case, FieldError, Suite, default_ids

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_NESTING",
    "LoadedSuite",
    "ResponseFile",
    "load_response_dir",
    "load_suite",
    "parse_suite",
    "paused_gc",
    "problems_from_validation",
    "subject_problem",
]

# Nodes that aliases may add to a YAML file once expanded: an anchored node is
# built again for every alias to it, so nine levels of nine aliases (546 bytes
# of text) would be 387 million nodes and many gigabytes.
MAX_ALIAS_NODES = 100_000
# Levels of lists and mappings inside each other; a rubric file needs about
# eight (a JSON schema inside a criterion a few more). Deeper input exhausts
# the interpreter's stack in json.loads, pydantic or a report writer.
MAX_NESTING = 100

_YamlLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_FIELD_ALIASES = {"global_criteria": "global", "json_schema": "schema"}
_EXAMPLES = {
    "cases": 'cases:\n      - id: q01\n        question: "..."\n        criteria: [...]',
    "id": "id: q01",
    "criteria": 'criteria:\n      - {id: mentions_npv, type: any_of, any_of: ["net present value"]}',
    "any_of": 'any_of: ["99%", "1%"]',
    "all_of": 'all_of: ["precision", "recall"]',
    "phrases": 'phrases: ["maximum loss"]',
    "pattern": "pattern: '\\bloss'",
    "value": "value: 1157.63",
    "requirement": 'requirement: "Says the horizon is one day"',
    "function": 'function: "mypackage.checks:is_polite"',
}
_TYPE_LIST = ", ".join(CRITERION_TYPES)


@dataclass(slots=True)
class LoadedSuite:
    """A validated rubric file with the lines of its cases (1-based, None if unknown)."""

    path: Path
    suite: Suite
    case_lines: list[int | None]

    @property
    def name(self) -> str:
        return self.suite.suite or self.path.name.split(".")[0]

    @property
    def responses_dir(self) -> Path | None:
        if self.suite.responses is None:
            return None
        return (self.path.parent / self.suite.responses).resolve()


@dataclass(slots=True)
class ResponseFile:
    """One subject's responses: ``DIR/<subject>.jsonl``, a ``{"id", "response"}`` per line."""

    path: Path
    subject: str
    entries: dict[str, tuple[str, int]] = field(default_factory=dict)
    suites: dict[str, str | None] = field(default_factory=dict)


# --- reading files ------------------------------------------------------------------------------


class _NotRegular(Exception):
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
        raise _NotRegular(next((kind for test, kind in _FILE_KINDS if test(mode)), "not a file"))


def _read_text(path: Path) -> str:
    """The text of a regular file: UTF-8, a leading BOM dropped, newlines made ``\\n``.

    A FIFO would block collection until some writer came, and a symlink to
    /dev/zero would fill memory: the type is checked before opening, then
    again on the open descriptor in case the path was swapped in between.
    O_NONBLOCK makes even that open return at once.
    """
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


class _Limit(Exception):
    """The file holds something no rubric needs and that would not load safely."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def _nesting_problem(line: int | None) -> Problem:
    return Problem(
        f"lists and mappings are nested more than {MAX_NESTING} levels deep",
        line=line,
        hint="a rubric file needs a few levels; flatten this structure or remove it",
    )


def _line(mark: Any) -> int | None:
    """The 1-based line of a YAML mark."""
    return mark.line + 1 if mark is not None else None


def _shown(name: Any) -> str:
    """A key, an anchor or a name as a message shows it: quoted if it holds anything odd."""
    text = str(name)
    return text if text and text.isprintable() and len(text) <= 60 else repr(text[:60])


def _quoted(name: Any) -> str:
    """A key as a message shows it: in backquotes, or as a repr if it holds anything odd."""
    shown = _shown(name)
    return f"`{shown}`" if shown == str(name) and isinstance(name, str) else shown


_ALIAS_HINT = (
    "use anchors and aliases to reuse a criterion or a short list; write larger structures "
    "out, without aliases of aliases"
)


class _AliasLimit(_Limit):
    """Aliases that expand past MAX_ALIAS_NODES nodes, or into themselves (``loop``).

    The node tree keeps neither the name nor the line of an alias, only the
    node it refers to: ``alias`` counts the aliases to lists and mappings
    before this one in the text, for :meth:`located` to find it there. Where
    the text is not at hand, a loop is said as what it would do: nest forever.
    """

    def __init__(self, alias: int, *, loop: bool, line: int | None) -> None:
        super().__init__(
            _nesting_problem(line)
            if loop
            else Problem(
                f"aliases would expand this file by more than {MAX_ALIAS_NODES:,} nodes",
                line=line,
                hint=_ALIAS_HINT,
            )
        )
        self.alias, self.loop = alias, loop

    def located(self, text: str) -> Problem:
        """The problem with the alias's name and line, from the text (error path only)."""
        # Anchors of lists and mappings; a name is defined once (the composer refuses more).
        collections: set[str] = set()
        count = self.alias
        for event in yaml.parse(text, Loader=_YamlLoader):
            anchor = getattr(event, "anchor", None)
            if isinstance(event, yaml.CollectionStartEvent) and anchor is not None:
                collections.add(anchor)
            elif isinstance(event, yaml.AliasEvent) and anchor in collections:
                if count == 0:
                    name, line = _shown(anchor), _line(event.start_mark)
                    if self.loop:
                        return Problem(
                            f"the alias *{name} is inside the anchor &{name} it refers to, so "
                            "it would repeat without end",
                            line=line,
                            hint="move the alias out of the anchored block, or write the "
                            "nested part out",
                        )
                    return Problem(
                        f"aliases would expand this file by more than {MAX_ALIAS_NODES:,} "
                        f"nodes; the alias *{name} here takes it past that",
                        line=line,
                        hint=_ALIAS_HINT,
                    )
                count -= 1
        return self.problem  # not reached: the text composed, so it has that alias


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
    """Whether JSON text whose parsed objects hold ``keys`` keys may give a key twice in one.

    A key given twice leaves one key fewer in its object than the text
    writes. Every key written ends with a quote and a colon, and any other
    colon is inside a string: when the text has only as many colons, or key
    ends and escaped quotes before a colon, as the objects have keys, none
    was dropped. Counting them takes a few ms where an ``object_pairs_hook``
    takes a third of the parse (json then builds each object as a list).
    """
    return text.count(":") != keys and text.count('":') + len(_SPACED_KEY_END.findall(text)) != keys


def _repeated_keys(text: str) -> list[str]:
    """The keys given twice in an object of JSON text that parses, in the order json reads them."""
    repeated: list[str] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(pairs)
        if len(result) != len(pairs):  # rare: find which keys
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    repeated.append(key)
                seen.add(key)
        return result

    json.loads(text, object_pairs_hook=pairs_hook)
    return repeated


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def _json_nesting_line(text: str) -> int | None:
    """The line where JSON text opens its (MAX_NESTING + 1)th level (error path only)."""
    # Strings blanked to spaces of the same length: brackets in them do not
    # count, and JSON strings hold no raw newline, so lines stay put.
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


def _json_loads(text: str) -> tuple[Any, list[str]]:
    """``json.loads`` within the limits: the data and the keys given twice in an object.

    Raises ``json.JSONDecodeError`` for a syntax error and :class:`_Limit` for
    nesting deeper than MAX_NESTING or a number Python refuses to read.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:  # json.loads recurses once per level
        raise _Limit(_nesting_problem(_json_nesting_line(text))) from None
    except ValueError:  # an integer longer than sys.get_int_max_str_digits()
        limit = sys.get_int_max_str_digits()
        long_number = re.search(rf"\d{{{limit + 1},}}", text)
        raise _Limit(
            Problem(
                f"a number has more than {limit:,} digits, more than Python reads",
                line=text.count("\n", 0, long_number.start()) + 1 if long_number else None,
                hint="write it with fewer digits, or in quotes if it is text",
            )
        ) from None
    too_deep, keys = _shape(data)
    if too_deep:
        raise _Limit(_nesting_problem(_json_nesting_line(text)))
    return data, _repeated_keys(text) if _may_repeat_keys(text, keys) else []


# --- rubric files -----------------------------------------------------------------------------


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building large acyclic structures.

    A rubric file's node tree, models and items are many small objects that
    all stay alive; the collector would walk them again and again while they
    grow (on a 20k-line file, 4-5x the parse time). Nested pauses are fine.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def load_suite(path: Path) -> LoadedSuite:
    """Read and validate a rubric file; raise :class:`RubricLoadError` listing every problem."""
    with paused_gc():
        return _load_suite(path)


def _load_suite(path: Path) -> LoadedSuite:
    try:
        text = _read_text(path)
    except _NotRegular as exc:
        raise RubricLoadError(
            path,
            [
                Problem(
                    f"this is {exc}, not a regular file; rubric files are read only from "
                    "regular files",
                    hint="replace it with a regular file, or move it out of the rubric folders",
                )
            ],
        ) from None
    except UnicodeDecodeError as exc:
        raise RubricLoadError(
            path, [Problem(f"not UTF-8 text ({exc.reason})", hint="save the file as UTF-8")]
        ) from None
    except OSError as exc:
        raise RubricLoadError(
            path,
            [Problem(f"cannot read the file: {exc.strerror or exc}", hint="check its permissions")],
        ) from None
    return parse_suite(text, path=path)


def parse_suite(text: str, *, path: Path) -> LoadedSuite:
    """Validate rubric text; ``path`` names the file in errors and anchors relative paths."""
    # Editors on Windows start UTF-8 files with a BOM, which json.loads rejects.
    text = text.removeprefix("\ufeff")
    parsed = _parse(text, path)
    data = parsed.data
    bare_list = isinstance(data, list)
    if bare_list:
        data = {"cases": data}
    locator = _Locator(text, path, parsed.node, bare_list=bare_list)
    problems = [
        _duplicate_problem(d, data, bare_list=bare_list, json_file=path.suffix == ".json")
        for d in parsed.duplicates
    ]
    if not isinstance(data, dict):
        problems.append(
            Problem(
                f"the top level is a {_kind(data)}",
                line=1,
                hint="write a mapping with `cases:` or a list of cases",
            )
        )
        raise RubricLoadError(path, problems)
    if "cases" not in data:
        problems.append(
            Problem(
                "no `cases:` in the file",
                line=1,
                field="cases",
                hint="add\n    " + _EXAMPLES["cases"],
            )
        )
        raise RubricLoadError(path, problems)
    suite: Suite | None = None
    try:
        suite = Suite.model_validate(data)
    except ValidationError as exc:
        problems += [_problem(e, data, locator) for e in _errors(exc)]
    problems += _semantic_problems(data, suite, locator)
    if problems or suite is None:
        raise RubricLoadError(path, problems)
    return LoadedSuite(
        path=path, suite=suite, case_lines=[locator.case_line(i) for i in range(len(suite.cases))]
    )


def problems_from_validation(exc: ValidationError, data: Any) -> list[Problem]:
    """Problems for criteria given in Python (``assert_rubric``): located without lines."""
    locator = _Locator("", Path(), None, bare_list=False)
    return [_problem(e, data if isinstance(data, dict) else {}, locator) for e in _errors(exc)]


def _errors(exc: ValidationError) -> list[Any]:
    """The errors worth showing: a list whose items failed is not also "too short"."""
    errors = exc.errors()
    failed_items = {
        tuple(e["loc"][:-1]) for e in errors if e["loc"] and isinstance(e["loc"][-1], int)
    }
    return [e for e in errors if not (e["type"] == "too_short" and tuple(e["loc"]) in failed_items)]


@dataclass(frozen=True, slots=True)
class _Duplicate:
    """A key given twice in one mapping, where the data keeps only the last."""

    key: Any
    lines: tuple[int, int] | None  # the first and the second, when known
    path: tuple[str | int, ...] | None  # of the mapping, from the root of the document


@dataclass(slots=True)
class _Parsed:
    data: Any
    node: yaml.Node | None  # None for a JSON file, unless it had to be located
    duplicates: list[_Duplicate]


def _parse(text: str, path: Path) -> _Parsed:
    try:
        if path.suffix == ".json":
            return _parse_json(text, path)
        return _parse_yaml(text, path)
    except _Limit as exc:
        raise RubricLoadError(path, [exc.problem]) from None


def _parse_json(text: str, path: Path) -> _Parsed:
    try:
        data, repeated = _json_loads(text)
    except json.JSONDecodeError as exc:
        raise RubricLoadError(
            path,
            [
                Problem(
                    f"invalid JSON: {exc.msg} (column {exc.colno})",
                    line=exc.lineno,
                    hint="fix the JSON syntax; a trailing comma or a missing quote is the usual cause",
                )
            ],
        ) from None
    if not repeated:
        return _Parsed(data, None, [])
    # json reports no positions: the lines of both keys come from the YAML
    # parser, which reads almost all JSON.
    loader = _YamlLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise yaml.YAMLError("no document")
        _, duplicates = _construct(loader, node)
    except (yaml.YAMLError, _Limit, RecursionError):
        node, duplicates = None, [_Duplicate(key, None, None) for key in dict.fromkeys(repeated)]
    finally:
        loader.dispose()
    return _Parsed(data, node, duplicates)


def _parse_yaml(text: str, path: Path) -> _Parsed:
    loader = _YamlLoader(text)
    try:
        node = loader.get_single_node()
        data, duplicates = (
            _construct(loader, node, anchors="&" in text) if node is not None else (None, [])
        )
    except _AliasLimit as exc:
        raise RubricLoadError(path, [exc.located(text)]) from None
    except RecursionError:  # the pure-Python composer recurses once per level
        raise RubricLoadError(path, [_nesting_problem(None)]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        if "maximum nesting depth" in str(exc.problem):  # libyaml stops at 1000 levels
            raise RubricLoadError(path, [_nesting_problem(line)]) from None
        context = ""
        if exc.context and exc.context_mark and exc.context_mark is not mark:
            context = f" ({exc.context} that starts at line {exc.context_mark.line + 1})"
        raise RubricLoadError(
            path,
            [
                Problem(
                    f"invalid YAML: {exc.problem or exc.context}{context}",
                    line=line,
                    hint="check the indentation and quoting there; quote strings that contain ': ' or '#'",
                )
            ],
        ) from None
    except yaml.YAMLError as exc:
        raise RubricLoadError(path, [Problem(f"invalid YAML: {exc}")]) from None
    finally:
        loader.dispose()
    if data is None:
        raise RubricLoadError(
            path, [Problem("the file is empty", hint="add\n    " + _EXAMPLES["cases"])]
        )
    return _Parsed(data, node, duplicates)


_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"


def _construct(
    loader: yaml.SafeLoader, root: yaml.Node, *, anchors: bool = True
) -> tuple[Any, list[_Duplicate]]:
    """Build the data of a node tree, and find the keys given twice in a mapping.

    Rubric files are plain mappings, lists and strings (and merge keys,
    ``<<: *base``): built here directly, several times quicker than the
    generic constructor on large files, which builds only the other scalars.
    Mappings and lists nested deeper than MAX_NESTING stop it, aliases
    included. Merge keys follow the YAML merge key spec: the mapping's own
    keys win, then the mappings merged in the order listed.

    The composer shares one node between an anchor and its aliases, but the
    data holds a copy per alias: nine levels of nine aliases are 546 bytes of
    text and 387 million nodes once built. A list or mapping met a second
    time is an alias; from there until the end of that copy every node built
    is counted, and the build stops as soon as the count passes
    MAX_ALIAS_NODES, so that memory stays bounded. An alias to a scalar costs
    what writing the scalar out would, and is not counted where it is written.
    ``anchors=False`` says the text holds no '&', hence no anchor: no node can
    be met twice, and recording them would cost a fifth of the build.
    """
    found: list[tuple[yaml.Node, Any, int, int]] = []  # (mapping, key, first line, second line)
    finished: dict[int, bool] = {}  # id of each list and mapping met -> whether it is built
    aliases = 0  # aliases to lists and mappings met in the text so far (not within copies)
    copying = False  # within the copy of an alias
    copied = 0  # nodes built within copies

    def count() -> None:
        nonlocal copied
        copied += 1
        if copied > MAX_ALIAS_NODES:
            raise _AliasLimit(aliases, loop=False, line=None)

    def build(node: yaml.Node, depth: int) -> Any:
        nonlocal aliases, copying
        if isinstance(node, yaml.ScalarNode):
            if copying:
                count()
            return node.value if node.tag == _STR_TAG else scalar(node)
        if depth > MAX_NESTING:
            raise _Limit(_nesting_problem(node.start_mark.line + 1))
        alias = False  # an alias written in the text, whose copy this is
        if anchors:
            done = finished.get(id(node))
            if done is None:
                finished[id(node)] = False
            elif not copying:
                if not done:  # the node is being built: the alias is inside its own anchor
                    raise _AliasLimit(aliases, loop=True, line=node.start_mark.line + 1)
                copying = alias = True
        if copying:
            count()
        result: Any
        if isinstance(node, yaml.SequenceNode):
            result = [build(item, depth + 1) for item in node.value]
        else:
            result = {}
            merged: list[dict[Any, Any]] | None = None
            firsts: dict[Any, yaml.Node] | None = None  # key -> its first node, once one repeats
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE_TAG:
                    if copying:
                        count()  # the `<<` itself, as any other key
                    if merged is not None:
                        firsts = firsts or first_keys(node)
                        repeated(node, firsts[_MERGE_TAG], key_node, "<<")
                    merged = merge(node, value_node, depth)
                    continue
                if not isinstance(key_node, yaml.ScalarNode):
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found a {key_node.id} as a key; a key is plain text",
                        key_node.start_mark,
                    )
                key = build(key_node, depth + 1)
                try:
                    again = key in result
                except TypeError:  # an unhashable scalar, from some tag
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        "found an unhashable key",
                        key_node.start_mark,
                    ) from None
                if again:
                    firsts = firsts or first_keys(node)
                    repeated(node, firsts[key], key_node, key)
                result[key] = build(value_node, depth + 1)
            if merged:
                combined: dict[Any, Any] = {}
                for source in reversed(merged):
                    combined.update(source)
                combined.update(result)
                result = combined
        if alias:
            copying = False
            aliases += 1
        elif anchors:
            finished[id(node)] = True
        return result

    def scalar(node: yaml.Node) -> Any:
        if node.tag == _STR_TAG:
            return node.value
        try:
            return loader.construct_object(node)
        except (ValueError, OverflowError) as exc:  # 30 February, a 5000-digit number
            why = str(exc).split(";")[0]  # not "use sys.set_int_max_str_digits()"
            raise _Limit(
                Problem(
                    f"cannot read the value {_shown(node.value)}: {why}",
                    line=node.start_mark.line + 1,
                    hint="quote it if it is text, or correct the value",
                )
            ) from None

    def merge(node: yaml.Node, value_node: yaml.Node, depth: int) -> list[dict[Any, Any]]:
        listed = isinstance(value_node, yaml.SequenceNode)
        for source in value_node.value if listed else [value_node]:
            if not isinstance(source, yaml.MappingNode):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"`<<` merges a mapping or a list of mappings, but found a "
                    f"{getattr(source, 'id', 'node')}",
                    source.start_mark,
                )
        # Through build, which counts the list and its aliases; the list is no
        # level of its own: each mapping merged is one level down, listed or not.
        return build(value_node, depth) if listed else [build(value_node, depth + 1)]

    def first_keys(node: yaml.Node) -> dict[Any, yaml.Node]:
        """Each key of a mapping with the node where it first appears (merge keys under
        the merge tag), as the dict sees keys: 1, 1.0 and true are one key."""
        firsts: dict[Any, yaml.Node] = {}
        for k, _ in node.value:
            if k.tag == _MERGE_TAG:
                firsts.setdefault(_MERGE_TAG, k)
            elif isinstance(k, yaml.ScalarNode):
                firsts.setdefault(scalar(k), k)
        return firsts

    def repeated(node: yaml.Node, first: yaml.Node, again: yaml.Node, key: Any) -> None:
        found.append((node, key, first.start_mark.line + 1, again.start_mark.line + 1))

    data = build(root, 1)
    paths = _node_paths(root, {id(node) for node, *_ in found}) if found else {}
    return data, [
        _Duplicate(key, (first, second), paths.get(id(node))) for node, key, first, second in found
    ]


def _node_paths(root: yaml.Node, wanted: set[int]) -> dict[int, tuple[str | int, ...]]:
    """Where the nodes whose ids are ``wanted`` are, as data paths from the root."""
    paths: dict[int, tuple[str | int, ...]] = {}
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, tuple[str | int, ...]]] = [(root, ())]
    while stack and len(paths) < len(wanted):
        node, path = stack.pop()
        if id(node) in seen:  # reached again through an alias
            continue
        seen.add(id(node))
        if id(node) in wanted:
            paths[id(node)] = path
        if isinstance(node, yaml.MappingNode):
            stack += [(v, (*path, k.value)) for k, v in reversed(node.value)]
        elif isinstance(node, yaml.SequenceNode):
            stack += [(v, (*path, i)) for i, v in reversed(list(enumerate(node.value)))]
    return paths


def _duplicate_problem(
    duplicate: _Duplicate, data: Any, *, bare_list: bool, json_file: bool
) -> Problem:
    what = "JSON object" if json_file else "mapping"
    where = _Where()
    if duplicate.path is not None:
        path = ("cases", *duplicate.path) if bare_list else duplicate.path
        where = _where((*path, str(duplicate.key)), tagged=False)
    case, criterion = _labels(data, where)
    field_name = ".".join(str(f) for f in where.field) if where.field else _shown(duplicate.key)
    lines = duplicate.lines
    return Problem(
        f"the key {_quoted(duplicate.key)} is given twice in one {what}"
        + (f" (lines {lines[0]} and {lines[1]})" if lines else "")
        + "; only the last one would count",
        line=lines[1] if lines else None,
        case=case,
        criterion=criterion,
        field=field_name,
        hint="keep one of them, or rename the other",
    )


def _kind(value: Any) -> str:
    return {dict: "mapping", list: "list", str: "string", type(None): "null"}.get(
        type(value), type(value).__name__
    )


class _Locator:
    """Finds the line of a field from its path in the data, through the YAML node tree."""

    def __init__(self, text: str, path: Path, node: yaml.Node | None, *, bare_list: bool) -> None:
        self._text, self._path, self._node, self._bare = text, path, node, bare_list
        self._parsed = node is not None
        # Per mapping node, where each key is first: a file with thousands of
        # problems in one mapping (unknown keys, say) is located in linear time.
        self._keys: dict[int, dict[str, int]] = {}

    def _root(self) -> yaml.Node | None:
        if (
            not self._parsed and self._text
        ):  # a JSON file: located through YAML on the error path only
            self._parsed = True
            try:
                self._node = yaml.compose(self._text, Loader=_YamlLoader)
            except yaml.YAMLError:
                self._node = None
        return self._node

    def line(self, data_path: Sequence[str | int], *, key: bool = True) -> int | None:
        node = self._root()
        if node is None:
            return None
        steps = list(data_path)
        if self._bare and steps and steps[0] == "cases":
            steps = steps[1:]
        line = node.start_mark.line
        for step in steps:
            if isinstance(node, yaml.MappingNode):
                wanted = _FIELD_ALIASES.get(str(step), str(step)) if isinstance(step, str) else step
                keys = self._keys.get(id(node))
                if keys is None:
                    keys = self._keys[id(node)] = {}
                    for position, (k, _) in enumerate(node.value):
                        if isinstance(k, yaml.ScalarNode):
                            keys.setdefault(k.value, position)
                found = [keys[s] for s in (step, wanted) if isinstance(s, str) and s in keys]
                if not found:
                    break
                k, v = node.value[min(found)]
                line = (k if key else v).start_mark.line
                node = v
            elif (
                isinstance(node, yaml.SequenceNode)
                and isinstance(step, int)
                and step < len(node.value)
            ):
                node = node.value[step]
                line = node.start_mark.line
            else:
                break
        return line + 1

    def case_line(self, index: int) -> int | None:
        return self.line(("cases", index)) if self._node is not None else None


# --- turning pydantic errors into problems ------------------------------------------------------


@dataclass(slots=True)
class _Where:
    case_index: int | None = None
    container: str | None = None  # "criteria" or "global_criteria"
    criterion_index: int | None = None
    tag: str | None = None
    field: tuple[str | int, ...] = ()

    def data_path(self) -> tuple[str | int, ...]:
        head: tuple[str | int, ...] = ()
        if self.case_index is not None:
            head = ("cases", self.case_index)
        if self.container is not None:
            head += (
                self.container,
                self.criterion_index if self.criterion_index is not None else 0,
            )
        return head + self.field


def _where(loc: tuple[str | int, ...], *, tagged: bool = True) -> _Where:
    """Where a path in the data points; ``tagged``: pydantic's, which names a criterion's type."""
    where = _Where()
    rest = list(loc)
    if rest[:1] == ["cases"] and len(rest) > 1 and isinstance(rest[1], int):
        where.case_index, rest = rest[1], rest[2:]
    if (
        rest[:1] in (["criteria"], ["global_criteria"], ["global"])
        and len(rest) > 1
        and isinstance(rest[1], int)
    ):
        where.container, where.criterion_index, rest = str(rest[0]), rest[1], rest[2:]
        if tagged and rest and isinstance(rest[0], str) and rest[0] in CRITERION_TYPES:
            where.tag, rest = rest[0], rest[1:]
    where.field = tuple(rest)
    return where


def _get(data: Any, *steps: str | int) -> Any:
    for step in steps:
        if isinstance(step, str):
            step = (
                _FIELD_ALIASES.get(step, step)
                if isinstance(data, dict) and step not in data
                else step
            )
        try:
            data = data[step]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _allowed_fields(where: _Where) -> list[str]:
    if where.tag is not None:
        model: Any = CRITERION_TYPES[where.tag]
    elif where.container is not None:
        return []
    elif where.case_index is not None:
        model = Case
    else:
        model = Suite
    names = []
    for name, info in model.model_fields.items():
        alias = info.validation_alias
        choices = getattr(alias, "choices", None)
        names += [str(c) for c in choices] if choices else [name]
    return names


def _label(given_id: Any, index: int) -> str:
    """How a problem names a case or criterion: its id, or its position when the id is unusable."""
    if isinstance(given_id, bool) or not isinstance(given_id, str | int) or given_id == "":
        return f"#{index + 1}"
    return str(given_id)


def _labels(data: Any, where: _Where) -> tuple[str | None, str | None]:
    """How a problem names the case and the criterion it is in."""
    case_id = None
    if where.case_index is not None:
        case_id = _label(_get(data, "cases", where.case_index, "id"), where.case_index)
    criterion_id = None
    if where.container is not None:
        criterion_id = _get(
            data, *where.data_path()[: (2 if where.case_index is None else 4)], "id"
        )
        criterion_id = _label(criterion_id, where.criterion_index or 0)
        if where.container in ("global", "global_criteria"):
            criterion_id = f"global {criterion_id}"
    return case_id, criterion_id


def _problem(error: Any, data: dict[str, Any], locator: _Locator) -> Problem:
    loc: tuple[str | int, ...] = tuple(error["loc"])
    where = _where(loc)
    kind: str = error["type"]
    case_id, criterion_id = _labels(data, where)
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        where.field = ("type",)  # the criterion's `type` is what is wrong, or missing
    cause = error.get("ctx", {}).get("error")
    if isinstance(cause, FieldError) and not where.field:
        where.field = (cause.field,)  # a model validator's finding, about one of its fields
    field_name = ".".join(str(f) for f in where.field) if where.field else None
    if field_name is not None:
        field_name = _FIELD_ALIASES.get(field_name, field_name)
    line = locator.line(where.data_path())
    message, hint = _explain(kind, error, where, field_name)
    return Problem(
        message, line=line, case=case_id, criterion=criterion_id, field=field_name, hint=hint
    )


def _explain(
    kind: str, error: Any, where: _Where, field_name: str | None
) -> tuple[str, str | None]:
    leaf = str(where.field[-1]) if where.field else None
    if kind == "missing":
        return f"missing required field `{leaf}`", (
            f"add `{_EXAMPLES[leaf]}`"
            if leaf in _EXAMPLES and "\n" not in _EXAMPLES[leaf]
            else ("add\n    " + _EXAMPLES[leaf] if leaf in _EXAMPLES else f"add `{leaf}: ...`")
        )
    if kind == "extra_forbidden":
        allowed = _allowed_fields(where)
        close = difflib.get_close_matches(str(leaf), allowed, n=1)
        hint = f"did you mean `{close[0]}`?" if close else None
        listing = f"Allowed here: {', '.join(allowed)}." if allowed else None
        shown = f"`{leaf}`" if leaf and leaf.strip() == leaf else repr(leaf)  # "" or " x"
        return f"unknown field {shown}", " ".join(h for h in (hint, listing) if h) or None
    if kind == "union_tag_invalid":
        tag = str(error.get("ctx", {}).get("tag", error.get("input")))
        close = difflib.get_close_matches(tag, list(CRITERION_TYPES), n=1)
        hint = (f"did you mean `type: {close[0]}`? " if close else "") + f"use one of {_TYPE_LIST}"
        return f"unknown criterion type {tag!r}", hint
    if kind == "union_tag_not_found":
        return "criterion has no `type`", (
            f"add `type:` (one of {_TYPE_LIST}), or a `requirement:` for a judged criterion"
        )
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        if where.field:
            what = f"`{field_name}`"
        else:
            what = (
                "a criterion"
                if where.container
                else "a case"
                if where.case_index is not None
                else "the file"
            )
        return f"{what} must be a mapping, got {_kind(error.get('input'))}", (
            "write it as `{id: ..., type: ..., ...}` or as a nested block"
            if where.container
            else None
        )
    if kind == "value_error":
        msg = str(error["msg"]).removeprefix("Value error, ")
        cause = error.get("ctx", {}).get("error")
        return msg, cause.hint if isinstance(cause, FieldError) else None
    got = error.get("input")
    if kind == "finite_number":  # .inf, .nan, or 1.0e+309 that YAML reads as infinity
        return f"`{field_name}` must be a finite number, got {got!r}", (
            f"write an ordinary number, such as `{leaf}: 1`"
        )
    if kind in ("too_short", "string_too_short") and got == "":
        return f"`{field_name}` is empty", f"write `{leaf}: ...` with some text, or leave it out"
    if kind == "string_type" and isinstance(got, bool):
        return (
            f"`{field_name}` must be text, but YAML read a bare yes/no/on/off/true/false as {got}",
            (f'quote it: `{leaf}: "..."`'),
        )
    shown = repr(got) if not isinstance(got, dict | list) else _kind(got)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    subject = f"`{field_name}`" if field_name else "value"
    got_text = f", got {shown}" if str(error["msg"]).startswith("Input should be") else ""
    return f"{subject}: {error['msg']}{got_text}", None


def _regex_problems(
    criteria: Sequence[Any], where: Sequence[str | int], locator: _Locator, case: str | None
) -> Iterator[Problem]:
    """Regex criteria whose pattern needs what RE2 lacks: rejected at collection."""
    for j, criterion in enumerate(criteria):
        if criterion.type != "regex":
            continue
        why = regex_problem(criterion)
        if why is not None:
            yield Problem(
                f"the pattern {criterion.pattern!r} needs what the RE2 engine does not have "
                f"({why}): RE2 has no backreferences and no lookaround",
                line=locator.line((*where, j, "pattern")),
                case=case,
                criterion=criterion.id,
                field="pattern",
                hint="rewrite it without them (an `invert: true` criterion often replaces a "
                "negative lookahead), or add `engine: python` to this criterion to use Python's "
                f"backtracking engine, whose every search is cut off after {PYTHON_REGEX_TIMEOUT:g} s "
                "(ERROR)",
            )


def _plain_id(value: Any) -> str | None:
    """An id as the schema reads it (``7`` is "7"), or None when it is not usable as one."""
    if type(value) is str:
        return value
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    return str(value)


def _criterion_ids(criteria: Any, prefix: str) -> list[tuple[int, str]]:
    """The usable ids of raw criteria, those absent named by position as validation names them."""
    if type(criteria) is not list:
        return []
    return [
        (j, criterion_id)
        for j, criterion in enumerate(default_ids(criteria, prefix))
        if type(criterion) is dict and (criterion_id := _plain_id(criterion["id"])) is not None
    ]


def _raw_problems(data: dict[str, Any], locator: _Locator) -> Iterator[Problem]:
    """What is wrong across items, read from the raw data so it is found even when
    validation failed: duplicate ids and subject names that would break test ids."""
    global_key = "global" if "global" in data else "global_criteria"
    global_ids: set[str] = set()
    for j, criterion_id in _criterion_ids(data.get(global_key), "g"):
        if criterion_id in global_ids:
            yield Problem(
                f"criterion id {criterion_id!r} is used twice in `global`",
                line=locator.line((global_key, j, "id")),
                criterion=f"global {criterion_id}",
                field="id",
                hint="give every criterion a unique id",
            )
        global_ids.add(criterion_id)
    cases = data.get("cases")
    if type(cases) is not list:
        return
    seen_cases: dict[str, int] = {}
    for i, case in enumerate(cases):
        if type(case) is not dict:
            continue
        case_id = _plain_id(case.get("id"))
        if case_id is not None and case_id in seen_cases:
            yield Problem(
                f"duplicate case id {case_id!r} (first at line {locator.case_line(seen_cases[case_id])})",
                line=locator.line(("cases", i, "id")),
                case=_label(case.get("id"), i),
                field="id",
                hint="give every case a unique id",
            )
        elif case_id is not None:
            seen_cases[case_id] = i
        ids = _criterion_ids(case.get("criteria"), "c")
        unique = {criterion_id for _, criterion_id in ids}
        if len(unique) != len(ids) or not global_ids.isdisjoint(unique):  # rare: say which
            seen: set[str] = set()
            for j, criterion_id in ids:
                if criterion_id in seen or criterion_id in global_ids:
                    origin = "in `global`" if criterion_id in global_ids else "earlier in this case"
                    yield Problem(
                        f"criterion id {criterion_id!r} is used twice (also {origin})",
                        line=locator.line(("cases", i, "criteria", j, "id")),
                        case=_label(case.get("id"), i),
                        criterion=criterion_id,
                        field="id",
                        hint="give every criterion of a case a unique id",
                    )
                seen.add(criterion_id)
        if "responses" in case or "subject" in case:
            yield from _subject_problems(case, i, locator)


def _subject_problems(case: dict[str, Any], index: int, locator: _Locator) -> Iterator[Problem]:
    """Subject names given in a case (``responses:`` keys, ``subject:``) that would break ids."""
    responses = case.get("responses")
    subjects: list[tuple[str, tuple[str, ...]]] = [
        (name, ("responses", name))
        for name in (responses if isinstance(responses, dict) else ())
        if isinstance(name, str)
    ]
    if isinstance(case.get("subject"), str):
        subjects.append((case["subject"], ("subject",)))
    for name, where in subjects:
        why = subject_problem(name)
        if why is not None:
            yield Problem(
                f"the subject name {name!r} cannot be used: {why}",
                line=locator.line(("cases", index, *where)),
                case=_label(case.get("id"), index),
                field=where[0],
                hint=f"rename it, for example to {safe_subject(name)!r}",
            )


def _semantic_problems(
    data: dict[str, Any], suite: Suite | None, locator: _Locator
) -> list[Problem]:
    """Problems validation cannot see, in the whole file even when validation failed.

    Ids and subject names come from the raw data. The checks that need models
    (regex patterns, a scorable case) run on the cases that validate on their
    own, so that a wrong type in one criterion does not hide them.
    """
    problems = list(_raw_problems(data, locator))
    global_criteria: Sequence[Any] | None
    if suite is not None:
        global_criteria, cases = suite.global_criteria, list(enumerate(suite.cases))
    else:
        global_criteria, cases = _valid_parts(data)
    if global_criteria is not None:
        problems += _regex_problems(global_criteria, ("global",), locator, None)
    for i, case in cases:
        label = _label(_get(data, "cases", i, "id"), i)
        problems += _regex_problems(case.criteria, ("cases", i, "criteria"), locator, label)
        if global_criteria is None:
            continue  # the global criteria did not validate: a case's weights are unknown
        everything = [*global_criteria, *case.criteria]
        if not any(c.axis == "substance" and c.effective_weight != 0 for c in everything):
            problems.append(
                Problem(
                    "the case has no substance criterion with a non-zero weight, so it cannot "
                    "be scored",
                    line=locator.case_line(i),
                    case=label,
                    field="criteria",
                    hint="add a criterion with `axis: substance` (the default) and a non-zero weight",
                )
            )
    return problems


def _valid_parts(data: dict[str, Any]) -> tuple[Sequence[Any] | None, list[tuple[int, Case]]]:
    """The global criteria (None if they do not validate) and the cases that validate alone."""
    global_criteria: Sequence[Any] | None
    try:
        only_global = {k: v for k, v in data.items() if k in ("global", "global_criteria")}
        global_criteria = Suite.model_validate({**only_global, "cases": []}).global_criteria
    except ValidationError:
        global_criteria = None
    cases: list[tuple[int, Case]] = []
    raw_cases = data.get("cases")
    for i, raw in enumerate(raw_cases if isinstance(raw_cases, list) else ()):
        with contextlib.suppress(ValidationError):
            cases.append((i, Case.model_validate(raw)))
    return global_criteria, cases


# --- subjects -----------------------------------------------------------------------------------

# Characters that would break a test id (`path::case[subject]`), or a line of
# the summary table: "::" and brackets, line breaks and other control or
# format characters (a right-to-left override would reorder the table).
_BREAKS_IDS = re.compile(r"::|[\[\]]")
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def subject_problem(name: str) -> str | None:
    """Why ``name`` cannot name a subject, which goes into test ids and tables; None if it can."""
    if not name.strip():
        return "it is empty"
    if _BREAKS_IDS.search(name):
        return "'::', '[' and ']' break test ids"
    if any(unicodedata.category(ch) in _INVISIBLE for ch in name):
        return "a line break or another control character breaks test ids and the summary table"
    return None


def safe_subject(name: str) -> str:
    """``name`` with what :func:`subject_problem` refuses replaced by '_'."""
    name = _BREAKS_IDS.sub("_", name)
    name = "".join("_" if unicodedata.category(ch) in _INVISIBLE else ch for ch in name)
    return name.strip() or "subject"


# --- responses files ----------------------------------------------------------------------------


def load_response_dir(directory: Path) -> tuple[list[ResponseFile], list[Problem]]:
    """Read every ``<subject>.jsonl`` in ``directory``; bad lines and names become problems."""
    files, problems = [], []
    for path in sorted(directory.glob("*.jsonl")):
        why = subject_problem(path.stem)
        if why is not None:
            # Located on the folder: a file name with a line break would break the message too.
            problems.append(
                Problem(
                    f"the file name {path.name!r} gives the subject name {path.stem!r}, which "
                    f"cannot be used: {why}",
                    path=directory,
                    hint=f"rename the file to {safe_subject(path.stem) + '.jsonl'!r}",
                )
            )
            continue
        response_file = ResponseFile(path=path, subject=path.stem)
        problems += _read_jsonl(response_file)
        files.append(response_file)
    return files, problems


def _read_jsonl(target: ResponseFile) -> list[Problem]:
    problems: list[Problem] = []
    example = '{"id": "q01", "response": "..."}'
    try:
        # Only newlines end a JSON line: str.splitlines() would also split on
        # \x1c-\x1e, \x85 and \u2028, which JSON allows inside a string, and
        # every line number after such a character would be wrong.
        lines = _read_text(target.path).split("\n")
    except _NotRegular as exc:
        return [
            Problem(
                f"this is {exc}, not a regular file; responses are read only from regular files",
                path=target.path,
                hint="replace it with a regular file, or remove it from the folder",
            )
        ]
    except (OSError, UnicodeDecodeError) as exc:
        return [Problem(f"cannot read: {exc}", path=target.path)]
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue

        def bad(message: str, hint: str = f"write {example}", **where: str) -> None:
            problems.append(Problem(message, hint=hint, path=target.path, line=number, **where))  # noqa: B023

        try:
            entry, repeated = _json_loads(raw)
        except json.JSONDecodeError as exc:
            bad(f"invalid JSON ({exc.msg})", f"write one object per line: {example}")
            continue
        except _Limit as exc:
            bad(exc.problem.message, exc.problem.hint or f"write {example}")
            continue
        if repeated:
            bad(
                f"the key {_quoted(repeated[0])} is given twice in this object; only the last "
                "one would count",
                "keep one of them",
                field=str(repeated[0]),
            )
            continue
        if not isinstance(entry, dict):
            bad(f"expected an object, got {_kind(entry)}")
            continue
        case_id, text = entry.get("id"), entry.get("response", entry.get("answer"))
        if not isinstance(case_id, str | int):
            bad("missing `id`", field="id")
            continue
        if not isinstance(text, str):
            bad("`response` (or `answer`) must be a string", case=str(case_id), field="response")
            continue
        if str(case_id) in target.entries:
            first = target.entries[str(case_id)][1]
            bad(
                f"a second response for this case (the first is at line {first})",
                "keep one line per case in each subject file",
                case=str(case_id),
            )
            continue
        target.entries[str(case_id)] = (text, number)
        suite = entry.get("suite")
        target.suites[str(case_id)] = suite if isinstance(suite, str) else None
    return problems
