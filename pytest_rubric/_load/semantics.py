"""Problems validation cannot see: ids used twice, subject names that would break test ids,
regex patterns RE2 cannot run, cases that cannot be scored; looked for even when validation
failed (in the raw data, or what validates alone), so one round of errors lists them all.
A value that is valid but most likely a mistake (a fuzzy threshold written as a fraction) is
a :class:`~pytest_rubric.RubricWarning` when the file loads.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from .._errors import Problem
from .._guards.engines import PATTERN_TIMEOUT
from .._guards.limits import overflowing
from .._guards.outgoing import as_written, safe_subject, subject_problem, warn
from .._guards.secrets import shorten
from .._schema import Case, Criterion, Suite, default_ids
from ..criteria.fuzzy import Fuzzy
from ..criteria.json import Json
from ..criteria.regex import PATTERN_HINT, Regex, pattern_error
from .locate import Locator, case_label, dotted, item_label, plain_id, run_relative

_Kind = TypeVar("_Kind", Regex, Fuzzy)


def _of_kind(criterion: Criterion, kind: type[_Kind]) -> list[tuple[_Kind, tuple[str, ...]]]:
    """A criterion of type ``kind`` (itself, or its json fields), with where each sits in it."""
    if isinstance(criterion, kind):
        return [(criterion, ())]
    if isinstance(criterion, Json):
        fields = (criterion.fields or {}).items()
        return [(body, ("fields", p)) for p, body in fields if isinstance(body, kind)]
    return []


def _unrunnable(regex: Regex) -> tuple[str, str] | None:
    """(message, hint) for a pattern the file's double quotes broke, or that needs what RE2
    lacks."""
    escaped = next((_FILE_ESCAPES[c] for c in regex.pattern if c in _FILE_ESCAPES), None)
    if escaped is not None:
        # The user's own pattern, as they meant it: \b back where the file read it.
        return (
            f"the pattern {regex.pattern!r} holds a {escaped[1]} character: the file's double "
            f"quotes read \\{escaped[0]} as one, so it never matches what \\{escaped[0]} means "
            "in a regex",
            f"in YAML write the pattern in single quotes ('{_meant(regex.pattern)}'); in JSON "
            f'or double-quoted YAML double the backslash ("{_meant(regex.pattern, backslash=2)}")',
        )
    if (why := pattern_error(regex)) is None or not why.unsupported:
        return None
    return (
        f"the pattern {as_written(regex.pattern)} needs what the RE2 engine does not have "
        f"({why}): RE2 has no backreferences and no lookaround",
        "rewrite it without them (an `invert: true` criterion often replaces a negative "
        "lookahead), or add `engine: python` to this criterion to use Python's backtracking "
        f"engine, whose every search is cut off after {PATTERN_TIMEOUT:g} s (ERROR)",
    )


def _invalid(regex: Regex) -> tuple[str, str] | None:
    """(message, hint) for a pattern no engine compiles (grading reports it as ERROR)."""
    exc = pattern_error(regex)
    if exc is None or exc.unsupported:  # what RE2 lacks is _unrunnable's
        return None
    return f"invalid regex {as_written(regex.pattern)}: {exc}", PATTERN_HINT


def _pattern_problems(
    data: dict[str, Any],
    suite: Suite | None,
    locator: Locator,
    problem: Callable[[Regex], tuple[str, str] | None],
) -> Iterator[Problem]:
    """The ``problem`` of each regex, located at its pattern."""
    for where, index, criteria in _criteria(data, suite):
        for j, criterion in criteria:
            for regex, inside in _of_kind(criterion, Regex):
                if (found := problem(regex)) is not None:
                    yield Problem(
                        found[0],
                        line=locator.line((*where, j, *inside, "pattern")),
                        case=None if index is None else case_label(data, index),
                        criterion=_criterion_label(criterion, index),
                        field=dotted((*inside, "pattern")),
                        hint=found[1],
                    )


def _criterion_label(criterion: Criterion, index: int | None) -> str:
    """How a problem names a criterion of case ``index``, or of `global` (None)."""
    return criterion.id if index is not None else f"global {criterion.id}"


# Control characters a double-quoted YAML or JSON string makes of a regex escape.
_FILE_ESCAPES = {"\b": ("b", "backspace"), "\f": ("f", "form feed"), "\v": ("v", "vertical tab"),
                 "\a": ("a", "bell"), "\x1b": ("e", "escape"), "\x00": ("0", "NUL")}  # fmt: skip


def _meant(pattern: str, *, backslash: int = 1) -> str:
    """``pattern`` with each character the file's escapes made written back as its escape."""
    meant = "".join(
        "\\" * backslash + _FILE_ESCAPES[c][0] if c in _FILE_ESCAPES else c for c in pattern
    )
    return shorten(meant, 60)


def _criterion_ids(criteria: Any, prefix: str) -> list[tuple[int, str]]:
    """The usable ids of raw criteria, those absent named by position as validation names them."""
    if type(criteria) is not list:
        return []
    return [
        (j, criterion_id)
        for j, criterion in enumerate(default_ids(criteria, prefix))
        if type(criterion) is dict and (criterion_id := plain_id(criterion["id"])) is not None
    ]


def _raw_problems(data: dict[str, Any], locator: Locator) -> Iterator[Problem]:
    """Duplicate ids and subject names that would break test ids, in the raw data."""
    global_key = "global" if "global" in data else "global_criteria"
    global_ids: set[str] = set()
    for j, criterion_id in _criterion_ids(data.get(global_key), "g"):
        if criterion_id in global_ids:
            yield Problem(
                f"criterion id {criterion_id!r} is used twice in `global`",
                line=locator.line((global_key, j, "id")),
                criterion=f"global {criterion_id}",
                field="id",
                hint="give every criterion a unique id",
            )
        global_ids.add(criterion_id)
    cases = data.get("cases")
    if type(cases) is not list:
        return
    seen_cases: dict[str, int] = {}
    for i, case in enumerate(cases):
        if type(case) is not dict:
            continue
        if (case_id := plain_id(case.get("id"))) is not None and case_id in seen_cases:
            first = locator.line(("cases", seen_cases[case_id]))
            yield Problem(
                f"duplicate case id {case_id!r}: a case of this id is already at line {first}, "
                "and each case id names one test",
                line=locator.line(("cases", i, "id")),
                case=item_label(case.get("id"), i),
                field="id",
                hint=f"give this case an id of its own, e.g. `id: {_renamed(case_id, seen_cases)}`; "
                "to grade one case several times, set `repeat: N` on it instead of copying it",
            )
        elif case_id is not None:
            seen_cases[case_id] = i
        seen: dict[str, int] = {}  # each id's first criterion
        raw: Any = case.get("criteria")
        for j, criterion_id in _criterion_ids(raw, "c"):
            if criterion_id in seen or criterion_id in global_ids:
                origin = "in `global`" if criterion_id in global_ids else "earlier in this case"
                # An id that no one wrote: a criterion without one is named by its position.
                unnamed = [
                    k for k in (seen.get(criterion_id), j) if k is not None and "id" not in raw[k]
                ]
                yield Problem(
                    f"criterion id {criterion_id!r} is used twice (also {origin})"
                    + "".join(
                        f"; criterion {k + 1} has no id and is named {criterion_id!r} by its "
                        "position"
                        for k in unnamed
                    ),
                    line=locator.line(("cases", i, "criteria", j, "id")),
                    case=item_label(case.get("id"), i),
                    criterion=criterion_id,
                    field="id",
                    hint="give every criterion of a case a unique id"
                    + (", written out where one has none" if unnamed else ""),
                )
            seen.setdefault(criterion_id, j)
        if "responses" in case or "subject" in case:
            yield from _subject_problems(case, i, locator)


def _renamed(case_id: str, taken: dict[str, int]) -> str:
    n = 2
    while f"{case_id}_{n}" in taken:
        n += 1
    return f"{case_id}_{n}"


def _subject_problems(case: dict[str, Any], index: int, locator: Locator) -> Iterator[Problem]:
    responses = case.get("responses")
    subjects: list[tuple[str, tuple[str, ...]]] = [
        (name, ("responses", name))
        for name in (responses if isinstance(responses, dict) else ())
        if isinstance(name, str)
    ]
    if isinstance(case.get("subject"), str):
        subjects.append((case["subject"], ("subject",)))
    for name, where in subjects:
        if (why := subject_problem(name)) is not None:
            yield Problem(
                f"the subject name {name!r} cannot be used: {why}",
                line=locator.line(("cases", index, *where)),
                case=item_label(case.get("id"), index),
                field=where[0],
                hint=f"rename it, for example to {safe_subject(name)!r}",
            )


def _fraction_thresholds(
    data: dict[str, Any], suite: Suite | None, locator: Locator
) -> Iterator[Problem]:
    """A fuzzy threshold written as a fraction (0.9 for 90 %): valid on rapidfuzz's 0-100
    scale, where it lets almost any answer match."""
    for where, index, criteria in _criteria(data, suite):
        for j, criterion in criteria:
            for fuzzy, inside in _of_kind(criterion, Fuzzy):
                if 0 < (threshold := fuzzy.threshold) <= 1:
                    yield Problem(
                        f"threshold {threshold:g} is on rapidfuzz's 0-100 scale; write "
                        f"{threshold * 100:g} for {threshold * 100:g} %",
                        line=locator.line((*where, j, *inside, "threshold")),
                        case=None if index is None else case_label(data, index),
                        criterion=_criterion_label(criterion, index),
                        field=dotted((*inside, "threshold")),
                    )


def semantic_problems(
    data: dict[str, Any], suite: Suite | None, locator: Locator, *, failed: bool
) -> list[Problem]:
    """Problems validation cannot see (see the module's docstring). When the file is a
    collection error anyway (``failed``: validation found problems, or this does), the
    patterns no engine compiles (ERROR when graded) are listed too, so that one round of
    fixes is enough; when it loads, what is most likely a mistake is a warning."""
    problems = [
        *_raw_problems(data, locator),
        *_pattern_problems(data, suite, locator, _unrunnable),
    ]
    global_criteria: Sequence[Criterion]
    if suite is not None:
        global_criteria, cases = suite.global_criteria, list(enumerate(suite.cases))
    else:
        global_criteria, cases = _valid_parts(data)
    for i, case in cases:
        everything = [*global_criteria, *case.criteria]
        if (overflow := overflowing(c.effective_weight for c in everything)) is not None:
            problems.append(
                Problem(
                    f"the case's {overflow} add up to more than a number can hold, so its "
                    "score cannot be computed",
                    line=locator.case_line(i),
                    case=case_label(data, i),
                    field="criteria",
                    hint="use smaller weights and penalties: only their ratios matter",
                )
            )
        if not any(c.axis == "substance" and c.effective_weight != 0 for c in everything):
            problems.append(
                Problem(
                    "the case has no substance criterion with a non-zero weight, so it cannot "
                    "be scored",
                    line=locator.case_line(i),
                    case=case_label(data, i),
                    field="criteria",
                    hint="add a criterion with `axis: substance` (the default) and a non-zero weight",
                )
            )
    if failed or problems:
        problems += _pattern_problems(data, suite, locator, _invalid)
    else:
        shown = None if locator.path is None else run_relative(locator.path)
        for suspicious in _fraction_thresholds(data, suite, locator):
            warn(suspicious.render(shown))
    return problems


def _criteria(
    data: dict[str, Any], suite: Suite | None
) -> Iterator[tuple[tuple[str | int, ...], int | None, list[tuple[int, Criterion]]]]:
    """(where in the data, the case's index, the criteria with their indexes) of the global
    criteria and of each case: those that validate alone when the suite does not."""
    if suite is not None:
        yield ("global",), None, list(enumerate(suite.global_criteria))
        for i, case in enumerate(suite.cases):
            yield ("cases", i, "criteria"), i, list(enumerate(case.criteria))
        return
    yield ("global",), None, _valid_criteria(data.get("global", data.get("global_criteria")))
    raw_cases = data.get("cases")
    for i, raw in enumerate(raw_cases if isinstance(raw_cases, list) else ()):
        raw_criteria = raw.get("criteria") if isinstance(raw, dict) else None
        yield ("cases", i, "criteria"), i, _valid_criteria(raw_criteria)


def _valid_criteria(raw: Any) -> list[tuple[int, Criterion]]:
    adapter: TypeAdapter[Criterion] = TypeAdapter(Criterion)
    valid = []
    for j, entry in enumerate(raw if isinstance(raw, list) else ()):
        if not isinstance(entry, dict):
            continue
        with contextlib.suppress(ValidationError):
            valid.append((j, adapter.validate_python({"id": f"criterion {j + 1}", **entry})))
    return valid


def _valid_parts(data: dict[str, Any]) -> tuple[Sequence[Criterion], list[tuple[int, Case]]]:
    """The global criteria and the cases that validate alone; no case when the global
    criteria do not validate (a case's weights are unknown then)."""
    try:
        only_global = {k: v for k, v in data.items() if k in ("global", "global_criteria")}
        global_criteria = Suite.model_validate({**only_global, "cases": []}).global_criteria
    except ValidationError:
        return (), []
    cases: list[tuple[int, Case]] = []
    raw_cases = data.get("cases")
    for i, raw in enumerate(raw_cases if isinstance(raw_cases, list) else ()):
        with contextlib.suppress(ValidationError):
            cases.append((i, Case.model_validate(raw)))
    return global_criteria, cases
