"""The ``--rubric-json`` document as pydantic models: strict, finite, open to additions.

What each field must be; ``_report.document`` reads a document with them and turns it back into
results (see its docstring for why a document read back is validated field by field).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from .._repeat import parse_pass_when

__all__ = [
    "CriterionModel",
    "DocumentModel",
    "GateModel",
    "LeaderboardRowModel",
    "PairModel",
    "ResultModel",
    "RunModel",
    "SampleModel",
    "TraceModel",
]


# Strict, finite, open to additions: see the module docstring.
_CONFIG = ConfigDict(strict=True, allow_inf_nan=False, extra="allow")

Fraction = Annotated[float, Field(ge=0, le=1)]
"""A number from 0 to 1: scores, credits and the style heuristics are clamped there."""
Count = Annotated[int, Field(ge=0)]
RawScore = Annotated[float, Field(ge=0, le=100)]
"""The holistic judge's reply, from 0 to 100."""
# A Literal, not the Verdict enum: strict validation of Python data (what json.loads
# gives) accepts only enum members for an enum field, never the string written.
VerdictName = Literal["MET", "UNMET", "ERROR", "SKIPPED"]


class CriterionSampleModel(BaseModel):
    """One judge sample of a criterion (``--rubric-judge-samples``)."""

    model_config = _CONFIG

    verdict: VerdictName
    credit: Fraction


class CriterionModel(BaseModel):
    """One entry of a result's ``criteria``."""

    model_config = _CONFIG

    id: str
    type: str
    axis: Literal["substance", "style"]
    weight: float
    verdict: VerdictName
    ok: bool  # derived from verdict and weight; recomputed, but a run always writes it
    credit: Fraction
    reason: str
    required: bool = False
    agreement: Fraction | None = None
    unstable: bool = False
    samples: list[CriterionSampleModel] | None = None
    tags: list[str] = []
    evidence_ok: bool | None = None
    judges: dict[str, VerdictName | Annotated[float, Field(allow_inf_nan=False)]] | None = None
    requirement: str | None = None  # a judged criterion's, as the rubric states it; null otherwise


class ToolCallModel(BaseModel):
    """One tool call of a ``trace``."""

    model_config = _CONFIG

    name: str
    arguments: dict[str, Any]
    ok: bool
    result: str | None = None


class PassageModel(BaseModel):
    """One passage of a ``trace``'s ``context``."""

    model_config = _CONFIG

    id: str | None = None
    text: str
    source: str | None = None


class UsageModel(BaseModel):
    """A ``trace``'s ``usage``: each figure null when the application did not give it."""

    model_config = _CONFIG

    input_tokens: Count | None = None
    output_tokens: Count | None = None
    cost_usd: Annotated[float, Field(ge=0)] | None = None


class TraceModel(BaseModel):
    """A sample's ``trace``: what the application did on the way to its answer (null when
    there is none). ``result`` and ``text`` are cut to 2,000 characters with a count."""

    model_config = _CONFIG

    source: Literal["returned", "otel", "responses", "case"]
    tool_calls: list[ToolCallModel] = []
    llm_calls: Count | None = None
    context: list[PassageModel] = []
    usage: UsageModel = UsageModel()
    latency_s: Annotated[float, Field(ge=0)] | None = None
    metadata: dict[str, Any] | None = None


class SampleModel(BaseModel):
    """One entry of a result's ``samples`` (``repeat``): read back, its score and ``passed``
    are recomputed from its criteria."""

    model_config = _CONFIG

    score: Fraction
    raw_score: float
    passed: bool
    criteria: list[CriterionModel]
    response: str = ""
    llm_raw_score: RawScore | None = None
    trace: TraceModel | None = None


class ResultModel(BaseModel):
    """One entry of ``results``: the grade of one response against one case."""

    model_config = _CONFIG

    nodeid: str
    suite: str
    case: str
    subject: str
    score: Fraction
    raw_score: float
    min_score: float | None  # any pass mark (assert_rubric's is not bounded); null: report-only
    passed: bool
    criteria: list[CriterionModel]
    fluency: Fraction
    confidence: Fraction
    naive_score: Fraction
    style_score: Fraction | None = None
    flags: list[str]
    question: str | None = None
    response: str = ""
    possible: float = 0.0
    tags: list[str] = []
    pass_when: Annotated[str | float, BeforeValidator(parse_pass_when)] = "mean"
    level: Annotated[float, Field(gt=0, lt=1)] = 0.95
    samples: list[SampleModel] | None = None  # the item is recomputed from these
    # Checked, then recomputed from the samples:
    n_samples: Annotated[int, Field(ge=1)] | None = None
    pass_rate: Fraction | None = None
    pass_rate_ci: list[Fraction] | None = None
    probe: list[dict[str, str]] = []  # the style probe's records (see _report.audit)
    ranked: bool = True  # false: an assert_rubric call without subject= (not on the leaderboard)
    # The holistic grader's 0-100 reply; null for other graders. With samples, their mean.
    llm_raw_score: RawScore | None = None
    # [low, high]: SKIPPED because the judge (set in the ini or the environment) had no key and
    # could still pass or fail the case: its score at worst and at best; null otherwise.
    skipped_bounds: Annotated[list[Fraction], Field(min_length=2, max_length=2)] | None = None


class LeaderboardRowModel(BaseModel):
    """One entry of ``leaderboard``. Read back it is only checked: it is recomputed."""

    model_config = _CONFIG

    subject: str
    rank: Annotated[int, Field(ge=1)]
    correctness: Fraction
    fluency: Fraction
    confidence: Fraction
    naive_score: Fraction
    naive_rank: Annotated[int, Field(ge=1)]
    confidently_wrong: Count
    passed: Count
    total: Count
    correctness_ci: list[Fraction] | None = None
    n_cases: Count = 0
    tier: Annotated[int, Field(ge=1)] = 1
    detectable_drop: Annotated[float, Field(ge=0)] | None = None
    passed_ci: list[Fraction] | None = None
    # Subjects with traces only: mean tool calls per answer, median latency, summed cost.
    tool_calls: Annotated[float, Field(ge=0)] | None = None
    latency_s_p50: Annotated[float, Field(ge=0)] | None = None
    cost_usd: Annotated[float, Field(ge=0)] | None = None


class BreakdownModel(BaseModel):
    """One entry of ``breakdowns``. Read back it is only checked: it is recomputed."""

    model_config = _CONFIG

    subject: str
    group: Literal["suite", "tag"]
    key: str
    score: Fraction
    ci: list[Fraction] | None = None
    n: Count


class PairModel(BaseModel):
    """One entry of ``pairwise``: two subjects over the cases they share (``a`` ranked above
    ``b``). Read back it is only checked: it is recomputed."""

    model_config = _CONFIG

    a: str
    b: str
    shared: Count
    wins: Count
    losses: Count
    ties: Count
    diff: Annotated[float, Field(ge=-1, le=1)] | None  # the mean of a - b; null: none shared
    ci: list[Annotated[float, Field(ge=-1, le=1)]] | None  # its paired interval


class StyleProbeModel(BaseModel):
    """One judge's entry of ``judge_audit.style_probe``: checked, then recomputed from the
    results' ``probe`` records."""

    model_config = _CONFIG

    judge: str
    probed: Count
    flips_confident: Count
    flips_hedged: Count
    style_sensitivity: Fraction


class ProbeFiguresModel(BaseModel):
    """One judge's and kind's entry of ``judge_audit.probes``: checked, then recomputed from
    the results' ``probe`` records."""

    model_config = _CONFIG

    judge: str
    kind: Literal["tone", "length", "position"]
    probed: Count
    flips: Count
    sensitivity: Fraction


class CalibrationModel(BaseModel):
    """One suite's entry of ``judge_audit.calibration``: measured by the run, kept by merge."""

    model_config = _CONFIG

    suite: str
    judge: str
    n: Count
    accuracy: Fraction | None = None
    kappa: Annotated[float, Field(ge=-1, le=1)] | None = None
    tpr: Fraction | None = None
    tnr: Fraction | None = None
    errors: Count = 0


class EvidenceAuditModel(BaseModel):
    model_config = _CONFIG

    checked: Count
    unsupported: Count


class JudgeAuditModel(BaseModel):
    """``judge_audit``. Read back it is only checked: it is recomputed from the results."""

    model_config = _CONFIG

    calibration: list[CalibrationModel] = []
    style_probe: list[StyleProbeModel] = []
    probes: list[ProbeFiguresModel] = []  # per judge and kind (tone too); older documents: none
    panel: dict[str, Any] = {}
    evidence: EvidenceAuditModel = EvidenceAuditModel(checked=0, unsupported=0)


def _iso_time(text: str) -> str:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("expected an ISO 8601 time, e.g. 2026-12-04T09:30:00Z") from None
    return text


class RunJudgeModel(BaseModel):
    """One entry of ``run.judges``: a user's own judge has its name only (the rest null)."""

    model_config = _CONFIG

    name: str
    provider: str | None
    model: str | None
    url: str | None  # read back without userinfo or query string, whatever it holds


class RunCacheModel(BaseModel):
    """``run.cache``: the judge cache's mode, and its hits and misses over the run."""

    model_config = _CONFIG

    mode: str
    hits: Count
    misses: Count


class RunModel(BaseModel):
    """``run``: which run wrote the document. Older documents have none (null or absent);
    ``merge`` combines the shards' (see ``_report.run.merged``)."""

    model_config = _CONFIG

    plugin_version: str
    pytest_version: str
    python_version: str
    started_at: Annotated[str, AfterValidator(_iso_time)]  # ISO 8601, UTC
    duration_s: Annotated[float, Field(ge=0)]
    git_commit: str | None
    judges: list[RunJudgeModel]
    grader: str
    cache: RunCacheModel
    responses_replayed: Count
    # False: the session was interrupted (Ctrl-C) and its results are a part of the run;
    # merge refuses it unless --allow-incomplete. Absent in documents of earlier versions.
    complete: bool = True


class GateModel(BaseModel):
    """One entry of ``gates``: a gate's verdict on a subject, a case, a judge or a suite.
    Kept by ``merge`` for the gates it does not apply itself."""

    model_config = _CONFIG

    gate: str
    subject: str | None
    nodeid: str | None
    failed: bool
    message: str


class DocumentModel(BaseModel):
    """The whole ``--rubric-json`` document."""

    model_config = _CONFIG

    version: Literal[1]
    run: RunModel | None = None
    results: list[ResultModel]
    leaderboard: list[LeaderboardRowModel]
    rankings_disagree: bool
    rankings_differ_within_noise: bool = False
    confidence: Annotated[float, Field(gt=0, lt=1)] = 0.95
    breakdowns: list[BreakdownModel] = []
    pairwise: list[PairModel] = []
    judge_audit: JudgeAuditModel | None = None
    gates: list[GateModel] = []
