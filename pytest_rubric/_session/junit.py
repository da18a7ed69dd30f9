"""What pytest's ``--junitxml`` report carries of the rubric: each result's properties, and
what a failing rubric item adds beyond them.

pytest has no public way for a plugin to write a test case's ``system-out`` or to turn its
``failure`` into an ``error``; its ``record_property`` reaches the writer through
``config.stash[xml_key]``, and so does this module, the one place that does. A
``--junitxml`` path that cannot be written ends the run with one error line naming it, like
any other output, not in pytest's traceback.
"""

from __future__ import annotations

import functools
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from _pytest.junitxml import bin_xml_escape, xml_key

from .._guards.outgoing import outgoing, outgoing_strings
from .._render.files import Unwritten, unwritable
from .._results import CaseResult, Verdict

JUNIT_PROPERTIES = frozenset(
    {
        "rubric_case",
        "rubric_subject",
        "rubric_score",
        "rubric_min_score",
        "rubric_passed",
        "rubric_failed_criteria",
        "rubric_skipped_bounds",
    }
)


def junit_properties(result: CaseResult) -> list[tuple[str, str]]:
    """What ``--junitxml`` carries of a result (each name one of ``JUNIT_PROPERTIES``)."""
    fit = outgoing_strings()  # the environment's keys read once for the result's texts
    properties = [
        ("rubric_case", fit[result.case]),  # the texts a rubric or a user wrote
        _repeated("rubric_subject", fit[result.subject]),
        # Whole (the shortest text that reads back as the JSON's number); "none": a
        # report-only case, which has no pass mark.
        _repeated("rubric_score", repr(result.score)),
        _repeated(
            "rubric_min_score", "none" if result.min_score is None else repr(result.min_score)
        ),
        _repeated("rubric_passed", "true" if result.passed else "false"),
    ]
    if failed := [c.id for c in result.criteria if c.went_wrong or c.verdict is Verdict.ERROR]:
        properties.append(("rubric_failed_criteria", fit[",".join(failed)]))
    if result.skipped_bounds is not None:  # left undecided: its score counts only what ran
        properties.append(("rubric_skipped_bounds", ",".join(map(repr, result.skipped_bounds))))
    return properties


@functools.lru_cache(maxsize=4096)
def _repeated(name: str, value: str) -> tuple[str, str]:
    """One tuple for a property that repeats from item to item (a subject, a score, a pass
    mark): every teardown report keeps its properties to the end of the session, in the
    terminal's statistics, and 200,000 items would hold as many copies of each."""
    return (name, value)


def set_aside(config: pytest.Config) -> Unwritten | None:
    """When ``--junitxml`` names a path that cannot be written: JUnit's writer is taken out
    of the run and what could not be written is returned (None otherwise)."""
    if (xml := config.stash.get(xml_key, None)) is None:
        return None
    if (reason := unwritable(Path(xml.logfile))) is None:
        return None
    del config.stash[xml_key]
    config.pluginmanager.unregister(xml)
    return Unwritten("--junitxml", str(xml.logfile), reason)


def write_answers(config: pytest.Config, report: pytest.TestReport, *, show_response: int) -> None:
    """Add the question and the response of a failed rubric item to its test case's
    ``system-out`` (nothing without ``--junitxml``)."""
    from .._render.table import answer_lines

    results = getattr(report, "rubric_results", ())
    text = "\n".join(line for r in results for line in answer_lines(r, show_response=show_response))
    if text and (xml := config.stash.get(xml_key, None)) is not None:
        element = ET.Element("system-out")
        element.text = bin_xml_escape(outgoing(text))
        xml.node_reporter(report).append(element)


def record_properties(config: pytest.Config, report: pytest.TestReport) -> None:
    """Add the properties of ``report``'s results to its test case: of an item whose xdist
    worker died, which has no teardown report for JUnit to read them from."""
    if (xml := config.stash.get(xml_key, None)) is not None:
        reporter = xml.node_reporter(report)
        for result in getattr(report, "rubric_results", ()):
            for name, value in junit_properties(result):
                reporter.add_property(name, value)


def record_as_error(config: pytest.Config, report: pytest.TestReport) -> None:
    """Record ``report``'s failed call as an ``error`` in its JUnit test case (nothing
    without ``--junitxml``); called after JUnit has written the ``failure``."""
    if (xml := config.stash.get(xml_key, None)) is None:
        return
    for element in xml.node_reporter(report).nodes:
        if element.tag == "failure":
            element.tag = "error"
            xml.stats["failure"] -= 1
            xml.stats["error"] += 1
