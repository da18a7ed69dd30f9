"""The HTML report's plots: the style-versus-substance scatter (one mark per subject per
spot) with each subject's interval, and the trend lines over the history."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from .._grade.style import StyleThresholds
from .._report.leaderboard import SubjectRow, interval_text
from .._report.report import SessionReport
from .._results import CaseResult
from .html_text import e

__all__ = ["PALETTE", "scatter", "style_of", "trend"]

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
_SHAPES = ("circle", "square", "diamond")
_W, _H = 640, 420
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 16, 16, 48


def style_of(result: CaseResult) -> float:
    """The plot's x: how an answer reads, the mean of fluency and confidence."""
    return (result.fluency + result.confidence) / 2


def _x(value: float) -> float:
    return _LEFT + value * (_W - _LEFT - _RIGHT)


def _y(value: float) -> float:
    return _TOP + (1 - value) * (_H - _TOP - _BOTTOM)


def _marker(shape: str, x: float, y: float, colour: str, title: str, size: float = 1.0) -> str:
    """One mark; ``size`` scales it (a spot holding many answers is drawn larger)."""
    tip = f"<title>{e(title)}</title>"
    if shape == "square":
        half = 4.5 * size
        return (
            f'<rect x="{x - half:.1f}" y="{y - half:.1f}" width="{2 * half:g}" '
            f'height="{2 * half:g}" fill="{colour}" fill-opacity="0.85">{tip}</rect>'
        )
    if shape == "diamond":
        d = 6 * size
        points = f"{x:.1f},{y - d:.1f} {x + d:.1f},{y:.1f} {x:.1f},{y + d:.1f} {x - d:.1f},{y:.1f}"
        return f'<polygon points="{points}" fill="{colour}" fill-opacity="0.85">{tip}</polygon>'
    return (
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{5 * size:.3g}" fill="{colour}" '
        f'fill-opacity="0.85">{tip}</circle>'
    )


def _interval_bar(row: SubjectRow, colour: str, level: float) -> str:
    """A subject's correctness interval: a vertical bar with caps at its mean style."""
    if row.correctness_ci is None:
        return ""
    lo, hi = row.correctness_ci
    x = _x((row.fluency + row.confidence) / 2)
    title = f"{row.subject}: correctness {interval_text(row.correctness, row.correctness_ci)}"
    title += f" ({level:g} interval over {row.n_cases} cases)"
    return (
        f'<g class="interval" stroke="{colour}" stroke-width="2.5"><title>{e(title)}</title>'
        f'<line x1="{x:.1f}" y1="{_y(lo):.1f}" x2="{x:.1f}" y2="{_y(hi):.1f}"/>'
        f'<line x1="{x - 6:.1f}" y1="{_y(lo):.1f}" x2="{x + 6:.1f}" y2="{_y(lo):.1f}"/>'
        f'<line x1="{x - 6:.1f}" y1="{_y(hi):.1f}" x2="{x + 6:.1f}" y2="{_y(hi):.1f}"/>'
        f'<line x1="{x - 10:.1f}" y1="{_y(row.correctness):.1f}" x2="{x + 10:.1f}" '
        f'y2="{_y(row.correctness):.1f}" stroke-width="4"/></g>'
    )


def scatter(
    results: Sequence[CaseResult],
    subjects: Sequence[str],
    thresholds: StyleThresholds,
    rows: Sequence[SubjectRow] = (),
    level: float = 0.95,
) -> str:
    look = {
        s: (PALETTE[i % len(PALETTE)], _SHAPES[i // len(PALETTE) % len(_SHAPES)])
        for i, s in enumerate(subjects)
    }
    low = thresholds.low_score
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H}" width="{_W}" '
        f'height="{_H}" role="img" aria-labelledby="plot-title">',
        '<title id="plot-title">Substance score against style, one point per answer</title>',
        f'<rect x="{_LEFT}" y="{_TOP}" width="{_W - _LEFT - _RIGHT}" height="{_H - _TOP - _BOTTOM}" '
        'fill="#fff" stroke="#888"/>',
        # The trap: reads well, scores low.
        f'<rect class="trap" x="{_x(0.5):.1f}" y="{_y(low):.1f}" width="{_x(1) - _x(0.5):.1f}" '
        f'height="{_y(0) - _y(low):.1f}" fill="#D55E00" fill-opacity="0.12"/>',
        f'<text x="{_x(0.51):.1f}" y="{_y(low) + 14:.1f}" class="trap-label">'
        "sounds right, is wrong</text>",
    ]
    for tick in (0, 0.25, 0.5, 0.75, 1):
        parts.append(
            f'<line x1="{_x(tick):.1f}" y1="{_y(0):.1f}" x2="{_x(tick):.1f}" y2="{_y(0) + 4:.1f}" stroke="#888"/>'
            f'<text x="{_x(tick):.1f}" y="{_y(0) + 16:.1f}" text-anchor="middle">{tick:g}</text>'
            f'<line x1="{_x(0) - 4:.1f}" y1="{_y(tick):.1f}" x2="{_x(0):.1f}" y2="{_y(tick):.1f}" stroke="#888"/>'
            f'<text x="{_x(0) - 7:.1f}" y="{_y(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>'
        )
    parts.append(
        f'<text x="{(_x(0) + _x(1)) / 2:.1f}" y="{_H - 8}" text-anchor="middle" class="axis">'
        "style: mean of fluency and confidence (never scored)</text>"
        f'<text transform="translate(14 {(_y(0) + _y(1)) / 2:.1f}) rotate(-90)" '
        'text-anchor="middle" class="axis">substance score</text>'
    )
    # One mark per subject per spot (a 2.5 % cell): a thousand answers on one spot are one
    # mark, sized by their count, never a thousand circles; counts are labelled where the
    # label has room, largest first, so no two labels overlap.
    spots: dict[tuple[str, int, int], list[CaseResult]] = defaultdict(list)
    for r in results:
        spots[(r.subject, round(style_of(r) * 40), round(r.score * 40))].append(r)
    labels: list[tuple[int, float, float]] = []
    for (subject, _, _), stack in spots.items():
        colour, shape = look[subject]
        sx = sum(style_of(r) for r in stack) / len(stack)
        sy = sum(r.score for r in stack) / len(stack)
        x, y = _x(sx), _y(sy)
        flagged = sum("confidently_wrong" in r.flags for r in stack)
        if len(stack) == 1:
            (r,) = stack
            title = (
                f"{r.case}[{r.subject}]: score {r.score:.2f}, fluency {r.fluency:.2f}, "
                f"confidence {r.confidence:.2f}" + (f", {', '.join(r.flags)}" if r.flags else "")
            )
        else:
            title = f"{subject}: {len(stack)} answers, score {sy:.2f}, style {sx:.2f}" + (
                f", {flagged} confidently_wrong" if flagged else ""
            )
            labels.append((len(stack), x, y))
        size = min(1 + math.log10(len(stack)) * 0.6, 3.0)
        if flagged:
            parts.append(
                f'<circle class="flagged" cx="{x:.1f}" cy="{y:.1f}" r="{4 + 5 * size:.1f}" '
                'fill="none" stroke="#C00" stroke-width="2"/>'
            )
        parts.append(_marker(shape, x, y, colour, title, size))
    parts += [_interval_bar(row, look[row.subject][0], level) for row in rows]
    placed: list[tuple[float, float, float, float]] = []
    for count, x, y in sorted(labels, key=lambda label: -label[0]):
        if count < 3:
            continue
        text = f"\u00d7{count}"
        box = (x - 10 - 7 * len(text), y - 19, x - 10, y - 6)
        if any(b[0] < box[2] and box[0] < b[2] and b[1] < box[3] and box[1] < b[3] for b in placed):
            continue
        placed.append(box)
        parts.append(
            f'<text class="stack" x="{x - 10:.1f}" y="{y - 8:.1f}" text-anchor="end">{text}</text>'
        )
    parts.append("</svg>")
    legend = "".join(
        f'<li><svg width="14" height="14" viewBox="0 0 14 14" aria-hidden="true">'
        f"{_marker(look[s][1], 7, 7, look[s][0], s)}</svg> {e(s)}</li>"
        for s in subjects
    )
    legend += (
        '<li><svg width="20" height="20" viewBox="0 0 20 20" aria-hidden="true">'
        '<circle cx="10" cy="10" r="8" fill="none" stroke="#C00" stroke-width="2"/></svg> '
        f"flagged confidently_wrong (confidence &ge; {thresholds.confident:g}, score &lt; {low:g})</li>"
    )
    if rows:
        legend += (
            '<li><svg width="14" height="20" viewBox="0 0 14 20" aria-hidden="true">'
            '<g stroke="#333" stroke-width="2"><line x1="7" y1="2" x2="7" y2="18"/>'
            '<line x1="2" y1="10" x2="12" y2="10" stroke-width="3"/></g></svg> '
            f"a subject's correctness with its {level:g} interval</li>"
        )
    return f'<figure class="plot">{"".join(parts)}<ul class="legend">{legend}</ul></figure>'


def trend(report: SessionReport, subjects: Sequence[str]) -> str:
    """Each subject's correctness over the last runs of ``--rubric-history`` (this one
    last): one line per subject, each run's interval a vertical bar; inline SVG, no script."""
    runs = report.trend
    if len(runs) < 2:
        return ""
    colour = {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(subjects)}
    named = list(dict.fromkeys([*subjects, *(s[0] for run in runs for s in run.subjects)]))
    step = (_W - _LEFT - _RIGHT) / (len(runs) - 1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H}" width="{_W}" '
        f'height="{_H}" role="img" aria-labelledby="trend-title">',
        f'<title id="trend-title">Correctness of each subject over the last {len(runs)} runs'
        "</title>",
        f'<rect x="{_LEFT}" y="{_TOP}" width="{_W - _LEFT - _RIGHT}" height="{_H - _TOP - _BOTTOM}" '
        'fill="#fff" stroke="#888"/>',
    ]
    for tick in (0, 0.25, 0.5, 0.75, 1):
        parts.append(
            f'<text x="{_x(0) - 7:.1f}" y="{_y(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>'
        )
    for i, name in enumerate(named):
        hue = colour.get(name, PALETTE[i % len(PALETTE)])
        points = [
            (_LEFT + k * step, value, low, high, run)
            for k, run in enumerate(runs)
            for subject, value, low, high in run.subjects
            if subject == name
        ]
        if not points:
            continue
        line = " ".join(f"{x:.1f},{_y(value):.1f}" for x, value, *_ in points)
        parts.append(
            f'<g class="trend" stroke="{hue}" fill="{hue}"><title>{e(name)}</title>'
            f'<polyline points="{line}" fill="none" stroke-width="2"/>'
        )
        for x, value, low, high, run in points:
            when = f"{run.started_at} {(run.git_commit or '')[:12]}".strip()
            ci = (low, high) if low is not None and high is not None else None
            tip = f"{name}: {interval_text(value, ci)}"
            if low is not None and high is not None:
                parts.append(
                    f'<line x1="{x:.1f}" y1="{_y(low):.1f}" x2="{x:.1f}" y2="{_y(high):.1f}" '
                    'stroke-width="1.5" stroke-opacity="0.6"/>'
                )
            parts.append(
                f'<circle cx="{x:.1f}" cy="{_y(value):.1f}" r="3.5">'
                f"<title>{e(f'{tip} ({when})')}</title></circle>"
            )
        parts.append("</g>")
    parts.append("</svg>")
    legend = " ".join(
        f'<span style="color:{colour.get(name, PALETTE[i % len(PALETTE)])}">&#9632;</span> '
        f"{e(name)}"
        for i, name in enumerate(named)
    )
    return (
        f'<h2 id="trend">Correctness over the last {len(runs)} runs</h2>'
        f"<p>From the history; this run is the last point. {legend}</p>" + "".join(parts)
    )
