"""Loading rubric files (YAML or JSON) and responses files (JSONL).

Every mistake a user can make in a file becomes a :class:`Problem` that
names the file, the line, the case, the criterion and the field, and says
what to write instead; all problems of one file are raised together as one
:class:`RubricLoadError`. Line numbers come from the YAML node tree, which
the C parser builds at little cost; JSON files are parsed with ``json`` and
located through the YAML parser only when something is wrong.
"""

from __future__ import annotations

import contextlib
import difflib
import gc
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ._checks import PYTHON_REGEX_MAX_CHARS, regex_problem
from ._errors import Problem, RubricLoadError
from ._schema import CRITERION_TYPES, Case, FieldError, Suite

__all__ = [
    "LoadedSuite",
    "ResponseFile",
    "load_response_dir",
    "load_suite",
    "parse_suite",
    "paused_gc",
    "problems_from_validation",
]

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
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise RubricLoadError(
            path, [Problem(f"not UTF-8 text ({exc.reason})", hint="save the file as UTF-8")]
        ) from None
    return parse_suite(text, path=path)


def parse_suite(text: str, *, path: Path) -> LoadedSuite:
    """Validate rubric text; ``path`` names the file in errors and anchors relative paths."""
    data, node = _parse(text, path)
    bare_list = isinstance(data, list)
    if bare_list:
        data = {"cases": data}
    if not isinstance(data, dict):
        raise RubricLoadError(
            path,
            [
                Problem(
                    f"the top level is a {_kind(data)}",
                    line=1,
                    hint="write a mapping with `cases:` or a list of cases",
                )
            ],
        )
    if "cases" not in data:
        raise RubricLoadError(
            path,
            [
                Problem(
                    "no `cases:` in the file",
                    line=1,
                    field="cases",
                    hint="add\n    " + _EXAMPLES["cases"],
                )
            ],
        )
    locator = _Locator(text, path, node, bare_list=bare_list)
    try:
        suite = Suite.model_validate(data)
    except ValidationError as exc:
        raise RubricLoadError(path, [_problem(e, data, locator) for e in _errors(exc)]) from None
    problems = list(_semantic_problems(suite, locator))
    if problems:
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


def _parse(text: str, path: Path) -> tuple[Any, yaml.Node | None]:
    if path.suffix == ".json":
        try:
            return json.loads(text), None
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
    loader = _YamlLoader(text)
    try:
        node = loader.get_single_node()
        data = _construct(loader, node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        context = ""
        if exc.context and exc.context_mark and exc.context_mark is not mark:
            context = f" ({exc.context} that starts at line {exc.context_mark.line + 1})"
        raise RubricLoadError(
            path,
            [
                Problem(
                    f"invalid YAML: {exc.problem or exc.context}{context}",
                    line=mark.line + 1 if mark else None,
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
    return data, node


_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"


class _Unusual(Exception):
    """The document needs the full YAML constructor (merge keys, odd keys)."""


def _construct(loader: yaml.SafeLoader, root: yaml.Node) -> Any:
    """Build the data of a node tree: a fast path for the plain mappings, lists and
    strings rubric files are made of, several times quicker than the generic
    constructor on large files; anything unusual goes through the constructor."""

    def build(node: yaml.Node) -> Any:
        if isinstance(node, yaml.ScalarNode):
            if node.tag == _STR_TAG:
                return node.value
            return loader.construct_object(node)
        if isinstance(node, yaml.SequenceNode):
            return [build(item) for item in node.value]
        if isinstance(node, yaml.MappingNode):
            result = {}
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
                    raise _Unusual
                result[build(key_node)] = build(value_node)
            return result
        raise _Unusual

    try:
        return build(root)
    except (_Unusual, RecursionError, TypeError):
        return loader.construct_document(root)


def _kind(value: Any) -> str:
    return {dict: "mapping", list: "list", str: "string", type(None): "null"}.get(
        type(value), type(value).__name__
    )


class _Locator:
    """Finds the line of a field from its path in the data, through the YAML node tree."""

    def __init__(self, text: str, path: Path, node: yaml.Node | None, *, bare_list: bool) -> None:
        self._text, self._path, self._node, self._bare = text, path, node, bare_list
        self._parsed = node is not None

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
                for k, v in node.value:
                    if k.value in (step, wanted):
                        line = (k if key else v).start_mark.line
                        node = v
                        break
                else:
                    break
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


def _where(loc: tuple[str | int, ...]) -> _Where:
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
        if rest and isinstance(rest[0], str) and rest[0] in CRITERION_TYPES:
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


def _problem(error: Any, data: dict[str, Any], locator: _Locator) -> Problem:
    loc: tuple[str | int, ...] = tuple(error["loc"])
    where = _where(loc)
    kind: str = error["type"]
    case_id = None
    if where.case_index is not None:
        case_id = _get(data, "cases", where.case_index, "id")
        case_id = _label(case_id, where.case_index)
    criterion_id = None
    if where.container is not None:
        criterion_id = _get(
            data, *where.data_path()[: (2 if where.case_index is None else 4)], "id"
        )
        criterion_id = _label(criterion_id, where.criterion_index or 0)
        if where.container in ("global", "global_criteria"):
            criterion_id = f"global {criterion_id}"
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
                f"backtracking engine, which searches only the first {PYTHON_REGEX_MAX_CHARS} "
                "characters of an answer",
            )


def _semantic_problems(suite: Suite, locator: _Locator) -> Iterator[Problem]:
    yield from _regex_problems(suite.global_criteria, ("global",), locator, None)
    global_ids = {c.id for c in suite.global_criteria}
    seen_cases: dict[str, int] = {}
    for i, case in enumerate(suite.cases):
        line = locator.case_line(i)
        if case.id in seen_cases:
            first = suite.cases[seen_cases[case.id]]
            yield Problem(
                f"duplicate case id {first.id!r} (first at line {locator.case_line(seen_cases[case.id])})",
                line=locator.line(("cases", i, "id")),
                case=case.id,
                field="id",
                hint="give every case a unique id",
            )
        else:
            seen_cases[case.id] = i
        seen: set[str] = set()
        for j, criterion in enumerate(case.criteria):
            if criterion.id in seen or criterion.id in global_ids:
                origin = "in `global`" if criterion.id in global_ids else "earlier in this case"
                yield Problem(
                    f"criterion id {criterion.id!r} is used twice (also {origin})",
                    criterion=criterion.id,
                    line=locator.line(("cases", i, "criteria", j, "id")),
                    case=case.id,
                    field="id",
                    hint="give every criterion of a case a unique id",
                )
            seen.add(criterion.id)
        yield from _regex_problems(case.criteria, ("cases", i, "criteria"), locator, case.id)
        everything = [*suite.global_criteria, *case.criteria]
        if not any(c.axis == "substance" and c.effective_weight != 0 for c in everything):
            yield Problem(
                "the case has no substance criterion with a non-zero weight, so it cannot be scored",
                line=line,
                case=case.id,
                field="criteria",
                hint="add a criterion with `axis: substance` (the default) and a non-zero weight",
            )


# --- responses files ----------------------------------------------------------------------------


def load_response_dir(directory: Path) -> tuple[list[ResponseFile], list[Problem]]:
    """Read every ``<subject>.jsonl`` in ``directory``; bad lines become problems."""
    files, problems = [], []
    for path in sorted(directory.glob("*.jsonl")):
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
        lines = target.path.read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        return [Problem(f"cannot read: {exc}", path=target.path)]
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue

        def bad(message: str, hint: str = f"write {example}", **where: str) -> None:
            problems.append(Problem(message, hint=hint, path=target.path, line=number, **where))  # noqa: B023

        try:
            entry = json.loads(raw)
        except json.JSONDecodeError as exc:
            bad(f"invalid JSON ({exc.msg})", f"write one object per line: {example}")
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
