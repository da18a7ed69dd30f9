"""``--rubric-otel`` with real parts: an agent written with the ``openai`` SDK against the
fake model serving ``tool_calls``, instrumented by OpenLLMetry
(``opentelemetry-instrumentation-openai``, GenAI conventions) or by
``openinference-instrumentation-openai``, and a RAG pipeline whose retriever is traced
(docs/guides/otel.md).

The instrumentations record the model's calls (chat / ``LLM`` spans); the tools are run by
the application, which traces them as an agent framework does (``execute_tool`` spans, or
OpenInference ``TOOL`` spans). The trace read at the seam (``SpanCapture``, around the
call, as ``Source.fetch`` runs a target) is checked here in process; the sessions run by
``pytester`` in their own process show the flag in a team's project, with its own tracer
provider, under ``-n 2`` and with concurrent async targets.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from pytest_rubric._otel import SPAN_NAME, SpanCapture
from pytest_rubric._trace import Passage, Usage
from tests.conftest import lines_in_any_order
from tests.fake_llm import Action, FakeLLM, Recorded, text, tool_calls

Write = Callable[[str, str], Path]

# The agents here call the openai SDK in the sessions these tests start in process.
pytestmark = pytest.mark.usefixtures("openai_sdk")

# The application: a support agent and a RAG pipeline, as a team writes them. The tools
# trace themselves in the convention the team's framework uses.
AGENT = '''
"""A support agent: the openai SDK in a loop, and a small RAG pipeline."""

import json
import os

from openai import AsyncOpenAI, OpenAI
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

tracer = trace.get_tracer("app.agent")
ORDERS = {"A1": {"status": "delivered", "total": 40}}


def lookup_order(order_id):
    return ORDERS[order_id]


def issue_refund(order_id):
    if order_id not in ORDERS:
        raise KeyError(f"no order {order_id}")
    return {"refunded": ORDERS[order_id]["total"]}


TOOLS = {"lookup_order": lookup_order, "issue_refund": issue_refund}
PARAMETERS = {"type": "object", "properties": {"order_id": {"type": "string"}}}
SPECS = [
    {"type": "function", "function": {"name": name, "parameters": PARAMETERS}}
    for name in TOOLS
]


def run_tool(call, convention):
    name, arguments = call.function.name, call.function.arguments
    if convention == "genai":
        span_name = f"execute_tool {name}"
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.call.arguments": arguments,
        }
    else:
        span_name = name
        attributes = {
            "openinference.span.kind": "TOOL",
            "tool.name": name,
            "tool.parameters": json.dumps(PARAMETERS),
            "input.value": arguments,
            "input.mime_type": "application/json",
        }
    with tracer.start_as_current_span(span_name, attributes=attributes) as span:
        try:
            result = json.dumps(TOOLS[name](**json.loads(arguments)))
        except Exception as exc:
            span.set_status(Status(StatusCode.ERROR, str(exc)))
            if convention == "genai":
                span.set_attribute("error.type", type(exc).__name__)
            return json.dumps({"error": str(exc)})
        key = "gen_ai.tool.call.result" if convention == "genai" else "output.value"
        span.set_attribute(key, result)
        return result


def client(kind=OpenAI):
    return kind(base_url=os.environ["APP_LLM_URL"], api_key="sk-app-test", max_retries=0)


def next_turn(reply, messages, convention):
    """The answer, or None once the tools the model asked for have run."""
    message = reply.choices[0].message
    if not message.tool_calls:
        return message.content or ""
    messages.append(message.model_dump(exclude_none=True))
    for call in message.tool_calls:
        result = run_tool(call, convention)
        messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return None


def answer(question, convention="genai"):
    messages = [{"role": "user", "content": question}]
    said = None
    with client() as llm:
        while said is None:
            reply = llm.chat.completions.create(model="support-1", messages=messages, tools=SPECS)
            said = next_turn(reply, messages, convention)
    return said


async def answer_async(question, convention="genai"):
    messages = [{"role": "user", "content": question}]
    said = None
    async with client(AsyncOpenAI) as llm:
        while said is None:
            reply = await llm.chat.completions.create(
                model="support-1", messages=messages, tools=SPECS
            )
            said = next_turn(reply, messages, convention)
    return said


PASSAGES = {
    "policy-1": "Refunds are accepted within 30 days of delivery.",
    "shipping-2": "Orders ship within 2 business days.",
    "care-3": "Wash the jacket cold.",
}


def retrieve(question, k=2):
    words = set(question.lower().strip("?").split())
    ranked = sorted(PASSAGES, key=lambda i: -len(words & set(PASSAGES[i].lower().split())))
    with tracer.start_as_current_span("retrieve") as span:
        span.set_attribute("openinference.span.kind", "RETRIEVER")
        span.set_attribute("input.value", question)
        for n, ident in enumerate(ranked[:k]):
            span.set_attribute(f"retrieval.documents.{n}.document.id", ident)
            span.set_attribute(f"retrieval.documents.{n}.document.content", PASSAGES[ident])
        return ranked[:k]


def rag(question):
    found = retrieve(question)
    context = "\\n".join(f"[{i}] {PASSAGES[i]}" for i in found)
    with client() as llm:
        reply = llm.chat.completions.create(
            model="writer-1",
            messages=[
                {"role": "system", "content": "Answer from the passages, citing them.\\n" + context},
                {"role": "user", "content": question},
            ],
        )
    return reply.choices[0].message.content
'''


def support_model(request: Recorded) -> Action:
    """The model behind the agent, by the conversation so far (so concurrent agents each
    get their own next step): look the order up, refund it, then say so."""
    body = request.body
    if not body.get("tools"):  # the RAG pipeline's writer
        return text("Refunds are accepted within 30 days [policy-1].", input_tokens=30)
    done = [m for m in body["messages"] if m["role"] == "tool"]
    if not done:
        return tool_calls(("lookup_order", {"order_id": "A1"}), input_tokens=12, output_tokens=4)
    if len(done) == 1:
        # Two refunds asked at once: one for an order that does not exist.
        return tool_calls(
            ("issue_refund", {"order_id": "A1"}),
            ("issue_refund", {"order_id": "Z9"}),
            input_tokens=20,
            output_tokens=8,
        )
    return text("Your refund of $40 has been issued.", input_tokens=30, output_tokens=9)


@pytest.fixture
def model(fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> FakeLLM:
    fake_llm.respond_with(support_model)
    monkeypatch.setenv("APP_LLM_URL", fake_llm.openai_url)
    return fake_llm


@pytest.fixture
def app(tmp_path: Path) -> Iterator[ModuleType]:
    """The application's module, imported under a name of its own (never ``app``, which the
    projects of in-process pytester sessions use)."""
    path = tmp_path / "agent.py"
    path.write_text(textwrap.dedent(AGENT), encoding="utf-8")
    name = f"otel_agent_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(name, None)


@pytest.fixture(params=["openllmetry", "openinference"])
def instrumented(request: pytest.FixtureRequest) -> Iterator[str]:
    """The openai SDK instrumented as the application would be (the global tracer provider,
    as in production); the tool spans' convention to go with it."""
    if request.param == "openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as Instrumentor

        convention = "genai"
    else:
        from openinference.instrumentation.openai import (  # type: ignore[no-redef]
            OpenAIInstrumentor as Instrumentor,
        )

        convention = "openinference"
    from openai.resources.chat import completions

    # What the agent calls, put back by hand as well: OpenLLMetry's uninstrument() leaves
    # a wrapper on it, which would trace the next test's calls twice.
    classes = (completions.Completions, completions.AsyncCompletions)
    originals = [vars(cls)["create"] for cls in classes]
    instrumentor = Instrumentor()
    instrumentor.instrument()
    yield convention
    instrumentor.uninstrument()
    for cls, original in zip(classes, originals, strict=True):
        cls.create = original  # type: ignore[method-assign]


@pytest.fixture
def spans() -> Iterator[SpanCapture]:
    capture = SpanCapture()  # the global provider, as a session's
    yield capture
    capture.close()


def test_an_instrumented_openai_agent_read_at_the_seam(
    model: FakeLLM, app: Any, instrumented: str, spans: SpanCapture
) -> None:
    with spans.capture() as got:
        said = app.answer("Please refund order A1", instrumented)
    assert said == "Your refund of $40 has been issued."
    trace = got.trace()
    assert trace is not None
    assert trace.source == "otel"
    # The three calls the application ran, in order; the failed refund is not ok. The
    # calls the model asked for, recorded on its chat spans, are not counted again.
    assert [(c.name, c.arguments, c.ok) for c in trace.tool_calls] == [
        ("lookup_order", {"order_id": "A1"}, True),
        ("issue_refund", {"order_id": "A1"}, True),
        ("issue_refund", {"order_id": "Z9"}, False),
    ]
    assert trace.tool_calls[1].result == '{"refunded": 40}'
    assert trace.llm_calls == 3 == len(model.requests)
    assert trace.usage == Usage(input_tokens=12 + 20 + 30, output_tokens=4 + 8 + 9)
    assert trace.context == ()


def test_a_rag_pipeline_whose_retriever_is_traced(
    model: FakeLLM, app: Any, instrumented: str, spans: SpanCapture
) -> None:
    with spans.capture() as got:
        said = app.rag("How many days do I have for refunds?")
    assert "[policy-1]" in said
    trace = got.trace()
    assert trace is not None
    assert trace.context[0] == Passage(
        id="policy-1", text="Refunds are accepted within 30 days of delivery."
    )
    assert len(trace.context) == 2
    assert trace.tool_calls == ()
    assert trace.llm_calls == 1
    assert trace.usage.input_tokens == 30


def test_a_target_whose_spans_cannot_be_read_is_an_error_naming_the_target() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    from pytest_rubric._grade.sources import Source, Target

    def answer(question: str) -> str:
        return "fine"

    case = SimpleNamespace(id="c1", question="q", conversation=None)
    source = Source(
        target=Target.of(answer),
        target_name="targets:answer",
        tracer=SpanCapture(provider=TracerProvider(sampler=ALWAYS_OFF)),
    )
    text_, problem = source.fetch(case)
    assert text_ is None
    assert problem is not None
    assert problem.startswith("target targets:answer: --rubric-otel: the tracer provider's")

    readable = Source(
        target=Target.of(answer),
        target_name="targets:answer",
        tracer=SpanCapture(provider=TracerProvider()),
    )
    answer_, problem = readable.fetch(case)
    assert (problem, answer_ is not None and answer_.text) == (None, "fine")


# --- sessions: a team's project, in a process of its own -----------------------------------------

TELEMETRY = """
\"\"\"The application's tracing, set up when it is imported, as an instrumented service does:
its own SDK provider, its own exporter (a file per process), the openai SDK instrumented.\"\"\"

import json
import os

from opentelemetry import trace
from opentelemetry.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor


def line(span):
    parent = span.parent.span_id if span.parent else None
    context = span.context
    return json.dumps(
        {"name": span.name, "trace": context.trace_id, "id": context.span_id, "parent": parent}
    ) + "\\n"


out = open(f"spans-{os.getpid()}.jsonl", "a", encoding="utf-8")
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out, formatter=line)))
trace.set_tracer_provider(provider)
OpenAIInstrumentor().instrument()
"""

TARGETS = """
import app.telemetry  # noqa: F401  (the application's own setup)
from app.agent import answer_async


async def support_agent(question: str) -> str:
    return await answer_async(question)
"""

SUITE = """
suite: support
target: targets:support_agent
repeat: 3
cases:
  - id: refund_a1
    question: "Please refund order A1"
    criteria:
      - {id: refunded, type: any_of, any_of: ["refund of $40 has been issued"]}
  - id: refund_again
    question: "Refund A1 again please"
    criteria:
      - {id: refunded, type: any_of, any_of: ["refund"]}
  - id: refund_third
    question: "I want my money back for A1"
    criteria:
      - {id: refunded, type: any_of, any_of: ["$40"]}
"""


@pytest.fixture
def team(pytester: pytest.Pytester, write: Write, model: FakeLLM) -> pytest.Pytester:
    pytester.makeini("[pytest]\nrubric_dirs = evals\nrubric_otel = true\n")
    write("app/__init__.py", "")
    write("app/agent.py", AGENT)
    write("app/telemetry.py", TELEMETRY)
    write(
        "tests/test_tools.py",
        """
        from app.agent import lookup_order

        def test_lookup():
            assert lookup_order("A1")["status"] == "delivered"
        """,
    )
    write("evals/targets.py", TARGETS)
    write("evals/support.rubric.yaml", SUITE)
    return pytester


def exported(where: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted(where.glob("spans-*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]


def test_concurrent_async_targets_each_run_in_a_trace_of_their_own(
    team: pytest.Pytester, model: FakeLLM
) -> None:
    """Three cases, three samples each (asked at once, each an async target on its own
    loop): every call is one trace rooted at the plugin's span, holding exactly that call's
    model and tool spans. Calls share a trace only within a process, so one process is where
    they are told apart; test_an_agent_graded_on_its_spans_alone_with_no_change_to_it runs
    the flag in xdist workers."""
    # The application sets the process's tracer provider, once for good: a process of its own.
    result = team.runpytest_subprocess("--rubric-concurrency=3", timeout=180)
    result.assert_outcomes(passed=4)
    spans = exported(team.path)
    roots = [s for s in spans if s["name"] == SPAN_NAME]
    assert len(roots) == 9  # 3 cases x 3 samples
    assert all(r["parent"] is None for r in roots)
    assert len({r["trace"] for r in roots}) == 9
    by_trace: dict[int, list[str]] = {}
    for span in spans:
        by_trace.setdefault(span["trace"], []).append(span["name"])
    for root in roots:
        names = sorted(by_trace[root["trace"]])
        assert names == sorted(
            [SPAN_NAME, *["openai.chat"] * 3, "execute_tool lookup_order"]
            + ["execute_tool issue_refund"] * 2
        )
    assert len(model.requests) == 27  # 9 agents, 3 model calls each
    assert len(spans) == len(roots) * 7  # no span of the application outside a call


MODULES = """
import sys
from pathlib import Path


def pytest_unconfigure(config):
    loaded = sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")
    with Path("otel-modules.txt").open("a", encoding="utf-8") as listed:
        listed.write(" ".join(loaded) + "\\n")  # a line a session
"""


def test_a_session_without_the_flag_imports_no_opentelemetry_module(
    pytester: pytest.Pytester, write: Write
) -> None:
    write("app/__init__.py", "")
    write("app/bot.py", "def answer(question: str) -> str:\n    return 'Within 30 days.'\n")
    write("evals/targets.py", "from app.bot import answer\n")
    write(
        "evals/support.rubric.yaml",
        """
        suite: support
        target: targets:answer
        cases:
          - id: window
            question: "How long for a refund?"
            criteria:
              - {id: days, type: any_of, any_of: ["30 days"]}
        """,
    )
    write("conftest.py", MODULES)
    pytester.makeini("[pytest]\nrubric_dirs = evals\n")
    # Without the flag, then with it, one after the other in one fresh interpreter: what the
    # first session imported is still there when the second starts.
    probe = (
        "import pytest\n"
        "for args in ([], ['--rubric-otel']):\n"
        "    print('->', int(pytest.main(['-q', '-p', 'no:cacheprovider', *args])))\n"
    )
    done = pytester.run(sys.executable, "-c", probe, timeout=120)
    assert [line for line in done.outlines if line.startswith("-> ")] == ["-> 0", "-> 0"]
    assert len([line for line in done.outlines if line.startswith("1 passed")]) == 2
    without, with_flag = (pytester.path / "otel-modules.txt").read_text().splitlines()
    assert without == ""
    assert "opentelemetry.sdk.trace" in with_flag.split()


@pytest.mark.parametrize(
    ("args", "ini"), [(["--rubric-otel"], ""), ([], "rubric_otel = true\n")], ids=["flag", "ini"]
)
def test_the_flag_without_the_sdk_is_a_usage_error_naming_the_extra(
    pytester: pytest.Pytester,
    write: Write,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    ini: str,
) -> None:
    # As if opentelemetry-sdk were not installed: the import system finds no such module.
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk", None)
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    write("evals/support.rubric.yaml", "suite: s\ncases: []\n")
    pytester.makeini("[pytest]\nrubric_dirs = evals\n" + ini)
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--rubric-otel (ini rubric_otel) reads*opentelemetry-sdk, which is not installed: "
            "pip install pytest-rubric[[]otel[]]*"
        ]
    )


# --- graded end to end through the spans alone ----------------------------------------------------

HASTY = '''
"""The hasty agent: one model call, no tool, and it says the refund was issued."""

import app.telemetry  # noqa: F401  (the application's own setup)
from app.agent import client


def hasty_agent(question: str) -> str:
    with client() as llm:
        reply = llm.chat.completions.create(
            model="hasty-1", messages=[{"role": "user", "content": question}]
        )
    return reply.choices[0].message.content
'''

GRADED = """
suite: refunds
cases:
  - id: refund_a1
    question: "Please refund order A1"
    criteria:
      - {id: said, type: any_of, any_of: ["refund"]}
      - id: refunded
        type: tool_called
        tool: issue_refund
        args: {properties: {order_id: {const: A1}}, required: [order_id]}
        ok: true
      - id: claims
        type: claims_backed
        claims:
          - {id: refund, any_of: ["refund of $40 has been issued"], tool: issue_refund}
      - {id: budget, type: trace_limits, max_tool_calls: 5, max_llm_calls: 4}
"""


def test_an_agent_graded_on_its_spans_alone_with_no_change_to_it(
    team: pytest.Pytester, write: Write, model: FakeLLM
) -> None:
    """The targets return text only: the tool calls come from the spans the instrumented
    application records, so the agent that claims a refund it never issued fails on them.
    Under xdist: each worker reads its own spans, and the traces reach the controller's JSON."""

    def models(request: Recorded) -> Action:
        if request.body.get("model") == "hasty-1":
            return text("Your refund of $40 has been issued.", input_tokens=9, output_tokens=9)
        return support_model(request)

    model.respond_with(models)
    write("evals/hasty.py", HASTY)
    write("evals/refunds.rubric.yaml", GRADED)
    # The controller in process: the application and its tracing run in the workers.
    result = team.runpytest(
        "evals/refunds.rubric.yaml",
        "--rubric-target=targets:support_agent",
        "--rubric-target=hasty:hasty_agent",
        "--rubric-json=out.json",
        "-n",
        "2",
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*claims*claims_backed*UNMET*unbacked claim: refund*issue_refund*",
            "tool calls (0, otel):",
        ]
    )
    document = json.loads((team.path / "out.json").read_text(encoding="utf-8"))
    by_subject = {r["subject"]: r for r in document["results"]}
    careful, hasty = by_subject["support_agent"], by_subject["hasty_agent"]
    assert {c["id"]: c["verdict"] for c in careful["criteria"]} == dict.fromkeys(
        ["said", "refunded", "claims", "budget"], "MET"
    )
    trace = careful["samples"][0]["trace"]
    assert trace["source"] == "otel" and trace["llm_calls"] == 3
    assert [(c["name"], c["arguments"], c["ok"]) for c in trace["tool_calls"]] == [
        ("lookup_order", {"order_id": "A1"}, True),
        ("issue_refund", {"order_id": "A1"}, True),
        ("issue_refund", {"order_id": "Z9"}, False),
    ]
    verdicts = {c["id"]: c["verdict"] for c in hasty["criteria"]}
    assert verdicts == {"said": "MET", "refunded": "UNMET", "claims": "UNMET", "budget": "MET"}
    assert {"unbacked_claim", "confidently_wrong"} <= set(hasty["flags"])
    assert hasty["samples"][0]["trace"]["source"] == "otel"
    rows = {row["subject"]: row for row in document["leaderboard"]}
    assert rows["support_agent"]["tool_calls"] == 3.0
    assert rows["hasty_agent"]["tool_calls"] == 0.0


def test_collect_writes_the_trace_the_spans_show_and_it_grades_offline(
    team: pytest.Pytester, write: Write
) -> None:
    """``collect`` reads the spans as a run does (the ini's ``rubric_otel``, or its
    ``--rubric-otel``): the answers it writes carry the calls, and grade as the run did."""
    (team.path / "evals/support.rubric.yaml").unlink()
    write("evals/refunds.rubric.yaml", GRADED)
    collect = (sys.executable, "-m", "pytest_rubric", "collect", "--rubric-dir", "evals")
    done = team.run(*collect, "--target", "targets:support_agent", "--out", "answers")
    assert done.ret == 0, done.stderr.str()
    [line] = [json.loads(t) for t in (team.path / "answers/support_agent.jsonl").open()]
    assert [c["function"]["name"] for m in line["messages"] for c in m.get("tool_calls", ())] == [
        "lookup_order",
        "issue_refund",
        "issue_refund",
    ]
    write("evals/refunds.rubric.yaml", GRADED.replace("cases:", "responses: ../answers\ncases:"))
    result = team.runpytest("evals/refunds.rubric.yaml", "-o", "rubric_otel=false", "-v")
    result.stdout.fnmatch_lines(["*refund_a1?support_agent? PASSED*"])


# A retriever and a busy agent of the team's, traced by hand as a framework would: what the
# application records is data, read or refused, never a crash of the plugin's blamed on it.
RETRIEVERS = '''
import app.telemetry  # noqa: F401  (the application's own setup)
from opentelemetry import trace

tracer = trace.get_tracer("app.retriever")
POLICY = "Refunds are possible within 30 days."


def retrieve(*documents):
    attributes = {"openinference.span.kind": "RETRIEVER"}
    for n, document in documents:
        attributes.update(document_attributes(n, document))
    with tracer.start_as_current_span("retrieve", attributes=attributes):
        pass


def document_attributes(n, document):
    return {f"retrieval.documents.{n}.document.{k}": v for k, v in document.items()}


def generate(passages):
    """The model call that writes the answer from the passages."""
    with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}):
        pass


def far(question: str) -> str:
    """The policy, then a document whose N has 5,000 digits: read last."""
    retrieve((0, {"content": POLICY}), ("9" * 5000, {"id": "shipping", "content": "3 days."}))
    generate(POLICY)
    return "Within 30 days."


def huge_id(question: str) -> str:
    """A document id that is an int of 5,000 digits, which Python will not print."""
    retrieve((0, {"id": 10**5000, "content": POLICY}))
    return "Within 30 days."


def busy(question: str) -> str:
    """Exactly 10,000 spans: 9,999 steps, then one model call."""
    for n in range(9_999):
        with tracer.start_as_current_span(f"step {n}"):
            pass
    generate(POLICY)
    return "Within 30 days."


def busier(question: str) -> str:
    """One span more than a call may end."""
    with tracer.start_as_current_span("one more"):
        pass
    return busy(question)
'''


def _policy_run(team: pytest.Pytester, write: Write, **targets: str) -> pytest.RunResult:
    """The team's policy case asked of ``targets`` (name: function of ``RETRIEVERS``)."""
    write("evals/retrievers.py", RETRIEVERS)
    named = ", ".join(f'{name}: "retrievers:{function}"' for name, function in targets.items())
    write(
        "evals/policy.rubric.yaml",
        f"""
        suite: policy
        targets: {{{named}}}
        cases:
          - id: refund_window
            question: "How long do I have to ask for a refund?"
            criteria:
              - {{id: window, type: any_of, any_of: ["30 days"]}}
              - {{id: read, type: trace_limits, max_llm_calls: 1}}
        """,
    )
    # The application sets the process's tracer provider, once for good: a process of its own.
    return team.runpytest_subprocess(
        "evals/policy.rubric.yaml", "--rubric-json=out.json", timeout=180
    )


def _samples(team: pytest.Pytester) -> dict[str, dict[str, Any]]:
    document = json.loads((team.path / "out.json").read_text(encoding="utf-8"))
    return {r["subject"]: r["samples"][0] for r in document["results"]}


def test_spans_the_plugin_cannot_read_are_never_blamed_and_a_call_ends_at_most_10000(
    team: pytest.Pytester, write: Write
) -> None:
    """A document index of 5,000 digits is read in its place; an id Python will not print
    makes the trace unreadable: an ERROR naming the span, not one the target raised.
    Exactly 10,000 of the application's spans (the guide's "at most 10,000 per call") are
    read: the plugin's own span is not one of them; one more is refused. One session (a
    process of its own) asks the four targets: each is a subject of its own, graded apart."""
    result = _policy_run(team, write, far="far", huge_id="huge_id", busy="busy", busier="busier")
    result.assert_outcomes(passed=2, errors=2)
    lines_in_any_order(
        result,
        [
            "*target retrievers:huge_id: --rubric-otel: the span 'retrieve' cannot be read "
            "(ValueError: Exceeds the limit (4300 digits)*; the call's trace is not read*",
            "*target retrievers:busier: --rubric-otel: the call ended more than 10,000 spans*",
        ],
    )
    result.stdout.no_fnmatch_line("*raised ValueError*")
    samples = _samples(team)
    assert [(p["id"], p["text"]) for p in samples["far"]["trace"]["context"]] == [
        (None, "Refunds are possible within 30 days."),
        ("shipping", "3 days."),
    ]
    assert samples["busy"]["trace"]["llm_calls"] == 1


# An application whose model client is not instrumented: its spans show a retriever, or its
# tools, and no model call; and one that returns its context itself, with no span at all.
UNSEEN = """
import json

import app.telemetry  # noqa: F401  (the application's own setup)
from opentelemetry import trace

tracer = trace.get_tracer("app.unseen")
POLICY = "Refunds are possible within 30 days."
ANSWER = "Your refund has been issued: refunds are possible within 30 days."


def retriever(question: str) -> str:
    attributes = {
        "openinference.span.kind": "RETRIEVER",
        "retrieval.documents.0.document.id": "policy",
        "retrieval.documents.0.document.content": POLICY,
    }
    with tracer.start_as_current_span("retrieve", attributes=attributes):
        pass
    return ANSWER


def tools(question: str) -> str:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "issue_refund",
        "gen_ai.tool.call.arguments": json.dumps({"order_id": "A1"}),
        "gen_ai.tool.call.result": json.dumps({"refunded": 40}),
    }
    with tracer.start_as_current_span("execute_tool issue_refund", attributes=attributes):
        pass
    return ANSWER


def returned(question: str) -> dict:
    return {"answer": ANSWER, "context": [{"id": "policy", "text": POLICY}]}
"""

UNSEEN_SUITE = """
suite: unseen
targets: {retriever: "unseen:retriever", tools: "unseen:tools", returned: "unseen:returned"}
cases:
  - id: refund_a1
    question: "Please refund order A1"
    criteria:
      - {id: said, type: any_of, any_of: ["refund"]}
      - {id: no_model, type: trace_limits, max_llm_calls: 0}
      - {id: never, type: tool_called, tool: issue_refund, times: 0}
      - {id: order, type: tool_sequence, tools: [issue_refund]}
      - id: claims
        type: claims_backed
        claims:
          - {id: refund, any_of: ["refund has been issued"], tool: issue_refund}
"""


def test_spans_that_show_no_model_call_leave_the_model_calls_unknown(
    team: pytest.Pytester, write: Write
) -> None:
    """A retriever's span alone, or tool spans alone, say nothing of the model: a limit on
    model calls is ERROR, never MET at 0. With the retriever's alone the calls are not known
    either: "never called" and the agent's claim are ERROR, as when the target returns the
    same context itself, never MET nor an unbacked claim. Tool spans alone are the calls."""
    write("evals/unseen.py", UNSEEN)
    write("evals/unseen.rubric.yaml", UNSEEN_SUITE)
    # The application sets the process's tracer provider, once for good: a process of its own.
    result = team.runpytest_subprocess(
        "evals/unseen.rubric.yaml", "--rubric-json=out.json", timeout=180
    )
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(
        ["*no_model*ERROR*max_llm_calls: the trace has no model calls; a limit on a figure*"]
    )
    document = json.loads((team.path / "out.json").read_text(encoding="utf-8"))
    by_subject = {r["subject"]: r for r in document["results"]}
    verdicts = {
        subject: {c["id"]: c["verdict"] for c in r["criteria"]} for subject, r in by_subject.items()
    }
    unknown = {"said": "MET", "no_model": "ERROR", "never": "ERROR", "order": "ERROR"}
    assert verdicts["retriever"] == verdicts["returned"] == {**unknown, "claims": "ERROR"}
    assert verdicts["tools"] == {
        "said": "MET",
        "no_model": "ERROR",
        "never": "UNMET",
        "order": "MET",
        "claims": "MET",
    }
    reasons = {c["id"]: c["reason"] for c in by_subject["retriever"]["criteria"]}
    assert "which calls were made is not known" in reasons["never"]
    assert "which calls were made is not known" in reasons["claims"]
    assert not {"unbacked_claim", "confidently_wrong"} & set(by_subject["retriever"]["flags"])
    traces = {subject: r["samples"][0]["trace"] for subject, r in by_subject.items()}
    assert (traces["retriever"]["source"], traces["retriever"]["llm_calls"]) == ("otel", None)
    assert traces["retriever"]["tool_calls"] == []
    assert traces["tools"]["llm_calls"] is None
    assert [(c["name"], c["ok"]) for c in traces["tools"]["tool_calls"]] == [("issue_refund", True)]
    rows = {row["subject"]: row for row in document["leaderboard"]}
    assert (rows["retriever"]["tool_calls"], rows["tools"]["tool_calls"]) == (None, 1.0)


# A search whose retriever's span holds a document its own filter then dropped.
NOTHING = """
import app.telemetry  # noqa: F401  (the application's own setup)
from opentelemetry import trace

tracer = trace.get_tracer("app.search")


def search(question: str) -> dict:
    attributes = {
        "openinference.span.kind": "RETRIEVER",
        "retrieval.documents.0.document.id": "policy",
        "retrieval.documents.0.document.content": "Refunds are possible within 30 days.",
    }
    with tracer.start_as_current_span("retrieve", attributes=attributes):
        pass
    return {"answer": "I found no refund policy.", "context": []}
"""


def test_an_empty_context_the_target_returns_is_not_replaced_by_its_spans(
    team: pytest.Pytester, write: Write
) -> None:
    """What the target returned wins where it says something: an empty context is a
    retrieval that found nothing, so the recall is 0, a retrieval failure."""
    write("evals/nothing.py", NOTHING)
    write(
        "evals/nothing.rubric.yaml",
        """
        suite: nothing
        target: nothing:search
        cases:
          - id: refund_window
            question: "How long do I have to ask for a refund?"
            criteria:
              - {id: retrieved, type: context_recall, facts: [["30 days"]]}
        """,
    )
    # The application sets the process's tracer provider, once for good: a process of its own.
    result = team.runpytest_subprocess(
        "evals/nothing.rubric.yaml", "--rubric-json=out.json", timeout=180
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*retrieved*context_recall*UNMET*", "context (0): *found nothing"])
    trace = _samples(team)["search"]["trace"]
    assert (trace["source"], trace["context"]) == ("returned", [])


# Tools traced, the model client not: a lookup that shows no result, a refund that fails.
TOOL_ONLY = """
import app.telemetry  # noqa: F401  (the application's own setup)
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

tracer = trace.get_tracer("app.tools")


def run(name, **attributes):
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, **attributes}
    return tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes)


def toolonly(question: str) -> str:
    with run("lookup_order", **{"gen_ai.tool.call.arguments": '{"order_id": "A1"}'}):
        pass
    with run("issue_refund", **{"gen_ai.tool.call.result": "failed"}) as span:
        span.set_status(Status(StatusCode.ERROR, "declined"))
    return "I could not refund order A1."
"""

TOOL_ONLY_SUITE = """
suite: tools
cases:
  - id: refund_a1
    question: "Please refund order A1"
    criteria:
      - {id: said, type: any_of, any_of: ["refund"]}
      - {id: no_model, type: trace_limits, max_llm_calls: 0}
      - {id: looked_up, type: tool_called, tool: lookup_order, ok: true, times: 1}
      - {id: refunded, type: tool_called, tool: issue_refund, ok: true}
      - {id: tried, type: tool_sequence, tools: [lookup_order, issue_refund]}
"""


def test_a_trace_collected_from_spans_grades_offline_as_it_graded_live(
    team: pytest.Pytester, write: Write
) -> None:
    """What ``collect`` writes reads back as the trace the spans showed: the model calls
    not known (no model span), a call that showed no result, a failure told in plain text.
    So each criterion has the verdict it had live, a limit on model calls ERROR both ways."""
    (team.path / "evals/support.rubric.yaml").unlink()
    write("evals/toolonly.py", TOOL_ONLY)
    write("evals/tools.rubric.yaml", TOOL_ONLY_SUITE)
    collect = (sys.executable, "-m", "pytest_rubric", "collect", "--rubric-dir", "evals")
    done = team.run(*collect, "--target", "toolonly:toolonly", "--out", "coll", "--rubric-otel")
    assert done.ret == 0, done.stderr.str()
    # The application sets the process's tracer provider, once for good: a process of its own.
    live = team.runpytest_subprocess(
        "evals/tools.rubric.yaml",
        "--rubric-target=toolonly:toolonly",
        "--rubric-json=live.json",
        timeout=180,
    )
    live.assert_outcomes(errors=1)
    write(
        "evals/tools.rubric.yaml", TOOL_ONLY_SUITE.replace("cases:", "responses: ../coll\ncases:")
    )
    offline = team.runpytest(
        "evals/tools.rubric.yaml", "-o", "rubric_otel=false", "--rubric-json=offline.json"
    )
    offline.assert_outcomes(errors=1)
    offline.stdout.fnmatch_lines(["*no_model*ERROR*max_llm_calls: the trace has no model calls*"])

    def graded(name: str) -> tuple[dict[str, str], dict[str, Any]]:
        document = json.loads((team.path / name).read_text(encoding="utf-8"))
        (result,) = document["results"]
        verdicts = {c["id"]: c["verdict"] for c in result["criteria"]}
        return verdicts, result["samples"][0]["trace"]

    (verdicts, seen), (again, read) = graded("live.json"), graded("offline.json")
    assert (
        verdicts
        == again
        == {
            "said": "MET",
            "no_model": "ERROR",
            "looked_up": "MET",
            "refunded": "UNMET",
            "tried": "MET",
        }
    )
    assert (seen["source"], read["source"]) == ("otel", "responses")
    assert read["llm_calls"] is seen["llm_calls"] is None
    assert (
        read["tool_calls"]
        == seen["tool_calls"]
        == [
            {"name": "lookup_order", "arguments": {"order_id": "A1"}, "ok": True, "result": None},
            {"name": "issue_refund", "arguments": {}, "ok": False, "result": "failed"},
        ]
    )
