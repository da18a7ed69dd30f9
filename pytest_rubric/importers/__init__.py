"""``python -m pytest_rubric import FORMAT ...``: other tools' datasets as rubric suites.

One entry per format in :data:`IMPORTERS`: its arguments and its conversion.
Each conversion reads everything first and raises
:class:`~._common.ImportFailed` listing every located problem, so nothing is
written from input that is partly wrong.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ._common import ImportFailed, Output, write

__all__ = ["IMPORTERS", "Importer", "add_commands", "run"]

EXIT_OK, EXIT_BAD_INPUT = 0, 2


@dataclass(frozen=True, slots=True)
class Importer:
    """A format: how its command line reads, and how its input converts."""

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    convert: Callable[[argparse.Namespace], Output]


def _healthbench_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "data", type=Path, metavar="DATA.jsonl", help="HealthBench examples, one a line"
    )
    parser.add_argument(
        "--responses",
        action="append",
        default=[],
        metavar="SUBJECT=FILE.jsonl",
        help="completions keyed by prompt_id, written as responses/SUBJECT.jsonl (repeatable)",
    )


def _healthbench(args: argparse.Namespace) -> Output:
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


def _promptfoo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "configs",
        type=Path,
        nargs="+",
        metavar="promptfooconfig.yaml",
        help="promptfoo configs; each becomes one rubric file named after it",
    )


def _promptfoo(args: argparse.Namespace) -> Output:
    from .promptfoo import convert

    return convert(args.configs)


IMPORTERS: tuple[Importer, ...] = (
    Importer(
        "healthbench",
        "HealthBench JSONL (openai/simple-evals) as a report-only suite of judged criteria",
        _healthbench_arguments,
        _healthbench,
    ),
    Importer(
        "promptfoo",
        "promptfoo configs: tests as cases, assertions as criteria; lists what it cannot map",
        _promptfoo_arguments,
        _promptfoo,
    ),
)


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``import`` command, with one sub-command per format."""
    cmd = commands.add_parser(
        "import",
        help="convert another tool's dataset into rubric files",
        description="Convert another tool's dataset into rubric files and responses under --out. "
        "Every problem in the input is listed with its file and line, and then nothing is "
        "written (exit status 2). A file that exists is not overwritten without --force.",
    )
    formats = cmd.add_subparsers(dest="format", required=True, metavar="FORMAT")
    for importer in IMPORTERS:
        sub = formats.add_parser(importer.name, help=importer.help, description=importer.help)
        importer.arguments(sub)
        sub.add_argument("--out", type=Path, required=True, metavar="DIR", help="where to write")
        sub.add_argument("--force", action="store_true", help="overwrite files that exist")


def run(args: argparse.Namespace) -> int:
    """Convert and write; the exit status."""
    importer = next(i for i in IMPORTERS if i.name == args.format)
    prog = f"pytest-rubric import {importer.name}"
    try:
        output = importer.convert(args)
        written = write(output, args.out, force=args.force)
    except argparse.ArgumentTypeError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ImportFailed as exc:
        print(f"{prog}: error: {exc.render()}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for path in written:
        print(f"wrote {path}")
    for note in output.notes:
        print(note if note.startswith("not mapped: ") else f"note: {note}")
    return EXIT_OK
