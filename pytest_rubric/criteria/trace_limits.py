"""``trace_limits``: MET when every limit given holds of the trace (tool calls, model calls,
latency, tokens, cost); a limit whose figure the trace lacks is ERROR, never MET."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from .._results import Outcome
from .calls import NO_TRACE
from .check import Answer, Check, CheckContext, error, met, unmet
from .model import Count, CriterionModel, FieldError, NonNegative

_LIMITS = ("max_tool_calls", "max_llm_calls", "max_latency_s", "max_tokens", "max_cost_usd")


class TraceLimits(CriterionModel):
    """MET when every limit given holds; ERROR when the trace lacks a figure one needs."""

    type: Literal["trace_limits"] = "trace_limits"
    max_tool_calls: Count | None = None
    max_llm_calls: Count | None = None
    max_latency_s: NonNegative | None = None
    max_tokens: Count | None = None
    max_cost_usd: NonNegative | None = None

    @model_validator(mode="after")
    def _some_limit(self) -> TraceLimits:
        if all(getattr(self, name) is None for name in _LIMITS):
            raise FieldError("max_tool_calls", f"give at least one of {', '.join(_LIMITS)}")
        return self

    def compile(self, context: CheckContext) -> Check[TraceLimits]:
        return _TraceLimitsCheck(self)


class _TraceLimitsCheck(Check[TraceLimits]):
    __slots__ = ()

    def run(self, answer: Answer, case: object) -> Outcome:
        trace = answer.trace
        if trace is None:
            return error(NO_TRACE)
        calls_known = bool(trace.tool_calls) or trace.llm_calls is not None
        # Each limit's figure in the trace (None: the trace lacks it) and where it comes from.
        figures: dict[str, tuple[float | int | None, str]] = {
            "max_tool_calls": (len(trace.tool_calls) if calls_known else None, "tool calls"),
            "max_llm_calls": (trace.llm_calls, "model calls"),
            "max_latency_s": (trace.latency_s, "latency_s"),
            "max_tokens": (trace.usage.tokens, "tokens (usage.input_tokens + output_tokens)"),
            "max_cost_usd": (trace.usage.cost_usd, "cost (usage.cost_usd)"),
        }
        held, broken, missing = [], [], []
        for name in _LIMITS:
            limit = getattr(self.c, name)
            if limit is None:
                continue
            figure, what = figures[name]
            if figure is None:
                missing.append(f"{name}: the trace has no {what}")
            elif figure > limit:
                broken.append(f"{what} {figure:g} > {name} {limit:g}")
            else:
                held.append(f"{what} {figure:g} <= {limit:g}")
        if missing:
            return error("; ".join(missing) + "; a limit on a figure the trace lacks is never MET")
        return unmet("; ".join(broken)) if broken else met("; ".join(held))
