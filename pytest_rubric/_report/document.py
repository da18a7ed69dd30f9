"""The ``--rubric-json`` document: its schema as pydantic models, its writer and its reader.

The models are the only description of the document: a run writes it with them
(:func:`json_chunks`: each field read from the attribute of the same name, in the model's
order), ``--rubric-baseline`` and ``merge`` read it back with them (:func:`load_document`),
the JSON reference page is generated from them (``docs/hooks.py``), and a result crosses
from an xdist worker to the controller as the same data (:func:`result_data`).

A document read back is input like any other (edited by hand, cut short, written by
something else), so it is validated before anything uses it: strict types (``"0.8"`` is
not a number, ``true`` is not 1), finite numbers everywhere, a trace's metadata and a tool
call's arguments included (a NaN would silently turn a gate off, and JSON has none), each
number within the range a run can write (``min_score`` from 0 to 1, as in a rubric file),
each credit one its verdict can have, every field a run writes present, unknown fields
ignored (a newer version's document still reads). A failure is a :class:`DocumentError`
naming the file and each bad field, e.g. ``base.json: results[3].score: expected a number,
got 'high'``. ``passed`` and ``score`` are recomputed from the criteria
(:func:`pytest_rubric._grade.scoring.passes`), so a shard cannot claim a pass its criteria
do not show; the leaderboard, breakdowns, pairs and audit are only checked, a report
recomputes them.
"""

from __future__ import annotations

import enum
import functools
import json
import math
import operator
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
)
from pydantic_core import PydanticCustomError

from .._defaults import parse_pass_when
from .._errors import DocumentError
from .._grade.scoring import item_passes, passes, score
from .._guards.limits import RepeatedKey, overflowing, unique_keys
from .._guards.secrets import known_keys, shorten
from .._llm.base import mean_raw_score
from .._results import CaseResult, Sample
from .._trace import MAX_COST_USD, MAX_LATENCY_S, MAX_TOKENS
from .audit import Calibration
from .gates import GateEntry
from .report import SessionReport
from .run import RunInfo
from .stats import mean

VERSION = 1
"""The document's ``version``: bumped when a field is renamed or changes meaning."""

Fraction = Annotated[float, Field(ge=0, le=1)]
"""A number from 0 to 1: scores, credits and the style heuristics are clamped there."""
Count = Annotated[int, Field(ge=0)]
RawScore = Annotated[float, Field(ge=0, le=100)]
"""The holistic judge's reply, from 0 to 100."""
# A Literal, not the Verdict enum: strict validation of Python data (what json.loads
# gives) accepts only enum members for an enum field, never the string written.
VerdictName = Literal["MET", "UNMET", "ERROR", "SKIPPED"]


def _credit_of_verdict(credit: float, info: ValidationInfo) -> float:
    """A credit its verdict can have, as grading gives them: ERROR and SKIPPED earn none,
    UNMET less than full credit (a partial one below its mark: a metric's, a judge's score),
    MET any. The score sums the credits: an UNMET criterion holding credit 1 would count as
    met, so the verdict and the credit must agree (the verdict, read first, is in ``info``)."""
    verdict = info.data.get("verdict")  # absent when the verdict itself is wrong
    if verdict in ("ERROR", "SKIPPED") and credit != 0:
        expected = "0"
    elif verdict == "UNMET" and credit >= 1:
        expected = "less than 1"
    else:
        return credit
    raise PydanticCustomError(
        "credit_of_verdict",
        "credit {expected} with verdict {verdict}",
        {"expected": expected, "verdict": verdict},
    )


Credit = Annotated[float, Field(ge=0, le=1), AfterValidator(_credit_of_verdict)]
"""A criterion's (or a vote's) credit: a :data:`Fraction` its ``verdict`` can have."""


def _finite_data(value: Any) -> Any:
    """Data an application gave as it was (a trace's ``metadata``, a tool call's
    ``arguments``), whose every number a run wrote finite (JSON has no NaN or infinity; such
    arguments are kept as their text), refused at the first number that is not, named by
    where it is. Iterative: the data may nest as deep as the parser went."""
    nodes: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while nodes:
        node, within = nodes.pop()
        if type(node) is float and not math.isfinite(node):
            raise PydanticCustomError(
                "finite_number", "a finite number", {"within": within, "found": node}
            )
        if type(node) is dict:
            nodes += [(v, (*within, k)) for k, v in reversed(node.items())]
        elif type(node) is list:
            nodes += [(v, (*within, i)) for i, v in reversed(list(enumerate(node)))]
    return value


def _pass_rule(value: Any) -> str | float:
    """``pass_when`` as a run writes it: ``"mean"``, ``"all"``, ``"any"``, or a number in
    (0, 1]; never a number in a string, which only the command line and the ini give."""
    try:
        if isinstance(value, str) and value not in ("mean", "all", "any"):
            raise ValueError(value)
        return parse_pass_when(value)
    except ValueError:
        raise PydanticCustomError("pass_rule", "a pass rule") from None


def _counted(n_samples: int | None, info: ValidationInfo) -> int | None:
    """``n_samples`` as a run writes it: the number of ``samples`` (1 without any). It is
    recomputed from them anyway; one that disagrees is from an edited document."""
    if n_samples is None or "samples" not in info.data:  # absent: the samples are wrong
        return n_samples
    expected = len(info.data["samples"] or ()) or 1
    if n_samples != expected:
        raise PydanticCustomError("sample_count", "the number of samples", {"expected": expected})
    return n_samples


class _Part(BaseModel):
    """A part of the document. A run writes each field from the attribute of the same name
    of what it describes, unless :attr:`sources` names another (a dotted path, or ``""``
    for the described object itself). A run leaves a field of :attr:`left_out` out when it
    holds the value given there, and those :meth:`trimmed` drops."""

    # Strict, finite, open to additions: see the module docstring.
    model_config = ConfigDict(strict=True, allow_inf_nan=False, extra="ignore")
    sources: ClassVar[Mapping[str, str]] = {}
    left_out: ClassVar[Mapping[str, Any]] = {}

    @classmethod
    def trimmed(cls, data: dict[str, Any], described: Any) -> dict[str, Any]:
        return data


class CriterionSampleModel(_Part):
    """One of the judge's votes on a criterion (``--rubric-judge-samples``)."""

    verdict: VerdictName
    credit: Credit  # after the verdict, which bounds it


class CriterionResultModel(_Part):
    """One entry of a result's ``criteria``."""

    sources: ClassVar[Mapping[str, str]] = {"samples": "votes"}
    left_out: ClassVar[Mapping[str, Any]] = {
        "tags": [],
        "samples": None,
        "judges": None,
        "evidence_ok": None,
    }

    id: str
    type: str
    axis: Literal["substance", "style"]
    weight: float
    verdict: VerdictName
    ok: bool  # derived from verdict and weight; recomputed, but a run always writes it
    credit: Credit  # after the verdict, which bounds it
    reason: str
    required: bool = False
    requirement: str | None = None  # a judged criterion's, as the rubric states it; null otherwise
    tags: list[str] = []  # written when there are some
    agreement: Fraction | None = None  # written with samples or judges
    unstable: bool = False  # written with samples or judges
    samples: list[CriterionSampleModel] | None = None
    judges: dict[str, VerdictName | Annotated[float, Field(allow_inf_nan=False)]] | None = None
    evidence_ok: bool | None = None

    @classmethod
    def trimmed(cls, data: dict[str, Any], described: Any) -> dict[str, Any]:
        if data["samples"] is None and data["judges"] is None:
            del data["agreement"], data["unstable"]
        return data


def _summable(criteria: list[CriterionResultModel]) -> list[CriterionResultModel]:
    if (overflow := overflowing(c.weight for c in criteria)) is not None:  # as in a rubric
        raise ValueError(f"expected {overflow} whose sum a number can hold")
    return criteria


Criteria = Annotated[list[CriterionResultModel], AfterValidator(_summable)]


class ToolCallModel(_Part):
    """One tool call of a ``trace``."""

    name: str
    # Its JSON text when a number in it is not finite: as an object, every number finite.
    arguments: Annotated[dict[str, Any] | str, AfterValidator(_finite_data)]
    ok: bool
    result: str | None = None


class PassageModel(_Part):
    """One passage of a ``trace``'s ``context``."""

    id: str | None = None
    text: str
    source: str | None = None


Tokens = Annotated[int, Field(ge=0, le=MAX_TOKENS)]
Dollars = Annotated[float, Field(ge=0, le=MAX_COST_USD)]
Seconds = Annotated[float, Field(ge=0, le=MAX_LATENCY_S)]


class UsageModel(_Part):
    """A ``trace``'s ``usage``: each figure null when the application did not give it; tokens
    at most 10**12 each, ``cost_usd`` at most 1,000,000, as a trace is read."""

    input_tokens: Tokens | None = None
    output_tokens: Tokens | None = None
    cost_usd: Dollars | None = None


class TraceModel(_Part):
    """A sample's ``trace``: what the application did on the way to its answer (null when
    there is none). ``result`` and ``text`` are cut to 2,000 characters with a count;
    ``latency_s`` is at most 1,000,000, as a trace is read."""

    source: Literal["returned", "otel", "responses", "case"]
    tool_calls: list[ToolCallModel] = []
    llm_calls: Count | None = None
    context: list[PassageModel] = []
    usage: UsageModel = UsageModel()
    latency_s: Seconds | None = None
    # Written when the application gave some; every number in it finite, as a run writes it.
    metadata: Annotated[dict[str, Any] | None, AfterValidator(_finite_data)] = None
    left_out: ClassVar[Mapping[str, Any]] = {"metadata": None}


class SampleModel(_Part):
    """One entry of a result's ``samples`` (``repeat``): read back, its score and ``passed``
    are recomputed from its criteria."""

    score: Fraction
    raw_score: float
    passed: bool
    criteria: Criteria
    response: str = ""
    llm_raw_score: RawScore | None = None
    trace: TraceModel | None = None


class ProbeRecordModel(_Part):
    """One entry of a result's ``probe``: a probed criterion judged again by one judge
    (see :class:`~pytest_rubric._results.ProbeRecord`)."""

    left_out: ClassVar[Mapping[str, Any]] = {
        "confident": None,
        "hedged": None,
        "probed": None,
        "negative": False,
    }

    criterion: str
    judge: str
    kind: Literal["tone", "length", "position"]
    original: VerdictName
    confident: VerdictName | None = None  # tone: the verdicts on the two rewrites
    hedged: VerdictName | None = None
    probed: VerdictName | None = None  # another kind: the verdict judged again
    negative: bool = False  # the criterion's weight is negative


class ResultModel(_Part):
    """One entry of ``results``: the grade of one response against one case."""

    # Every sample, the one of a result graded once included.
    sources: ClassVar[Mapping[str, str]] = {"samples": "sample_list"}
    left_out: ClassVar[Mapping[str, Any]] = {"probe": [], "ranked": True}

    nodeid: str
    suite: str
    case: str
    subject: str
    score: Fraction
    raw_score: float
    min_score: Fraction | None  # as a rubric file or assert_rubric allows; null: report-only
    passed: bool
    criteria: Criteria
    fluency: Fraction
    confidence: Fraction
    naive_score: Fraction
    style_score: Fraction | None = None
    flags: list[str]
    question: str | None = None
    response: str = ""
    possible: float = 0.0
    tags: list[str] = []
    pass_when: Annotated[str | float, BeforeValidator(_pass_rule)] = "mean"
    level: Annotated[float, Field(gt=0, lt=1)] = 0.95
    samples: list[SampleModel] | None = None  # the item is recomputed from these
    probe: list[ProbeRecordModel] = []  # written when the item was probed
    ranked: bool = True  # false: an assert_rubric call without subject= (written only then)
    # The holistic grader's 0-100 reply; null for other graders. With samples, their mean.
    llm_raw_score: RawScore | None = None
    # [low, high]: SKIPPED because the judge (set in the ini or the environment) had no key and
    # could still pass or fail the case: its score at worst and at best; null otherwise.
    skipped_bounds: Annotated[list[Fraction], Field(min_length=2, max_length=2)] | None = None
    # Checked (n_samples against the samples), then recomputed from the samples:
    n_samples: Annotated[Annotated[int, Field(ge=1)] | None, AfterValidator(_counted)] = None
    pass_rate: Fraction | None = None
    pass_rate_ci: list[Fraction] | None = None


class LeaderboardRowModel(_Part):
    """One entry of ``leaderboard``. Read back it is only checked: it is recomputed."""

    sources: ClassVar[Mapping[str, str]] = {
        "tool_calls": "traced.tool_calls",
        "latency_s_p50": "traced.latency_s_p50",
        "cost_usd": "traced.cost_usd",
    }

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
    latency_s_p50: Seconds | None = None  # a median: never past the largest latency
    cost_usd: Annotated[float, Field(ge=0)] | None = None  # a sum: past one answer's bound

    @classmethod
    def trimmed(cls, data: dict[str, Any], described: Any) -> dict[str, Any]:
        if described.traced is None:
            del data["tool_calls"], data["latency_s_p50"], data["cost_usd"]
        return data


class BreakdownModel(_Part):
    """One entry of ``breakdowns``. Read back it is only checked: it is recomputed."""

    subject: str
    group: Literal["suite", "tag"]
    key: str
    score: Fraction
    ci: list[Fraction] | None = None
    n: Count


class PairModel(_Part):
    """One entry of ``pairwise``: two subjects over the cases they share (``a`` ranked above
    ``b``). Read back it is only checked: it is recomputed."""

    a: str
    b: str
    shared: Count
    wins: Count
    losses: Count
    ties: Count
    diff: Annotated[float, Field(ge=-1, le=1)] | None  # the mean of a - b; null: none shared
    ci: list[Annotated[float, Field(ge=-1, le=1)]] | None  # its paired interval


class StyleProbeModel(_Part):
    """One judge's entry of ``judge_audit.style_probe``: checked, then recomputed from the
    results' ``probe`` records."""

    sources: ClassVar[Mapping[str, str]] = {"style_sensitivity": "sensitivity"}

    judge: str
    probed: Count
    flips_confident: Count
    flips_hedged: Count
    style_sensitivity: Fraction


class ProbeFiguresModel(_Part):
    """One judge's and kind's entry of ``judge_audit.probes``: checked, then recomputed from
    the results' ``probe`` records."""

    judge: str
    kind: Literal["tone", "length", "position"]
    probed: Count
    flips: Count
    sensitivity: Fraction


class CalibrationModel(_Part):
    """One suite's entry of ``judge_audit.calibration``: measured by the run, kept by merge."""

    suite: str
    judge: str
    n: Count
    accuracy: Fraction | None = None
    kappa: Annotated[float, Field(ge=-1, le=1)] | None = None
    tpr: Fraction | None = None
    tnr: Fraction | None = None
    errors: Count = 0


class EvidenceAuditModel(_Part):
    checked: Count
    unsupported: Count


class PanelPairModel(_Part):
    """One pair of a panel's judges."""

    judges: Annotated[list[str], Field(min_length=2, max_length=2)]
    n: Count
    kappa: Annotated[float, Field(ge=-1, le=1)] | None


class PanelModel(_Part):
    """``judge_audit.panel``: how a panel's judges agreed (``{}`` without a panel)."""

    judges: list[str]
    n: Count
    fleiss_kappa: Annotated[float, Field(ge=-1, le=1)] | None
    pairs: list[PanelPairModel]
    unstable: Count


def _no_panel(value: Any) -> Any:
    """A document without a panel writes ``{}``: read as none."""
    return None if value == {} else value


class JudgeAuditModel(_Part):
    """``judge_audit``. Read back it is only checked: it is recomputed from the results."""

    calibration: list[CalibrationModel] = []
    style_probe: list[StyleProbeModel] = []
    probes: list[ProbeFiguresModel] = []  # per judge and kind (tone too); older documents: none
    panel: Annotated[PanelModel | None, BeforeValidator(_no_panel)] = None
    evidence: EvidenceAuditModel = EvidenceAuditModel(checked=0, unsupported=0)

    @classmethod
    def trimmed(cls, data: dict[str, Any], described: Any) -> dict[str, Any]:
        return {**data, "panel": data["panel"] or {}}  # no panel: written {}, as it always was


def _iso_time(text: str) -> str:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("expected an ISO 8601 time, e.g. 2026-12-04T09:30:00Z") from None
    return text


class RunJudgeModel(_Part):
    """One entry of ``run.judges``: a user's own judge has its name only (the rest null)."""

    name: str
    provider: str | None
    model: str | None
    url: str | None  # read back without userinfo or query string, whatever it holds


class RunCacheModel(_Part):
    """``run.cache``: the judge cache's mode, and its hits and misses over the run."""

    sources: ClassVar[Mapping[str, str]] = {
        "mode": "cache_mode",
        "hits": "cache_hits",
        "misses": "cache_misses",
    }

    mode: str
    hits: Count
    misses: Count


class RunModel(_Part):
    """``run``: which run wrote the document. Older documents have none (null or absent);
    ``merge`` combines the shards' (see ``_report.run.merged``)."""

    sources: ClassVar[Mapping[str, str]] = {"cache": ""}

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


class GateModel(_Part):
    """One entry of ``gates``: a gate's verdict on a subject, a case, a judge or a suite.
    Kept by ``merge`` for the gates it does not apply itself."""

    gate: str
    subject: str | None
    nodeid: str | None
    failed: bool
    message: str


class DocumentModel(_Part):
    """The whole ``--rubric-json`` document."""

    sources: ClassVar[Mapping[str, str]] = {"confidence": "level", "gates": "gates.entries"}

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


# Writing ------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def _writer(annotation: Any) -> Callable[[Any], Any] | None:
    """How a value of a field typed ``annotation`` is written: a part as its model writes
    it, a list item by item, a mapping as a dict, a verdict as its name; None: as it is.
    No value is validated or converted on the way out: a run writes what it computed."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _writer(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        one = _writer(options[0]) if len(options) == 1 else _plain
        return None if one is None else lambda value: None if value is None else one(value)
    if origin is list:
        item = _writer(get_args(annotation)[0])
        return list if item is None else lambda value: [item(v) for v in value]
    if origin is dict:
        return dict
    if origin is Literal:
        return _plain  # a Verdict, a str enum, is written as its name
    if isinstance(annotation, type) and issubclass(annotation, _Part):
        return functools.partial(written, annotation)
    return None


def _getter(path: str) -> Callable[[Any], Any]:
    """What reads the value at a dotted ``path`` or ``""`` (a part's ``sources``)."""
    if not path:
        return lambda described: described
    first, _, rest = path.partition(".")
    then = _getter(rest)
    return lambda described: None if (v := getattr(described, first)) is None else then(v)


@dataclass(frozen=True, slots=True)
class _Plan:
    """How a run writes one part: every field read at once, then the few that need it
    converted or read from elsewhere (a result has 30 fields, and there may be 200,000)."""

    names: tuple[str, ...]  # every field, in the model's order
    direct: tuple[str, ...]  # the fields read from the attribute of their name
    attributes: Callable[[Any], tuple[Any, ...]]
    elsewhere: tuple[tuple[str, Callable[[Any], Any]], ...]
    converted: tuple[tuple[str, Callable[[Any], Any]], ...]


@functools.cache
def _plan(model: type[_Part]) -> _Plan:
    fields = [name for name in model.model_fields if name != "version"]
    sources = {name: model.sources.get(name, name) for name in fields}
    direct = tuple(name for name in fields if sources[name] == name)
    writers = {name: _writer(model.model_fields[name].annotation) for name in fields}
    # attrgetter of one name gives the value, not a tuple; of none, it cannot be made.
    attributes: Callable[[Any], tuple[Any, ...]]
    attributes = lambda d: tuple(getattr(d, n) for n in direct)  # noqa: E731
    if len(direct) > 1:
        attributes = operator.attrgetter(*direct)
    return _Plan(
        names=tuple(fields),
        direct=direct,
        attributes=attributes,
        elsewhere=tuple((name, _getter(sources[name])) for name in fields if sources[name] != name),
        converted=tuple((name, w) for name, w in writers.items() if w is not None),
    )


def written(model: type[_Part], described: Any) -> dict[str, Any]:
    """``described`` (a result, a row, the run, ...) as the part ``model`` of the document."""
    plan = _plan(model)
    data = dict.fromkeys(plan.names)  # the model's order
    data.update(zip(plan.direct, plan.attributes(described), strict=True))
    for name, get in plan.elsewhere:
        data[name] = get(described)
    for name, write in plan.converted:
        data[name] = write(data[name])
    data = model.trimmed(data, described)
    for name, value in model.left_out.items():
        if data[name] == value:
            del data[name]
    return data


def document(report: SessionReport) -> dict[str, Any]:
    """The document of ``report``: which run it is, its results, its leaderboard, whether
    the ranks disagree, and every gate's outcome."""
    return {"version": VERSION, **written(DocumentModel, report)}


def json_chunks(report: SessionReport) -> Iterator[str]:
    """The document's text, a result at a time: what ``--rubric-json`` writes, byte for byte
    ``json.dumps(outgoing_data(document), indent=2)``, without holding every result's dict
    and the whole text at once (at 200,000 results those were most of the run's memory)."""
    from .._guards.outgoing import outgoing_strings  # the boundary every output passes

    whole = document(replace(report, results=()))  # every part but the results, in order
    keys = list(whole)
    at = keys.index("results")
    head = {k: whole[k] for k in keys[:at]}
    tail = {k: whole[k] for k in keys[at + 1 :]}
    yield indented(head, outgoing_strings())[:-2] + ',\n  "results": ['
    for i, result in enumerate(report.results):
        text = indented(result_data(result), outgoing_strings(), "\n    ")
        yield ("," if i else "") + "\n    " + text
    end = "\n  ]" if report.results else "]"
    yield end + ",\n" + indented(tail, outgoing_strings())[2:] + "\n"


def boundary(text: str) -> str:
    r"""The JSON's outgoing boundary: none, as every string passed it in :func:`json_chunks`.
    Again, an escaped ``\x07`` could join the URL before it, and cutting the URL's query
    could take the backslash that escapes a quote: the text would no longer be JSON."""
    return text


# How json writes the floats that are not numbers.
_NOT_NUMBERS = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
_KINDS = frozenset({str, dict, list, tuple, bool, int, float, type(None)})
_BASES = (str, dict, list, tuple, int, float)  # what json writes a subclass of as its base


def indented(value: Any, text: Mapping[str, str], indent: str = "\n") -> str:
    """``json.dumps(value, indent=2)`` with ``text`` applied to every string first, keys
    included, byte for byte; but the strings are written by json's C function, where its
    indented writer is pure Python (a result with a trace holds hundreds of values, and
    took twice as long). ``indent`` is a new line and ``value``'s indentation."""
    kind = type(value)
    if kind not in _KINDS:  # an enum member, say
        kind = next((base for base in _BASES if isinstance(value, base)), kind)
    if kind is str:
        return encode_basestring_ascii(text[value])
    inner = indent + "  "
    if kind is dict:
        items = [
            (encode_basestring_ascii(text[k]) if type(k) is str else _key(k, text))
            + ": "
            + indented(v, text, inner)
            for k, v in value.items()
        ]
    elif kind is list or kind is tuple:
        items = [indented(v, text, inner) for v in value]
    elif value is None:
        return "null"
    elif kind is bool:
        return "true" if value else "false"
    elif kind is int:
        return int.__repr__(value)
    elif kind is float:
        written = float.__repr__(value)
        return _NOT_NUMBERS.get(written, written)
    else:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
    brackets = "{}" if kind is dict else "[]"
    if not items:
        return brackets
    return brackets[0] + inner + ("," + inner).join(items) + indent + brackets[1]


def _key(key: object, text: Mapping[str, str]) -> str:
    """json's text for a key that is not a plain string."""
    if isinstance(key, str):
        return encode_basestring_ascii(text[key])
    if key is not None and not isinstance(key, int | float):
        raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
    return f'"{indented(key, text)}"'


def result_data(result: CaseResult) -> dict[str, Any]:
    """One entry of ``results``: also what carries a result from an xdist worker."""
    return written(ResultModel, result)


# Reading ------------------------------------------------------------------------------


@functools.cache
def _results() -> TypeAdapter[CaseResult]:
    return TypeAdapter(CaseResult)  # lax: the data is a run's own, or already validated


def _votes(criteria: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A criterion's ``samples`` are the judge's votes, the ``votes`` of its dataclass."""
    return [{**c, "votes": c.get("samples")} for c in criteria]


def result_of(data: Mapping[str, Any]) -> CaseResult:
    """The result :func:`result_data` wrote, as it was: the way a result comes back from an
    xdist worker of this run (a document read back is recomputed: :func:`parse_document`).
    Every dataclass is read by pydantic from the fields of the same names."""
    samples = [{**s, "criteria": _votes(s["criteria"])} for s in data.get("samples") or ()]
    read = _results().validate_python(
        {**data, "criteria": _votes(data["criteria"]), "samples": samples}
    )
    # One sample is the result itself: kept as no samples, the way it was graded.
    first = read.samples[0].trace if read.samples else None
    return replace(read, samples=read.samples if len(samples) > 1 else (), trace=first)


def _recomputed(data: Mapping[str, Any]) -> CaseResult:
    """A result read back from a document: its score, its samples' and its verdict
    recomputed from the criteria, never taken from the document."""
    read = result_of(data)
    min_score = read.min_score
    samples = [
        replace(sample, score=graded.score, raw_score=graded.raw_score, passed=verdict)
        for sample in read.samples
        for graded in [score(sample.criteria)]
        for verdict in [passes(sample.criteria, case_score=graded.score, min_score=min_score)]
    ]
    graded = score(read.criteria)
    if samples:
        item_score = mean([s.score for s in samples])
        raw_score = mean([s.raw_score for s in samples])
        criteria = samples[0].criteria
        llm_raw_score = mean_raw_score(s.llm_raw_score for s in samples)
    else:
        item_score, raw_score, criteria = graded.score, graded.raw_score, read.criteria
        llm_raw_score = read.llm_raw_score
    verdict = passes(criteria, case_score=graded.score, min_score=min_score)
    passed = item_passes(
        samples or [Sample(graded.score, graded.raw_score, verdict, criteria)],
        pass_when=read.pass_when,
        min_score=min_score,
        score=item_score,
    )
    return replace(
        read,
        score=item_score,
        raw_score=raw_score,
        # Undecided without the judge (see _grade.bounds): never read back as a pass.
        passed=passed and read.skipped_bounds is None,
        criteria=criteria,
        possible=graded.positive,
        samples=tuple(samples),
        llm_raw_score=llm_raw_score,
    )


@dataclass(slots=True)
class Document:
    """A document read back: its results, and what was recomputed rather than trusted."""

    results: list[CaseResult]
    recomputed: list[str] = field(default_factory=list)  # one line per ``passed`` overruled
    calibration: list[Calibration] = field(default_factory=list)  # judge_audit's, as read
    run: RunInfo | None = None  # None: a document of an older version, which had no ``run``
    gates: list[GateEntry] = field(default_factory=list)  # the gates' outcomes, as read


# How many bad fields one error lists: enough to fix a hand-edited file in one go,
# few enough that a file of garbage does not flood the terminal.
_SHOWN_ERRORS = 5
# A wrong value is quoted so the user can find it, never at full length: it may be
# a megabyte of anything.
_QUOTED = 40


def _not_a_document(name: object, why: str) -> DocumentError:
    return DocumentError(f"{name}: {why}; pass a file written by --rubric-json")


def _where(loc: tuple[int | str, ...]) -> str:
    """``("results", 3, "score")`` as ``results[3].score``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "the document"


def _got(value: Any) -> str:
    """A wrong value as the user wrote it in JSON, cut short and redacted."""
    if isinstance(value, dict | list):
        return "an object" if isinstance(value, dict) else "a list"
    if value is None or isinstance(value, bool):
        return json.dumps(value)  # null, true or false
    return shorten(repr(value), _QUOTED, *known_keys())  # redacted before the cut


_EXPECTED = {
    "float_type": "a number",
    "finite_number": "a finite number",
    "int_type": "a whole number",
    "bool_type": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "model_type": "an object",
    "dict_type": "an object",
    "literal_error": "one of {expected}",
    "credit_of_verdict": "{expected} with verdict {verdict}",
    "pass_rule": '"mean", "all", "any" or a number from 0 (excluded) to 1',
    "sample_count": "{expected}, the number of samples",
    "greater_than_equal": "at least {ge:g}",
    "less_than_equal": "at most {le:g}",
}


def _problem(error: Any) -> str:
    """One pydantic error as ``where: expected what, got what``; an error inside data kept as
    it was (``metadata``) says where in it (``within``) and what it ``found`` there."""
    kind, ctx = error["type"], error.get("ctx") or {}
    # Keys of the application's data, quoted as values are: cut short and redacted.
    within = tuple(
        p if isinstance(p, int) else shorten(p, _QUOTED, *known_keys())
        for p in ctx.get("within", ())
    )
    where = _where((*error["loc"], *within))
    if kind == "missing":
        return f"{where}: missing"
    got = _got(ctx["found"] if "found" in ctx else error.get("input"))
    if kind not in _EXPECTED:  # a kind this version does not phrase itself: pydantic's own words
        message = str(error["msg"])
        return f"{where}: {message[:1].lower() + message[1:]}, got {got}"
    return f"{where}: expected {_EXPECTED[kind].format_map(ctx)}, got {got}"


def _invalid(name: str, exc: ValidationError) -> DocumentError:
    errors = exc.errors(include_url=False)
    lines = [f"{name}: {_problem(e)}" for e in errors[:_SHOWN_ERRORS]]
    if len(errors) > _SHOWN_ERRORS:
        lines.append(f"{name}: ... and {len(errors) - _SHOWN_ERRORS} more")
    lines.append(
        f"{name} is not a valid --rubric-json document; write it again with --rubric-json "
        "(or fix the fields above)"
    )
    return DocumentError("\n".join(lines))


def parse_document(text: str, *, name: str) -> Document:
    """The results of a ``--rubric-json`` document's ``text``; ``name`` (the file) is in
    every error. Raises :class:`DocumentError`, and nothing else, for any text."""
    try:
        data = json.loads(text, object_pairs_hook=unique_keys)
    except RepeatedKey as exc:
        why = f"the key {_got(exc.key)} appears twice in one object"
        raise _not_a_document(name, why) from None
    except RecursionError:
        raise _not_a_document(name, "nested too deeply to be a --rubric-json document") from None
    except ValueError as exc:
        raise _not_a_document(name, f"not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise _not_a_document(name, 'not a --rubric-json document (no "results" list)')
    version = data.get("version")
    if type(version) is not int or version != VERSION:  # true == 1 in Python, not here
        what = f"version {_got(version)} is not {VERSION}" if "version" in data else "no version"
        raise DocumentError(f"{name}: {what}; write it again with this pytest-rubric")
    try:  # validated, every default filled in, unknown fields left out
        read = DocumentModel.model_validate(data).model_dump()
    except ValidationError as exc:
        raise _invalid(name, exc) from None
    results, recomputed = [], []
    for index, entry in enumerate(read["results"]):
        result = _recomputed(entry)
        if not math.isclose(entry["score"], result.score, abs_tol=1e-9):
            recomputed.append(
                f"{name}: results[{index}] ({entry['nodeid']}) says score {entry['score']:.4g}, "
                f"but its criteria give {result.score:.4g}; counted as {result.score:.4g}"
            )
        if entry["passed"] and not result.passed:
            reasons = result.failure_reasons()
            why = shorten(reasons[0], _QUOTED * 3) if reasons else "nothing weighted was graded"
            recomputed.append(
                f"{name}: results[{index}] ({entry['nodeid']}) says passed, but its criteria do "
                f"not: {why}; counted as not passed"
            )
        results.append(result)
    audit = read["judge_audit"]
    # The models name the dataclasses' fields, but for the cache's, a part of its own.
    calibration = [Calibration(**c) for c in (audit["calibration"] if audit else ())]
    if (run := read["run"]) is not None:
        run.update({f"cache_{k}": v for k, v in run.pop("cache").items()})
        run = TypeAdapter(RunInfo).validate_python(run)  # its judges too
    # A pass of a baseline gate is a note: the document holds no more than the contract's five
    # fields, so `merge` prints a subject's "no drop" beside the drops and flips within noise.
    gates = [
        GateEntry(**g, quiet=not g["failed"] and not g["gate"].startswith("baseline-"))
        for g in read["gates"]
    ]
    return Document(results, recomputed, calibration, run=run, gates=gates)


def load_document(path: Path) -> Document:
    """A ``--rubric-json`` file, validated field by field; its leaderboard is recomputed and
    its ``passed`` verdicts too, neither is trusted."""
    if path.exists() and not path.is_file():
        # A directory, a FIFO or a device: reading it would fail, or never end.
        raise _not_a_document(path, "not a regular file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise DocumentError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        why = f"not JSON (not UTF-8 text: {exc.reason} at byte {exc.start})"
        raise _not_a_document(path, why) from None
    return parse_document(text, name=str(path))
