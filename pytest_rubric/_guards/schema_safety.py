"""What a JSON Schema may not hold, found when the rubric loads (a collection error, with
where in the schema and what to write instead): a reference outside the document, a
number that is not finite, a pattern that compiles nowhere, a ``$schema`` below the top.

It also holds what the check shares with the validator (:mod:`.schemas`): a schema's
draft, a pattern compiled the way the validator runs it (so that a pattern this check
accepts is one the validator can run), and the closed registry both resolve references
through, whose retrieval refuses every URI.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from .engines import PatternError, compile_pattern
from .outgoing import as_written

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = [
    "SchemaPath",
    "SchemaProblem",
    "closed_registry",
    "draft_of",
    "schema_pattern",
    "schema_problems",
]


@functools.lru_cache(maxsize=4096)
def schema_pattern(pattern: str) -> Any:
    """A JSON Schema pattern as :func:`search` runs it: RE2 when it can, else bounded.
    Cached apart from :func:`compile_pattern`, which caches no refusal."""
    try:
        return compile_pattern(pattern)
    except PatternError as exc:
        if not exc.unsupported:
            raise
    return compile_pattern(pattern, backtracking=True)


def draft_of(schema: Any) -> type[Validator]:
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    return validator_for(schema, default=Draft202012Validator)


def _refuse(uri: str) -> Any:
    """The registry's retrieval: every URI outside the schema is refused, never fetched."""
    from referencing.exceptions import NoSuchResource

    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


def closed_registry() -> Any:
    """A registry that holds nothing and retrieves nothing: what a schema may refer to is
    in the schema (jsonschema adds the drafts' own metaschemas, bundled with it)."""
    from referencing import Registry

    return Registry(retrieve=_refuse)  # type: ignore[call-arg]


# --- JSON Schema: what a schema may not hold, found when the rubric loads -----------------------

_REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")
SchemaPath = tuple[str | int, ...]


class SchemaProblem(NamedTuple):
    """Why a schema cannot run safely: where in it (a path of keys and indices), what, and
    what to write instead."""

    path: SchemaPath
    message: str
    hint: str


_INSIDE = "refer inside the schema: '#/$defs/NAME', '#anchor', or '#' for the whole"


def schema_problems(schema: Any) -> list[SchemaProblem]:
    """What keeps ``schema`` from running safely, in the order of the document: a reference
    that leaves it or names nothing in it, a number that is not finite, a pattern that
    compiles nowhere, a ``$schema`` below the top (jsonschema would validate that part with
    its own, unbounded class), and ``unevaluatedProperties`` beside ``patternProperties``
    (jsonschema matches those patterns there with Python's ``re``, which nothing could
    bound). Empty when the schema can run."""
    if isinstance(schema, bool):
        return []
    try:
        nodes = dict(_nodes(schema, ()))
    except RecursionError:
        return [SchemaProblem((), "it is nested too deeply to check", "flatten it")]
    problems = [
        SchemaProblem(
            path,
            "holds a number that is not finite",
            "write a finite number (YAML reads .nan, .inf and 1e400 as numbers that are not)",
        )
        for path in _non_finite(schema, ())
    ]
    problems += _resource_problems(schema, nodes)
    keywords = {key for node in nodes.values() if isinstance(node, dict) for key in node}
    if "unevaluatedProperties" in keywords and "patternProperties" in keywords:
        path = next(p for p, n in nodes.items() if isinstance(n, dict) and "patternProperties" in n)
        problems.append(
            SchemaProblem(
                (*path, "patternProperties"),
                "`patternProperties` in a schema that also uses `unevaluatedProperties`: the "
                "validator would match these patterns with Python's backtracking engine, which "
                "no time bound can stop",
                "use `additionalProperties` instead of `unevaluatedProperties`",
            )
        )
    order = {path: index for index, path in enumerate(nodes)}
    return sorted(problems, key=lambda p: (order.get(p.path[:-1], len(order)), str(p.path)))


def _nodes(value: Any, path: SchemaPath) -> Iterator[tuple[SchemaPath, Any]]:
    """Every mapping and list in ``value`` with its path, in the order of the document."""
    if isinstance(value, dict):
        yield path, value
        for key, item in value.items():
            yield from _nodes(item, (*path, key))
    elif isinstance(value, list):
        yield path, value
        for index, item in enumerate(value):
            yield from _nodes(item, (*path, index))


def _non_finite(value: Any, path: SchemaPath) -> Iterator[SchemaPath]:
    if isinstance(value, float) and not math.isfinite(value):
        yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _non_finite(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _non_finite(item, (*path, index))


def _resource_problems(schema: dict[str, Any], nodes: dict[SchemaPath, Any]) -> list[SchemaProblem]:
    """References and patterns in every subschema, and in whatever a reference reaches
    (a pointer may lead where no keyword would look)."""
    import referencing.jsonschema
    from referencing.exceptions import PointerToNowhere, Unresolvable

    paths = {id(node): path for path, node in nodes.items()}
    draft = draft_of(schema)
    dialect = draft.META_SCHEMA.get("$id") or draft.META_SCHEMA.get("id") or ""
    specification = referencing.jsonschema.specification_with(
        dialect, default=referencing.jsonschema.DRAFT202012
    )
    root = specification.create_resource(schema)
    problems: list[SchemaProblem] = []
    seen: set[int] = set()
    pending = [(root, closed_registry().resolver_with_root(root))]
    while pending:
        resource, resolver = pending.pop()
        contents = resource.contents
        if id(contents) in seen:
            continue
        seen.add(id(contents))
        path = paths.get(id(contents), ())
        if isinstance(contents, dict):
            if contents is not schema and "$schema" in contents:
                problems.append(
                    SchemaProblem(
                        (*path, "$schema"),
                        "`$schema` below the top of a schema is not supported",
                        "remove it: the `$schema` at the top sets the draft of the whole schema",
                    )
                )
            for keyword in _REFERENCES:
                reference = contents.get(keyword)
                if not isinstance(reference, str):
                    continue
                where = (*path, keyword)
                try:
                    resolved = resolver.lookup(reference)
                except PointerToNowhere:
                    problems.append(
                        SchemaProblem(where, f"{keyword} {reference!r} names nothing", _INSIDE)
                    )
                    continue
                except Unresolvable:
                    problems.append(
                        SchemaProblem(
                            where,
                            f"{keyword} {reference!r} reaches outside the schema; nothing is "
                            "fetched or read",
                            "copy what it names under this schema's $defs (definitions "
                            "before draft 2019-09) and refer to it as '#/$defs/NAME'",
                        )
                    )
                    continue
                target = resolved.contents
                if not isinstance(target, dict | bool):
                    message = f"{keyword} {reference!r} names a value that is not a schema"
                    problems.append(SchemaProblem(where, message, _INSIDE))
                    continue
                pending.append((specification.create_resource(target), resolved.resolver))
            problems += _pattern_problems(contents, path)
        for sub in resource.subresources():
            pending.append((sub, resolver.in_subresource(sub)))
    return problems


def _pattern_problems(schema: dict[str, Any], path: SchemaPath) -> Iterator[SchemaProblem]:
    patterns: list[tuple[str, SchemaPath]] = []
    if isinstance(schema.get("pattern"), str):
        patterns.append((schema["pattern"], (*path, "pattern")))
    if isinstance(schema.get("patternProperties"), dict):
        patterns += [(p, (*path, "patternProperties", p)) for p in schema["patternProperties"]]
    for pattern, where in patterns:
        try:
            schema_pattern(pattern)
        except PatternError as exc:
            yield SchemaProblem(
                where,
                f"the pattern {as_written(pattern)} is not a valid regex: {exc}",
                "fix the pattern (in YAML, write it in single quotes)",
            )
