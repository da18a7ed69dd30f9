"""The judge's options: which LLM, how it is called, what it costs, how it is audited."""

from __future__ import annotations

from .._defaults import CACHE_MODES, EVIDENCE_MODES, GRADERS, PROVIDERS, RetryPolicy
from . import parsers
from .option import Option

__all__ = ["JUDGE_OPTIONS"]

_RETRY = RetryPolicy()

JUDGE_OPTIONS: tuple[Option, ...] = (
    # --- the judge -----------------------------------------------------------------------------
    Option(
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
    ),
    Option(
        "judge_url",
        "the judge's base URL (default: OPENAI_BASE_URL / ANTHROPIC_BASE_URL, else the "
        "provider's), e.g. http://127.0.0.1:8080/v1 for a local server; also ini "
        "rubric_judge_url. Keys still come from the environment only.",
        ini=True,
        metavar="URL",
        ini_help="the judge's base URL (overridden by --rubric-judge-url)",
    ),
    Option(
        "grader",
        "one judge call per criterion (default), one call for all, or one 0-100 score.",
        choices=tuple(GRADERS),
        default="per-criterion",
    ),
    Option(
        "concurrency",
        "judge calls in flight at most, across the session (default 8); xdist workers "
        "share it, N // workers each.",
        metavar="N",
        parse=parsers.positive_int,
        default=8,
    ),
    Option(
        "judge_samples",
        "judge every criterion K times (default 1): majority verdict, mean score; "
        "criteria whose samples disagree are flagged unstable.",
        ini=True,
        metavar="K",
        parse=parsers.whole,
        default=1,
        ini_help="judge samples per criterion (1)",
    ),
    Option(
        "judge_timeout",
        "give up on one judge call after SECONDS (default 60), however slowly the "
        "server sends its reply; it is retried.",
        metavar="SECONDS",
        parse=parsers.positive_seconds,
        default=_RETRY.timeout,
    ),
    Option(
        "judge_batch",
        "send the session's judge calls through the provider's batch API ("
        + ", ".join(name for name, p in PROVIDERS.items() if p.batch)
        + "): cheaper, slower; a result missing or errored is asked live once.",
        action="store_true",
        default=False,
    ),
    Option(
        "judge_batch_timeout",
        "with --rubric-judge-batch, wait SECONDS at most for a batch (default 3600); "
        "then it is cancelled and its criteria are ERROR.",
        metavar="SECONDS",
        parse=parsers.positive_seconds,
        default=3600.0,
    ),
    Option(
        "judge_attempts",
        "attempts per judge call, the first included (4)",
        flag=False,
        ini=True,
        parse=parsers.attempts,
        default=_RETRY.attempts,
    ),
    Option(
        "judge_backoff",
        "first retry delay in seconds, doubled each time (0.5)",
        flag=False,
        ini=True,
        parse=parsers.positive,
        default=_RETRY.backoff,
    ),
    Option(
        "judge_retry_budget",
        "retries per session (per xdist worker) across all judge calls (200)",
        flag=False,
        ini=True,
        parse=parsers.attempts,
        default=_RETRY.budget,
    ),
    Option(
        "cache",
        "judge cache: use (default), refresh (call and overwrite), off, or replay "
        "(no network call; a miss is an ERROR). Judge calls only: see --rubric-response-cache.",
        choices=CACHE_MODES,
        default="use",
    ),
    Option(
        "recordings",
        "keep judge replies as text in DIR, one JSON file per rubric file and case "
        "(DIR/<rubric file>/<case id>.json), to commit: --rubric-cache use records, "
        "replay reads them (then the local cache); also ini rubric_recordings (relative to "
        "the rootdir).",
        ini=True,
        metavar="DIR",
        ini_help="the judge's recordings folder (overridden by --rubric-recordings)",
    ),
    Option(
        "recordings_prune",
        "delete the recorded entries no request of the run used, after a run that collected "
        "every rubric file (never after a selection: -k, -m, node ids, --lf, --deselect).",
        action="store_true",
        default=False,
    ),
    Option(
        "cache_dir",
        "where the judge cache lives (default .rubric_cache under the rootdir)",
        flag=False,
        ini=True,
        default=".rubric_cache",
    ),
    Option(
        "require_judge",
        "make judged criteria ERROR instead of SKIPPED when no judge is configured.",
        action="store_true",
        default=False,
    ),
    Option(
        "judge_price",
        "the judge's price in dollars per million input and output tokens, e.g. "
        "0.15,0.60: the usage line shows the cost and what the cache saved (overrides ini "
        "rubric_judge_prices for the judge).",
        metavar="IN,OUT",
        parse=parsers.price,
    ),
    Option(
        "judge_prices",
        "one line per model: MODEL IN OUT [BATCH_IN BATCH_OUT], dollars per million input and "
        "output tokens (batch: --rubric-judge-batch, default half)",
        flag=False,
        ini=True,
        ini_type="linelist",
        default=[],
    ),
    Option(
        "max_cost",
        "start no judge or model call once this many dollars are spent (xdist workers "
        "each get an equal share); the criteria left are ERROR. Needs prices.",
        metavar="USD",
        parse=parsers.budget,
    ),
    # --- auditing the judge ----------------------------------------------------------------------
    Option(
        "judge_evidence",
        "the quotes a judge's MET must give: check (default: flag a MET none of whose "
        "quotes is in the response), require (such a MET on a positive criterion counts as "
        "UNMET), off.",
        choices=EVIDENCE_MODES,
        default="check",
    ),
    Option(
        "judge_min_kappa",
        "every judged criterion of a suite whose calibration kappa (Cohen's, the judge "
        "against the file's `calibration:` labels) is below K is ERROR.",
        ini=True,
        metavar="K",
        parse=parsers.kappa,
        ini_help="judged criteria of a suite whose calibration kappa is below this are ERROR",
    ),
    Option(
        "judge_probe",
        "style probe: judge up to N judged substance criteria again on the answer "
        "rewritten confident and hedged, and report the verdicts that changed with tone alone.",
        ini=True,
        metavar="N",
        parse=parsers.whole,
        default=0,
        ini_help="criteria the style probe judges again (0)",
    ),
    Option(
        "judge_probe_kinds",
        "what the probed criteria are judged again on, comma-separated: tone (rewritten "
        "confident and hedged), length (neutral padding appended), position (one-shot grader: "
        "the criteria in reverse order). Default: tone.",
        ini=True,
        metavar="KINDS",
        parse=parsers.probe_kinds,
        default=("tone",),
        ini_help="what the probed criteria are judged again on: tone, length, position, "
        "comma-separated (tone)",
    ),
    Option(
        "judge_max_style_flips",
        "fail the session when the style probe's share of flipped verdicts is above X "
        "(every probe kind's: see --rubric-judge-probe-kinds).",
        metavar="X",
        parse=parsers.fraction,
    ),
    Option(
        "judge_max_flips",
        "fail the session when probe KIND's share of flipped verdicts is above X "
        "(repeatable; overrides --rubric-judge-max-style-flips for that kind).",
        action="append",
        metavar="KIND=X",
        parse=parsers.kind_limit,
    ),
)
