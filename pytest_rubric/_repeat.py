"""``repeat:`` and ``pass_when:`` as written: how many samples an item gets, and the rule
they pass by (``_grade.scoring.item_passes``): ``mean`` (the default; the mean sample score
reaches ``min_score``, no ``required`` criterion went the wrong way), ``all`` (pass^k),
``any`` (pass@k), or a number X in (0, 1] (the share of samples that pass alone). An ERROR
on a substance criterion makes the item an ERROR whatever the rule.
"""

from __future__ import annotations

from typing import Any

MAX_REPEAT = 1000

PassWhen = str | float
PASS_RULES = ("mean", "all", "any")
_EPSILON = 1e-9
_HINT = "write mean, all, any, or a number X in (0, 1] (the share of samples that must pass)"


def parse_pass_when(value: Any) -> PassWhen:
    """``value`` as a pass rule; ValueError, with what to write instead, for anything else."""
    if isinstance(value, str):
        if value in PASS_RULES:
            return value
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a pass rule; {_HINT}") from None
        value = number
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{value!r} is not a pass rule; {_HINT}")
    if not 0 < value <= 1:
        shown = repr(value) if len(repr(value)) <= 20 else repr(value)[:19] + "…"
        raise ValueError(f"{shown} is outside (0, 1]; {_HINT}")
    return float(value)


def parse_repeat(value: Any) -> int:
    """``value`` as a number of responses per item; ValueError, saying what to write, if not."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_REPEAT:
        shown = repr(value) if len(repr(value)) <= 20 else repr(value)[:19] + "…"
        raise ValueError(
            f"{shown} is not a number of responses per item; write a whole number from 1 to "
            f"{MAX_REPEAT}, e.g. `repeat: 5`"
        )
    return value
