"""``python -m pytest_rubric import healthbench DATA.jsonl``: HealthBench's own JSONL
(``openai/simple-evals``, ``healthbench_eval.py``: ``prompt_id``, ``prompt``, ``rubrics`` and
``example_tags`` a line) as a report-only suite, a case an example and a ``judge`` criterion
a rubric item (``docs/guides/import-healthbench.md`` gives the mapping).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .._errors import Problem
from .._guards.limits import NotRegular, overflowing, read_jsonl
from .._guards.outgoing import subject_problem
from .._guards.secrets import abridged
from .._load.responses import file_subject_problem
from .._schema import ROLES
from ._common import Imported, ImportFailed, is_number, validated

RUBRIC_FILE = "healthbench.rubric.yaml"
_TURN = 'write it as {"role": "user", "content": "..."}'


def convert(data: Path, *, responses: dict[str, Path] | None = None) -> Imported:
    """The suite (and responses) for a HealthBench JSONL file; raise :class:`ImportFailed`."""
    problems: list[Problem] = []
    cases: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for number, row in _lines(data, problems):
        if (case := _case(row, data, number, problems)) is None:
            continue
        if case["id"] in seen:
            problems.append(
                Problem(
                    f"prompt_id {case['id']!r} is also on line {seen[case['id']]}",
                    line=number,
                    path=data,
                    case=case["id"],
                    field="prompt_id",
                    hint="each example needs its own prompt_id",
                )
            )
            continue
        seen[case["id"]] = number
        cases.append(case)
    if not cases and not problems:
        problems.append(
            Problem("no examples in the file", path=data, hint="one JSON object a line")
        )
    # HealthBench has no pass mark: the cases are report-only, their scores still reported.
    suite: dict[str, Any] = {"suite": "healthbench", "min_score": None}
    output = Imported()
    if responses:
        suite["responses"] = "responses/"
        for subject, path in responses.items():
            if (why := file_subject_problem(subject)) is not None:
                problems.append(
                    Problem(
                        f"--responses {subject}={path}: the subject {subject!r} cannot name its "
                        f"responses file: {why}",
                        hint="name it without '/', '\\' or '..', such as org-model=FILE.jsonl",
                    )
                )
                continue
            rows = read_completions(path, problems)
            known = [case["id"] for case in cases if case["id"] in rows]
            output.responses[f"responses/{subject}.jsonl"] = [
                {"id": pid, "response": rows[pid]} for pid in known
            ]
            if missing := len(cases) - len(known):
                output.notes.append(
                    f"{subject}: {missing} of {len(cases)} example(s) have no completion in "
                    f"{path}; those items will be ERRORs (no response)"
                )
            if extra := [pid for pid in rows if pid not in seen]:
                output.notes.append(
                    f"{subject}: {len(extra)} completion(s) in {path} match no example "
                    f"(e.g. prompt_id {extra[0]!r}); not written"
                )
    suite["cases"] = cases
    if not problems:
        problems += validated(str(data), suite)
    if problems:
        raise ImportFailed(problems)
    output.rubrics[RUBRIC_FILE] = suite
    return output


def _lines(path: Path, problems: list[Problem]) -> list[tuple[int, dict[str, Any]]]:
    try:
        rows, found = read_jsonl(path, example='{"prompt_id": "...", "prompt": [...], ...}')
    except (OSError, UnicodeDecodeError, NotRegular) as exc:
        problems.append(Problem(f"cannot read the file: {exc}", path=path))
        return []
    problems += found
    return rows


def _case(
    row: dict[str, Any], path: Path, number: int, problems: list[Problem]
) -> dict[str, Any] | None:
    prompt_id = row.get("prompt_id")
    label = prompt_id if isinstance(prompt_id, str) and prompt_id else None

    def problem(field: str, message: str, hint: str | None = None) -> None:
        problems.append(
            Problem(message, line=number, path=path, case=label, field=field, hint=hint)
        )

    before = len(problems)
    if not isinstance(prompt_id, str) or not prompt_id.strip():
        problem("prompt_id", "missing or not a non-empty string", 'add "prompt_id": "..."')
    elif (why := subject_problem(prompt_id)) is not None:  # it becomes the case's id
        problem(
            "prompt_id", f"prompt_id {prompt_id!r} cannot be used: {why}", "rename it in the data"
        )
    messages = _messages(row.get("prompt"), problem)
    criteria: list[dict[str, Any]] = []
    rubrics = row.get("rubrics")
    if not isinstance(rubrics, list) or not rubrics:
        problem(
            "rubrics",
            "missing or not a non-empty list",
            'add "rubrics": [{"criterion": ..., "points": ...}]',
        )
        rubrics = []
    for i, item in enumerate(rubrics):
        where = f"rubrics[{i}]"
        if not isinstance(item, dict):
            problem(where, "a rubric item must be an object with criterion, points and tags")
            continue
        criterion, points = item.get("criterion"), item.get("points")
        if not isinstance(criterion, str) or not criterion.strip():
            problem(f"{where}.criterion", "missing or not a non-empty string")
        if not is_number(points):
            problem(
                f"{where}.points",
                f"must be a number, got {_shown(points)}",
                "HealthBench points are whole numbers such as 5 or -3",
            )
        tags = _strings(item.get("tags", []), f"{where}.tags", problem)
        judged = {"id": f"r{i + 1}", "type": "judge", "weight": points, "requirement": criterion}
        criteria.append({**judged, "tags": tags} if tags else judged)
    if len(problems) == before and not any(float(c["weight"]) > 0 for c in criteria):
        problem(
            "rubrics",
            "no rubric item has positive points, so HealthBench cannot score this example",
            "HealthBench divides by the sum of positive points; add one or drop the example",
        )
    elif len(problems) == before and (overflow := overflowing(c["weight"] for c in criteria)):
        # The rubric file's own check, here: a suite written would not collect.
        problem(
            "rubrics",
            f"the {'positive' if overflow == 'weights' else 'negative'} points of its rubric "
            "items add up to more than a number can hold, so its score cannot be computed",
            "HealthBench points are whole numbers such as 5 or -3",
        )
    tags = _strings(row.get("example_tags", []), "example_tags", problem)
    if len(problems) > before:
        return None
    case: dict[str, Any] = {"id": prompt_id, "messages": messages}
    if tags:
        case["tags"] = tags
    case["criteria"] = criteria
    return case


def _messages(prompt: Any, problem: Any) -> list[dict[str, str]]:
    if not isinstance(prompt, list) or not prompt:
        problem(
            "prompt",
            "missing or not a non-empty list of messages",
            'write "prompt": [{"role": "user", "content": "..."}]',
        )
        return []
    turns = []
    for i, turn in enumerate(prompt):
        where = f"prompt[{i}]"
        if not isinstance(turn, dict):
            problem(where, f"a message must be an object, got {_shown(turn)}", _TURN)
        elif turn.get("role") not in ROLES:
            problem(
                f"{where}.role",
                f"role must be one of {', '.join(ROLES)}, got {_shown(turn.get('role'))}",
            )
        elif not isinstance(turn.get("content"), str):
            problem(
                f"{where}.content",
                f"content must be text, got {_shown(turn.get('content'))}",
                _TURN,
            )
        else:
            turns.append({"role": turn["role"], "content": turn["content"]})
    if turns and turns[-1]["role"] != "user":
        problem(
            f"prompt[{len(prompt) - 1}]",
            "the prompt must end with a user message (the completion answers it)",
        )
    return turns


def _strings(value: Any, field: str, problem: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        problem(field, f"must be a list of non-empty strings, got {_shown(value)}")
        return []
    return list(dict.fromkeys(value))  # HealthBench forbids repeats; one copy is what it means


def _shown(value: Any) -> str:
    return abridged(
        repr(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    )


def read_completions(path: Path, problems: list[Problem]) -> dict[str, str]:
    """The completion of each ``prompt_id`` in a completions JSONL file."""
    found: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, row in _lines(path, problems):
        pid = row.get("prompt_id")
        text = _completion(row)
        if not isinstance(pid, str) or not pid:
            message, hint = "no prompt_id", 'add "prompt_id": "..." (the example it answers)'
            problems.append(Problem(message, line=number, path=path, field="prompt_id", hint=hint))
            continue
        if text is None:
            message = "no completion text"
            hint = """write "completion": "..." (or simple-evals' [{"role": "assistant", "content": "..."}])"""
        elif pid in found:
            message = f"a second completion for prompt_id {pid!r} (first on line {lines[pid]})"
            hint = "keep one completion per example and subject"
        else:
            found[pid], lines[pid] = text, number
            continue
        field = "completion" if text is None else None
        problems.append(Problem(message, line=number, path=path, case=pid, field=field, hint=hint))
    return found


def _completion(row: dict[str, Any]) -> str | None:
    for name in ("completion", "response", "answer"):
        value = row.get(name)
        if isinstance(value, str):
            return value
        if (
            isinstance(value, list)
            and len(value) == 1
            and isinstance(value[0], dict)
            and value[0].get("role") == "assistant"
            and isinstance(value[0].get("content"), str)
        ):
            return str(value[0]["content"])
    return None
