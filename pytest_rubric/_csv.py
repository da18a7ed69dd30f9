"""The ``--rubric-csv`` file: one row per criterion result, for a spreadsheet.

One row per criterion of every answer, and with ``repeat`` per criterion of every sample
(``sample`` counts from 1; a result graded once is its own sample 1). The header is
:data:`HEADER`; ``score`` and ``passed`` are the *sample's* (an item's verdict by its
``pass_when`` rule is in the JSON); ``ok`` and ``passed`` are ``true`` or ``false``.

The file is RFC 4180 (the :mod:`csv` module's quoting, CRLF between records) and UTF-8
without a byte order mark; a cell holding a comma, a quote or a line break is quoted.

Every cell passes the outgoing boundary (``_outgoing``) like every output's text: keys
redacted, URLs public, control characters shown escaped.

Formula injection: a *text* cell (node id, suite, case, subject, criterion, type, axis,
verdict, reason) that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
is written with a ``'`` in front, so a spreadsheet shows it and never runs it. A *number*
cell (``sample``, ``weight``, ``credit``, ``score``) is written by the plugin from a
finite number (``-2.0``, a forbidden criterion's weight): it is not prefixed, so it
stays a number in the spreadsheet and in ``float()``; it can hold nothing but a number,
so it can run nothing.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator

from ._session_report import SessionReport

__all__ = ["HEADER", "RECORD_END", "cell", "render_csv"]

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
RECORD_END = "\r\n"  # RFC 4180's; the only carriage returns in the file (see cell)
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def cell(text: str) -> str:
    """A text cell fit for a spreadsheet: ``'`` in front of a formula's start, and a carriage
    return shown escaped as the outgoing boundary shows it (``\\x0d``), so the only ones left
    in the file end its records.

    The rest of the boundary (keys, URLs, other control characters) is applied to the
    whole file, record by record (``_outputs.Output.records``): once, not once a cell, which
    took most of the time of a large file. Nothing it changes can start a formula (a key
    becomes ``***``, a control character ``\\x..``), so the prefix decided here holds."""
    if text.startswith(_FORMULA):
        text = "'" + text
    return text.replace("\r", "\\x0d") if "\r" in text else text


def _number(value: float) -> str:
    if not math.isfinite(value):  # a result never holds one; a cell never runs one
        return cell(repr(value))
    return repr(value) if isinstance(value, float) else str(value)


def _flag(value: bool) -> str:
    return "true" if value else "false"


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
                    _number(c.weight),
                    cell(str(c.verdict)),
                    _flag(c.ok),
                    _number(c.credit),
                    _number(sample.score),
                    _flag(sample.passed),
                    cell(c.reason),
                ]


def render_csv(report: SessionReport) -> str:
    """Every criterion result of ``report`` as CSV text (see the module docstring)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=RECORD_END)
    writer.writerow(HEADER)
    writer.writerows(_rows(report))
    return buffer.getvalue()
