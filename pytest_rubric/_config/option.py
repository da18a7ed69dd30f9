"""One option of the plugin (:class:`Option`), and the readers only options use."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import parsers

__all__ = [
    "DEFAULT_PATTERNS",
    "SUMMARY_MODES",
    "Option",
    "argparse_type",
    "fraction",
    "positive_int",
]

SUMMARY_MODES = ("auto", "on", "off")
DEFAULT_PATTERNS = ("*.rubric.yaml", "*.rubric.yml", "*.rubric.json")


@dataclass(frozen=True, slots=True)
class Option:
    """One option: a flag, an ini key, or both under one name (``rubric_<key>``)."""

    key: str  # the flag is --rubric-<key, with dashes>, the ini key and dest rubric_<key>
    help: str
    flag: bool = True
    ini: bool = False
    default: Any = None  # what a run uses when neither is set (shown in the docs)
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    parse: Callable[[str], Any] | None = None  # a flag's and an ini line's reader
    action: str | None = None  # "append", "store_true"
    ini_type: str = "string"  # pytest's addini type: string, bool, paths, linelist
    ini_help: str | None = None  # the ini key's own help, when it differs
    flag_name: str | None = None  # when the flag is not --rubric-<key>

    @property
    def dest(self) -> str:
        return f"rubric_{self.key}"

    @property
    def flag_text(self) -> str:
        return self.flag_name or "--rubric-" + self.key.replace("_", "-")

    @property
    def flag_default(self) -> Any:
        """None where an ini key can fill it in: a flag that is given always wins."""
        if self.ini or self.action == "append":
            return None
        return self.default


def argparse_type(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def read(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    read.__name__ = parse.__name__  # argparse names a type by it
    return read


# argparse types of the same readers, for the commands of python -m pytest_rubric
fraction = argparse_type(parsers.fraction)
positive_int = argparse_type(parsers.positive_int)
