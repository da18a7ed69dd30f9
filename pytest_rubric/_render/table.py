"""Plain-text tables (the per-criterion failure table and the leaderboard share one
renderer), and the plain text each output says alike of a run and of an answer."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from .._defaults import SHOW_QUESTION, SHOW_RESPONSE
from .._grade.bounds import skip_reason
from .._guards.secrets import clip, known_keys, shorten
from .._results import CaseResult, CriterionResult, mark_text
from .._trace import Trace

if TYPE_CHECKING:
    from .._report.report import SessionReport

SHOW_REQUIREMENT = 300  # a requirement's characters a failure table shows; the JSON has it whole


def render_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, right: set[int]
) -> list[str]:
    """Columns padded to their widest cell; indexes in ``right`` are right-aligned."""
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            str(c).rjust(w) if i in right else str(c).ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(header), *(line(r) for r in rows)]


def tally(report: SessionReport) -> str:
    """How many answers passed, and how many a missing judge left undecided (neither passed
    nor failed): the HTML's and the Markdown's first sentence."""
    text = f"{report.passed} of {len(report.results)} answers passed"
    if undecided := report.undecided:
        text += f", {len(undecided)} left undecided without the judge"
    return f"{text}."


def score_text(result: CaseResult) -> str:
    """An answer's score beside its pass mark; for one left undecided without the judge, its
    bounds as the terminal's skip reason gives them (its score counts only what ran)."""
    if result.skipped_bounds is not None:
        return skip_reason(result)
    return f"score {result.score:.2f} ({mark_text(result.min_score)})"


def with_requirement(criterion: CriterionResult) -> str:
    """A criterion's reason, after its requirement when it is judged: the text of one cell
    (the CSV's ``reason``, a Markdown line), where the id alone would not say what was asked."""
    if criterion.requirement is None:
        return criterion.reason
    return f"requirement: {criterion.requirement}; reason: {criterion.reason}"


def criteria_table(result: CaseResult) -> str:
    """The failure text: a headline, then one row per criterion (``x``: went the wrong way,
    ``!`` ERROR, ``-`` SKIPPED), a judged one's followed by its requirement (``c1`` does not
    say what the judge was asked)."""
    marks = {"ERROR": "!", "SKIPPED": "-"}
    rows = [
        (
            marks.get(str(c.verdict), " " if c.ok else "x"),
            c.id,
            c.type + (" (style)" if c.axis == "style" else ""),
            str(c.verdict) + (" unstable" if c.unstable else ""),
            f"{c.weight:g}",
            c.reason,
        )
        for c in result.criteria
    ]
    headline = (
        f"rubric {result.case}[{result.subject}]: score {result.score:.2f} "
        f"({mark_text(result.min_score)}, raw {result.raw_score:g}) {result.status.upper()}"
    )
    header, *table = render_table(
        ("", "criterion", "type", "verdict", "weight", "reason"), rows, right={4}
    )
    lines = [headline, header]
    for c, row in zip(result.criteria, table, strict=True):
        lines.append(row)
        if c.requirement is not None:
            one_line = " ".join(c.requirement.split())
            lines.append(f"     requirement: {shorten(one_line, SHOW_REQUIREMENT)}")
    lines += [f"  - {reason}" for reason in result.failure_reasons()]
    if skipped := result.skipped:
        lines.append(f"  ({len(skipped)} judged criteria SKIPPED: {skipped[0].reason})")
    return "\n".join(lines)


def since_baseline(
    result: CaseResult, baseline: Sequence[CaseResult] | None, show_response: int = SHOW_RESPONSE
) -> list[str]:
    """With ``--rubric-baseline``, a case that passed there and fails now: the criteria whose
    verdict changed, and its response there beside today's (none for any other case)."""
    from .._report.gates import before_and_after, changed

    same = (result.nodeid, result.case, result.subject)
    was = next((w for w in baseline or () if (w.nodeid, w.case, w.subject) == same), None)
    if result.passed or was is None or not was.passed:
        return []
    rows = before_and_after(changed(was, result), limit=show_response)
    return ["", "since the baseline:", *labelled(rows)]


def answer_lines(result: CaseResult, *, show_response: int = SHOW_RESPONSE) -> list[str]:
    """What the application was asked and said, each cut (``show_response`` 0: no response)
    and redacted again of the keys known now before the cut, so no cut leaves a piece of a
    key behind."""
    keys = known_keys()
    shown = []
    if result.question:
        shown.append(("question", clip(result.question, *keys, limit=SHOW_QUESTION)))
    if show_response > 0:
        shown.append(("response", clip(result.response, *keys, limit=show_response)))
        # The response above is the first sample's, which may have passed: the answer that
        # scored lowest is the one to read.
        if (lowest := result.lowest_sample) is not None:
            number, sample = lowest
            label = f"sample {number} of {result.n_samples} (score {sample.score:.2f})"
            shown.append((label, clip(sample.response, *keys, limit=show_response)))
    return labelled(shown) + trace_lines(result.trace)


def labelled(shown: Iterable[tuple[str, str]]) -> list[str]:
    """``label: text``, each further line of a text indented under its first. Lines end at
    ``\\n`` only (not at CR, FF or NEL, as ``splitlines``'s do): the boundary escapes those."""
    lines = []
    for label, text in shown:
        first, *rest = text.split("\n")
        lines += [f"{label}: {first}", *(f"  {line}" for line in rest)]
    return lines


# A call's arguments as a report line shows them: compact JSON, cut short.
_SHOWN_ARGUMENTS = 200


def trace_lines(trace: Trace | None) -> list[str]:
    """What the application did, as a failing item's report shows it after the response:
    each tool call (name, arguments, ok or failed), then the context's passage ids (or that
    the application reported an empty one)."""
    if trace is None:
        return []
    lines = []
    if trace.tool_calls or trace.llm_calls is not None:
        lines.append(f"tool calls ({len(trace.tool_calls)}, {trace.source}):")
        for call in trace.tool_calls:
            arguments = call.arguments
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False, default=str)
            shown = shorten(arguments, _SHOWN_ARGUMENTS, *known_keys())
            lines.append(f"  {call.name} {shown} {'ok' if call.ok else 'FAILED'}")
    if trace.context:
        lines.append(f"context ({len(trace.context)}): {', '.join(trace.passage_ids)}")
    elif trace.context_known:
        lines.append("context (0): the retriever found nothing")
    return lines
