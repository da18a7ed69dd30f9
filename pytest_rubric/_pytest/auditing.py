"""The session's part in auditing the judge: calibration examples graded at session start,
the style probe planned over the collected items (see ``_calibration`` and ``_audit``).

A part of :class:`~pytest_rubric._pytest.session.RubricSession` (which inherits it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest

from .._results import Verdict
from .items import is_rubric_item

if TYPE_CHECKING:
    # Imported where used: a session without rubric files or judge never loads them.
    from .._grade.grader import CompiledRubric
    from .._llm.base import Judged
    from .._report.calibration import Calibration
    from ..judge.prompts import Guidance


from .judging import SessionJudge

__all__ = ["SessionAudit"]


class SessionAudit(SessionJudge):
    """The judge audit's part of the session."""

    def add_calibration(self, file_id: str, suite: str, examples: list[Any]) -> None:
        """A collected rubric file's calibration examples (``(example, criterion, case)``)."""
        if examples:
            self._calibration_examples[file_id] = (suite, examples)

    def add_guidance(self, file_id: str, guidance: Guidance | None) -> None:
        """A collected rubric file's ``judge_instructions:`` and ``judge_examples:``."""
        if guidance is not None:
            self._guidance[file_id] = guidance

    def guidance_of(self, key: str) -> Guidance | None:
        """The guidance of the rubric file of item (or calibration) ``key``, or None."""
        return self._guidance.get(key.split("::", 1)[0])

    def start_calibration(self) -> None:
        """Start grading every calibration example, before any judged item runs.

        Under xdist one worker (``gw0``) grades them, so the session pays for them
        once; with ``--rubric-judge-min-kappa`` every worker needs the figures for
        its own items, so each grades them (the cache serves what another already
        stored), and the controller keeps the first figures it receives.
        """
        if self.judging is None or self.dry_run or not self._grades_calibration:
            return
        for file_id, (_, examples) in self._calibration_examples.items():
            for index, (example, criterion, case) in enumerate(examples):
                self.judging.schedule(
                    f"{file_id}::calibration#{index}",
                    [criterion],
                    question=case.asked,
                    response=example.response,
                    reference=case.reference,
                    guidance=self.guidance_of(file_id),
                )

    @property
    def _grades_calibration(self) -> bool:
        workerinput = getattr(self.config, "workerinput", None)
        if workerinput is None or self.settings.min_kappa is not None:
            return True
        return bool(workerinput.get("workerid") == "gw0")

    def calibration_of(self, file_id: str) -> Calibration | None:
        """The judge's agreement with a rubric file's labels (waiting for its grades)."""
        if file_id in self._calibrated or self.judging is None:
            return self._calibrated.get(file_id)
        if file_id not in self._calibration_examples or not self._grades_calibration:
            return None
        from .._report.calibration import label_met, measure

        suite, examples = self._calibration_examples[file_id]
        pairs: list[tuple[bool, bool | None]] = []
        for index, (example, criterion, case) in enumerate(examples):
            outcome = self.judging.result(
                f"{file_id}::calibration#{index}",
                [criterion],
                question=case.asked,
                response=example.response,
                reference=case.reference,
                guidance=self.guidance_of(file_id),
            ).outcomes[criterion.id]
            decided = outcome.verdict in (Verdict.MET, Verdict.UNMET)
            judged = outcome.verdict is Verdict.MET if decided else None
            pairs.append((label_met(example, criterion), judged))
        self._calibrated[file_id] = measure(suite, self.judging.name, pairs)
        return self._calibrated[file_id]

    def calibrations(self) -> list[Calibration]:
        """Every rubric file's calibration, in node id order."""
        for file_id in self._calibration_examples:
            self.calibration_of(file_id)
        return [self._calibrated[f] for f in sorted(self._calibrated)]

    def _below_min_kappa(self, key: str) -> str | None:
        """Why the judged criteria of item ``key`` are ERROR: its suite's calibration kappa is
        below ``--rubric-judge-min-kappa``; None when it is not."""
        floor = self.settings.min_kappa
        if floor is None:
            return None
        calibration = self.calibration_of(key.split("::", 1)[0])
        if calibration is None:
            return None
        if calibration.kappa is None:
            return (
                f"judge calibration of suite {calibration.suite!r}: kappa cannot be computed "
                f"(n {calibration.n}; the labels or the verdicts are all one way), so it is not "
                f"at least --rubric-judge-min-kappa {floor:g}"
            )
        if calibration.kappa < floor:
            return (
                f"judge calibration of suite {calibration.suite!r}: kappa {calibration.kappa:.3f} "
                f"is below --rubric-judge-min-kappa {floor:g}"
            )
        return None

    def plan_probe(self, items: Sequence[pytest.Item]) -> None:
        """Choose the criteria the style probe judges again (``--rubric-judge-probe N``).

        Every process collects every item, so each xdist worker makes the same choice.
        """
        n = self.settings.judge_probe
        if not n or self.judge_name is None or self.dry_run:
            return
        from .._report.audit import probe_plan

        candidates = [
            (
                item.nodeid,
                str(getattr(item, "subject", "") or ""),
                [c.id for c in item.compiled.judged_criteria if c.axis == "substance"],
            )
            for item in items
            if is_rubric_item(item)
        ]
        self.probe_plan = probe_plan(sorted(candidates), n)

    def _probed(self, key: str, compiled: CompiledRubric) -> list[Any]:
        ids = self.probe_plan.get(key, ())
        return [c for c in compiled.judged_criteria if c.id in ids]

    def _probe_calls(
        self, key: str, compiled: CompiledRubric, response: str
    ) -> list[tuple[str, str, list[Any], str]]:
        """Each probe call of item ``key``: ``(kind, call key, criteria, response)``, for the
        kinds of ``--rubric-judge-probe-kinds`` (none when the item is not probed)."""
        criteria = self._probed(key, compiled)
        if not criteria:
            return []
        from .._grade.padding import pad, paddable
        from .._grade.restyle import restyle

        kinds = self.settings.probe_kinds
        calls: list[tuple[str, str, list[Any], str]] = []
        if "tone" in kinds:
            calls += [
                (tone, f"{key}#probe-{tone}", criteria, restyle(response, to=tone))
                for tone in ("confident", "hedged")
            ]
        if "length" in kinds and paddable(response):  # prose after JSON would break it
            calls.append(("length", f"{key}#probe-length", criteria, pad(response)))
        if "position" in kinds and len(compiled.judged_criteria) > 1:
            # The whole case again, its criteria in reverse order (a one-shot call grades
            # them together, so every criterion moves but a middle one).
            reverse = list(reversed(compiled.judged_criteria))
            calls.append(("position", f"{key}#probe-position", reverse, response))
        return calls

    def _schedule_probe(self, key: str, compiled: CompiledRubric, response: str) -> None:
        if self.judging is None:
            return
        for _, call, criteria, text in self._probe_calls(key, compiled, response):
            self.judging.schedule(
                call,
                criteria,
                question=compiled.rubric.asked,
                response=text,
                reference=compiled.rubric.reference,
                guidance=self.guidance_of(key),
            )

    def probe(
        self, key: str, compiled: CompiledRubric, response: str, judged: Judged | None
    ) -> list[dict[str, str]]:
        """The probes' records for the item ``key`` (none when it is not probed): each
        judge's verdicts on its first answer (``judged``) and judged again for each kind."""
        if self.judging is None or judged is None:  # first: every unjudged item asks
            return []
        criteria = self._probed(key, compiled)
        calls = self._probe_calls(key, compiled, response)
        if not criteria or not calls:
            return []
        from .._report.audit import kind_record, probe_record

        self._schedule_probe(key, compiled, response)
        records = []
        # A panel's judges are probed one by one: the audit is per judge.
        for runner in getattr(self.judging, "runners", (self.judging,)):
            again = {
                kind: runner.result(
                    call,
                    probed,
                    question=compiled.rubric.asked,
                    response=text,
                    reference=compiled.rubric.reference,
                    guidance=self.guidance_of(key),
                )
                for kind, call, probed, text in calls
            }
            for c in criteria:
                outcome = judged.outcomes.get(c.id)
                if outcome is None:
                    continue
                original = dict(outcome.judges).get(runner.name, str(outcome.verdict))
                if not isinstance(original, str):  # a panel judge's score: MET in the upper half
                    share = (original - c.min_score) / (c.max_score - c.min_score)
                    original = "MET" if share >= 0.5 else "UNMET"
                if "confident" in again:
                    records.append(
                        probe_record(
                            criterion=c.id,
                            judge=runner.name,
                            original=str(original),
                            confident=str(again["confident"].outcomes[c.id].verdict),
                            hedged=str(again["hedged"].outcomes[c.id].verdict),
                        )
                    )
                records += [
                    kind_record(
                        kind=kind,
                        criterion=c.id,
                        judge=runner.name,
                        original=str(original),
                        probed=str(again[kind].outcomes[c.id].verdict),
                        negative=c.effective_weight < 0,
                    )
                    for kind in ("length", "position")
                    if kind in again
                ]
        self._warn_cache_trouble()
        return records
