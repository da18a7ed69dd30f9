"""Agents and retrieval graded on their traces, end to end (the guide
docs/guides/agents-and-rag.md).

The project is laid out as a team's: ``app/`` holds a support agent written with the
``openai`` SDK (a real tool-calling loop against ``tests/fake_llm.py``, which serves
``tool_calls``) and a small RAG pipeline; ``evals/targets.py`` adapts them, returning the
agent's messages and the pipeline's context as they are; ``evals/`` holds the rubric files.
Two agents share the code: ``careful`` issues the refund it reports, ``hasty`` reports a
refund it never issued.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from pytest_rubric._cli.merge import main as cli
from tests.conftest import EXAMPLES
from tests.fake_llm import Action, FakeLLM, Recorded, json_reply, text, tool_calls

Write = Callable[[str, str], Path]

# The agents here call the openai SDK in the sessions these tests start in process.
pytestmark = pytest.mark.usefixtures("openai_sdk")

AGENT = '''
"""The support agent: a tool-calling loop on the OpenAI SDK."""
import json
import os

from openai import OpenAI

ORDERS = {"42": {"status": "delivered", "total": 30.0}}
REFUNDS = []

TOOLS = [
    {"type": "function", "function": {"name": "lookup_order", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "issue_refund", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"},
                                         "amount": {"type": "number"}}}}},
]


def lookup_order(order_id):
    if order_id not in ORDERS:
        return {"error": f"no order {order_id}"}
    return ORDERS[order_id]


def issue_refund(order_id, amount):
    REFUNDS.append((order_id, amount))
    return {"refunded": amount}


FUNCTIONS = {"lookup_order": lookup_order, "issue_refund": issue_refund}


def run(question, *, model):
    """The conversation the agent had: OpenAI chat messages, tool results included."""
    client = OpenAI(base_url=os.environ["AGENT_BASE_URL"], api_key="not-a-key", max_retries=0)
    messages = [
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": question},
    ]
    for _ in range(5):
        reply = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            result = FUNCTIONS[call.function.name](**json.loads(call.function.arguments))
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )
    return messages
'''

RAG = '''
"""A small retrieval pipeline: keyword retrieval over a knowledge base, then the answer."""
KB = [
    {"id": "refunds", "text": "Refunds are issued within 30 days of delivery.", "source": "kb"},
    {"id": "shipping", "text": "Standard shipping takes 5 business days.", "source": "kb"},
    {"id": "returns", "text": "Returns need the original receipt.", "source": "kb"},
]


def retrieve(question):
    words = {w.strip("?.,").lower() for w in question.split()}
    return [p for p in KB if words & {w.strip(".").lower() for w in p["text"].split()}][:2]


def answer(question):
    passages = retrieve(question)
    cited = " ".join(f"[{p['id']}]" for p in passages)
    return {"answer": f"Refunds are issued within 30 days {cited}.", "context": passages}
'''

TARGETS = """
from app import agent, rag


def _graded(messages):
    return {
        "answer": messages[-1].get("content") or "",
        "messages": messages,
        "usage": {"input_tokens": 10 * len(messages), "output_tokens": 5, "cost_usd": 0.001},
    }


def careful(question: str) -> dict:
    return _graded(agent.run(question, model="agent-careful"))


def hasty(question: str) -> dict:
    return _graded(agent.run(question, model="agent-hasty"))


def retrieval(question: str) -> dict:
    return rag.answer(question)
"""

AGENT_SUITE = """
suite: agent
targets:
  careful: targets:careful
  hasty: targets:hasty
cases:
  - id: refund_42
    question: "Order 42 arrived broken, please refund it."
    criteria:
      - {id: looked_up, type: tool_called, tool: lookup_order,
         args: {properties: {order_id: {const: "42"}}, required: [order_id]}}
      - {id: refunded, type: tool_called, tool: issue_refund, ok: true, times: 1}
      - {id: order, type: tool_sequence, tools: [lookup_order, issue_refund]}
      - id: claims
        type: claims_backed
        claims:
          - {id: refund, any_of: ["refund has been issued"], tool: issue_refund,
             args: {required: [order_id]}}
      - {id: budget, type: trace_limits, max_tool_calls: 4, max_llm_calls: 4, max_cost_usd: 0.01}
"""

RAG_SUITE = """
suite: rag
target: targets:retrieval
cases:
  - id: refund_window
    question: "When are refunds issued?"
    criteria:
      - {id: recall, type: context_recall, facts: [["30 days"], ["receipt"]]}
      - {id: cites, type: citations}
"""

REFUND_DONE = "Your refund has been issued: $30 for order 42."


def agent_turn(request: Recorded) -> Action:
    """The agent's model: look the order up, then (careful) refund it, then report."""
    messages = request.body["messages"]
    last = messages[-1]
    if last["role"] == "user":
        return tool_calls(("lookup_order", {"order_id": "42"}))
    called = {c["function"]["name"] for m in messages for c in m.get("tool_calls") or ()}
    if request.body["model"] == "agent-careful" and "issue_refund" not in called:
        return tool_calls(("issue_refund", {"order_id": "42", "amount": 30.0}))
    return text(REFUND_DONE)


@pytest.fixture
def agent_llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLM]:
    """The agents' model: its own fake server, answering by the conversation so far."""
    with FakeLLM() as fake:
        fake.respond_with(agent_turn)
        monkeypatch.setenv("AGENT_BASE_URL", fake.openai_url)
        yield fake


@pytest.fixture
def project(pytester: pytest.Pytester, write: Write, agent_llm: FakeLLM) -> pytest.Pytester:
    pytester.makeini("[pytest]\npythonpath = .\nrubric_dirs = evals\nrubric_judge_backoff = 0.01\n")
    write("app/__init__.py", "")
    write("app/agent.py", AGENT)
    write("app/rag.py", RAG)
    write(
        "tests/test_rag.py",
        "from app.rag import retrieve\n\n\ndef test_retrieves():\n"
        "    assert retrieve('When are refunds issued?')\n",
    )
    write("evals/targets.py", TARGETS)
    write("evals/agent.rubric.yaml", AGENT_SUITE)
    write("evals/rag.rubric.yaml", RAG_SUITE)
    return pytester


def _document(pytester: pytest.Pytester) -> dict[str, Any]:
    return json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))


def _result(document: dict[str, Any], subject: str) -> dict[str, Any]:
    return next(r for r in document["results"] if r["subject"] == subject)


def test_an_agent_that_claims_a_refund_it_never_issued_fails_on_its_trace(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest(
        "--rubric-json=out.json",
        "--junitxml=junit.xml",
        "--rubric-html=out.html",
        "--rubric-markdown=out.md",
    )
    result.assert_outcomes(passed=2, failed=2)  # the unit test, careful; hasty, retrieval
    # The failing item shows its calls (name, arguments, ok) and context ids after the response.
    result.stdout.fnmatch_lines(
        [
            "*refund_42[[]hasty[]]*",
            "*claims*claims_backed*UNMET*unbacked claim: refund*issue_refund*",
            f"response: {REFUND_DONE}",
            "tool calls (1, returned):",
            '  lookup_order {"order_id": "42"} ok',
        ]
    )
    document = _document(project)
    hasty, careful = _result(document, "hasty"), _result(document, "careful")
    assert "unbacked_claim" in hasty["flags"] and "unbacked_claim" not in careful["flags"]
    verdicts = {c["id"]: c["verdict"] for c in hasty["criteria"]}
    assert verdicts == {
        "looked_up": "MET",
        "refunded": "UNMET",
        "order": "UNMET",
        "claims": "UNMET",
        "budget": "MET",
    }
    trace = careful["samples"][0]["trace"]
    assert trace["source"] == "returned"
    assert [(c["name"], c["arguments"], c["ok"]) for c in trace["tool_calls"]] == [
        ("lookup_order", {"order_id": "42"}, True),
        ("issue_refund", {"order_id": "42", "amount": 30.0}, True),
    ]
    assert trace["llm_calls"] == 3 and trace["usage"]["cost_usd"] == 0.001
    assert trace["latency_s"] > 0
    assert (
        "Refunds are issued"
        in _result(document, "retrieval")["samples"][0]["trace"]["context"][0]["text"]
    )
    # The leaderboard's trace columns, in the JSON and the terminal.
    rows = {row["subject"]: row for row in document["leaderboard"]}
    assert rows["careful"]["tool_calls"] == 2.0 and rows["hasty"]["tool_calls"] == 1.0
    assert rows["careful"]["cost_usd"] == 0.001 and rows["careful"]["latency_s_p50"] > 0
    result.stdout.fnmatch_lines(["*subject*tool calls*latency p50*cost*"])
    outs = [
        element.text or ""
        for element in ElementTree.parse(project.path / "junit.xml").iter("system-out")
    ]
    assert any('tool calls (1, returned):\n  lookup_order {"order_id": "42"} ok' in o for o in outs)
    markdown = (project.path / "out.md").read_text(encoding="utf-8")
    assert "- tool calls (1, returned):" in markdown and "- context (1): refunds" in markdown
    html = (project.path / "out.html").read_text(encoding="utf-8")
    assert "<th>tool calls per answer</th><th>latency p50</th><th>cost (USD)</th>" in html
    assert '<pre class="trace">tool calls (1, returned):' in html


def test_retrieval_failures_show_in_context_recall_and_citations_name_passages(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest("evals/rag.rubric.yaml", "--rubric-json=out.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*recall*context_recall*UNMET*retrieved 1 of 2 facts*'receipt'*",
            "*cites*citations*MET*cites 'refunds', all in the context*",
            "context (1): refunds",
        ]
    )


def test_a_trace_collected_once_grades_offline(
    project: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    # In process, in the project's folder, as `python -m pytest_rubric collect` runs main().
    argv = ["collect", "--rubric-dir", "evals", "--target", "hasty=targets:hasty"]
    assert cli([*argv, "--out", "answers"]) == 0, capsys.readouterr().err
    line = json.loads((project.path / "answers/hasty.jsonl").read_text().splitlines()[0])
    assert line["response"] == REFUND_DONE and line["messages"] and line["usage"]
    (project.path / "evals/agent.rubric.yaml").write_text(
        AGENT_SUITE.replace(
            "targets:\n  careful: targets:careful\n  hasty: targets:hasty\n",
            "responses: ../answers\n",
        ),
        encoding="utf-8",
    )
    result = project.runpytest("evals/agent.rubric.yaml", "--rubric-json=out.json")
    result.assert_outcomes(failed=1)
    trace = _result(_document(project), "hasty")["samples"][0]["trace"]
    assert trace["source"] == "responses"
    assert [c["name"] for c in trace["tool_calls"]] == ["lookup_order"]
    assert trace["llm_calls"] == 2


def test_the_response_cache_replays_the_trace(project: pytest.Pytester, agent_llm: FakeLLM) -> None:
    first = project.runpytest("evals/agent.rubric.yaml", "--rubric-response-cache=use")
    first.assert_outcomes(passed=1, failed=1)
    asked = len(agent_llm.requests)
    replayed = project.runpytest(
        "evals/agent.rubric.yaml", "--rubric-response-cache=replay", "--rubric-json=out.json"
    )
    replayed.assert_outcomes(passed=1, failed=1)
    assert len(agent_llm.requests) == asked  # nothing asked again
    trace = _result(_document(project), "careful")["samples"][0]["trace"]
    assert [c["name"] for c in trace["tool_calls"]] == ["lookup_order", "issue_refund"]


def test_a_target_that_returns_another_shape_is_an_error_naming_the_shapes(
    project: pytest.Pytester, write: Write
) -> None:
    write(
        "evals/targets.py",
        TARGETS + "\n\ndef broken(question: str) -> dict:\n    return {'text': 'hi'}\n",
    )
    write(
        "evals/agent.rubric.yaml",
        AGENT_SUITE.replace(
            "  careful: targets:careful\n  hasty: targets:hasty\n", "  broken: targets:broken\n"
        ),
    )
    result = project.runpytest("evals/agent.rubric.yaml")
    result.assert_outcomes(errors=1)
    result.stdout.no_fnmatch_line("*tool calls*latency p50*")  # no subject has a trace
    result.stdout.fnmatch_lines(
        [
            "*target targets:broken returned a mapping without \"answer\" (it has 'text'); a "
            'target returns one of: a str (the answer); a mapping with "answer"*',
        ]
    )


def test_a_case_gives_a_fixed_context_and_no_context_is_an_error(
    project: pytest.Pytester, write: Write
) -> None:
    write(
        "evals/fixed.rubric.yaml",
        """
        suite: fixed
        cases:
          - id: with_context
            question: "When are refunds issued?"
            response: "Within 30 days [1]."
            context: ["Refunds are issued within 30 days of delivery."]
            criteria:
              - {id: cites, type: citations}
              - {id: recall, type: context_recall, facts: [["30 days"]]}
          - id: without
            question: "When are refunds issued?"
            response: "Within 30 days [1]."
            criteria:
              - {id: cites, type: citations}
        """,
    )
    result = project.runpytest("evals/fixed.rubric.yaml", "--rubric-json=out.json")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*cites*citations*ERROR*the answer has no context to check*"])
    document = _document(project)
    fixed = next(r for r in document["results"] if r["case"] == "with_context")
    assert fixed["samples"][0]["trace"]["source"] == "case"


def test_an_empty_context_the_application_reports_is_not_replaced_by_the_cases(
    project: pytest.Pytester, write: Write
) -> None:
    """The case's fixed context stands in when the answer brings none; a retriever that
    found nothing brought one (empty), so its recall is 0, not the case's passage's."""
    write(
        "evals/rag.py", "def answer(question):\n    return {'answer': 'No idea.', 'context': []}\n"
    )
    write(
        "evals/empty.rubric.yaml",
        """
        suite: empty
        target: rag:answer
        cases:
          - id: q
            question: "When are refunds issued?"
            context: ["Refunds are issued within 30 days."]
            criteria:
              - {id: recall, type: context_recall, facts: [["30 days"]]}
        """,
    )
    result = project.runpytest("evals/empty.rubric.yaml", "--rubric-json=out.json")
    result.assert_outcomes(failed=1)
    trace = _document(project)["results"][0]["samples"][0]["trace"]
    assert trace["source"] == "returned" and trace["context"] == []


def test_a_plain_answer_to_a_case_with_its_context_keeps_the_calls_latency(
    project: pytest.Pytester, write: Write
) -> None:
    """A target returning a str for a case that gives its own context: the trace is the
    case's, and still measured; recorded, it replays the same; collect writes the latency, not
    the case's context, and the answers it wrote grade as the run did."""
    write("evals/plain.py", "def answer(question):\n    return 'Within 30 days [1].'\n")
    write(
        "evals/timed.rubric.yaml",
        """
        suite: timed
        target: plain:answer
        cases:
          - id: q
            question: "When are refunds issued?"
            context: ["Refunds are issued within 30 days of delivery."]
            criteria:
              - {id: cites, type: citations}
              - {id: quick, type: trace_limits, max_latency_s: 600}
        """,
    )
    traces = []
    for mode in ("use", "replay"):
        result = project.runpytest(
            "evals/timed.rubric.yaml", "--rubric-response-cache", mode, "--rubric-json=out.json"
        )
        result.assert_outcomes(passed=1)
        traces.append(_document(project)["results"][0]["samples"][0]["trace"])
    assert traces[0]["source"] == "case" and traces[0]["context"][0]["id"] is None
    assert isinstance(traces[0]["latency_s"], float) and traces[0]["latency_s"] >= 0
    assert traces[1] == traces[0]
    assert (
        cli(["collect", "--rubric-dir", "evals", "--target", "plain:answer", "--out", "ans"]) == 0
    )
    lines = (project.path / "ans" / "answer.jsonl").read_text(encoding="utf-8").splitlines()
    [written] = [json.loads(line) for line in lines if '"q"' in line]
    assert written.pop("latency_s") >= 0
    assert written == {"id": "q", "suite": "timed", "response": "Within 30 days [1]."}
    suite = (project.path / "evals" / "timed.rubric.yaml").read_text(encoding="utf-8")
    write("evals/timed.rubric.yaml", suite.replace("target: plain:answer", "responses: ../ans"))
    result = project.runpytest("evals/timed.rubric.yaml", "-v")
    result.stdout.fnmatch_lines(["*timed.rubric.yaml::q?answer? PASSED*"])


def test_grounded_verifies_the_judges_quotes_against_the_context(
    project: pytest.Pytester, write: Write, fake_llm: FakeLLM
) -> None:
    write(
        "evals/rag.rubric.yaml",
        RAG_SUITE + "      - {id: grounded, type: grounded}\n",
    )
    fake_llm.script(
        json_reply(
            {
                "reason": "the window is in the context, the free label is not",
                "claims": [
                    {"claim": "refunds within 30 days", "quote": "issued within 30 days"},
                    {"claim": "a free return label", "quote": "a free return label is included"},
                ],
            }
        )
    )
    result = project.runpytest(
        "evals/rag.rubric.yaml",
        "--rubric-judge=openai:test-model",
        f"--rubric-judge-url={fake_llm.openai_url}",
        "--rubric-json=out.json",
    )
    result.assert_outcomes(failed=1)
    grounded = next(
        c for c in _result(_document(project), "retrieval")["criteria"] if c["id"] == "grounded"
    )
    assert grounded["verdict"] == "UNMET" and grounded["credit"] == 0.5
    assert "unsupported: 'a free return label'" in grounded["reason"]
    body = fake_llm.requests[0].body
    assert "Refunds are issued within 30 days of delivery." in body["messages"][-1]["content"]
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["reason", "claims"]


def test_assert_rubric_grades_what_a_target_returns_with_its_trace(
    project: pytest.Pytester, write: Write
) -> None:
    write(
        "tests/test_agent.py",
        """
        import pytest
        from pytest_rubric import assert_rubric
        from app import agent

        CRITERIA = [
            {"id": "claims", "type": "claims_backed",
             "claims": [{"id": "refund", "any_of": ["refund has been issued"],
                         "tool": "issue_refund"}]},
        ]

        def _graded(model):
            messages = agent.run("Refund order 42.", model=model)
            return {"answer": messages[-1]["content"], "messages": messages}

        def test_careful():
            assert_rubric(_graded("agent-careful"), CRITERIA)

        def test_hasty():
            assert_rubric(_graded("agent-hasty"), CRITERIA)

        def test_a_shape_that_is_none():
            with pytest.raises(TypeError, match="the response is int; give one of: a str"):
                assert_rubric(42, CRITERIA)
        """,
    )
    result = project.runpytest("tests/test_agent.py")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*claims*claims_backed*UNMET*unbacked claim: refund*"])


def test_the_bundled_agent_example_flags_the_refunds_hasty_claims_but_never_issued(
    pytester: pytest.Pytester,
) -> None:
    """make demo's agents: hasty says "Your refund of $40.00 for order 1001 has been
    issued." without a successful issue_refund; its claim must be caught, careful's backed.
    (The traced agent needs --rubric-otel, which the tests of the flag cover.)"""
    shutil.copytree(EXAMPLES / "agents", pytester.path / "agents")
    result = pytester.runpytest("agents", "-k", "not traced", "--rubric-json=out.json")
    result.assert_outcomes(passed=4, failed=2)
    document = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))
    flags = {(r["subject"], r["case"]): set(r["flags"]) for r in document["results"]}
    for case in ("agent01_refund", "agent03_unknown_order"):
        assert {"unbacked_claim", "confidently_wrong"} <= flags["hasty", case]
        assert "unbacked_claim" not in flags["careful", case]


def test_grounded_over_a_context_the_application_reported_empty_asks_the_judge(
    project: pytest.Pytester, write: Write, fake_llm: FakeLLM
) -> None:
    """``"context": []`` returned: the retriever found nothing, which was recorded, so the
    judge is asked (every claim it finds is unsupported); ERROR is for a context never
    recorded, as its advice says."""
    write(
        "evals/rag_empty.py",
        "def answer(question):\n    return {'answer': 'Within 30 days.', 'context': []}\n",
    )
    write(
        "evals/empty.rubric.yaml",
        """
        suite: empty
        target: rag_empty:answer
        cases:
          - id: q
            question: "When are refunds issued?"
            context: ["Refunds are issued within 30 days."]
            criteria:
              - {id: grounded, type: grounded}
        """,
    )
    fake_llm.script(
        json_reply(
            {"reason": "nothing was retrieved", "claims": [{"claim": "30 days", "quote": ""}]}
        )
    )
    result = project.runpytest(
        "evals/empty.rubric.yaml",
        "--rubric-judge=openai:test-model",
        f"--rubric-judge-url={fake_llm.openai_url}",
        "--rubric-json=out.json",
    )
    result.assert_outcomes(failed=1)
    [grounded] = _document(project)["results"][0]["criteria"]
    assert (grounded["verdict"], grounded["credit"]) == ("UNMET", 0.0)
    assert "0 of 1 claims supported by the context" in grounded["reason"]
    assert len(fake_llm.requests) == 1
