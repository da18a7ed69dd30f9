"""The session's inputs: where answers come from (response folders, each read once and shared
by every rubric file, live models, the application's tally), and what none of the collected
cases used."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .._defaults import ResponseTally, RetryPolicy, subject_named
from .._errors import Problem
from .._guards.outgoing import warn

if TYPE_CHECKING:
    from .._grade.sources import LiveModel
    from .._llm.cost import Budget, CostSettings
    from .._load.responses import ResponseFile
    from .._otel import SpanCapture


@dataclass(slots=True)
class ResponseDir:
    files: list[ResponseFile]
    problems: list[Problem]
    used: set[tuple[str, tuple[str | None, str]]] = field(default_factory=set)  # (subject, key)


@dataclass(eq=False, kw_only=True)
class Inputs:
    """Response folders read once, ``--rubric-model`` subjects, the answers' tally."""

    here: Path  # where pytest runs: warnings name paths relative to it
    warns: bool  # the process that warns of unused responses (see Role.first)
    responses_dir: Path | None  # --rubric-responses
    subjects_given: bool  # --rubric-target or --rubric-model
    models: dict[str, LiveModel]
    otel: InitVar[bool]
    spans: SpanCapture | None = field(default=None, init=False)  # --rubric-otel: the spans
    tally: ResponseTally = field(default_factory=ResponseTally, init=False)  # asked, replayed
    collection_errors: int = field(default=0, init=False)  # rubric files that failed to load
    # Rubric files (node ids) whose targets the command line's subjects replaced, and
    # those that pin theirs (`target_fixed: true`): the header says so.
    targets_replaced: set[str] = field(default_factory=set, init=False)
    targets_pinned: set[str] = field(default_factory=set, init=False)
    _dirs: dict[Path, ResponseDir] = field(default_factory=dict, init=False)

    def __post_init__(self, otel: bool) -> None:
        if otel:
            from .._otel import SpanCapture  # OpenTelemetry: imported only with the flag

            self.spans = SpanCapture()

    def keeps_targets(self, file: str, *, pinned: bool) -> bool:
        """Whether the targets rubric file ``file`` (a node id) names answer its cases: unless
        the command line names subjects and the file does not pin its own
        (``target_fixed``). Either way the file is counted, for the run to say so."""
        if pinned:
            self.targets_pinned.add(file)
            return True
        if self.subjects_given:
            self.targets_replaced.add(file)
            return False
        return True

    def response_dir(self, directory: Path) -> ResponseDir:
        """The subject files of ``directory``, read on first use and shared by every rubric file."""
        if (cached := self._dirs.get(directory)) is None:
            if directory.is_dir():
                from .._load.responses import load_response_dir

                files, problems = load_response_dir(directory)
            else:
                missing = f"responses folder {str(directory)!r} does not exist"
                hint = "create it with one <subject>.jsonl per subject, or fix the path"
                files, problems = [], [Problem(missing, hint=hint)]
            cached = self._dirs[directory] = ResponseDir(files, problems)
        return cached

    def global_responses(self) -> ResponseDir | None:
        """``--rubric-responses DIR``; its problems stop the run before collection."""
        if self.responses_dir is None:
            return None
        loaded = self.response_dir(self.responses_dir)
        if loaded.problems:
            raise pytest.UsageError(
                "--rubric-responses: cannot use the responses:\n"
                + "\n".join("  " + p.render() for p in loaded.problems)
            )
        return loaded

    def warn_unused(self, *, narrowed: bool) -> None:
        """Report responses that matched no collected case, so none is silently dropped:
        unless the run collects only part of the suite (``narrowed``: a CI shard, a file run
        by hand), or another xdist worker warns. Collection is over, so the folders go after
        this: nothing reads them again, and their text and line per case would stay to the end
        of the session. A folder with a problem failed its rubric files, so used none of its
        lines."""
        for loaded in self._dirs.values():
            if self.warns and not narrowed and not loaded.problems:
                for response_file in loaded.files:
                    for key, (_, line) in response_file.entries.items():
                        if (response_file.subject, key) not in loaded.used:
                            case_id = key[1]
                            # Where, in the text: pytest would echo the line (a key, 30 MB).
                            shown = os.path.relpath(response_file.path, self.here)
                            warn(
                                f"the response of subject {response_file.subject!r} for case "
                                f"{case_id!r} matches no collected case; fix its id or remove "
                                "the line",
                                where=f"{shown}:{line}",
                            )
        self._dirs.clear()


def no_response(case_id: str, dirs: Sequence[ResponseDir]) -> str:
    """Why a case has nothing to grade, and what to write, knowing which folders were read."""
    if not dirs:
        return (
            f"case {case_id!r} has no response to grade: give it `response:`, "
            "`responses: {subject: ...}` or `target:`, set `responses:` in the file, "
            "or pass --rubric-responses DIR / --rubric-target"
        )
    subjects = sorted({f.subject for d in dirs for f in d.files})
    held = (
        f"it holds {len(subjects)} subject file(s) ({', '.join(subjects[:5])}"
        + (", ..." if len(subjects) > 5 else "")
        + ")"
        if subjects
        else "it holds no <subject>.jsonl file"
    )
    return (
        f"case {case_id!r} has no response to grade: no subject in the responses folder answers "
        f'it ({held}); add a line {{"id": "{case_id}", "response": "..."}} to '
        "a <subject>.jsonl file there"
    )


def live_models(
    models: Sequence[str],
    *,
    targets: Sequence[str],
    cost: CostSettings,
    retry: RetryPolicy,
    require_key: bool,
    budget: Budget | None,
) -> dict[str, LiveModel]:
    """``--rubric-model``, each a subject; its name clashing with a ``--rubric-target``'s
    is a usage error, as the same model or name given twice is."""
    if not models:
        return {}
    from .._grade.sources import LiveModel
    from .._llm.providers import ModelSpec

    by_subject = {subject_named(given)[0]: given for given in targets}
    live: dict[str, LiveModel] = {}
    for given in models:
        subject, value = subject_named(given, model=True)
        try:
            spec = ModelSpec.parse(value)
            if subject in by_subject:
                raise ValueError(
                    f"{given} and --rubric-target {by_subject[subject]} are both subject "
                    f"{subject!r}; name one of them (NAME=...)"
                )
            price = cost.of(spec.name, spec.model)
            if cost.max_cost is not None and price is None:
                raise ValueError(
                    f"--rubric-max-cost needs the price of model {spec.model}: add a line "
                    f"`{spec.model} IN OUT` (dollars per million tokens) to ini rubric_judge_prices"
                )
            live[subject] = LiveModel(
                spec,
                subject=subject,
                policy=retry,
                price=price,
                budget=budget,
                require_key=require_key,
            )
        except ValueError as exc:
            raise pytest.UsageError(f"--rubric-model: {exc}") from None
    return live
