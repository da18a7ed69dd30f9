"""Session state: settings read once from the config, response files read once, results gathered.

One :class:`RubricSession` lives in ``config.stash`` from ``pytest_configure``
to ``pytest_unconfigure``. Hooks in ``plugin`` only delegate to it.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from . import _style
from ._errors import Problem
from ._grader import DEFAULT_MIN_SCORE, Grader
from ._loader import ResponseFile, load_response_dir
from ._result import CaseResult
from ._summary import leaderboard, rankings_disagree, summary_lines

__all__ = ["RubricSession", "RubricWarning", "Settings"]

DEFAULT_PATTERNS = ("*.rubric.yaml", "*.rubric.yml", "*.rubric.json")


class RubricWarning(pytest.PytestWarning):
    """Something in the inputs was ignored (a response that matches no case)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Every option of the plugin, resolved from flags and ini once."""

    dirs: tuple[Path, ...] = ()
    patterns: tuple[str, ...] = DEFAULT_PATTERNS
    responses_dir: Path | None = None
    target: str | None = None
    json_path: Path | None = None
    min_score: float = DEFAULT_MIN_SCORE
    thresholds: _style.StyleThresholds = field(default_factory=_style.StyleThresholds)

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        def floats(name: str, default: float) -> float:
            raw = config.getini(name)
            if raw in (None, ""):
                return default
            try:
                value = float(raw)
            except ValueError:
                raise pytest.UsageError(f"ini option {name} = {raw!r} is not a number") from None
            if not 0 <= value <= 1:
                raise pytest.UsageError(f"ini option {name} = {raw!r} must be between 0 and 1")
            return value

        defaults = _style.StyleThresholds()
        here = config.invocation_params.dir
        dirs = [here / p for p in config.getoption("rubric_dirs") or []]
        if not dirs:
            dirs = [Path(p) for p in config.getini("rubric_dirs")]
        patterns = tuple(config.getini("rubric_file_patterns")) or DEFAULT_PATTERNS
        json_path = config.getoption("rubric_json")
        responses = config.getoption("rubric_responses")
        return cls(
            dirs=tuple(dirs),
            patterns=patterns,
            responses_dir=(here / responses).resolve() if responses else None,
            target=config.getoption("rubric_target"),
            json_path=here / json_path if json_path else None,
            min_score=floats("rubric_min_score", DEFAULT_MIN_SCORE),
            thresholds=_style.StyleThresholds(
                confident=floats("rubric_confident_threshold", defaults.confident),
                hedged=floats("rubric_hedged_threshold", defaults.hedged),
                low_score=floats("rubric_low_score", defaults.low_score),
                high_score=floats("rubric_high_score", defaults.high_score),
            ),
        )


@dataclass(slots=True)
class _ResponseDir:
    files: list[ResponseFile]
    problems: list[Problem]
    used: set[tuple[str, str]] = field(default_factory=set)  # (subject, case id)


class RubricSession:
    """Owns the grader, the response files and the results of one pytest session."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.settings = Settings.from_config(config)
        self.grader = Grader(
            thresholds=self.settings.thresholds, default_min_score=self.settings.min_score
        )
        self.results: list[CaseResult] = []
        self.collection_errors = 0
        self._response_dirs: dict[Path, _ResponseDir] = {}

    def header_line(self) -> str | None:
        settings = self.settings
        parts = [f"--rubric-dir {d}" for d in settings.dirs]
        if settings.responses_dir:
            parts.append(f"--rubric-responses {settings.responses_dir}")
        if settings.target:
            parts.append(f"--rubric-target {settings.target}")
        return f"rubric: {' '.join(parts)}" if parts else None

    # --- inputs -------------------------------------------------------------------------------

    def response_dir(self, directory: Path) -> _ResponseDir:
        """The subject files of ``directory``, read on first use and shared by every rubric file."""
        cached = self._response_dirs.get(directory)
        if cached is None:
            if directory.is_dir():
                files, problems = load_response_dir(directory)
            else:
                files, problems = (
                    [],
                    [
                        Problem(
                            f"responses folder {str(directory)!r} does not exist",
                            hint="create it with one <subject>.jsonl per subject, or fix the path",
                        )
                    ],
                )
            cached = self._response_dirs[directory] = _ResponseDir(files, problems)
        return cached

    def global_responses(self) -> _ResponseDir | None:
        """``--rubric-responses DIR``; its problems stop the run before collection."""
        if self.settings.responses_dir is None:
            return None
        loaded = self.response_dir(self.settings.responses_dir)
        if loaded.problems:
            raise pytest.UsageError(
                "--rubric-responses: cannot use the responses:\n"
                + "\n".join("  " + p.render() for p in loaded.problems)
            )
        return loaded

    def warn_unused_responses(self) -> None:
        """Report responses that matched no collected case, so none is silently dropped."""
        for loaded in self._response_dirs.values():
            for response_file in loaded.files:
                for case_id, (_, line) in response_file.entries.items():
                    if (response_file.subject, case_id) not in loaded.used:
                        warnings.warn_explicit(
                            RubricWarning(
                                f"the response of subject {response_file.subject!r} for case "
                                f"{case_id!r} matches no collected case; fix its id or remove the line"
                            ),
                            category=RubricWarning,
                            filename=str(response_file.path),
                            lineno=line,
                        )

    # --- results ------------------------------------------------------------------------------

    def add(self, result: CaseResult) -> None:
        self.results.append(result)

    def summary_lines(self) -> list[str]:
        return summary_lines(self.results)

    def json_document(self) -> dict[str, Any]:
        rows = leaderboard(self.results)
        return {
            "version": 1,
            "results": [r.to_dict() for r in self.results],
            "leaderboard": [row.to_dict() for row in rows],
            "rankings_disagree": rankings_disagree(rows),
        }

    def write_outputs(self) -> None:
        path = self.settings.json_path
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(self.json_document(), indent=2) + "\n", encoding="utf-8")
