"""``regex``: MET when the pattern matches the normalized answer (or, inverted, does not).

``engine: re2`` (the default) matches in linear time, so no pattern can hang a run;
``engine: python`` allows backreferences and lookaround, each search cut off after
:data:`~pytest_rubric._guards.engines.PATTERN_TIMEOUT` (ERROR). ``normalize: false``
matches the answer and the pattern as written (what an importer needs to reproduce another
tool's exact checks).
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal

from pydantic import Field

from .._guards import engines
from .._guards.engines import CheckTimeout, PatternError, compile_pattern, search
from .._guards.outgoing import as_written
from .._results import Outcome
from .check import Answer, Broken, Check, CheckContext, error, met, short, unmet
from .json_text import FieldScoped, on_field
from .model import FieldError
from .normalize import normalize_pattern

# What to do about a pattern that does not compile: in double quotes, a file's escapes take
# its backslashes.
PATTERN_HINT = "fix the pattern (in YAML, write it in single quotes or double every backslash)"
# What to do about one that needs what RE2 lacks, where no other engine can be chosen.
RE2_HINT = "RE2 has no backreferences and no lookaround: rewrite the pattern without them"


def invalid_pattern(pattern: str, exc: PatternError) -> FieldError:
    """The error of a ``pattern`` RE2 must run (``citations``', a claim's) that it does not."""
    return FieldError(
        "pattern",
        f"invalid pattern {as_written(pattern)}: {exc}",
        hint=RE2_HINT if exc.unsupported else PATTERN_HINT,
    )


class Regex(FieldScoped):
    """MET when the pattern matches the normalized answer (or, inverted, does not)."""

    type: Literal["regex"] = "regex"
    pattern: Annotated[str, Field(min_length=1)]
    case_sensitive: bool = False
    invert: bool = False
    engine: Literal["re2", "python"] = "re2"
    # False: match the answer as written, and the pattern as written (no normalization).
    normalize: bool = True

    def compile(self, context: CheckContext) -> Check[Regex]:
        try:
            return on_field(self, RegexCheck(self))
        except PatternError as exc:
            return Broken(self, f"invalid regex {as_written(self.pattern)}: {exc}; {PATTERN_HINT}")


@functools.lru_cache(maxsize=4096)
def compile_regex(
    pattern: str, *, case_sensitive: bool, engine: str, normalize: bool = True
) -> Any:
    """A compiled pattern for :func:`~pytest_rubric._guards.engines.search` (RE2, or the
    ``regex`` package for ``engine: python``), its literal characters normalized like answers
    unless ``normalize`` is false; :class:`~pytest_rubric._guards.engines.PatternError`."""
    normalized = normalize_pattern(pattern, casefold=not case_sensitive) if normalize else pattern
    return compile_pattern(
        normalized, case_sensitive=case_sensitive, backtracking=engine == "python"
    )


def pattern_error(c: Regex) -> PatternError | None:
    """Why ``c``'s pattern does not compile (``unsupported``: it needs what RE2 lacks), or None."""
    try:
        compile_regex(
            c.pattern, case_sensitive=c.case_sensitive, engine=c.engine, normalize=c.normalize
        )
    except PatternError as exc:
        return exc
    return None


class RegexCheck(Check[Regex]):
    __slots__ = ("pattern",)

    def __init__(self, c: Regex) -> None:
        super().__init__(c)
        self.pattern = compile_regex(
            c.pattern, case_sensitive=c.case_sensitive, engine=c.engine, normalize=c.normalize
        )

    def run(self, answer: Answer, case: object) -> Outcome:
        c = self.c
        text = (answer.cased if c.case_sensitive else answer.folded) if c.normalize else answer.text
        # engine: python can take exponential time on a short answer ((a+)+$ on 51
        # characters): its every search is bounded in time.
        try:
            match = search(self.pattern, text)
        except CheckTimeout:
            return error(
                f"engine: python gave up on {short(c.pattern)} after "
                f"{engines.PATTERN_TIMEOUT:g} s of backtracking on an answer of {len(text)} "
                "characters; rewrite the pattern without nested repetition, or use the "
                "default engine (RE2), which runs in linear time"
            )
        if c.invert:
            if match:
                return unmet(f"found {short(match.group(0))}, which must not occur")
            return met(f"{short(c.pattern)} does not occur")
        if match:
            return met(f"matched {short(match.group(0))}")
        return unmet(f"no match for {short(c.pattern)}")
