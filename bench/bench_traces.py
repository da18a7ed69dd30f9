"""What grading a trace costs: N items whose answers carry traces of 10 tool calls each,
against the same N items without traces.

What is measured
----------------
Two pytest runs over N items each, in fresh subprocesses, timed by wall clock around the
whole process (``bench_items``' runner: interleaved, one untimed warm-up pair, medians):

* **traced**: ``evals/agent.rubric.yaml`` with N cases whose responses come from a
  responses file (``answers/agent.jsonl``); each line carries, beside its response, the
  OpenAI messages of an agent that made 10 tool calls (each with its arguments and a
  result), a context of two passages and a usage. Every case grades three deterministic
  criteria on the answer (``any_of``, ``number``, ``forbidden``) and two on the trace
  (``tool_called`` with an ``args`` schema, ``tool_sequence``).
* **plain**: the same N cases and responses, the lines without trace fields, the same
  three answer criteria, and two more on the answer (``regex``, ``all_of``) in place of
  the two on the trace (which would only be ERROR there): as many criteria each side.

Both write ``--rubric-json``, so the traces are read, carried through the results and
written out: the ratio is everything a trace costs (read, carried, checked, written), beside
what the same number of answer criteria costs.

The target: at N = 3000 the traced run takes at most 1.3x the plain run
(median against median). ``--check`` turns that into the exit status.

Usage::

    .venv/bin/python bench/bench_traces.py [--n 3000] [--repeat 5] [--check]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_items import _BASE_ARGS, SideTimes, _python, _side, _timed

__all__ = ["DEFAULT_N", "TARGET", "TracesResult", "generate", "run"]

DEFAULT_N = 3000
DEFAULT_REPEAT = 5
TARGET = 1.3
CALLS = 10
ARGS = (*_BASE_ARGS, "--rubric-dir", "evals", "-o", "rubric_fast_exit=false")

TOOLS = ("search_orders", "lookup_order", "check_stock", "lookup_customer", "issue_refund")


class TracesResult(TypedDict):
    benchmark: str
    n: int
    calls: int
    repeat: int
    traced: SideTimes
    plain: SideTimes
    ratio: float  # traced median / plain median


def _messages(i: int) -> list[dict[str, Any]]:
    """An agent's conversation with CALLS tool calls, two per model turn."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"Refund order {i}, please."}]
    for turn in range(CALLS // 2):
        ids = [f"call_{i}_{turn}_{k}" for k in range(2)]
        names = [TOOLS[(2 * turn + k) % len(TOOLS)] for k in range(2)]
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": ident,
                        "type": "function",
                        "function": {
                            "name": name,
                            "arguments": json.dumps({"order_id": str(i), "step": turn}),
                        },
                    }
                    for ident, name in zip(ids, names, strict=True)
                ],
            }
        )
        messages += [
            {
                "role": "tool",
                "tool_call_id": ident,
                "content": json.dumps({"order_id": str(i), "status": "ok", "step": turn}),
            }
            for ident in ids
        ]
    messages.append({"role": "assistant", "content": _answer(i)})
    return messages


def _answer(i: int) -> str:
    return f"Order {i} was refunded: {i % 97 + 3} dollars are back on your card within 5 days."


def _line(i: int, *, traced: bool) -> dict[str, Any]:
    line: dict[str, Any] = {"id": f"c{i:05d}", "response": _answer(i)}
    if traced:
        line["messages"] = _messages(i)
        line["context"] = [
            {"id": "refunds", "text": "Refunds reach the card within 5 days.", "source": "kb"},
            {"id": f"order-{i}", "text": f"Order {i}: delivered, paid by card.", "source": "db"},
        ]
        line["usage"] = {"input_tokens": 900 + i % 50, "output_tokens": 60, "cost_usd": 0.0012}
        line["latency_s"] = 1.0 + (i % 10) / 10
    return line


def _case(i: int, *, traced: bool) -> str:
    criteria = [
        '{id: refunded, type: any_of, any_of: ["refunded", "refund"]}',
        f"{{id: amount, type: number, value: {i % 97 + 3}, abs_tol: 0.5}}",
        '{id: no_cash, type: forbidden, phrases: ["in cash"]}',
    ]
    if traced:
        criteria += [
            "{id: looked_up, type: tool_called, tool: lookup_order, "
            f'args: {{properties: {{order_id: {{const: "{i}"}}}}, required: [order_id]}}}}',
            "{id: order, type: tool_sequence, tools: [search_orders, issue_refund]}",
        ]
    else:  # as many criteria, on the answer: what the two over the trace stand for here
        criteria += [
            f"{{id: looked_up, type: regex, pattern: 'order {i}\\b'}}",
            '{id: order, type: all_of, all_of: ["refunded", "card"]}',
        ]
    body = "\n".join(f"      - {c}" for c in criteria)
    return f'  - id: c{i:05d}\n    question: "Refund order {i}, please."\n    criteria:\n{body}\n'


def generate(directory: Path, n: int, *, traced: bool) -> None:
    """The project of one side: its rubric file and its responses file."""
    (directory / "evals").mkdir(parents=True, exist_ok=True)
    (directory / "answers").mkdir(exist_ok=True)
    (directory / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    cases = "".join(_case(i, traced=traced) for i in range(n))
    (directory / "evals/agent.rubric.yaml").write_text(
        f"suite: agent\nresponses: ../answers/\ncases:\n{cases}", encoding="utf-8"
    )
    (directory / "answers/agent.jsonl").write_text(
        "".join(json.dumps(_line(i, traced=traced)) + "\n" for i in range(n)), encoding="utf-8"
    )


def run(n: int = DEFAULT_N, repeat: int = DEFAULT_REPEAT, *, warmup: int = 1) -> TracesResult:
    python = _python()
    root = Path(tempfile.mkdtemp(prefix="rubric-bench-traces-"))
    try:
        sides = {name: root / name for name in ("traced", "plain")}
        for name, directory in sides.items():
            generate(directory, n, traced=name == "traced")
        times: dict[str, list[float]] = {name: [] for name in sides}
        cpu: dict[str, list[float]] = {name: [] for name in sides}
        for round_ in range(warmup + repeat):
            for name, directory in sides.items():
                args = (*ARGS, "--rubric-json", "out.json")
                wall, used = _timed(python, args, directory, n, name)
                if round_ >= warmup:
                    times[name].append(wall)
                    cpu[name].append(used)
        traced, plain = (_side(times[s], cpu[s], n) for s in ("traced", "plain"))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "benchmark": "traces",
        "n": n,
        "calls": CALLS,
        "repeat": repeat,
        "traced": traced,
        "plain": plain,
        "ratio": traced["median_s"] / plain["median_s"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=DEFAULT_N)
    parser.add_argument("--repeat", type=int, default=DEFAULT_REPEAT)
    parser.add_argument("--check", action="store_true", help=f"exit 1 above {TARGET}x")
    args = parser.parse_args(argv)
    result = run(args.n, args.repeat)
    traced, plain = result["traced"], result["plain"]
    print(
        f"{result['n']} items, traces of {result['calls']} tool calls: traced "
        f"{traced['median_s']:.2f}s, plain {plain['median_s']:.2f}s (medians of "
        f"{result['repeat']}); ratio {result['ratio']:.2f} (target <= {TARGET:g}); CPU ratio "
        f"{traced['cpu_median_s'] / plain['cpu_median_s']:.2f}"
    )
    return 1 if args.check and result["ratio"] > TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
