"""Judge soak: 2,000 judged criteria against the local test server with 20 % injected faults.

What is run
-----------
Two judged sessions, in fresh subprocesses, each on a generated rubric file
of 200 cases x 5 judged criteria (per-criterion grading, so at least one
judge call per criterion): one on the OpenAI wire with pytest-xdist
(``-n 2``), one on the Anthropic wire without it. Each criterion's
requirement carries a token, ``S0042M`` or ``S0042U``, that scripts the
verdict the fake judge gives it (MET or UNMET); the verdicts are drawn once,
from a fixed seed.

``tests/fake_llm.py`` answers every call after a short latency, and 20 % of
calls, chosen at random, fail instead, in one of these ways (equal shares):

* 429 with ``Retry-After: 1``;
* 500;
* a timeout: the reply comes after the client's ``--rubric-judge-timeout``;
* a slow trickle: the headers at once, then the verdict one byte every
  0.1 s, so each socket read is in time and the whole reply (about 30 s)
  never is;
* an oversize reply: the verdict padded to 2 MiB, sent chunked (no
  Content-Length), above the client's 1 MiB cap;
* a dropped connection (no HTTP response at all);
* a malformed reply: HTTP 200 whose message is not a verdict;
* a malformed body: HTTP 200 whose body is not JSON;
* a truncated reply: a verdict cut off in transit (Content-Length not met).

A third session runs the same kind of file against a judge of the user's own
(``pytest_rubric_make_judge`` in a ``conftest.py``, with ``-n 2``) that ends
badly in its own ways: of its calls, 10 % raise ``SystemExit``, 10 %
``asyncio.CancelledError`` and 10 % ``GeneratorExit``; every other reply is
the scripted verdict with a lone surrogate (half an emoji) and a terminal
escape sequence in its reason. The session must end in time, write its
reports, and count each of those criteria ERROR, never a verdict.

What is checked
---------------
From each session's ``--rubric-json`` and ``--junitxml``:

* every criterion ends with its scripted verdict or ERROR: a verdict other
  than the scripted one (or a reason that names another criterion's token)
  is **wrong**, and there must be none;
* an ERROR is never counted as a pass: a case with an ERROR criterion must
  have ``passed: false`` in the JSON and a non-passing JUnit outcome;
* every other case passes exactly when its scripted verdicts put its score
  at or above ``min_score`` (3 of 5 MET);
* the session ends within ``--max-seconds`` (default 240) and calls the
  judge at least 2,000 times.

The retry budget is raised (ini ``rubric_judge_retry_budget``) so that the
soak exercises retries rather than the budget; ``rubric_judge_backoff`` is
0.05 s. Usage::

    .venv/bin/python bench/bench_soak.py [--calls 2000] [--fault-rate 0.2] [--check]

Other scripts may ``from bench_soak import run``.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, TypedDict

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _child import child_env  # noqa: E402

from tests.fake_llm import (  # noqa: E402
    Action,
    FakeLLM,
    Recorded,
    cut,
    delay,
    drop,
    oversize,
    raw,
    status,
    text,
    trickle,
    verdict,
)

PER_CASE = 5
MIN_SCORE = 0.6
TIMEOUT = 1.0  # --rubric-judge-timeout in the soak
# Seconds per byte of a trickled reply: well inside TIMEOUT, so that no single read
# times out and only the bound on the whole call ends it.
TRICKLE = 0.1
OVERSIZE = 2 * 1024 * 1024  # bytes of an oversize reply, twice the client's cap
TOKEN = re.compile(r"\bS(\d{5})([MU])\b")
FAULTS = (
    "429",
    "500",
    "timeout",
    "slow trickle",
    "oversize",
    "dropped",
    "malformed reply",
    "malformed body",
    "truncated",
)


class Result(TypedDict):
    benchmark: str
    criteria: int
    calls: int  # requests the server answered or failed, retries included, and own-judge calls
    own_calls: int  # calls to the judge of one's own (30 % of them exit, cancel or close)
    faults: dict[str, int]
    fault_rate: float  # faults / calls
    scripted: int  # criteria that ended with their scripted verdict
    errors: int  # criteria that ended as ERROR
    wrong: int  # criteria that ended with any other verdict: must be 0
    cases: int
    error_cases: int
    error_passed: int  # cases with an ERROR criterion counted as passed: must be 0
    wrong_outcomes: int  # cases without ERROR whose pass/fail is not the scripted one: must be 0
    seconds: float
    max_seconds: float


class Faulty:
    """The fake judge's responder: the scripted verdict, or one of the faults."""

    def __init__(self, rate: float, seed: int) -> None:
        self.rate = rate
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self.faults: collections.Counter[str] = collections.Counter()
        self.calls = 0

    def __call__(self, request: Recorded) -> Action:
        with self._lock:
            self.calls += 1
            faulty = self._random.random() < self.rate
            kind = self._random.choice(FAULTS) if faulty else None
            if kind is not None:
                self.faults[kind] += 1
        match = TOKEN.search(_system(request))
        if match is None:
            return status(400, body={"error": {"message": "bench_soak: no token in the prompt"}})
        token = match.group(0)
        good = verdict("MET" if match.group(2) == "M" else "UNMET", f"scripted for {token}")
        if kind == "429":
            return status(429, headers={"Retry-After": "1"})
        if kind == "500":
            return status(500)
        if kind == "timeout":
            return delay(TIMEOUT + 0.5, good)
        if kind == "slow trickle":
            return trickle(good, interval=TRICKLE)
        if kind == "oversize":
            return oversize(good, size=OVERSIZE, chunked=True)
        if kind == "dropped":
            return drop()
        if kind == "malformed reply":
            return text(f"I would say {token} is met, more or less.")
        if kind == "malformed body":
            return raw("<html><body>502 Bad Gateway</body></html>", content_type="text/html")
        if kind == "truncated":
            return cut(good)
        return good


def _system(request: Recorded) -> str:
    """The system prompt, which holds the criterion (the response is fenced in the user turn)."""
    body = request.body
    if isinstance(body, dict) and "system" in body:
        return str(body["system"])
    try:
        return str(body["messages"][0]["content"])
    except (KeyError, IndexError, TypeError):
        return ""


def generate(directory: Path, cases: int, rng: random.Random) -> dict[str, dict[str, str]]:
    """Write the rubric file; return each case's scripted verdict per criterion id."""
    lines = [f"min_score: {MIN_SCORE}", "cases:"]
    scripted: dict[str, dict[str, str]] = {}
    for i in range(cases):
        case = f"c{i:04d}"
        lines += [
            f"  - id: {case}",
            f"    question: 'Question {i}?'",
            f"    response: 'Answer {i}.'",
            "    criteria:",
        ]
        scripted[case] = {}
        for k in range(PER_CASE):
            met = rng.random() < 0.6
            token = f"S{i * PER_CASE + k:05d}{'M' if met else 'U'}"
            scripted[case][f"j{k}"] = "MET" if met else "UNMET"
            lines.append(f"      - {{id: j{k}, requirement: 'Says the answer fits {token}'}}")
    (directory / "soak.rubric.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (directory / "pytest.ini").write_text(
        "[pytest]\nrubric_judge_backoff = 0.05\nrubric_judge_retry_budget = 1000000\n",
        encoding="utf-8",
    )
    return scripted


# The user's own judge of the third session: it exits, cancels and closes in its own ways,
# and its good replies carry half an emoji and an escape sequence.
OWN_JUDGE = """
import asyncio
import json
import random
import re
import sys
import threading

TOKEN = re.compile(r"\\bS(\\d{5})([MU])\\b")
_lock = threading.Lock()
_rng = random.Random(SEED)


class Hostile:
    name = "hostile"

    async def complete(self, system, user):
        with _lock:
            roll = _rng.random()
            with open("calls.txt", "a") as calls:
                calls.write("1\\n")
        if roll < 0.1:
            sys.exit("the judge exits")
        if roll < 0.2:
            raise asyncio.CancelledError()
        if roll < 0.3:
            raise GeneratorExit("the judge closed")
        match = TOKEN.search(system)
        verdict = "MET" if match.group(2) == "M" else "UNMET"
        reason = f"scripted for {match.group(0)} \\ud83d \\x1b[2K\\r1 passed"
        return json.dumps({"reason": reason, "verdict": verdict}, ensure_ascii=False)


def pytest_rubric_make_judge(config):
    return Hostile()
"""


def _session(
    directory: Path, fake: FakeLLM, provider: str, workers: int, max_seconds: float
) -> tuple[dict[str, Any], dict[str, str]]:
    url = fake.openai_url if provider == "openai" else fake.url
    env = child_env(**{f"{provider.upper()}_API_KEY": "sk-soak-not-a-real-key"})
    if provider == "own":
        (directory / "conftest.py").write_text(OWN_JUDGE.replace("SEED", "20261204"))
    args = [
        *("-q", "-p", "no:cacheprovider"),
        *(["-n", str(workers)] if workers else ["-p", "no:xdist"]),
        *(
            []
            if provider == "own"
            else [f"--rubric-judge={provider}:soak", f"--rubric-judge-url={url}"]
        ),
        f"--rubric-judge-timeout={TIMEOUT}",
        *("--rubric-concurrency=16", "--rubric-cache=off"),
        *("--rubric-json=out.json", "--junitxml=junit.xml"),
    ]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", *args],
            cwd=directory,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=max_seconds,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise SystemExit(
            f"bench_soak: the {provider} session did not end in {max_seconds:g}s"
        ) from exc
    if done.returncode not in (0, 1) or not (directory / "out.json").exists():
        raise SystemExit(f"bench_soak: the {provider} session broke:\n{done.stdout[-3000:]}")
    report = json.loads((directory / "out.json").read_text(encoding="utf-8"))
    outcomes = {}
    for testcase in ET.parse(directory / "junit.xml").getroot().iter("testcase"):
        tags = {child.tag for child in testcase}
        outcome = next((t for t in ("error", "failure", "skipped") if t in tags), "passed")
        outcomes[testcase.get("name", "")] = outcome
    return report, outcomes


def run(
    *, criteria: int = 2000, fault_rate: float = 0.2, seed: int = 20261203, max_seconds: float = 240
) -> Result:
    rng = random.Random(seed + 1)  # the verdicts; the faults draw from their own stream
    counts: collections.Counter[str] = collections.Counter()
    faulty = Faulty(fault_rate, seed)
    start = time.perf_counter()
    own_calls = 0
    with FakeLLM(latency=0.02) as fake:
        fake.respond_with(faulty)
        parts = [("openai", 2), ("anthropic", 0), ("own", 2)]
        for provider, workers in parts:
            cases = criteria // PER_CASE // len(parts)
            directory = Path(tempfile.mkdtemp(prefix=f"bench_soak_{provider}_"))
            try:
                scripted = generate(directory, cases, rng)
                left = max_seconds - (time.perf_counter() - start)
                report, outcomes = _session(directory, fake, provider, workers, left)
                if provider == "own":
                    own_calls = len((directory / "calls.txt").read_text().split())
            finally:
                shutil.rmtree(directory, ignore_errors=True)
            _tally(report, outcomes, scripted, counts)
        calls = len(fake.requests) + own_calls
    seconds = time.perf_counter() - start
    faults = {kind: faulty.faults[kind] for kind in FAULTS}
    return {
        "benchmark": "soak",
        "criteria": counts["criteria"],
        "calls": calls,
        "own_calls": own_calls,
        "faults": faults,
        "fault_rate": sum(faults.values()) / calls if calls else 0.0,
        "scripted": counts["scripted"],
        "errors": counts["errors"],
        "wrong": counts["wrong"],
        "cases": counts["cases"],
        "error_cases": counts["error_cases"],
        "error_passed": counts["error_passed"],
        "wrong_outcomes": counts["wrong_outcomes"],
        "seconds": seconds,
        "max_seconds": max_seconds,
    }


def _tally(
    report: dict[str, Any],
    outcomes: dict[str, str],
    scripted: dict[str, dict[str, str]],
    counts: collections.Counter[str],
) -> None:
    seen = set()
    for result in report["results"]:
        case = result["case"]
        seen.add(case)
        counts["cases"] += 1
        errored = False
        for criterion in result["criteria"]:
            counts["criteria"] += 1
            expected = scripted[case][criterion["id"]]
            got = criterion["verdict"]
            if got == "ERROR":
                counts["errors"] += 1
                errored = True
            elif got == expected and _token(case, criterion["id"], expected) in criterion["reason"]:
                # the verdict and the reason are this criterion's, not another call's
                counts["scripted"] += 1
            else:
                counts["wrong"] += 1
        junit = outcomes.get(result["nodeid"].rsplit("::", 1)[-1], "missing")
        if errored:
            counts["error_cases"] += 1
            counts["error_passed"] += bool(result["passed"]) or junit == "passed"
        else:
            met = sum(v == "MET" for v in scripted[case].values())
            should_pass = met / PER_CASE >= MIN_SCORE
            counts["wrong_outcomes"] += bool(result["passed"]) != should_pass or (
                junit != ("passed" if should_pass else "failure")
            )
    counts["wrong"] += sum(len(v) for k, v in scripted.items() if k not in seen)


def _token(case: str, criterion: str, expected: str) -> str:
    index = int(case[1:]) * PER_CASE + int(criterion[1:])
    return f"S{index:05d}{expected[0]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="judged criteria (2000)")
    parser.add_argument("--fault-rate", type=float, default=0.2)
    parser.add_argument("--max-seconds", type=float, default=240)
    parser.add_argument("--check", action="store_true", help="exit 1 on any wrong verdict")
    args = parser.parse_args(argv)
    r = run(criteria=args.calls, fault_rate=args.fault_rate, max_seconds=args.max_seconds)
    faults = ", ".join(f"{kind} {n}" for kind, n in r["faults"].items())
    print(
        f"judge soak: {r['criteria']} judged criteria, {r['calls']} judge calls, "
        f"{sum(r['faults'].values())} faults injected ({r['fault_rate']:.0%}: {faults}); "
        f"{r['own_calls']} of the calls to a judge of one's own (SystemExit, CancelledError, "
        "GeneratorExit, half an emoji)"
    )
    print(
        f"  criteria: {r['scripted']} scripted verdict, {r['errors']} ERROR, {r['wrong']} wrong; "
        f"cases: {r['cases']}, {r['error_cases']} with an ERROR, {r['error_passed']} of them "
        f"passed, {r['wrong_outcomes']} other wrong outcomes; {r['seconds']:.1f}s "
        f"(bound {r['max_seconds']:g}s)"
    )
    return 1 if args.check and not sound(r) else 0


def sound(r: Result) -> bool:
    """What the soak must show: nothing wrong, nothing lost, every call ended in time."""
    return (
        r["wrong"] == 0
        and r["error_passed"] == 0
        and r["wrong_outcomes"] == 0
        and r["scripted"] + r["errors"] == r["criteria"]
        and r["calls"] >= r["criteria"]
        and r["seconds"] <= r["max_seconds"]
    )


if __name__ == "__main__":
    sys.exit(main())
