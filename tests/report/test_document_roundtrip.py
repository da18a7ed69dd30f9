"""The JSON document's one module writes what it reads: a result crosses xdist unchanged, and
every field it writes is one the models name (nothing written outside the schema)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rubric._report.document import (
    CriterionResultModel,
    ResultModel,
    SampleModel,
    TraceModel,
    result_data,
    result_of,
)
from pytest_rubric._results import CaseResult, CriterionResult, ProbeRecord, Sample, Verdict, Vote
from pytest_rubric._trace import Passage, ToolCall, Trace, Usage
from tests.conftest import examples

fractions = st.floats(0, 1)
maybe = st.none().__or__


@st.composite
def criteria(draw: st.DrawFn) -> CriterionResult:
    votes = draw(
        maybe(
            st.lists(
                st.builds(
                    Vote, verdict=st.sampled_from([Verdict.MET, Verdict.UNMET]), credit=fractions
                ),
                min_size=2,
                max_size=3,
            ).map(tuple)
        )
    )
    judges = draw(
        maybe(
            st.dictionaries(
                st.sampled_from(["a", "b"]),
                st.sampled_from(["MET", "UNMET"]) | fractions,
                min_size=1,
            )
        )
    )
    return CriterionResult(
        id=draw(st.text(min_size=1, max_size=4)), type=draw(st.sampled_from(["any_of", "judge"])),
        axis=draw(st.sampled_from(["substance", "style"])), weight=draw(st.sampled_from([1.0, -2.0, 0.5])),
        verdict=draw(st.sampled_from(list(Verdict))), credit=draw(fractions), reason=draw(st.text(max_size=8)),
        required=draw(st.booleans()), agreement=draw(maybe(fractions)) if votes or judges else None,
        votes=votes, tags=tuple(draw(st.lists(st.sampled_from(["x", "y"]), max_size=2))),
        evidence_ok=draw(maybe(st.booleans())), judges=judges, requirement=draw(maybe(st.text(max_size=8))),
    )  # fmt: skip


traces = maybe(
    st.builds(
        Trace,
        source=st.sampled_from(["returned", "otel", "responses", "case"]),
        tool_calls=st.lists(st.builds(ToolCall, name=st.text(max_size=4), arguments=st.dictionaries(st.text(max_size=3), st.integers()), ok=st.booleans(), result=maybe(st.text(max_size=4))), max_size=2).map(tuple),
        llm_calls=maybe(st.integers(0, 5)),
        context=st.lists(st.builds(Passage, text=st.text(max_size=6), id=maybe(st.text(max_size=3)), source=maybe(st.text(max_size=3))), max_size=2).map(tuple),
        usage=st.builds(Usage, input_tokens=maybe(st.integers(0, 99)), output_tokens=maybe(st.integers(0, 99)), cost_usd=maybe(st.floats(0, 1))),
        latency_s=maybe(st.floats(0, 9)),
        metadata=maybe(st.dictionaries(st.text(max_size=3), st.text(max_size=3))),
    )
)  # fmt: skip

verdicts = st.sampled_from(list(Verdict))
probes = st.one_of(
    st.builds(ProbeRecord, criterion=st.text(max_size=3), judge=st.text(max_size=3), original=verdicts, confident=verdicts, hedged=verdicts),
    st.builds(ProbeRecord, criterion=st.text(max_size=3), judge=st.text(max_size=3), original=verdicts, kind=st.sampled_from(["length", "position"]), probed=verdicts, negative=st.booleans()),
)  # fmt: skip
samples = st.builds(
    Sample, score=fractions, raw_score=fractions, passed=st.booleans(),
    criteria=st.lists(criteria(), max_size=2), response=st.text(max_size=6),
    llm_raw_score=maybe(st.floats(0, 100)), trace=traces,
)  # fmt: skip


@st.composite
def results(draw: st.DrawFn) -> CaseResult:
    several = draw(st.lists(samples, min_size=2, max_size=3) | st.just([]))
    return CaseResult(
        nodeid="f.rubric.yaml::c[s]", suite="f", case="c", subject="s", score=draw(fractions),
        raw_score=draw(fractions), min_score=draw(maybe(fractions)), passed=draw(st.booleans()),
        criteria=draw(st.lists(criteria(), max_size=3)), fluency=draw(fractions),
        confidence=draw(fractions), naive_score=draw(fractions), style_score=draw(maybe(fractions)),
        flags=tuple(draw(st.lists(st.sampled_from(["confidently_wrong", "style_error"]), max_size=2))),
        question=draw(maybe(st.text(max_size=6))), response=draw(st.text(max_size=6)),
        possible=draw(fractions), tags=tuple(draw(st.lists(st.text(max_size=3), max_size=2))),
        pass_when=draw(st.sampled_from(["mean", "all", "any", 0.5])), level=draw(st.sampled_from([0.9, 0.95])),
        samples=tuple(several),
        probe=tuple(draw(st.lists(probes, max_size=2))),
        ranked=draw(st.booleans()), llm_raw_score=draw(maybe(st.floats(0, 100))),
        trace=several[0].trace if several else draw(traces),
        skipped_bounds=draw(maybe(st.tuples(fractions, fractions))),
    )  # fmt: skip


def _fields_within_schema(data: Any, model: Any) -> None:
    assert set(data) <= set(model.model_fields), set(data) - set(model.model_fields)


@settings(max_examples=examples(150), deadline=None)
@given(results())
def test_a_result_crosses_xdist_unchanged_and_writes_only_the_schemas_fields(
    result: CaseResult,
) -> None:
    data = result_data(result)
    assert result_of(json.loads(json.dumps(data))) == result
    assert result_data(result_of(data)) == data
    _fields_within_schema(data, ResultModel)
    for sample in data["samples"]:
        _fields_within_schema(sample, SampleModel)
        if sample["trace"] is not None:
            _fields_within_schema(sample["trace"], TraceModel)
        for criterion in sample["criteria"]:
            _fields_within_schema(criterion, CriterionResultModel)
