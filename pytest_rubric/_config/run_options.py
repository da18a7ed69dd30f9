"""The run's options: where rubrics and answers come from, the outputs and gates, the
terminal, and the process-wide speed switches."""

from __future__ import annotations

from .._defaults import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_CHECK_TIMEOUT,
    DEFAULT_MIN_SCORE,
    RESPONSE_CACHE_MODES,
    SHOW_RESPONSE,
)
from . import parsers
from .option import DEFAULT_PATTERNS, SUMMARY_MODES, Option
from .outputs import OUTPUTS

__all__ = ["RUN_OPTIONS"]

RUN_OPTIONS: tuple[Option, ...] = (
    # --- where rubrics and answers come from ------------------------------------------------
    Option(
        "dirs",
        "collect rubric files under DIR (repeatable); without test paths, only these run.",
        ini=True,
        action="append",
        metavar="DIR",
        flag_name="--rubric-dir",
        ini_type="paths",
        ini_help="directories to collect rubric files from, as testpaths",
        default=[],
    ),
    Option(
        "file_patterns",
        "glob patterns of rubric file names",
        flag=False,
        ini=True,
        ini_type="linelist",
        default=list(DEFAULT_PATTERNS),
    ),
    Option(
        "responses",
        'grade the responses in DIR/<subject>.jsonl, one {"id", "response"} per line.',
        metavar="DIR",
    ),
    Option(
        "target",
        "call this function for each case's response (the application under test; "
        "subject NAME, default the function's name). Repeatable: one subject each.",
        action="append",
        metavar="[NAME=]MODULE:FUNCTION",
    ),
    Option(
        "model",
        "ask this model each case's question (subject NAME, default the model's name). "
        "Repeatable: one subject each.",
        action="append",
        metavar="[NAME=]PROVIDER:MODEL",
    ),
    Option(
        "otel",
        "read each target call's OpenTelemetry spans (GenAI conventions, OpenInference) into "
        "its trace: tool calls, model calls, retrieved passages, tokens; also ini rubric_otel. "
        "Needs pytest-rubric[otel].",
        ini=True,
        action="store_true",
        ini_type="bool",
        default=False,
        ini_help="read each target call's OpenTelemetry spans into its trace (false)",
    ),
    Option(
        "response_cache",
        "answers of targets and --rubric-model: off (default: called on every run), use "
        "(record and replay), replay (call nothing; a miss is an ERROR); also ini "
        "rubric_response_cache.",
        ini=True,
        choices=RESPONSE_CACHE_MODES,
        parse=parsers.one_of(RESPONSE_CACHE_MODES),
        default="off",
        ini_help="answers of targets and models: off (default, called every run), use, replay",
    ),
    Option(
        "repeat",
        "answers per (case, subject) item where the file sets no `repeat` (default 1): "
        "a target or --rubric-model is asked N times; also ini rubric_repeat.",
        ini=True,
        metavar="N",
        parse=parsers.whole,
        default=1,
        ini_help="answers per item where the file sets no repeat (1)",
    ),
    Option(
        "pass_when",
        "how an item's samples pass where the file sets no `pass_when`: mean (default), "
        "all, any, or a pass rate X in (0, 1].",
        metavar="RULE",
        parse=parsers.pass_rule,
        default="mean",
    ),
    Option(
        "min_score",
        "pass mark of cases that set none (default 0.8)",
        flag=False,
        ini=True,
        parse=parsers.fraction,
        default=DEFAULT_MIN_SCORE,
    ),
    Option(
        "call_timeout",
        "seconds a `callable` criterion or a `target` may run before it is ERROR, unless it "
        "sets `timeout:` (default 60)",
        flag=False,
        ini=True,
        parse=parsers.seconds,
        default=DEFAULT_CALL_TIMEOUT,
    ),
    Option(
        "check_timeout",
        "seconds a check whose cost can grow faster than the answer (a JSON validation, "
        "evidence matching) may run before its criterion is ERROR (default 5)",
        flag=False,
        ini=True,
        parse=parsers.seconds,
        default=DEFAULT_CHECK_TIMEOUT,
    ),
    # --- outputs and gates -----------------------------------------------------------------------
    *(
        Option(output.name, output.run_help, metavar="PATH")
        for output in OUTPUTS  # --rubric-json, --rubric-html, --rubric-markdown, --rubric-csv
    ),
    Option(
        "baseline",
        "an earlier --rubric-json: fail when a case that passed there fails now, or a "
        "subject's correctness drops by more than --rubric-max-drop.",
        metavar="PATH",
    ),
    Option(
        "history",
        "append this run (its run metadata, leaderboard and items) to the SQLite history "
        "at PATH; also ini rubric_history. Read it with python -m pytest_rubric history PATH.",
        ini=True,
        metavar="PATH",
        ini_help="a SQLite file each run is appended to (see --rubric-history)",
    ),
    Option(
        "max_drop",
        "the correctness drop per subject that --rubric-baseline tolerates (default 0).",
        metavar="X",
        parse=parsers.fraction,
        default=0.0,
    ),
    Option(
        "fail_under",
        "fail the session when a subject's mean correctness is below X (0 to 1).",
        metavar="X",
        parse=parsers.fraction,
    ),
    Option(
        "confidence",
        "confidence level of every interval, tier and paired test (default 0.95); also "
        "ini rubric_confidence.",
        ini=True,
        metavar="LEVEL",
        parse=parsers.level,
        default=0.95,
        ini_help="confidence level of intervals and tiers (0.95)",
    ),
    Option(
        "gate_confidence",
        "with --rubric-baseline: fail only on changes beyond noise (an unchanged subject "
        "fails at most 1 - C of the time): a subject's drop when the paired C-interval of "
        "(now - baseline) lies wholly below -max_drop, a case's flip when its passing samples "
        "fell significantly (one-sided Fisher); a flip within noise is a note.",
        metavar="C",
        parse=parsers.level,
    ),
    # --- the terminal and the style axis ---------------------------------------------------------
    Option(
        "summary",
        "the rubric summary at the end of the run: auto (when rubric items ran, assert_rubric "
        "graded a subject named with subject=, or a gate ran), on, off (default auto)",
        flag=False,
        ini=True,
        parse=parsers.one_of(SUMMARY_MODES),
        default="auto",
    ),
    Option(
        "style_field",
        "where fluency and confidence are measured in an answer that is a JSON object: the "
        "value at this JSON Pointer (e.g. /answer); by default its string values, never its "
        "raw JSON text. A rubric file's `style_field:` wins.",
        flag=False,
        ini=True,
        parse=parsers.json_pointer,
    ),
    Option(
        "show_response",
        "characters of the response a failing rubric item shows beside its criteria (terminal, "
        "JUnit system-out, Markdown); 0 hides it (default 1000)",
        flag=False,
        ini=True,
        parse=parsers.show_response,
        default=SHOW_RESPONSE,
    ),
    *(
        Option(key, help, flag=False, ini=True, parse=parsers.fraction, default=default)
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
    # --- process-wide speed switches (see _pytest/heap.py) ---------------------------------------
    Option(
        "gc_freeze",
        "after collecting rubric items, keep the garbage collector's full collections off the "
        "objects alive then, until the session ends (default true)",
        flag=False,
        ini=True,
        ini_type="bool",
        default=True,
    ),
    Option(
        "gc_pause",
        "pause the garbage collector while a rubric file loads and its items are built "
        "(default true)",
        flag=False,
        ini=True,
        ini_type="bool",
        default=True,
    ),
    Option(
        "fast_exit",
        "after a session with rubric items, skip the interpreter's repeated shutdown "
        "collections of its large heap (default true)",
        flag=False,
        ini=True,
        ini_type="bool",
        default=True,
    ),
)
