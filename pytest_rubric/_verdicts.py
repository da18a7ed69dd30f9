"""Reading the judge's reply: a tolerant parser, then strict validation.

The parser finds the JSON object in a plain-text reply (bare, in a fenced
block, or with prose around it). Validation is strict: a missing field, an
unknown criterion id, a duplicate, a score out of range or a verdict other
than MET/UNMET raises :class:`ReplyError`, whose message is fed back to the
judge for one more try; after that the criterion is ERROR, never a verdict.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Graded", "ReplyError", "extract_json", "read_holistic", "read_one", "read_one_shot"]

_FENCED = re.compile(r"```(?:json)?\s*\n?(.*?)```", re.DOTALL | re.IGNORECASE)


class ReplyError(ValueError):
    """The judge's reply does not fit the protocol; the message says how."""


@dataclass(frozen=True, slots=True)
class Graded:
    """One judged criterion: credit in [0, 1] and the judge's reason."""

    met: bool
    credit: float
    reason: str


def extract_json(text: str) -> Any:
    """The JSON object in ``text``: the whole text, a fenced block, or the first balanced ``{...}``."""
    stripped = text.strip()
    candidates = [stripped]
    candidates += [m.group(1).strip() for m in _FENCED.finditer(text)]
    start = stripped.find("{")
    while start >= 0:
        end = _balanced_end(stripped, start)
        if end is None:
            break
        candidates.append(stripped[start : end + 1])
        start = stripped.find("{", end + 1)
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise ReplyError(
        f"the reply contains no JSON object (it starts {stripped[:60]!r}); reply with only the "
        "JSON object"
    )


def _balanced_end(text: str, start: int) -> int | None:
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
    return None


def _reason(obj: dict[str, Any], where: str) -> str:
    reason = obj.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise ReplyError(f'{where}missing "reason" (a non-empty string)')
    reason = reason.strip()
    if reason.startswith("<") and reason.endswith(">"):
        # A small model copies the template's "<one or two sentences>".
        raise ReplyError(
            f"{where}the reason {reason!r} is the template's placeholder; give the reason"
        )
    return reason


def _grade(obj: dict[str, Any], criterion: Any, where: str = "") -> Graded:
    reason = _reason(obj, where)
    if criterion.kind == "score":
        low, high = criterion.min_score, criterion.max_score
        score = obj.get("score")
        if (
            isinstance(score, bool)
            or not isinstance(score, int | float)
            or not math.isfinite(score)
        ):
            raise ReplyError(f'{where}missing "score" (a number from {low:g} to {high:g})')
        if not low <= score <= high:
            raise ReplyError(f"{where}score {score:g} is out of range {low:g}-{high:g}")
        credit = (score - low) / (high - low)
        return Graded(
            met=credit >= 0.5, credit=credit, reason=f"score {score:g}/{high:g}: {reason}"
        )
    verdict = obj.get("verdict")
    if not isinstance(verdict, str) or verdict.strip().upper() not in ("MET", "UNMET"):
        raise ReplyError(f'{where}"verdict" must be "MET" or "UNMET", got {verdict!r}')
    met = verdict.strip().upper() == "MET"
    return Graded(met=met, credit=1.0 if met else 0.0, reason=reason)


def read_one(text: str, criterion: Any) -> Graded:
    """A per-criterion reply: ``{"reason", "verdict"}`` (score kind: ``{"reason", "score"}``)."""
    return _grade(extract_json(text), criterion)


def read_one_shot(text: str, criteria: Sequence[Any]) -> dict[str, Graded | ReplyError]:
    """A one-shot reply, keyed by criterion id.

    The reply as a whole must be ``{"criteria": [...]}`` with known ids; a
    criterion that is missing or malformed gets its own :class:`ReplyError`
    while the well-formed ones keep their grades.
    """
    obj = extract_json(text)
    entries = obj.get("criteria")
    if not isinstance(entries, list):
        raise ReplyError('missing "criteria" (a list with one object per requirement id)')
    by_id = {c.id: c for c in criteria}
    found: dict[str, Graded | ReplyError] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise ReplyError('every entry of "criteria" needs an "id"')
        cid = entry["id"]
        if cid not in by_id:
            raise ReplyError(f"unknown criterion id {cid!r}; the ids are {', '.join(by_id)}")
        if cid in found:
            raise ReplyError(f"criterion id {cid!r} appears twice")
        try:
            found[cid] = _grade(entry, by_id[cid], f"criterion {cid!r}: ")
        except ReplyError as exc:
            found[cid] = exc
    for cid in by_id:
        if cid not in found:
            found[cid] = ReplyError(f"criterion {cid!r} is missing from the reply")
    return found


def read_holistic(text: str) -> tuple[float, str]:
    """A holistic reply: ``{"reason", "score"}`` with a score from 0 to 100."""
    obj = extract_json(text)
    reason = _reason(obj, "")
    score = obj.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise ReplyError('missing "score" (a number from 0 to 100)')
    if not 0 <= score <= 100:
        raise ReplyError(f"score {score:g} is out of range 0-100")
    return float(score), reason
