"""The ``rubric summary`` section: a :class:`SessionReport` rendered as terminal lines.

Each line carries the severity of what it says; the terminal picks its colour
from that (:attr:`Line.markup`), and ``merge`` prints the text alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from .._llm.base import CallStats
from .._llm.cost import Price, money
from .._report.gates import GateReport, before_and_after
from .._report.leaderboard import breakdown_tables
from .._report.leaderboard import columns as board_columns
from .._report.report import JudgeUsage, SessionReport, Severity
from .table import labelled, render_table

_MARK = {Severity.WARNING: "! ", Severity.CAUTION: "~ "}
# Report-only cases shown with their before and after in the summary; the rest are counted.
_SHOWN_CHANGES = 5
_MARKUP: dict[Severity, dict[str, bool]] = {
    Severity.INFO: {},
    Severity.CAUTION: {"cyan": True},
    Severity.WARNING: {"yellow": True},
    Severity.ERROR: {"red": True},
}


@dataclass(frozen=True, slots=True)
class Line:
    text: str
    severity: Severity = Severity.INFO

    @property
    def markup(self) -> dict[str, bool]:
        """Keyword arguments for ``TerminalReporter.line``."""
        return _MARKUP[self.severity]


# pytest's failure report pairs each failure with its teardown by scanning every test's
# setup and teardown reports: failures x tests steps (bench/bench_failures.py). Past this
# many, it takes seconds to minutes, whatever the tests are.
SLOW_FAILURE_REPORT = 10_000_000


def slow_failure_report(*, failed: int, tests: int, tbstyle: str) -> Line | None:
    """A line said before pytest prints its failures, when that will take long (``--tb``
    line and no skip the slow part)."""
    if tbstyle in ("line", "no") or failed * tests < SLOW_FAILURE_REPORT:
        return None
    return Line(
        f"rubric: {failed:,} of {tests:,} tests failed; pytest's report of the failures "
        "takes time that grows with failures x tests, a while at this size: --tb=line "
        "prints one line per failure, and the rubric summary and outputs hold every result",
        Severity.WARNING,
    )


def terminal_lines(report: SessionReport, *, board_when_empty: bool = False) -> list[Line]:
    """The leaderboard, the notes, the judge's usage and the gates. ``board_when_empty``:
    the leaderboard's header without results (``merge`` says what it merged)."""
    lines: list[Line] = []
    if report.leaderboard or board_when_empty:
        columns = board_columns(report.leaderboard)
        cells = [[column.cell(row) for column in columns] for row in report.leaderboard]
        right = {i for i, column in enumerate(columns) if not column.text}
        table = render_table([column.header for column in columns], cells, right=right)
        lines += [Line(text) for text in table]
        if report.leaderboard:
            tiers = (
                ""
                if len(report.leaderboard) == 1
                else "; subjects in one tier are not told apart by this suite"
            )
            lines.append(Line(f"correctness [{report.level:g} interval over cases]{tiers}"))
    passed, failed = report.assertions
    if passed or failed:
        lines.append(Line(f"assertions: {passed} passed, {failed} failed"))
    for group, header, rows in breakdown_tables(report.breakdowns):
        lines.append(Line(f"by {group}:"))
        lines += [Line(f"  {text}") for text in render_table(header, rows, right={2, 3})]
    for note in report.notes:
        lines.append(Line(_MARK.get(note.severity, "") + note.text, note.severity))
        lines += [Line(f"  {detail}", note.severity) for detail in note.details]
    lines += _usage_lines(report.judge_usage)
    if report.judge_audit.shown:
        lines += [Line("judge audit"), *(Line(text) for text in report.judge_audit.lines())]
    return lines + _gate_lines(report.gates, report.show_response)


def _usage_lines(usage: JudgeUsage) -> list[Line]:
    """A line per judge (calls, tokens, cost, cache), then what a reader should act on."""
    lines = [Line(_judge_line(name, stats, price)) for name, stats, price in usage.judges]
    lines += [
        Line(
            f"warning: judge {name} sent {stats.estimated} replies without `usage`; with "
            "prices or a budget set, their tokens are estimated at 4 characters per token",
            Severity.WARNING,
        )
        for name, stats, _ in usage.judges
        if stats.estimated and usage.priced
    ]
    if (elsewhere := _elsewhere_line([stats for _, stats, _ in usage.judges])) is not None:
        lines.append(Line(elsewhere, Severity.WARNING))
    if usage.over_budget:
        many = "criterion" if usage.over_budget == 1 else "criteria"
        text = f"cost budget of ${usage.max_cost} spent: {usage.over_budget} {many} left ERROR"
        lines.append(Line(text, Severity.ERROR))
    return lines


def _judge_line(name: str, stats: CallStats, price: Price | None) -> str:
    """One judge's usage; with a price, what the calls cost and what the cache saved."""
    text = (
        f"judge {name}: {stats.calls} calls, {stats.retries} retries, {stats.errors} errors, "
        f"tokens {stats.tokens_in} in / {stats.tokens_out} out"
    )
    if price is not None:
        text += f", cost {money(stats.cost(price))}"
    if stats.cache_hits or stats.cache_misses:
        text += f", cache {stats.cache_hits} hits / {stats.cache_misses} misses"
        if price is not None:
            text += f" (saved {money(price.cost(stats.saved_in, stats.saved_out))})"
    if stats.fallbacks:
        text += f"; output mode fell back: {', '.join(dict.fromkeys(stats.fallbacks))}"
    if stats.estimated:
        text += f"; {stats.estimated} replies without usage, estimated"
    return text


# Endpoints the judge cache's line names; the rest are counted.
_SHOWN_ENDPOINTS = 3


def _elsewhere_line(usage: Sequence[CallStats]) -> str | None:
    """How many judge cache hits were recorded against another endpoint than the one the run
    names (and which), or None when none were."""
    if not (counts := sum((Counter(stats.elsewhere) for stats in usage), Counter[str]())):
        return None
    hits = sum(stats.cache_hits for stats in usage)
    n = sum(counts.values())
    shown = sorted(counts, key=lambda endpoint: (-counts[endpoint], endpoint))
    where = ", ".join(shown[:_SHOWN_ENDPOINTS])
    if len(shown) > _SHOWN_ENDPOINTS:
        where += f" and {len(shown) - _SHOWN_ENDPOINTS} more"
    return (
        f"judge cache: {n} of {hits} hits {'was' if n == 1 else 'were'} recorded against "
        f"another endpoint ({where})"
    )


def _gate_lines(gates: GateReport, show_response: int) -> list[Line]:
    if not gates.active:
        return []
    lines: list[Line] = []
    if gates.baseline is not None:
        lines.append(
            Line(
                f"baseline {gates.baseline}: correctness per subject (change [{gates.level:g} "
                "paired interval over shared cases])"
            )
        )
        for d in gates.deltas:
            subject, before, after, change = d.cells(missing="-")
            change = "" if d.change is None else f" ({change})"
            lines.append(Line(f"  {subject}: {before} -> {after}{change}"))
    # A report-only case passes whatever it scores, so no failure report shows its change.
    scored_lower = [c for c in gates.changes if c.heading == "scored lower (report-only)"]
    for lower in scored_lower[:_SHOWN_CHANGES]:
        lines.append(Line(f"  {lower.heading}: {lower.nodeid}"))
        rows = labelled(before_and_after(lower, limit=show_response))
        lines += [Line(f"    {text}") for text in rows]
    if len(scored_lower) > _SHOWN_CHANGES:
        more = len(scored_lower) - _SHOWN_CHANGES
        lines.append(
            Line(f"  ... and {more} more scored lower: see the Markdown or the HTML report")
        )
    lines += [Line(f"  note: {note}") for note in gates.noted]
    if gates.failed:
        lines.append(Line(f"rubric gate FAILED ({len(gates.regressions)}):", Severity.ERROR))
        lines += [Line(f"  - {reason}", Severity.ERROR) for reason in gates.regressions]
    else:
        lines.append(Line(f"rubric gate passed: {_passed(gates)}"))
    return lines


def _passed(gates: GateReport) -> str:
    """What passing the gates that ran means."""
    parts = []
    asked = gates.asked
    if gates.baseline is not None and asked.gate_confidence is None:
        parts.append(
            f"no case regressed, no subject dropped more than {asked.max_drop:g} "
            f"({asked.flag}max-drop)"
        )
    elif gates.baseline is not None:
        parts.append(
            f"no case fell and no subject dropped more than {asked.max_drop:g} beyond noise "
            f"({asked.flag}max-drop, {asked.flag}gate-confidence {asked.gate_confidence:g})"
        )
    if asked.fail_under is not None:
        parts.append(f"every subject at or above {asked.fail_under:g} ({asked.flag}fail-under)")
    for kind, limit in sorted(asked.max_flips.items(), key=lambda kl: (kl[0] != "tone", kl[0])):
        parts.append(
            f"judge style sensitivity at most {limit:g} (--rubric-judge-max-style-flips)"
            if kind == "tone"
            else f"judge {kind} sensitivity at most {limit:g} (the {kind} probe's limit)"
        )
    if asked.min_kappa is not None:
        parts.append(
            f"every calibrated suite's kappa at least {asked.min_kappa:g} "
            "(--rubric-judge-min-kappa)"
        )
    # A merge given no gate of its own still reports the shards' (see _cli.merge).
    return "; ".join(parts) or "every gate of the merged documents"
