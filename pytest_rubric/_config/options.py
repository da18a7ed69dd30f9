"""Reads a run's :class:`~.settings.Settings` from its flags and ini (:func:`read_settings`),
once the run has rubric work: the options ``_config.settings`` declares and registers.

A field set by one option is read by :func:`given` (the flag, else the ini
key, else the default); the few that need more (a path relative to where
pytest runs, a repeatable flag checked for doubles, a value several options
make) have their reader in :data:`_READERS`, by field name.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from .._defaults import RetryPolicy, named, subject_clash
from .._grade.style import StyleThresholds
from .._llm.cost import CostSettings
from . import parsers
from .outputs import OUTPUTS
from .settings import BY_KEY, Settings, file_patterns, reader


def given(config: pytest.Config, key: str) -> Any:
    """Option ``key`` as this run has it: the flag when given, else the ini key when set
    (read by the same reader; a wrong value is a usage error naming the key), else the
    default."""
    option = BY_KEY[key]
    if option.flag and (value := config.getoption(option.dest)) not in (None, []):
        return value
    if option.ini:
        raw = config.getini(option.dest)
        if option.ini_type != "string":
            return raw
        if text := str(raw or "").strip():
            if option.parse is None:
                return text
            try:
                return reader(option.parse)(text)
            except ValueError as exc:
                raise pytest.UsageError(f"ini option {option.dest} = {exc}") from None
    return option.default


def read_settings(config: pytest.Config) -> Settings:
    """Every option as this run has it."""
    values = {}
    for f in fields(Settings):
        read = _READERS.get(f.name)
        values[f.name] = read(config) if read else given(config, f.metadata["options"][0].key)
    return Settings(**values)


def _path(config: pytest.Config, key: str) -> Path | None:
    """A path option, None when not set: a flag's relative to where pytest runs, an ini
    key's to the rootdir."""
    value = given(config, key)
    here = config.invocation_params.dir if config.getoption(BY_KEY[key].dest) else config.rootpath
    return here / str(value).strip() if value else None


def _responses_dir(config: pytest.Config) -> Path | None:
    responses = given(config, "responses")
    return (config.invocation_params.dir / responses).resolve() if responses else None


def _cost(config: pytest.Config) -> CostSettings:
    """Ini ``rubric_judge_prices``, ``--rubric-judge-price`` and ``--rubric-max-cost``."""
    try:
        prices = parsers.prices(given(config, "judge_prices"))
    except ValueError as exc:
        raise pytest.UsageError(f"ini option rubric_judge_prices: {exc}") from None
    price = given(config, "judge_price")
    if price is not None and len(judges := _judges(config)[0]) > 1:
        # One price for the panel would override, in silence, the ini's for a judge with one.
        raise pytest.UsageError(
            f"--rubric-judge-price prices a single judge, and this run has a panel of "
            f"{len(judges)} ({', '.join(judges)}): price each judge with a line `MODEL IN OUT` "
            "in ini rubric_judge_prices instead"
        )
    max_cost = given(config, "max_cost")
    return CostSettings(
        prices=prices,
        price=price,
        max_cost=float(max_cost) if max_cost is not None else None,
        max_cost_shown=max_cost.strip() if max_cost is not None else "",
    )


def _thresholds(config: pytest.Config) -> StyleThresholds:
    return StyleThresholds(
        confident=given(config, "confident_threshold"),
        hedged=given(config, "hedged_threshold"),
        low_score=given(config, "low_score"),
        high_score=given(config, "high_score"),
    )


def _otel(config: pytest.Config) -> bool:
    """``--rubric-otel`` or ini ``rubric_otel``; it needs the SDK, an optional extra (looked
    for, not imported: the spans are read only once a target is called)."""
    if not given(config, "otel"):
        return False
    try:
        found = importlib.util.find_spec("opentelemetry.sdk.trace") is not None
    except ModuleNotFoundError:  # not even the opentelemetry package
        found = False
    if not found:
        raise pytest.UsageError(
            "--rubric-otel (ini rubric_otel) reads the application's OpenTelemetry spans "
            "through opentelemetry-sdk, which is not installed: pip install pytest-rubric[otel]"
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


def _recordings_prune(config: pytest.Config) -> bool:
    """``--rubric-recordings-prune``, which deletes from a recordings folder: one given."""
    if (prune := bool(given(config, "recordings_prune"))) and _path(config, "recordings") is None:
        raise pytest.UsageError(
            "--rubric-recordings-prune deletes the unused entries of a recordings folder, and "
            "this run has none; add --rubric-recordings DIR (or ini rubric_recordings)"
        )
    return prune


def _repeatable(key: str) -> Callable[[pytest.Config], tuple[str, ...]]:
    """A repeatable ``[NAME=]VALUE`` flag's values; the same value or name twice is a usage
    error (nothing given is ever dropped in silence)."""

    def read(config: pytest.Config) -> tuple[str, ...]:
        values = tuple(v.strip() for v in given(config, key) or ())
        clash = subject_clash(BY_KEY[key].flag_text, values, model=key == "model")
        if clash is not None:
            raise pytest.UsageError(clash)
        if unnamed := next((v for v in values if v.startswith("=")), None):
            raise pytest.UsageError(
                f"{BY_KEY[key].flag_text} {unnamed}: the subject's name before `=` is empty; "
                f"write NAME{unnamed}, or leave `=` out (it is then named after the function "
                "or the model)"
            )
        for value in values if key == "target" else ():
            module, colon, function = named(value)[1].rpartition(":")
            if not (colon and module.strip() and function.strip()):
                raise pytest.UsageError(
                    f"--rubric-target {value}: write MODULE:FUNCTION, the module and the "
                    "function the answers come from, e.g. --rubric-target app.bot:answer"
                )
        return values

    return read


def _judges(config: pytest.Config) -> tuple[tuple[str, ...], str]:
    """``--rubric-judge`` (repeatable), else the ini's lines, else ``RUBRIC_JUDGE``; and where
    they were found, named as the user set them."""
    if listed := config.getoption("rubric_judge"):
        source = "--rubric-judge"
    elif (text := str(config.getini("rubric_judge") or "")).strip():
        name = config.inipath.name if config.inipath is not None else "the ini file"
        listed, source = text.splitlines(), f"ini rubric_judge in {name}"
        overrides = config.known_args_namespace.override_ini or ()
        if any(o.partition("=")[0].strip() == "rubric_judge" for o in overrides):
            source = "-o rubric_judge"  # pytest's -o: the ini option, set for this run
    else:
        listed, source = [], "env RUBRIC_JUDGE"
    judges = [j.strip() for j in listed if j.strip()]
    if not judges and os.environ.get("RUBRIC_JUDGE"):
        judges = [os.environ["RUBRIC_JUDGE"]]
    twice = next((j for i, j in enumerate(judges) if j in judges[:i]), None)
    if twice is not None:  # a panel of a, a, b would give a two votes: never in silence
        raise pytest.UsageError(
            f"--rubric-judge {twice} is given twice (a panel names each judge once); to "
            "sample one judge several times, use --rubric-judge-samples K"
        )
    return tuple(judges), source


# The fields a plain given() does not read, by name.
_READERS: dict[str, Callable[[pytest.Config], Any]] = {
    # A flag's relative to where pytest runs; the ini's are absolute (pytest's "paths").
    "dirs": lambda config: tuple(config.invocation_params.dir / p for p in given(config, "dirs")),
    "dirs_from_flag": lambda config: bool(config.getoption("rubric_dirs")),
    "patterns": file_patterns,
    "responses_dir": _responses_dir,
    "targets": _repeatable("target"),
    "models": _repeatable("model"),
    "otel": _otel,
    "output_paths": lambda config: {o.name: _path(config, o.name) for o in OUTPUTS},
    "baseline_path": lambda config: _path(config, "baseline"),
    "history_path": lambda config: _path(config, "history"),
    "thresholds": _thresholds,
    "judges": lambda config: _judges(config)[0],
    "judge_source": lambda config: _judges(config)[1],
    "retry": lambda config: RetryPolicy(
        timeout=given(config, "judge_timeout"),
        attempts=given(config, "judge_attempts"),
        backoff=given(config, "judge_backoff"),
        budget=given(config, "judge_retry_budget"),
    ),
    "recordings_dir": lambda config: _path(config, "recordings"),
    "recordings_prune": _recordings_prune,
    "cache_dir": lambda config: config.rootpath / given(config, "cache_dir"),
    "cost": _cost,
    "probe_kinds": _probe_kinds,
    "max_flips": _max_flips,
}
