"""Every option of the plugin, resolved from flags and ini once, into one frozen value."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .._defaults import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_CHECK_TIMEOUT,
    DEFAULT_MIN_SCORE,
    SHOW_RESPONSE,
    RetryPolicy,
)
from .._grade import style
from .._llm.cost import CostSettings, parse_price, parse_prices
from .option import DEFAULT_PATTERNS
from .options import BY_KEY, given
from .outputs import OUTPUTS

__all__ = ["Settings"]


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
    votes: int = 1  # --rubric-judge-samples: judge samples (votes) per criterion
    require_judge: bool = False
    models: tuple[str, ...] = ()  # --rubric-model, each [NAME=]provider:model
    otel: bool = False  # --rubric-otel: read each target call's spans (_otel)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    cache_mode: str = "use"  # the judge's (--rubric-cache)
    response_cache_mode: str = "off"  # the application's (--rubric-response-cache)
    cache_dir: Path = Path(".rubric_cache")
    recordings_dir: Path | None = None  # --rubric-recordings, else ini rubric_recordings
    recordings_prune: bool = False
    style_field: str | None = None  # ini rubric_style_field
    cost: CostSettings = field(default_factory=CostSettings)  # prices, --rubric-max-cost
    min_score: float = DEFAULT_MIN_SCORE
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    check_timeout: float = DEFAULT_CHECK_TIMEOUT  # ini rubric_check_timeout
    thresholds: style.StyleThresholds = field(default_factory=style.StyleThresholds)
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
        """Every option as this run has it (see ``options.given``)."""
        here = config.invocation_params.dir

        def path(key: str, base: Path = here) -> Path | None:
            value = given(config, key)
            return base / str(value).strip() if value else None

        flag_dirs = config.getoption("rubric_dirs")
        responses = given(config, "responses")
        history_flag = config.getoption("rubric_history")
        return cls(
            dirs=tuple(here / p for p in flag_dirs)
            if flag_dirs
            else tuple(Path(p) for p in config.getini("rubric_dirs")),
            dirs_from_flag=bool(flag_dirs),
            summary=given(config, "summary"),
            show_response=given(config, "show_response"),
            patterns=tuple(given(config, "file_patterns")) or DEFAULT_PATTERNS,
            responses_dir=(here / responses).resolve() if responses else None,
            targets=_repeatable(config, "target"),
            output_paths={o.name: path(o.name) for o in OUTPUTS},
            baseline_path=path("baseline"),
            # The flag is relative to where pytest runs, the ini key to the rootdir.
            history_path=path("history") if history_flag else path("history", config.rootpath),
            max_drop=given(config, "max_drop"),
            fail_under=given(config, "fail_under"),
            judges=_judges(config),
            judge_source=_judge_source(config),
            judge_url=given(config, "judge_url"),
            grader=given(config, "grader"),
            concurrency=given(config, "concurrency"),
            votes=given(config, "judge_samples"),
            require_judge=given(config, "require_judge"),
            models=_repeatable(config, "model"),
            otel=_otel(config),
            cache_mode=given(config, "cache"),
            response_cache_mode=given(config, "response_cache"),
            cache_dir=config.rootpath / given(config, "cache_dir"),
            # The flag is relative to where pytest runs, the ini key to the rootdir.
            recordings_dir=path("recordings")
            if config.getoption("rubric_recordings")
            else path("recordings", config.rootpath),
            recordings_prune=given(config, "recordings_prune"),
            style_field=given(config, "style_field"),
            cost=_cost(config),
            retry=RetryPolicy(
                timeout=given(config, "judge_timeout"),
                attempts=given(config, "judge_attempts"),
                backoff=given(config, "judge_backoff"),
                budget=given(config, "judge_retry_budget"),
            ),
            min_score=given(config, "min_score"),
            call_timeout=given(config, "call_timeout"),
            check_timeout=given(config, "check_timeout"),
            repeat=given(config, "repeat"),
            pass_when=given(config, "pass_when"),
            confidence=given(config, "confidence"),
            gate_confidence=given(config, "gate_confidence"),
            judge_evidence=given(config, "judge_evidence"),
            judge_batch=given(config, "judge_batch"),
            judge_batch_timeout=given(config, "judge_batch_timeout"),
            judge_probe=given(config, "judge_probe"),
            max_style_flips=given(config, "judge_max_style_flips"),
            probe_kinds=_probe_kinds(config),
            max_flips=_max_flips(config),
            min_kappa=given(config, "judge_min_kappa"),
            thresholds=style.StyleThresholds(
                confident=given(config, "confident_threshold"),
                hedged=given(config, "hedged_threshold"),
                low_score=given(config, "low_score"),
                high_score=given(config, "high_score"),
            ),
        )


def _cost(config: pytest.Config) -> CostSettings:
    """Ini ``rubric_judge_prices``, ``--rubric-judge-price`` and ``--rubric-max-cost``."""
    try:
        prices = parse_prices(given(config, "judge_prices"))
    except ValueError as exc:
        raise pytest.UsageError(f"ini option rubric_judge_prices: {exc}") from None
    price = given(config, "judge_price")
    max_cost = given(config, "max_cost")
    return CostSettings(
        prices=prices,
        price=parse_price(price) if price else None,  # checked by the option's type
        max_cost=float(max_cost) if max_cost is not None else None,
        max_cost_shown=max_cost.strip() if max_cost is not None else "",
    )


def _otel(config: pytest.Config) -> bool:
    """``--rubric-otel`` or ini ``rubric_otel``; it needs the SDK, an optional extra (looked
    for, not imported: the spans are read only once a target is called)."""
    if not given(config, "otel"):
        return False
    import importlib.util

    try:
        found = importlib.util.find_spec("opentelemetry.sdk.trace") is not None
    except ModuleNotFoundError:  # not even the opentelemetry package
        found = False
    if not found:
        raise pytest.UsageError(
            "--rubric-otel (ini rubric_otel) reads the application's OpenTelemetry spans "
            "through opentelemetry-sdk, which is not installed: pip install "
            "pytest-rubric[otel]"
        )
    return True


def _probe_kinds(config: pytest.Config) -> tuple[str, ...]:
    """``--rubric-judge-probe-kinds``, else the ini's, else tone; position needs the one-shot
    grader (the order of the criteria is a seat only when one call grades them all)."""
    kinds: tuple[str, ...] = given(config, "judge_probe_kinds")
    if "position" in kinds and given(config, "grader") != "one-shot":
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
    for kind, limit in given(config, "judge_max_flips") or ():
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


def _repeatable(config: pytest.Config, key: str) -> tuple[str, ...]:
    """A repeatable ``[NAME=]VALUE`` flag's values; the same value or name twice is a usage
    error (nothing given is ever dropped in silence)."""
    from .._defaults import named

    flag = BY_KEY[key].flag_text
    values = tuple(v.strip() for v in given(config, key) or ())
    seen_values: set[str] = set()
    seen_names: dict[str, str] = {}
    for text in values:
        name, value = named(text)
        default = value.rpartition(":")[2]
        if value in seen_values:
            raise pytest.UsageError(f"{flag} {value} is given twice; give each subject once")
        if (name or default) in seen_names:
            raise pytest.UsageError(
                f"{flag}: {seen_names[name or default]} and {text} are both subject "
                f"{name or default!r}; name one of them, {flag} OTHER={value}"
            )
        seen_values.add(value)
        seen_names[name or default] = text
    return values


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
