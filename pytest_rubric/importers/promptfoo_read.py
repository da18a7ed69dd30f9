"""What a promptfoo config points to: prompt files, test files, CSV rows, files as values.

promptfoo reads ``file://`` references relative to the config. Here they are read
only inside the config's directory tree (a path that resolves outside it, through
``..``, an absolute path or a symlink, is not read), only as regular files, and a
reference that cannot be read is :class:`~.promptfoo_match.Unmappable`: listed,
never taken as literal text.

The shapes follow promptfoo's readers: ``src/prompts/index.ts`` and
``src/prompts/processors/*.ts`` for prompts (a ``.txt`` file split on ``---``, a
``.json`` file whole, a ``.jsonl`` file a line each, a ``.yaml`` file as JSON, a
``.csv`` file a ``prompt`` column), ``src/util/testCaseReader.ts`` for tests
(``.csv`` rows, ``.yaml``/``.json`` lists, ``.jsonl`` lines, globs), and
``src/csv.ts`` (``testCaseFromCsvRow``, ``assertionFromString``) for CSV columns.
"""

from __future__ import annotations

import csv
import glob as globbing
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .._errors import Problem, RubricLoadError
from .._guards.limits import NotRegular, PlainNumber, read_text
from .promptfoo_match import Unmappable

__all__ = [
    "Parsed",
    "Prompt",
    "RawTest",
    "Tree",
    "assertion_from_string",
    "is_file_ref",
    "parse_yaml",
    "read_prompts",
    "read_tests",
]

FILE = "file://"
_GLOB = re.compile(r"[*?\[]")
_CODE = (".js", ".cjs", ".mjs", ".ts", ".cts", ".mts", ".py", ".rb")
_PROMPT_FILES = (".txt", ".json", ".jsonl", ".yaml", ".yml", ".csv", ".md", ".j2", *_CODE)
_PROMPT_DELIMITER = "---"  # src/prompts/constants.ts (PROMPTFOO_PROMPT_SEPARATOR unset)
# js-yaml reads YAML 1.2, where only true/false are booleans; PyYAML (1.1) also reads yes/no/on/off.
_YAML12_BOOLS = {"true", "false"}
_BOOL_TAG = "tag:yaml.org,2002:bool"
# src/types/index.ts, BaseAssertionTypesSchema: the names a CSV `__expected` value may start with.
_ASSERTION_TYPES = (
    "answer-relevance",
    "agent-rubric",
    "bleu",
    "classifier",
    "contains-all",
    "contains-any",
    "contains-html",
    "contains-json",
    "contains-sql",
    "contains-xml",
    "contains",
    "context-faithfulness",
    "context-recall",
    "context-relevance",
    "conversation-relevance",
    "cost",
    "ends-with",
    "equals",
    "factuality",
    "finish-reason",
    "g-eval",
    "gleu",
    "guardrails",
    "icontains-all",
    "icontains-any",
    "icontains",
    "is-html",
    "is-json",
    "is-refusal",
    "is-sql",
    "is-valid-function-call",
    "is-valid-openai-function-call",
    "is-valid-openai-tools-call",
    "is-xml",
    "javascript",
    "latency",
    "levenshtein",
    "llm-rubric",
    "meteor",
    "model-graded-closedqa",
    "model-graded-factuality",
    "moderation",
    "perplexity-score",
    "perplexity",
    "pi",
    "python",
    "regex",
    "rouge-n",
    "ruby",
    "search-rubric",
    "similar",
    "skill-used",
    "starts-with",
    "tool-call-f1",
    "webhook",
    "word-count",
)
_CSV_ASSERTION = re.compile(
    rf"^(not-)?({'|'.join(map(re.escape, _ASSERTION_TYPES))})(?:\((\d+(?:\.\d+)?)\))?(?::([\s\S]*))?$"
)
_CSV_ARRAY = {"contains-all", "contains-any", "icontains-all", "icontains-any"}
_CSV_RAW = {"contains-json", "is-json"}
_CSV_THRESHOLD = {
    "answer-relevance",
    "classifier",
    "context-faithfulness",
    "context-recall",
    "context-relevance",
    "cost",
    "latency",
    "levenshtein",
    "perplexity-score",
    "perplexity",
    "rouge-n",
    "similar",
    "starts-with",
}


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
        if _GLOB.search(name):
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

    parsed = _parse_yaml(text, path)
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


# --- prompts ------------------------------------------------------------------------------------


@dataclass
class Prompt:
    """One prompt template, with where it came from."""

    label: str
    template: str
    where: str = ""  # file:line of its entry in the config


@dataclass
class PromptEntry:
    """One entry of ``prompts:``: its prompts, or why none could be read."""

    index: int
    raw: Any
    label: str | None = None
    prompts: list[Prompt] = field(default_factory=list)
    why_not: str | None = None


def read_prompts(value: Any, tree: Tree) -> list[PromptEntry]:
    """Each entry of ``prompts:`` (a prompt, a list, or the legacy map of path to label).

    A plain string is a file when it says ``file://``, or when it is one word ending in a
    prompt file's extension (``prompts.txt``, as promptfoo's ``maybeFilePath`` reads it);
    else it is the prompt text.
    """
    if isinstance(value, str):
        items: list[Any] = [value]
    elif isinstance(value, dict):  # legacy: {path: label}
        items = [{"raw": raw, "label": label} for raw, label in value.items()]
    elif isinstance(value, list):
        items = value
    else:
        items = []
    entries = []
    for i, item in enumerate(items):
        raw = item.get("raw") or item.get("id") if isinstance(item, dict) else item
        label = item.get("label") if isinstance(item, dict) else None
        entry = PromptEntry(i, raw, label if isinstance(label, str) and label else None)
        entries.append(entry)
        if not isinstance(raw, str) or not raw.strip():
            entry.why_not = "a prompt is text, a file:// path, or {raw: ..., label: ...}"
            continue
        if not _looks_like_file(raw):
            # promptfoo labels an inline prompt with its own text
            entry.prompts = [Prompt(entry.label or _short(raw), raw)]
            continue
        try:
            entry.prompts = _prompt_files(raw, entry.label, tree)
        except Unmappable as exc:
            entry.why_not = str(exc)
    return entries


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


def _looks_like_file(raw: str) -> bool:
    if raw.startswith(FILE):
        return True
    head = raw.rsplit(":", 1)[0] if raw.count(":") == 1 else raw  # file.py:function
    return "\n" not in raw and " " not in raw and head.lower().endswith(_PROMPT_FILES)


def _prompt_files(raw: str, label: str | None, tree: Tree) -> list[Prompt]:
    name = raw.removeprefix(FILE)
    head, _, function = name.partition(":") if not _GLOB.search(name) else (name, "", "")
    if head.lower().endswith(_CODE):
        raise Unmappable(f"{raw} is a prompt function, which runs code")
    if head.lower().endswith((".md", ".j2")):
        raise Unmappable(f"{raw}: Markdown and Jinja prompt files are not read")
    if function:
        raise Unmappable(f"{raw} names a function, which only code prompt files have")
    prompts: list[Prompt] = []
    for path in tree.paths(head):
        shown = str(path.relative_to(tree.root))
        found = _prompt_file(path, shown, tree)
        many = len(found) > 1
        for k, text in enumerate(found):
            tag = f"{shown} #{k + 1}" if many else shown
            prompts.append(Prompt(f"{label}: {tag}" if label else tag, text))
    if not prompts:
        raise Unmappable(f"{raw} holds no prompt")
    return prompts


def _prompt_file(path: Path, shown: str, tree: Tree) -> list[str]:
    suffix = path.suffix.lower()
    if suffix == ".txt":
        text = tree.text(path, shown)
        return [p.strip() for p in text.split(_PROMPT_DELIMITER) if p.strip()]
    if suffix == ".json":
        return [tree.text(path, shown)]
    if suffix == ".jsonl":
        return [line for line in tree.text(path, shown).split("\n") if line.strip()]
    if suffix in (".yaml", ".yml"):
        return [json_stringify(tree.document(path, shown).data)]
    if suffix == ".csv":
        return _csv_prompts(tree.text(path, shown))
    raise Unmappable(f"{shown}: promptfoo reads no prompt from a {suffix or 'bare'} file")


def _csv_prompts(text: str) -> list[str]:
    """src/prompts/processors/csv.ts: a ``prompt`` column, or one prompt a line."""
    if "," not in text:
        lines = [line for line in text.split("\n") if line.strip()]
        return lines[1:] if lines and lines[0].strip().lower() == "prompt" else lines
    rows = list(csv.DictReader(io.StringIO(text)))
    return [row["prompt"].strip() for row in rows if (row.get("prompt") or "").strip()]


def json_stringify(value: Any, indent: int | None = None) -> str:
    """``JSON.stringify(value, null, indent)``."""
    if indent is None:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(value, ensure_ascii=False, indent=indent)


# --- tests --------------------------------------------------------------------------------------


@dataclass
class RawTest:
    """A test as written, before ``defaultTest`` is merged in, with where it is written."""

    data: Any
    file: str  # as messages show it
    line: int | None
    base: Path  # the directory its own file:// paths (vars files) are read from
    in_config: bool  # `$ref: '#/assertionTemplates/..'` resolves only in the config
    key: tuple[Any, ...] | None = None  # its place in the config, when written there


def read_tests(value: Any, parsed: Parsed, tree: Tree) -> tuple[list[RawTest], list[str]]:
    """Every test ``tests:`` gives (inline, or from files), and a note for each file that
    gives none."""
    config = str(tree.config)
    notes: list[str] = []
    tests: list[RawTest] = []
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    for i, item in enumerate(items):
        where = ("tests", i) if isinstance(value, list) else ("tests",)
        line = parsed.line(where)
        if not isinstance(item, str):
            tests.append(RawTest(item, config, line, tree.root, True, where))
            continue
        try:
            tests += _test_files(item, tree)
        except Unmappable as exc:
            notes.append(f"not mapped: {config}:{line}: tests from {item}: {exc}")
    return tests, notes


def _test_files(ref: str, tree: Tree) -> list[RawTest]:
    if ref.startswith(("https://", "http://", "huggingface://")):
        raise Unmappable("tests from the network (a sheet, a dataset hub) are not fetched")
    name = ref.removeprefix(FILE)
    head = name.split(":", 1)[0] if not _GLOB.search(name) else name
    if head.lower().endswith(_CODE):
        raise Unmappable("a test generator runs code")
    found: list[RawTest] = []
    for path in tree.paths(head):
        shown = tree.shown(path)
        suffix = path.suffix.lower()
        if suffix == ".csv":
            found += _csv_tests(tree.text(path, shown), shown, path.parent)
        elif suffix == ".jsonl":
            found += _jsonl_tests(tree.text(path, shown), shown, path.parent)
        elif suffix in (".yaml", ".yml", ".json"):
            doc = tree.document(path, shown)
            data = doc.data if isinstance(doc.data, list) else [doc.data]
            found += [
                RawTest(
                    t,
                    shown,
                    doc.line((i,)) if isinstance(doc.data, list) else 1,
                    path.parent,
                    False,
                )
                for i, t in enumerate(data)
            ]
        else:
            raise Unmappable(f"{shown}: promptfoo reads tests from .csv, .yaml, .json and .jsonl")
    return found


def _jsonl_tests(text: str, shown: str, base: Path) -> list[RawTest]:
    tests: list[RawTest] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            tests.append(RawTest(json.loads(line), shown, number, base, False))
        except (ValueError, RecursionError) as exc:
            raise Unmappable(f"{shown}:{number} is not JSON ({exc})") from None
    return tests


def _csv_tests(text: str, shown: str, base: Path) -> list[RawTest]:
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        return []
    except csv.Error as exc:
        raise Unmappable(f"{shown} is not CSV ({exc})") from None
    tests: list[RawTest] = []
    end = reader.line_num
    try:
        for row in reader:
            start, end = end + 1, reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            cells = dict(zip(header, row + [""] * (len(header) - len(row)), strict=False))
            # promptfoo describes a row without __description as "Row #N"; here its file and
            # line say which row it is.
            tests.append(RawTest(_csv_row(cells), shown, start, base, False))
    except csv.Error as exc:
        raise Unmappable(f"{shown}:{reader.line_num} is not CSV ({exc})") from None
    return tests


def _csv_row(row: dict[str, str]) -> dict[str, Any]:
    """src/csv.ts, testCaseFromCsvRow: ``__expected*`` columns are assertions, ``__``
    columns settings, the rest vars."""
    vars_: dict[str, str] = {}
    asserts: list[dict[str, Any]] = []
    options: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    configs: dict[int, dict[str, Any]] = {}
    test: dict[str, Any] = {}
    for key, value in row.items():
        if key.startswith("__expected"):
            if value.strip():
                asserts.append(assertion_from_string(value.strip()))
        elif key in ("__prefix", "__suffix"):
            options[key[2:]] = value
        elif key == "__description":
            if value:
                test["description"] = value
        elif key == "__providerOutput":
            if value:
                test["providerOutput"] = value
        elif key == "__metric":
            test["metric"] = value
        elif key == "__threshold":
            number = _parse_float(value)
            if number:  # `...(state.threshold ? { threshold } : {})`
                test["threshold"] = number
        elif key.startswith("__metadata:"):
            name = key.removeprefix("__metadata:")
            if name.endswith("[]") and value.strip():
                items = re.split(r"(?<!\\),", value)
                metadata[name[:-2]] = [v.strip().replace("\\,", ",", 1) for v in items]
            elif value.strip():
                metadata[name] = value
        elif key == "__metadata":
            pass  # promptfoo warns and ignores it
        elif key.startswith("__config:"):
            target, _, setting = key.removeprefix("__config:").partition(":")
            index = 0 if target == "__expected" else int(target.removeprefix("__expected") or 0) - 1
            number = _parse_float(value)
            if setting == "threshold" and index >= 0 and number is not None:
                configs.setdefault(index, {})["threshold"] = number
        else:
            vars_[key] = value
    metric = test.pop("metric", None)
    for i, assertion in enumerate(asserts):
        if metric:
            assertion["metric"] = metric
        assertion.update(configs.get(i, {}))
    test.update({"vars": vars_, "assert": asserts, "options": options})
    if metadata:
        test["metadata"] = metadata
    return test


def _parse_float(text: str) -> float | None:
    """``Number.parseFloat``: the longest leading number, NaN (None) when there is none."""
    found = re.match(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)", text)
    return float(found[1]) if found else None


def assertion_from_string(expected: str) -> dict[str, Any]:
    """src/csv.ts, assertionFromString: a CSV ``__expected`` cell as an assertion."""
    for prefix in ("javascript:", "fn:", "eval:"):
        if expected.startswith(prefix):
            return {"type": "javascript", "value": expected[len(prefix) :].strip()}
    if expected.startswith(FILE) and expected.lower().endswith(_CODE[:6]):
        return {"type": "javascript", "value": expected[len(FILE) :].strip()}
    for prefix in ("grade:", "llm-rubric:"):
        if expected.startswith(prefix):
            return {"type": "llm-rubric", "value": expected[len(prefix) :]}
    if expected.startswith("python:") or (
        expected.startswith(FILE) and (expected.endswith(".py") or ".py:" in expected)
    ):
        rest = (
            expected.removeprefix("python:")
            if expected.startswith("python:")
            else expected[len(FILE) :]
        )
        return {"type": "python", "value": rest.strip()}
    found = _CSV_ASSERTION.match(expected)
    if found is None:
        return {"type": "equals", "value": expected}
    inverse, kind, threshold, value = found.groups()
    assertion: dict[str, Any] = {"type": f"not-{kind}" if inverse else kind}
    if kind in _CSV_ARRAY:
        assertion["value"] = [v.strip() for v in value.split(",")] if value else value
    elif kind in _CSV_RAW:
        assertion["value"] = value
    else:
        assertion["value"] = value.strip() if value is not None else None
        if kind in _CSV_THRESHOLD:
            assertion["threshold"] = (
                float(threshold) if threshold else 0.8 if kind == "similar" else 0.75
            )
    if assertion["value"] is None:
        del assertion["value"]
    return assertion
