"""The judge's agreement with a suite's calibration labels: what the audit measures.

:class:`Calibration` holds the agreement of a suite: ``n`` (examples the judge
graded; ERRORs are counted apart), ``accuracy``, ``kappa`` (Cohen's,
:func:`~pytest_rubric._report.stats.cohen_kappa`), ``tpr`` (the share of MET labels
the judge called MET) and ``tnr`` (of UNMET labels, UNMET). The labels are read by
``_load.examples``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .stats import cohen_kappa

if TYPE_CHECKING:
    from .._schema import CalibrationExample as Example
    from ..criteria.judge import Requirement


@dataclass(frozen=True, slots=True)
class Calibration:
    """The judge's agreement with one suite's labels."""

    suite: str
    judge: str
    n: int
    accuracy: float | None
    kappa: float | None
    tpr: float | None
    tnr: float | None
    errors: int = 0  # examples the judge could not grade (ERROR): not in n

    @property
    def line(self) -> str:
        def num(value: float | None) -> str:
            return "-" if value is None else f"{value:.3f}"

        text = (
            f"judge calibration {self.suite}: n {self.n}, accuracy {num(self.accuracy)}, "
            f"kappa {num(self.kappa)}, tpr {num(self.tpr)}, tnr {num(self.tnr)}"
        )
        return text + (f" ({self.errors} not graded: ERROR)" if self.errors else "")


def label_met(example: Example, criterion: Requirement) -> bool:
    """The label as MET or not: a score counts as MET in the upper half of the range."""
    if example.score is not None:
        low, high = criterion.min_score, criterion.max_score
        return (example.score - low) / (high - low) >= 0.5
    return example.verdict == "MET"


def measure(suite: str, judge: str, pairs: Sequence[tuple[bool, bool | None]]) -> Calibration:
    """Agreement from ``(label MET, judge MET or None for ERROR)`` pairs."""
    graded = [(label, judged) for label, judged in pairs if judged is not None]
    n = len(graded)
    labels = [label for label, _ in graded]
    verdicts = [bool(judged) for _, judged in graded]
    positives = [v for label, v in zip(labels, verdicts, strict=True) if label]
    negatives = [not v for label, v in zip(labels, verdicts, strict=True) if not label]
    return Calibration(
        suite=suite,
        judge=judge,
        n=n,
        accuracy=sum(a == b for a, b in zip(labels, verdicts, strict=True)) / n if n else None,
        kappa=cohen_kappa(labels, verdicts),
        tpr=sum(positives) / len(positives) if positives else None,
        tnr=sum(negatives) / len(negatives) if negatives else None,
        errors=len(pairs) - n,
    )
