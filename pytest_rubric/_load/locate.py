"""Problems located in a rubric file: pydantic's errors and repeated keys, each a
:class:`Problem` naming the line, case, criterion and field, and what to write instead; and
the files a rubric file names, as problems name them (:func:`run_relative`, :func:`path_hint`).
Lines come from the YAML node tree, composed for a streamed YAML or a JSON file only when
something is wrong.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from .._errors import Problem
from .._guards.limits import kind_of, quoted, shown
from .._guards.secrets import abridged
from .._guards.yaml import Duplicate, Lines, YamlLoader
from .._schema import CRITERION_TYPES, LIST_TAG, PATH_TAG, Case, Suite
from ..criteria.model import CriterionModel, FieldError

_FIELD_ALIASES = {"global_criteria": "global", "json_schema": "schema"}
# A field's other spelling either way: a path may name `global` where the file has `global_criteria`.
_OTHER_SPELLING = {**_FIELD_ALIASES, **{v: k for k, v in _FIELD_ALIASES.items()}}
EXAMPLES = {
    "cases": 'cases:\n      - id: q01\n        question: "..."\n        criteria: [...]',
    "id": "id: q01",
    # Neutral on purpose: a hint fits any team's domain, not one of ours.
    "criteria": 'criteria:\n      - {id: says_it, type: any_of, any_of: ["a phrase the answer holds"]}',
    "any_of": 'any_of: ["a phrase", "another phrase"]',
    "all_of": 'all_of: ["first phrase", "second phrase"]',
    "phrases": 'phrases: ["a known-wrong claim"]',
    "pattern": "pattern: '\\bword\\b'",
    "value": "value: 42",
    "requirement": 'requirement: "Answers the question that was asked"',
    "function": 'function: "mypackage.checks:is_polite"',
}
Types = Mapping[str, type[CriterionModel]]  # a session's criterion types, by name


def duplicate_problem(
    duplicate: Duplicate, data: Any, *, bare_list: bool, json_file: bool
) -> Problem:
    """The problem of a key given twice, named by case, criterion and field where known."""
    what = "JSON object" if json_file else "mapping"
    where = _Where()
    if duplicate.path is not None:
        path = ("cases", *duplicate.path) if bare_list else duplicate.path
        where = _where((*path, str(duplicate.key)), tagged=False)
    case, criterion = _labels(data, where)
    field_name = dotted(where.field) if where.field else shown(duplicate.key)
    lines = duplicate.lines
    return Problem(
        f"the key {quoted(duplicate.key)} is given twice in one {what}"
        + (f" (lines {lines[0]} and {lines[1]})" if lines else "")
        + "; only the last one would count",
        line=lines[1] if lines else None,
        case=case,
        criterion=criterion,
        field=field_name,
        hint="keep one of them, or rename the other",
    )


def dotted(path: Sequence[str | int]) -> str:
    """A path in the data as a problem names its field: ``fields./total.value``, an empty
    key as ``''``."""
    return ".".join("''" if step == "" else str(step) for step in path)


class Locator:
    """Finds the line of a field from its path in the data, through the YAML node tree."""

    def __init__(
        self,
        text: str,
        node: yaml.Node | None,
        *,
        bare_list: bool,
        types: Types = CRITERION_TYPES,
        lines: Lines | None = None,
        top: type[BaseModel] = Suite,
        path: Path | None = None,
    ) -> None:
        self._text, self._node, self._bare = text, node, bare_list
        self.path = path  # the file, as a warning about it names it (None: by line alone)
        self._lines = lines  # a streamed YAML file's: the tree is composed for any other line
        self.types = types  # the criterion types the file was read with
        self.top = top  # what the data is: a rubric file, or assert_rubric's one rubric
        self._parsed = node is not None
        # Per mapping node, where each key is first: a file with thousands of
        # problems in one mapping (unknown keys, say) is located in linear time.
        self._keys: dict[int, dict[str, int]] = {}

    def line(self, data_path: Sequence[str | int]) -> int | None:
        """The line of the key at ``data_path`` (from 1), or of the deepest one found."""
        if self._lines is not None and (known := self._lines.get(tuple(data_path))) is not None:
            return known
        line, _ = self._walk(data_path)
        return None if line is None else line + 1

    def written(self, data_path: Sequence[str | int]) -> str | None:
        """The value at ``data_path`` as the file writes it, when it is a bare (unquoted)
        word: what YAML made a boolean or a number of."""
        _, node = self._walk(data_path)
        if isinstance(node, yaml.ScalarNode) and not node.style:
            return str(node.value)
        return None

    def _walk(self, data_path: Sequence[str | int]) -> tuple[int | None, yaml.Node | None]:
        """The line (from 0) of the key at ``data_path``, or of the deepest one found, and the
        value's node when the whole path was found."""
        if not self._parsed and self._text:  # JSON: located through YAML, on the error path
            self._parsed = True
            try:
                self._node = yaml.compose(self._text, Loader=YamlLoader)
            except yaml.YAMLError:
                self._node = None
        if (node := self._node) is None:
            return None, None
        steps = list(data_path)
        if self._bare and steps and steps[0] == "cases":
            steps = steps[1:]
        line = node.start_mark.line
        for step in steps:
            if isinstance(node, yaml.MappingNode):
                other = _OTHER_SPELLING.get(step) if isinstance(step, str) else None
                if (keys := self._keys.get(id(node))) is None:
                    keys = self._keys[id(node)] = {}
                    for position, (k, _) in enumerate(node.value):
                        if isinstance(k, yaml.ScalarNode):
                            keys.setdefault(k.value, position)
                found = [keys[s] for s in (step, other) if isinstance(s, str) and s in keys]
                if not found:
                    return line, None
                k, v = node.value[min(found)]
                line = k.start_mark.line
                node = v
            elif (
                isinstance(node, yaml.SequenceNode)
                and isinstance(step, int)
                and step < len(node.value)
            ):
                node = node.value[step]
                line = node.start_mark.line
            else:
                return line, None
        return line, node

    def case_line(self, index: int) -> int | None:
        return None if self._node is None and self._lines is None else self.line(("cases", index))


# --- turning pydantic errors into problems ------------------------------------------------------


def validation_problems(
    exc: ValidationError, data: dict[str, Any], locator: Locator
) -> list[Problem]:
    """A problem for each of pydantic's errors worth showing."""
    return [_problem(e, data, locator) for e in _errors(exc)]


def _errors(exc: ValidationError) -> list[Any]:
    # A list whose items failed is not also "too short": pydantic counts only the items that
    # validated (a claim without its `tool` left `claims` with "0 items").
    errors = exc.errors()
    failed_items = {
        tuple(e["loc"][:i]) for e in errors for i, step in enumerate(e["loc"]) if type(step) is int
    }
    # A required field misspelt (`pattrn:`) is one problem, the unknown field's, whose "did you
    # mean" names it: not also the missing field it was meant to be.
    missing = {tuple(e["loc"]) for e in errors if e["type"] == "missing" and e["loc"]}
    misspelt = set()
    for e in errors:
        if e["type"] == "extra_forbidden" and e["loc"]:
            parent = tuple(e["loc"][:-1])
            names = [str(loc[-1]) for loc in missing if loc[:-1] == parent]
            misspelt |= {
                (*parent, n) for n in difflib.get_close_matches(str(e["loc"][-1]), names, n=1)
            }
    return [
        e
        for e in errors
        if not (e["type"] == "too_short" and tuple(e["loc"]) in failed_items)
        and not (e["type"] == "missing" and tuple(e["loc"]) in misspelt)
    ]


@dataclass(slots=True)
class _Where:
    case_index: int | None = None
    container: str | None = None  # "criteria" or "global_criteria"
    criterion_index: int | None = None
    tag: str | None = None
    field: tuple[str | int, ...] = ()
    body: bool = False  # in the body of a `json` criterion's field: `tag` is the body's type

    def data_path(self) -> tuple[str | int, ...]:
        head: tuple[str | int, ...] = () if self.case_index is None else ("cases", self.case_index)
        if self.container is not None:
            head += (self.container, self.criterion_index or 0)
        return head + self.field


def _where(
    loc: tuple[str | int, ...], *, tagged: bool = True, types: Types = CRITERION_TYPES
) -> _Where:
    """Where a path in the data points; ``tagged``: pydantic's (it names a criterion's type)."""
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
        if tagged and rest and isinstance(rest[0], str) and rest[0] in types:
            where.tag, rest = rest[0], rest[1:]
        if rest[:1] == ["fields"] and len(rest) > 2 and str(rest[2]) in types:
            # fields -> pointer -> the body's type (pydantic's tag, not in the data)
            where.tag, where.body, rest = str(rest[2]), True, [*rest[:2], *rest[3:]]
    if rest[-1:] == ["[key]"]:  # pydantic's mark for a mapping's key, not in the data
        rest = rest[:-1]
    where.field = tuple(rest)
    return where


def value_at(data: Any, *steps: str | int) -> Any:
    """The raw value at a path in the data, by a field's name or alias, or None."""
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


def _allowed_fields(where: _Where, types: Types, top: type[BaseModel]) -> list[str]:
    if where.tag is not None:
        model: Any = types[where.tag]
    elif where.container is not None:
        return []
    elif where.case_index is not None:
        model = Case
    else:
        model = top
    names = []
    for name, info in model.model_fields.items():
        if where.body and name in CriterionModel.model_fields:
            continue  # a field's body has no id, weight, axis... of its own
        choices = getattr(info.validation_alias, "choices", None)
        names += [str(choices[0])] if choices else [name]  # the documented spelling only
    return names


def plain_id(value: Any) -> str | None:
    """An id as the schema reads it (``7`` is "7"), or None when it is not usable as one."""
    return None if isinstance(value, bool) or not isinstance(value, str | int) else str(value)


def item_label(given_id: Any, index: int) -> str:
    """How a problem names a case or criterion: its id, or its position when the id is unusable."""
    return plain_id(given_id) or f"#{index + 1}"


def case_label(data: Any, index: int) -> str:
    """How a problem names case ``index`` (made only for a problem: most cases have none)."""
    return item_label(value_at(data, "cases", index, "id"), index)


def _other_types_field(name: str, tag: str, types: Types) -> str | None:
    """What to say of a field that type ``tag`` lacks but other types have (a judge's
    `requirement` on `grounded`), or None when it is no field of theirs."""
    if name in CriterionModel.model_fields:  # every criterion's, so not a type's own
        return None
    others = [f"`{t}`" for t, model in types.items() if t != tag and name in model.model_fields]
    if not others:
        return None
    said = (
        f"`{tag}` has no `{name}` (a field of {', '.join(others[:3])}{', ...' * (len(others) > 3)})"
    )
    fixed = getattr(types[tag], name, None)  # what the type sets itself (grounded's requirement)
    return said + (f'; its {name} is always "{fixed}".' if isinstance(fixed, str) else ".")


def _inside_model(data: Any, where: _Where, field: str) -> bool:
    """Whether a :class:`FieldError` about ``field`` came from the validator of a model
    nested at ``where`` (its value a mapping), not from a field's own validator, whose
    error pydantic already places at that field (``args``, ``schema``)."""
    last = str(where.field[-1])
    return isinstance(value_at(data, *where.data_path()), dict) and field not in (
        last,
        _FIELD_ALIASES.get(last, last),
    )


def _labels(data: Any, where: _Where) -> tuple[str | None, str | None]:
    case_id = None if where.case_index is None else case_label(data, where.case_index)
    criterion_id = None
    if where.container is not None:
        criterion_id = value_at(
            data, *where.data_path()[: (2 if where.case_index is None else 4)], "id"
        )
        criterion_id = item_label(criterion_id, where.criterion_index or 0)
        if where.container in ("global", "global_criteria"):
            criterion_id = f"global {criterion_id}"
    return case_id, criterion_id


def _problem(error: Any, data: dict[str, Any], locator: Locator) -> Problem:
    loc: tuple[str | int, ...] = tuple(p for p in error["loc"] if p not in (LIST_TAG, PATH_TAG))
    where = _where(loc, types=locator.types)
    kind: str = error["type"]
    case_id, criterion_id = _labels(data, where)
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        # The criterion's (or a json field's body's) `type` is what is wrong, or missing.
        where.field = (*where.field, "type")
    cause = error.get("ctx", {}).get("error")
    inside: tuple[str | int, ...] = ()
    if isinstance(cause, FieldError):
        if not where.field or _inside_model(data, where, cause.field):
            # A model validator's finding, about one of its fields: a criterion's, or a
            # model's within a field (the `pattern` of claims.0).
            where.field = (*where.field, cause.field)
        inside = cause.path  # further into the field's value, for the line
    field_name = dotted(where.field) if where.field else None
    if field_name is not None:
        field_name = _FIELD_ALIASES.get(field_name, field_name)
    line = locator.line((*where.data_path(), *inside))
    message, hint = _explain(kind, error, where, field_name, locator)
    return Problem(
        message, line=line, case=case_id, criterion=criterion_id, field=field_name, hint=hint
    )


# What other evaluation tools call our criterion types (promptfoo's assertions, mostly):
# "did you mean" answers these where spelling alone would not.
_OTHER_TOOLS: dict[str, str] = {
    **dict.fromkeys(("contains", "icontains", "contains-any", "icontains-any"), "any_of"),
    **dict.fromkeys(("contains-all", "icontains-all"), "all_of"),
    **dict.fromkeys(("not-contains", "not-icontains"), "forbidden"),
    **dict.fromkeys(("regexp", "matches"), "regex"),
    **dict.fromkeys(("is-json", "contains-json"), "json"),
    **dict.fromkeys(("llm-rubric", "g-eval"), "judge"),
    **dict.fromkeys(("levenshtein", "similar"), "fuzzy"),
    "python": "callable",
}


def _explain(
    kind: str, error: Any, where: _Where, field_name: str | None, locator: Locator
) -> tuple[str, str | None]:
    types = locator.types
    leaf = str(where.field[-1]) if where.field else None
    if kind == "missing":
        example = EXAMPLES.get(str(leaf), f"{leaf}: ...")
        return f"missing required field `{leaf}`", (
            f"add\n    {example}" if "\n" in example else f"add `{example}`"
        )
    if kind == "extra_forbidden":
        allowed = _allowed_fields(where, types, locator.top)
        close = difflib.get_close_matches(str(leaf), allowed, n=1, cutoff=0.5)
        hint = f"did you mean `{close[0]}`?" if close else None
        if where.tag is not None and (other := _other_types_field(str(leaf), where.tag, types)):
            hint = other  # a field of other types is no misspelling of a near name here
        if leaf == "criteria" and where.case_index is None and where.tag is None:
            hint = (
                "`criteria` belongs to a case: indent it under the case's `- id:` line, level "
                "with `question:`; criteria for every case go under `global:`."
            )
        listing = f"Allowed here: {', '.join(allowed)}." if allowed else None
        shown = f"`{leaf}`" if leaf and leaf.strip() == leaf else repr(leaf)  # "" or " x"
        return f"unknown field {shown}", " ".join(h for h in (hint, listing) if h) or None
    if kind == "union_tag_invalid":
        ctx = error.get("ctx", {})  # the types allowed here (a field's check: deterministic)
        tag, allowed = str(ctx.get("tag", error.get("input"))), list(types)
        allowed = [t for t in allowed if f"'{t}'" in str(ctx.get("expected_tags", allowed))]
        other = _OTHER_TOOLS.get(tag.lower())
        close = [other] if other else difflib.get_close_matches(tag, allowed, n=1, cutoff=0.5)
        hint = (f"did you mean `type: {close[0]}`? " if close else "") + (
            f"use one of {', '.join(allowed)}"
        )
        known = f"criterion type {tag!r} cannot be used here"  # a judged one in a field, say
        return known if tag in types else f"unknown criterion type {tag!r}", hint
    if kind == "union_tag_not_found":
        return "criterion has no `type`", (
            f"add `type:` (one of {', '.join(types)}), or a `requirement:` for a judged criterion"
        )
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        hint = None
        if where.field:
            what = f"`{field_name}`"
            hint = f"write a mapping: `{_named(leaf)}{{name: value, ...}}`"
        elif where.container:
            what = "a criterion"
            hint = "write it as `{id: ..., type: ..., ...}` or as a nested block"
        else:
            what = "a case" if where.case_index is not None else "the file"
        return f"{what} must be a mapping, got {kind_of(error.get('input'))}", hint
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
    named = _named(leaf)
    if kind in ("string_type", "literal_error", "enum") and isinstance(got, bool | int | float):
        # What YAML made of a bare word: quoting it gives text, which is all a text field
        # needs; a field of a few values needs one of them (`verdict: "YES"` is no verdict).
        written = locator.written(where.data_path())
        if isinstance(got, bool):
            read = f"YAML read a bare yes/no/on/off/true/false as {got}"
        else:
            read = f"YAML read the bare {written or got} as a number"
        if kind == "string_type":
            return f"`{field_name}` must be text, but {read}", f'quote it: `{named}"..."`'
        expected = str(error.get("ctx", {}).get("expected", "one of its values"))
        hint = _one_of(expected, named, written, bare=True)
        return f"`{field_name}` must be {expected}, but {read}", hint
    shown = abridged(repr(got) if not isinstance(got, dict | list) else kind_of(got))
    subject = f"`{field_name}`" if field_name else "value"
    msg = str(error["msg"])
    got_text = f", got {shown}" if msg.startswith("Input should be") and ", got" not in msg else ""
    msg = msg.replace("Tuple", "List").replace("a valid tuple", "a list")  # a YAML list is a list
    msg = msg.replace(" after validation", "")
    return f"{subject}: {msg}{got_text}", _hint(kind, error, got, named)


def _named(leaf: str | None) -> str:
    """How a hint's example writes the field: ``question: ``, nothing for a list's item."""
    return f"{leaf}: " if leaf and not leaf.isdigit() else ""


def _hint(kind: str, error: Any, got: Any, named: str) -> str | None:
    """What to write, by pydantic's kind of error and the type the field wants."""
    ctx = error.get("ctx", {})
    if kind in ("literal_error", "enum"):
        return _one_of(str(ctx.get("expected", "")), named, got if isinstance(got, str) else None)
    if kind == "string_type":
        # A mapping in a text field is most often text holding ": " (`tags: [theme: x]`).
        held = '; quote text that holds ": "' if isinstance(got, dict) else ""
        return f'write a string: `{named}"..."`{held}'
    if kind == "float_type" and isinstance(got, int) and not isinstance(got, bool):
        return f"write a number a float holds (below 1.8e308), such as `{named}2.1e6`"
    if kind in ("too_short", "too_long") and isinstance(got, dict):
        return None  # an empty mapping is not an empty list
    hint = _HINTS.get(kind)
    return hint and hint.format(named, **ctx)


def _one_of(expected: str, named: str, written: str | None, *, bare: bool = False) -> str | None:
    """The hint for a field of a few values (pydantic's ``expected``: "'MET' or 'UNMET'"),
    given what was written there (``bare``: a word YAML made a boolean or a number of)."""
    values = re.findall(r"'([^']*)'", expected)
    if not values:
        return None
    if bare and written in values:  # quoted, it is the value
        return f'quote it: `{named}"{written}"`'
    close = [v for v in values if written is not None and v.casefold() == written.casefold()]
    close = close or difflib.get_close_matches(written or "", values, n=1, cutoff=0.6)
    if len(values) <= 3:
        listing = "write " + " or ".join(f"`{named}{v}`" for v in values)
    else:
        listing = f"write one of {', '.join(values)}"
    not_quoted = (
        f" (quoted, `{written}` is still none of them)" if bare and written and not close else ""
    )
    return (f"did you mean `{named}{close[0]}`? " if close else "") + listing + not_quoted


_HINTS = {
    "too_short": "write at least one item: `{0}[...]`",
    "too_long": "write at most {max_length} items",
    "string_too_long": "shorten it to {max_length} characters or fewer",
    **dict.fromkeys(("tuple_type", "list_type"), "write a list: `{0}[...]`"),
    **dict.fromkeys(("float_type", "float_parsing"), "write a number: `{0}1`"),
    **dict.fromkeys(("int_type", "int_parsing", "int_from_float"), "write a whole number: `{0}3`"),
    "greater_than_equal": "write a number of {ge} or more",
    "greater_than": "write a number above {gt}",
    "less_than_equal": "write a number of {le} or less",
    "less_than": "write a number below {lt}",
    **dict.fromkeys(("bool_parsing", "bool_type"), "write true or false"),
}


# Files a rubric file names, as a problem names them --------------------------------------


def run_relative(path: Path) -> Path:
    """``path`` as a problem names another file than the rubric file: relative to the folder
    pytest runs in when it is under it (as the rubric file itself is named), else as given."""
    try:
        here = Path.cwd()
    except OSError:  # the working folder was removed
        return path
    if path.is_relative_to(here):
        return path.relative_to(here)
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):  # a loop of symbolic links
        return path
    return resolved.relative_to(here) if resolved.is_relative_to(here) else path


def near_names(path: Path, *, dirs: bool = False, suffix: str = "") -> str | None:
    """The name beside the missing ``path`` that it most likely misspells, for a "did you
    mean": a folder, or a file ending in ``suffix`` (compared without it: ``ex.jsonl`` is
    not ``calib.jsonl``); the first 1000 entries are looked at."""
    try:
        names = {
            entry.name.removesuffix(suffix): entry.name
            for entry in itertools.islice(path.parent.iterdir(), 1000)
            if (entry.is_dir() if dirs else entry.is_file() and entry.name.endswith(suffix))
        }
    except OSError:
        return None
    close = difflib.get_close_matches(path.name.removesuffix(suffix), names, n=1, cutoff=0.6)
    return names[close[0]] if close else None


def path_hint(
    key: str, written: str, rubric: Path, *, dirs: bool = False, suffix: str = "", otherwise: str
) -> str:
    """What to write when the rubric file's ``key: written`` names no file (or folder) it can
    read: the name beside it that ``written`` most likely misspells, else ``otherwise``; and
    that the path is relative to the rubric file's folder."""
    relative = (
        f"`{key}:` is a path relative to this rubric file's folder, {run_relative(rubric.parent)}"
    )
    target = rubric.parent / written
    if close := near_names(target, dirs=dirs, suffix=suffix):
        fixed = f"{PurePath(written).parent / close}{'/' if dirs else ''}"
        return f"did you mean `{key}: {fixed}`? ({relative})"
    return f"{otherwise}, or fix the path ({relative})"
