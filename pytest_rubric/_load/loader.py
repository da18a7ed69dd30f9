"""Loading rubric files (YAML or JSON): a validated suite, or every problem at once, raised
together as one :class:`RubricLoadError` (a hostile file is one more of them, never a crash
or a hang). ``_guards.limits`` and ``_guards.yaml`` read within the limits, ``_load.locate``
locates validation errors, ``_load.semantics`` finds what validation cannot see.
"""

from __future__ import annotations

import contextlib
import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .._errors import Problem, RubricLoadError
from .._guards.limits import (
    Limit,
    NotRegular,
    json_loads,
    kind_of,
    nesting_problem,
    quoted,
    read_text,
)
from .._guards.yaml import AliasLimit, Duplicate, Lines, YamlLoader, construct, stream
from .._schema import Suite
from ..criteria.model import CriterionModel, share_fields_sets
from ..criteria.registry import CONTEXT_KEY, criterion_types
from .locate import (
    EXAMPLES,
    Locator,
    duplicate_problem,
    path_hint,
    run_relative,
    validation_problems,
)
from .semantics import semantic_problems


@dataclass(slots=True)
class LoadedSuite:
    """A validated rubric file with the lines of its cases (1-based, None if unknown)."""

    path: Path
    suite: Suite
    case_lines: list[int | None]
    calibration: list[tuple[Any, Any, Any]] = field(default_factory=list)  # see _load.examples
    guidance: Any = None  # judge_instructions and judge_examples: a judge.prompts.Guidance
    # The line of the file-level `target:` (key "target") and of each `targets:` entry (its
    # name), so a problem with a file's target points there, not at a case.
    target_lines: dict[str, int | None] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.suite.suite or self.path.name.split(".")[0]

    @property
    def responses_dir(self) -> Path | None:
        """The folder the file's ``responses:`` names; :class:`RubricLoadError`, located at
        that line, when there is none. Checked only here, when a run reads the answers:
        ``python -m pytest_rubric collect`` loads the file to create that folder."""
        if self.suite.responses is None:
            return None
        folder = self.path.parent / self.suite.responses
        with contextlib.suppress(OSError, RuntimeError):  # a loop of symbolic links
            folder = folder.resolve()
        if not folder.is_dir():
            raise RubricLoadError(self.path, [self._no_folder(folder)])
        return folder

    def _no_folder(self, folder: Path) -> Problem:
        written = self.suite.responses or ""
        create = f"create {run_relative(folder)} with one <subject>.jsonl per subject"
        return Problem(
            f"responses folder '{run_relative(folder)}' "
            + ("is not a folder" if folder.exists() else "does not exist"),
            line=key_line(self.path, "responses"),
            field="responses",
            hint=path_hint("responses", written, self.path, dirs=True, otherwise=create),
        )


def key_line(path: Path, key: str) -> int | None:
    """The line of the top-level ``key`` of the rubric file ``path``, read again: a problem
    found after loading is rare, and a streamed file keeps no line of its keys."""
    try:
        text = read_text(path).removeprefix("\ufeff")
    except (OSError, UnicodeDecodeError, NotRegular):
        return None
    return Locator(text, None, bare_list=False).line((key,))


def load_suite(path: Path, *, added: Sequence[type[CriterionModel]] = ()) -> LoadedSuite:
    """Read and validate a rubric file; raise :class:`RubricLoadError` listing every problem.
    ``added``: the criterion types plugins add (``pytest_rubric_criterion_types``)."""
    try:
        text = read_text(path)
    except NotRegular as exc:
        problem = Problem(
            f"this is {exc}, not a regular file; rubric files are read only from regular files",
            hint="replace it with a regular file, or move it out of the rubric folders",
        )
    except UnicodeDecodeError as exc:
        problem = Problem(f"not UTF-8 text ({exc.reason})", hint="save the file as UTF-8")
    except OSError as exc:
        problem = Problem(
            f"cannot read the file: {exc.strerror or exc}", hint="check its permissions"
        )
    else:
        return parse_suite(text, path=path, added=added)
    raise RubricLoadError(path, [problem])


def _no_cases(data: dict[Any, Any], locator: Locator) -> Problem:
    """A file without ``cases:``: pointing at a key that looks like it (``case:``)."""
    keys = [k for k in data if isinstance(k, str)]
    close = difflib.get_close_matches("cases", keys, n=1, cutoff=0.6)
    if close:
        return Problem(
            f"no `cases:` in the file, but an unknown key {quoted(close[0])}",
            line=locator.line((close[0],)),
            field=close[0],
            hint=f"did you mean `cases`? rename {quoted(close[0])} to `cases`",
        )
    return Problem(
        "no `cases:` in the file", line=1, field="cases", hint="add\n    " + EXAMPLES["cases"]
    )


def parse_suite(
    text: str, *, path: Path, added: Sequence[type[CriterionModel]] = ()
) -> LoadedSuite:
    """Validate rubric text; ``path`` names the file in errors and anchors relative paths."""
    try:
        types = criterion_types(added)
    except TypeError as exc:
        raise RubricLoadError(path, [Problem(str(exc))]) from None
    # Editors on Windows start UTF-8 files with a BOM, which json.loads rejects.
    text = text.removeprefix("\ufeff")
    parsed = _parse_json(text, path) if path.suffix == ".json" else _parse_yaml(text, path)
    data = parsed.data
    bare_list = isinstance(data, list)
    if bare_list:
        data = {"cases": data}
    locator = Locator(
        text, parsed.node, bare_list=bare_list, types=types, lines=parsed.lines, path=path
    )
    problems = [
        duplicate_problem(d, data, bare_list=bare_list, json_file=path.suffix == ".json")
        for d in parsed.duplicates
    ]
    if not isinstance(data, dict):
        problems.append(
            Problem(
                f"the top level is a {kind_of(data)}",
                line=1,
                hint="write a mapping with `cases:` or a list of cases",
            )
        )
        raise RubricLoadError(path, problems)
    if "cases" not in data:
        problems.append(_no_cases(data, locator))
        raise RubricLoadError(path, problems)
    suite: Suite | None = None
    try:
        suite = Suite.model_validate(data, context={CONTEXT_KEY: tuple(added)})
        share_fields_sets(model for case in suite.cases for model in (case, *case.criteria))
    except ValidationError as exc:
        problems += validation_problems(exc, data, locator)
    problems += semantic_problems(data, suite, locator, failed=bool(problems))
    calibration: list[tuple[Any, Any, Any]] = []
    guidance = None
    if suite is not None:
        from .examples import examples_of, guidance_of

        calibration, found = examples_of(suite, path, locator)
        problems += found
        if suite.judge_instructions or suite.judge_examples is not None:
            guidance, found = guidance_of(suite, path, locator, calibration)
            problems += found
    if problems or suite is None:
        raise RubricLoadError(path, problems)
    return LoadedSuite(
        path=path,
        suite=suite,
        case_lines=[locator.case_line(i) for i in range(len(suite.cases))],
        calibration=calibration,
        guidance=guidance,
        target_lines={
            **({"target": locator.line(("target",))} if suite.target else {}),
            **{name: locator.line(("targets", name)) for name in suite.targets or {}},
        },
    )


@dataclass(slots=True)
class _Parsed:
    data: Any
    node: yaml.Node | None  # None for a JSON file, unless it had to be located, or streamed
    duplicates: list[Duplicate]
    lines: Lines | None = None  # a streamed YAML file's (see _guards.yaml.stream)


def _parse_json(text: str, path: Path) -> _Parsed:
    try:
        data, repeated = json_loads(text)
    except json.JSONDecodeError as exc:
        problem = Problem(
            f"invalid JSON: {exc.msg} (column {exc.colno})",
            line=exc.lineno,
            hint="fix the JSON syntax; a trailing comma or a missing quote is the usual cause",
        )
        raise RubricLoadError(path, [problem]) from None
    except Limit as exc:  # nesting, a number Python refuses, a lone surrogate
        raise RubricLoadError(path, [exc.problem]) from None
    if not repeated:
        return _Parsed(data, None, [])
    # json reports no positions: the lines of both keys come from the YAML
    # parser, which reads almost all JSON.
    try:
        located = _parse_yaml(text, path, node_tree=True)
    except RubricLoadError:  # JSON the YAML parser does not read: the keys, without lines
        return _Parsed(data, None, [Duplicate(key, None, None) for key in dict.fromkeys(repeated)])
    return _Parsed(data, located.node, located.duplicates)


def _parse_yaml(text: str, path: Path, *, node_tree: bool = False) -> _Parsed:
    """``node_tree``: compose the tree whatever the text; else a plain file is streamed."""
    streamed = None if node_tree else stream(text)
    if streamed is not None and streamed[0] is not None:
        return _Parsed(streamed[0], None, [], streamed[1])
    loader = YamlLoader(text)
    problem: Problem | None = None
    try:
        node = loader.get_single_node()
        data, duplicates = (
            construct(loader, node, anchors="&" in text) if node is not None else (None, [])
        )
    except AliasLimit as exc:
        problem = exc.located(text)
    except Limit as exc:  # a value YAML cannot make (30 February, a 5000-digit number), nesting
        problem = exc.problem
    except RecursionError:  # the pure-Python composer recurses once per level
        problem = nesting_problem(None)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        if "maximum nesting depth" in str(exc.problem):  # libyaml stops at 1000 levels
            problem = nesting_problem(line)
        elif "tab character" in str(exc.problem):
            problem = Problem(
                f"invalid YAML: a tab character where YAML expects indentation ({exc.problem})",
                line=line,
                hint=f"YAML indents with spaces only: replace the tab on line {line} with spaces",
            )
        else:
            context = ""
            if exc.context and exc.context_mark and exc.context_mark is not mark:
                context = f" ({exc.context} that starts at line {exc.context_mark.line + 1})"
            problem = Problem(
                f"invalid YAML: {exc.problem or exc.context}{context}",
                line=line,
                hint="check the indentation and quoting there; quote strings that contain ': ' or '#'",
            )
    except yaml.YAMLError as exc:
        problem = Problem(f"invalid YAML: {exc}")
    finally:
        loader.dispose()
    if problem is None and data is None:
        problem = Problem("the file is empty", hint="add\n    " + EXAMPLES["cases"])
    if problem is not None:
        raise RubricLoadError(path, [problem])
    return _Parsed(data, node, duplicates)
