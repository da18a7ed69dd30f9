"""A test's vars as promptfoo prepares them, and its prompts rendered with them.

Follows ``src/evaluator.ts`` (``generateVarCombinations``: a list of strings, or a
``file://`` glob, makes one test per value) and ``src/evaluatorHelpers.ts``
(``renderPrompt``: ``file://`` vars read, one trailing newline dropped,
``resolveVariables``, then Nunjucks; a prompt that is JSON has its strings rendered
one by one). Templates are rendered by jinja2's sandboxed environment (the ``import``
extra: ``pip install pytest-rubric[import]``), whose syntax Nunjucks copies: a var no one
sets renders as empty text, as in Nunjucks; a template jinja2 cannot read or render
(promptfoo's own JavaScript filters, say) is :class:`~.promptfoo_files.Unmappable`.

An imported config is untrusted input: the sandbox refuses attributes and calls
outside plain data, a template renders at most :data:`MAX_RENDERED` characters, and its
loops over ``range`` at most :data:`MAX_LOOPS` steps in all. What it renders is spent
from the whole import's :class:`~.promptfoo_files.Quota` as it is made.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import Problem
from .._guards.secrets import abridged
from .._schema import ROLES
from ._common import ImportFailed
from .promptfoo_assert import js_string
from .promptfoo_files import CODE, FILE, Quota, Tree, Unmappable, json_stringify

if TYPE_CHECKING:
    from jinja2.sandbox import SandboxedEnvironment

# More var combinations than this from one test is not a test suite anyone reads.
MAX_COMBINATIONS = 10_000
# One template's output, and the steps of all its `range` loops: a prompt is text a person
# wrote for a model, never megabytes, and a template that loops more is not one.
MAX_RENDERED = 1_000_000
MAX_LOOPS = 100_000
_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")  # resolveVariables' own pattern
_BINARY = (".pdf", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".mp3", ".wav", ".mp4")


@dataclass(frozen=True)
class _FileVar:
    """A var whose value is read from a file (a ``file://`` path or one match of a glob)."""

    path: Path
    ref: str


@dataclass
class Rendered:
    """A rendered prompt: the question, or the conversation of a chat prompt."""

    question: str | None
    messages: list[dict[str, str]] | None
    missing: set[str]  # vars the template uses that no one sets (rendered as empty text)


def combinations(vars_: dict[str, Any], tree: Tree, *, expand: bool) -> list[dict[str, Any]]:
    """generateVarCombinations: one dict of vars per combination of list values and
    ``file://`` glob matches (only the dict itself without ``expand``)."""
    found: list[dict[str, Any]] = [{}]
    for key, value in vars_.items():
        if isinstance(value, str) and value.startswith(FILE):
            paths = tree.paths(value) if expand else [tree.path(value)]
            values: list[Any] = [_FileVar(p, f"{FILE}{tree.shown(p)}") for p in paths]
        elif expand and isinstance(value, list) and value and isinstance(value[0], str):
            values = value
        else:
            values = [value]
        if len(found) * len(values) > MAX_COMBINATIONS:
            raise Unmappable(f"its vars make more than {MAX_COMBINATIONS:,} combinations")
        found = [{**combo, key: v} for combo in found for v in values]
    return found


def prepare(vars_: dict[str, Any], tree: Tree) -> dict[str, Any]:
    """renderPrompt's steps before Nunjucks: files read, a trailing newline dropped, and
    ``{{ other }}`` inside a var's value replaced by that var (``resolveVariables``). What
    is read and replaced is spent from the tree's budget."""
    ready = {k: _read_var(v, tree) if isinstance(v, _FileVar) else v for k, v in vars_.items()}
    ready = {k: v.removesuffix("\n") if isinstance(v, str) else v for k, v in ready.items()}
    for _ in range(5):
        changed = False
        for key, value in ready.items():
            if not isinstance(value, str):
                continue
            if (found := _PLACEHOLDER.search(value)) and ready.get(found[1]) is not None:
                ready[key] = value.replace(found[0], _text(ready[found[1]], found[1]), 1)
                tree.budget.spend(text=len(ready[key]))
                changed = True
        if not changed:
            break
    return ready


def _read_var(var: _FileVar, tree: Tree) -> str:
    suffix = var.path.suffix.lower()
    if suffix in CODE:
        raise Unmappable(f"var from {var.ref} runs code to make its value")
    if suffix in _BINARY:
        raise Unmappable(f"var from {var.ref} is not text (an image, audio or a PDF)")
    if suffix in (".yaml", ".yml"):
        return json_stringify(tree.document(var.path, var.ref).data)
    return tree.text(var.path, var.ref).strip()


def _text(value: Any, name: str = "") -> str:
    """A var as Nunjucks writes it into text (None and undefined: empty); ``name`` is the
    var's when it is written inside another var's value."""
    if value is None:
        return ""
    if (text := js_string(value)) is None:
        shown = abridged(json.dumps(value, ensure_ascii=False, default=str))
        raise Unmappable(
            f"{f'var {name!r}' if name else 'a var'} is {shown}: a list or an object renders "
            "as JavaScript writes it, which is not kept"
        )
    return text


def render(
    text: str, vars_: dict[str, Any], missing: set[str] | None = None, budget: Quota | None = None
) -> str:
    """``text`` rendered as a Nunjucks template with ``vars_`` (a var no one sets is empty
    text, and its name is noted in ``missing``); each part made is spent from ``budget``."""
    if not any(mark in text for mark in ("{{", "{%", "{#")):
        return text
    env = _environment()  # first: it says what to install when jinja2 is not
    from jinja2 import TemplateError
    from jinja2.exceptions import SecurityError

    template, used = _compiled(text)
    if missing is not None:
        missing.update(used - set(vars_) - set(env.globals))
    steps = [0]
    context = {**vars_, "range": functools.partial(_bounded_range, steps)}
    out: list[str] = []
    size = 0
    try:
        for part in template.generate(context):
            size += len(part)
            if size > MAX_RENDERED:
                raise Unmappable(f"the template renders more than {MAX_RENDERED:,} characters")
            if budget is not None:
                budget.spend(text=len(part))
            out.append(part)
    except SecurityError as exc:
        raise Unmappable(f"the template reaches outside its sandbox: {exc}") from None
    except (TemplateError, ArithmeticError, TypeError, ValueError, LookupError) as exc:
        if isinstance(exc, Unmappable):
            raise
        raise Unmappable(f"the template fails to render: {exc}") from None
    return "".join(out)


@functools.lru_cache(maxsize=256)
def _compiled(text: str) -> tuple[Any, frozenset[str]]:
    """``text`` compiled as a template (each test's combinations render the same few
    templates again and again), and the names of the vars it uses."""
    from jinja2 import TemplateError, meta

    env = _environment()
    try:
        parsed = env.parse(text)
        return env.from_string(parsed), frozenset(meta.find_undeclared_variables(parsed))
    except TemplateError as exc:
        raise Unmappable(f"the template does not read as Nunjucks here: {exc}") from None


@functools.cache
def _environment() -> SandboxedEnvironment:
    """jinja2's sandbox, set as promptfoo sets Nunjucks: no autoescaping, a var no one sets
    (or an attribute of one) is empty text, and a value is written as JavaScript writes it."""
    try:
        from jinja2 import ChainableUndefined, Undefined
        from jinja2.exceptions import SecurityError
        from jinja2.sandbox import SandboxedEnvironment
    except ImportError:
        raise ImportFailed(
            [
                Problem(
                    "the config's prompts or values are Nunjucks templates ({{ var }}), which "
                    "are rendered with jinja2, and jinja2 is not installed",
                    hint="pip install pytest-rubric[import]",
                )
            ],
            where="in the config",
        ) from None

    class Sandbox(SandboxedEnvironment):
        def unsafe_undefined(self, obj: Any, attribute: str) -> Any:
            # Refused out loud: the lenient undefined below would render it as empty text.
            raise SecurityError(
                f"access to attribute {attribute!r} of a {type(obj).__name__} is unsafe"
            )

    return Sandbox(
        autoescape=False,
        undefined=ChainableUndefined,
        finalize=lambda value: "" if isinstance(value, Undefined) else _text(value),
        keep_trailing_newline=True,
    )


def _bounded_range(steps: list[int], *args: int) -> Iterator[int]:
    """``range`` whose steps count toward :data:`MAX_LOOPS`, over every loop of one render."""
    for value in range(*args):
        steps[0] += 1
        if steps[0] > MAX_LOOPS:
            raise Unmappable(f"the template's loops run more than {MAX_LOOPS:,} steps")
        yield value


def render_prompt(template: str, vars_: dict[str, Any], budget: Quota | None = None) -> Rendered:
    """The prompt as the provider receives it; a chat (a JSON list of role and content)
    becomes messages. What is rendered is spent from ``budget``."""
    missing: set[str] = set()
    try:
        parsed = json.loads(template)
    except (ValueError, RecursionError):
        return Rendered(render(template, vars_, missing, budget), None, missing)
    data = _render_strings(parsed, vars_, missing, budget)
    messages = _chat(data)
    return Rendered(None if messages is not None else json_stringify(data, 2), messages, missing)


def _render_strings(
    data: Any, vars_: dict[str, Any], missing: set[str], budget: Quota | None
) -> Any:
    """renderVarsInObject: every string in the JSON rendered, keys left as they are."""
    if isinstance(data, str):
        return render(data, vars_, missing, budget)
    if isinstance(data, list):
        return [_render_strings(v, vars_, missing, budget) for v in data]
    if isinstance(data, dict):
        return {k: _render_strings(v, vars_, missing, budget) for k, v in data.items()}
    if isinstance(data, float) and not math.isfinite(data):
        raise Unmappable("the JSON prompt holds a number JavaScript cannot write")
    return data


def _chat(data: Any) -> list[dict[str, str]] | None:
    if not (isinstance(data, list) and data and all(isinstance(t, dict) for t in data)):
        return None
    if not all(t.get("role") in ROLES for t in data):
        return None
    if not all(isinstance(t.get("content"), str) for t in data):
        raise Unmappable("a chat turn's content is not text (images, tool calls)")
    roles = [t["role"] for t in data]
    first_other = next((i for i, r in enumerate(roles) if r != "system"), len(roles))
    if "system" in roles[first_other:] or roles[-1] != "user":
        raise Unmappable(
            "the chat has a system turn after the conversation started, or does not end "
            "with a user turn; a rubric case asks the last user turn"
        )
    return [{"role": t["role"], "content": t["content"]} for t in data]
