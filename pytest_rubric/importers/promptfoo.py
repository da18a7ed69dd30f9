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

The conversion runs in steps, each in its own module, reporting through one
:class:`~.promptfoo_config.Conversion`: reading what the config points to
(:mod:`.promptfoo_read`), merging each test with ``defaultTest``
(:mod:`.promptfoo_merge`), and writing a test's cases (:mod:`.promptfoo_cases`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._errors import Problem, RubricLoadError
from ._common import ImportFailed, Output, validated
from .promptfoo_cases import PARTIAL_TAG, cases_of
from .promptfoo_config import Conversion, shown_value
from .promptfoo_files import Budget, TooLarge
from .promptfoo_match import Unmappable
from .promptfoo_merge import gather_tests, merge
from .promptfoo_read import Prompt, is_file_ref, parse_yaml, read_prompts

__all__ = ["PARTIAL_TAG", "convert"]

_CONFIG_KEYS = {
    "prompts",
    "providers",
    "tests",
    "defaultTest",
    "assertionTemplates",
    "scenarios",
    "description",
}


def convert(configs: list[Path]) -> Output:
    """The suite for each promptfoo config (one rubric file each); raise :class:`ImportFailed`."""
    problems: list[Problem] = []
    output = Output()
    names: dict[str, Path] = {}
    budget = Budget()  # the whole import's: every config spends from it
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
    stem = path.name
    for suffix in (".yaml", ".yml", ".json"):
        if stem.endswith(suffix):
            return stem[: -len(suffix)]
    return stem


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
    raw_tests = gather_tests(ctx, data)
    if len(ctx.problems) > before or default is None:
        return None
    tests = [t for n, raw in enumerate(raw_tests, start=1) if (t := merge(ctx, n, raw, default))]
    if len(ctx.problems) > before:
        return None
    cases: list[dict[str, Any]] = []
    for test in tests:
        cases += cases_of(ctx, test, prompts)
    if len(ctx.problems) > before:
        return None
    _config_notes(ctx, data)
    s = ctx.stats
    ctx.note(
        f"{ctx.path}: {s.written} of {s.tests} tests written as {len(cases)} cases "
        f"({len(prompts)} prompt{'s' if len(prompts) != 1 else ''}); {s.listed} listed above"
    )
    if not cases:
        ctx.note(f"not mapped: {ctx.path}: no test could be mapped; no rubric file written")
        return None
    described = data.get("description")
    # The config's description names the suite; a rubric file is named after its stem.
    name = described.strip() if isinstance(described, str) and described.strip() else None
    suite: dict[str, Any] = {"suite": name or _stem(ctx.path)}
    if any("min_score" not in c for c in cases):
        # promptfoo passes a test without a threshold only when every assertion passes.
        suite["min_score"] = 1.0
    suite["cases"] = cases
    ctx.problems.extend(validated(str(ctx.path), suite))
    return None if len(ctx.problems) > before else suite


def _default(ctx: Conversion, value: Any) -> dict[str, Any] | None:
    if is_file_ref(value):
        try:
            value = ctx.tree.document(ctx.tree.path(value), value).data
        except Unmappable as exc:
            ctx.unmapped(
                ctx.at(("defaultTest",)),
                "defaultTest",
                f"{exc}; no test is written without it",
            )
            return None
    if not isinstance(value, dict):
        ctx.problem(
            "`defaultTest` must be a mapping (vars, assert, options, ...)", ("defaultTest",)
        )
        return {}
    return value


def _prompts(ctx: Conversion, value: Any) -> list[Prompt]:
    if value is None:
        ctx.problem("the config has no `prompts`", (), "add the prompt text under `prompts:`")
        return []
    if not isinstance(value, str | list | dict):
        ctx.problem(
            "`prompts` must be a prompt, a list of prompts, or a map of files to labels",
            ("prompts",),
        )
        return []
    prompts: list[Prompt] = []
    for entry in read_prompts(value, ctx.tree):
        where = ("prompts", entry.index) if isinstance(value, list) else ("prompts",)
        if entry.why_not is None:
            for prompt in entry.prompts:
                prompt.where = ctx.at(where)
            prompts += entry.prompts
            continue
        ctx.unmapped(
            ctx.at(where), f"prompt {shown_value(entry.raw)}", f"{entry.why_not}; no case asks it"
        )
    return prompts


def _config_notes(ctx: Conversion, data: dict[str, Any]) -> None:
    providers = _provider_ids(data.get("providers"))
    if providers:
        ctx.note(
            f"{ctx.path}: providers {', '.join(providers)} are not imported: each is a "
            "subject; give its answers with --rubric-responses DIR/<subject>.jsonl, or run "
            "a model with --rubric-model"
        )
    for key in sorted(set(data) - _CONFIG_KEYS):
        ctx.note(f"{ctx.path}: `{key}` is not imported (a rubric file has no {key})")


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
