"""The application's traceback: what an item reports when its target raised.

The exception a target raised is reported as pytest reports a test's: its
traceback from the target's first frame, the frames of the plugin that called
it (and of ``asyncio``, which awaited it) cut as pytest cuts its own, in the
style ``--tb`` asks for, with what the plugin made of it as a section below.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest

from .._guards.calls import UserCodeError
from .._guards.outgoing import outgoing

__all__ = ["application_traceback"]

# The frames that lead to a target: the plugin's (and contextlib's, which it calls through),
# and asyncio's for an async target.
_CALLERS = (
    Path(__file__).resolve().parent.parent,
    Path(os.path.dirname(os.__file__), "asyncio"),
    Path(contextlib.__file__),
)


def _calling(entry: Any) -> bool:
    path = Path(str(entry.path))
    return any(path.is_relative_to(folder) for folder in _CALLERS)


def application_traceback(
    config: pytest.Config, raised: BaseException, error: BaseException
) -> Any:
    """The report of ``raised``, what a target raised, cut to the application's frames;
    ``error`` (why the item has no answer) is its ``rubric`` section."""
    info = pytest.ExceptionInfo.from_exception(raised)
    entries = list(info.traceback)
    first = next((i for i, entry in enumerate(entries) if not _calling(entry)), 0)
    info.traceback = info.traceback[first:].filter(info)
    style = config.getoption("tbstyle", "auto")
    if style == "auto":
        style = "long"  # as pytest's own test functions do
    # An exception that does not print may be a frame's argument or local: none is shown.
    values = not (isinstance(raised, UserCodeError) and raised.unprintable)
    shown = info.getrepr(
        funcargs=values,
        showlocals=values and config.getoption("showlocals", False),
        style=style,
        tbfilter=False,
        truncate_locals=config.get_verbosity() <= 1,
    )
    shown.addsection("rubric", str(error))
    return _scrubbed(shown)


def _scrubbed(value: Any) -> Any:
    """``value`` (pytest's report of an exception) with :func:`outgoing` applied to each of
    its strings: the application's source lines and locals may hold a key."""
    if isinstance(value, str):
        return outgoing(value)
    if isinstance(value, list):
        return [_scrubbed(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_scrubbed(item) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            setattr(value, field.name, _scrubbed(getattr(value, field.name)))
    return value
