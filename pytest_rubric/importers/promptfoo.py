"""``python -m pytest_rubric import promptfoo promptfooconfig.yaml``: promptfoo tests as a suite.

Each prompt x test pair becomes a case (and each combination of a test's list vars,
as promptfoo expands them): the prompt rendered with the test's vars
(``defaultTest.vars`` under them) is the ``question``, or the ``messages`` of a
chat prompt. Prompts, tests and values may come from files (``file://``, CSV,
YAML, JSONL; see :mod:`.promptfoo_read`). Each assertion (``defaultTest.assert``
first, ``$ref: "#/assertionTemplates/x"`` resolved) becomes one criterion with
the assertion's ``weight`` (see :mod:`.promptfoo_assert`).

promptfoo passes a test when every assertion passes (weight 0 ones never fail),
or, with a ``threshold``, when the weighted mean of their scores reaches it
(``src/assertions/assertionsResult.ts``): so the file's pass mark is
``min_score: 1.0`` and a test with a threshold has ``min_score: threshold``.

What cannot be graded here is listed as ``not mapped:`` with its file, line,
test and type, and left out: a test keeps its other criteria (tagged
``promptfoo:partial``), a test left with none is not written, and neither stops
the rest of the config. Input promptfoo itself would refuse (not YAML, wrong
shapes, a ``$ref`` to no template, a weight that is not a number) is a problem,
and then nothing is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import Problem, RubricLoadError
from . import promptfoo_assert
from ._common import ImportFailed, Output, is_number, validated
from .promptfoo_match import Unmappable
from .promptfoo_read import (
    Parsed,
    Prompt,
    RawTest,
    Tree,
    is_file_ref,
    parse_yaml,
    read_prompts,
    read_tests,
)
from .promptfoo_render import combinations, prepare, render, render_prompt

__all__ = ["PARTIAL_TAG", "convert"]

PARTIAL_TAG = "promptfoo:partial"
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
_CONFIG_KEYS = {
    "prompts",
    "providers",
    "tests",
    "defaultTest",
    "assertionTemplates",
    "scenarios",
    "description",
}


@dataclass
class _Assertion:
    label: str  # e.g. "assert[1]", "defaultTest.assert[0] ($ref polite)"
    where: str  # file:line
    item: Any  # the assertion; an Unmappable to list; None after a problem
    default: bool = False  # from defaultTest: the same in every test


@dataclass
class _Test:
    """One promptfoo test after defaultTest is merged in."""

    number: int
    label: str
    where: str
    description: str | None
    vars: dict[str, Any]
    asserts: list[_Assertion]
    threshold: Any
    options: dict[str, Any]
    metadata: dict[str, Any]
    scoring_function: Any = None


@dataclass
class _Stats:
    tests: int = 0
    written: int = 0
    cases: int = 0
    listed: int = 0


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
        suite = _Config(path, problems, output.notes).convert()
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


class _Config:
    """One config's conversion: its problems (input promptfoo refuses) and its notes."""

    def __init__(self, path: Path, problems: list[Problem], notes: list[str]) -> None:
        self.path, self.problems, self.notes = path, problems, notes
        self.tree = Tree(path)
        self.parsed = Parsed(None, {})
        self.templates: dict[str, Any] = {}
        self.stats = _Stats()
        self._seen: set[str] = set(notes)

    # --- reporting ----------------------------------------------------------------------------

    def problem(
        self, message: str, where: tuple[Any, ...], hint: str | None = None, **kw: Any
    ) -> None:
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

    # --- the config ---------------------------------------------------------------------------

    def convert(self) -> dict[str, Any] | None:
        before = len(self.problems)
        try:
            self.parsed = parse_yaml(self.tree.text(self.path, str(self.path)), self.path)
        except Unmappable as exc:
            self.problems.append(Problem(f"cannot read the config: {exc}", path=self.path))
            return None
        except RubricLoadError as exc:
            self.problems.extend(
                Problem(p.message, line=p.line, path=self.path, hint=p.hint) for p in exc.problems
            )
            return None
        data = self.parsed.data
        if not isinstance(data, dict):
            self.problem("a promptfoo config is a mapping (prompts, providers, tests, ...)", ())
            return None
        templates = data.get("assertionTemplates", {})
        if not isinstance(templates, dict):
            self.problem(
                "`assertionTemplates` must map names to assertions", ("assertionTemplates",)
            )
        else:
            self.templates = templates
        default = self._default(data.get("defaultTest", {}))
        prompts = self._prompts(data.get("prompts"))
        raw_tests = self._raw_tests(data)
        if len(self.problems) > before or default is None:
            return None
        tests = [
            t for n, raw in enumerate(raw_tests, start=1) if (t := self._merge(n, raw, default))
        ]
        if len(self.problems) > before:
            return None
        cases: list[dict[str, Any]] = []
        for test in tests:
            cases += self._cases(test, prompts)
        if len(self.problems) > before:
            return None
        self._config_notes(data)
        s = self.stats
        self.note(
            f"{self.path}: {s.written} of {s.tests} tests written as {len(cases)} cases "
            f"({len(prompts)} prompt{'s' if len(prompts) != 1 else ''}); {s.listed} listed above"
        )
        if not cases:
            self.note(f"not mapped: {self.path}: no test could be mapped; no rubric file written")
            return None
        described = data.get("description")
        # The config's description names the suite; a rubric file is named after its stem.
        name = described.strip() if isinstance(described, str) and described.strip() else None
        suite: dict[str, Any] = {"suite": name or _stem(self.path)}
        if any("min_score" not in c for c in cases):
            # promptfoo passes a test without a threshold only when every assertion passes.
            suite["min_score"] = 1.0
        suite["cases"] = cases
        self.problems.extend(validated(str(self.path), suite))
        return None if len(self.problems) > before else suite

    def _default(self, value: Any) -> dict[str, Any] | None:
        if is_file_ref(value):
            try:
                value = self.tree.document(self.tree.path(value), value).data
            except Unmappable as exc:
                self.unmapped(
                    self.at(("defaultTest",)),
                    "defaultTest",
                    f"{exc}; no test is written without it",
                )
                return None
        if not isinstance(value, dict):
            self.problem(
                "`defaultTest` must be a mapping (vars, assert, options, ...)", ("defaultTest",)
            )
            return {}
        return value

    def _prompts(self, value: Any) -> list[Prompt]:
        if value is None:
            self.problem("the config has no `prompts`", (), "add the prompt text under `prompts:`")
            return []
        if not isinstance(value, str | list | dict):
            self.problem(
                "`prompts` must be a prompt, a list of prompts, or a map of files to labels",
                ("prompts",),
            )
            return []
        prompts: list[Prompt] = []
        for entry in read_prompts(value, self.tree):
            where = ("prompts", entry.index) if isinstance(value, list) else ("prompts",)
            if entry.why_not is None:
                for prompt in entry.prompts:
                    prompt.where = self.at(where)
                prompts += entry.prompts
                continue
            self.unmapped(
                self.at(where), f"prompt {_shown(entry.raw)}", f"{entry.why_not}; no case asks it"
            )
        return prompts

    def _raw_tests(self, data: dict[str, Any]) -> list[tuple[str, RawTest]]:
        """(label, test) for each test of ``tests:`` and of ``scenarios:``."""
        value = data.get("tests")
        scenarios = data.get("scenarios")
        if value is None and not scenarios:
            # evaluator.ts: no tests at all runs one empty test (defaultTest still applies)
            value = [{}]
        if value is not None and not isinstance(value, str | list):
            self.problem("`tests` must be a list of tests or a file:// path", ("tests",))
            return []
        tests, notes = read_tests(value, self.parsed, self.tree)
        for text in notes:
            self.note(text)
        found = [(f"test {i}", t) for i, t in enumerate(tests, start=1)]
        if scenarios is None:
            return found
        if not isinstance(scenarios, list):
            self.problem("`scenarios` must be a list", ("scenarios",))
            return found
        for s, scenario in enumerate(scenarios):
            found += self._scenario(s, scenario)
        return found

    def _scenario(self, s: int, scenario: Any) -> list[tuple[str, RawTest]]:
        where = ("scenarios", s)
        if not isinstance(scenario, dict) or not isinstance(scenario.get("config"), list):
            self.problem("a scenario is a mapping with a `config` list and `tests`", where)
            return []
        tests = scenario.get("tests") or [{}]
        found = []
        for c, data in enumerate(scenario["config"]):
            for t, test in enumerate(tests if isinstance(tests, list) else []):
                label = f"scenario {s + 1}, config {c + 1}, test {t + 1}"
                if not isinstance(data, dict) or not isinstance(test, dict):
                    self.stats.tests += 1
                    self._skip(
                        self.at((*where, "tests", t)),
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
                line = self.parsed.line((*where, "tests", t))
                found.append(
                    (
                        label,
                        RawTest(
                            merged, str(self.path), line, self.tree.root, True, (*where, "tests", t)
                        ),
                    )
                )
        return found

    # --- one test -----------------------------------------------------------------------------

    def _merge(
        self, number: int, labelled: tuple[str, RawTest], default: dict[str, Any]
    ) -> _Test | None:
        label, raw = labelled
        self.stats.tests += 1
        where = f"{raw.file}:{raw.line}" if raw.line else raw.file
        test = raw.data
        if not isinstance(test, dict):
            self._skip(where, label, "a test is a mapping (vars, assert, ...)")
            return None
        description = test.get("description")
        if isinstance(description, str) and description:
            label += f" ({description!r})"
        else:
            description = None
        for key in sorted(set(test) - _TEST_KEYS):
            self.note(f"{where}: {label}: `{key}` on a test is not imported")
        if test.get("provider") is not None:
            self.note(f"{where}: {label}: promptfoo asks its own provider; here each subject does")
        if test.get("providerOutput") is not None:
            self.note(
                f"{where}: {label}: promptfoo grades its fixed providerOutput; here each "
                "subject's answer is graded"
            )
        vars_ = self._vars(default.get("vars"), where, label, self.tree.root)
        own = self._vars(test.get("vars"), where, label, raw.base)
        if vars_ is None or own is None:
            return None
        asserts: list[_Assertion] = []
        for source, name, in_config, file_where in (
            (default, "defaultTest.", True, None),
            (test, "", raw.in_config, raw),
        ):
            given = source.get("assert") or []
            if not isinstance(given, list):
                self._skip(where, label, "`assert` must be a list of assertions")
                return None
            for j, item in enumerate(given):
                a = self._assertion(item, f"{name}assert[{j}]", j, in_config, file_where, label)
                a.default = file_where is None
                asserts.append(a)
        threshold = test.get("threshold")
        if threshold is None:  # evaluator.ts: `test.threshold ?? defaultTest.threshold`
            threshold = default.get("threshold")
        options = {**(default.get("options") or {}), **(test.get("options") or {})}
        metadata = {**(default.get("metadata") or {}), **(test.get("metadata") or {})}
        scoring = test.get("assertScoringFunction", default.get("assertScoringFunction"))
        return _Test(
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

    def _skip(self, where: str, label: str, why: str) -> None:
        self.stats.listed += 1
        self.unmapped(where, label, f"{why}; the test is not written")

    def _vars(self, value: Any, where: str, label: str, base: Path) -> dict[str, Any] | None:
        if value is None:
            return {}
        if isinstance(value, dict):
            return value
        if isinstance(value, str | list):  # testCaseReader.ts, readTestFiles: YAML files merged
            merged: dict[str, Any] = {}
            try:
                for ref in [value] if isinstance(value, str) else value:
                    for path in self.tree.paths(str(ref), base=base):
                        doc = self.tree.document(path, str(ref)).data
                        if not isinstance(doc, dict):
                            raise Unmappable(f"{ref} does not hold a mapping of vars")
                        merged.update(doc)
            except Unmappable as exc:
                self._skip(where, label, f"vars from {exc}")
                return None
            return merged
        self._skip(where, label, "`vars` must be a mapping of names to values")
        return None

    def _assertion(
        self, item: Any, tag: str, j: int, in_config: bool, raw: RawTest | None, label: str
    ) -> _Assertion:
        key: tuple[Any, ...] | None = ("defaultTest", "assert", j)
        if raw is not None:
            key = (*raw.key, "assert", j) if raw.key is not None else None
        where = (
            self.at(key)
            if key is not None
            else f"{raw.file}:{raw.line}"
            if raw and raw.line
            else str(raw.file if raw else self.path)
        )
        if isinstance(item, dict) and "$ref" in item:
            ref = item["$ref"]
            found = _REF.match(ref) if isinstance(ref, str) else None
            if not in_config:
                return _Assertion(
                    tag, where, Unmappable(f"$ref {ref!r} in a test file is not resolved")
                )
            if found is None or found.group(1) not in self.templates:
                self.problem(
                    f"{label}, {tag}: $ref {ref!r} names no assertion template",
                    key or (),
                    "write it as '#/assertionTemplates/NAME', NAME a key of assertionTemplates "
                    f"({', '.join(map(str, self.templates)) or 'none defined'})",
                    field="$ref",
                )
                return _Assertion(tag, where, None)
            target = self.templates[found.group(1)]
            item = (
                {**target, **{k: v for k, v in item.items() if k != "$ref"}}
                if isinstance(target, dict)
                else target
            )
            tag += f" ($ref {found.group(1)})"
        if isinstance(item, dict) and "weight" in item and not is_number(item["weight"]):
            self.problem(
                f"{label}, {tag}: `weight` must be a number, got {item['weight']!r}",
                key or (),
                field="weight",
            )
            return _Assertion(tag, where, None)
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            if key is not None:
                self.problem(
                    f"{label}, {tag}: an assertion is a mapping with a `type`", key, field="type"
                )
                return _Assertion(tag, where, None)
            return _Assertion(tag, where, Unmappable("an assertion is a mapping with a `type`"))
        return _Assertion(tag, where, item)

    def _cases(self, test: _Test, prompts: list[Prompt]) -> list[dict[str, Any]]:
        """The test's cases (each vars combination x each prompt); the test is counted as
        written when one case is, else listed once with the reason."""
        problems = len(self.problems)
        why = self._test_not_kept(test)
        if why is None and not prompts:
            why = "no prompt of the config could be read (see above)"
        combos: list[dict[str, Any]] = []
        if why is None:
            try:
                combos = combinations(
                    test.vars, self.tree, expand=not test.options.get("disableVarExpansion")
                )
            except Unmappable as exc:
                why = f"vars: {exc}"
        cases: list[dict[str, Any]] = []
        for k, combo in enumerate(combos):
            which = f"{test.label}, vars combination {k + 1}" if len(combos) > 1 else test.label
            try:
                vars_ = prepare(combo, self.tree)
            except Unmappable as exc:
                why = f"vars: {exc}"
                if len(combos) > 1:
                    self.unmapped(test.where, which, f"{why}; its cases are not written")
                continue
            criteria, lost = self._criteria(test, vars_)
            if criteria is None:
                why = "no assertion has a positive weight"
                if lost:
                    why = "no assertion could be mapped (see above)"
                continue
            for j, prompt in enumerate(prompts):
                case = self._case(test, prompt, vars_, criteria, lost, len(prompts) > 1)
                if case is not None:
                    case["id"] = _case_id(test, k, len(combos), j, len(prompts))
                    cases.append(case)
        if cases:
            self.stats.written += 1
            self.stats.cases += len(cases)
        elif len(self.problems) == problems:  # else the config is refused anyway
            self._skip(
                test.where, test.label, why or "no prompt could be asked with its vars (see above)"
            )
        return cases

    def _test_not_kept(self, test: _Test) -> str | None:
        for key, why in _OPTIONS_NOT_KEPT.items():
            if test.options.get(key) is not None:
                return f"options.{key} {why}"
        if test.scoring_function is not None:
            return "assertScoringFunction replaces promptfoo's weighted mean with code"
        if not test.asserts:
            return "it has no assertion (promptfoo passes it whatever the answer); nothing to grade"
        threshold = test.threshold
        if threshold is not None and not is_number(threshold):
            return f"threshold {threshold!r} is not a number"
        if is_number(threshold) and threshold and not 0 < threshold <= 1:
            return (
                f"threshold {threshold:g} is outside (0, 1]: promptfoo decides the test "
                "whatever the answer"
            )
        for key in sorted(set(test.options) - set(_OPTIONS_NOT_KEPT) - _OPTIONS_QUIET):
            if key == "provider":
                self.note(
                    f"{self.path}: the grader named by options.provider is not kept: "
                    "--rubric-judge grades"
                )
            elif key != "rubricPrompt":
                self.note(f"{test.where}: {test.label}: options.{key} is not imported")
        return None

    def _criteria(
        self, test: _Test, vars_: dict[str, Any]
    ) -> tuple[list[dict[str, Any]] | None, int]:
        criteria: list[dict[str, Any]] = []
        lost: list[tuple[str, str, str]] = []  # (where, what, why) of each assertion left out
        for a in test.asserts:
            if a.item is None:  # a problem, already reported
                return None, 0
            kind = a.item.get("type", "?") if isinstance(a.item, dict) else "?"
            # A defaultTest assertion is listed once, for every test, unless its reason is
            # the test's own.
            what = (
                f"{a.label} ({kind}), in every test"
                if a.default
                else f"{test.label}, {a.label} ({kind})"
            )
            try:
                if isinstance(a.item, Unmappable):
                    raise a.item
                promptfoo_assert.check_type(kind)
                if (
                    test.options.get("rubricPrompt") is not None
                    and kind in promptfoo_assert.MODEL_GRADED
                ):
                    raise Unmappable("the test grades it with its own rubricPrompt")
                mapped = promptfoo_assert.criterion(self._values(a.item, vars_))
            except Unmappable as exc:
                lost.append((a.where, what, str(exc)))
                continue
            except ValueError as exc:  # promptfoo fails the test on it (an invariant)
                lost.append((a.where, what, f"promptfoo refuses it: {exc}"))
                continue
            for text in mapped.notes:
                self.note(f"{a.where}: {what}: {text}")
            criteria.append(mapped.criterion)
        written = any(c.get("weight", 1) > 0 for c in criteria)
        for where, what, why in lost:
            if written and not what.endswith("in every test"):
                why += "; the test is written without it"
            self.unmapped(where, what, why)
        if not written:
            return None, len(lost)
        _unique_ids(criteria)
        return criteria, len(lost)

    def _values(self, item: dict[str, Any], vars_: dict[str, Any]) -> dict[str, Any]:
        """The assertion with its value read from its file, or rendered with the vars."""
        value = item.get("value")
        missing: set[str] = set()
        if isinstance(value, str):
            value = self._file_value(value) if is_file_ref(value) else render(value, vars_, missing)
        elif isinstance(value, list):
            value = [
                self._file_value(v)
                if is_file_ref(v)
                else render(v, vars_, missing)
                if isinstance(v, str)
                else v
                for v in value
            ]
        if missing:
            self.note(
                f"{self.path}: an assertion's value uses {_names(missing)}, which no var sets; "
                "promptfoo renders it as empty text, and so does this import"
            )
        return {**item, "value": value} if "value" in item else item

    def _file_value(self, ref: str) -> Any:
        """assertions/utils.ts, processFileReference: YAML and JSON parsed, text trimmed."""
        path = self.tree.path(ref)
        suffix = path.suffix.lower()
        if suffix in (".json", ".yaml", ".yml"):
            return self.tree.document(path, ref).data
        if suffix == ".txt":
            return self.tree.text(path, ref).strip()
        if suffix in (".js", ".cjs", ".mjs", ".ts", ".py"):
            raise Unmappable(f"its value comes from running {ref}")
        raise Unmappable(
            f"{ref}: promptfoo reads assertion values from .txt, .json and .yaml files"
        )

    def _case(
        self,
        test: _Test,
        prompt: Prompt,
        vars_: dict[str, Any],
        criteria: list[dict[str, Any]],
        lost: int,
        several_prompts: bool,
    ) -> dict[str, Any] | None:
        template = (
            f"{test.options.get('prefix') or ''}{prompt.template}{test.options.get('suffix') or ''}"
        )
        try:
            rendered = render_prompt(template, vars_)
        except Unmappable as exc:
            self.unmapped(prompt.where, f"prompt {_shown(prompt.label)}", f"{exc}; no case asks it")
            return None
        if rendered.missing:
            self.note(
                f"{test.where}: {test.label}: prompt {_shown(prompt.label)} uses "
                f"{_names(rendered.missing)}, which no var sets; promptfoo renders it as empty "
                "text, and so does this import"
            )
        case: dict[str, Any] = {"id": ""}
        if rendered.messages is not None:
            case["messages"] = rendered.messages
        else:
            case["question"] = rendered.question
        if is_number(test.threshold) and test.threshold:
            case["min_score"] = test.threshold
            if any(c["type"] == "judge" for c in criteria):
                self.note(
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

    def _config_notes(self, data: dict[str, Any]) -> None:
        providers = _provider_ids(data.get("providers"))
        if providers:
            self.note(
                f"{self.path}: providers {', '.join(providers)} are not imported: each is a "
                "subject; give its answers with --rubric-responses DIR/<subject>.jsonl, or run "
                "a model with --rubric-model"
            )
        for key in sorted(set(data) - _CONFIG_KEYS):
            self.note(f"{self.path}: `{key}` is not imported (a rubric file has no {key})")


def _provider_ids(value: Any) -> list[str]:
    items = [value] if isinstance(value, str | dict) else value if isinstance(value, list) else []
    ids = []
    for item in items:
        if isinstance(item, str):
            ids.append(item)
        elif isinstance(item, dict) and isinstance(item.get("id"), str):
            ids.append(item["id"])
        elif isinstance(item, dict) and len(item) == 1:
            ids.append(str(next(iter(item))))
    return ids


def _unique_ids(criteria: list[dict[str, Any]]) -> None:
    seen: dict[str, int] = {}
    for c in criteria:
        base = c["id"]
        seen[base] = seen.get(base, 0) + 1
        if seen[base] > 1:
            c["id"] = f"{base}-{seen[base]}"


def _case_id(test: _Test, k: int, n_combos: int, j: int, n_prompts: int) -> str:
    slug = ""
    if test.description:
        slug = re.sub(r"[^a-z0-9]+", "-", test.description.lower()).strip("-")[:40].strip("-")
    base = f"t{test.number}" + (f"-{slug}" if slug else "")
    return base + (f"-v{k + 1}" if n_combos > 1 else "") + (f"-p{j + 1}" if n_prompts > 1 else "")


def _names(names: set[str]) -> str:
    return ", ".join(f"{{{{ {n} }}}}" for n in sorted(names))


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = text.replace("\n", " ")
    return repr(text if len(text) <= 60 else text[:57] + "...")
