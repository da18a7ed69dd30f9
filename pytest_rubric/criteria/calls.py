"""What the trace criteria share: the trace or context a check needs (ERROR without one:
what was not recorded cannot be MET), and tool calls matched by name, ``arguments`` (a JSON
Schema on the bounded validator) and success.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._guards.engines import CheckTimeout, Deadline, running
from .._guards.schemas import schema_validator
from .._results import Outcome
from .._trace import ToolCall, Trace
from .check import Answer, error
from .json_text import NOT_FINITE

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

# The last advice is true whether --rubric-otel is on or not.
NO_TRACE = (
    'the answer has no trace to check: return a mapping with "messages" (or "context", '
    '"usage") from the target, add those fields to its responses line, or run with '
    "--rubric-otel (if it is on, the target's call wrote no span of the GenAI or OpenInference "
    "conventions: instrument the application)"
)
NO_CALLS = (
    "the answer's trace does not show its calls (no messages, no tool or model span): return "
    '"messages" from the target, or run with --rubric-otel (if it is on, instrument the '
    "model client and give each tool a span)"
)
NO_TOOL_SPANS = (
    "the spans show no tool-execution span and no model call that ran none (no model span, "
    "or one given a tool's result): which calls were made is not known; instrument the model "
    "client and give each tool a span (gen_ai.operation.name execute_tool, or an OpenInference "
    'TOOL span), or return "messages" from the target'
)
NO_CONTEXT = (
    'the answer has no context to check: return "context" (the retrieved passages) from the '
    "target, add it to its responses line, or give the case a fixed `context:`"
)


def calls_of(answer: Answer) -> tuple[ToolCall, ...] | Outcome:
    """The answer's tool calls, or ERROR saying why they are not known."""
    trace = answer.trace
    if trace is None:
        return error(NO_TRACE)
    if not trace.tool_calls and trace.llm_calls is None:
        return error(NO_TOOL_SPANS if trace.source == "otel" else NO_CALLS)
    return trace.tool_calls


def context_of(answer: Answer) -> Trace | Outcome:
    """The answer's trace when it has a context (an empty one when its source said nothing
    was retrieved), or ERROR saying there is none."""
    trace = answer.trace
    if trace is None or not (trace.context or trace.context_known):
        return error(NO_CONTEXT)
    return trace


class CallMatcher:
    """Calls of one tool whose arguments fit a schema (and, with ``ok``, that succeeded)."""

    __slots__ = ("name", "ok", "timeout", "validator")

    def __init__(
        self, name: str, schema: dict[str, Any] | bool | None, *, ok: bool, timeout: float
    ) -> None:
        self.name = name
        self.ok = ok
        self.timeout = timeout
        # Compiled once per criterion; the schema was checked when the rubric loaded.
        self.validator: Validator | None = None if schema is None else schema_validator(schema)

    def matching(self, calls: tuple[ToolCall, ...]) -> list[ToolCall] | Outcome:
        """The calls that match, or ERROR when an arguments check could not finish."""
        named = [c for c in calls if c.name == self.name and (c.ok or not self.ok)]
        if self.validator is None or not named:
            return named
        validator = self.validator
        try:
            with running(Deadline(self.timeout)):
                return [
                    c
                    for c in named
                    if isinstance(c.arguments, dict) and validator.is_valid(c.arguments)
                ]
        except CheckTimeout as exc:
            return error(f"the `args` check of {self.name} could not finish: {exc}")
        except (OverflowError, RecursionError) as exc:
            return error(
                f"the `args` check of {self.name} could not finish ({type(exc).__name__}): the "
                "arguments are too deep or their numbers too large to check"
            )

    def unfit(self, calls: tuple[ToolCall, ...]) -> str:
        """Why calls of the tool fit no ``args``: kept as text (see ``_load.traces``), their
        arguments hold a number that is not finite; ``""`` when none does."""
        n = sum(c.name == self.name and isinstance(c.arguments, str) for c in calls)
        shown = n and self.validator is not None
        return f"; the args of {n} call(s) of {self.name}: {NOT_FINITE}" if shown else ""
