"""A pytest plugin for ``bench_failures.py``: how long pytest took to print the failures.

Loaded with ``-p _summary_timer`` (``bench/`` on ``PYTHONPATH``), it times the terminal
reporter's ``summary_failures`` (the ``FAILURES`` section, whatever ``--tb`` says) and
writes the seconds to the file named by ``SUMMARY_TIMER_OUT``. A measuring instrument of
the benchmark only: it wraps the reporter's method on its instance, which the plugin
itself never does.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    reporter: Any = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    summary_failures = reporter.summary_failures

    def timed() -> None:
        started = time.perf_counter()
        try:
            summary_failures()
        finally:
            seconds = time.perf_counter() - started
            Path(os.environ["SUMMARY_TIMER_OUT"]).write_text(f"{seconds}\n")

    reporter.summary_failures = timed
