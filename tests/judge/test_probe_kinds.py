"""Judge bias beyond tone (the length and position probes), and a rubric file's words to its
judge (``judge_instructions:``, ``judge_examples:``)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_rubric._cli.merge import main as merge_main
from pytest_rubric._errors import RubricLoadError
from pytest_rubric._grade.grader import Grader
from pytest_rubric._grade.restyle import PADDING, pad, paddable
from pytest_rubric._grade.style import ASSERTIVE, HEDGES
from pytest_rubric._load.loader import load_suite, parse_suite
from pytest_rubric._report.audit import ProbeFigures, audit
from pytest_rubric._report.document import JudgeAuditModel, written
from pytest_rubric._report.gates import Gates, run_gates
from pytest_rubric._results import CaseResult, ProbeRecord, Verdict
from pytest_rubric._schema import JudgeExample
from pytest_rubric.criteria.judge import Requirement
from pytest_rubric.judge.prompts import Guidance, one_shot, per_criterion
from tests.conftest import EXAMPLES
from tests.fake_llm import Action, FakeLLM, Recorded, json_reply

Write = Callable[[str, str], Path]


# --- the padding: long, neutral, and invisible to every deterministic check -------------------


def test_padding_doubles_the_answer_and_is_a_pure_function() -> None:
    for text in ("One day.", "x" * 1000, "A longer answer. " * 40):
        padded = pad(text)
        assert padded.startswith(text + "\n\n")
        assert len(text) * 2 <= len(padded) <= len(text) * 2 + 2 + max(map(len, PADDING)) + 1
        assert pad(text) == padded
    assert pad("") == "" and pad("  ") == "  "
    assert not paddable('{"a": 1}') and not paddable(" [1, 2] ") and not paddable("")
    assert paddable("{not json} and prose") and paddable('```json\n{"a": 1}\n```')
    assert not paddable('{"n": 1' + "0" * 5_000 + "}")  # JSON, however long its integers


def test_padding_sentences_claim_nothing_the_checks_could_see() -> None:
    words = re.findall(r"[a-z']+", " ".join(PADDING).lower())
    assert not re.search(r"\d", " ".join(PADDING))
    assert not {"no", "not", "never", "nothing", "none"} & set(words)
    markers = {m for m in (*HEDGES, *ASSERTIVE) if " " not in m}
    assert not markers & set(words)


def _bundled_answers() -> list[str]:
    """Every answer the bundled examples hold: their answer files, inline responses and
    calibration labels."""
    texts: list[str] = []
    for path in sorted((EXAMPLES / "answers").glob("*.jsonl")):
        texts += [json.loads(line)["response"] for line in path.read_text().splitlines() if line]
    for path in sorted(EXAMPLES.glob("*/*.rubric.yaml")):
        loaded = load_suite(path)
        for case in loaded.suite.cases:
            texts += [t for t in (case.response, *(case.responses or {}).values()) if t]
        texts += [example.response for example, _, _ in loaded.calibration]
    return texts


def test_every_deterministic_criterion_of_the_examples_is_blind_to_the_padding() -> None:
    """A verdict that changes on the padded answer can only be the judge's: on every answer
    the examples hold, graded against every case of every bundled rubric file, each
    deterministic criterion gives the padded answer the verdict it gives the answer.

    The length probe leaves out an answer that is JSON as a whole (prose after it would
    break it: ``paddable``). And one criterion type: a ``length`` criterion (finance's ``word_limit``) counts words, which
    is what padding adds; the probe never judges it again (it re-judges judged criteria
    only), and it is the one criterion whose change is no bias."""
    grader = Grader(secrets=())
    answers = [text for text in _bundled_answers() if paddable(text)]
    assert len(answers) > 40
    assert [t for t in _bundled_answers() if not paddable(t)] == [
        '{"tp": 16, "fp": 6, "fn": 4, "tn": 80}'
    ]
    compared = 0
    counters: set[str] = set()
    for path in sorted(EXAMPLES.glob("*/*.rubric.yaml")):
        suite = load_suite(path).suite
        for case in suite.cases:
            compiled = grader.compile(case, global_criteria=suite.global_criteria)
            kinds = {c.id: getattr(c, "type", "") for c in compiled.criteria}
            for text in answers:
                before = grader.grade(text, compiled).criteria
                after = grader.grade(pad(text), compiled).criteria
                for a, b in zip(before, after, strict=True):
                    if a.verdict is Verdict.SKIPPED:  # a judged criterion: no judge here
                        continue
                    if kinds[a.id] == "length":
                        counters.add(f"{path.name}::{case.id}::{a.id}")
                        continue
                    assert (a.id, a.verdict) == (b.id, b.verdict), (path.name, case.id, text)
                    compared += 1
    assert compared > 1000
    assert counters == {"finance.rubric.yaml::fin03_compound::word_limit"}


# --- the audit's figures and the gate ---------------------------------------------------------


def _result(probe: list[ProbeRecord]) -> CaseResult:
    return CaseResult(
        nodeid="n", suite="s", case="c", subject="x", score=1.0, raw_score=1.0, min_score=0.5,
        passed=True, criteria=[], fluency=0.5, confidence=0.5, naive_score=0.5, probe=probe,
    )  # fmt: skip


def _kind(kind: str, original: str, probed: str, *, negative: bool = False) -> ProbeRecord:
    return ProbeRecord(
        "c", "j", Verdict(original), kind=kind, probed=Verdict(probed), negative=negative
    )


def test_length_counts_flips_in_the_answers_favour_position_any_change() -> None:
    records = [
        _kind("length", "UNMET", "MET"),  # in its favour: a flip
        _kind("length", "MET", "UNMET"),  # against it: not length bias
        _kind("length", "MET", "UNMET", negative=True),  # an error no longer seen: a flip
        _kind("length", "UNMET", "ERROR"),  # not counted at all
        _kind("position", "MET", "UNMET"),
        _kind("position", "UNMET", "MET"),
        _kind("position", "MET", "MET"),
        ProbeRecord("c", "j", Verdict.MET, confident=Verdict.MET, hedged=Verdict.UNMET),
    ]
    judge_audit = audit([_result(records)])
    assert written(JudgeAuditModel, judge_audit)["probes"] == [
        {"judge": "j", "kind": "tone", "probed": 1, "flips": 1, "sensitivity": 0.5},
        {"judge": "j", "kind": "length", "probed": 3, "flips": 2, "sensitivity": 2 / 3},
        {"judge": "j", "kind": "position", "probed": 3, "flips": 2, "sensitivity": 2 / 3},
    ]
    # The tone probe's own figures are as they always were.
    assert written(JudgeAuditModel, judge_audit)["style_probe"][0]["style_sensitivity"] == 0.5
    assert judge_audit.lines() == [
        "judge style probe: 1 of 2 verdicts changed with tone alone (50.0 %)",
        "judge length probe: 2 of 3 verdicts changed in the answer's favour with neutral "
        "padding alone (66.7 %)",
        "judge position probe: 2 of 3 verdicts changed with the order of the criteria alone "
        "(66.7 %)",
    ]


def test_each_kind_has_its_gate_per_judge_and_one_that_measured_nothing_fails() -> None:
    probes = [ProbeFigures("a", "length", 4, 1), ProbeFigures("b", "length", 4, 3)]
    gates = run_gates([], Gates(max_flips={"length": 0.5, "position": 0.1}), probes=probes)
    by_gate = [(e.gate, e.failed) for e in gates.entries]
    assert by_gate == [("length-flips", False), ("length-flips", True), ("position-flips", True)]
    assert "judge b: 3 of 4 probed verdicts changed with the length probe (0.750), above 0.5" in (
        gates.entries[1].message
    )
    assert "the position probe judged no verdict again" in gates.entries[2].message
    assert gates.asked.max_flips == {"length": 0.5, "position": 0.1} and gates.active


def test_a_flip_gate_that_measured_nothing_says_why() -> None:
    """The probe is 0 by default: a flip limit without it was never measured, and the gate
    says to ask for it, not that calls failed."""
    from pytest_rubric._results import CriterionResult

    judged = CriterionResult(
        id="day", type="judge", axis="substance", weight=1.0, verdict=Verdict.MET, credit=1.0,
        reason="r", requirement="Says one day",
    )  # fmt: skip
    result = CaseResult(
        nodeid="n", suite="s", case="c", subject="x", score=1.0, raw_score=1.0, min_score=0.5,
        passed=True, criteria=[judged], fluency=0.5, confidence=0.5, naive_score=0.5,
    )  # fmt: skip

    def why(results: list[CaseResult], probes: list[ProbeFigures]) -> str:
        (entry,) = run_gates(results, Gates(max_flips={"length": 0.5}), probes=probes).entries
        assert entry.failed
        return entry.message

    assert "(the probe was not asked: add --rubric-judge-probe N)" in why([result], [])
    assert "(no judged substance criterion was graded)" in why([], [])
    tone = [ProbeFigures("j", "tone", 2, 0)]
    assert "(no probed answer could be judged again by the length probe)" in why([result], tone)


# --- end to end: a judge biased by length and by position -------------------------------------

BIASED = """\
suite: seated
min_score: 0
cases:
  - id: horizon
    question: "What is the horizon of a 1-day VaR?"
    response: "One day."
    criteria:
      - {id: day, requirement: "Says the horizon is one day"}
      - {id: loss, requirement: "Says what the loss is measured over"}
"""


def _system(request: Recorded) -> str:
    return str(request.body["messages"][0]["content"])


def _user(request: Recorded) -> str:
    return str(request.body["messages"][-1]["content"])


def _answer(request: Recorded) -> str:
    found = re.search(r"<response-(\w+)>\n(.*)\n</response-\1>", _user(request), re.DOTALL)
    assert found is not None
    return found[2]


def _seated(request: Recorded) -> Action:
    """A one-shot judge biased twice over: the first requirement listed is MET, and so is
    every requirement once the answer is long; nothing else is."""
    ids = re.findall(r"^- id '(\w+)'", _system(request), re.MULTILINE)
    long = len(_answer(request)) > 30  # the padded answer, not its confident rewrite
    return json_reply(
        {
            "criteria": [
                {"id": cid, "reason": "seen", "verdict": "MET" if long or i == 0 else "UNMET"}
                for i, cid in enumerate(ids)
            ]
        }
    )


def test_length_and_position_probes_catch_a_biased_judge_end_to_end(
    pytester: pytest.Pytester,
    write: Write,
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    pytester.makeini("[pytest]\nrubric_judge_backoff = 0.01\nrubric_judge_probe = 2\n")
    write("evals/seated.rubric.yaml", BIASED)
    fake_llm.respond_with(_seated)
    result = pytester.runpytest(
        "--rubric-judge=openai:m",
        f"--rubric-judge-url={fake_llm.openai_url}",
        "--rubric-grader=one-shot",
        "--rubric-judge-probe-kinds=tone,length,position",
        "--rubric-judge-max-style-flips=0.3",
        "--rubric-judge-max-flips=position=1",
        "--rubric-json=out.json",
        "--rubric-markdown=out.md",
        "--rubric-html=out.html",
        "--rubric-cache=off",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    length_line = (
        "judge length probe: 1 of 2 verdicts changed in the answer's favour with neutral "
        "padding alone (50.0 %)"
    )
    position_line = (
        "judge position probe: 2 of 2 verdicts changed with the order of the criteria alone "
        "(100.0 %)"
    )
    result.stdout.fnmatch_lines(
        [
            "judge audit",
            "judge style probe: 0 of 4 verdicts changed with tone alone (0.0 %)",
            length_line,
            position_line,
            "*",
            "rubric gate FAILED (1):",
            "  - judge openai:m: 1 of 2 probed verdicts changed with the length probe (0.500), "
            "above 0.3 (--rubric-judge-max-flips length, else --rubric-judge-max-style-flips)",
        ]
    )
    document = rubric_json()
    assert document["judge_audit"]["probes"] == [
        {"judge": "openai:m", "kind": "tone", "probed": 2, "flips": 0, "sensitivity": 0.0},
        {"judge": "openai:m", "kind": "length", "probed": 2, "flips": 1, "sensitivity": 0.5},
        {"judge": "openai:m", "kind": "position", "probed": 2, "flips": 2, "sensitivity": 1.0},
    ]
    assert document["judge_audit"]["style_probe"][0]["style_sensitivity"] == 0.0
    assert [(g["gate"], g["failed"]) for g in document["gates"]] == [
        ("style-flips", False),
        ("length-flips", True),
        ("position-flips", False),
    ]
    for name in ("out.md", "out.html"):
        text = (pytester.path / name).read_text()
        assert "judge length probe: 1 of 2" in text and "judge position probe: 2 of 2" in text
    # The answer, its two tone rewrites, the padded answer, the criteria reversed.
    assert len(fake_llm.requests) == 5
    padded = [r for r in fake_llm.requests if len(_answer(r)) > 30]
    assert [_answer(r) for r in padded] == [pad("One day.")]
    orders = {tuple(re.findall(r"^- id '(\w+)'", _system(r), re.MULTILINE)) for r in fake_llm.requests}  # fmt: skip
    assert orders == {("day", "loss"), ("loss", "day")}
    # merge recomputes the same figures from the results' probe records.
    merge_main(["merge", "out.json", "--json", "merged.json", "--markdown", "merged.md"])
    merged = json.loads((pytester.path / "merged.json").read_text())
    assert merged["judge_audit"] == document["judge_audit"]
    assert position_line in (pytester.path / "merged.md").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rubric-judge-probe-kinds=position"], "only the one-shot grader sees"),
        (["--rubric-judge-probe-kinds=tone,size"], "the probe kinds are tone, length, position"),
        (["--rubric-judge-max-flips=length=0.1"], "the length probe does not run"),
        (["--rubric-judge-max-flips=width=0.1"], "is not KIND=X"),
    ],
)
def test_probe_kinds_and_their_limits_are_checked(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


# --- judge_instructions and judge_examples -----------------------------------------------------

GUIDED = """\
suite: guided
min_score: 0
judge_instructions: {instructions}
judge_examples: {examples}
calibration:
  - {{case: horizon, criterion: day, response: "A single trading day.", verdict: MET}}
cases:
  - id: horizon
    question: "What is the horizon of a 1-day VaR?"
    response: "One day."
    criteria:
      - {{id: day, requirement: "Says the horizon is one day"}}
      - {{id: loss, requirement: "Says what the loss is measured over"}}
"""
EXAMPLES_INLINE = (
    '[{criterion: day, response: "Twenty-four hours.", verdict: MET, reason: "a day"}, '
    '{criterion: loss, response: "Ten days.", verdict: UNMET, reason: "not said"}]'
)
INSTRUCTIONS = '"A horizon given in hours counts when it adds up to one day."'


def _met(request: Recorded) -> Action:
    return json_reply({"reason": "r", "verdict": "MET", "evidence": ["One day."]})


def test_instructions_and_examples_reach_the_judge_fenced_and_key_the_cache(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM
) -> None:
    pytester.makeini("[pytest]\nrubric_judge_backoff = 0.01\n")
    write("evals/guided.rubric.yaml", GUIDED.format(instructions=INSTRUCTIONS, examples=EXAMPLES_INLINE))  # fmt: skip
    fake_llm.respond_with(_met)
    args = ["--rubric-judge=openai:m", f"--rubric-judge-url={fake_llm.openai_url}"]  # fmt: skip
    pytester.runpytest(*args).assert_outcomes(passed=1)
    # The case's two criteria and the calibration example, one call each.
    assert len(fake_llm.requests) == 3
    for request in fake_llm.requests:
        system, user = _system(request), _user(request)
        token = re.search(r"<response-(\w+)>", user)[1]  # type: ignore[index]
        assert (
            f"<rubric-author-{token}>\nA horizon given in hours counts when it adds up to one "
            f"day.\n</rubric-author-{token}>"
        ) in system
        assert system.index("Judge substance only") < system.index(f"<rubric-author-{token}>")
        # Only the examples of the criterion judged, fenced, before the question.
        examples = re.findall(rf'<judge-example-{token} criterion="(\w+)" verdict="(\w+)">', user)
        assert len(examples) == 1
        assert user.index(f"<judge-example-{token}") < user.index(f"<question-{token}>")
        assert f"<example-response-{token}>\n" in user and f"<example-reason-{token}>\n" in user
        if "horizon is one day" in system:
            assert examples == [("day", "MET")]
        else:
            assert examples == [("loss", "UNMET")]
    # A second run is served by the cache; other instructions are another request.
    fake_llm.requests.clear()
    pytester.runpytest(*args).assert_outcomes(passed=1)
    assert fake_llm.requests == []
    write("evals/guided.rubric.yaml", GUIDED.format(instructions='"Be strict."', examples=EXAMPLES_INLINE))  # fmt: skip
    pytester.runpytest(*args).assert_outcomes(passed=1)
    assert len(fake_llm.requests) == 3


def test_prompts_without_guidance_are_as_they_were() -> None:
    criterion = Requirement(id="day", requirement="Says the horizon is one day")
    example = JudgeExample(criterion="other", response="r", verdict="MET", reason="why")
    guidance = Guidance("Be strict.", (example,))
    plain = per_criterion(criterion, question="q", response="One day.")
    guided = per_criterion(criterion, question="q", response="One day.", guidance=guidance)
    assert guided.system.startswith(plain.system.replace(plain.token, guided.token))
    assert "judge-example" not in guided.user and "judge-example" not in guided.system
    shot = one_shot([criterion], question="q", response="One day.", guidance=Guidance())
    assert "rubric-author" not in shot.system


def test_an_example_that_is_a_calibration_response_is_a_collection_error(tmp_path: Path) -> None:
    overlap = '[{criterion: day, response: "A single  TRADING day.", verdict: MET, reason: "r"}]'
    text = GUIDED.format(instructions='"x"', examples=overlap)
    with pytest.raises(RubricLoadError) as caught:
        parse_suite(text, path=tmp_path / "g.rubric.yaml")
    rendered = caught.value.render(tmp_path / "g.rubric.yaml")
    assert (
        f"{tmp_path / 'g.rubric.yaml'}:4, criterion 'day', field 'judge_examples.response'"
        in rendered
    )
    assert "judge example 1: its response is also a calibration response" in rendered
    # From a JSONL file: located there, on its line.
    (tmp_path / "shown.jsonl").write_text(
        '{"criterion": "loss", "response": "Ten days.", "verdict": "UNMET", "reason": "r"}\n'
        '{"criterion": "day", "response": "A single trading day.", "verdict": "MET", '
        '"reason": "r"}\n'
        '{"criterion": "nope", "response": "x", "verdict": "MET", "reason": "r"}\n'
    )
    with pytest.raises(RubricLoadError) as caught:
        parse_suite(GUIDED.format(instructions='"x"', examples="shown.jsonl"), path=tmp_path / "g.rubric.yaml")  # fmt: skip
    rendered = caught.value.render(tmp_path / "g.rubric.yaml")
    assert (
        f"{tmp_path / 'shown.jsonl'}:2, criterion 'day', field 'response': judge example 2"
        in rendered
    )
    assert (
        f"{tmp_path / 'shown.jsonl'}:3, criterion 'nope', field 'criterion': judge example 3: "
        "no judged" in rendered
    )
    # Apart from calibration, the same examples load.
    (tmp_path / "shown.jsonl").write_text(
        '{"criterion": "loss", "response": "Ten days.", "verdict": "UNMET", "reason": "r"}\n'
    )
    loaded = parse_suite(GUIDED.format(instructions='"x"', examples="shown.jsonl"), path=tmp_path / "g.rubric.yaml")  # fmt: skip
    example = JudgeExample(criterion="loss", response="Ten days.", verdict="UNMET", reason="r")
    assert loaded.guidance == Guidance("x", (example,))
