"""The one table of the plugin's options: every ``--rubric-*`` flag and ``rubric_*`` ini key
is declared here, once, as the field of :class:`Settings` it sets.

A field's :class:`Option` (or, for a value several options make, its options)
says the flag, the ini key, the help, the default and the reader of a value.
:func:`add_options` registers them with pytest (``pytest_addoption``), the one part of the
plugin's options every pytest run loads; ``_config.options`` reads a run's settings from
them once it has rubric work; ``docs/hooks.py`` writes the options page from :data:`OPTIONS`.
Adding an option is adding a field here.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .._defaults import (
    CACHE_MODES,
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_CHECK_TIMEOUT,
    DEFAULT_MIN_SCORE,
    EVIDENCE_MODES,
    GRADERS,
    PROVIDERS,
    RESPONSE_CACHE_MODES,
    SHOW_RESPONSE,
    RetryPolicy,
)
from .outputs import OUTPUTS

if TYPE_CHECKING:
    from .._grade.style import StyleThresholds
    from .._llm.cost import CostSettings

DEFAULT_PATTERNS = ("*.rubric.yaml", "*.rubric.yml", "*.rubric.json")
_RETRY = RetryPolicy()


@dataclass(frozen=True, slots=True)
class Option:
    """One option: a flag, an ini key, or both under one name (``rubric_<key>``)."""

    key: str  # the flag is --rubric-<key, with dashes>, the ini key and dest rubric_<key>
    help: str
    flag: bool = True
    ini: bool = False
    default: Any = None  # what a run uses when neither is set (shown in the docs)
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    # A flag's and an ini line's reader, by name (see reader): a run that sets no option
    # never imports the readers.
    parse: str | None = None
    action: str | None = None  # "append", "store_true"
    ini_type: str = "string"  # pytest's addini type: string, bool, paths, linelist
    ini_help: str | None = None  # the ini key's own help, when it differs
    flag_name: str | None = None  # when the flag is not --rubric-<key>

    @property
    def dest(self) -> str:
        return f"rubric_{self.key}"

    @property
    def flag_text(self) -> str:
        return self.flag_name or "--rubric-" + self.key.replace("_", "-")

    @property
    def flag_default(self) -> Any:
        """None where an ini key can fill it in: a flag that is given always wins."""
        return None if self.ini or self.action == "append" else self.default


_NO_DEFAULT: Any = object()


def option(key: str, help: str, *, field_default: Any = _NO_DEFAULT, **kwargs: Any) -> Any:
    """A field of :class:`Settings` set by one :class:`Option` (``key``, ``help`` and
    ``kwargs``); its default is the option's (a tuple for a list, or for a repeatable flag
    that has none), unless ``field_default`` is given."""
    given = Option(key, help, **kwargs)
    if field_default is _NO_DEFAULT and isinstance(given.default, list):
        field_default = tuple(given.default)
    elif field_default is _NO_DEFAULT and given.action == "append" and given.default is None:
        field_default = ()
    return setting(given, default=field_default)


def ini_option(key: str, help: str, **kwargs: Any) -> Option:
    """An ini key alone (no flag)."""
    return Option(key, help, flag=False, ini=True, **kwargs)


def ini_key(key: str, help: str, **kwargs: Any) -> Any:
    """A field set by an ini key alone."""
    return option(key, help, flag=False, ini=True, **kwargs)


def switch(key: str, help: str) -> Any:
    """A field set by a flag that takes no value (off unless given)."""
    return option(key, help, action="store_true", default=False)


def setting(*options: Option, default: Any = _NO_DEFAULT, factory: str | None = None) -> Any:
    """A field of :class:`Settings` set by ``options`` (several: its reader in
    ``_config.options`` makes one value of them); its default is its first option's,
    unless given, or a new ``factory`` (``"module:Class"``, imported when a default is made:
    the style axis and the prices are not the start-up's to load)."""
    if factory is not None:
        return field(default_factory=lambda: reader(factory)(), metadata={"options": options})
    if default is _NO_DEFAULT:
        default = options[0].default
    if isinstance(default, list | dict):
        return field(default_factory=lambda: type(default)(default), metadata={"options": options})
    return field(default=default, metadata={"options": options})


# No __eq__ or __repr__: nothing compares or prints a run's settings, and a dataclass
# compiles each method from source at import, here on every pytest run's start-up.
@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Settings:
    """Every option of the plugin, resolved from flags and ini once (``_config.options``)."""

    # --- where rubrics and answers come from ------------------------------------------------
    dirs: tuple[Path, ...] = option(
        "dirs",
        "collect rubric files under DIR (repeatable); without test paths, only these run.",
        ini=True,
        action="append",
        metavar="DIR",
        flag_name="--rubric-dir",
        ini_type="paths",
        ini_help="directories to collect rubric files from, as testpaths",
        default=[],
    )
    dirs_from_flag: bool = False  # --rubric-dir (only these run) rather than ini rubric_dirs
    patterns: tuple[str, ...] = ini_key(
        "file_patterns",
        "glob patterns of rubric file names, separated by spaces or lines (as python_files)",
        ini_type="args",
        default=list(DEFAULT_PATTERNS),
    )
    responses_dir: Path | None = option(
        "responses",
        'grade the responses in DIR/<subject>.jsonl, one {"id", "response"} per line.',
        metavar="DIR",
    )
    targets: tuple[str, ...] = option(
        "target",
        "call this function for each case's response (the application under test; "
        "subject NAME, default the function's name). Repeatable: one subject each.",
        action="append",
        metavar="[NAME=]MODULE:FUNCTION",
    )
    models: tuple[str, ...] = option(
        "model",
        "ask this model each case's question (subject NAME, default the model's name). "
        "Repeatable: one subject each.",
        action="append",
        metavar="[NAME=]PROVIDER:MODEL",
    )
    otel: bool = option(
        "otel",
        "read each target call's OpenTelemetry spans (GenAI conventions, OpenInference) into "
        "its trace: tool calls, model calls, retrieved passages, tokens; also ini rubric_otel. "
        "Needs pytest-rubric[otel].",
        ini=True,
        action="store_true",
        ini_type="bool",
        default=False,
        ini_help="read each target call's OpenTelemetry spans into its trace (false)",
    )
    response_cache_mode: str = option(
        "response_cache",
        "answers of targets and --rubric-model: off (default: called on every run), use (record "
        "and replay), replay (call nothing; a miss is an ERROR); also ini rubric_response_cache.",
        ini=True,
        choices=RESPONSE_CACHE_MODES,
        parse="response_cache_mode",
        default="off",
        ini_help="answers of targets and models: off (default, called every run), use, replay",
    )
    repeat: int = option(
        "repeat",
        "answers per (case, subject) item where the file sets no `repeat` (default 1): "
        "a target or --rubric-model is asked N times; also ini rubric_repeat.",
        ini=True,
        metavar="N",
        parse="whole",
        default=1,
        ini_help="answers per item where the file sets no repeat (1)",
    )
    pass_when: str | float = option(
        "pass_when",
        "how an item's samples pass where the file sets no `pass_when`: mean (default), "
        "all, any, or a pass rate X in (0, 1].",
        metavar="RULE",
        parse="pytest_rubric._defaults:parse_pass_when",
        default="mean",
    )
    min_score: float = ini_key(
        "min_score",
        "pass mark of cases that set none (default 0.8)",
        parse="fraction",
        default=DEFAULT_MIN_SCORE,
    )
    call_timeout: float = ini_key(
        "call_timeout",
        "seconds a `callable` criterion or a `target` may run before it is ERROR, unless it "
        "sets `timeout:` (default 60)",
        parse="seconds",
        default=DEFAULT_CALL_TIMEOUT,
    )
    check_timeout: float = ini_key(
        "check_timeout",
        "seconds a check whose cost can grow faster than the answer (a JSON validation, "
        "evidence matching) may run before its criterion is ERROR (default 5)",
        parse="seconds",
        default=DEFAULT_CHECK_TIMEOUT,
    )
    # --- outputs and gates -----------------------------------------------------------------------
    # by OUTPUTS name: --rubric-json, --rubric-html, --rubric-markdown, --rubric-csv
    output_paths: Mapping[str, Path | None] = setting(
        *(Option(output.name, output.run_help, metavar="PATH") for output in OUTPUTS), default={}
    )
    baseline_path: Path | None = option(
        "baseline",
        "an earlier --rubric-json: fail when a case that passed there fails now, or a "
        "subject's correctness drops by more than --rubric-max-drop.",
        metavar="PATH",
    )
    history_path: Path | None = option(
        "history",
        "append this run (its run metadata, leaderboard and items) to the SQLite history "
        "at PATH; also ini rubric_history. Read it with python -m pytest_rubric history PATH.",
        ini=True,
        metavar="PATH",
        ini_help="a SQLite file each run is appended to (see --rubric-history)",
    )
    max_drop: float = option(
        "max_drop",
        "the correctness drop per subject that --rubric-baseline tolerates (default 0).",
        metavar="X",
        parse="fraction",
        default=0.0,
    )
    fail_under: float | None = option(
        "fail_under",
        "fail the session when a subject's mean correctness is below X (0 to 1).",
        metavar="X",
        parse="fraction",
    )
    confidence: float = option(
        "confidence",
        "confidence level of every interval, tier and paired test (default 0.95); also "
        "ini rubric_confidence.",
        ini=True,
        metavar="LEVEL",
        parse="level",
        default=0.95,
        ini_help="confidence level of intervals and tiers (0.95)",
    )
    gate_confidence: float | None = option(
        "gate_confidence",
        "with --rubric-baseline: fail only on changes beyond noise (an unchanged subject "
        "fails at most 1 - C of the time): a subject's drop when the paired C-interval of "
        "(now - baseline) lies wholly below -max_drop, a case's flip when its passing samples "
        "fell significantly (one-sided Fisher); a flip within noise is a note.",
        metavar="C",
        parse="level",
    )
    # --- the terminal and the style axis ---------------------------------------------------------
    summary: str = ini_key(
        "summary",
        "the rubric summary at the end of the run: auto (when rubric items ran, assert_rubric "
        "graded two or more subjects named with subject=, or a gate ran), on, off (default "
        "auto)",
        parse="summary_mode",
        default="auto",
    )
    style_field: str | None = ini_key(
        "style_field",
        "where fluency and confidence are measured in an answer that is a JSON object: the "
        "value at this JSON Pointer (e.g. /answer); by default its string values, never its "
        "raw JSON text. A rubric file's `style_field:` wins.",
        parse="pytest_rubric.criteria.json_text:check_pointer",
    )
    show_response: int = ini_key(
        "show_response",
        "characters of the response a failing rubric item shows beside its criteria (terminal, "
        "JUnit system-out, Markdown); 0 hides it (default 1000)",
        parse="show_response",
        default=SHOW_RESPONSE,
    )
    thresholds: StyleThresholds = setting(
        *(
            ini_option(key, help, parse="fraction", default=default)
            for key, help, default in (
                (
                    "confident_threshold",
                    "confidence at or above which an answer counts as confident (0.7)",
                    0.7,
                ),
                (
                    "hedged_threshold",
                    "confidence at or below which an answer counts as hedged (0.35)",
                    0.35,
                ),
                (
                    "low_score",
                    "score below which a confident answer is flagged confidently_wrong (0.5)",
                    0.5,
                ),
                (
                    "high_score",
                    "score at or above which a hedged answer is flagged hedged_but_right (0.8)",
                    0.8,
                ),
            )
        ),
        factory="pytest_rubric._grade.style:StyleThresholds",
    )
    # --- process-wide speed switches (see _session/heap.py) ---------------------------------------
    gc_freeze: bool = ini_key(
        "gc_freeze",
        "after collecting rubric items, keep the garbage collector's full collections off the "
        "objects alive then, until the session ends (default true)",
        ini_type="bool",
        default=True,
    )
    gc_pause: bool = ini_key(
        "gc_pause",
        "pause the garbage collector while a rubric file loads and its items are built "
        "(default true)",
        ini_type="bool",
        default=True,
    )
    fast_exit: bool = ini_key(
        "fast_exit",
        "after a session with rubric items, skip the interpreter's repeated shutdown "
        "collections of its large heap (default true)",
        ini_type="bool",
        default=True,
    )
    # --- the judge -----------------------------------------------------------------------------
    judges: tuple[str, ...] = option(
        "judge",
        "grade judge criteria with this LLM: "
        + " or ".join(f"{name}:MODEL" for name in PROVIDERS)
        + " (openai: any OpenAI-compatible server); also ini rubric_judge and env RUBRIC_JUDGE. "
        "Keys come from "
        + " / ".join(p.key_variable for p in PROVIDERS.values())
        + " only. Repeated (ini: one per line): a panel, majority verdict and mean score.",
        ini=True,
        action="append",
        metavar="PROVIDER:MODEL",
        ini_help="the LLM judge, PROVIDER:MODEL (overridden by --rubric-judge)",
    )
    # Where the judges were set, as a user would look for it: "--rubric-judge", "ini
    # rubric_judge in pytest.ini" or "env RUBRIC_JUDGE".
    judge_source: str = "--rubric-judge"
    judge_url: str | None = option(
        "judge_url",
        f"the judge's base URL (default: {' / '.join(p.url_variable for p in PROVIDERS.values())},"
        " else the provider's), e.g. http://127.0.0.1:8080/v1 for a local server; also ini "
        "rubric_judge_url. Keys still come from the environment only.",
        ini=True,
        metavar="URL",
        ini_help="the judge's base URL (overridden by --rubric-judge-url)",
    )
    grader: str = option(
        "grader",
        "one judge call per criterion (default), one call for all, or one 0-100 score.",
        choices=tuple(GRADERS),
        default="per-criterion",
    )
    concurrency: int = option(
        "concurrency",
        "judge calls in flight at most, across the session (default 8); xdist workers "
        "and a panel's judges share it, N // (workers x judges) each, and at least one "
        "(the header says so when N is below that).",
        metavar="N",
        parse="positive_int",
        default=8,
    )
    votes: int = option(
        "judge_samples",
        "judge every criterion K times (default 1): majority verdict, mean score; "
        "criteria whose votes disagree are flagged unstable.",
        ini=True,
        metavar="K",
        parse="whole",
        default=1,
        ini_help="judge votes per criterion (1)",
    )
    retry: RetryPolicy = setting(
        Option(
            "judge_timeout",
            "give up on one judge call after SECONDS (default 60), however slowly the "
            "server sends its reply; it is retried.",
            metavar="SECONDS",
            parse="positive_seconds",
            default=_RETRY.timeout,
        ),
        ini_option(
            "judge_attempts",
            "attempts per judge call, the first included (4)",
            parse="attempts",
            default=_RETRY.attempts,
        ),
        ini_option(
            "judge_backoff",
            "first retry delay in seconds, doubled each time (0.5)",
            parse="positive",
            default=_RETRY.backoff,
        ),
        ini_option(
            "judge_retry_budget",
            "retries per session (per xdist worker) across all judge calls (200)",
            parse="attempts",
            default=_RETRY.budget,
        ),
        default=_RETRY,
    )
    judge_batch: bool = switch(
        "judge_batch",
        "send the session's judge calls through the provider's batch API ("
        + ", ".join(name for name, p in PROVIDERS.items() if p.batch)
        + "): cheaper, slower; a result missing or errored is asked live once.",
    )
    judge_batch_timeout: float = option(
        "judge_batch_timeout",
        "with --rubric-judge-batch, wait SECONDS at most for a batch (default 3600); "
        "then it is cancelled and each of its requests is asked once live, its criteria "
        "ERROR only if that fails too.",
        metavar="SECONDS",
        parse="positive_seconds",
        default=3600.0,
    )
    cache_mode: str = option(
        "cache",
        "judge cache: use (default), refresh (call and overwrite), off, or replay "
        "(no network call; a miss is an ERROR). Judge calls only: see --rubric-response-cache.",
        choices=CACHE_MODES,
        default="use",
    )
    recordings_dir: Path | None = option(
        "recordings",
        "keep judge replies as text in DIR, one JSON file per rubric file and case "
        "(DIR/<rubric file>/<case id>.json), to commit: --rubric-cache use records, "
        "replay reads them (then the local cache); also ini rubric_recordings (relative to "
        "the rootdir).",
        ini=True,
        metavar="DIR",
        ini_help="the judge's recordings folder (overridden by --rubric-recordings)",
    )
    recordings_prune: bool = switch(
        "recordings_prune",
        "delete the recorded entries no request of the run used, after a run that collected "
        "every rubric file (never after a selection: -k, -m, node ids or files, --lf, --deselect, "
        "or subjects given with --rubric-target or --rubric-model).",
    )
    cache_dir: Path = ini_key(
        "cache_dir",
        "where the judge cache lives (default .rubric_cache under the rootdir)",
        default=".rubric_cache",
        field_default=Path(".rubric_cache"),
    )
    require_judge: bool = switch(
        "require_judge",
        "make judged criteria ERROR instead of SKIPPED when no judge is configured.",
    )
    cost: CostSettings = setting(  # prices, --rubric-max-cost
        Option(
            "judge_price",
            "the judge's price in dollars per million input and output tokens, e.g. "
            "0.15,0.60: the usage line shows the cost and what the cache saved (overrides ini "
            "rubric_judge_prices for the judge; a panel is priced in the ini).",
            metavar="IN,OUT",
            parse="price",
        ),
        ini_option(
            "judge_prices",
            "one line per model: MODEL IN OUT [BATCH_IN BATCH_OUT], dollars per million input and "
            "output tokens (batch: --rubric-judge-batch, default half)",
            ini_type="linelist",
            default=[],
        ),
        Option(
            "max_cost",
            "start no judge or model call once this many dollars are spent (xdist workers "
            "each get an equal share); the criteria left are ERROR. Needs prices.",
            metavar="USD",
            parse="budget",
        ),
        factory="pytest_rubric._llm.cost:CostSettings",
    )
    # --- auditing the judge ----------------------------------------------------------------------
    judge_evidence: str = option(
        "judge_evidence",
        "the quotes a judge's MET must give: check (default: flag a MET none of whose quotes is in "
        "the response), require (such a MET on a positive criterion counts as UNMET), off.",
        choices=EVIDENCE_MODES,
        default="check",
    )
    min_kappa: float | None = option(
        "judge_min_kappa",
        "every judged criterion of a suite whose calibration kappa (Cohen's, the judge "
        "against the file's `calibration:` labels) is below K is ERROR.",
        ini=True,
        metavar="K",
        parse="kappa",
        ini_help="judged criteria of a suite whose calibration kappa is below this are ERROR",
    )
    judge_probe: int = option(
        "judge_probe",
        "style probe: judge up to N judged substance criteria again on the answer "
        "rewritten confident and hedged, and report the verdicts that changed with tone alone.",
        ini=True,
        metavar="N",
        parse="whole",
        default=0,
        ini_help="criteria the style probe judges again (0)",
    )
    probe_kinds: tuple[str, ...] = option(
        "judge_probe_kinds",
        "what the probed criteria are judged again on, comma-separated: tone (rewritten "
        "confident and hedged), length (neutral padding appended), position (one-shot grader: "
        "the criteria in reverse order). Default: tone.",
        ini=True,
        metavar="KINDS",
        parse="probe_kinds",
        default=("tone",),
        ini_help="what the probed criteria are judged again on: tone, length, position, "
        "comma-separated (tone)",
    )
    max_style_flips: float | None = option(
        "judge_max_style_flips",
        "fail the session when the style probe's share of flipped verdicts is above X "
        "(every probe kind's: see --rubric-judge-probe-kinds).",
        metavar="X",
        parse="fraction",
    )
    max_flips: Mapping[str, float] = option(
        "judge_max_flips",
        "fail the session when probe KIND's share of flipped verdicts is above X "
        "(repeatable; overrides --rubric-judge-max-style-flips for that kind).",
        action="append",
        metavar="KIND=X",
        parse="kind_limit",
        field_default={},
    )

    @property
    def flip_limits(self) -> dict[str, float]:
        """Each probed kind's limit on its share of flips: ``--rubric-judge-max-flips
        KIND=X``, else ``--rubric-judge-max-style-flips`` (kinds with neither: no gate)."""
        limits = {kind: self.max_flips.get(kind, self.max_style_flips) for kind in self.probe_kinds}
        return {kind: limit for kind, limit in limits.items() if limit is not None}


OPTIONS: tuple[Option, ...] = tuple(
    o for f in fields(Settings) for o in f.metadata.get("options", ())
)
"""Every option, in the order of the options page and ``pytest --help``."""
BY_KEY = {option.key: option for option in OPTIONS}


def add_options(parser: pytest.Parser) -> None:
    """Every ``--rubric-*`` flag (one group) and ini key of :data:`OPTIONS`."""
    group = parser.getgroup("rubric", "rubric-based assertions on LLM output (pytest-rubric)")
    for option in OPTIONS:
        if option.flag:
            kwargs: dict[str, Any] = {"dest": option.dest, "help": option.help}
            if option.action is not None:
                kwargs["action"] = option.action
            if option.action != "store_true":
                reader = argparse_type(option.parse) if option.parse is not None else None
                kwargs |= {"default": option.flag_default, "metavar": option.metavar}
                kwargs |= {"choices": option.choices, "type": reader}
            elif option.ini:
                kwargs["default"] = None  # not given: the ini key decides
            group.addoption(option.flag_text, **kwargs)
        if option.ini:
            parser.addini(
                option.dest,
                option.ini_help or option.help,
                type=option.ini_type,  # type: ignore[arg-type]
                default=_ini_default(option),
            )


def _ini_default(option: Option) -> Any:
    return option.default if option.ini_type != "string" else ""


# Ini keys that ask for no rubric work by themselves: where rubric files are (the plugin adds
# ``rubric_dirs`` to a run that names no path, and starts the session then) and the heap's
# tricks, which apply only once rubric files are collected.
_ONLY_WITH_RUBRIC_FILES = frozenset({"dirs", "file_patterns", "gc_freeze", "gc_pause", "fast_exit"})


def configured(config: pytest.Config) -> bool:
    """Whether the run gives any ``--rubric-*`` flag a value other than its default, or sets
    an ini key other than those of ``_ONLY_WITH_RUBRIC_FILES``: then ``plugin`` starts the
    session at configure, as every run did before it started on first need."""
    for option in OPTIONS:
        if option.flag:
            value = config.getoption(option.dest)
            if value not in (None, [], False) and value != option.flag_default:
                return True
        own_only = option.key in _ONLY_WITH_RUBRIC_FILES
        if option.ini and not own_only and config.getini(option.dest) != _ini_default(option):
            return True
    return False


def file_patterns(config: pytest.Config) -> tuple[str, ...]:
    """Ini ``rubric_file_patterns``, else the default (``plugin`` reads it before the settings
    too)."""
    return tuple(config.getini("rubric_file_patterns")) or DEFAULT_PATTERNS


def reader(name: str) -> Any:
    """What ``name`` names, imported now: a function of ``_config.parsers`` (the readers of
    option values), or ``"module:name"``."""
    module, _, attr = name.rpartition(":")
    return getattr(importlib.import_module(module or "pytest_rubric._config.parsers"), attr)


def argparse_type(parse: str) -> Callable[[str], Any]:
    """The reader ``parse`` (see :func:`reader`) as an argparse type."""

    def read(text: str) -> Any:
        try:
            return reader(parse)(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    read.__name__ = parse.rpartition(":")[2]  # argparse names a type by it
    return read


# argparse types of the same readers, for the commands of python -m pytest_rubric
fraction = argparse_type("fraction")
positive_int = argparse_type("positive_int")
