"""A test's vars as promptfoo prepares them, and its prompts rendered with them.

Follows ``src/evaluator.ts`` (``generateVarCombinations``: a list of strings, or a
``file://`` glob, makes one test per value) and ``src/evaluatorHelpers.ts``
(``renderPrompt``: ``file://`` vars read, one trailing newline dropped,
``resolveVariables``, then Nunjucks; a prompt that is JSON has its strings rendered
one by one). Of Nunjucks, ``{{ name }}`` (with ``{{-``/``-}}``) is rendered; a var no
one sets renders as empty text, as Nunjucks does; anything else (filters, tags,
expressions) is :class:`~.promptfoo_match.Unmappable`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .promptfoo_assert import js_string
from .promptfoo_match import Unmappable
from .promptfoo_read import FILE, Tree, json_stringify

__all__ = ["MAX_COMBINATIONS", "Rendered", "combinations", "prepare", "render", "render_prompt"]

# More var combinations than this from one test is not a test suite anyone reads.
MAX_COMBINATIONS = 10_000
_TAG = re.compile(r"\{\{(-?)(.*?)(-?)\}\}|\{%|\{#", re.DOTALL)
_NAME = re.compile(r"\s*([A-Za-z_$][A-Za-z0-9_$]*)\s*")
_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")  # resolveVariables' own pattern
_CODE = (".js", ".cjs", ".mjs", ".ts", ".cts", ".mts", ".py", ".rb")
_BINARY = (".pdf", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".mp3", ".wav", ".mp4")
_ROLES = ("system", "user", "assistant")


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
    ``{{ other }}`` inside a var's value replaced by that var (``resolveVariables``)."""
    ready: dict[str, Any] = {}
    for key, value in vars_.items():
        ready[key] = _read_var(value, tree) if isinstance(value, _FileVar) else value
    for key, value in ready.items():
        if isinstance(value, str):
            ready[key] = value.removesuffix("\n")
    for _ in range(5):
        changed = False
        for key, value in ready.items():
            if not isinstance(value, str):
                continue
            found = _PLACEHOLDER.search(value)
            if found and ready.get(found[1]) is not None:
                ready[key] = value.replace(found[0], _text(ready[found[1]], found[1]), 1)
                changed = True
        if not changed:
            break
    return ready


def _read_var(var: _FileVar, tree: Tree) -> str:
    suffix = var.path.suffix.lower()
    if suffix in _CODE:
        raise Unmappable(f"var from {var.ref} runs code to make its value")
    if suffix in _BINARY:
        raise Unmappable(f"var from {var.ref} is not text (an image, audio or a PDF)")
    if suffix in (".yaml", ".yml"):
        return json_stringify(tree.document(var.path, var.ref).data)
    return tree.text(var.path, var.ref).strip()


def _text(value: Any, name: str) -> str:
    """A var as Nunjucks writes it into text."""
    if value is None:
        return ""
    text = js_string(value)
    if text is None:
        raise Unmappable(
            f"var {name!r} is {_shown(value)}: a list or an object renders as JavaScript "
            "writes it, which is not kept"
        )
    return text


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def render(text: str, vars_: dict[str, Any], missing: set[str] | None = None) -> str:
    """``{{ name }}`` replaced by the var (empty text, noted in ``missing``, when unset)."""
    out: list[str] = []
    at = 0
    strip_next = False
    for tag in _TAG.finditer(text):
        if tag[0] in ("{%", "{#"):
            raise Unmappable("the template uses Nunjucks tags ({% ... %}) or comments")
        name = _NAME.fullmatch(tag[2])
        if name is None:
            raise Unmappable(
                f"the template uses {tag[0]!r}: Nunjucks beyond {{{{ var }}}} (filters or "
                "expressions)"
            )
        before = text[at : tag.start()]
        if strip_next:
            before = before.lstrip()
        if tag[1]:
            before = before.rstrip()
        out.append(before)
        key = name[1]
        if key not in vars_ or vars_[key] is None:
            if missing is not None and key not in vars_:
                missing.add(key)
            value = ""
        else:
            value = _text(vars_[key], key)
        out.append(value)
        at, strip_next = tag.end(), bool(tag[3])
    rest = text[at:]
    out.append(rest.lstrip() if strip_next else rest)
    return "".join(out)


def render_prompt(template: str, vars_: dict[str, Any]) -> Rendered:
    """The prompt as the provider receives it; a chat (a JSON list of role and content)
    becomes messages."""
    missing: set[str] = set()
    try:
        parsed = json.loads(template)
    except (ValueError, RecursionError):
        return Rendered(render(template, vars_, missing), None, missing)
    data = _render_strings(parsed, vars_, missing)
    messages = _chat(data)
    if messages is not None:
        return Rendered(None, messages, missing)
    return Rendered(json_stringify(data, 2), None, missing)


def _render_strings(data: Any, vars_: dict[str, Any], missing: set[str]) -> Any:
    """renderVarsInObject: every string in the JSON rendered, keys left as they are."""
    if isinstance(data, str):
        return render(data, vars_, missing)
    if isinstance(data, list):
        return [_render_strings(v, vars_, missing) for v in data]
    if isinstance(data, dict):
        return {k: _render_strings(v, vars_, missing) for k, v in data.items()}
    if isinstance(data, float) and not math.isfinite(data):
        raise Unmappable("the JSON prompt holds a number JavaScript cannot write")
    return data


def _chat(data: Any) -> list[dict[str, str]] | None:
    if not (isinstance(data, list) and data and all(isinstance(t, dict) for t in data)):
        return None
    if not all(t.get("role") in _ROLES for t in data):
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
