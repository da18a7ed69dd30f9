"""Readers of option values: one per kind of value, for a flag and an ini line alike, named
by the options of ``_config.settings`` and imported when a value is read.

Each takes the text a user wrote and returns the value, or raises
``ValueError`` whose message completes "``--rubric-x VALUE``" or "ini option
``rubric_x = VALUE``" (see :func:`~pytest_rubric._config.options.given`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from .._defaults import (
    MAX_CALL_TIMEOUT,
    PROBE_KINDS,
    RESPONSE_CACHE_MODES,
    SHOW_RESPONSE,
    SUMMARY_MODES,
)
from .._llm.cost import Price


def _number(
    text: str, within: Callable[[float], bool], wrong: str, *, says: str = "is not"
) -> float:
    """``text`` read as a float that ``within`` accepts (a word reads as nan, which no range
    accepts), or the error "'text' is not WRONG" (``says``: the verb of that error)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not within(value):
        raise ValueError(f"{text!r} {says} {wrong}")
    return value


def fraction(text: str) -> float:
    """A number from 0 to 1 (the gates, the pass mark, the style thresholds)."""
    return _number(text, lambda v: 0 <= v <= 1, "a number from 0 to 1")


def positive_seconds(text: str) -> float:
    return _number(text, lambda v: math.isfinite(v) and v > 0, "a positive number of seconds")


def budget(text: str) -> str:
    """Dollars, kept as written (the summary shows them so)."""
    _number(text, lambda v: math.isfinite(v) and v > 0, "a positive number of dollars")
    return text


def _dollars(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{what} {text!r} is not a number of dollars") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} {text!r} must be a finite number, 0 or more")
    return value


def price(text: str) -> Price:
    """``IN,OUT`` (``--rubric-judge-price``), dollars per million tokens."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2:
        raise ValueError(
            f"{text!r} is not IN,OUT: write the input and output prices in dollars per million "
            "tokens, e.g. 0.15,0.60"
        )
    return Price(_dollars(parts[0], "input price"), _dollars(parts[1], "output price"))


def prices(lines: Iterable[str]) -> dict[str, Price]:
    """Ini ``rubric_judge_prices``: one ``MODEL IN OUT`` per line, blank lines ignored; a line
    may add ``BATCH_IN BATCH_OUT``, the batch API's prices (default: half the live ones)."""
    read: dict[str, Price] = {}
    for line in lines:
        if not (words := line.split()):
            continue
        if len(words) not in (3, 5):
            raise ValueError(
                f"the line {line.strip()!r} is not MODEL IN OUT: write a model and its input and "
                "output prices in dollars per million tokens, e.g. gpt-4o-mini 0.15 0.60 (then, "
                "optionally, its batch prices: gpt-4o-mini 0.15 0.60 0.075 0.30)"
            )
        model, low, high, *batch = words
        if model in read:
            raise ValueError(f"model {model!r} is priced twice")
        read[model] = Price(
            _dollars(low, f"{model}'s input price"),
            _dollars(high, f"{model}'s output price"),
            *(
                _dollars(value, f"{model}'s batch {what} price")
                for value, what in zip(batch, ("input", "output"), strict=False)
            ),
        )
    return read


def level(text: str) -> float:
    return _number(
        text,
        lambda v: 0 < v < 1,
        "a confidence level; write a number between 0 and 1, such as 0.95",
    )


def kappa(text: str) -> float:
    return _number(text, lambda v: -1 <= v <= 1, "a kappa; write a number from -1 to 1")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{text!r} is not a positive whole number")
    return value


def whole(text: str) -> int:
    """A positive whole number written as one (``2.0`` too, as ini files have it)."""
    value = _number(text, lambda v: math.isfinite(v) and v > 0, "a positive whole number")
    if value != int(value):
        raise ValueError(f"{text.strip()} must be a whole number")
    return int(value)


def show_response(text: str) -> int:
    """Characters of the response a failing item shows; 0 hides it."""
    if not text.strip().isdigit():
        raise ValueError(
            f"{text!r} must be a whole number of characters (0 hides the response; default "
            f"{SHOW_RESPONSE})"
        )
    return int(text)


def probe_kinds(text: str) -> tuple[str, ...]:
    """Probe kinds, comma-separated, each once."""
    kinds = tuple(k.strip().lower() for k in text.split(",") if k.strip())
    if not kinds or any(k not in PROBE_KINDS for k in kinds):
        raise ValueError(
            f"{text!r}: the probe kinds are {', '.join(PROBE_KINDS)} (comma-separated)"
        )
    return tuple(dict.fromkeys(kinds))


def kind_limit(text: str) -> tuple[str, float]:
    """``KIND=X``, a probe kind and its largest share of flips."""
    kind, sep, value = text.partition("=")
    kind = kind.strip().lower()
    if not sep or kind not in PROBE_KINDS:
        raise ValueError(f"{text!r} is not KIND=X with KIND one of {', '.join(PROBE_KINDS)}")
    return kind, fraction(value.strip())


def one_of(choices: tuple[str, ...]) -> Callable[[str], str]:
    def choice(text: str) -> str:
        if (value := text.strip().lower()) not in choices:
            raise ValueError(f"{text!r} must be one of {', '.join(choices)}")
        return value

    return choice


response_cache_mode = one_of(RESPONSE_CACHE_MODES)
summary_mode = one_of(SUMMARY_MODES)


def seconds(text: str) -> float:
    """Seconds a call or a check may run: positive, at most a day (a longer wait overflows a thread's)."""
    value = positive(text)
    if not value <= MAX_CALL_TIMEOUT:
        raise ValueError(f"{text.strip()} must be at most {MAX_CALL_TIMEOUT:g} (a day)")
    return value


def positive(text: str) -> float:
    """A positive number, as the ini keys that take one say it."""
    return _number(text, lambda v: math.isfinite(v) and v > 0, "a positive number", says="must be")


def attempts(text: str) -> int:
    """A count read as a positive number, its fraction dropped (as the ini keys always did)."""
    return int(positive(text))
