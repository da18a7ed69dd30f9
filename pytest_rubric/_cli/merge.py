"""``python -m pytest_rubric``: its commands, and ``merge``, which makes one leaderboard,
report and gate from the ``--rubric-json`` documents of CI shards (``docs/guides/ci.md``).

The merge gives what one run over the whole suite would have: the leaderboard is recomputed
from the results, never averaged from the shards'; whether a case passed is recomputed from
its criteria, never taken from the shard; a gate on a subject is measured on the whole, never
kept from a shard that saw a part of it (merge's ``--fail-under``, which shards gated with
``--rubric-fail-under`` need); the outcomes of the gates a merge does not apply itself (the judge's, or each case's
against a baseline given to the shards only) are kept from the shards' ``gates`` and count
in the exit status. The merged ``run`` is that of the shards together
(``_report.run.merged``). Exit status 0 when every case and gate passed, 1 when a case
failed or could not be evaluated or a gate failed, 2 for bad input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from .. import importers
from .._config.outputs import OUTPUTS
from .._config.settings import fraction
from .._errors import DocumentError
from .._guards.outgoing import outgoing_streams
from .._render.files import write_outputs
from .._render.summary import terminal_lines
from .._report.document import Document, load_document
from .._report.gates import Gates
from .._report.history import HistoryError, append, with_trend
from .._report.report import build_report
from .._report.run import RunInfo, merged
from . import freeze, history, init

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
DEFAULT_LEVEL = 0.95  # a run's, without --rubric-confidence


def merge(shards: Sequence[tuple[Path, Document]], *, allow_incomplete: bool = False) -> Document:
    """The shards (each file's path and document) as one document: the results of every
    shard; a node id found in two shards (the same items run twice) is an error, and so is a
    shard whose run was interrupted unless ``allow_incomplete``.

    With them, in shard order: the notes where a recomputed ``passed`` overrules the shard;
    the first shard's calibration figures of each suite and judge (every shard ran the whole
    session's calibration examples); the shards' runs together; each shard's gate outcomes.
    """
    together = Document([])
    runs: list[RunInfo] = []
    interrupted: list[str] = []
    owner: dict[str, tuple[int, Path]] = {}  # each node id's shard: its place, its path
    for shard, (path, document) in enumerate(shards):
        if document.run is not None and not document.run.complete and not allow_incomplete:
            raise DocumentError(
                f"{path}: its run was interrupted (run.complete is false), so it holds only "
                "part of its shard; run that shard again, or pass --allow-incomplete to merge "
                "what it has"
            )
        if document.run is not None and not document.run.complete:
            interrupted.append(str(path))
        together.recomputed += document.recomputed
        if document.run is not None:
            runs.append(document.run)
        seen = {(c.suite, c.judge) for c in together.calibration}
        together.calibration += [c for c in document.calibration if (c.suite, c.judge) not in seen]
        together.gates += document.gates
        # One result per item; a test's assert_rubric calls are several, each its own case
        # and subject under the test's node id.
        seen_here: set[tuple[str, str, str]] = set()
        for r in document.results:
            nodeid = r.nodeid
            if (nodeid, r.case, r.subject) in seen_here:
                raise DocumentError(
                    f"{path} holds {nodeid} twice: one run records an item once, so this "
                    "document was edited or concatenated; write each item's result once"
                )
            seen_here.add((nodeid, r.case, r.subject))
            if owner.setdefault(nodeid, (shard, path))[0] != shard:
                raise DocumentError(
                    f"{nodeid} is in both {owner[nodeid][1]} and {path}: shards must not "
                    "overlap (split the suite with disjoint paths, -k expressions or a shard "
                    "plugin)"
                )
        together.results += document.results
    together.run = merged(runs)
    if together.run is not None and interrupted:
        together.run = replace(together.run, interrupted=tuple(interrupted))
    return together


def ran_at(shards: Sequence[tuple[Path, Document]]) -> float:
    """The confidence level the shards ran at (``--rubric-confidence``, ini
    ``rubric_confidence``), as each result records it: a merge's intervals and tiers are the
    whole run's at that level. Shards at different levels leave merge to be told
    (``--confidence``); with no result at all, the default."""
    levels: dict[float, Path] = {}
    for path, document in shards:
        for result in document.results:
            levels.setdefault(result.level, path)
    if len(levels) > 1:
        said = " and ".join(f"{level:g} in {path}" for level, path in levels.items())
        raise DocumentError(
            f"the shards ran at confidence {said}: pass --confidence LEVEL to merge them at one"
        )
    return next(iter(levels), DEFAULT_LEVEL)


def check_parts(shards: Sequence[tuple[Path, Document]], gate: str, remedy: str) -> None:
    """Refuse the shards' ``gate`` entries (``baseline-subject``, ``fail-under``) on a subject
    that other shards graded too: each measured the subject over its own part of it, and a
    shard's verdict kept would pass or fail the merge on a part; ``remedy`` says how merge
    measures it on the whole instead."""
    gated: dict[str, Path] = {}
    for path, document in shards:
        for entry in document.gates:
            if entry.gate == gate and entry.subject is not None:
                gated.setdefault(entry.subject, path)
    for path, document in shards:
        for subject in dict.fromkeys(r.subject for r in document.results):
            if (first := gated.get(subject)) is not None and first != path:
                raise DocumentError(
                    f"subject {subject} was gated by {gate} in {first} and graded in {path} "
                    f"too: each shard measured it over its own cases; {remedy} to measure it "
                    "on the whole suite"
                )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_rubric",
        description="pytest-rubric tools: merge the --rubric-json files of CI shards; import "
        "another tool's dataset as rubric files; collect the application's answers as "
        "responses files; history prints the runs of a --rubric-history file; init a starter "
        "evals/ folder.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    cmd = commands.add_parser(
        "merge",
        help="merge --rubric-json files into one leaderboard, report and gate",
        description="Merge the --rubric-json files of shards of one suite: the leaderboard, "
        "reports and gates are those of one run over the whole suite. Exit status 0 when every "
        "case passed, 1 when one failed or could not be evaluated or a gate failed, 2 for bad "
        "input.",
    )
    cmd.add_argument("documents", nargs="+", type=Path, metavar="JSON", help="--rubric-json files")
    for output in OUTPUTS:
        cmd.add_argument(f"--{output.name}", type=Path, metavar="PATH", help=output.merge_help)
    cmd.add_argument(
        "--baseline", type=Path, metavar="PATH", help="an earlier --rubric-json to gate against"
    )
    cmd.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="merge a shard whose run was interrupted (run.complete false in its JSON), "
        "which is refused otherwise",
    )
    cmd.add_argument(
        "--history",
        type=Path,
        metavar="PATH",
        help="append the merged run to this --rubric-history file (once for all the shards)",
    )
    cmd.add_argument(
        "--max-drop",
        type=fraction,
        default=0.0,
        metavar="X",
        help="correctness drop per subject the baseline gate tolerates (default 0)",
    )
    cmd.add_argument(
        "--confidence",
        type=float,
        metavar="LEVEL",
        help="confidence level of every interval and tier, as --rubric-confidence (default: "
        "the level the shards ran at)",
    )
    cmd.add_argument(
        "--gate-confidence",
        type=float,
        metavar="C",
        help="the baseline gate fails only on changes beyond noise: a subject's drop when the "
        "paired C-interval of (now - baseline) lies wholly below -max-drop, a case's flip when "
        "its passing samples fell significantly (as --rubric-gate-confidence)",
    )
    cmd.add_argument(
        "--fail-under",
        type=fraction,
        metavar="X",
        help="fail when a subject's mean correctness is below X",
    )
    for command in (importers, freeze, history, init):
        command.add_commands(commands)  # each sets `run`, the function its command runs
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Every command, its output through the outgoing boundary: what it prints (a target's
    exception text, a document's values, argparse's errors) is redacted and escaped as a
    report is."""
    with outgoing_streams():
        return _command(argv)


def _unjudged(shards: Document) -> str | None:
    """Why the shards left judged criteria SKIPPED when a judge was set without its key (a
    keyless colleague's run: the reason says so, and names the key); None otherwise."""
    from .._defaults import NO_KEY
    from .._results import Verdict

    reasons = (
        c.reason
        for r in shards.results
        for c in r.every_criterion
        if c.verdict is Verdict.SKIPPED and c.reason.startswith(NO_KEY)
    )
    return next(reasons, None)


def _warn(text: str) -> None:
    print(f"pytest-rubric merge: warning: {text}", file=sys.stderr)


def _command(argv: Sequence[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command != "merge":
        return int(args.run(args))
    for name in ("confidence", "gate_confidence"):
        if (value := getattr(args, name)) is not None and not 0 < value < 1:
            parser.error(f"--{name.replace('_', '-')} {value:g}: write a number between 0 and 1")
    try:
        documents = [(path, load_document(path)) for path in args.documents]
        shards = merge(documents, allow_incomplete=args.allow_incomplete)
        baseline = load_document(args.baseline).results if args.baseline is not None else None
        if baseline is None:
            remedy = "pass the baseline to merge (--baseline, and the shards' --max-drop)"
            check_parts(documents, "baseline-subject", remedy)
        if args.fail_under is None:
            check_parts(documents, "fail-under", "pass --fail-under X (the shards' threshold)")
        level = args.confidence if args.confidence is not None else ran_at(documents)
    except DocumentError as exc:
        print(f"pytest-rubric merge: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for note in shards.recomputed:
        print(f"pytest-rubric merge: note: {note}", file=sys.stderr)
    report = build_report(
        shards.results,
        gates=Gates(
            baseline=baseline,
            baseline_name=str(args.baseline) if args.baseline is not None else None,
            max_drop=args.max_drop,
            gate_confidence=args.gate_confidence,
            fail_under=args.fail_under,
            # The shards' verdicts of gates this merge does not apply itself (the judge's, or
            # a baseline given to the shards and not to the merge) are kept, never dropped.
            carried=shards.gates,
            flag="--",  # its messages name this command's flags: --max-drop, not --rubric-
            unjudged=_unjudged(shards),
        ),
        level=level,
        calibration=shards.calibration,
        run=shards.run,
    )
    if args.history is not None:
        report = with_trend(report, args.history, warn=_warn, flag="--")
    paths = {output.name: getattr(args, output.name) for output in OUTPUTS}
    for unwritten in write_outputs(report, paths, flag="--"):  # the others are written
        print(f"pytest-rubric merge: error: {unwritten.line}", file=sys.stderr)
    if args.history is not None:
        try:
            append(args.history, report, flag="--")
        except HistoryError as exc:  # the merged reports are written whatever the history says
            _warn(str(exc))
    summary = f"rubric summary: {len(shards.results)} results from {len(args.documents)} file(s)"
    if shards.run is not None and shards.run.incomplete is not None:
        summary += f"; incomplete: {shards.run.incomplete}"
    print(summary)
    for line in terminal_lines(report, board_when_empty=True):
        print(line.text)
    return EXIT_OK if report.ok else EXIT_FAILED
