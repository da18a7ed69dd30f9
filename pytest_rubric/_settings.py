"""Every option of the plugin, resolved from flags and ini once, into one frozen value."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from . import _style
from ._base import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_CHECK_TIMEOUT,
    DEFAULT_MIN_SCORE,
    MAX_CALL_TIMEOUT,
    SHOW_RESPONSE,
    RetryPolicy,
)
from ._outputs import OUTPUTS
from .judge.cost import CostSettings, parse_price, parse_prices

__all__ = ["DEFAULT_PATTERNS", "Settings"]

DEFAULT_PATTERNS = ("*.rubric.yaml", "*.rubric.yml", "*.rubric.json")


@dataclass(frozen=True, slots=True)
class Settings:
    """Every option of the plugin, resolved from flags and ini once."""

    dirs: tuple[Path, ...] = ()
    summary: str = "auto"  # ini rubric_summary: auto, on, off
    show_response: int = SHOW_RESPONSE  # ini rubric_show_response: characters, 0 hides it
    dirs_from_flag: bool = False  # --rubric-dir (only these run) rather than ini rubric_dirs
    patterns: tuple[str, ...] = DEFAULT_PATTERNS
    responses_dir: Path | None = None
    targets: tuple[str, ...] = ()  # --rubric-target, each [NAME=]module:function
    output_paths: Mapping[str, Path | None] = field(default_factory=dict)  # by OUTPUTS name
    baseline_path: Path | None = None
    history_path: Path | None = None  # --rubric-history, else ini rubric_history
    max_drop: float = 0.0
    fail_under: float | None = None
    judges: tuple[str, ...] = ()  # --rubric-judge, repeated for a panel (ini: one per line)
    # Where the judges were set, as a user would look for it: "--rubric-judge", "ini
    # rubric_judge in pytest.ini" or "env RUBRIC_JUDGE".
    judge_source: str = "--rubric-judge"
    judge_url: str | None = None
    grader: str = "per-criterion"
    concurrency: int = 8
    samples: int = 1
    require_judge: bool = False
    models: tuple[str, ...] = ()  # --rubric-model, each [NAME=]provider:model
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    cache_mode: str = "use"  # the judge's (--rubric-cache)
    response_cache_mode: str = "off"  # the application's (--rubric-response-cache)
    cache_dir: Path = Path(".rubric_cache")
    cost: CostSettings = field(default_factory=CostSettings)  # prices, --rubric-max-cost
    min_score: float = DEFAULT_MIN_SCORE
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    check_timeout: float = DEFAULT_CHECK_TIMEOUT  # ini rubric_check_timeout
    thresholds: _style.StyleThresholds = field(default_factory=_style.StyleThresholds)
    repeat: int = 1
    pass_when: str | float = "mean"
    confidence: float = 0.95
    gate_confidence: float | None = None
    judge_evidence: str = "check"  # --rubric-judge-evidence
    judge_batch: bool = False  # --rubric-judge-batch
    judge_batch_timeout: float = 3600.0  # --rubric-judge-batch-timeout
    judge_probe: int = 0  # --rubric-judge-probe N
    max_style_flips: float | None = None  # --rubric-judge-max-style-flips X
    probe_kinds: tuple[str, ...] = ("tone",)  # --rubric-judge-probe-kinds
    max_flips: Mapping[str, float] = field(default_factory=dict)  # --rubric-judge-max-flips K=X
    min_kappa: float | None = None  # --rubric-judge-min-kappa K

    @property
    def flip_limits(self) -> dict[str, float]:
        """Each probed kind's limit on its share of flips: ``--rubric-judge-max-flips
        KIND=X``, else ``--rubric-judge-max-style-flips`` (kinds with neither: no gate)."""
        limits = {}
        for kind in self.probe_kinds:
            limit = self.max_flips.get(kind, self.max_style_flips)
            if limit is not None:
                limits[kind] = limit
        return limits

    @property
    def judge(self) -> str | None:
        """The first judge, or None."""
        return self.judges[0] if self.judges else None

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        def number(name: str, default: float, *, fraction: bool = True) -> float:
            """An ini number: a fraction in [0, 1], or else any positive number."""
            raw = config.getini(name)
            if raw in (None, ""):
                return default
            try:
                value = float(raw)
            except ValueError:
                value = float("nan")
            if fraction and not 0 <= value <= 1:
                raise pytest.UsageError(f"ini option {name} = {raw!r} must be a number from 0 to 1")
            if not fraction and not value > 0:
                raise pytest.UsageError(f"ini option {name} = {raw!r} must be a positive number")
            return value

        defaults = _style.StyleThresholds()
        here = config.invocation_params.dir
        dirs = [here / p for p in config.getoption("rubric_dirs") or []]
        if not dirs:
            dirs = [Path(p) for p in config.getini("rubric_dirs")]
        patterns = tuple(config.getini("rubric_file_patterns")) or DEFAULT_PATTERNS

        def path(option: str) -> Path | None:
            value = config.getoption(option)
            return here / value if value else None

        responses = config.getoption("rubric_responses")
        return cls(
            dirs=tuple(dirs),
            dirs_from_flag=bool(config.getoption("rubric_dirs")),
            summary=_summary_mode(config.getini("rubric_summary")),
            show_response=_show_response(config.getini("rubric_show_response")),
            patterns=patterns,
            responses_dir=(here / responses).resolve() if responses else None,
            targets=_repeatable(config, "rubric_target", "--rubric-target"),
            output_paths={o.name: path(f"rubric_{o.name}") for o in OUTPUTS},
            baseline_path=path("rubric_baseline"),
            history_path=path("rubric_history")
            or (
                config.rootpath / str(config.getini("rubric_history")).strip()
                if str(config.getini("rubric_history") or "").strip()
                else None
            ),
            max_drop=config.getoption("rubric_max_drop"),
            fail_under=config.getoption("rubric_fail_under"),
            judges=_judges(config),
            judge_source=_judge_source(config),
            judge_url=config.getoption("rubric_judge_url"),
            grader=config.getoption("rubric_grader"),
            concurrency=config.getoption("rubric_concurrency"),
            samples=config.getoption("rubric_judge_samples")
            or _whole(number("rubric_judge_samples", 1, fraction=False), "rubric_judge_samples"),
            require_judge=config.getoption("rubric_require_judge"),
            models=_repeatable(config, "rubric_model", "--rubric-model"),
            cache_mode=config.getoption("rubric_cache"),
            response_cache_mode=_response_cache_mode(config),
            cache_dir=config.rootpath / (config.getini("rubric_cache_dir") or ".rubric_cache"),
            cost=_cost(config),
            retry=RetryPolicy(
                timeout=config.getoption("rubric_judge_timeout"),
                attempts=int(
                    number("rubric_judge_attempts", RetryPolicy().attempts, fraction=False)
                ),
                backoff=number("rubric_judge_backoff", RetryPolicy().backoff, fraction=False),
                budget=int(
                    number("rubric_judge_retry_budget", RetryPolicy().budget, fraction=False)
                ),
            ),
            min_score=number("rubric_min_score", DEFAULT_MIN_SCORE),
            call_timeout=_at_most_a_day(
                "rubric_call_timeout",
                number("rubric_call_timeout", DEFAULT_CALL_TIMEOUT, fraction=False),
            ),
            check_timeout=_at_most_a_day(
                "rubric_check_timeout",
                number("rubric_check_timeout", DEFAULT_CHECK_TIMEOUT, fraction=False),
            ),
            repeat=config.getoption("rubric_repeat")
            or _whole(number("rubric_repeat", 1, fraction=False), "rubric_repeat"),
            pass_when=config.getoption("rubric_pass_when") or "mean",
            confidence=config.getoption("rubric_confidence")
            or _level(number("rubric_confidence", 0.95)),
            gate_confidence=config.getoption("rubric_gate_confidence"),
            judge_evidence=config.getoption("rubric_judge_evidence"),
            judge_batch=config.getoption("rubric_judge_batch"),
            judge_batch_timeout=config.getoption("rubric_judge_batch_timeout"),
            judge_probe=config.getoption("rubric_judge_probe")
            or (
                _whole(number("rubric_judge_probe", 1, fraction=False), "rubric_judge_probe")
                if config.getini("rubric_judge_probe")
                else 0
            ),
            max_style_flips=config.getoption("rubric_judge_max_style_flips"),
            probe_kinds=_probe_kinds(config),
            max_flips=_max_flips(config),
            min_kappa=_min_kappa(config),
            thresholds=_style.StyleThresholds(
                confident=number("rubric_confident_threshold", defaults.confident),
                hedged=number("rubric_hedged_threshold", defaults.hedged),
                low_score=number("rubric_low_score", defaults.low_score),
                high_score=number("rubric_high_score", defaults.high_score),
            ),
        )


def _cost(config: pytest.Config) -> CostSettings:
    """Ini ``rubric_judge_prices``, ``--rubric-judge-price`` and ``--rubric-max-cost``."""
    try:
        prices = parse_prices(config.getini("rubric_judge_prices"))
    except ValueError as exc:
        raise pytest.UsageError(f"ini option rubric_judge_prices: {exc}") from None
    price = config.getoption("rubric_judge_price")
    max_cost = config.getoption("rubric_max_cost")
    return CostSettings(
        prices=prices,
        price=parse_price(price) if price else None,  # checked by the option's type
        max_cost=float(max_cost) if max_cost is not None else None,
        max_cost_shown=max_cost.strip() if max_cost is not None else "",
    )


SUMMARY_MODES = ("auto", "on", "off")


def _summary_mode(raw: str) -> str:
    value = (raw or "auto").strip().lower()
    if value not in SUMMARY_MODES:
        raise pytest.UsageError(
            f"ini option rubric_summary = {raw!r} must be one of {', '.join(SUMMARY_MODES)}"
        )
    return value


def _show_response(raw: str) -> int:
    text = str(raw or "").strip()
    if not text:
        return SHOW_RESPONSE
    if not text.isdigit():
        raise pytest.UsageError(
            f"ini option rubric_show_response = {raw!r} must be a whole number of characters "
            f"(0 hides the response; default {SHOW_RESPONSE})"
        )
    return int(text)


def _at_most_a_day(name: str, value: float) -> float:
    if not value <= MAX_CALL_TIMEOUT:
        raise pytest.UsageError(
            f"ini option {name} = {value:g} must be at most {MAX_CALL_TIMEOUT:g} (a day)"
        )
    return value


def _level(value: float) -> float:
    if not 0 < value < 1:
        raise pytest.UsageError(
            f"ini option rubric_confidence = {value:g} must be between 0 and 1, such as 0.95"
        )
    return value


def _whole(value: float, name: str) -> int:
    if value != int(value):
        raise pytest.UsageError(f"ini option {name} = {value:g} must be a whole number")
    return int(value)


def _probe_kinds(config: pytest.Config) -> tuple[str, ...]:
    """``--rubric-judge-probe-kinds``, else the ini's, else tone; position needs the one-shot
    grader (the order of the criteria is a seat only when one call grades them all)."""
    import argparse

    from ._options import probe_kinds

    kinds: tuple[str, ...] | None = config.getoption("rubric_judge_probe_kinds")
    raw = str(config.getini("rubric_judge_probe_kinds") or "").strip()
    if kinds is None and raw:
        try:
            kinds = probe_kinds(raw)
        except argparse.ArgumentTypeError as exc:
            raise pytest.UsageError(f"ini option rubric_judge_probe_kinds = {exc}") from None
    kinds = kinds or ("tone",)
    if "position" in kinds and config.getoption("rubric_grader") != "one-shot":
        raise pytest.UsageError(
            "--rubric-judge-probe-kinds position judges a case again with its criteria in "
            "reverse order, which only the one-shot grader sees; add --rubric-grader one-shot "
            "or leave position out"
        )
    return kinds


def _max_flips(config: pytest.Config) -> dict[str, float]:
    """``--rubric-judge-max-flips KIND=X``, each kind at most once and each one probed."""
    limits: dict[str, float] = {}
    kinds = _probe_kinds(config)
    for kind, limit in config.getoption("rubric_judge_max_flips") or ():
        if kind not in kinds:
            raise pytest.UsageError(
                f"--rubric-judge-max-flips {kind}={limit:g}: the {kind} probe does not run "
                f"(--rubric-judge-probe-kinds is {','.join(kinds)}); add {kind} to it"
            )
        if kind in limits:
            raise pytest.UsageError(
                f"--rubric-judge-max-flips {kind}= is given twice; give each kind once"
            )
        limits[kind] = limit
    return limits


def _min_kappa(config: pytest.Config) -> float | None:
    """``--rubric-judge-min-kappa``, else the ini's, else None."""
    value: float | None = config.getoption("rubric_judge_min_kappa")
    raw = config.getini("rubric_judge_min_kappa")
    if value is None and raw not in (None, ""):
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not -1 <= value <= 1:
            raise pytest.UsageError(
                f"ini option rubric_judge_min_kappa = {raw!r} must be a number from -1 to 1"
            )
    return value


def _repeatable(config: pytest.Config, dest: str, flag: str) -> tuple[str, ...]:
    """A repeatable ``[NAME=]VALUE`` flag's values; the same value or name twice is a usage
    error (nothing given is ever dropped in silence)."""
    from ._base import named

    values = tuple(v.strip() for v in config.getoption(dest) or ())
    seen_values: set[str] = set()
    seen_names: dict[str, str] = {}
    for given in values:
        name, value = named(given)
        default = value.rpartition(":")[2]
        if value in seen_values:
            raise pytest.UsageError(f"{flag} {value} is given twice; give each subject once")
        if (name or default) in seen_names:
            raise pytest.UsageError(
                f"{flag}: {seen_names[name or default]} and {given} are both subject "
                f"{name or default!r}; name one of them, {flag} OTHER={value}"
            )
        seen_values.add(value)
        seen_names[name or default] = given
    return values


def _response_cache_mode(config: pytest.Config) -> str:
    """``--rubric-response-cache``, else ini ``rubric_response_cache``, else off."""
    from ._base import RESPONSE_CACHE_MODES

    given = config.getoption("rubric_response_cache")
    if given:
        return str(given)
    raw = str(config.getini("rubric_response_cache") or "off").strip().lower()
    if raw not in RESPONSE_CACHE_MODES:
        raise pytest.UsageError(
            f"ini option rubric_response_cache = {raw!r} must be one of "
            f"{', '.join(RESPONSE_CACHE_MODES)}"
        )
    return raw


def _judge_source(config: pytest.Config) -> str:
    """Where :func:`_judges` found the judges, named as the user set them."""
    if config.getoption("rubric_judge"):
        return "--rubric-judge"
    if str(config.getini("rubric_judge") or "").strip():
        name = config.inipath.name if config.inipath is not None else "the ini file"
        return f"ini rubric_judge in {name}"
    return "env RUBRIC_JUDGE"


def _judges(config: pytest.Config) -> tuple[str, ...]:
    """``--rubric-judge`` (repeatable), else the ini's lines, else ``RUBRIC_JUDGE``."""
    given = (
        config.getoption("rubric_judge") or str(config.getini("rubric_judge") or "").splitlines()
    )
    judges = [j.strip() for j in given if j and j.strip()]
    if not judges and os.environ.get("RUBRIC_JUDGE"):
        judges = [os.environ["RUBRIC_JUDGE"]]
    twice = next((j for i, j in enumerate(judges) if j in judges[:i]), None)
    if twice is not None:  # a panel of a, a, b would give a two votes: never in silence
        raise pytest.UsageError(
            f"--rubric-judge {twice} is given twice (a panel names each judge once); to "
            "sample one judge several times, use --rubric-judge-samples K"
        )
    return tuple(judges)
