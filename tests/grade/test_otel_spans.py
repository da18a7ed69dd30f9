"""``--rubric-otel``, the span side: which spans of a target call are read, and how
(docs/guides/otel.md).

The spans are real SDK spans, made by a tracer of a private ``TracerProvider`` (the global
one is left to the end-to-end tests, which run in their own process); what real
instrumentations emit is in ``test_otel_agents.py``.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry import trace as trace_api
from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import Status, StatusCode

from pytest_rubric._errors import SpansUnreadable
from pytest_rubric._otel import SPAN_NAME, SpanCapture
from pytest_rubric._report.document import TraceModel, written
from pytest_rubric._trace import MAX_TOKENS, Passage, ToolCall, Trace, Usage


@pytest.fixture
def provider() -> Iterator[TracerProvider]:
    provider = TracerProvider()
    yield provider
    provider.shutdown()


@pytest.fixture
def spans(provider: TracerProvider) -> Iterator[SpanCapture]:
    capture = SpanCapture(provider=provider)
    yield capture
    capture.close()


@pytest.fixture
def tracer(provider: TracerProvider) -> trace_api.Tracer:
    return provider.get_tracer("app")


def span(tracer: trace_api.Tracer, name: str, error: bool = False, **attributes: Any) -> None:
    """One ended span with ``attributes`` (dots written as ``__``), child of the current one."""
    with tracer.start_as_current_span(name) as made:
        made.set_attributes({k.replace("__", "."): v for k, v in attributes.items()})
        if error:
            made.set_status(Status(StatusCode.ERROR, "boom"))


def chat(tracer: trace_api.Tracer, **attributes: Any) -> None:
    span(tracer, "chat m", gen_ai__operation__name="chat", gen_ai__request__model="m", **attributes)


def execute_tool(tracer: trace_api.Tracer, tool: str, arguments: Any, **attributes: Any) -> None:
    span(
        tracer,
        f"execute_tool {tool}",
        gen_ai__operation__name="execute_tool",
        gen_ai__tool__name=tool,
        gen_ai__tool__call__arguments=arguments,
        **attributes,
    )


def read(spans: SpanCapture, make: Any) -> Trace | None:
    with spans.capture() as got:
        make()
    return got.trace()


# --- the GenAI semantic conventions ------------------------------------------------------------


@pytest.mark.parametrize(
    "fed",
    [
        {
            "gen_ai__input__messages": '[{"role": "tool", "parts": [{"type": "tool_call_response"}]}]'
        },
        {"llm__input_messages__2__message__role": "tool"},
        {"gen_ai__prompt__2__role": "tool"},
    ],
    ids=["genai", "openinference", "openllmetry"],
)
def test_a_model_given_a_tools_result_that_ran_in_no_span_leaves_the_calls_unknown(
    spans: SpanCapture, tracer: trace_api.Tracer, fed: dict[str, Any]
) -> None:
    """Only the model is instrumented: the second model call was given a tool's result, so a
    tool ran, without a span. "No call made" would pass `times: 0` and fail a claim the
    agent did back: the calls are unknown, and the call criteria are ERROR saying what to
    instrument."""
    from pytest_rubric import Grader, Rubric
    from pytest_rubric.criteria.check import Answer

    asked = {"gen_ai__response__finish_reasons": ("tool_calls",)}
    trace = read(spans, lambda: (chat(tracer, **asked), chat(tracer, **fed)))
    assert trace is not None and trace.tool_calls == () and trace.llm_calls is None
    grader = Grader()
    never = {"id": "never", "type": "tool_called", "tool": "refund", "times": 0}
    compiled = grader.compile(Rubric(criteria=[never]))
    (result,) = grader.grade(Answer("Refunded.", trace), compiled).criteria
    assert result.verdict.value == "ERROR"
    assert "no tool-execution span" in result.reason
    # A model that only asked for a tool (a forced call for structured output): nothing ran,
    # and that is known.
    forced = read(spans, lambda: chat(tracer, **asked))
    assert forced is not None and forced.tool_calls == () and forced.llm_calls == 1


def test_spans_with_no_model_span_leave_the_model_calls_unknown(
    spans: SpanCapture, tracer: trace_api.Tracer
) -> None:
    """No model span is a model client not instrumented, not a model never called: the count
    is unknown, as a token count no span gives. Tool spans alone are the calls; a retriever's
    span alone shows neither, so the calls are unknown too."""
    tools = read(spans, lambda: execute_tool(tracer, "refund", '{"order_id": "A1"}'))
    assert tools is not None and tools.llm_calls is None
    assert tools.tool_calls == (ToolCall("refund", {"order_id": "A1"}, True),)
    retrieved = read(spans, lambda: span(tracer, "retrieve", openinference__span__kind="RETRIEVER"))
    assert retrieved is not None and retrieved.context_known
    assert (retrieved.tool_calls, retrieved.llm_calls) == ((), None)
    embedded = read(spans, lambda: span(tracer, "embed", gen_ai__operation__name="embeddings"))
    assert embedded is not None and embedded.llm_calls is None  # tokens, not a model call


def test_genai_tool_executions_are_the_calls_and_chat_spans_the_model_calls(
    spans: SpanCapture, tracer: trace_api.Tracer
) -> None:
    def agent() -> None:
        # The model asks for the refund: recorded on its chat span, not a call yet.
        chat(
            tracer,
            gen_ai__usage__input_tokens=100,
            gen_ai__usage__output_tokens=20,
            gen_ai__output__messages=json.dumps(
                [{"role": "assistant", "parts": [{"type": "tool_call", "name": "refund"}]}]
            ),
        )
        execute_tool(
            tracer, "refund", '{"order_id": "A1"}', gen_ai__tool__call__result='{"ok": true}'
        )
        chat(tracer, gen_ai__usage__input_tokens=150, gen_ai__usage__output_tokens=30)

    trace = read(spans, agent)
    assert trace is not None
    assert trace.source == "otel"
    assert trace.tool_calls == (
        ToolCall(name="refund", arguments={"order_id": "A1"}, ok=True, result='{"ok": true}'),
    )
    assert trace.llm_calls == 2
    assert trace.usage == Usage(input_tokens=250, output_tokens=50, cost_usd=None)
    assert trace.latency_s is not None and trace.latency_s >= 0


def test_a_tool_span_with_an_error_status_or_an_error_type_is_a_failed_call(
    spans: SpanCapture, tracer: trace_api.Tracer
) -> None:
    def agent() -> None:
        execute_tool(tracer, "refund", '{"order_id": "A1"}', error=True)
        execute_tool(tracer, "refund", '{"order_id": "A2"}', error__type="TimeoutError")
        execute_tool(tracer, "refund", '{"order_id": "A3"}')

    trace = read(spans, agent)
    assert trace is not None
    assert [(c.arguments["order_id"], c.ok) for c in trace.tool_calls] == [
        ("A1", False),
        ("A2", False),
        ("A3", True),
    ]


def test_missing_attributes_read_as_unknown_never_as_zero(
    spans: SpanCapture, tracer: trace_api.Tracer
) -> None:
    def agent() -> None:
        span(tracer, "execute_tool lookup_order", gen_ai__operation__name="execute_tool")
        chat(tracer, gen_ai__usage__input_tokens=10, gen_ai__usage__output_tokens=5)
        chat(tracer)  # a streamed reply whose usage the instrumentation did not record

    trace = read(spans, agent)
    assert trace is not None
    # The name from the span's name ("execute_tool {gen_ai.tool.name}"), no arguments.
    assert trace.tool_calls == (ToolCall(name="lookup_order", arguments={}, ok=True),)
    assert trace.llm_calls == 2
    # One model call gave no tokens: a sum of the others would understate a token limit.
    assert trace.usage == Usage()


def test_token_counts_past_the_bound_read_as_unknown(
    spans: SpanCapture, tracer: trace_api.Tracer
) -> None:
    """A span's count past ``MAX_TOKENS``, or a total past it, is no count a trace holds (a
    returned one is refused): unknown, as a missing one is."""

    def agent() -> None:
        chat(tracer, gen_ai__usage__input_tokens=10**13, gen_ai__usage__output_tokens=6 * 10**11)
        chat(tracer, gen_ai__usage__input_tokens=1, gen_ai__usage__output_tokens=6 * 10**11)

    trace = read(spans, agent)
    assert trace is not None and trace.usage == Usage()

    def at_the_bound() -> None:
        chat(tracer, gen_ai__usage__input_tokens=MAX_TOKENS - 1, gen_ai__usage__output_tokens=0)
        chat(tracer, gen_ai__usage__input_tokens=1, gen_ai__usage__output_tokens=0)

    trace = read(spans, at_the_bound)
    assert trace is not None and trace.usage == Usage(MAX_TOKENS, 0)


DEEP = '{"a": ' * 100_000 + "1" + "}" * 100_000  # nested past the JSON parser


@pytest.mark.parametrize(
    "arguments", ["order A1", "[1, 2]", '"A1"', "{not json", "", "null", "42", DEEP]
)
def test_arguments_that_are_not_a_json_object_are_no_arguments(
    spans: SpanCapture, tracer: trace_api.Tracer, arguments: str
) -> None:
    trace = read(spans, lambda: execute_tool(tracer, "refund", arguments))
    assert trace is not None
    assert trace.tool_calls == (ToolCall(name="refund", arguments={}, ok=True),)


@pytest.mark.parametrize("arguments", ['{"amount": NaN}', '{"amount": -1e999}'])
def test_arguments_holding_a_number_that_is_not_finite_are_kept_as_their_text(
    spans: SpanCapture, tracer: trace_api.Tracer, arguments: str
) -> None:
    trace = read(spans, lambda: execute_tool(tracer, "refund", arguments))
    assert trace is not None
    assert trace.tool_calls == (ToolCall(name="refund", arguments=arguments, ok=True),)


@given(arguments=st.text(max_size=200) | st.dictionaries(st.text(max_size=5), st.integers()))
def test_any_arguments_read_as_a_json_object(arguments: Any) -> None:
    provider = TracerProvider()
    capture = SpanCapture(provider=provider)
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    trace = read(capture, lambda: execute_tool(provider.get_tracer("t"), "t", text))
    assert trace is not None
    (call,) = trace.tool_calls
    assert isinstance(call.arguments, dict)
    assert call.arguments == (arguments if isinstance(arguments, dict) else call.arguments)
    json.dumps(written(TraceModel, trace))  # the trace travels as JSON


def test_a_tool_result_is_read_whole_and_kept_cut_with_a_count_and_redacted_of_keys(
    spans: SpanCapture, tracer: trace_api.Tracer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The criteria read a span's text whole, as a returned trace's (a fact past 2,000
    characters is still found); the result keeps it redacted and cut, with the true count."""
    from pytest_rubric._grade.grader import Grader

    key = "sk-live-0123456789abcdefghij"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    result = f"token {key} " + "x" * 5_000
    trace = read(spans, lambda: execute_tool(tracer, "t", "{}", gen_ai__tool__call__result=result))
    assert trace is not None
    assert trace.tool_calls[0].result == result
    (kept,) = trace.clipped(Grader()._clip).tool_calls
    assert kept.result is not None
    assert key not in kept.result and key[:12] not in kept.result
    assert kept.result.endswith(f"[{len(result) - 2_000 - len(key) + 3:,} more characters]")
    assert len(kept.result) < 2_100


# --- OpenInference -------------------------------------------------------------------------------


def test_openinference_tool_llm_and_retriever_spans(
    spans: SpanCapture, tracer: trace_api.Tracer
) -> None:
    schema = {"type": "object", "properties": {"order_id": {"type": "string"}}}

    def rag() -> None:
        documents = {
            # Out of order, and ten or more: read by the number N, not as text.
            "retrieval.documents.10.document.id": "faq-11",
            "retrieval.documents.10.document.content": "Shipping takes 3 days.",
            "retrieval.documents.2.document.id": "policy-3",
            "retrieval.documents.2.document.content": "Refunds within 30 days.",
            "retrieval.documents.2.document.metadata": json.dumps({"source": "policy.md"}),
            "retrieval.documents.0.document.content": "No id, only text.",
        }
        span(
            tracer,
            "retrieve",
            openinference__span__kind="RETRIEVER",
            **{k.replace(".", "__"): v for k, v in documents.items()},
        )
        span(
            tracer,
            "lookup_order",
            openinference__span__kind="TOOL",
            tool__name="lookup_order",
            # OpenInference's own tool decorator: the call's arguments are its input, and
            # tool.parameters is the tool's JSON Schema, which is not a call's arguments.
            input__value='{"order_id": "A1"}',
            tool__parameters=json.dumps(schema),
            output__value='{"status": "delivered"}',
        )
        span(
            tracer,
            "refund",
            openinference__span__kind="TOOL",
            tool__name="refund",
            tool__parameters='{"order_id": "A1"}',
            error=True,
        )
        span(
            tracer,
            "only a schema",
            openinference__span__kind="TOOL",
            tool__name="noop",
            tool__parameters=json.dumps(schema),
        )
        span(
            tracer,
            "ChatCompletion",
            openinference__span__kind="LLM",
            llm__token_count__prompt=40,
            llm__token_count__completion=8,
        )

    trace = read(spans, rag)
    assert trace is not None
    assert trace.context == (
        Passage(text="No id, only text."),
        Passage(text="Refunds within 30 days.", id="policy-3", source="policy.md"),
        Passage(text="Shipping takes 3 days.", id="faq-11"),
    )
    assert trace.tool_calls == (
        ToolCall("lookup_order", {"order_id": "A1"}, True, '{"status": "delivered"}'),
        ToolCall("refund", {"order_id": "A1"}, False),
        ToolCall("noop", {}, True),
    )
    assert trace.llm_calls == 1
    assert trace.usage == Usage(input_tokens=40, output_tokens=8)


def test_a_document_index_of_thousands_of_digits_is_read_in_its_place(
    spans: SpanCapture, tracer: trace_api.Tracer
) -> None:
    """N only orders the documents: one past the digits Python converts (4,300) is read last,
    and N written with leading zeros is the same N."""
    nines = "9" * 5000
    documents = {
        f"retrieval.documents.{nines}.document.content": "Read last.",
        "retrieval.documents.010.document.id": "ten",
        "retrieval.documents.10.document.content": "Tenth.",
        "retrieval.documents.2.document.content": "Second.",
    }
    trace = read(
        spans,
        lambda: span(
            tracer,
            "retrieve",
            openinference__span__kind="RETRIEVER",
            **{k.replace(".", "__"): v for k, v in documents.items()},
        ),
    )
    assert trace is not None
    assert trace.context == (
        Passage(text="Second."),
        Passage(text="Tenth.", id="ten"),
        Passage(text="Read last."),
    )


@pytest.mark.parametrize(
    "attributes",
    [
        {"retrieval__documents__0__document__id": 10**5000},
        {"retrieval__documents__0__document__content": 10**5000},
    ],
)
def test_a_span_that_cannot_be_read_is_unreadable_naming_it(
    spans: SpanCapture, tracer: trace_api.Tracer, attributes: dict[str, Any]
) -> None:
    """An int of 5,000 digits where text goes is past what Python prints: the call's spans
    cannot be read, and the error names the span (never a ValueError of the plugin's)."""
    with spans.capture() as got:
        span(tracer, "retrieve", openinference__span__kind="RETRIEVER", **attributes)
    with pytest.raises(SpansUnreadable) as raised:
        got.trace()
    assert str(raised.value).startswith(
        "--rubric-otel: the span 'retrieve' cannot be read (ValueError: Exceeds the limit"
    )
    assert str(raised.value).endswith("; the call's trace is not read")


def test_a_retriever_span_with_no_documents_is_a_context_known_empty(
    spans: SpanCapture, tracer: trace_api.Tracer
) -> None:
    trace = read(spans, lambda: span(tracer, "retrieve", openinference__span__kind="RETRIEVER"))
    assert trace is not None and trace.context == () and trace.context_known
    chat_only = read(spans, lambda: chat(tracer))
    assert chat_only is not None and not chat_only.context_known  # it never said


def test_an_agent_span_totalling_tokens_is_not_counted_twice(
    spans: SpanCapture, tracer: trace_api.Tracer
) -> None:
    def agent() -> None:
        with tracer.start_as_current_span("invoke_agent support") as outer:
            outer.set_attributes(
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.usage.input_tokens": 30,
                    "gen_ai.usage.output_tokens": 6,
                }
            )
            chat(tracer, gen_ai__usage__input_tokens=10, gen_ai__usage__output_tokens=2)
            span(
                tracer,
                "embed",
                gen_ai__operation__name="embeddings",
                gen_ai__usage__input_tokens=5,
                gen_ai__usage__output_tokens=0,
            )
            chat(tracer, gen_ai__usage__input_tokens=15, gen_ai__usage__output_tokens=4)

    trace = read(spans, agent)
    assert trace is not None
    assert trace.llm_calls == 2  # embeddings are tokens, not a model call
    assert trace.usage == Usage(input_tokens=30, output_tokens=6)


def test_an_embeddings_span_without_output_tokens_writes_none(
    spans: SpanCapture, tracer: trace_api.Tracer
) -> None:
    """An embedding produces no tokens: the GenAI conventions and OpenInference record its
    input tokens alone, which must not make the call's output tokens unknown."""

    def rag() -> None:
        span(tracer, "embed", gen_ai__operation__name="embeddings", gen_ai__usage__input_tokens=5)
        span(tracer, "embed", openinference__span__kind="EMBEDDING", llm__token_count__prompt=3)
        chat(tracer, gen_ai__usage__input_tokens=15, gen_ai__usage__output_tokens=4)

    trace = read(spans, rag)
    assert trace is not None
    assert trace.usage == Usage(input_tokens=23, output_tokens=4)


def test_a_call_without_a_span_of_either_convention_has_no_trace(
    spans: SpanCapture, tracer: trace_api.Tracer
) -> None:
    assert read(spans, lambda: span(tracer, "GET /orders", http__method="GET")) is None
    assert read(spans, lambda: None) is None


# --- matched by trace id -------------------------------------------------------------------------


def test_only_the_spans_of_the_calls_own_trace_are_read(
    spans: SpanCapture, tracer: trace_api.Tracer
) -> None:
    execute_tool(tracer, "before", "{}")  # before the call: another trace

    def agent() -> None:
        execute_tool(tracer, "mine", "{}")
        with tracer.start_as_current_span("background", context=Context()):  # a new root
            execute_tool(tracer, "elsewhere", "{}")

    with tracer.start_as_current_span("the caller's own span"):
        # The plugin's span is a root even inside a span of the caller's.
        trace = read(spans, agent)
    assert trace is not None
    assert [c.name for c in trace.tool_calls] == ["mine"]


def test_concurrent_calls_on_threads_each_read_their_own_spans(
    spans: SpanCapture, tracer: trace_api.Tracer
) -> None:
    barrier = threading.Barrier(8)
    traces: dict[int, Trace | None] = {}

    def call(n: int) -> None:
        with spans.capture() as got:
            barrier.wait()  # every call is open before any span ends
            for step in range(n + 1):
                execute_tool(tracer, f"tool{n}", json.dumps({"step": step}))
            barrier.wait()
        traces[n] = got.trace()

    threads = [threading.Thread(target=call, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for n, trace in traces.items():
        assert trace is not None
        assert [(c.name, c.arguments["step"]) for c in trace.tool_calls] == [
            (f"tool{n}", step) for step in range(n + 1)
        ]


def test_concurrent_asyncio_tasks_in_one_loop_each_read_their_own_spans(
    spans: SpanCapture, tracer: trace_api.Tracer
) -> None:
    async def call(n: int) -> Trace | None:
        with spans.capture() as got:
            for step in range(3):
                with tracer.start_as_current_span(f"execute_tool t{n}") as made:
                    made.set_attributes(
                        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"t{n}"}
                    )
                    await asyncio.sleep(0)  # the other tasks run with their spans open
                    made.set_attribute("gen_ai.tool.call.arguments", json.dumps({"s": step}))
        return got.trace()

    async def main() -> list[Trace | None]:
        return await asyncio.gather(*(call(n) for n in range(5)))

    for n, trace in enumerate(asyncio.run(main())):
        assert trace is not None
        assert [(c.name, c.arguments) for c in trace.tool_calls] == [
            (f"t{n}", {"s": s}) for s in range(3)
        ]


# --- memory --------------------------------------------------------------------------------------


def test_spans_are_kept_only_while_their_call_is_open(
    spans: SpanCapture, tracer: trace_api.Tracer
) -> None:
    collector = spans._collector
    for _ in range(100):
        execute_tool(tracer, "unclaimed", "{}")  # never inside a call: never kept
    with spans.capture() as got:
        # A span started in the call that ends after it (an abandoned thread's).
        late = tracer.start_span(
            "execute_tool late", attributes={"gen_ai.operation.name": "execute_tool"}
        )
        execute_tool(tracer, "kept", "{}")
        assert len(collector._open) == 1
    late.end()
    trace = got.trace()
    assert trace is not None
    assert [c.name for c in trace.tool_calls] == ["kept"]
    assert collector._open == {} and collector._over == set()


def test_a_call_with_more_spans_than_kept_is_an_error_not_a_partial_trace(
    provider: TracerProvider, tracer: trace_api.Tracer
) -> None:
    capture = SpanCapture(provider=provider, limit=3)
    with capture.capture() as got:
        for n in range(5):
            execute_tool(tracer, f"t{n}", "{}")
    with pytest.raises(SpansUnreadable, match="more than 3 spans"):
        got.trace()
    assert capture._collector._open == {}


def test_a_call_with_as_many_spans_as_kept_is_read_whole(
    provider: TracerProvider, tracer: trace_api.Tracer
) -> None:
    """The limit counts the application's spans: the plugin's own, which ends last, is not
    one of them."""
    capture = SpanCapture(provider=provider, limit=3)
    with capture.capture() as got:
        for n in range(3):
            execute_tool(tracer, f"t{n}", "{}")
    trace = got.trace()
    assert trace is not None and [c.name for c in trace.tool_calls] == ["t0", "t1", "t2"]
    with capture.capture() as got:
        for n in range(4):
            execute_tool(tracer, f"t{n}", "{}")
    with pytest.raises(SpansUnreadable, match="more than 3 spans"):
        got.trace()


def test_a_sampler_that_drops_the_plugins_span_is_an_error() -> None:
    capture = SpanCapture(provider=TracerProvider(sampler=ALWAYS_OFF))
    with capture.capture() as got:
        pass
    with pytest.raises(SpansUnreadable, match="OTEL_TRACES_SAMPLER=always_on"):
        got.trace()


def test_a_global_provider_that_is_not_the_sdks_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(trace_api, "get_tracer_provider", trace_api.NoOpTracerProvider)
    capture = SpanCapture()
    unreadable = pytest.raises(
        SpansUnreadable, match="NoOpTracerProvider, not an OpenTelemetry SDK"
    )
    with unreadable, capture.capture():
        pass


def test_the_plugins_span_is_the_root_of_the_call(
    provider: TracerProvider, spans: SpanCapture, tracer: trace_api.Tracer
) -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exported = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    read(spans, lambda: execute_tool(tracer, "t", "{}"))
    tool, root = exported.get_finished_spans()
    assert root.name == SPAN_NAME and root.parent is None
    assert tool.parent is not None and tool.parent.span_id == root.context.span_id


# --- the seam ----------------------------------------------------------------------------------


def test_traced_runs_one_call_and_hands_back_its_value_with_its_trace(
    spans: SpanCapture, tracer: trace_api.Tracer
) -> None:
    def call() -> str:
        execute_tool(tracer, "refund", '{"order_id": "A1"}')
        return "Refund issued."

    value, trace = spans.traced(call)
    assert value == "Refund issued."
    assert trace is not None and [c.name for c in trace.tool_calls] == ["refund"]
    assert spans.traced(lambda: 42) == (42, None)  # no span of either convention

    def fails() -> None:
        execute_tool(tracer, "refund", "{}")
        raise ValueError("the application failed")

    with pytest.raises(ValueError, match="the application failed"):
        spans.traced(fails)
    assert spans._collector._open == {}  # read or not, a call's spans are dropped
