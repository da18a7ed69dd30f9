"""The plugin's command-line flags and ini options, registered by ``pytest_addoption``."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import pytest

from ._base import CACHE_MODES, EVIDENCE_MODES, GRADERS, PROBE_KINDS, RESPONSE_CACHE_MODES
from ._outputs import OUTPUTS
from ._repeat import parse_pass_when

__all__ = ["add_options", "fraction", "positive_int"]


def _number(text: str, within: Callable[[float], bool], wrong: str) -> float:
    """An argparse type's number: ``text`` read as a float that ``within`` accepts (a word
    reads as nan, which no range accepts), or the error "'text' is not WRONG"."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not within(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not {wrong}")
    return value


def fraction(text: str) -> float:
    """An argparse type for the gate values: a number from 0 to 1."""
    return _number(text, lambda v: 0 <= v <= 1, "a number from 0 to 1")


def _budget(text: str) -> str:
    _number(text, lambda v: math.isfinite(v) and v > 0, "a positive number of dollars")
    return text


def _positive_seconds(text: str) -> float:
    return _number(text, lambda v: math.isfinite(v) and v > 0, "a positive number of seconds")


def _level(text: str) -> float:
    return _number(
        text,
        lambda v: 0 < v < 1,
        "a confidence level; write a number between 0 and 1, such as 0.95",
    )


def _kappa(text: str) -> float:
    return _number(text, lambda v: -1 <= v <= 1, "a kappa; write a number from -1 to 1")


def add_options(parser: pytest.Parser) -> None:
    """Every ``--rubric-*`` flag (one group) and ini option of the plugin."""
    group = parser.getgroup("rubric", "rubric-based assertions on LLM output (pytest-rubric)")
    group.addoption(
        "--rubric-dir",
        action="append",
        dest="rubric_dirs",
        metavar="DIR",
        default=None,
        help="collect rubric files under DIR (repeatable); without test paths, only these run.",
    )
    group.addoption(
        "--rubric-responses",
        dest="rubric_responses",
        metavar="DIR",
        default=None,
        help='grade the responses in DIR/<subject>.jsonl, one {"id", "response"} per line.',
    )
    group.addoption(
        "--rubric-target",
        dest="rubric_target",
        action="append",
        metavar="[NAME=]MODULE:FUNCTION",
        default=None,
        help="call this function for each case's response (the application under test; "
        "subject NAME, default the function's name). Repeatable: one subject each.",
    )
    group.addoption(
        "--rubric-judge",
        dest="rubric_judge",
        action="append",
        metavar="PROVIDER:MODEL",
        default=None,
        help="grade judge criteria with this LLM: openai:MODEL (any OpenAI-compatible server) or "
        "anthropic:MODEL; also ini rubric_judge and env RUBRIC_JUDGE. Keys come from "
        "OPENAI_API_KEY / ANTHROPIC_API_KEY only. Repeated (ini: one per line): a panel, "
        "majority verdict and mean score.",
    )
    group.addoption(
        "--rubric-judge-url",
        dest="rubric_judge_url",
        metavar="URL",
        default=None,
        help="the judge's base URL (default: OPENAI_BASE_URL / ANTHROPIC_BASE_URL, else the "
        "provider's), e.g. http://127.0.0.1:8080/v1 for a local server.",
    )
    group.addoption(
        "--rubric-grader",
        dest="rubric_grader",
        choices=GRADERS,
        default="per-criterion",
        help="one judge call per criterion (default), one call for all, or one 0-100 score.",
    )
    group.addoption(
        "--rubric-concurrency",
        dest="rubric_concurrency",
        metavar="N",
        type=positive_int,
        default=8,
        help="judge calls in flight at most, across the session (default 8); xdist workers "
        "share it, N // workers each.",
    )
    group.addoption(
        "--rubric-judge-samples",
        dest="rubric_judge_samples",
        metavar="K",
        type=positive_int,
        default=None,
        help="judge every criterion K times (default 1): majority verdict, mean score; "
        "criteria whose samples disagree are flagged unstable.",
    )
    group.addoption(
        "--rubric-judge-timeout",
        dest="rubric_judge_timeout",
        metavar="SECONDS",
        type=_positive_seconds,
        default=60.0,
        help="give up on one judge call after SECONDS (default 60), however slowly the "
        "server sends its reply; it is retried.",
    )
    group.addoption(
        "--rubric-judge-batch",
        dest="rubric_judge_batch",
        action="store_true",
        default=False,
        help="send the session's judge calls through the provider's batch API (openai, "
        "anthropic): cheaper, slower; a result missing or errored is asked live once.",
    )
    group.addoption(
        "--rubric-judge-batch-timeout",
        dest="rubric_judge_batch_timeout",
        metavar="SECONDS",
        type=_positive_seconds,
        default=3600.0,
        help="with --rubric-judge-batch, wait SECONDS at most for a batch (default 3600); "
        "then it is cancelled and its criteria are ERROR.",
    )
    group.addoption(
        "--rubric-cache",
        dest="rubric_cache",
        choices=CACHE_MODES,
        default="use",
        help="judge cache: use (default), refresh (call and overwrite), off, or replay "
        "(no network call; a miss is an ERROR). Judge calls only: see --rubric-response-cache.",
    )
    group.addoption(
        "--rubric-response-cache",
        dest="rubric_response_cache",
        choices=RESPONSE_CACHE_MODES,
        default=None,
        help="answers of targets and --rubric-model: off (default: called on every run), use "
        "(record and replay), replay (call nothing; a miss is an ERROR); also ini "
        "rubric_response_cache.",
    )
    _add_cost_options(group, parser)
    group.addoption(
        "--rubric-require-judge",
        dest="rubric_require_judge",
        action="store_true",
        help="make judged criteria ERROR instead of SKIPPED when no judge is configured.",
    )
    group.addoption(
        "--rubric-model",
        dest="rubric_model",
        action="append",
        metavar="[NAME=]PROVIDER:MODEL",
        default=None,
        help="ask this model each case's question (subject NAME, default the model's name). "
        "Repeatable: one subject each.",
    )
    for output in OUTPUTS:  # --rubric-json, --rubric-html, --rubric-markdown, --rubric-csv
        group.addoption(
            f"--rubric-{output.name}",
            dest=f"rubric_{output.name}",
            metavar="PATH",
            default=None,
            help=output.run_help,
        )
    group.addoption(
        "--rubric-baseline",
        dest="rubric_baseline",
        metavar="PATH",
        default=None,
        help="an earlier --rubric-json: fail when a case that passed there fails now, or a "
        "subject's correctness drops by more than --rubric-max-drop.",
    )
    group.addoption(
        "--rubric-history",
        dest="rubric_history",
        metavar="PATH",
        default=None,
        help="append this run (its run metadata, leaderboard and items) to the SQLite history "
        "at PATH; also ini rubric_history. Read it with python -m pytest_rubric history PATH.",
    )
    group.addoption(
        "--rubric-max-drop",
        dest="rubric_max_drop",
        metavar="X",
        type=fraction,
        default=0.0,
        help="the correctness drop per subject that --rubric-baseline tolerates (default 0).",
    )
    group.addoption(
        "--rubric-fail-under",
        dest="rubric_fail_under",
        metavar="X",
        type=fraction,
        default=None,
        help="fail the session when a subject's mean correctness is below X (0 to 1).",
    )
    group.addoption(
        "--rubric-repeat",
        dest="rubric_repeat",
        metavar="N",
        type=positive_int,
        default=None,
        help="answers per (case, subject) item where the file sets no `repeat` (default 1): "
        "a target or --rubric-model is asked N times; also ini rubric_repeat.",
    )
    group.addoption(
        "--rubric-pass-when",
        dest="rubric_pass_when",
        metavar="RULE",
        type=_pass_rule,
        default=None,
        help="how an item's samples pass where the file sets no `pass_when`: mean (default), "
        "all, any, or a pass rate X in (0, 1].",
    )
    group.addoption(
        "--rubric-confidence",
        dest="rubric_confidence",
        metavar="LEVEL",
        type=_level,
        default=None,
        help="confidence level of every interval, tier and paired test (default 0.95); also "
        "ini rubric_confidence.",
    )
    group.addoption(
        "--rubric-gate-confidence",
        dest="rubric_gate_confidence",
        metavar="C",
        type=_level,
        default=None,
        help="with --rubric-baseline: fail only on changes beyond noise (an unchanged subject "
        "fails at most 1 - C of the time): a subject's drop when the paired C-interval of "
        "(now - baseline) lies wholly below -max_drop, a case's flip when its passing samples "
        "fell significantly (one-sided Fisher); a flip within noise is a note.",
    )
    parser.addini(
        "rubric_dirs", "directories to collect rubric files from", type="paths", default=[]
    )
    parser.addini(
        "rubric_file_patterns",
        "glob patterns of rubric file names",
        type="linelist",
        default=["*.rubric.yaml", "*.rubric.yml", "*.rubric.json"],
    )
    parser.addini("rubric_judge", "the LLM judge, PROVIDER:MODEL (overridden by --rubric-judge)")
    parser.addini("rubric_judge_attempts", "attempts per judge call, the first included (4)")
    parser.addini("rubric_judge_samples", "judge samples per criterion (1)", default="")
    parser.addini("rubric_judge_backoff", "first retry delay in seconds, doubled each time (0.5)")
    parser.addini(
        "rubric_judge_retry_budget",
        "retries per session (per xdist worker) across all judge calls (200)",
    )
    parser.addini(
        "rubric_summary",
        "the rubric summary at the end of the run: auto (when rubric items ran, assert_rubric "
        "graded a subject named with subject=, or a gate ran), on, off (default auto)",
        default="auto",
    )
    parser.addini(
        "rubric_show_response",
        "characters of the response a failing rubric item shows beside its criteria (terminal, "
        "JUnit system-out, Markdown); 0 hides it (default 1000)",
        default="1000",
    )
    parser.addini(
        "rubric_gc_freeze",
        "after collecting rubric items, keep the garbage collector's full collections off the "
        "objects alive then, until the session ends (default true)",
        type="bool",
        default=True,
    )
    parser.addini(
        "rubric_gc_pause",
        "pause the garbage collector while a rubric file loads and its items are built "
        "(default true)",
        type="bool",
        default=True,
    )
    parser.addini(
        "rubric_fast_exit",
        "after a session with rubric items, skip the interpreter's repeated shutdown "
        "collections of its large heap (default true)",
        type="bool",
        default=True,
    )
    parser.addini(
        "rubric_history",
        "a SQLite file each run is appended to (see --rubric-history)",
        default="",
    )
    parser.addini(
        "rubric_response_cache",
        "answers of targets and models: off (default, called every run), use, replay",
        default="",
    )
    parser.addini(
        "rubric_cache_dir",
        "where the judge cache lives (default .rubric_cache under the rootdir)",
        default="",
    )
    parser.addini("rubric_repeat", "answers per item where the file sets no repeat (1)", default="")
    parser.addini("rubric_confidence", "confidence level of intervals and tiers (0.95)", default="")
    parser.addini("rubric_min_score", "pass mark of cases that set none (default 0.8)", default="")
    parser.addini(
        "rubric_call_timeout",
        "seconds a `callable` criterion or a `target` may run before it is ERROR, unless it "
        "sets `timeout:` (default 60)",
        default="",
    )
    parser.addini(
        "rubric_check_timeout",
        "seconds a check whose cost can grow faster than the answer (a JSON validation, "
        "evidence matching) may run before its criterion is ERROR (default 5)",
        default="",
    )
    for name, what in (
        (
            "rubric_confident_threshold",
            "confidence at or above which an answer counts as confident (0.7)",
        ),
        (
            "rubric_hedged_threshold",
            "confidence at or below which an answer counts as hedged (0.35)",
        ),
        (
            "rubric_low_score",
            "score below which a confident answer is flagged confidently_wrong (0.5)",
        ),
        (
            "rubric_high_score",
            "score at or above which a hedged answer is flagged hedged_but_right (0.8)",
        ),
    ):
        parser.addini(name, what, default="")
    _add_audit_options(group)
    parser.addini("rubric_judge_probe", "criteria the style probe judges again (0)", default="")
    parser.addini(
        "rubric_judge_probe_kinds",
        "what the probed criteria are judged again on: tone, length, position, comma-separated "
        "(tone)",
        default="",
    )
    parser.addini(
        "rubric_judge_min_kappa",
        "judged criteria of a suite whose calibration kappa is below this are ERROR",
        default="",
    )


# --- auditing the judge (issue 16) ---------------------------------------------------------


def _add_audit_options(group: pytest.OptionGroup) -> None:
    """The flags that audit the judge (``_audit`` reports what they find)."""
    group.addoption(
        "--rubric-judge-evidence",
        dest="rubric_judge_evidence",
        choices=EVIDENCE_MODES,
        default="check",
        help="the quotes a judge's MET must give: check (default: flag a MET none of whose "
        "quotes is in the response), require (such a MET on a positive criterion counts as "
        "UNMET), off.",
    )
    group.addoption(
        "--rubric-judge-min-kappa",
        dest="rubric_judge_min_kappa",
        metavar="K",
        type=_kappa,
        default=None,
        help="every judged criterion of a suite whose calibration kappa (Cohen's, the judge "
        "against the file's `calibration:` labels) is below K is ERROR.",
    )
    group.addoption(
        "--rubric-judge-probe",
        dest="rubric_judge_probe",
        metavar="N",
        type=positive_int,
        default=None,
        help="style probe: judge up to N judged substance criteria again on the answer "
        "rewritten confident and hedged, and report the verdicts that changed with tone alone.",
    )
    group.addoption(
        "--rubric-judge-max-style-flips",
        dest="rubric_judge_max_style_flips",
        metavar="X",
        type=fraction,
        default=None,
        help="fail the session when the style probe's share of flipped verdicts is above X "
        "(every probe kind's: see --rubric-judge-probe-kinds).",
    )
    group.addoption(
        "--rubric-judge-probe-kinds",
        dest="rubric_judge_probe_kinds",
        metavar="KINDS",
        type=probe_kinds,
        default=None,
        help="what the probed criteria are judged again on, comma-separated: tone (rewritten "
        "confident and hedged), length (neutral padding appended), position (one-shot grader: "
        "the criteria in reverse order). Default: tone.",
    )
    group.addoption(
        "--rubric-judge-max-flips",
        dest="rubric_judge_max_flips",
        metavar="KIND=X",
        action="append",
        type=kind_limit,
        default=None,
        help="fail the session when probe KIND's share of flipped verdicts is above X "
        "(repeatable; overrides --rubric-judge-max-style-flips for that kind).",
    )


def _add_cost_options(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    """What judging costs (``judge/cost.py``): prices and the budget."""
    group.addoption(
        "--rubric-judge-price",
        dest="rubric_judge_price",
        metavar="IN,OUT",
        type=_price,
        default=None,
        help="the judge's price in dollars per million input and output tokens, e.g. "
        "0.15,0.60: the usage line shows the cost and what the cache saved (overrides ini "
        "rubric_judge_prices for the judge).",
    )
    group.addoption(
        "--rubric-max-cost",
        dest="rubric_max_cost",
        metavar="USD",
        type=_budget,
        default=None,
        help="start no judge or model call once this many dollars are spent (xdist workers "
        "each get an equal share); the criteria left are ERROR. Needs prices.",
    )
    parser.addini(
        "rubric_judge_prices",
        "one line per model: MODEL IN OUT [BATCH_IN BATCH_OUT], dollars per million input and "
        "output tokens (batch: --rubric-judge-batch, default half)",
        type="linelist",
        default=[],
    )


def _price(text: str) -> str:
    from .judge.cost import parse_price

    try:
        parse_price(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _pass_rule(text: str) -> str | float:
    try:
        return parse_pass_when(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def probe_kinds(text: str) -> tuple[str, ...]:
    """An argparse type (and the ini's reader): probe kinds, comma-separated, each once."""
    kinds = tuple(k.strip().lower() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in PROBE_KINDS]
    if unknown or not kinds:
        raise argparse.ArgumentTypeError(
            f"{text!r}: the probe kinds are {', '.join(PROBE_KINDS)} (comma-separated)"
        )
    return tuple(dict.fromkeys(kinds))


def kind_limit(text: str) -> tuple[str, float]:
    """An argparse type: ``KIND=X``, a probe kind and its largest share of flips."""
    kind, sep, value = text.partition("=")
    kind = kind.strip().lower()
    if not sep or kind not in PROBE_KINDS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not KIND=X with KIND one of {', '.join(PROBE_KINDS)}"
        )
    return kind, fraction(value.strip())


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value
