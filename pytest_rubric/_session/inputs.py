"""The session's inputs: where answers come from (response folders, live models, the
application's tally) and the grader that compiles rubrics."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .._config.settings import Settings
from .._defaults import ResponseTally, first_data_file, named
from .._guards.outgoing import warn
from .caches import Caches
from .response_dirs import ResponseDir, ResponseDirs
from .xdist import Role

if TYPE_CHECKING:
    from .._grade.grader import Grader
    from .._grade.sources import LiveModel
    from .._llm.cost import Budget
    from .._otel import SpanCapture

__all__ = ["Inputs"]


class Inputs:
    """Response folders read once, ``--rubric-model`` subjects, the session's grader."""

    def __init__(
        self,
        config: pytest.Config,
        settings: Settings,
        role: Role,
        *,
        caches: Caches,
        budget: Budget | None,
    ) -> None:
        self._config = config
        self._settings = settings
        self._role = role
        self.caches = caches
        self.responses = ResponseDirs(config, role)  # the response folders, read once
        self.tally = ResponseTally()  # the application's answers: asked, replayed
        self.collection_errors = 0  # rubric files that failed to load
        # Rubric files (node ids) whose targets the command line's subjects replaced, and
        # those that pin theirs (`target_fixed: true`): the header says so.
        self.targets_replaced: set[str] = set()
        self.targets_pinned: set[str] = set()
        self._grader: Grader | None = None
        self.models: dict[str, LiveModel] = _live_models(settings, budget)
        self.spans: SpanCapture | None = None  # --rubric-otel: reads each target call's spans
        if settings.otel:
            from .._otel import SpanCapture  # OpenTelemetry: imported only with the flag

            self.spans = SpanCapture()

    def keeps_targets(self, file: str, *, pinned: bool) -> bool:
        """Whether the targets rubric file ``file`` (a node id) names answer its cases: unless
        the command line names subjects and the file does not pin its own
        (``target_fixed``). Either way the file is counted, for the run to say so."""
        if pinned:
            self.targets_pinned.add(file)
            return True
        if self._settings.targets or self._settings.models:
            self.targets_replaced.add(file)
            return False
        return True

    @property
    def grader(self) -> Grader:
        """The session's grader, built on first use."""
        if self._grader is None:
            from .._grade.grader import Grader

            settings = self._settings
            self._grader = Grader(
                thresholds=settings.thresholds,
                default_min_score=settings.min_score,
                call_timeout=settings.call_timeout,
                check_timeout=settings.check_timeout,
                style_field=settings.style_field,
            )
        return self._grader

    def response_dir(self, directory: Path) -> ResponseDir:
        return self.responses.get(directory)

    def global_responses(self) -> ResponseDir | None:
        return self.responses.global_dir(self._settings.responses_dir)

    def check_dirs(self) -> None:
        """Warn about a rubric directory that holds no rubric file but YAML or JSON files:
        most likely rubric files named without the pattern, which collect nothing."""
        if not self._role.reports:  # the controller warns, once
            return
        settings = self._settings
        for directory in settings.dirs:
            found = first_data_file(directory, settings.patterns)
            if found is None:
                continue
            option = "--rubric-dir" if settings.dirs_from_flag else "ini rubric_dirs"
            here = self._config.invocation_params.dir
            folder, shown = os.path.relpath(directory, here), os.path.relpath(found, here)
            patterns = ", ".join(settings.patterns)
            message = (
                f"{option} {folder} holds no rubric file ({patterns}) "
                f"but YAML or JSON files, such as {shown}: rename it to match, as "
                f"{Path(shown).stem}.rubric{Path(shown).suffix}, or set ini "
                "rubric_file_patterns"
            )
            warn(message)  # the message says where; no line of the file is echoed


def _live_models(settings: Settings, budget: Budget | None) -> dict[str, LiveModel]:
    """``--rubric-model``, each a subject; its name clashing with a ``--rubric-target``'s
    is a usage error, as the same model or name given twice is."""
    models: dict[str, LiveModel] = {}
    if not settings.models:
        return models
    from .._grade.sources import LiveModel
    from .._llm.providers import ModelSpec

    targets = {
        name or value.rpartition(":")[2]: given
        for given in settings.targets
        for name, value in [named(given)]
    }
    for given in settings.models:
        name, value = named(given)
        try:
            spec = ModelSpec.parse(value)
            subject = name or spec.model
            if subject in targets:
                raise ValueError(
                    f"{given} and --rubric-target {targets[subject]} are both subject "
                    f"{subject!r}; name one of them (NAME=...)"
                )
            price = settings.cost.of(spec.name, spec.model)
            if settings.cost.max_cost is not None and price is None:
                raise ValueError(
                    f"--rubric-max-cost needs the price of model {spec.model}: add a line "
                    f"`{spec.model} IN OUT` (dollars per million tokens) to ini "
                    "rubric_judge_prices"
                )
            models[subject] = LiveModel(
                spec,
                subject=subject,
                policy=settings.retry,
                price=price,
                budget=budget,
                require_key=settings.response_cache_mode != "replay",
            )
        except ValueError as exc:
            raise pytest.UsageError(f"--rubric-model: {exc}") from None
    return models
