"""The one table of the plugin's options: every ``--rubric-*`` flag and ``rubric_*`` ini key.

:data:`OPTIONS` (the run's, then the judge's) drives ``pytest_addoption``
(:func:`add_options`), the settings (:func:`given` reads an option as a run
sees it: the flag, else the ini key, else the default) and the options page of
the docs (``docs/hooks.py``). An option is one :class:`~.option.Option` entry
in ``run_options`` or ``judge_options`` and a field of ``Settings``.
"""

from __future__ import annotations

from typing import Any

import pytest

from .judge_options import JUDGE_OPTIONS
from .option import Option, argparse_type
from .run_options import RUN_OPTIONS

__all__ = [
    "BY_KEY",
    "OPTIONS",
    "add_options",
    "configured",
    "given",
]

OPTIONS: tuple[Option, ...] = (*RUN_OPTIONS, *JUDGE_OPTIONS)


BY_KEY = {option.key: option for option in OPTIONS}


def add_options(parser: pytest.Parser) -> None:
    """Every ``--rubric-*`` flag (one group) and ini key of :data:`OPTIONS`."""
    group = parser.getgroup("rubric", "rubric-based assertions on LLM output (pytest-rubric)")
    for option in OPTIONS:
        if option.flag:
            kwargs: dict[str, Any] = {"dest": option.dest, "help": option.help}
            if option.action is not None:
                kwargs["action"] = option.action
            if option.action != "store_true":
                kwargs["default"] = option.flag_default
                if option.metavar is not None:
                    kwargs["metavar"] = option.metavar
                if option.choices is not None:
                    kwargs["choices"] = option.choices
                if option.parse is not None:
                    kwargs["type"] = argparse_type(option.parse)
            elif option.ini:
                kwargs["default"] = None  # not given: the ini key decides
            group.addoption(option.flag_text, **kwargs)
        if option.ini:
            parser.addini(
                option.dest,
                option.ini_help or option.help,
                type=option.ini_type,  # type: ignore[arg-type]
                default=_ini_default(option),
            )


def _ini_default(option: Option) -> Any:
    return option.default if option.ini_type != "string" else ""


# Ini keys that ask for no rubric work by themselves: where rubric files are (the plugin adds
# ``rubric_dirs`` to a run that names no path, and starts the session then) and the heap's
# tricks, which apply only once rubric files are collected.
_ONLY_WITH_RUBRIC_FILES = frozenset({"dirs", "file_patterns", "gc_freeze", "gc_pause", "fast_exit"})


def configured(config: pytest.Config) -> bool:
    """Whether the run gives any ``--rubric-*`` flag a value other than its default, or sets
    an ini key other than those of ``_ONLY_WITH_RUBRIC_FILES``: then ``plugin`` starts the
    session at configure, as every run did before it started on first need."""
    for option in OPTIONS:
        if option.flag:
            value = config.getoption(option.dest)
            if value not in (None, [], False) and value != option.flag_default:
                return True
        own_only = option.key in _ONLY_WITH_RUBRIC_FILES
        if option.ini and not own_only and config.getini(option.dest) != _ini_default(option):
            return True
    return False


def given(config: pytest.Config, key: str) -> Any:
    """Option ``key`` as this run has it: the flag when given, else the ini key when set
    (read by the same reader; a wrong value is a usage error naming the key), else the
    default."""
    option = BY_KEY[key]
    if option.flag:
        value = config.getoption(option.dest)
        if value not in (None, []):
            return value
    if option.ini:
        raw = config.getini(option.dest)
        if option.ini_type != "string":
            return raw
        text = str(raw or "").strip()
        if text:
            if option.parse is None:
                return text
            try:
                return option.parse(text)
            except ValueError as exc:
                raise pytest.UsageError(f"ini option {option.dest} = {exc}") from None
    return option.default
