"""``python -m pytest_rubric import FORMAT ...``: other tools' datasets as rubric suites.

One sub-command per format: its arguments and its conversion. Each conversion reads
everything first and raises :class:`~._common.ImportFailed` listing every located
problem, so nothing is written from input that is partly wrong.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from . import promptfoo
from ._common import Imported, ImportFailed, write


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``import`` command, with one sub-command per format."""
    cmd = commands.add_parser(
        "import",
        help="convert another tool's dataset into rubric files",
        description="Convert another tool's dataset into rubric files and responses under --out. "
        "Input the tool itself would refuse is listed, every problem with its file and line, "
        "and then nothing is written (exit status 2). What promptfoo can run and this plugin "
        "cannot grade is listed as `not mapped:` and left out; the rest is written (exit "
        "status 0). A file that exists is not overwritten without --force.",
    )
    cmd.set_defaults(run=run)
    formats = cmd.add_subparsers(dest="format", required=True, metavar="FORMAT")
    about = "HealthBench JSONL (openai/simple-evals) as a report-only suite of judged criteria"
    sub = formats.add_parser("healthbench", help=about, description=about)
    sub.add_argument(
        "data", type=Path, metavar="DATA.jsonl", help="HealthBench examples, one a line"
    )
    sub.add_argument(
        "--responses",
        action="append",
        default=[],
        metavar="SUBJECT=FILE.jsonl",
        help="completions keyed by prompt_id, written as responses/SUBJECT.jsonl (repeatable)",
    )
    _output_arguments(sub, _healthbench)
    about = "promptfoo configs: tests as cases, assertions as criteria; lists what it cannot map"
    sub = formats.add_parser("promptfoo", help=about, description=about)
    sub.add_argument(
        "configs",
        type=Path,
        nargs="+",
        metavar="promptfooconfig.yaml",
        help="promptfoo configs; each becomes one rubric file named after it",
    )
    _output_arguments(sub, lambda args: promptfoo.convert(args.configs))


def _output_arguments(
    sub: argparse.ArgumentParser, convert: Callable[[argparse.Namespace], Imported]
) -> None:
    sub.add_argument("--out", type=Path, required=True, metavar="DIR", help="where to write")
    sub.add_argument("--force", action="store_true", help="overwrite files that exist")
    sub.set_defaults(convert=convert)


def _healthbench(args: argparse.Namespace) -> Imported:
    from .healthbench import convert

    responses: dict[str, Path] = {}
    for spec in args.responses:
        subject, sep, path = spec.partition("=")
        if not sep or not subject or not path:
            raise argparse.ArgumentTypeError(
                f"--responses {spec!r}: write it as SUBJECT=FILE.jsonl, e.g. gpt-4o=completions.jsonl"
            )
        if subject in responses:
            raise argparse.ArgumentTypeError(f"--responses: subject {subject!r} is given twice")
        responses[subject] = Path(path)
    return convert(args.data, responses=responses)


def run(args: argparse.Namespace) -> int:
    """Convert and write; the exit status (0, or 2 for bad input)."""
    try:
        output = args.convert(args)
        written = write(output, args.out, force=args.force)
    except (argparse.ArgumentTypeError, ImportFailed) as exc:
        print(f"pytest-rubric import {args.format}: error: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    for note in output.notes:
        print(note if note.startswith("not mapped: ") else f"note: {note}")
    return 0
