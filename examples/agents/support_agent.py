"""A support agent with tools, for the bundled example (``make demo``).

The agent keeps its conversation in OpenAI's chat format, as an agent written with the
``openai`` SDK does: assistant messages that call tools (``tool_calls``), then ``tool``
messages with the results. So the example runs offline, a scripted stand-in decides each
assistant turn where a real agent would ask a model. Two agents share the tools:

* ``careful`` looks the order up, issues the refund, then says so;
* ``hasty`` looks the order up and *says* the refund has been issued without calling
  ``issue_refund`` at all, or after a call that failed. Its answers read exactly like
  careful's; only its trace tells them apart.

The targets ``careful`` and ``hasty`` return ``{"answer", "messages", "usage"}``:
pytest-rubric reads the tool calls out of the messages and grades them (see
``agent.rubric.yaml``). ``traced`` is ``careful`` written as an instrumented service: it
returns the answer's text only, and records its model turns and tool runs as OpenTelemetry
spans (GenAI conventions) through the OpenTelemetry API, as an instrumented agent framework
does. ``--rubric-otel`` reads its trace from those spans, with no change to it (``make demo``
passes the flag); without the flag its trace criteria are ERRORs: there is nothing to read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

ORDERS = {
    "1001": {"status": "delivered", "total": 40.0, "item": "kettle"},
    "1002": {"status": "shipped", "total": 25.0, "item": "mug", "arrives": "Friday"},
}
PRICE_PER_TOKEN = 0.000002  # what the stand-in model would cost, in USD


def lookup_order(order_id: str) -> dict[str, Any]:
    if order_id not in ORDERS:
        return {"error": f"no order {order_id}"}
    return ORDERS[order_id]


def issue_refund(order_id: str, amount: float) -> dict[str, Any]:
    if order_id not in ORDERS:
        return {"error": f"cannot refund unknown order {order_id}"}
    return {"refunded": amount, "order_id": order_id}


TOOLS = {"lookup_order": lookup_order, "issue_refund": issue_refund}


def _call(index: int, name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{index}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


def _say(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def _next_turn(messages: list[dict[str, Any]], *, careful: bool) -> dict[str, Any]:
    """The stand-in for the model: the next assistant turn, from the conversation so far."""
    question = messages[1]["content"]
    order = (re.findall(r"\d{4}", question) or ["0000"])[0]
    results = {m["tool_call_id"]: json.loads(m["content"]) for m in messages if m["role"] == "tool"}
    called = [c["function"]["name"] for m in messages for c in m.get("tool_calls") or ()]
    wants_refund = "refund" in question.lower()
    if not called:
        if not careful and wants_refund and order not in ORDERS:
            return _call(1, "issue_refund", order_id=order, amount=0.0)  # no lookup first
        return _call(1, "lookup_order", order_id=order)
    found = results.get("call_1", {})
    if wants_refund and careful and "error" not in found and "issue_refund" not in called:
        return _call(2, "issue_refund", order_id=order, amount=found["total"])
    if careful and "error" in found:
        return _say(f"I could not find order {order}. Could you check the number?")
    if wants_refund:
        total = found.get("total", 0.0)
        return _say(f"Your refund of ${total:.2f} for order {order} has been issued.")
    return _say(f"Order {order} ({found['item']}) has shipped and arrives {found['arrives']}.")


class _Untraced:
    """Spans that record nothing, where the OpenTelemetry API is not installed."""

    @contextmanager
    def start_as_current_span(self, name: str, *, attributes: Any = None) -> Iterator[Any]:
        yield None


def _tracer(traced: bool) -> Any:
    if traced:
        try:
            from opentelemetry import trace
        except ImportError:
            pass
        else:
            return trace.get_tracer("support_agent")
    return _Untraced()


def run(question: str, *, careful: bool, traced: bool = False) -> list[dict[str, Any]]:
    """The agent loop: ask for a turn, run the tools it calls, until it answers. Traced,
    each turn is a ``chat`` span and each tool run an ``execute_tool`` span."""
    tracer = _tracer(traced)
    messages = [
        {"role": "system", "content": "You are a support agent for a small shop."},
        {"role": "user", "content": question},
    ]
    for _ in range(6):
        chat = {"gen_ai.operation.name": "chat"}
        with tracer.start_as_current_span("chat stand-in", attributes=chat):
            turn = _next_turn(messages, careful=careful)
        messages.append(turn)
        if not turn.get("tool_calls"):
            break
        for call in turn["tool_calls"]:
            function = call["function"]
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": function["name"],
                "gen_ai.tool.call.arguments": function["arguments"],
            }
            span = f"execute_tool {function['name']}"
            with tracer.start_as_current_span(span, attributes=attributes):
                result = TOOLS[function["name"]](**json.loads(function["arguments"]))
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
            )
    return messages


def _graded(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """What a target returns: the answer, the conversation, and what it cost."""
    read = sum(len(json.dumps(m)) for m in messages) // 4
    written = sum(len(m.get("content") or "") for m in messages if m["role"] == "assistant") // 4
    return {
        "answer": messages[-1]["content"],
        "messages": messages,
        "usage": {
            "input_tokens": read,
            "output_tokens": written,
            "cost_usd": round((read + written) * PRICE_PER_TOKEN, 6),
        },
    }


def careful(question: str) -> dict[str, Any]:
    return _graded(run(question, careful=True))


def hasty(question: str) -> dict[str, Any]:
    return _graded(run(question, careful=False))


def traced(question: str) -> str:
    return str(run(question, careful=True, traced=True)[-1]["content"])
