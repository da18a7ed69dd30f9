"""Each promptfoo test as promptfoo runs it: the tests of ``tests:`` and of ``scenarios:``
gathered, ``defaultTest`` merged in (its vars, assertions, threshold, options and
metadata), vars read from files, and each assertion resolved (a ``$ref`` to the config's
``assertionTemplates``). A test that cannot be merged is listed, never half-written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._common import is_number
from .promptfoo_config import Conversion
from .promptfoo_match import Unmappable
from .promptfoo_read import RawTest, read_tests

__all__ = ["Assertion", "Test", "gather_tests", "merge"]

_REF = re.compile(r"^#/assertionTemplates/([^/]+)$")
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


@dataclass
class Assertion:
    label: str  # e.g. "assert[1]", "defaultTest.assert[0] ($ref polite)"
    where: str  # file:line
    item: Any  # the assertion; an Unmappable to list; None after a problem
    default: bool = False  # from defaultTest: the same in every test


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


def gather_tests(ctx: Conversion, data: dict[str, Any]) -> list[tuple[str, RawTest]]:
    """(label, test) for each test of ``tests:`` and of ``scenarios:``."""
    value = data.get("tests")
    scenarios = data.get("scenarios")
    if value is None and not scenarios:
        # evaluator.ts: no tests at all runs one empty test (defaultTest still applies)
        value = [{}]
    if value is not None and not isinstance(value, str | list):
        ctx.problem("`tests` must be a list of tests or a file:// path", ("tests",))
        return []
    tests, notes = read_tests(value, ctx.parsed, ctx.tree)
    for text in notes:
        ctx.note(text)
    found = [(f"test {i}", t) for i, t in enumerate(tests, start=1)]
    if scenarios is None:
        return found
    if not isinstance(scenarios, list):
        ctx.problem("`scenarios` must be a list", ("scenarios",))
        return found
    for s, scenario in enumerate(scenarios):
        found += _scenario(ctx, s, scenario)
    return found


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
            ctx.budget.spend(tests=1)  # configs x tests: counted as the product is made
            if not isinstance(data, dict) or not isinstance(test, dict):
                ctx.stats.tests += 1
                ctx.skip(
                    ctx.at((*where, "tests", t)),
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
            line = ctx.parsed.line((*where, "tests", t))
            found.append(
                (
                    label,
                    RawTest(merged, str(ctx.path), line, ctx.tree.root, True, (*where, "tests", t)),
                )
            )
    return found


def merge(
    ctx: Conversion, number: int, labelled: tuple[str, RawTest], default: dict[str, Any]
) -> Test | None:
    """Test ``number``, ``labelled`` as the config names it, with ``default`` (the config's
    ``defaultTest``) merged in as promptfoo merges it; None when it is listed instead."""
    label, raw = labelled
    ctx.stats.tests += 1
    where = f"{raw.file}:{raw.line}" if raw.line else raw.file
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
    vars_ = _vars(ctx, default.get("vars"), where, label, ctx.tree.root)
    own = _vars(ctx, test.get("vars"), where, label, raw.base)
    if vars_ is None or own is None:
        return None
    asserts: list[Assertion] = []
    for source, name, in_config, file_where in (
        (default, "defaultTest.", True, None),
        (test, "", raw.in_config, raw),
    ):
        given = source.get("assert") or []
        if not isinstance(given, list):
            ctx.skip(where, label, "`assert` must be a list of assertions")
            return None
        for j, item in enumerate(given):
            a = _assertion(ctx, item, f"{name}assert[{j}]", j, in_config, file_where, label)
            a.default = file_where is None
            asserts.append(a)
    threshold = test.get("threshold")
    if threshold is None:  # evaluator.ts: `test.threshold ?? defaultTest.threshold`
        threshold = default.get("threshold")
    options = {**(default.get("options") or {}), **(test.get("options") or {})}
    metadata = {**(default.get("metadata") or {}), **(test.get("metadata") or {})}
    scoring = test.get("assertScoringFunction", default.get("assertScoringFunction"))
    return Test(
        number,
        label,
        where,
        description,
        {**vars_, **own},
        asserts,
        threshold,
        options,
        metadata,
        scoring,
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
    ctx: Conversion, item: Any, tag: str, j: int, in_config: bool, raw: RawTest | None, label: str
) -> Assertion:
    key: tuple[Any, ...] | None = ("defaultTest", "assert", j)
    if raw is not None:
        key = (*raw.key, "assert", j) if raw.key is not None else None
    where = (
        ctx.at(key)
        if key is not None
        else f"{raw.file}:{raw.line}"
        if raw and raw.line
        else str(raw.file if raw else ctx.path)
    )
    if isinstance(item, dict) and "$ref" in item:
        ref = item["$ref"]
        found = _REF.match(ref) if isinstance(ref, str) else None
        if not in_config:
            return Assertion(tag, where, Unmappable(f"$ref {ref!r} in a test file is not resolved"))
        if found is None or found.group(1) not in ctx.templates:
            ctx.problem(
                f"{label}, {tag}: $ref {ref!r} names no assertion template",
                key or (),
                "write it as '#/assertionTemplates/NAME', NAME a key of assertionTemplates "
                f"({', '.join(map(str, ctx.templates)) or 'none defined'})",
                field="$ref",
            )
            return Assertion(tag, where, None)
        target = ctx.templates[found.group(1)]
        item = (
            {**target, **{k: v for k, v in item.items() if k != "$ref"}}
            if isinstance(target, dict)
            else target
        )
        tag += f" ($ref {found.group(1)})"
    if isinstance(item, dict) and "weight" in item and not is_number(item["weight"]):
        ctx.problem(
            f"{label}, {tag}: `weight` must be a number, got {item['weight']!r}",
            key or (),
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
