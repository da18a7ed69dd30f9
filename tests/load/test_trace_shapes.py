"""What a target may return, read into a trace (docs/guides/agents-and-rag.md): the shapes,
OpenAI messages read precisely, the errors that name the field, and the way back that
``collect`` writes."""

from __future__ import annotations

import contextlib
import json
import math
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from pytest_rubric._load.responses import load_response_dir
from pytest_rubric._load.traces import (
    ShapeError,
    as_fields,
    merged,
    read_messages,
    read_returned,
    read_trace,
    read_usage,
)
from pytest_rubric._trace import Passage, ToolCall, Trace, Usage


def call(ident: str, name: str, arguments: Any) -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": ident, "type": "function", "function": {"name": name, "arguments": raw}}


def test_a_str_is_the_answer_alone() -> None:
    assert read_returned("hello") == ("hello", None)


def test_a_mapping_with_the_answer_only_has_no_trace() -> None:
    assert read_returned({"answer": "hello"}) == ("hello", None)


def test_messages_are_read_call_by_call() -> None:
    messages = [
        {"role": "user", "content": "refund 42"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("a", "lookup", {"id": 42}), call("b", "refund", {"id": 42})],
        },
        {"role": "tool", "tool_call_id": "a", "content": '{"status": "ok"}'},
        {"role": "tool", "tool_call_id": "b", "content": '{"error": "declined"}'},
        {"role": "assistant", "tool_calls": [call("c", "notify", "{}")]},  # no tool message
        {"role": "assistant", "content": "done"},
    ]
    calls, llm_calls = read_messages(messages)
    assert calls == (
        ToolCall("lookup", {"id": 42}, True, '{"status": "ok"}'),
        ToolCall("refund", {"id": 42}, False, '{"error": "declined"}'),
        ToolCall("notify", {}, False, None),
    )
    assert llm_calls == 3


@pytest.mark.parametrize("arguments", ["{not json", "[1, 2]", '"text"'])
def test_arguments_that_are_not_a_json_object_are_kept_empty_and_the_tool_says_ok(
    arguments: str,
) -> None:
    messages = [
        {"role": "assistant", "tool_calls": [call("a", "lookup", arguments)]},
        {"role": "tool", "tool_call_id": "a", "content": '{"status": "ok"}'},
    ]
    assert read_messages(messages)[0] == (ToolCall("lookup", {}, True, '{"status": "ok"}'),)


def test_arguments_holding_a_number_that_is_not_finite_are_kept_as_their_json_text() -> None:
    messages = [
        {"role": "assistant", "tool_calls": [call("a", "t", '{"n": 1e999}')]},
        {
            "role": "assistant",
            "tool_calls": [{"function": {"name": "u", "arguments": {"n": math.nan}}}],
        },
    ]
    calls, _ = read_messages(messages)
    assert [c.arguments for c in calls] == ['{"n": 1e999}', '{"n": NaN}']
    assert (
        read_trace(as_fields(Trace("returned", calls, 2)), source="responses").tool_calls == calls
    )


def test_a_reused_call_id_is_answered_by_the_first_tool_message_after_each_call() -> None:
    """Providers may reuse ids across turns: each tool message answers the first call of its
    id still unanswered, never a later call's."""
    messages = [
        {"role": "assistant", "tool_calls": [call("call_0", "lookup", {})]},
        {"role": "tool", "tool_call_id": "call_0", "content": '{"error": "service down"}'},
        {"role": "assistant", "tool_calls": [call("call_0", "refund", {"id": 1})]},
        {"role": "tool", "tool_call_id": "call_0", "content": '{"refunded": 30}'},
        {"role": "assistant", "content": "Done."},
    ]
    assert read_messages(messages)[0] == (
        ToolCall("lookup", {}, False, '{"error": "service down"}'),
        ToolCall("refund", {"id": 1}, True, '{"refunded": 30}'),
    )


def test_a_tool_result_that_is_json_without_error_is_ok() -> None:
    messages = [
        {"role": "assistant", "tool_calls": [call("a", "t", {})]},
        {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": '{"x": 1}'}]},
    ]
    assert read_messages(messages)[0][0].ok


@dataclass
class Returned:
    answer: str
    context: list[Any]


class Named(NamedTuple):
    answer: str
    context: list[str]


class Reply(BaseModel):
    answer: str
    usage: dict[str, Any]
    metadata: dict[str, Any]


def test_objects_with_the_attributes_are_read_like_mappings() -> None:
    text, trace = read_returned(Returned("a", ["p1", {"id": 7, "text": "p2", "source": "kb"}]))
    assert text == "a" and trace is not None
    assert trace.context == (Passage("p1"), Passage("p2", "7", "kb"))
    text, trace = read_returned(
        Reply(answer="b", usage={"input_tokens": 3, "cost_usd": 0.5}, metadata={"run": 1})
    )
    assert trace is not None and trace.usage == Usage(3, None, 0.5)
    assert trace.metadata == {"run": 1} and trace.llm_calls is None
    # A named tuple is an object with those attributes too; a plain tuple is not one.
    text, trace = read_returned(Named("c", ["p1"]))
    assert text == "c" and trace is not None and trace.context == (Passage("p1"),)


@pytest.mark.parametrize(
    ("value", "said", "field"),
    [
        (42, "int", None),
        (("a", ["p1"]), "tuple", None),
        (None, "NoneType", None),
        ({"text": "x"}, "a mapping without \"answer\" (it has 'text')", None),
        ({"answer": 3}, '"answer" is int, not a str', None),
        ({"answer": "a", "context": "one"}, '"context" is str, not a list', "context"),
        ({"answer": "a", "context": [{"id": 1}]}, '"context" item 0 is dict', "context"),
        ({"answer": "a", "messages": [5]}, '"messages" item 0 is int', "messages"),
        (
            {"answer": "a", "messages": [{"role": "assistant", "tool_calls": {"id": "1"}}]},
            '"messages" item 0: "tool_calls" is dict, not a list',
            "messages",
        ),
        (
            {"answer": "a", "messages": [{"role": "assistant", "tool_calls": [{}]}]},
            '"messages" item 0: a tool call\'s "function.name" is missing',
            "messages",
        ),
        (
            {
                "answer": "a",
                "messages": [{"role": "assistant", "tool_calls": [{"function": {"name": 5}}]}],
            },
            '"messages" item 0: a tool call\'s "function.name" is int, not a str',
            "messages",
        ),
        ({"answer": "a", "usage": {"input_tokens": -1}}, '"usage.input_tokens"', "usage"),
        ({"answer": "a", "usage": {"cost_usd": "1"}}, '"usage.cost_usd"', "usage"),
        ({"answer": "a", "usage": {"cost_usd": 10**400}}, '"usage.cost_usd"', "usage"),
        ({"answer": "a", "usage": {"output_tokens": 10**400}}, '"usage.output_tokens"', "usage"),
        ({"answer": "a", "metadata": [1]}, '"metadata" is list, not a dict', "metadata"),
    ],
)
def test_anything_else_is_a_shape_error_naming_the_field(
    value: Any, said: str, field: str | None
) -> None:
    with pytest.raises(ShapeError) as raised:
        read_returned(value)
    assert said in str(raised.value)
    assert raised.value.field == field


def test_what_the_target_returned_wins_over_the_spans_where_it_says_something() -> None:
    returned = Trace("returned", context=(Passage("p"),), usage=Usage(1, None, None))
    spans = Trace(
        "otel", (ToolCall("t", {}, True),), llm_calls=2, usage=Usage(5, 6, None), latency_s=1.0
    )
    both = merged(returned, spans)
    assert both == Trace(
        "returned",
        (ToolCall("t", {}, True),),
        llm_calls=2,
        context=(Passage("p"),),
        usage=Usage(1, 6, None),
        latency_s=1.0,
    )
    assert merged(None, spans) is spans and merged(returned, None) is returned


def test_an_empty_context_the_target_returned_wins_over_the_spans_documents() -> None:
    returned = read_returned({"answer": "Nothing found.", "context": []})[1]
    spans = Trace("otel", llm_calls=1, context=(Passage("Within 30 days."),), context_known=True)
    both = merged(returned, spans)
    assert both is not None and both.context == () and both.context_known


names = st.sampled_from(["lookup", "refund", "notify"])
calls_strategy = st.lists(
    st.builds(
        ToolCall,
        name=names,
        arguments=st.dictionaries(st.sampled_from(["id", "amount"]), st.integers(0, 99)),
        ok=st.booleans(),
        # A result with an "error" key may come from a call that worked too (a span's
        # status says so): {"status": "delivered", "error": null}.
        result=st.one_of(
            st.none(),
            st.text(max_size=20),
            st.sampled_from(['{"error": "denied"}', '{"status": "delivered", "error": null}']),
        ),
    ),
    max_size=6,
)


def collected(trace: Trace) -> Trace | None:
    """``trace`` as ``collect`` writes it on a responses line, read back from the file."""
    with tempfile.TemporaryDirectory() as folder:
        line = {"id": "c1", "response": "Done.", **as_fields(trace)}
        (Path(folder) / "agent.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
        (found,), problems = load_response_dir(Path(folder))
    assert problems == []
    return found.traces.get(1)


@given(calls=calls_strategy, llm_calls=st.none() | st.integers(0, 3))
def test_the_fields_collect_writes_read_back_to_the_same_trace(
    calls: list[ToolCall], llm_calls: int | None
) -> None:
    """Calls, their success and results (none shown too), and the model calls (none made,
    or not known: tool spans and no model span) read back as they were. A call is always
    a model's: a trace with calls has one model call at least, or an unknown count."""
    if calls and llm_calls == 0:
        llm_calls = 1
    trace = Trace("returned", tuple(calls), llm_calls=llm_calls)
    back = collected(trace)
    if not calls and llm_calls is None:  # nothing known of the calls: nothing written
        assert back is None
    else:
        assert back == replace(trace, source="responses")


def test_calls_a_result_alone_would_misread_are_written_with_their_ok() -> None:
    calls = (
        ToolCall("lookup", {"id": 1}, True),  # worked, showed no result
        ToolCall("refund", {"id": 1}, False, "failed"),  # a failure told in plain text
        ToolCall("notify", {}, True, '{"status": "sent", "error": null}'),
        ToolCall("refund", {"id": 2}, False, '{"error": "denied"}'),  # the tool's own error
    )
    fields = as_fields(Trace("otel", calls, None))
    assert fields["llm_calls"] is None  # tool spans, no model span: not known
    assert [m.get("ok") for m in fields["messages"] if m["role"] == "tool"] == [
        None,
        False,
        True,
        None,
    ]
    assert collected(Trace("otel", calls, None)) == Trace("responses", calls, None)
    # The assistant messages count the model calls: no `llm_calls` beside them.
    assert "llm_calls" not in as_fields(Trace("otel", calls, 2))


def test_a_responses_lines_llm_calls_and_a_tool_messages_ok_are_checked(tmp_path: Path) -> None:
    asked = {"role": "assistant", "tool_calls": [call("a", "refund", {})]}
    lines = [
        {"id": "q1", "response": "done", "messages": [asked], "llm_calls": "two"},
        {"id": "q2", "response": "done", "messages": [asked], "llm_calls": True},
        {
            "id": "q3",
            "response": "done",
            "messages": [asked, {"role": "tool", "tool_call_id": "a", "ok": "no"}],
        },
        {"id": "q4", "response": "done", "messages": [asked], "llm_calls": 0},
        {"id": "q5", "response": "done", "llm_calls": 2},  # no messages: no calls counted
        {"id": "q6", "response": "done", "messages": [asked], "llm_calls": None},
    ]
    (tmp_path / "agent.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8"
    )
    (found,), problems = load_response_dir(tmp_path)
    assert [(p.line, p.field) for p in problems] == [
        (1, "llm_calls"),
        (2, "llm_calls"),
        (3, "messages"),
        (4, "llm_calls"),
        (5, "llm_calls"),
    ]
    assert '"llm_calls" must be a whole number of model calls' in problems[0].message
    assert '"ok" is str, not true or false' in problems[2].message
    assert '"llm_calls" is 0, fewer than the 1 assistant messages' in problems[3].message
    assert '"llm_calls" goes beside "messages"' in problems[4].message
    assert found.traces == {6: Trace("responses", (ToolCall("refund", {}, False),), None)}


def test_a_tool_messages_ok_is_the_writers_alone() -> None:
    """Messages an application returns are read by the content rule alone: an ``ok`` of
    its own (any value) neither fails the reading nor overrides what the content says."""
    asked = {"role": "assistant", "tool_calls": [call("a", "refund", {})]}
    for ok in ("success", 1, False):
        told = {"role": "tool", "tool_call_id": "a", "content": "done", "ok": ok}
        trace = read_trace({"messages": [asked, told]}, source="returned")
        assert trace.tool_calls == (ToolCall("refund", {}, True, "done"),)


@given(st.recursive(st.none() | st.integers() | st.text(max_size=5), st.lists, max_leaves=8))
def test_reading_messages_never_raises_anything_but_a_shape_error(value: Any) -> None:
    with contextlib.suppress(ShapeError):
        read_trace({"messages": value, "context": value}, source="returned")


def test_a_responses_line_carries_a_trace_and_a_bad_field_is_located(tmp_path: Path) -> None:
    lines = [
        {"id": "q1", "response": "done", "context": ["p"], "latency_s": 0.5},
        {"id": "q2", "response": "done", "usage": {"input_tokens": "many"}},
        {"id": "q3", "response": "done"},
    ]
    (tmp_path / "agent.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8"
    )
    (found,), problems = load_response_dir(tmp_path)
    assert found.traces == {
        1: Trace("responses", context=(Passage("p"),), context_known=True, latency_s=0.5)
    }
    (problem,) = problems
    assert (problem.line, problem.case, problem.field) == (2, "q2", "usage")
    assert '"usage.input_tokens"' in problem.message
    assert problem.hint is not None and '"context"' in problem.hint


@pytest.mark.hostile
def test_json_nested_past_the_parser_is_no_arguments_or_a_shape_error_never_a_crash() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    content = '{"x": ' + deep + "}"
    messages = [
        {"role": "assistant", "tool_calls": [call("a", "t", deep), call("b", "u", {})]},
        {"role": "tool", "tool_call_id": "a", "content": "fine"},
        {"role": "tool", "tool_call_id": "b", "content": content},
    ]
    calls, _ = read_messages(messages)
    assert [(c.name, c.arguments, c.ok) for c in calls] == [("t", {}, True), ("u", {}, True)]
    nested: dict[str, Any] = {}
    for _ in range(5_000):
        nested = {"x": nested}
    with pytest.raises(ShapeError, match='"metadata" cannot be written as JSON'):
        read_returned({"answer": "a", "metadata": nested})


@pytest.mark.parametrize("padding", range(14, 22))
def test_a_figure_cut_short_in_an_error_shows_no_piece_of_a_key(
    padding: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key in a bad figure, where the error's cut would leave only its start: too short
    for the outputs' boundary to know, so the figure is redacted before it is cut."""
    key = "sk-ant-AbCdEfGhIjKlMnOpQrStUv"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    with pytest.raises(ShapeError) as raised:
        read_usage({"input_tokens": "x" * padding + key})
    shown = str(raised.value)
    assert not any(key[i : i + 4] in shown for i in range(len(key) - 3)), shown


def test_a_tool_message_with_a_long_integer_is_still_read_as_json() -> None:
    """Valid JSON is never "not JSON" for an integer's length: a failed call's error object
    holding one still fails it, and such arguments are kept as their text, as ``1e999``."""
    number = "1" + "0" * 5000
    calls, _ = read_messages(
        [
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "refund", "arguments": f'{{"cents": {number}}}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": f'{{"error": "x", "n": {number}}}'},
        ]
    )
    assert not calls[0].ok
    assert calls[0].arguments == f'{{"cents": {number}}}'  # not finite: kept as its text


def test_a_line_with_both_response_and_answer_is_a_located_problem(tmp_path: Path) -> None:
    """`answer` is another name for `response`: a line giving both would be graded on a
    guess, so it is a problem at its line and the other lines load."""
    lines = [
        {"id": "q1", "response": "Two days.", "answer": "Three days."},
        {"id": "q2", "answer": "Three days."},
    ]
    (tmp_path / "bot.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8"
    )
    (found,), problems = load_response_dir(tmp_path)
    assert [(p.line, p.case, p.field) for p in problems] == [(1, "q1", "answer")]
    assert "both `response` and `answer`" in problems[0].message
    assert list(found.entries.values()) == [("Three days.", 2)]
