"""Repeated answers: how an item's samples make one verdict (``repeat``, ``pass_when``).

Each sample is graded on its own and passes or fails alone (its score
against ``min_score``, no ``required`` criterion the wrong way, no ERROR).
The item then passes by its ``pass_when`` rule:

* ``mean`` (the default): the mean sample score reaches ``min_score`` and no
  sample had a ``required`` criterion go the wrong way;
* ``all``: every sample passes (pass^k);
* ``any``: some sample passes (pass@k);
* a number X in (0, 1]: the share of samples that pass is at least X.

A sample with an ERROR on a substance criterion makes the item an ERROR, never a pass,
whatever the rule (a style criterion's ERROR never decides an item).
A run grades with :func:`item_passes`; ``merge`` recomputes with it from the
samples a document holds.
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
