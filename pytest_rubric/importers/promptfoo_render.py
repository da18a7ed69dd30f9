"""A test's vars as promptfoo prepares them, and its prompts rendered with them.

Follows ``src/evaluator.ts`` (``generateVarCombinations``: a list of strings, or a
``file://`` glob, makes one test per value) and ``src/evaluatorHelpers.ts``
(``renderPrompt``: ``file://`` vars read, one trailing newline dropped,
``resolveVariables``, then Nunjucks, rendered by :mod:`.nunjucks`; a prompt that is JSON has
its strings rendered one by one).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._schema import ROLES
from .nunjucks import render, written_as_text
from .promptfoo_files import CODE, FILE, Quota, Tree, Unmappable, is_file_ref, json_stringify

# More var combinations than this from one test is not a test suite anyone reads.
MAX_COMBINATIONS = 10_000
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
        if is_file_ref(value):
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
                ready[key] = value.replace(found[0], written_as_text(ready[found[1]], found[1]), 1)
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
