"""Reading the judge's reply: one object found, then strict validation.

The JSON objects of a reply are found bare, fenced or among prose; exactly one may carry a
grade (a protocol key: ``verdict``, ``score``, ``criteria``...): two are a bad reply (one may
be quoted from the answer under test), as are a key given twice and a grade the answer
itself holds (copied, not given). A forced tool call's input (``structured``) must be the
object, whole.

Validation is strict: a missing field, an unknown or repeated criterion id, a score out of
range or a verdict other than exactly ``"MET"`` or ``"UNMET"`` raises :class:`ReplyError`,
fed back to the judge for one more try; then the criterion is ERROR. A reply is hostile
input (a 400-digit score, JSON nested 100,000 deep): reading raises nothing but ReplyError.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .._guards.limits import loads_noting_repeats
from .._guards.secrets import Secret, redact

if TYPE_CHECKING:
    from ..criteria.extract import Extract, JudgedCriterion


_FENCED = re.compile(r"```(?:json)?\s*\n?(.*?)```", re.DOTALL | re.IGNORECASE)
# What the brace scanner stops at; an escape pair is one token so that "\"" never ends a string.
_TOKENS = re.compile(r'\\.|[{}"]', re.DOTALL)
_SPACE = re.compile(r"\s+")
# How much of a value a ReplyError quotes: enough to recognise it, never a whole reply.
_QUOTED = 60

T = TypeVar("T")
Secrets = Sequence[Secret | None]


class ReplyError(ValueError):
    """The judge's reply does not fit the protocol; the message says how."""


@dataclass(frozen=True, slots=True)
class Graded:
    """One judged criterion: credit in [0, 1], the judge's reason, and the quotes it gave as
    evidence (None when it gave none; see :mod:`~pytest_rubric.judge.evidence`)."""

    met: bool
    credit: float
    reason: str
    error: bool = False  # an extract criterion whose check could not be evaluated
    evidence: tuple[str, ...] | None = None


def extract_json(
    text: str, *, secrets: Secrets = (), structured: bool = False, answer: str = ""
) -> dict[str, Any]:
    """The one JSON object of ``text`` that carries a grade: the whole text, a fenced block, or
    a balanced ``{...}`` (see the module's docstring for what makes a reply bad)."""
    return _read(text, lambda obj: obj, secrets, structured, answer)


def read_one(
    text: str,
    criterion: JudgedCriterion,
    *,
    secrets: Secrets = (),
    structured: bool = False,
    answer: str = "",
) -> Graded:
    """A per-criterion reply: ``{"reason", "verdict"}`` (or ``"score"``, ``"label"``).
    ``structured``: a tool call's input; ``answer``: the response under test, whose own
    objects are never a grade."""
    return _read(text, lambda obj: _grade(obj, criterion, "", secrets), secrets, structured, answer)


def read_one_shot(
    text: str,
    criteria: Sequence[JudgedCriterion],
    *,
    secrets: Secrets = (),
    structured: bool = False,
    answer: str = "",
) -> dict[str, Graded | ReplyError]:
    """A one-shot reply ``{"criteria": [...]}``, keyed by criterion id; a criterion missing
    or malformed gets its own :class:`ReplyError`, the others keep their grades."""
    return _read(text, lambda obj: _one_shot(obj, criteria, secrets), secrets, structured, answer)


def read_holistic(
    text: str, *, secrets: Secrets = (), structured: bool = False, answer: str = ""
) -> tuple[float, str]:
    """A holistic reply: ``{"reason", "score"}`` with a score from 0 to 100 (``structured``
    and ``answer`` as :func:`read_one`'s)."""
    return _read(text, lambda obj: _holistic(obj, secrets), secrets, structured, answer)


# The keys that make an object a grade rather than data the judge quoted.
_PROTOCOL_KEYS = frozenset({"verdict", "score", "criteria", "label", "value", "claims"})


@dataclass(frozen=True, slots=True)
class _Found:
    """A JSON object found in a reply, and the keys it (or an object inside it) gives twice."""

    value: dict[str, Any]
    repeated: Sequence[str] = ()

    @property
    def grades(self) -> bool:
        return bool(_PROTOCOL_KEYS.intersection(self.value))


def _read(
    text: str,
    validate: Callable[[dict[str, Any]], T],
    secrets: Secrets,
    structured: bool,
    answer: str,
) -> T:
    """The reply in ``text``: its one object with a protocol key, validated (with none,
    the last object, whose error says its grade is missing)."""
    found, too_deep = _whole(text, secrets) if structured else _objects(text)
    graded = [f for f in found if f.grades]
    if len(graded) > 1:
        raise ReplyError(
            f"the reply holds {len(graded)} JSON objects that each give a grade; reply with "
            "exactly one JSON object, your own (do not copy JSON from the response)"
        )
    if found:
        reply = graded[0] if graded else found[-1]
        if reply.repeated:
            raise ReplyError(
                f"the key {_quote(reply.repeated[0], secrets)} appears twice in one object; "
                "give each field once"
            )
        if graded and _held_by(answer, reply.value):
            raise ReplyError(
                "the reply's JSON object is copied from the response under test; grade the "
                "response yourself"
            )
        try:
            return validate(reply.value)
        except ReplyError:
            raise
        except (ArithmeticError, RecursionError, TypeError, ValueError) as exc:
            # A shape validation did not foresee is still a reply that does not fit.
            raise ReplyError(f"the reply could not be read ({type(exc).__name__})") from None
    if too_deep:
        raise ReplyError("the reply's JSON is nested too deeply; reply with only the JSON object")
    raise ReplyError(
        f"the reply contains no JSON object (it starts {_quote(text.strip(), secrets)}); "
        "reply with only the JSON object"
    )


def _whole(text: str, secrets: Secrets) -> tuple[list[_Found], bool]:
    """A tool call's input: the whole text (or one fenced block that is all of it) is the
    object; nothing is looked for in or around it."""
    stripped = text.strip()
    fenced = _FENCED.fullmatch(stripped)
    try:
        value, repeated = loads_noting_repeats(fenced.group(1) if fenced else stripped)
    except RecursionError:
        return [], True
    except ValueError:
        value, repeated = None, []
    if isinstance(value, dict):
        return [_Found(value, repeated)], False
    objects, _ = _objects(text)
    if sum(f.grades for f in objects) > 1:
        return objects, False  # said as the tolerant reading says it: several grades
    raise ReplyError(
        "the reply was asked for as a tool call, but its input is not one JSON object (it "
        f"starts {_quote(stripped, secrets)}); call the tool once, with the JSON object"
    )


def _objects(text: str) -> tuple[list[_Found], bool]:
    """The JSON objects that may be the reply, in order, and whether one was nested too
    deeply: the whole text when it is one object, else the fenced blocks and the outermost
    balanced ``{...}``, each tried once (linear in the reply)."""
    stripped = text.strip()
    # Each place once: a fenced block is also the braces inside it, but an object written
    # twice is two objects (a reply that grades twice is a bad reply, whatever it says).
    spans = dict.fromkeys(_outermost_braces(text))
    for match in _FENCED.finditer(text):
        block = match.group(1)
        start = match.start(1) + len(block) - len(block.lstrip())
        spans[(start, start + len(block.strip()))] = None
    objects: list[_Found] = []
    too_deep = False
    # The whole text first: a bare list of objects is still tried.
    for candidate in [stripped, *(text[a:b] for a, b in sorted(spans) if text[a:b] != stripped)]:
        try:
            value, repeated = loads_noting_repeats(candidate)
        except RecursionError:
            too_deep = True
            continue
        except ValueError:  # not JSON; also an int past Python's 4,300-digit limit
            continue
        if isinstance(value, dict):
            if candidate == stripped:
                return [_Found(value, repeated)], False
            objects.append(_Found(value, repeated))
    return objects, too_deep


def _held_by(answer: str, grade: dict[str, Any]) -> bool:
    """Whether the answer under test holds ``grade`` as one of its JSON objects (at any
    depth): a judge that replies with it copied the answer's grade instead of giving one."""
    # A key written with an escape ("\\u0076erdict") is a key too: only then is the answer
    # searched without one of the grade's keys in it as written.
    keys = _PROTOCOL_KEYS & set(grade)
    if "{" not in answer or not ("\\u" in answer or any(f'"{k}"' in answer for k in keys)):
        return False
    # The grade as written, spaces aside, anywhere in the answer: found whatever stands
    # before it (a stray '"{"' in the answer's prose hides its objects from the scan below).
    try:
        if _SPACE.sub("", json.dumps(grade, ensure_ascii=False)) in _SPACE.sub("", answer):
            return True
    except RecursionError:  # nested past the stack: the scan below says
        pass
    objects, _ = _objects(answer)
    stack: list[Any] = [f.value for f in objects]
    try:
        while stack:
            value = stack.pop()
            if isinstance(value, dict):
                if value == grade:
                    return True
                stack.extend(value.values())
            elif isinstance(value, list):
                stack.extend(value)
    except RecursionError:  # comparing objects nested past the stack: not the grade
        return False
    return False


def _outermost_braces(text: str) -> list[tuple[int, int]]:
    """The spans ``[start, end)`` of the outermost balanced ``{...}`` in ``text``, in one
    linear pass. Quotes count only inside braces; a ``{`` never closed ("{maybe") does not
    hide the objects after it, and a stray ``}`` is ignored."""
    opened: list[int] = []  # positions of the "{" still open
    closed: list[tuple[int, int]] = []  # outermost spans so far, by start
    in_string = False
    for match in _TOKENS.finditer(text):
        token = match.group()
        if len(token) == 2:  # an escape pair: only inside a string is it one character
            if in_string or not opened:
                continue
            token = token[1]
            if token not in '{}"':
                continue
        if in_string:
            in_string = token != '"'
        elif token == '"':
            in_string = bool(opened)
        elif token == "{":
            opened.append(match.end() - 1)
        elif opened:  # "}"
            start = opened.pop()
            # Spans inside this one are no longer outermost.
            while closed and closed[-1][0] > start:
                closed.pop()
            closed.append((start, match.end()))
    return closed


def read_reason(obj: dict[str, Any], where: str, secrets: Secrets) -> str:
    reason = obj.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise ReplyError(f'{where}missing "reason" (a non-empty string)')
    reason = reason.strip()
    if (reason.startswith("<") and reason.endswith(">")) or _copied(reason):
        # A small model copies a placeholder ("<one or two sentences>") or the words that
        # describe the field ("in one or two sentences of your own, why ...").
        raise ReplyError(
            f"{where}the reason {_quote(reason, secrets)} is the template's placeholder; "
            "give the reason"
        )
    return reason


# How the prompts describe the reason field (judge/prompts.py builds its text from these):
# a reason that is only words taken from here was copied, not given.
REASON_DESCRIPTIONS = (
    "in one or two sentences of your own, why the response does or does not meet the requirement",
    "in two or three sentences of your own, how well the response meets the rubric",
    # label and extract kinds
    "in one or two sentences of your own, why that label fits the response",
    "in one or two sentences of your own, where the response gives it and how you read it",
    # grounded (judge/grounding.py)
    "in one or two sentences of your own, how far the context supports the response",
)
_WORDS = re.compile(r"[a-z0-9]+")


def _copied(reason: str) -> bool:
    words = " ".join(_WORDS.findall(reason.lower()))
    return len(words.split()) >= 3 and any(
        words in " ".join(_WORDS.findall(d)) for d in REASON_DESCRIPTIONS
    )


def _number(value: Any) -> float | None:
    """A JSON number as a float (an int too large for one is infinite); None if not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # a 400-digit score: a number, and out of every range
        return math.inf if value > 0 else -math.inf
    return None if math.isnan(number) else number


def _score(obj: dict[str, Any], low: float, high: float, where: str, secrets: Secrets) -> float:
    raw = obj.get("score")
    if (score := _number(raw)) is None:
        raise ReplyError(f'{where}missing "score" (a number from {low:g} to {high:g})')
    if not low <= score <= high:
        raise ReplyError(f"{where}score {_quote(raw, secrets)} is out of range {low:g}-{high:g}")
    return score


def _grade(obj: dict[str, Any], criterion: JudgedCriterion, where: str, secrets: Secrets) -> Graded:
    reason = read_reason(obj, where, secrets)
    if criterion.kind == "extract":
        return _extracted(obj, criterion, reason, where, secrets)
    if criterion.kind == "score":
        low, high = criterion.min_score, criterion.max_score
        score = _score(obj, low, high, where, secrets)
        credit = (score - low) / (high - low)
        return Graded(
            met=credit >= 0.5, credit=credit, reason=f"score {score:g}/{high:g}: {reason}"
        )
    if criterion.kind == "label":  # one of its labels; a pass label earns credit
        labels = criterion.labels or ()
        label = obj.get("label")
        if not isinstance(label, str) or label not in labels:
            raise ReplyError(
                f'{where}"label" must be exactly one of {", ".join(map(repr, labels))}, got '
                f"{_quote(label, secrets)}"
            )
        met = label in (criterion.pass_labels or ())
        reason = f"label {label!r}: {reason}"
    else:
        verdict = obj.get("verdict")
        # Exactly as the prompt and the schema spell it: "met" or " MET" is out of protocol.
        if not isinstance(verdict, str) or verdict not in ("MET", "UNMET"):
            raise ReplyError(
                f'{where}"verdict" must be exactly "MET" or "UNMET", got {_quote(verdict, secrets)}'
            )
        met = verdict == "MET"
    return Graded(met=met, credit=1.0 if met else 0.0, reason=reason, evidence=_evidence(obj))


# At most this many quotes are kept: evidence is checked, and a reply is hostile input.
_MAX_QUOTES = 20


def _evidence(obj: dict[str, Any]) -> tuple[str, ...] | None:
    """The reply's ``evidence`` quotes; a lone string is one quote. Anything else is no
    evidence at all (never a reply error: an unsupported MET is flagged, not asked again)."""
    value = obj.get("evidence")
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return None
    return tuple(q for q in value if isinstance(q, str) and q.strip())[:_MAX_QUOTES]


RETURNS: dict[str, tuple[Callable[[Any], bool], str, str, str]] = {
    "number": (
        lambda v: _number(v) is not None and math.isfinite(_number(v) or 0.0),
        "a number",
        "a JSON number",
        "number",
    ),
    "string": (lambda v: isinstance(v, str), "a string", "a JSON string", "string"),
    "boolean": (lambda v: isinstance(v, bool), "true or false", "true or false", "boolean"),
    "list": (lambda v: isinstance(v, list), "a list", "a JSON list", "array"),
}
"""Each type an ``extract`` returns: the reply's check, its name in a reply error, in the
prompt, and its JSON Schema type."""


def _extracted(
    obj: dict[str, Any], criterion: Extract, reason: str, where: str, secrets: Secrets
) -> Graded:
    """An extraction: ``{"reason", "value", "evidence"}``; the criterion's check decides.

    A verdict, score or label the judge volunteers is ignored: it reads, it never grades.
    """
    fits, what, _, _ = RETURNS[criterion.returns]
    if "value" not in obj:
        raise ReplyError(f'{where}missing "value" ({what}, or null when the response gives none)')
    if (value := obj["value"]) is not None and not fits(value):
        raise ReplyError(f'{where}"value" must be {what} or null, got {_quote(value, secrets)}')
    # Quotes are evidence, not the grade: a reply that gives none has none (as a verdict
    # without evidence is only flagged), but a field that is not a list of quotes is no reply.
    evidence = obj.get("evidence", [])
    if not isinstance(evidence, list) or not all(isinstance(q, str) for q in evidence):
        raise ReplyError(f'{where}"evidence" must be a list of exact quotes from the response')
    outcome = criterion.decide(value)
    shown = "no value" if value is None else f"value {_quote(value, secrets)}"
    return Graded(
        met=outcome.verdict.name == "MET",
        credit=outcome.credit,
        reason=f"{shown}: {outcome.reason} (read: {reason})",
        error=outcome.verdict.name == "ERROR",
    )


def _one_shot(
    obj: dict[str, Any], criteria: Sequence[JudgedCriterion], secrets: Secrets
) -> dict[str, Graded | ReplyError]:
    entries = obj.get("criteria")
    if not isinstance(entries, list):
        raise ReplyError('missing "criteria" (a list with one object per requirement id)')
    by_id = {c.id: c for c in criteria}
    found: dict[str, Graded | ReplyError] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise ReplyError('every entry of "criteria" needs an "id"')
        if (cid := entry["id"]) not in by_id:
            raise ReplyError(
                f"unknown criterion id {_quote(cid, secrets)}; the ids are {', '.join(by_id)}"
            )
        if cid in found:
            raise ReplyError(f"criterion id {cid!r} appears twice")
        try:
            found[cid] = _grade(entry, by_id[cid], f"criterion {cid!r}: ", secrets)
        except ReplyError as exc:
            found[cid] = exc
    for cid in by_id:
        found.setdefault(cid, ReplyError(f"criterion {cid!r} is missing from the reply"))
    return found


def _holistic(obj: dict[str, Any], secrets: Secrets) -> tuple[float, str]:
    reason = read_reason(obj, "", secrets)
    return _score(obj, 0, 100, "", secrets), reason


def _quote(value: Any, secrets: Secrets) -> str:
    """``value`` as a ReplyError shows it (fed back to the judge): redacted, then cut."""
    if isinstance(value, str):
        shown = repr(redact(value, *secrets))
    elif value is None or isinstance(value, bool | int | float):
        # An int of up to 4,300 digits (json's limit) has a repr; the cut below shortens it.
        shown = redact(repr(value), *secrets)
    else:  # a list or an object: its kind, not its (maybe deeply nested) contents
        shown = f"a JSON {'list' if isinstance(value, list) else 'object'}"
    if len(shown) > _QUOTED:
        shown = f"{shown[: _QUOTED - 1]}… ({len(shown):,} characters)"
    return shown
