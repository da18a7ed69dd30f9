"""JSON Schemas from rubric files, run on the application's answers. No retrieval, ever:
``$ref`` and ``$dynamicRef`` resolve only inside the schema (:func:`schema_problems` makes
any other a collection error; the validator's registry refuses retrieval). Bounded:
``pattern`` and ``patternProperties`` run on :mod:`.engines`, ``uniqueItems`` in linear
time, and every keyword checks the running :class:`~pytest_rubric._guards.engines.Deadline`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from .engines import PatternError, compile_pattern, search, tick
from .outgoing import as_written
from .secrets import shorten

if TYPE_CHECKING:
    from jsonschema.protocols import Validator


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
    """The validator of ``schema``'s draft: its ``$schema``'s, 2020-12 by default (also for a
    ``$schema`` that is no string, which jsonschema cannot look up, and the metaschema
    refuses)."""
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    if isinstance(schema, dict) and not isinstance(schema.get("$schema", ""), str):
        return Draft202012Validator
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

REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")
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
    that leaves it or names nothing, a number that is not finite, a pattern that compiles
    nowhere, a ``$schema`` below the top and ``unevaluatedProperties`` beside
    ``patternProperties`` (each would run unbounded)."""
    if isinstance(schema, bool):
        return []
    try:
        nodes = dict(_nodes(schema, ()))
    except RecursionError:
        return [SchemaProblem((), "it is nested too deeply to check", "flatten it")]
    problems = [
        SchemaProblem(
            (*path, key),
            "holds a number that is not finite",
            "write a finite number (YAML reads .nan, .inf and 1e400 as numbers that are not)",
        )
        for path, node in nodes.items()
        for key, item in (node.items() if isinstance(node, dict) else enumerate(node))
        if isinstance(item, float) and not math.isfinite(item)
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
    if isinstance(value, dict | list):
        yield path, value
        for key, item in value.items() if isinstance(value, dict) else enumerate(value):
            yield from _nodes(item, (*path, key))


def _resource_problems(schema: dict[str, Any], nodes: dict[SchemaPath, Any]) -> list[SchemaProblem]:
    """References and patterns in every subschema, and in whatever a reference reaches."""
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
            for keyword in REFERENCES:
                reference = contents.get(keyword)
                if not isinstance(reference, str):
                    continue
                named, hint = f"{keyword} {reference!r}", _INSIDE
                try:
                    resolved = resolver.lookup(reference)
                except PointerToNowhere:
                    message = f"{named} names nothing"
                except Unresolvable:
                    message = f"{named} reaches outside the schema; nothing is fetched or read"
                    hint = (
                        "copy what it names under this schema's $defs (definitions before draft "
                        "2019-09) and refer to it as '#/$defs/NAME'"
                    )
                else:
                    target = resolved.contents
                    if isinstance(target, dict | bool):
                        pending.append((specification.create_resource(target), resolved.resolver))
                        continue
                    message = f"{named} names a value that is not a schema"
                problems.append(SchemaProblem((*path, keyword), message, hint))
            problems += _pattern_problems(contents, path)
        pending += [(sub, resolver.in_subresource(sub)) for sub in resource.subresources()]
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


def _matches(pattern: str, text: str) -> bool:
    tick()
    return search(schema_pattern(pattern), text) is not None


# --- JSON Schema: keywords that stay bounded ----------------------------------------------------
# jsonschema's own `pattern`, `patternProperties` and `additionalProperties` call Python's `re`
# and its `uniqueItems` compares every pair of objects; these replace them in every draft, and
# every keyword checks the running deadline before it runs.


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _matches(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _matches(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extras = [
        key
        for key in instance
        if key not in properties and not any(_matches(p, key) for p in patterns)
    ]
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif not extra and extras:
        listed = ", ".join(repr(key) for key in sorted(extras, key=str))
        one = len(extras) == 1
        yield ValidationError(
            f"{listed} {'does' if one else 'do'} not match any of the regexes: "
            + ", ".join(repr(p) for p in sorted(patterns))
            if patterns
            else f"Additional properties are not allowed ({listed} {'was' if one else 'were'} "
            "unexpected)"
        )


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not unique or not validator.is_type(instance, "array"):
        return
    seen: set[Any] = set()
    for item in instance:
        if (key := _identity(item)) in seen:
            yield ValidationError(f"{shorten(repr(instance), 80)} has non-unique elements")
            return
        seen.add(key)


def _identity(value: Any) -> Any:
    """A hashable form equal for JSON-equal values (``1`` and ``1.0``; objects whatever their
    key order), and different for ``true`` and ``1``: uniqueness in one pass, not every pair."""
    if isinstance(value, bool) or value is None:
        return (type(value), value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, list):
        return ("array", tuple(_identity(item) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((key, _identity(item)) for key, item in value.items()))
    return ("other", id(value))


def _ticking(keyword: Callable[..., Any]) -> Callable[..., Iterator[Any]]:
    def bounded(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
        tick()
        yield from keyword(validator, value, instance, schema) or ()

    return bounded


_REPLACED: dict[str, Callable[..., Iterator[Any]]] = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "uniqueItems": _unique_items,
}


@functools.cache
def _bounded_class(base: type[Validator]) -> type[Validator]:
    """``base`` (a draft's validator class) with the keywords above, every one ticking."""
    from jsonschema.validators import extend

    keywords = {
        name: _ticking(_REPLACED.get(name) or function)
        for name, function in base.VALIDATORS.items()
    }
    bounded: type[Validator] = extend(base, keywords)  # type: ignore[no-untyped-call]
    return bounded


def schema_validator(schema: Any) -> Validator:
    """A validator of ``schema`` (its ``$schema``'s draft, 2020-12 by default) that resolves
    nothing outside it and whose keywords stay bounded. Validate inside :func:`running`."""
    draft = _bounded_class(draft_of(schema))
    if isinstance(schema, dict):
        # jsonschema picks a subschema's class from its `$schema` (a `$ref: "#"` reaches the
        # top): without it, every step keeps the bounded class. Below the top, `$schema` is a
        # collection error (schema_problems).
        schema = {key: value for key, value in schema.items() if key != "$schema"}
    return draft(schema, registry=closed_registry())
