"""How one promptfoo assertion becomes one criterion, written as a person would write it.

Everything here works on one assertion whose values are already rendered and read from
their files. What cannot be graded here raises :class:`~.promptfoo_files.Unmappable`
with the reason; an assertion promptfoo itself would refuse raises ``ValueError``.

Semantics follow promptfoo's handlers (``src/assertions/*.ts``): ``contains.ts``
(``String.includes``, ``toLowerCase`` for the ``i`` forms, comma-split strings),
``equals.ts`` (``===``, or deep equality of parsed JSON for an object value),
``startsWith.ts``, ``endsWith.ts``, ``regex.ts`` (``new RegExp(value)``, no flags),
``levenshtein.ts`` (distance at most ``threshold || 5``), ``json.ts`` (``JSON.parse``
of the whole output, then ajv), ``llmRubric.ts``; ``not-`` inverts the verdict.

The string checks become the patterns a person would write for a ``regex`` criterion,
which matches the normalized answer: as strict as promptfoo about wording and case (the
``i`` forms are not ``case_sensitive``), forgiving about typography.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._errors import RubricLoadError
from .._guards.engines import PatternError
from ..criteria.normalize import normalize
from ..criteria.regex import compile_regex
from ._common import is_number
from .promptfoo_files import Unmappable, parse_yaml

_DRAFT7 = "http://json-schema.org/draft-07/schema#"
# Assertion keys that change nothing this importer writes (`metric` becomes a tag).
_QUIET_KEYS = {"type", "value", "weight", "metric"}
# Keys promptfoo reads only for other types: CSV rows give every `starts-with` a threshold.
_IGNORED = {"threshold", "provider", "config"}
MODEL_GRADED = {"llm-rubric", "model-graded-closedqa"}
# Every assertion type of promptfoo (src/types/index.ts: BaseAssertionTypesSchema, then the
# special assert-set, select-best and max-score) but those `criterion` maps, and why it has no
# counterpart here ("": no reason beyond that).
_TYPES = {
    "answer-relevance": "scores relevance with embeddings of generated questions",
    "agent-rubric": "",
    "bleu": "",
    "classifier": "asks a classifier model",
    "contains-html": "",
    "contains-json": "extracts JSON from anywhere in the text; `json` reads the whole answer or "
    "its first fenced block",
    "contains-sql": "",
    "contains-xml": "",
    "context-faithfulness": "a RAG metric over a retrieved context, with its own prompt",
    "context-recall": "a RAG metric over a retrieved context, with its own prompt",
    "context-relevance": "a RAG metric over a retrieved context, with its own prompt",
    "conversation-relevance": "",
    "cost": "checks what the provider charged, which a rubric file does not see",
    "factuality": "grades against a reference answer with promptfoo's factuality prompt",
    "finish-reason": "",
    "g-eval": "",
    "gleu": "",
    "guardrails": "",
    "is-html": "",
    "is-refusal": "",
    "is-sql": "",
    "is-valid-function-call": "",
    "is-valid-openai-function-call": "checks a tool call, which a text answer does not carry",
    "is-valid-openai-tools-call": "checks a tool call, which a text answer does not carry",
    "is-xml": "",
    "javascript": "runs JavaScript code, which this plugin cannot run",
    "latency": "checks how long the provider took, which a rubric file does not see",
    "meteor": "",
    "model-graded-factuality": "",
    "moderation": "asks a moderation model",
    "perplexity-score": "needs the provider's token log-probabilities",
    "perplexity": "needs the provider's token log-probabilities",
    "pi": "",
    "python": "runs promptfoo's Python hook (output, context); rewrite it as a `callable` "
    "criterion (function(response, case))",
    "rouge-n": "",
    "ruby": "runs Ruby code, which this plugin cannot run",
    "search-rubric": "",
    "similar": "needs an embedding model; no criterion here compares embeddings",
    "skill-used": "",
    "tool-call-f1": "",
    "webhook": "asks a web service for the verdict; an import calls no service",
    "word-count": "",
    "assert-set": "a nested set with its own threshold has no counterpart in a flat rubric",
    "select-best": "compares the outputs of several prompts or providers with each other",
    "max-score": "compares the outputs of several prompts or providers with each other",
}
# The checks of the answer's text, each a pattern (or, for `equals` an object, a json check).
_TEXT_KINDS = {
    *("contains", "icontains", "starts-with", "ends-with", "equals"),
    *("contains-any", "icontains-any", "contains-all", "icontains-all"),
    *("regex", "levenshtein"),
}
_MAPPED = {*_TEXT_KINDS, "is-json", *MODEL_GRADED}
# The types a CSV `__expected` cell may start with.
CSV_TYPES = frozenset(_TYPES).union(_MAPPED) - {"assert-set", "select-best", "max-score"}


# What RE2 and Python's `regex` read as syntax outside a character class.
_META = frozenset("\\.^$|?*+()[]{}")
_SPACES = re.compile(r"\s+")


def _char(ch: str) -> str:
    if ch in _META:
        return "\\" + ch
    return ch if ch.isprintable() else f"\\x{{{ord(ch):x}}}"


def literal(text: str) -> str:
    """A pattern matching ``text`` where the normalized answer holds it: metacharacters
    escaped, whitespace runs written as one space (the answer's are folded so)."""
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        raise Unmappable("the value holds a lone surrogate, which UTF-8 text cannot hold")
    folded = _SPACES.sub(" ", text)
    if not folded.strip():
        raise Unmappable("the value is only whitespace, which this plugin folds away")
    return "".join(_char(ch) for ch in folded)


def all_pattern(values: list[str]) -> str:
    """Every value occurs, anywhere, overlaps allowed (``contains-all``): lookaheads, so the
    criterion needs ``engine: python``. The normalized answer is one line, so ``.`` reaches
    all of it."""
    return "".join(f"(?=.*{literal(v)})" for v in values)


def levenshtein_pattern(value: str, distance: int) -> str:
    """The whole answer within ``distance`` edits (insertions, deletions, substitutions) of
    ``value``: the ``regex`` package's fuzzy matching, so ``engine: python``."""
    return f"^(?:{literal(value)}){{e<={distance}}}$"


# --- JavaScript regex (no flags, as promptfoo builds it: `new RegExp(value)`) ---------------------

_JS_ONLY = (
    (re.compile(r"\[\^?\]"), "an empty class `[]` or `[^]`, which only JavaScript accepts"),
    (re.compile(r"(?<!\\)(?:\\\\)*\\c"), "a control escape `\\c`"),
    (
        re.compile(r"(?<!\\)(?:\\\\)*\\u\{"),
        "a `\\u{...}` escape (JavaScript reads it only with /u)",
    ),
)
_LINE_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\[nrtfv]")
_UNICODE_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u([0-9a-fA-F]{4})")


def js_regex(source: str) -> tuple[str, str]:
    """The pattern, as written where it means the same here, and the engine that runs it
    (``re2``, or ``python`` for lookaround and backreferences); else :class:`Unmappable`."""
    if not source:
        raise Unmappable("an empty regex is refused by promptfoo")
    for found, what in _JS_ONLY:
        if found.search(source):
            raise Unmappable(f"regex {source!r} uses {what}")
    if _LINE_ESCAPE.search(source) or "\n" in source or "\t" in source:
        raise Unmappable(
            f"regex {source!r} matches line breaks or tabs, which this plugin folds into "
            "single spaces before it matches"
        )
    # \uXXXX as the character itself, so that it is normalized as the answer is (é, –).
    pattern = _UNICODE_ESCAPE.sub(lambda m: m[1] + _char(chr(int(m[2], 16))), source)
    for engine in ("re2", "python"):
        try:
            compile_regex(pattern, case_sensitive=True, engine=engine)
        except PatternError:
            continue
        return pattern, engine
    raise Unmappable(f"regex {source!r} does not compile here (is it valid JavaScript?)")


def js_string(value: Any) -> str | None:
    """``String(value)`` as JavaScript writes it, or None where it would be unsure."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        if 1e-6 <= abs(value) < 1e21:
            return repr(value)
    return None


def criterion(item: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The criterion for one assertion (``type``, rendered ``value``, ``weight``, ...), and
    what the reader should know about it (printed as notes). Its type passed
    :func:`check_type`, and its weight is a number."""
    kind: str = item["type"]
    inverse = kind.startswith("not-")
    base = kind[4:] if inverse else kind
    if (weight := item.get("weight", 1)) < 0:
        raise Unmappable(
            "a negative weight lowers promptfoo's total weight; no rubric weight does that"
        )
    if extra := sorted(set(item) - _QUIET_KEYS - _IGNORED):
        raise Unmappable(
            f"{', '.join(f'`{k}`' for k in extra)} on the assertion changes how it is graded "
            "and is not mapped"
        )
    value = item.get("value")
    notes: list[str] = []
    body: dict[str, Any]
    if base in _TEXT_KINDS:
        body = _text_check(base, value, item)
    elif base == "is-json":
        if inverse:
            raise Unmappable("not-is-json has no counterpart (a `json` criterion cannot invert)")
        body = {"type": "json", "fenced": False}
        if value not in (None, ""):
            body["schema"] = _schema(value)
    else:  # MODEL_GRADED
        if inverse:
            raise Unmappable(f"not-{base} inverts the grader's verdict; a judge criterion cannot")
        body, notes = _judged(base, value, item)
    if inverse:
        if base == "levenshtein":
            raise Unmappable(
                "promptfoo's levenshtein check ignores `not-` (levenshtein.ts reads no inverse)"
            )
        body["invert"] = True
    metric = item.get("metric")
    metric = metric.strip() if isinstance(metric, str) else ""
    # A named metric is what the author called the check; else the check and its value.
    out: dict[str, Any] = {"id": _slug("", metric).strip("-") or _slug(kind, value), **body}
    if weight != 1:
        out["weight"] = weight
    if metric:
        out["tags"] = [f"metric:{metric}"]
    return out, notes


def _regex(pattern: str, base: str, engine: str = "re2") -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "regex",
        "pattern": pattern,
        "case_sensitive": not base.startswith("i"),  # the `i` forms lowercase both sides
    }
    if engine != "re2":
        body["engine"] = engine
    return body


def _text_check(base: str, value: Any, item: dict[str, Any]) -> dict[str, Any]:
    if base in ("contains-any", "icontains-any"):
        return _regex("|".join(literal(v) for v in _strings(value, base)), base)
    if base in ("contains-all", "icontains-all"):
        return _regex(all_pattern(_strings(value, base)), base, "python")
    if base == "regex":
        if not isinstance(value, str):
            raise ValueError("regex needs the pattern as a string `value`")
        pattern, engine = js_regex(value)
        return _regex(pattern, base, engine)
    if base == "equals" and (isinstance(value, dict | list) or value is None):
        # equals.ts: an object value is compared with the parsed output, deeply; `const` is
        # JSON Schema's deep equality.
        return {"type": "json", "fenced": False, "schema": {"const": value}}
    text = js_string(value)
    if base in ("contains", "icontains") and isinstance(value, bool):
        text = None  # contains.ts accepts a string or a number only
    if base != "equals" and not text:
        raise ValueError(f"{base} needs a non-empty string as `value`, got {value!r}")
    if text is None:
        raise Unmappable(f"{value!r} as text differs between JavaScript and here")
    if base == "levenshtein":
        threshold = item.get("threshold")
        # levenshtein.ts: `distance <= (threshold || 5)`
        bound = threshold if is_number(threshold) and threshold else 5
        return _regex(levenshtein_pattern(text, math.floor(bound)), base, "python")
    pattern = literal(text)
    if base == "equals":
        pattern = f"^{pattern.strip()}$"
    elif base == "starts-with":
        pattern = f"^{pattern.lstrip()}"
    elif base == "ends-with":
        pattern = f"{pattern.rstrip()}$"
    return _regex(pattern, base)


def _strings(value: Any, kind: str) -> list[str]:
    if isinstance(value, str):
        if kind == "contains-any":
            # contains.ts: quoted items keep their commas
            items = [
                m.strip().removeprefix('"').removesuffix('"')
                for m in re.findall(r'(".*?"|[^,]+)(?=\s*,|\s*$)', value)
            ]
        else:
            items = [v.strip() for v in value.split(",")]
    elif isinstance(value, list):
        # Strings and integers only: JavaScript writes them as str() does.
        if odd := [v for v in value if isinstance(v, bool) or not isinstance(v, str | int)]:
            raise Unmappable(f"list item {odd[0]!r} renders differently in JavaScript")
        items = [str(v) for v in value]
    else:
        raise ValueError(f"{kind} needs a list of strings as `value`")
    if not items:
        raise ValueError(f"{kind} needs at least one string in `value`")
    if any(not v.strip() for v in items):
        raise Unmappable("an empty string in the list (promptfoo finds it in every answer)")
    return items


def _judged(base: str, value: Any, item: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    if not isinstance(value, str) or not value.strip():
        raise Unmappable(
            f"{base} without a rubric text (promptfoo then grades with the test's rubricPrompt)"
        )
    notes = []
    if is_number(threshold := item.get("threshold")):
        notes.append(
            f"threshold {threshold:g} on the grader's 0-1 score is not kept: the judge's MET "
            "stands for promptfoo's pass"
        )
    if item.get("provider") is not None:
        notes.append("the grader named by `provider` is not kept: --rubric-judge grades it")
    return {"type": "judge", "requirement": value.strip()}, notes


def _schema(value: Any) -> Any:
    if isinstance(value, str) and value.strip():  # read within the loader's limits
        try:
            value = parse_yaml(value, Path("is-json")).data
        except RubricLoadError as exc:
            raise ValueError(f"the schema is not YAML or JSON: {exc.problems[0].message}") from None
    if not isinstance(value, dict | bool):
        raise ValueError("is-json's value must be a JSON schema (a mapping)")
    if _anywhere(value, lambda v: "format" in v):
        raise Unmappable(
            "the schema uses `format`, which promptfoo's validator (ajv-formats) checks and "
            "this plugin's does not"
        )
    if isinstance(value, dict) and "$schema" not in value and _anywhere(value, _draft7_only):
        value = {"$schema": _DRAFT7, **value}  # ajv's default draft, where it differs
    return value


def _draft7_only(schema: dict[str, Any]) -> bool:
    """Whether ``schema`` uses a keyword that draft 2020-12 reads differently from draft 7."""
    return isinstance(schema.get("items"), list) or bool(
        {"additionalItems", "dependencies"} & set(schema)
    )


def _anywhere(value: Any, found: Callable[[dict[str, Any]], bool]) -> bool:
    """Whether ``found`` holds for a mapping anywhere in ``value``."""
    if isinstance(value, dict):
        return found(value) or any(_anywhere(v, found) for v in value.values())
    return isinstance(value, list) and any(_anywhere(v, found) for v in value)


def _slug(kind: str, value: Any) -> str:
    text = " ".join(map(str, value)) if isinstance(value, list) else value
    words = re.findall(r"[a-z0-9]+", normalize(text if isinstance(text, str) else ""))
    slug = ""
    for word in words:
        if len(slug) + len(word) + 1 > 32:
            break
        slug += "-" + word
    return kind + slug


def check_type(kind: str) -> None:
    """Raise :class:`Unmappable` for an assertion type with no counterpart, before anything
    its value names (a script, a file) is read."""
    if (base := kind.removeprefix("not-")) not in _MAPPED:
        raise Unmappable(
            _TYPES.get(base) or f"promptfoo's {base!r} assertion has no counterpart here"
        )
