"""The bounded JSON Schema validator: a validator that retrieves nothing and stays within
the time bound (what a schema may hold is checked at load by :mod:`.schema_safety`,
whose :func:`schema_problems` and :class:`SchemaProblem` are re-exported here).

* **No retrieval, ever.** A JSON Schema's ``$ref`` and ``$dynamicRef``
  resolve only inside its own document (``#...``, ``$defs``, anchors and
  ``$id``\\ s of the same document). :func:`schema_problems` finds any other
  reference when the rubric loads (a collection error), and the validator
  :func:`schema_validator` builds asks a registry whose retrieval refuses,
  so nothing is fetched or read even if one slipped through.
* **Patterns on the guarded engine.** ``pattern`` and ``patternProperties`` run through
  :func:`~pytest_rubric._guards.engines.compile_pattern` (``jsonschema`` would use
  Python's ``re``, which no thread can stop), and every keyword checks the running
  :class:`~pytest_rubric._guards.engines.Deadline` (``uniqueItems`` runs in linear time).

Nothing here decides a verdict: the callers turn
:class:`~pytest_rubric._guards.engines.CheckTimeout`, a ``RecursionError`` or an
``OverflowError`` into ERROR, never UNMET.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .engines import search, tick
from .schema_safety import (
    SchemaProblem,
    closed_registry,
    draft_of,
    schema_pattern,
    schema_problems,
)

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["SchemaProblem", "schema_problems", "schema_validator"]


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
        verb = "was" if len(extras) == 1 else "were"
        if patterns:
            yield ValidationError(
                f"{listed} {'does' if len(extras) == 1 else 'do'} not match any of the regexes: "
                + ", ".join(repr(p) for p in sorted(patterns))
            )
        else:
            yield ValidationError(
                f"Additional properties are not allowed ({listed} {verb} unexpected)"
            )


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not unique or not validator.is_type(instance, "array"):
        return
    seen: set[Any] = set()
    for item in instance:
        key = _identity(item)
        if key in seen:
            yield ValidationError(f"{_short_repr(instance)} has non-unique elements")
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


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"


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
