"""The tests a promptfoo config gives: inline, or from files as promptfoo's
``src/util/testCaseReader.ts`` reads them (``.csv`` rows, ``.yaml``/``.json`` lists,
``.jsonl`` lines, globs), with CSV columns as ``src/csv.ts`` reads them
(``testCaseFromCsvRow``, ``assertionFromString``).

Files are read through :mod:`.promptfoo_files` (inside the config's tree only), and a
test file that cannot be read is noted, never taken as literal text. The prompts and
the file reader are re-exported here, the importer's one door to what a config points to.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .promptfoo_files import (
    CODE,
    FILE,
    GLOB,
    Budget,
    Parsed,
    Tree,
    is_file_ref,
    json_stringify,
    parse_yaml,
)
from .promptfoo_match import Unmappable
from .promptfoo_prompts import Prompt, PromptEntry, read_prompts

__all__ = [
    "FILE",
    "Parsed",
    "Prompt",
    "PromptEntry",
    "RawTest",
    "Tree",
    "assertion_from_string",
    "is_file_ref",
    "json_stringify",
    "parse_yaml",
    "read_prompts",
    "read_tests",
]

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
            tree.budget.spend(tests=1)
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
    head = name.split(":", 1)[0] if not GLOB.search(name) else name
    if head.lower().endswith(CODE):
        raise Unmappable("a test generator runs code")
    found: list[RawTest] = []
    for path in tree.paths(head):
        shown = tree.shown(path)
        suffix = path.suffix.lower()
        if suffix == ".csv":
            found += _csv_tests(tree.text(path, shown), shown, path.parent, tree.budget)
        elif suffix == ".jsonl":
            found += _jsonl_tests(tree.text(path, shown), shown, path.parent, tree.budget)
        elif suffix in (".yaml", ".yml", ".json"):
            doc = tree.document(path, shown)
            data = doc.data if isinstance(doc.data, list) else [doc.data]
            tree.budget.spend(tests=len(data))
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


def _jsonl_tests(text: str, shown: str, base: Path, budget: Budget) -> list[RawTest]:
    tests: list[RawTest] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        budget.spend(tests=1)
        try:
            tests.append(RawTest(json.loads(line), shown, number, base, False))
        except (ValueError, RecursionError) as exc:
            raise Unmappable(f"{shown}:{number} is not JSON ({exc})") from None
    return tests


def _csv_tests(text: str, shown: str, base: Path, budget: Budget) -> list[RawTest]:
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
            budget.spend(tests=1)
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
    if expected.startswith(FILE) and expected.lower().endswith(CODE[:6]):
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
