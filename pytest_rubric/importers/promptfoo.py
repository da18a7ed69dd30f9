"""``python -m pytest_rubric import promptfoo promptfooconfig.yaml``: promptfoo tests as a suite
(``docs/guides/import-promptfoo.md`` gives the mapping). Each prompt x test pair (and each
combination of a test's list vars) is a case and each assertion a criterion
(:mod:`.promptfoo_assert`); prompts and tests come from files as promptfoo's
``src/prompts/processors/*.ts``, ``src/util/testCaseReader.ts`` and ``src/csv.ts`` read
them, every file through :mod:`.promptfoo_files`. What cannot be graded here is listed as
``not mapped:``; input promptfoo itself would refuse is a problem, and then nothing is written.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import Problem, RubricLoadError
from .._guards.secrets import abridged
from ._common import Imported, ImportFailed, is_number, validated
from .nunjucks import render
from .promptfoo_assert import CSV_TYPES, MODEL_GRADED, check_type, criterion
from .promptfoo_files import (
    CODE,
    FILE,
    GLOB,
    Parsed,
    Quota,
    TooLarge,
    Tree,
    Unmappable,
    is_file_ref,
    json_stringify,
    parse_yaml,
)
from .promptfoo_render import combinations, prepare, render_prompt

PARTIAL_TAG = "promptfoo:partial"
_CONFIG_KEYS = {
    "prompts",
    "providers",
    "tests",
    "defaultTest",
    "assertionTemplates",
    "scenarios",
    "description",
}
_TEST_KEYS = {
    "vars",
    "assert",
    "threshold",
    "description",
    "metadata",
    "options",
    "provider",
    "providerOutput",
    "assertScoringFunction",
}
_REF = re.compile(r"^#/assertionTemplates/([^/]+)$")
# Test options that change what is asked or how the answer is read before grading.
_OPTIONS_NOT_KEPT = {
    "transform": "transforms the output with code before grading",
    "postprocess": "transforms the output with code before grading",
    "transformVars": "transforms the vars with code before asking",
    "storeOutputAs": "feeds its output to later tests",
}
_OPTIONS_QUIET = {
    "prefix",
    "suffix",
    "disableVarExpansion",
    "disableConversationVar",
    "runSerially",
}
_PROMPT_FILES = (".txt", ".json", ".jsonl", ".yaml", ".yml", ".csv", ".md", ".j2", *CODE)
_PROMPT_DELIMITER = "---"  # src/prompts/constants.ts (PROMPTFOO_PROMPT_SEPARATOR unset)
_CSV_ASSERTION = re.compile(r"^(not-)?([a-z0-9-]+)(?:\((\d+(?:\.\d+)?)\))?(?::([\s\S]*))?$")
# The prefixes of a cell that names its assertion's type (an llm-rubric's text is not trimmed).
_CSV_PREFIXES = [("javascript:", "javascript"), ("fn:", "javascript"), ("eval:", "javascript")]
_CSV_PREFIXES += [("grade:", "llm-rubric"), ("llm-rubric:", "llm-rubric"), ("python:", "python")]
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


class Conversion:
    """One config's conversion as every step reports through it: the config's file, tree and
    parsed lines, its assertion templates, the problems found (input promptfoo itself would
    refuse), the notes for the user (what is not mapped, and why) and the counts the closing
    note gives."""

    def __init__(
        self, path: Path, problems: list[Problem], notes: list[str], budget: Quota
    ) -> None:
        self.path, self.problems, self.notes = path, problems, notes
        self.tree = Tree(path, budget)  # budget: the whole import's, which every config spends
        self.parsed = Parsed(None, {})
        self.templates: dict[str, Any] = {}
        self.tests = self.written = self.listed = 0
        self._seen: set[str] = set(notes)

    def problem(
        self, message: str, where: tuple[Any, ...] | str, hint: str | None = None, **kw: Any
    ) -> None:
        """A problem at ``where``: a place in the config, or a test file's FILE:LINE."""
        if isinstance(where, str):
            found = Problem(message, path=where, hint=hint, **kw)
        else:
            found = Problem(message, line=self.parsed.line(where), path=self.path, hint=hint, **kw)
        if found not in self.problems:  # defaultTest's are met once per test
            self.problems.append(found)

    def note(self, text: str) -> None:
        if text not in self._seen:
            self._seen.add(text)
            self.notes.append(text)

    def unmapped(self, where: str, what: str, why: str) -> None:
        self.note(f"not mapped: {where}: {what}: {why}")

    def at(self, where: tuple[Any, ...]) -> str:
        line = self.parsed.line(where)
        return f"{self.path}:{line}" if line else str(self.path)

    def skip(self, where: str, label: str, why: str) -> None:
        self.listed += 1
        self.unmapped(where, label, f"{why}; the test is not written")


def _unset(names: set[str]) -> str:
    """What a note says of the template variables ``names`` that no var sets."""
    listed = ", ".join(f"{{{{ {n} }}}}" for n in sorted(names))
    return (
        f"{listed}, which no var sets; promptfoo renders it as empty text, and so does this import"
    )


def shown_value(value: Any) -> str:
    """A value as a message quotes it: on one line, cut to 60 characters."""
    return repr(abridged((value if isinstance(value, str) else repr(value)).replace("\n", " ")))


@dataclass
class PromptTemplate:
    label: str
    template: str
    where: str  # file:line of its entry in the config


@dataclass
class RawTest:
    """A test as written, before ``defaultTest`` is merged in, with where it is written."""

    data: Any
    where: str  # file:line, as messages show it
    base: Path  # the directory its own file:// paths (vars files) are read from
    # Its place in the config, when written there (`$ref: '#/assertionTemplates/..'`
    # resolves only in the config).
    key: tuple[Any, ...] | None = None


@dataclass
class Assertion:
    label: str  # e.g. "assert[1]", "defaultTest.assert[0] ($ref polite)"
    where: str  # file:line
    item: Any  # the assertion; an Unmappable to list; None after a problem (no case is made)
    default: bool = False  # from defaultTest: the same in every test

    @property
    def kind(self) -> str:
        return self.item.get("type", "?") if isinstance(self.item, dict) else "?"

    def check(self) -> None:
        """Raise :class:`Unmappable` when no value or option could map it."""
        if isinstance(self.item, Unmappable):
            raise self.item
        check_type(self.kind)


@dataclass
class Test:
    """One promptfoo test after defaultTest is merged in."""

    number: int
    label: str
    where: str
    description: str | None
    vars: dict[str, Any]
    asserts: list[Assertion]
    threshold: Any
    options: dict[str, Any]
    metadata: dict[str, Any]
    scoring_function: Any = None


def convert(configs: list[Path]) -> Imported:
    """The suite for each promptfoo config (one rubric file each); raise :class:`ImportFailed`."""
    problems: list[Problem] = []
    output = Imported()
    names: dict[str, Path] = {}
    budget = Quota()  # the whole import's: every config spends from it
    for path in configs:
        if (name := f"{_stem(path)}.rubric.yaml") in names:
            problems.append(
                Problem(
                    f"would write {name} again (also from {names[name]})",
                    path=path,
                    hint="import configs with different file names in separate runs",
                )
            )
            continue
        names[name] = path
        try:
            suite = _convert_config(Conversion(path, problems, output.notes, budget))
        except TooLarge as exc:  # the whole import stops here
            problems.append(
                Problem(
                    str(exc),
                    path=path,
                    hint="import fewer tests at a time, or narrow the vars and the files "
                    "their globs match",
                )
            )
            break
        if suite is not None:
            output.rubrics[name] = suite
    if problems:
        raise ImportFailed(problems)
    return output


def _stem(path: Path) -> str:
    return re.sub(r"\.(yaml|yml|json)$", "", path.name)


def _convert_config(ctx: Conversion) -> dict[str, Any] | None:
    """One config's suite, or None when it has problems (reported in ``ctx``) or no case."""
    before = len(ctx.problems)
    try:
        ctx.parsed = parse_yaml(ctx.tree.text(ctx.path, str(ctx.path)), ctx.path)
    except Unmappable as exc:
        ctx.problems.append(Problem(f"cannot read the config: {exc}", path=ctx.path))
        return None
    except RubricLoadError as exc:
        ctx.problems.extend(
            Problem(p.message, line=p.line, path=ctx.path, hint=p.hint) for p in exc.problems
        )
        return None
    data = ctx.parsed.data
    if not isinstance(data, dict):
        ctx.problem("a promptfoo config is a mapping (prompts, providers, tests, ...)", ())
        return None
    templates = data.get("assertionTemplates", {})
    if not isinstance(templates, dict):
        ctx.problem("`assertionTemplates` must map names to assertions", ("assertionTemplates",))
    else:
        ctx.templates = templates
    default = _default(ctx, data.get("defaultTest", {}))
    prompts = _prompts(ctx, data.get("prompts"))
    raw_tests = _gather_tests(ctx, data)
    if len(ctx.problems) > before or default is None:
        return None
    tests = [t for n, raw in enumerate(raw_tests, start=1) if (t := _merge(ctx, n, raw, default))]
    if len(ctx.problems) > before:
        return None
    cases = [case for test in tests for case in _cases(ctx, test, prompts)]
    _config_notes(ctx, data)
    ctx.note(
        f"{ctx.path}: {ctx.written} of {ctx.tests} tests written as {len(cases)} cases "
        f"({len(prompts)} prompt{'s' if len(prompts) != 1 else ''}); {ctx.listed} listed above"
    )
    if not cases:
        ctx.note(f"not mapped: {ctx.path}: no test could be mapped; no rubric file written")
        return None
    described = data.get("description")
    # The config's description names the suite; a rubric file is named after its stem.
    name = described.strip() if isinstance(described, str) else ""
    suite: dict[str, Any] = {"suite": name or _stem(ctx.path)}
    if any("min_score" not in c for c in cases):
        # promptfoo passes a test without a threshold only when every assertion passes.
        suite["min_score"] = 1.0
    suite["cases"] = cases
    ctx.problems.extend(validated(str(ctx.path), suite))
    return None if len(ctx.problems) > before else suite


def _default(ctx: Conversion, value: Any) -> RawTest | None:
    """``defaultTest``, in the config or in a ``file://``. promptfoo reads that file after
    it resolves the config's `$ref`s (util/config/load.ts), so it is read as a test file is."""
    key = ("defaultTest",)
    default = RawTest(value, ctx.at(key), ctx.tree.root, key)
    if is_file_ref(value):
        try:
            path = ctx.tree.path(value)
            data = ctx.tree.document(path, value).data
        except Unmappable as exc:
            ctx.unmapped(default.where, "defaultTest", f"{exc}; no test is written without it")
            return None
        default = RawTest(data, f"{ctx.tree.shown(path)}:1", ctx.tree.root)
    if not isinstance(default.data, dict):
        ctx.problem(
            "`defaultTest` must be a mapping (vars, assert, options, ...)",
            default.key or default.where,
        )
        default.data = {}
    return default


def _prompts(ctx: Conversion, value: Any) -> list[PromptTemplate]:
    """Each prompt of ``prompts:`` (a prompt, a list, or the legacy map of path to label).

    A plain string is a file when it says ``file://``, or when it is one word ending in a
    prompt file's extension (``prompts.txt``, as promptfoo's ``maybeFilePath`` reads it);
    else it is the prompt text.
    """
    if value is None:
        ctx.problem("the config has no `prompts`", (), "add the prompt text under `prompts:`")
        return []
    if isinstance(value, str):
        items: list[Any] = [value]
    elif isinstance(value, dict):  # legacy: {path: label}
        items = [{"raw": raw, "label": label} for raw, label in value.items()]
    elif isinstance(value, list):
        items = value
    else:
        ctx.problem(
            "`prompts` must be a prompt, a list of prompts, or a map of files to labels",
            ("prompts",),
        )
        return []
    prompts: list[PromptTemplate] = []
    for i, item in enumerate(items):
        raw = item.get("raw") or item.get("id") if isinstance(item, dict) else item
        label = item.get("label") if isinstance(item, dict) else None
        label = label if isinstance(label, str) and label else None
        where = ctx.at(("prompts", i))  # `prompts:` itself when it is not a list
        try:
            if not isinstance(raw, str) or not raw.strip():
                raise Unmappable("a prompt is text, a file:// path, or {raw: ..., label: ...}")
            if _looks_like_file(raw):
                found = _prompt_files(raw, label, ctx.tree, where)
            else:  # promptfoo labels an inline prompt with its own text
                found = [PromptTemplate(label or abridged(" ".join(raw.split())), raw, where)]
        except Unmappable as exc:
            ctx.unmapped(where, f"prompt {shown_value(raw)}", f"{exc}; no case asks it")
            continue
        prompts += found
    return prompts


def _looks_like_file(raw: str) -> bool:
    if raw.startswith(FILE):
        return True
    head = raw.rsplit(":", 1)[0] if raw.count(":") == 1 else raw  # file.py:function
    return "\n" not in raw and " " not in raw and head.lower().endswith(_PROMPT_FILES)


def _prompt_files(raw: str, label: str | None, tree: Tree, where: str) -> list[PromptTemplate]:
    name = raw.removeprefix(FILE)
    head, _, function = name.partition(":") if not GLOB.search(name) else (name, "", "")
    if head.lower().endswith(CODE):
        raise Unmappable(f"{raw} is a prompt function, which runs code")
    if head.lower().endswith((".md", ".j2")):
        raise Unmappable(f"{raw}: Markdown and Jinja prompt files are not read")
    if function:
        raise Unmappable(f"{raw} names a function, which only code prompt files have")
    prompts: list[PromptTemplate] = []
    for path in tree.paths(head):
        shown = str(path.relative_to(tree.root))
        found = _prompt_file(path, shown, tree)
        for k, text in enumerate(found):
            tag = f"{shown} #{k + 1}" if len(found) > 1 else shown
            prompts.append(PromptTemplate(f"{label}: {tag}" if label else tag, text, where))
    if not prompts:
        raise Unmappable(f"{raw} holds no prompt")
    return prompts


def _prompt_file(path: Path, shown: str, tree: Tree) -> list[str]:
    suffix = path.suffix.lower()
    if suffix == ".txt":
        return [p.strip() for p in tree.text(path, shown).split(_PROMPT_DELIMITER) if p.strip()]
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


def _config_notes(ctx: Conversion, data: dict[str, Any]) -> None:
    value = data.get("providers")
    providers = []
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, str):
            providers.append(item)
        elif isinstance(item, dict) and isinstance(item.get("id"), str):
            providers.append(item["id"])
        elif isinstance(item, dict) and len(item) == 1:
            providers.append(str(next(iter(item))))
    if providers:
        ctx.note(
            f"{ctx.path}: providers {', '.join(providers)} are not imported: each is a "
            "subject; give its answers with --rubric-responses DIR/<subject>.jsonl, or run "
            "a model with --rubric-model"
        )
    for key in sorted(set(data) - _CONFIG_KEYS):
        ctx.note(f"{ctx.path}: `{key}` is not imported (a rubric file has no {key})")


def _gather_tests(ctx: Conversion, data: dict[str, Any]) -> list[tuple[str, RawTest]]:
    """(label, test) for each test of ``tests:`` (inline, or from files; a file that gives
    none is noted) and of ``scenarios:``."""
    value = data.get("tests")
    scenarios = data.get("scenarios")
    if value is None and not scenarios:
        # evaluator.ts: no tests at all runs one empty test (defaultTest still applies)
        value = [{}]
    if value is not None and not isinstance(value, str | list):
        ctx.problem("`tests` must be a list of tests or a file:// path", ("tests",))
        return []
    tests: list[RawTest] = []
    for i, item in enumerate([value] if isinstance(value, str) else value or []):
        where = ("tests", i)  # `tests:` itself when it is one file
        if not isinstance(item, str):
            ctx.tree.budget.spend(tests=1)
            tests.append(RawTest(item, ctx.at(where), ctx.tree.root, where))
            continue
        try:
            tests += _test_files(item, ctx.tree)
        except Unmappable as exc:
            ctx.unmapped(ctx.at(where), f"tests from {item}", str(exc))
    found = [(f"test {i}", t) for i, t in enumerate(tests, start=1)]
    if scenarios is not None and not isinstance(scenarios, list):
        ctx.problem("`scenarios` must be a list", ("scenarios",))
    elif scenarios:
        found += [t for s, scenario in enumerate(scenarios) for t in _scenario(ctx, s, scenario)]
    return found


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
        rows: Iterable[tuple[int | None, Any]]  # (line, test)
        if suffix == ".csv":
            rows = _csv_tests(tree.text(path, shown), shown)
        elif suffix == ".jsonl":
            rows = _jsonl_tests(tree.text(path, shown), shown)
        elif suffix in (".yaml", ".yml", ".json"):
            doc = tree.document(path, shown)
            if isinstance(doc.data, list):
                rows = [(doc.line((i,)), test) for i, test in enumerate(doc.data)]
            else:
                rows = [(1, doc.data)]
        else:
            raise Unmappable(f"{shown}: promptfoo reads tests from .csv, .yaml, .json and .jsonl")
        for line, test in rows:
            tree.budget.spend(tests=1)  # before it is made
            found.append(RawTest(test, f"{shown}:{line}", path.parent))
    return found


def _jsonl_tests(text: str, shown: str) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            test = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise Unmappable(f"{shown}:{number} is not JSON ({exc})") from None
        yield number, test


def _csv_tests(text: str, shown: str) -> Iterator[tuple[int, dict[str, Any]]]:
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        return
    except csv.Error as exc:
        raise Unmappable(f"{shown} is not CSV ({exc})") from None
    for column, name in enumerate(header, start=1):
        try:
            _config_index(name)
        except ValueError as exc:
            raise Unmappable(f"{shown}:1, column {column}: {exc}") from None
    end = reader.line_num
    try:
        for row in reader:
            start, end = end + 1, reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            cells = dict(zip(header, row + [""] * (len(header) - len(row)), strict=False))
            # promptfoo describes a row without __description as "Row #N"; here its file and
            # line say which row it is.
            yield start, _csv_row(cells)
    except csv.Error as exc:
        raise Unmappable(f"{shown}:{reader.line_num} is not CSV ({exc})") from None


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
        elif key in ("__description", "__providerOutput"):
            if value:
                test[key[2:]] = value
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
            index = _config_index(key)  # _csv_tests checked the header
            number = _parse_float(value)
            if index is not None and index >= 0 and number is not None:
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


def _config_index(column: str) -> int | None:
    """src/csv.ts parseConfigColumn: the index of the assertion a
    ``__config:__expected<N>:threshold`` column sets; None for a column promptfoo ignores
    (any other, or a ``__config:`` one not of two parts); ValueError for one it refuses."""
    parts = column.removeprefix("__config:").split(":")
    if not column.startswith("__config:") or len(parts) != 2:
        return None
    found = re.fullmatch(r"__expected([0-9]*)", parts[0])
    if found is None or parts[1] != "threshold":
        raise ValueError(
            f"promptfoo refuses the column {column!r}; write __config:__expected:threshold "
            "or __config:__expectedN:threshold, N the number of an __expectedN column"
        )
    if not found[1]:
        return 0
    digits = found[1].lstrip("0") or "0"
    return int(digits) - 1 if len(digits) < 10 else None  # no row has a billion columns


def _parse_float(text: str) -> float | None:
    """``Number.parseFloat``: the longest leading number, NaN (None) when there is none."""
    found = re.match(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)", text)
    return float(found[1]) if found else None


def assertion_from_string(expected: str) -> dict[str, Any]:
    """src/csv.ts, assertionFromString: a CSV ``__expected`` cell as an assertion."""
    for prefix, kind in _CSV_PREFIXES:
        if expected.startswith(prefix):
            value = expected[len(prefix) :]
            return {"type": kind, "value": value if kind == "llm-rubric" else value.strip()}
    if expected.startswith(FILE) and expected.lower().endswith(CODE[:6]):
        return {"type": "javascript", "value": expected[len(FILE) :].strip()}
    if expected.startswith(FILE) and (expected.endswith(".py") or ".py:" in expected):
        return {"type": "python", "value": expected[len(FILE) :].strip()}
    if (found := _CSV_ASSERTION.match(expected)) is None or found[2] not in CSV_TYPES:
        return {"type": "equals", "value": expected}
    inverse, kind, threshold, value = found.groups()
    assertion: dict[str, Any] = {"type": f"not-{kind}" if inverse else kind}
    if kind in {"contains-all", "contains-any", "icontains-all", "icontains-any"}:
        assertion["value"] = [v.strip() for v in value.split(",")] if value else value
    elif kind in {"contains-json", "is-json"}:
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


def _scenario(ctx: Conversion, s: int, scenario: Any) -> list[tuple[str, RawTest]]:
    where = ("scenarios", s)
    if not isinstance(scenario, dict) or not isinstance(scenario.get("config"), list):
        ctx.problem("a scenario is a mapping with a `config` list and `tests`", where)
        return []
    tests = scenario.get("tests") or [{}]
    found = []
    for c, data in enumerate(scenario["config"]):
        for t, test in enumerate(tests if isinstance(tests, list) else []):
            label = f"scenario {s + 1}, config {c + 1}, test {t + 1}"
            at = (*where, "tests", t)
            ctx.tree.budget.spend(tests=1)  # configs x tests: counted as the product is made
            if not isinstance(data, dict) or not isinstance(test, dict):
                ctx.tests += 1
                ctx.skip(
                    ctx.at(at),
                    label,
                    "a scenario's config entries and tests are mappings (tests from files "
                    "are not read there)",
                )
                continue
            # evaluator.ts: {...data, ...test}, vars and options merged under the test's
            merged = {**data, **test}
            for key in ("vars", "options"):
                mine, theirs = data.get(key), test.get(key)
                if isinstance(mine, dict) and isinstance(theirs, dict | None):
                    merged[key] = {**mine, **(theirs or {})}
            found.append((label, RawTest(merged, ctx.at(at), ctx.tree.root, at)))
    return found


def _merge(
    ctx: Conversion, number: int, labelled: tuple[str, RawTest], default: RawTest
) -> Test | None:
    """Test ``number``, ``labelled`` as the config names it, with ``default`` (the config's
    ``defaultTest``) merged in as promptfoo merges it; None when it is listed instead."""
    label, raw = labelled
    ctx.tests += 1
    where = raw.where
    test = raw.data
    if not isinstance(test, dict):
        ctx.skip(where, label, "a test is a mapping (vars, assert, ...)")
        return None
    description = test.get("description")
    if isinstance(description, str) and description:
        label += f" ({description!r})"
    else:
        description = None
    for key in sorted(set(test) - _TEST_KEYS):
        ctx.note(f"{where}: {label}: `{key}` on a test is not imported")
    if test.get("provider") is not None:
        ctx.note(f"{where}: {label}: promptfoo asks its own provider; here each subject does")
    if test.get("providerOutput") is not None:
        ctx.note(
            f"{where}: {label}: promptfoo grades its fixed providerOutput; here each "
            "subject's answer is graded"
        )
    vars_ = _vars(ctx, default.data.get("vars"), where, label, ctx.tree.root)
    own = _vars(ctx, test.get("vars"), where, label, raw.base)
    if vars_ is None or own is None:
        return None
    asserts: list[Assertion] = []
    for source, name in ((default, "defaultTest."), (raw, "")):
        given = source.data.get("assert") or []
        if not isinstance(given, list):
            ctx.skip(where, label, "`assert` must be a list of assertions")
            return None
        for j, item in enumerate(given):
            at = None if source.key is None else (*source.key, "assert", j)
            a = _assertion(ctx, item, f"{name}assert[{j}]", at, source.where, label)
            a.default = bool(name)
            asserts.append(a)
    threshold = test.get("threshold")
    if threshold is None:  # evaluator.ts: `test.threshold ?? defaultTest.threshold`
        threshold = default.data.get("threshold")
    options = {**(default.data.get("options") or {}), **(test.get("options") or {})}
    metadata = {**(default.data.get("metadata") or {}), **(test.get("metadata") or {})}
    scoring = test.get("assertScoringFunction", default.data.get("assertScoringFunction"))
    vars_ = {**vars_, **own}
    return Test(
        number, label, where, description, vars_, asserts, threshold, options, metadata, scoring
    )


def _vars(ctx: Conversion, value: Any, where: str, label: str, base: Path) -> dict[str, Any] | None:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str | list):  # testCaseReader.ts, readTestFiles: YAML files merged
        merged: dict[str, Any] = {}
        try:
            for ref in [value] if isinstance(value, str) else value:
                for path in ctx.tree.paths(str(ref), base=base):
                    doc = ctx.tree.document(path, str(ref)).data
                    if not isinstance(doc, dict):
                        raise Unmappable(f"{ref} does not hold a mapping of vars")
                    merged.update(doc)
        except Unmappable as exc:
            ctx.skip(where, label, f"vars from {exc}")
            return None
        return merged
    ctx.skip(where, label, "`vars` must be a mapping of names to values")
    return None


def _assertion(
    ctx: Conversion, item: Any, tag: str, key: tuple[Any, ...] | None, test_where: str, label: str
) -> Assertion:
    """The assertion resolved, at ``key`` in the config (None: in a test file, at
    ``test_where``)."""
    where = test_where if key is None else ctx.at(key)
    if isinstance(item, dict) and "$ref" in item:
        ref = item["$ref"]
        found = _REF.match(ref) if isinstance(ref, str) else None
        if key is None:
            return Assertion(tag, where, Unmappable(f"$ref {ref!r} in a test file is not resolved"))
        if found is None or found.group(1) not in ctx.templates:
            ctx.problem(
                f"{label}, {tag}: $ref {ref!r} names no assertion template",
                key,
                "write it as '#/assertionTemplates/NAME', NAME a key of assertionTemplates "
                f"({', '.join(map(str, ctx.templates)) or 'none defined'})",
                field="$ref",
            )
            return Assertion(tag, where, None)
        target = ctx.templates[found.group(1)]
        if isinstance(target, dict):
            item = {**target, **{k: v for k, v in item.items() if k != "$ref"}}
        else:
            item = target
        tag += f" ($ref {found.group(1)})"
    if isinstance(item, dict) and "weight" in item and not is_number(item["weight"]):
        ctx.problem(
            f"{label}, {tag}: `weight` must be a number, got {item['weight']!r}",
            key or where,
            field="weight",
        )
        return Assertion(tag, where, None)
    if not isinstance(item, dict) or not isinstance(item.get("type"), str):
        if key is not None:
            ctx.problem(
                f"{label}, {tag}: an assertion is a mapping with a `type`", key, field="type"
            )
            return Assertion(tag, where, None)
        return Assertion(tag, where, Unmappable("an assertion is a mapping with a `type`"))
    return Assertion(tag, where, item)


def _cases(ctx: Conversion, test: Test, prompts: list[PromptTemplate]) -> list[dict[str, Any]]:
    """The test's cases (each vars combination x each prompt); the test is counted as
    written when one case is, else listed once with the reason."""
    why = _test_not_kept(ctx, test)
    # Every assertion of a test left out whole that could not be mapped anyway is listed too:
    # removing the reason the test is left out is not enough.
    for a in test.asserts if why is not None else []:
        try:
            a.check()
        except Unmappable as exc:
            ctx.unmapped(a.where, _what(test, a), str(exc))
    if why is None and not prompts:
        why = "no prompt of the config could be read (see above)"
    combos: list[dict[str, Any]] = []
    if why is None:
        try:
            combos = combinations(
                test.vars, ctx.tree, expand=not test.options.get("disableVarExpansion")
            )
        except Unmappable as exc:
            why = f"vars: {exc}"
    slug = re.sub(r"[^a-z0-9]+", "-", (test.description or "").lower()).strip("-")[:40].strip("-")
    base = f"t{test.number}" + (f"-{slug}" if slug else "")
    cases: list[dict[str, Any]] = []
    for k, combo in enumerate(combos):
        which = f"{test.label}, vars combination {k + 1}" if len(combos) > 1 else test.label
        variant = f"{base}-v{k + 1}" if len(combos) > 1 else base
        ctx.tree.budget.spend(cases=len(prompts))  # before any of them is made
        try:
            vars_ = prepare(combo, ctx.tree)
        except Unmappable as exc:
            why = f"vars: {exc}"
            if len(combos) > 1:
                ctx.unmapped(test.where, which, f"{why}; its cases are not written")
            continue
        criteria, lost = _criteria(ctx, test, vars_)
        if criteria is None:
            why = "no assertion has a positive weight"
            if lost:
                why = "no assertion could be mapped (see above)"
            continue
        for j, prompt in enumerate(prompts):
            case = _case(ctx, test, prompt, vars_, criteria, lost, len(prompts) > 1)
            if case is not None:
                case["id"] = f"{variant}-p{j + 1}" if len(prompts) > 1 else variant
                ctx.tree.budget.spend_on(case)  # the text it is written as
                cases.append(case)
    if cases:
        ctx.written += 1
    else:
        ctx.skip(
            test.where, test.label, why or "no prompt could be asked with its vars (see above)"
        )
    return cases


def _test_not_kept(ctx: Conversion, test: Test) -> str | None:
    for key, why in _OPTIONS_NOT_KEPT.items():
        if test.options.get(key) is not None:
            return f"options.{key} {why}"
    if test.scoring_function is not None:
        return "assertScoringFunction replaces promptfoo's weighted mean with code"
    if not test.asserts:
        return "it has no assertion (promptfoo passes it whatever the answer); nothing to grade"
    if (threshold := test.threshold) is not None and not is_number(threshold):
        return f"threshold {threshold!r} is not a number"
    if threshold and not 0 < threshold <= 1:
        return (
            f"threshold {threshold:g} is outside (0, 1]: promptfoo decides the test "
            "whatever the answer"
        )
    for key in sorted(set(test.options) - set(_OPTIONS_NOT_KEPT) - _OPTIONS_QUIET):
        if key == "provider":
            ctx.note(
                f"{ctx.path}: the grader named by options.provider is not kept: "
                "--rubric-judge grades"
            )
        elif key != "rubricPrompt":
            ctx.note(f"{test.where}: {test.label}: options.{key} is not imported")
    return None


def _what(test: Test, a: Assertion) -> str:
    """How a listing names an assertion: a defaultTest assertion is listed once, for every
    test, unless its reason is the test's own."""
    if a.default:
        return f"{a.label} ({a.kind}), in every test"
    return f"{test.label}, {a.label} ({a.kind})"


def _criteria(
    ctx: Conversion, test: Test, vars_: dict[str, Any]
) -> tuple[list[dict[str, Any]] | None, int]:
    criteria: list[dict[str, Any]] = []
    lost: list[tuple[str, str, str]] = []  # (where, what, why) of each assertion left out
    for a in test.asserts:
        what = _what(test, a)
        try:
            a.check()
            if test.options.get("rubricPrompt") is not None and a.kind in MODEL_GRADED:
                raise Unmappable("the test grades it with its own rubricPrompt")
            mapped, notes = criterion(_values(ctx, a.item, vars_))
        except Unmappable as exc:
            lost.append((a.where, what, str(exc)))
        except ValueError as exc:  # promptfoo fails the test on it (an invariant)
            lost.append((a.where, what, f"promptfoo refuses it: {exc}"))
        else:
            for text in notes:
                ctx.note(f"{a.where}: {what}: {text}")
            criteria.append(mapped)
    written = any(c.get("weight", 1) > 0 for c in criteria)
    for where, what, why in lost:
        if written and not what.endswith("in every test"):
            why += "; the test is written without it"
        ctx.unmapped(where, what, why)
    if not written:
        return None, len(lost)
    seen: dict[str, int] = {}
    for c in criteria:  # ids made unique: `contains-paris`, `contains-paris-2`
        seen[c["id"]] = count = seen.get(c["id"], 0) + 1
        if count > 1:
            c["id"] = f"{c['id']}-{count}"
    return criteria, len(lost)


def _values(ctx: Conversion, item: dict[str, Any], vars_: dict[str, Any]) -> dict[str, Any]:
    """The assertion with its value read from its file, or rendered with the vars."""
    missing: set[str] = set()

    def ready(value: Any) -> Any:
        if is_file_ref(value):
            return _file_value(ctx, value)
        return render(value, vars_, missing, ctx.tree.budget) if isinstance(value, str) else value

    value = item.get("value")
    value = [ready(v) for v in value] if isinstance(value, list) else ready(value)
    if missing:
        ctx.note(f"{ctx.path}: an assertion's value uses {_unset(missing)}")
    return {**item, "value": value} if "value" in item else item


def _file_value(ctx: Conversion, ref: str) -> Any:
    """assertions/utils.ts, processFileReference: YAML and JSON parsed, text trimmed."""
    path = ctx.tree.path(ref)
    suffix = path.suffix.lower()
    if suffix in (".json", ".yaml", ".yml"):
        return ctx.tree.document(path, ref).data
    if suffix == ".txt":
        return ctx.tree.text(path, ref).strip()
    if suffix in (".js", ".cjs", ".mjs", ".ts", ".py"):
        raise Unmappable(f"its value comes from running {ref}")
    raise Unmappable(f"{ref}: promptfoo reads assertion values from .txt, .json and .yaml files")


def _case(
    ctx: Conversion,
    test: Test,
    prompt: PromptTemplate,
    vars_: dict[str, Any],
    criteria: list[dict[str, Any]],
    lost: int,
    several_prompts: bool,
) -> dict[str, Any] | None:
    template = (
        f"{test.options.get('prefix') or ''}{prompt.template}{test.options.get('suffix') or ''}"
    )
    shown = shown_value(prompt.label)
    try:
        rendered = render_prompt(template, vars_, ctx.tree.budget)
    except Unmappable as exc:
        ctx.unmapped(prompt.where, f"prompt {shown}", f"{exc}; no case asks it")
        return None
    if rendered.missing:
        ctx.note(f"{test.where}: {test.label}: prompt {shown} uses {_unset(rendered.missing)}")
    case: dict[str, Any] = {"id": ""}
    if rendered.messages is not None:
        case["messages"] = rendered.messages
    else:
        case["question"] = rendered.question
    if test.threshold:  # a number (_test_not_kept leaves out a test with any other)
        case["min_score"] = test.threshold
        if any(c["type"] == "judge" for c in criteria):
            ctx.note(
                f"{test.where}: {test.label}: with a threshold, promptfoo adds llm-rubric's "
                "0-1 score; here a judged criterion earns 1 or 0"
            )
    metadata = dict(test.metadata)
    if test.description:
        metadata["description"] = test.description
    if several_prompts:
        metadata["prompt"] = prompt.label
    if metadata:
        case["metadata"] = metadata
    if lost:
        case["tags"] = [PARTIAL_TAG]
    case["criteria"] = [dict(c) for c in criteria]
    return case
