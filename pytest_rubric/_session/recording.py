"""What a test phase leaves for the session: the results it recorded, which of them count,
and what JUnit carries of each."""

from __future__ import annotations

import pytest

from .._guards.outgoing import outgoing
from .._results import CaseResult, Recorded, Verdict
from .items import RESULTS_KEY

__all__ = ["junit_properties", "record", "settle"]


def record(item: pytest.Item, result: CaseResult, *, raised: bool = False) -> None:
    """Keep ``result`` for the item's report (see :func:`settle`)."""
    item.stash.setdefault(RESULTS_KEY, []).append(Recorded(result, raised))


def settle(recorded: list[Recorded], escaped: BaseException | None) -> list[CaseResult]:
    """The results of a test phase that count in the session's outputs and gates.

    A result ``assert_rubric`` raised counts only when its exception escaped
    the test: a test that catches ``RubricAssertionError`` (``pytest.raises``)
    expected the answer to fail, and that failure is not the subject's.
    """
    return [
        r.result for r in recorded if not r.raised or getattr(escaped, "result", None) is r.result
    ]


def junit_properties(result: CaseResult) -> list[tuple[str, str]]:
    """What ``--junitxml`` carries of a result: ``rubric_case``, ``rubric_subject``,
    ``rubric_score``, ``rubric_min_score``, ``rubric_passed`` and, when some went the
    wrong way or could not be evaluated, ``rubric_failed_criteria`` (comma-separated ids)."""
    properties = [  # each name one of items.JUNIT_PROPERTIES
        ("rubric_case", outgoing(result.case)),  # the texts a rubric or a user wrote
        ("rubric_subject", outgoing(result.subject)),
        ("rubric_score", f"{result.score:.4f}"),
        # "none": a report-only case, which has no pass mark
        ("rubric_min_score", "none" if result.min_score is None else f"{result.min_score:.4f}"),
        ("rubric_passed", str(result.passed).lower()),
    ]
    failed = [c.id for c in result.criteria if c.went_wrong or c.verdict is Verdict.ERROR]
    if failed:
        properties.append(("rubric_failed_criteria", outgoing(",".join(failed))))
    return properties
