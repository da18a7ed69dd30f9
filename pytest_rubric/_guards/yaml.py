"""Building YAML data within limits (:data:`MAX_ALIAS_NODES` added by aliases, nesting as
deep as :data:`~pytest_rubric._guards.limits.MAX_NESTING`); a key given twice is reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from .._errors import Problem
from .limits import MAX_NESTING, PLAIN_NUMBER, Limit, PlainNumber, nesting_problem, shown

# Nodes that aliases may add to a YAML file once expanded: an anchored node is
# built again for every alias to it, so nine levels of nine aliases (546 bytes
# of text) would be 387 million nodes and many gigabytes.
MAX_ALIAS_NODES = 100_000

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_STR_TAG = "tag:yaml.org,2002:str"
_SCALAR = yaml.ScalarNode


class YamlLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """The safe loader (libyaml's when installed), resolving each plain scalar's text once per
    file (resolving every node's tag was a third of composing a large file); the tags are
    the safe loader's, which has no path resolvers."""

    _typed_starts = frozenset(k for k in _BaseLoader.yaml_implicit_resolvers if k is not None)
    assert None not in _BaseLoader.yaml_implicit_resolvers and not _BaseLoader.yaml_path_resolvers

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._tags: dict[str, str] = {}
        self._text = stream

    def get_single_node(self) -> Any:
        r"""The document's node tree; :class:`UnknownEscape` for a double-quoted string with a
        backslash YAML knows no escape for (a regex's ``\d``), where and what to write."""
        try:
            return super().get_single_node()
        except yaml.MarkedYAMLError as exc:
            if not str(exc.problem).startswith(_ESCAPE_ERRORS):
                raise
            raise UnknownEscape(_escape_problem(self._text, exc)) from None

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is not _SCALAR:
            return super().resolve(kind, value, implicit)  # type: ignore[no-any-return]
        if not implicit[0]:
            return _STR_TAG
        tag = self._tags.get(value)
        if tag is None:
            tag = (
                _STR_TAG
                if value and value[0] not in self._typed_starts
                else super().resolve(kind, value, implicit)
            )
            self._tags[value] = tag
        return tag

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        pass  # nothing to track without path resolvers (called for every node)

    def ascend_resolver(self) -> None:
        pass


_ALIAS_HINT = (
    "use anchors and aliases to reuse a criterion or a short list; write larger structures "
    "out, without aliases of aliases"
)


class AliasLimit(Limit):
    """Aliases that expand past MAX_ALIAS_NODES nodes, or into themselves (``loop``);
    ``alias`` counts the aliases before this one, for :meth:`located` to find it."""

    def __init__(self, alias: int, *, loop: bool, line: int | None) -> None:
        super().__init__(
            nesting_problem(line)
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
        for event in yaml.parse(text, Loader=YamlLoader):
            anchor = getattr(event, "anchor", None)
            if isinstance(event, yaml.CollectionStartEvent) and anchor is not None:
                collections.add(anchor)
            elif isinstance(event, yaml.AliasEvent) and anchor in collections:
                if count == 0:
                    mark, name = event.start_mark, shown(anchor)
                    line = mark.line + 1 if mark else None
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


class UnknownEscape(Limit, yaml.YAMLError):
    """A double-quoted string with a backslash that starts no YAML escape: invalid YAML, told
    with the field it is in and the string written as meant (a YAML error to whoever catches
    those)."""


# What libyaml and PyYAML say of a backslash that starts no escape (`\d`, `\x4`).
_ESCAPE_ERRORS = (
    "found unknown escape character",
    "did not find expected hexdecimal number",
    "expected escape sequence of",
)
# The characters that make an escape after a backslash in a double-quoted YAML string (a
# line break: the string goes on at the next line); x, u and U take 2, 4 and 8 hex digits.
_ESCAPES = frozenset('0abtnvfreNLP_ "/\\\t\n\r')
_HEX_ESCAPES = re.compile(r"x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}")


def _escape_problem(text: str, exc: yaml.MarkedYAMLError) -> Problem:
    """The problem of a double-quoted string holding an escape YAML does not know, at its
    line (the file does not parse, so, as for any YAML syntax error, no case or field is
    named): the string written as meant, in single quotes or with its backslash doubled."""
    mark, start = exc.problem_mark, exc.context_mark or exc.problem_mark
    span = None if start is None else _quoted_span(text, start.line, start.column)
    what, hint = "", "write the string in single quotes, or double the backslash"
    if span is not None:
        raw = text[span[0] + 1 : span[1] - 1]
        parts, unknown = [], []
        i = 0
        while i < len(raw):
            if raw[i] == "\\" and (
                raw[i + 1 : i + 2] in _ESCAPES or _HEX_ESCAPES.match(raw, i + 1)
            ):  # an escape: kept as written
                parts.append(raw[i : i + 2])
                i += 2
                continue
            if raw[i] == "\\":
                unknown.append(raw[i + 1 : i + 2])
            parts.append("\\\\" if raw[i] == "\\" else raw[i])
            i += 1
        what = f"\\{unknown[0]}" if unknown and unknown[0].isprintable() else ""
        before = text[text.rfind("\n", 0, span[0]) + 1 : span[0]]  # the line up to the quote
        key = f"{found[1]}: " if (found := _KEY.search(before)) else ""
        if len(raw) <= _SHOWN and "\n" not in raw:
            single = len(parts) == len(raw) and "'" not in raw  # no escape YAML knows either
            hint = f'double the backslash, `{key}"{"".join(parts)}"`'
            if single:
                hint = f"write the string in single quotes, `{key}'{raw}'`, or {hint}"
    return Problem(
        f"invalid YAML: {what or 'a backslash'} in a double-quoted string starts no escape "
        "YAML knows",
        line=None if mark is None else mark.line + 1,
        hint=f"in double quotes a backslash starts an escape, and {what or 'this one'} is "
        f"none: {hint}",
    )


_SHOWN = 80  # the longest string a hint writes out
_KEY = re.compile(r"([\w-]+):\s*$")  # the key the string is the value of, on its line


def _quoted_span(text: str, line: int, column: int) -> tuple[int, int] | None:
    """Where in ``text`` the double-quoted string that opens at ``line`` and ``column`` is,
    its quotes included."""
    lines = text.splitlines(keepends=True)
    if line >= len(lines) or lines[line][column : column + 1] != '"':
        return None
    i = begin = sum(len(row) for row in lines[:line]) + column
    i += 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return begin, i + 1
        else:
            i += 1
    return None


@dataclass(frozen=True, slots=True)
class Duplicate:
    """A key given twice in one mapping, where the data keeps only the last."""

    key: Any
    lines: tuple[int, int] | None  # the first and the second, when known
    path: tuple[str | int, ...] | None  # of the mapping, from the root of the document


_NUMBER_START = frozenset("0123456789+-.")
_INT_TAG = "tag:yaml.org,2002:int"
_MERGE_TAG = "tag:yaml.org,2002:merge"


def construct(
    loader: yaml.SafeLoader, root: yaml.Node, *, anchors: bool = True
) -> tuple[Any, list[Duplicate]]:
    """Build the data of a node tree (mappings, lists and strings here, several times quicker
    than the generic constructor), and find the keys given twice in a mapping. A list or
    mapping met a second time starts a copy whose every node is counted, stopping past
    MAX_ALIAS_NODES. ``anchors=False``: the text holds no '&', so no node is met twice."""
    found: list[tuple[yaml.Node, Any, int, int]] = []  # (mapping, key, first line, second line)
    finished: dict[int, bool] = {}  # id of each list and mapping met -> whether it is built
    aliases = 0  # aliases to lists and mappings met in the text so far (not within copies)
    copying = False  # within the copy of an alias
    copied = 0  # nodes built within copies

    def count() -> None:
        nonlocal copied
        copied += 1
        if copied > MAX_ALIAS_NODES:
            raise AliasLimit(aliases, loop=False, line=None)

    def build(node: yaml.Node, depth: int) -> Any:
        nonlocal aliases, copying
        if isinstance(node, yaml.ScalarNode):
            if copying:
                count()
            if node.tag != _STR_TAG:
                return _typed(loader, node)
            text = node.value
            if not node.style and text[:1] in _NUMBER_START and PLAIN_NUMBER.fullmatch(text):
                return PlainNumber(text)
            return text
        if depth > MAX_NESTING:
            raise Limit(nesting_problem(node.start_mark.line + 1))
        alias = False  # an alias written in the text, whose copy this is
        if anchors:
            done = finished.get(id(node))
            if done is None:
                finished[id(node)] = False
            elif not copying:
                if not done:  # the node is being built: the alias is inside its own anchor
                    raise AliasLimit(aliases, loop=True, line=node.start_mark.line + 1)
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
                    raise _mapping_error(
                        node, f"found a {key_node.id} as a key; a key is plain text", key_node
                    )
                key = build(key_node, depth + 1)
                try:
                    again = key in result
                except TypeError:  # an unhashable scalar, from some tag
                    raise _mapping_error(node, "found an unhashable key", key_node) from None
                if again:
                    firsts = firsts or first_keys(node)
                    repeated(node, firsts[key], key_node, key)
                result[key] = build(value_node, depth + 1)
            if merged:  # its own keys over the merged ones, an earlier mapping over a later
                result = {k: v for source in (*reversed(merged), result) for k, v in source.items()}
        if alias:
            copying = False
            aliases += 1
        elif anchors:
            finished[id(node)] = True
        return result

    def merge(node: yaml.Node, value_node: yaml.Node, depth: int) -> list[dict[Any, Any]]:
        listed = isinstance(value_node, yaml.SequenceNode)
        for source in value_node.value if listed else [value_node]:
            if not isinstance(source, yaml.MappingNode):
                found = getattr(source, "id", "node")
                raise _mapping_error(
                    node,
                    f"`<<` merges a mapping or a list of mappings, but found a {found}",
                    source,
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
                firsts.setdefault(k.value if k.tag == _STR_TAG else _typed(loader, k), k)
        return firsts

    def repeated(node: yaml.Node, first: yaml.Node, again: yaml.Node, key: Any) -> None:
        found.append((node, key, first.start_mark.line + 1, again.start_mark.line + 1))

    data = build(root, 1)
    paths = _node_paths(root, {id(node) for node, *_ in found}) if found else {}
    return data, [
        Duplicate(key, (first, second), paths.get(id(node))) for node, key, first, second in found
    ]


def _typed(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    """What a scalar node of any tag but str builds; :class:`Limit` for a value YAML cannot
    make."""
    text = node.value
    try:
        if node.tag == _INT_TAG and text.isdigit() and (text[0] != "0" or text == "0"):
            return int(text)  # plain decimal digits: what the int constructor makes, sooner
        return loader.construct_object(node)
    except (ValueError, OverflowError) as exc:  # 30 February, a 5000-digit number
        why = str(exc).split(";")[0]  # not "use sys.set_int_max_str_digits()"
        raise Limit(
            Problem(
                f"cannot read the value {shown(node.value)}: {why}",
                line=node.start_mark.line + 1,
                hint="quote it if it is text, or correct the value",
            )
        ) from None


def _mapping_error(node: yaml.Node, problem: str, at: yaml.Node) -> yaml.YAMLError:
    return yaml.constructor.ConstructorError(
        "while constructing a mapping", node.start_mark, problem, at.start_mark
    )


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


Lines = dict[tuple[str | int, ...], int]
"""Lines (from 1) by data path: each case's (``("cases", i)``, a bare list's too), the
file's ``target`` key and each key of its ``targets``."""


class _Declined(Exception):
    """The text holds something only :func:`construct` builds as it should."""


def stream(text: str) -> tuple[Any, Lines] | None:
    """The data of a plain YAML document, built from the parser's events (a node tree is many
    times its data: 270 MB for a 5 MB file), exactly as :func:`construct` builds it, and its
    :data:`Lines`; None when :func:`construct` must build it (anchors, merge keys, a key given
    twice, deep nesting, not one document, any error)."""
    loader = YamlLoader(text)
    try:
        return _Stream(loader).document()
    except Exception:  # whatever it is, construct says it (or builds the document) as always
        return None
    finally:
        loader.dispose()


_SHARED_TEXT = 40
_MISSING = object()
_ScalarEvent = yaml.ScalarEvent
_SequenceStartEvent = yaml.SequenceStartEvent
_SequenceEndEvent = yaml.SequenceEndEvent
_MappingStartEvent = yaml.MappingStartEvent
_MappingEndEvent = yaml.MappingEndEvent


def _line(event: Any) -> int:
    return int(event.start_mark.line) + 1


class _Stream:
    """The parser's events are of its own classes, never subclasses: each is told by its
    type, once (the 125,000 events of a file of 3,000 cases each went through a chain of
    isinstance checks)."""

    def __init__(self, loader: YamlLoader) -> None:
        self.loader = loader
        self.get = loader.get_event
        self.lines: Lines = {}
        # Each short text once: a criterion's id, type and keys repeat in every case, and
        # results hold them to the end of the session.
        self.texts: dict[str, str] = {}
        # What each plain scalar without a tag builds: its text alone decides it (the tag
        # is resolved from it), and keys, types and numbers repeat in every case.
        self.plain: dict[str, Any] = {}

    def document(self) -> tuple[Any, Lines] | None:
        get = self.get
        if not isinstance(get(), yaml.StreamStartEvent):
            return None
        if not isinstance(get(), yaml.DocumentStartEvent):
            return None  # an empty stream: the file is empty
        first = get()
        data = self.value(first, 1, "root", bare=isinstance(first, yaml.SequenceStartEvent))
        if not isinstance(get(), yaml.DocumentEndEvent) or not isinstance(
            get(), yaml.StreamEndEvent
        ):
            return None  # a second document: the composer's error
        return data, self.lines

    def value(self, event: Any, depth: int, role: str, *, bare: bool = False) -> Any:
        """Build ``event``'s value. ``role``: ``root``, ``cases`` (the list of cases),
        ``targets`` (the file's) or ``other``, for the lines kept."""
        kind = type(event)
        if kind is _ScalarEvent:
            if event.anchor is not None:
                raise _Declined
            return self.scalar(event)
        # An alias's name is its anchor.
        if getattr(event, "anchor", None) is not None or depth > MAX_NESTING:
            raise _Declined
        get = self.get
        if kind is _SequenceStartEvent:
            items: list[Any] = []
            cases = role == "cases" or (role == "root" and bare)
            item = get()
            while type(item) is not _SequenceEndEvent:
                if cases:
                    self.lines[("cases", len(items))] = _line(item)
                items.append(self.value(item, depth + 1, "other"))
                item = get()
            return items
        if kind is not _MappingStartEvent:
            raise _Declined
        mapping: dict[Any, Any] = {}
        key_event: Any = get()
        while type(key_event) is not _MappingEndEvent:
            if type(key_event) is not _ScalarEvent or key_event.anchor is not None:
                raise _Declined
            key = self.scalar(key_event)
            if key in mapping:
                raise _Declined
            inner = "other"
            if role != "other" and type(key) is str and key == key_event.value:
                if role == "root":
                    if key == "target":
                        self.lines[("target",)] = _line(key_event)
                    inner = {"cases": "cases", "targets": "targets"}.get(key, "other")
                elif role == "targets":
                    self.lines[("targets", key)] = _line(key_event)
            event = get()
            if type(event) is _ScalarEvent and event.anchor is None:  # most values: no call
                mapping[key] = self.scalar(event)
            else:
                mapping[key] = self.value(event, depth + 1, inner)
            key_event = get()
        return mapping

    def scalar(self, event: Any) -> Any:
        """What ``construct`` builds of a scalar node of this event; a merge key (``<<``),
        which only ``construct`` builds, is declined."""
        text = event.value
        if event.tag is None:
            if event.implicit[0] and not event.style:  # plain
                value = self.plain.get(text, _MISSING)
                if value is _MISSING:
                    tag = self.loader.resolve(_SCALAR, text, event.implicit)
                    value = self.plain[text] = self.built(event, tag)
                return value
            if event.style and not event.implicit[0]:  # quoted or a block: text
                return self.texts.setdefault(text, text) if len(text) <= _SHARED_TEXT else text
        return self.built(event, self.tag(event))

    def tag(self, event: Any) -> str:
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.loader.resolve(_SCALAR, event.value, event.implicit)
        return str(tag)

    def built(self, event: Any, tag: str) -> Any:
        text = event.value
        if tag == _STR_TAG:
            if not event.style and text[:1] in _NUMBER_START and PLAIN_NUMBER.fullmatch(text):
                return PlainNumber(text)
            if len(text) <= _SHARED_TEXT:  # one object per short text: ids, types, phrases
                return self.texts.setdefault(text, text)
            return text
        if tag == _MERGE_TAG:
            raise _Declined
        node = yaml.ScalarNode(tag, text, event.start_mark, event.end_mark, event.style)
        return _typed(self.loader, node)
