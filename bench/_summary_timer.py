"""A pytest plugin for ``bench_failures.py``: how long the terminal summary took.

Loaded with ``-p _summary_timer`` (``bench/`` on ``PYTHONPATH``), it wraps every other
``pytest_terminal_summary`` implementation (pytest's failure printing included) and writes
the seconds they took to the file named by ``SUMMARY_TIMER_OUT``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from pathlib import Path

import pytest


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary() -> Generator[None, None, None]:
    started = time.perf_counter()
    try:
        return (yield)
    finally:
        Path(os.environ["SUMMARY_TIMER_OUT"]).write_text(f"{time.perf_counter() - started}\n")
