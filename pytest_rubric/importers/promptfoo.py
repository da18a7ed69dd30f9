"""``python -m pytest_rubric import promptfoo promptfooconfig.yaml``: promptfoo tests as a suite.

Each (prompt, test) pair becomes a case: the prompt rendered with the test's
``vars`` (``defaultTest.vars`` merged under them) is the ``question``, or its
``messages`` when the rendered prompt is a JSON chat. Each assertion
(``defaultTest.assert`` first, then the test's, ``$ref: "#/assertionTemplates/x"``
resolved) becomes one criterion with the assertion's ``weight``. promptfoo
passes a test when every assertion passes, or when the weighted mean reaches its
``threshold``: so a test without one is a report-only case whose criteria are all
``required`` (weight 0 included), a test with one has ``min_score: threshold``.

String checks become ``regex`` criteria with ``normalize: false`` (see
:mod:`.promptfoo_assert`, :mod:`.promptfoo_match`), so they pass exactly when
promptfoo's do. What cannot be kept exactly is listed with the reason and never
written: a test keeps its other criteria and the tag ``promptfoo:partial``; a
test left with no criterion is not written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import Problem, RubricLoadError
from . import promptfoo_assert
from ._common import ImportFailed, Output, is_number, validated
from .promptfoo_assert import render
from .promptfoo_match import (
    Unmappable,
)

__all__ = ["convert"]

PARTIAL_TAG = "promptfoo:partial"
_REF = re.compile(r"^#/assertionTemplates/([^/]+)$")
_TEST_KEYS = {"vars", "assert", "threshold", "description", "metadata", "options"}


@dataclass
class _Test:
    """One promptfoo test after defaultTest is merged in."""

    index: int
    line: int | None
    description: str | None
    vars: dict[str, Any]
    asserts: list[tuple[str, int | None, Any]]  # (label, line, raw assertion)
    threshold: Any
    metadata: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)


def convert(configs: list[Path]) -> Output:
    """The suite for each promptfoo config (one rubric file each); raise :class:`ImportFailed`."""
    problems: list[Problem] = []
    output = Output()
    names: dict[str, Path] = {}
    for path in configs:
        name = f"{_stem(path)}.rubric.yaml"
        if name in names:
            problems.append(
                Problem(
                    f"would write {name} again (also from {names[name]})",
                    path=path,
                    hint="import configs with different file names in separate runs",
                )
            )
            continue
        names[name] = path
        suite = _convert_one(path, problems, output.notes)
        if suite is not None:
            output.rubrics[name] = suite
    if problems:
        raise ImportFailed(problems)
    return output


def _stem(path: Path) -> str:
    stem = path.name
    for suffix in (".yaml", ".yml", ".json"):
        if stem.endswith(suffix):
            return stem[: -len(suffix)]
    return stem


def _convert_one(path: Path, problems: list[Problem], notes: list[str]) -> dict[str, Any] | None:
    before = len(problems)
    data, lines = _read(path, problems)
    if data is None:
        return None

    def problem(message: str, where: tuple[Any, ...], hint: str | None = None, **kw: Any) -> None:
        problems.append(Problem(message, line=_line(lines, where), path=path, hint=hint, **kw))

    if not isinstance(data, dict):
        problem("a promptfoo config is a mapping (prompts, providers, tests, ...)", ())
        return None
    prompts = _prompts(data.get("prompts"), problem)
    templates = data.get("assertionTemplates", {})
    if not isinstance(templates, dict):
        problem("`assertionTemplates` must map names to assertions", ("assertionTemplates",))
        templates = {}
    default = data.get("defaultTest", {})
    if isinstance(default, str):
        problem(
            "`defaultTest` from a file is not read",
            ("defaultTest",),
            "write defaultTest inline in the config",
        )
        default = {}
    if not isinstance(default, dict):
        problem("`defaultTest` must be a mapping", ("defaultTest",))
        default = {}
    tests = data.get("tests")
    if isinstance(tests, str) or (
        isinstance(tests, list) and any(isinstance(t, str) for t in tests)
    ):
        problem(
            "tests from files (file://, CSV, sheets) are not read",
            ("tests",),
            "write the tests inline under `tests:`",
        )
        return None
    if not isinstance(tests, list) or not tests:
        problem("`tests` must be a non-empty list of tests", ("tests",))
        return None
    merged = [_merge(i, t, default, templates, lines, problem) for i, t in enumerate(tests)]
    if len(problems) > before:
        return None
    cases: list[dict[str, Any]] = []
    skipped = 0
    for test in merged:
        if test is None:
            continue
        for p_index, prompt in enumerate(prompts):
            case = _case(test, prompt, p_index, len(prompts), path, problem, notes)
            if case is None:
                skipped += 1
            else:
                cases.append(case)
    if len(problems) > before:
        return None
    if not cases:
        problem(
            "no test could be mapped, so there is no suite to write",
            ("tests",),
            "see the notes above for why each test was not mapped",
        )
        return None
    for key in sorted(set(data) - {"prompts", "tests", "defaultTest", "assertionTemplates"}):
        if key in ("description",):
            continue
        notes.append(
            f"{path}: `{key}` is not imported (a rubric file has no {key}; answers come from "
            "--rubric-responses, --rubric-target or --rubric-model)"
        )
    suite: dict[str, Any] = {"suite": _stem(path)}
    if isinstance(data.get("description"), str):
        notes.append(f"{path}: the config's description is not kept (a rubric file has none)")
    suite["cases"] = cases
    for p in validated(str(path), suite):
        problems.append(p)
    if len(problems) > before:
        return None
    return suite


def _read(path: Path, problems: list[Problem]) -> tuple[Any, dict[tuple[Any, ...], int]]:
    from .._loader import _parse_yaml
    from .._safe_read import read_text

    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(Problem(f"cannot read the file: {exc}", path=path))
        return None, {}
    except RubricLoadError as exc:
        problems += [_with_path(p, path) for p in exc.problems]
        return None, {}
    try:
        parsed = _parse_yaml(text, path)
    except RubricLoadError as exc:
        problems += [_with_path(p, path) for p in exc.problems]
        return None, {}
    for dup in parsed.duplicates:
        problems.append(
            Problem(
                f"key {dup.key!r} is given twice"
                + (f" (lines {dup.lines[0]} and {dup.lines[1]})" if dup.lines else ""),
                line=dup.lines[1] if dup.lines else None,
                path=path,
                hint="keep one",
            )
        )
    return parsed.data, _lines(parsed.node)


def _with_path(p: Problem, path: Path) -> Problem:
    return Problem(p.message, line=p.line, path=path, field=p.field, hint=p.hint)


def _lines(root: Any) -> dict[tuple[Any, ...], int]:
    import yaml

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


def _line(lines: dict[tuple[Any, ...], int], where: tuple[Any, ...]) -> int | None:
    while where and where not in lines:
        where = where[:-1]
    return lines.get(where)


def _prompts(value: Any, problem: Any) -> list[tuple[str, str]]:
    """(label, template) of each prompt."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        problem("`prompts` must be a prompt or a non-empty list of prompts", ("prompts",))
        return []
    prompts = []
    for i, item in enumerate(value):
        raw = item.get("raw") if isinstance(item, dict) else item
        if not isinstance(raw, str) or not raw.strip():
            problem(
                "a prompt must be text or {raw: ..., label: ...}",
                ("prompts", i),
                "write the prompt text inline",
            )
            continue
        if raw.startswith("file://"):
            problem(
                f"prompt {raw!r} is read from a file, which this importer does not do",
                ("prompts", i),
                "paste the prompt text into `prompts:`",
            )
            continue
        label = item.get("label") or item.get("id") if isinstance(item, dict) else None
        prompts.append((str(label) if label else f"prompt {i + 1}", raw))
    return prompts


def _merge(
    index: int,
    test: Any,
    default: dict[str, Any],
    templates: dict[str, Any],
    lines: dict[tuple[Any, ...], int],
    problem: Any,
) -> _Test | None:
    where = ("tests", index)
    if not isinstance(test, dict):
        problem(f"test {index + 1} must be a mapping (vars, assert, ...)", where)
        return None
    description = test.get("description")
    label = _label(index, description)
    vars_: dict[str, Any] = {}
    for source, owner in ((default, ("defaultTest",)), (test, where)):
        given = source.get("vars", {})
        if isinstance(given, str) or not isinstance(given, dict):
            problem(f"{label}: `vars` must be a mapping of names to values", (*owner, "vars"))
            return None
        vars_.update(given)
    asserts: list[tuple[str, int | None, Any]] = []
    for source, owner, name in ((default, ("defaultTest",), "defaultTest"), (test, where, "")):
        given = source.get("assert", [])
        if not isinstance(given, list):
            problem(f"{label}: `assert` must be a list of assertions", (*owner, "assert"))
            return None
        for j, item in enumerate(given):
            at = (*owner, "assert", j)
            tag = f"{name + '.' if name else ''}assert[{j}]"
            if isinstance(item, dict) and "$ref" in item:
                ref = item["$ref"]
                match = _REF.match(ref) if isinstance(ref, str) else None
                if match is None or match.group(1) not in templates:
                    problem(
                        f"{label}, {tag}: $ref {ref!r} names no assertion template",
                        at,
                        "write it as '#/assertionTemplates/NAME', NAME a key of "
                        f"assertionTemplates ({', '.join(map(str, templates)) or 'none defined'})",
                        field="$ref",
                    )
                    continue
                target = templates[match.group(1)]
                item = {**target, **{k: v for k, v in item.items() if k != "$ref"}}
                tag += f" ($ref {match.group(1)})"
            if not isinstance(item, dict) or not isinstance(item.get("type"), str):
                problem(
                    f"{label}, {tag}: an assertion is a mapping with a `type`",
                    at,
                    field="type",
                )
                continue
            asserts.append((tag, _line(lines, at), item))
    threshold = test.get("threshold", default.get("threshold"))
    metadata = {**default.get("metadata", {}), **test.get("metadata", {})}
    options = {**default.get("options", {}), **test.get("options", {})}
    return _Test(
        index, _line(lines, where), description, vars_, asserts, threshold, metadata, options
    )


def _label(index: int, description: Any) -> str:
    return f"test {index + 1}" + (f" ({description!r})" if isinstance(description, str) else "")


def _case(
    test: _Test,
    prompt: tuple[str, str],
    p_index: int,
    n_prompts: int,
    path: Path,
    problem: Any,
    notes: list[str],
) -> dict[str, Any] | None:
    label = _label(test.index, test.description)
    if n_prompts > 1:
        label += f" x {prompt[0]}"
    where = f"{path}:{test.line}" if test.line else str(path)

    def unmapped(what: str, why: str) -> None:
        notes.append(f"not mapped: {where}: {label}, {what}: {why}")

    try:
        question = render(prompt[1], test.vars)
    except KeyError as exc:
        problem(
            f"{label}: the prompt uses {{{{ {exc.args[0]} }}}}, which no var of the test or of "
            "defaultTest sets",
            ("tests", test.index, "vars"),
            f"add `{exc.args[0]}: ...` to the test's vars",
            field="vars",
        )
        return None
    except Unmappable as exc:
        unmapped("the test", f"{exc}; the test is not written")
        return None
    for key in sorted(test.options):
        unmapped(
            f"options.{key}",
            "test options (transform, prefix, suffix, provider, ...) change what is asked or "
            "graded; the test is not written",
        )
        return None
    threshold = test.threshold
    if threshold is not None and not (is_number(threshold) and 0 <= threshold <= 1):
        unmapped("threshold", f"{threshold!r} is not a number in [0, 1]; the test is not written")
        return None
    criteria: list[dict[str, Any]] = []
    lost = 0
    for k, (tag, line, item) in enumerate(test.asserts):
        at = f"{path}:{line}" if line else where
        try:
            criterion = promptfoo_assert.criterion(item, test.vars, k + 1)
        except KeyError as exc:
            problem(
                f"{label}, {tag}: the value uses {{{{ {exc.args[0]} }}}}, which no var sets",
                ("tests", test.index, "vars"),
                field="value",
            )
            return None
        except Unmappable as exc:
            lost += 1
            notes.append(
                f"not mapped: {at}: {label}, {tag} ({item.get('type')}): {exc}; the test is "
                "written without it"
            )
            continue
        except ValueError as exc:
            problem(f"{label}, {tag}: {exc}", ("tests", test.index), field="value")
            return None
        if threshold is None:
            criterion["required"] = True
        criteria.append(criterion)
    if not criteria or not any(float(c.get("weight", 1)) > 0 for c in criteria):
        unmapped(
            "the test",
            "no assertion with a positive weight could be mapped; the test is not written",
        )
        return None
    case: dict[str, Any] = {"id": _case_id(test, p_index, n_prompts)}
    messages = _chat(question)
    if messages is not None:
        case["messages"] = messages
    else:
        case["question"] = question
    case["min_score"] = threshold  # None: report-only, every criterion required
    metadata = dict(test.metadata)
    if isinstance(test.description, str):
        metadata["description"] = test.description
    if n_prompts > 1:
        metadata["prompt"] = prompt[0]
    if metadata:
        case["metadata"] = metadata
    if lost:
        case["tags"] = [PARTIAL_TAG]
    if threshold is not None and any(c["type"] == "judge" for c in criteria):
        notes.append(
            f"{where}: {label}: with a threshold, promptfoo adds llm-rubric's 0-1 score; here a "
            "judged criterion earns 1 or 0"
        )
    case["criteria"] = criteria
    return case


def _case_id(test: _Test, p_index: int, n_prompts: int) -> str:
    slug = ""
    if isinstance(test.description, str):
        slug = re.sub(r"[^a-z0-9]+", "-", test.description.lower()).strip("-")[:40].strip("-")
    base = f"t{test.index + 1}" + (f"-{slug}" if slug else "")
    return base + (f"-p{p_index + 1}" if n_prompts > 1 else "")


def _chat(text: str) -> list[dict[str, str]] | None:
    """A rendered prompt that is a JSON chat (promptfoo sends those as messages)."""
    if not text.lstrip().startswith("["):
        return None
    try:
        turns = json.loads(text)
    except ValueError:
        return None
    if (
        isinstance(turns, list)
        and turns
        and all(
            isinstance(t, dict)
            and t.get("role") in ("system", "user", "assistant")
            and isinstance(t.get("content"), str)
            for t in turns
        )
    ):
        return [{"role": t["role"], "content": t["content"]} for t in turns]
    return None
