"""Responses files: ``<subject>.jsonl`` in a folder, a ``{"id", "response"}`` per line,
and the subject names they give, which go into test ids and the summary table."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from .._errors import Problem
from .._guards.limits import NotRegular, read_jsonl
from .._guards.outgoing import safe_subject, subject_problem
from .._trace import MAX_LATENCY_S, MAX_TOKENS, Trace
from .locate import run_relative
from .traces import (
    FIELD_SHAPES,
    MODEL_CALLS,
    SECONDS,
    TRACE_FIELDS,
    ShapeError,
    read_trace,
    shown,
    within,
)


@dataclass(slots=True)
class ResponseFile:
    """One subject's responses: ``DIR/<subject>.jsonl``, a ``{"id", "response"}`` per line."""

    path: Path
    subject: str
    # By (suite, id): a line's optional "suite" restricts it to the file of that suite, so
    # two suites' cases of one id each have their lines; None: any suite's.
    entries: dict[tuple[str | None, str], tuple[str, int]] = field(default_factory=dict)
    # Further lines with the same key: more samples of that case (`repeat`), in file order.
    # How many a case may have is the case's `repeat`, checked when it is collected.
    more: dict[tuple[str | None, str], list[tuple[str, int]]] = field(default_factory=dict)
    # The trace a line carries beside its response (context, messages, usage...), by line.
    traces: dict[int, Trace] = field(default_factory=dict)

    def key_of(self, suite: str, case_id: str) -> tuple[str | None, str] | None:
        """Where the lines of ``suite``'s case ``case_id`` are: its suite's, else any suite's."""
        return next((k for k in ((suite, case_id), (None, case_id)) if k in self.entries), None)

    def traces_of(
        self, entry: tuple[str, int], more: list[tuple[str, int]]
    ) -> tuple[Trace | None, ...]:
        """The traces of a case's lines (its first, then ``more``), or () when none has one."""
        return tuple(self.traces.get(line) for _, line in (entry, *more)) if self.traces else ()


# --- subjects -----------------------------------------------------------------------------------


def file_subject_problem(name: str) -> str | None:
    """Why ``name`` cannot name the file ``<name>.jsonl`` that ``collect`` or an importer
    writes into its output folder, or None: what :func:`subject_problem` refuses, and a path
    separator or ``..``, which would write outside the folder or where no run reads."""
    why = subject_problem(name)
    if why is None and ("/" in name or "\\" in name or ".." in name or name.strip() == "."):
        why = "a path separator or '..' would write outside the output folder"
    return why


# --- a responses folder ---------------------------------------------------------------------------


def load_response_dir(directory: Path) -> tuple[list[ResponseFile], list[Problem]]:
    """Read every ``<subject>.jsonl`` in ``directory``; bad lines and names become problems.
    Each file is named as the run names it (:func:`~.locate.run_relative`), in those problems and in
    what is said of its lines later."""
    files, problems = [], []
    for path in sorted(run_relative(directory).glob("*.jsonl")):
        if (why := subject_problem(path.stem)) is not None:
            # Located on the folder: a file name with a line break would break the message too.
            problems.append(
                Problem(
                    f"the file name {path.name!r} gives the subject name {path.stem!r}, which "
                    f"cannot be used: {why}",
                    path=run_relative(directory),
                    hint=f"rename the file to {safe_subject(path.stem) + '.jsonl'!r}",
                )
            )
            continue
        response_file = ResponseFile(path=path, subject=path.stem)
        problems += _read_jsonl(response_file)
        files.append(response_file)
    return files, problems


def _model_calls(given: object, trace: Trace) -> int | None:
    """A responses line's ``llm_calls`` beside its ``messages``: the model calls when its
    assistant messages do not count them all, or null (not known); never fewer than they."""
    if trace.llm_calls is None:
        raise ShapeError(
            '"llm_calls" goes beside "messages", whose model calls it counts', field="llm_calls"
        )
    if given is not None and (type(given) is not int or not within(given, MAX_TOKENS)):
        raise ShapeError(
            f'"llm_calls" must be {MODEL_CALLS}, not {shown(given)}', field="llm_calls"
        )
    if given is not None and given < trace.llm_calls:
        raise ShapeError(
            f'"llm_calls" is {given}, fewer than the {trace.llm_calls} assistant messages',
            field="llm_calls",
        )
    return given


def _read_jsonl(target: ResponseFile) -> list[Problem]:
    example = '{"id": "q01", "response": "..."}'
    try:
        # An answer is data: half an emoji in it is written as U+FFFD, never a stop.
        rows, problems = read_jsonl(target.path, example=example, whole=True)
    except NotRegular as exc:
        return [
            Problem(
                f"this is {exc}, not a regular file; responses are read only from regular files",
                path=target.path,
                hint="replace it with a regular file, or remove it from the folder",
            )
        ]
    except UnicodeDecodeError as exc:
        return [
            Problem(
                f"not UTF-8 text ({exc.reason})", path=target.path, hint="save the file as UTF-8"
            )
        ]
    except OSError as exc:
        return [Problem(f"cannot read: {exc}", path=target.path)]
    for number, entry in rows:

        def bad(message: str, hint: str = f"write {example}", **where: str) -> None:
            problems.append(Problem(message, hint=hint, path=target.path, line=number, **where))  # noqa: B023

        case_id, text = entry.get("id"), entry.get("response", entry.get("answer"))
        if not isinstance(case_id, str | int):
            bad("missing `id`", field="id")
            continue
        if not isinstance(text, str):
            bad("`response` (or `answer`) must be a string", case=str(case_id), field="response")
            continue
        if "response" in entry and "answer" in entry:  # which one was graded would be a guess
            bad(
                "the line gives both `response` and `answer`",
                hint="keep one: `answer` is another name for `response`",
                case=str(case_id),
                field="answer",
            )
            continue
        fields = {name: entry.get(name) for name in TRACE_FIELDS}
        latency = entry.get("latency_s")
        # The model calls when the assistant messages do not count them (as_fields); null
        # too: not known.
        counted, llm_calls = "llm_calls" in entry, entry.get("llm_calls")
        if counted or latency is not None or any(v is not None for v in fields.values()):
            if latency is not None and not within(latency, MAX_LATENCY_S):
                bad(
                    f"`latency_s` must be {SECONDS}, not {shown(latency)}",
                    hint='write the wall time of its call in seconds, e.g. "latency_s": 1.2',
                    case=str(case_id),
                    field="latency_s",
                )
                continue
            try:
                trace = read_trace(fields, source="responses", latency_s=latency)
                if counted:
                    trace = replace(trace, llm_calls=_model_calls(llm_calls, trace))
                target.traces[number] = trace
            except ShapeError as exc:
                bad(
                    f"{exc}",
                    hint=f"a responses line may carry beside `response` any of {FIELD_SHAPES}",
                    case=str(case_id),
                    field=exc.field or "response",
                )
                continue
        suite = entry.get("suite")
        key = (suite if isinstance(suite, str) else None, str(case_id))
        if key in target.entries:
            target.more.setdefault(key, []).append((text, number))
            continue
        target.entries[key] = (text, number)
    problems.sort(key=lambda p: p.line or 0)
    return problems
