"""``python -m pytest_rubric collect``: freeze the application's answers into responses files.

The collect-then-score workflow of llm-rubric-eval: each subject (``--model``,
``--target``) is asked every case of the rubric files under ``--rubric-dir``
(``repeat`` times: the case's, the file's, else ini ``rubric_repeat``) and its answers are
written to ``OUT/<subject>.jsonl``, one ``{"id", "suite", "response"}`` per line (with the trace
fields beside it, ``context``, ``messages``, ``usage``..., when the answer has a trace), which
``responses: OUT/`` (or ``--rubric-responses OUT``) then grades, as often as
wanted, without asking again. A subject is called exactly as a run would call
it (:class:`~pytest_rubric._grade.sources.Source`): a target with what its signature
names, a model with the same request. A case whose call failed is listed, not
written; no file is overwritten without ``--force``. What is written passes the outgoing
boundary, as the response cache's answers do (keys redacted, URLs without userinfo or query
string, control characters escaped).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .._config.settings import BY_KEY, DEFAULT_PATTERNS, argparse_type, reader
from .._guards.outgoing import outgoing_data
from .._load.traces import as_fields
from .._render.files import unwritable

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
_TRUE = ("1", "on", "t", "true", "y", "yes")  # an ini boolean, as pytest reads one


def add_commands(commands: Any) -> None:
    cmd = commands.add_parser(
        "collect",
        help="ask models or targets every case and write their answers as responses files",
        description="Ask each subject (--model, --target; repeatable) every case of the rubric "
        "files under --rubric-dir, `repeat` times (the case's, the file's, else ini "
        "rubric_repeat), and write "
        "OUT/<subject>.jsonl in the responses format, for `responses: OUT/` to grade later. "
        "Modules of targets are imported from the current directory and each rubric file's "
        "folder. Exit status 0 when every answer was written, 1 when some call failed (those "
        "cases are listed, not written), 2 for bad input.",
    )
    cmd.add_argument(
        "--rubric-dir",
        dest="dirs",
        action="append",
        type=Path,
        required=True,
        metavar="DIR",
        help="collect the cases of the rubric files under DIR (repeatable)",
    )
    cmd.add_argument(
        "--model",
        dest="models",
        action="append",
        default=[],
        metavar="[NAME=]PROVIDER:MODEL",
        help="a model to ask (subject NAME, default the model's name; key from the environment)",
    )
    cmd.add_argument(
        "--target",
        dest="targets",
        action="append",
        default=[],
        metavar="[NAME=]MODULE:FUNCTION",
        help="a target function to call (subject NAME, default the function's name)",
    )
    cmd.add_argument(
        "--out", required=True, type=Path, metavar="DIR", help="where <subject>.jsonl goes"
    )
    cmd.add_argument("--force", action="store_true", help="overwrite existing answer files")
    cmd.add_argument(
        "--rubric-otel",
        dest="otel",
        action="store_true",
        help="read each target call's OpenTelemetry spans into its trace, as pytest's flag does",
    )
    cmd.add_argument(
        "--concurrency",
        type=int,
        default=8,
        metavar="N",
        help="samples of one case asked at once (default 8)",
    )
    cmd.add_argument(
        "--timeout",
        type=argparse_type("seconds"),  # as the ini's: positive, at most a day
        metavar="SECONDS",
        help="bound on one target call where the case sets no `timeout:` (default: ini "
        "rubric_call_timeout, else 60)",
    )
    cmd.set_defaults(run=run)


@dataclass
class _Subject:
    name: str
    given: str
    source: Any  # a Source that asks the subject
    rows: list[dict[str, Any]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def run(args: argparse.Namespace) -> int:
    """Ask, then write; what went wrong is printed to stderr."""
    try:
        if missing := [str(d) for d in args.dirs if not d.is_dir()]:  # first: nothing is asked
            raise ValueError(f"--rubric-dir {missing[0]} is not a directory")
        subjects = _subjects(args)
        suites = _suites(args.dirs)
        repeat_default = _ini_setting("repeat")  # where neither the case nor the file sets one
        paths = {s.name: args.out / f"{s.name}.jsonl" for s in subjects}
        for path in paths.values():  # never written through, --force or not
            if path.is_symlink():
                raise ValueError(
                    f"{path} is a symbolic link (to {os.readlink(path)}), which could write "
                    f"outside --out {args.out}; remove it, or choose another --out"
                )
        if (existing := [str(p) for p in paths.values() if p.exists()]) and not args.force:
            raise ValueError(
                f"{', '.join(existing)} already exist(s); pass --force to overwrite, or choose "
                "another --out"
            )
        for path in paths.values():  # before any answer is asked for (they may cost)
            if (why := unwritable(path)) is not None:
                raise ValueError(f"cannot write {path}: {why}")
    except ValueError as exc:
        print(f"pytest-rubric collect: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for loaded in suites:
        for case in loaded.suite.cases:  # each line names its suite: ids may repeat across them
            where = f"{loaded.path}: suite {loaded.name!r}, case {case.id!r}"
            repeat = int(case.repeat or loaded.suite.repeat or repeat_default)
            for subject in subjects:
                source = subject.source
                if case.timeout is not None and not source.live:  # the case's bound, as a run's
                    source = replace(source, timeout=case.timeout)
                answers, problem = source.fetch_samples(
                    case, repeat=repeat, concurrency=max(1, args.concurrency)
                )
                if answers is None:
                    subject.failed.append(f"{where}: {problem}")
                    continue
                # The trace beside the response, to grade offline.
                subject.rows += [
                    {
                        "id": case.id,
                        "suite": loaded.name,
                        "response": answer.text,
                        **(as_fields(answer.trace) if answer.trace else {}),
                    }
                    for answer in answers
                ]
    for subject in subjects:
        # Through the boundary, as the response cache keeps answers: a key the application
        # echoed must not reach a file a team commits.
        rows = outgoing_data(subject.rows)
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        try:
            paths[subject.name].write_text(text, encoding="utf-8")
        except OSError as exc:  # a full disk, say: the others are still written
            print(
                f"pytest-rubric collect: error: cannot write {paths[subject.name]}: "
                f"{exc.strerror or type(exc).__name__}",
                file=sys.stderr,
            )
            subject.failed.append(f"{paths[subject.name]} was not written")
            continue
        print(f"{paths[subject.name]}: {len(subject.rows)} answer(s) of {subject.given}")
        for failure in subject.failed:
            print(f"pytest-rubric collect: not written: {failure}", file=sys.stderr)
    return EXIT_FAILED if any(s.failed for s in subjects) else EXIT_OK


def _subjects(args: argparse.Namespace) -> list[_Subject]:
    """Every subject given, each once; a clash of names or values is an error."""
    from .._defaults import RetryPolicy, subject_clash, subject_named
    from .._grade.sources import LiveModel, Source, Target
    from .._guards.calls import CallRunner, make_importable, resolve_import
    from .._llm.providers import ModelSpec
    from .._load.responses import file_subject_problem
    from ..criteria.model import check_import_path

    if not args.models and not args.targets:
        raise ValueError(
            "give at least one subject: --model PROVIDER:MODEL or --target MODULE:FUNCTION"
        )
    make_importable(Path.cwd(), *(d.resolve() for d in args.dirs))
    runner = CallRunner()
    tracer = None
    otel = args.otel or (ini_values(Path.cwd(), "rubric_otel") or ("",))[0].lower() in _TRUE
    if otel:  # an application instrumented already: its spans, written as trace fields
        try:
            from .._otel import SpanCapture
        except ImportError:
            raise ValueError(
                "--rubric-otel (ini rubric_otel) reads spans through opentelemetry-sdk, which "
                "is not installed: pip install pytest-rubric[otel]"
            ) from None
        tracer = SpanCapture()
    for flag, texts in (("--model", args.models), ("--target", args.targets)):
        clash = subject_clash(flag, texts, model=flag == "--model")  # as pytest's flags are read
        if clash is not None:
            raise ValueError(clash)
    subjects: list[_Subject] = []
    seen: dict[str, str] = {}
    for flag, given in [("--model", m) for m in args.models] + [
        ("--target", t) for t in args.targets
    ]:
        subject, value = subject_named(given, model=flag == "--model")
        if (why := file_subject_problem(subject)) is not None:
            raise ValueError(
                f"{flag} {given}: subject {subject!r} cannot name a file: {why}; give it a "
                f"name that can, {flag} NAME={value}"
            )
        if subject in seen:
            raise ValueError(
                f"{seen[subject]} and {flag} {given} are both subject {subject!r}; name one "
                f"of them, {flag} OTHER={value}"
            )
        seen[subject] = f"{flag} {given}"
        if flag == "--model":
            spec = ModelSpec.parse(value)
            model = LiveModel(spec, subject=subject, policy=RetryPolicy())
            source = Source(target=model, target_name=spec.name, subject=subject)
        else:
            try:
                check_import_path(value)
            except ValueError:
                raise ValueError(
                    f"--target {given}: write MODULE:FUNCTION, the module and the function "
                    "the answers come from, e.g. --target app.bot:answer"
                ) from None
            try:
                target = Target.of(resolve_import(value), module=value.partition(":")[0])
            except TypeError as exc:
                raise ValueError(f"--target {value} cannot be called: {exc}") from None
            except Exception as exc:
                raise ValueError(
                    f"--target {value}: cannot import it: {type(exc).__name__}: {exc}"
                ) from None
            source = Source(
                target=target,
                target_name=value,
                subject=subject,
                timeout=_ini_setting("call_timeout") if args.timeout is None else args.timeout,
                runner=runner,
                tracer=tracer,
            )
        subjects.append(_Subject(subject, f"{flag} {given}", source))
    return subjects


def _suites(dirs: Sequence[Path]) -> list[Any]:
    """Every rubric file under ``dirs`` (named as the ini's ``rubric_file_patterns`` says, as
    a run would collect them), loaded; a file that does not load is an error."""
    from .._errors import RubricLoadError
    from .._load.loader import load_suite

    patterns = ini_values(Path.cwd(), "rubric_file_patterns") or DEFAULT_PATTERNS
    files = sorted(
        {p for d in dirs for pattern in patterns for p in d.rglob(pattern) if p.is_file()}
    )
    if not files:
        raise ValueError(
            f"no rubric file under {', '.join(map(str, dirs))} (names like {', '.join(patterns)})"
        )
    loaded = []
    owner: dict[tuple[str, str], Path] = {}  # the file of each (suite, case id) a line names
    for path in files:
        try:
            rubric = load_suite(path)
        except RubricLoadError as exc:
            raise ValueError(exc.render(path)) from None
        for case in rubric.suite.cases:
            # A line names its suite and its case, nothing else: two files of one suite name
            # with one case id would write lines that no run can tell apart.
            first = owner.setdefault((rubric.name, case.id), path)
            if first != path:
                raise ValueError(
                    f"{first} and {path} are both suite {rubric.name!r} with a case "
                    f"{case.id!r}, which their answers could not tell apart; give one of "
                    "them a `suite:` name of its own"
                )
        loaded.append(rubric)
    return loaded


def _ini_setting(key: str) -> Any:
    """The ini ``rubric_<key>`` read as a run reads it (by its option's reader), else the
    option's default; a wrong value is an error naming the key."""
    option = BY_KEY[key]
    values = ini_values(Path.cwd(), option.dest)
    if values is None:
        return option.default
    text = " ".join(values)
    try:
        return reader(option.parse)(text) if option.parse else text
    except ValueError as exc:
        raise ValueError(f"ini option {option.dest} = {exc}") from None


# Where pytest looks for its configuration in each folder, from the current one up, and the
# table or section that makes a file pytest's (pytest.ini is pytest's even without one).
_INI_FILES = (
    ("pytest.toml", ("pytest",)),
    (".pytest.toml", ("pytest",)),
    ("pytest.ini", None),
    (".pytest.ini", None),
    ("pyproject.toml", ("tool", "pytest", "ini_options")),
    ("pyproject.toml", ("tool", "pytest")),
    ("tox.ini", ("pytest",)),
    ("setup.cfg", ("tool:pytest",)),
)


def ini_values(start: Path, key: str) -> tuple[str, ...] | None:
    """The ini ``key``'s values (``rubric_file_patterns``, ``rubric_otel``), split as pytest
    splits an ``args`` value (by spaces and lines, quotes kept together), from the
    configuration file pytest would read, found from ``start`` upward as pytest finds it; None
    when that file does not set it (or none is found). ``collect`` runs without pytest, so it
    reads the file itself."""
    import configparser
    import shlex
    import tomllib

    for folder in (start.resolve(), *start.resolve().parents):
        for name, section in _INI_FILES:
            path = folder / name
            if not path.is_file():
                continue
            try:
                if name.endswith(".toml"):
                    table: Any = tomllib.loads(path.read_text(encoding="utf-8"))
                    for part in section or ():
                        table = table.get(part) if isinstance(table, dict) else None
                    if not isinstance(table, dict):
                        continue
                    value = table.get(key)
                    if isinstance(value, str):
                        value = shlex.split(value)
                    found: list[Any] | None = value if isinstance(value, list) else [value]
                else:
                    parser = configparser.ConfigParser(interpolation=None)
                    parser.read_string(path.read_text(encoding="utf-8"))
                    heading = section[0] if section else "pytest"
                    if not parser.has_section(heading):
                        if section is None:
                            return None  # pytest.ini without [pytest]: pytest's, and unset
                        continue
                    text = parser.get(heading, key, fallback=None)
                    found = None if text is None else shlex.split(text)
            except (OSError, ValueError, configparser.Error) as exc:
                raise ValueError(f"{path}: cannot read {key}: {exc}") from None
            return (
                tuple(str(p).strip() for p in found or () if p is not None and str(p).strip())
                or None
            )
    return None
