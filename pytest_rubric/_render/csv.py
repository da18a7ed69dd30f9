"""The ``--rubric-csv`` file: one row per criterion result, for a spreadsheet.

Its columns (:data:`HEADER`), its records (RFC 4180, UTF-8 without a byte order mark) and
how a cell is kept from running as a formula are the contract of docs/guides/comparing.md
("The CSV"). Every cell passes the outgoing boundary cell by cell (:func:`boundary`).
"""

from __future__ import annotations

import csv
import io
import itertools
import re
import unicodedata
from collections.abc import Iterator

from .._guards.outgoing import outgoing_data
from .._report.report import SessionReport
from .table import with_requirement

HEADER = (
    "nodeid",
    "suite",
    "case",
    "subject",
    "sample",
    "criterion",
    "type",
    "axis",
    "weight",
    "verdict",
    "ok",
    "credit",
    "score",
    "passed",
    "reason",
)
RECORD_END = "\r\n"  # RFC 4180's; the only carriage returns in the file (see boundary)


def cell(text: str) -> str:
    """A text cell fit for a spreadsheet: ``'`` in front of a formula's start.

    The outgoing boundary is applied after, cell by cell (:func:`boundary`). Nothing it
    changes can start a formula (a key becomes ``***``, a carriage return or another
    control character ``\\x..``, a URL keeps its scheme), so the prefix decided here holds."""
    return "'" + text if _formula(text) else text


_STARTS = frozenset("=+-@")
# A number's digits are read one way only: "\d+\.?\d*" could split a run of digits between
# its two parts at every digit, quadratic in the run's length on a cell that is no number.
_NUMBER = re.compile(r"\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*")


def _formula(text: str) -> bool:
    """Whether a spreadsheet could read ``text`` as a formula: its first character past spaces
    and invisible format characters is ``=``, ``+``, ``-`` or ``@`` in any compatibility form
    (full-width ``＝``), or it starts with a tab or a carriage return; a number is not."""
    if text.startswith(("\t", "\r")):
        return True
    # Past spaces and zero-width ones: a spreadsheet may skip them.
    first = next((c for c in text if not c.isspace() and unicodedata.category(c) != "Cf"), "")
    return unicodedata.normalize("NFKC", first)[:1] in _STARTS and _NUMBER.fullmatch(text) is None


_BATCH = 1000  # rows through the boundary at a time: the keys looked up once a batch


def boundary(text: str) -> str:
    """The outgoing boundary (``_guards.outgoing``) applied to every cell of the CSV ``text``, and
    the CSV written again: applied to the whole text, a URL in one cell would run on into
    the next cells (the URL pattern stops at a space or a quote, not a comma) and lose them
    with its query string, and its carriage returns would be escaped. A carriage return in
    a cell is escaped (``\\x0d``), so the only ones left in the file end its records."""
    source = csv.reader(io.StringIO(text, newline=""))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=RECORD_END)
    while batch := list(itertools.islice(source, _BATCH)):
        writer.writerows(outgoing_data(batch))
    return buffer.getvalue()


def _rows(report: SessionReport) -> Iterator[list[str]]:
    for r in report.results:
        for index, sample in enumerate(r.sample_list, start=1):
            for c in sample.criteria:
                yield [
                    cell(r.nodeid),
                    cell(r.suite),
                    cell(r.case),
                    cell(r.subject),
                    str(index),
                    cell(c.id),
                    cell(c.type),
                    cell(c.axis),
                    cell(repr(c.weight)),
                    cell(str(c.verdict)),
                    str(c.ok).lower(),
                    cell(repr(c.credit)),
                    cell(repr(sample.score)),
                    str(sample.passed).lower(),
                    cell(with_requirement(c)),
                ]


def csv_chunks(report: SessionReport, *, rows: int = 1_000) -> Iterator[str]:
    """Every criterion result of ``report`` as CSV text, ``rows`` whole records at a time:
    what ``--rubric-csv`` writes, never holding the whole file as text."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=RECORD_END)
    writer.writerow(HEADER)
    for count, row in enumerate(_rows(report), start=1):
        writer.writerow(row)
        if count % rows == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()
