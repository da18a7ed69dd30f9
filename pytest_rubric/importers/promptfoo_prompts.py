"""The prompts a promptfoo config gives: inline text, or prompt files as promptfoo's
readers split them (``src/prompts/index.ts``, ``src/prompts/processors/*.ts``): a ``.txt``
file split on ``---``, a ``.json`` file whole, a ``.jsonl`` file a line each, a ``.yaml``
file as JSON, a ``.csv`` file a ``prompt`` column. A prompt function (code), Markdown and
Jinja files are :class:`~.promptfoo_match.Unmappable`.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .promptfoo_files import CODE, FILE, GLOB, Tree, json_stringify
from .promptfoo_match import Unmappable

__all__ = ["Prompt", "PromptEntry", "read_prompts"]

_PROMPT_FILES = (".txt", ".json", ".jsonl", ".yaml", ".yml", ".csv", ".md", ".j2", *CODE)
_PROMPT_DELIMITER = "---"  # src/prompts/constants.ts (PROMPTFOO_PROMPT_SEPARATOR unset)


@dataclass
class Prompt:
    """One prompt template, with where it came from."""

    label: str
    template: str
    where: str = ""  # file:line of its entry in the config


@dataclass
class PromptEntry:
    """One entry of ``prompts:``: its prompts, or why none could be read."""

    index: int
    raw: Any
    label: str | None = None
    prompts: list[Prompt] = field(default_factory=list)
    why_not: str | None = None


def read_prompts(value: Any, tree: Tree) -> list[PromptEntry]:
    """Each entry of ``prompts:`` (a prompt, a list, or the legacy map of path to label).

    A plain string is a file when it says ``file://``, or when it is one word ending in a
    prompt file's extension (``prompts.txt``, as promptfoo's ``maybeFilePath`` reads it);
    else it is the prompt text.
    """
    if isinstance(value, str):
        items: list[Any] = [value]
    elif isinstance(value, dict):  # legacy: {path: label}
        items = [{"raw": raw, "label": label} for raw, label in value.items()]
    elif isinstance(value, list):
        items = value
    else:
        items = []
    entries = []
    for i, item in enumerate(items):
        raw = item.get("raw") or item.get("id") if isinstance(item, dict) else item
        label = item.get("label") if isinstance(item, dict) else None
        entry = PromptEntry(i, raw, label if isinstance(label, str) and label else None)
        entries.append(entry)
        if not isinstance(raw, str) or not raw.strip():
            entry.why_not = "a prompt is text, a file:// path, or {raw: ..., label: ...}"
            continue
        if not _looks_like_file(raw):
            # promptfoo labels an inline prompt with its own text
            entry.prompts = [Prompt(entry.label or _short(raw), raw)]
            continue
        try:
            entry.prompts = _prompt_files(raw, entry.label, tree)
        except Unmappable as exc:
            entry.why_not = str(exc)
    return entries


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


def _looks_like_file(raw: str) -> bool:
    if raw.startswith(FILE):
        return True
    head = raw.rsplit(":", 1)[0] if raw.count(":") == 1 else raw  # file.py:function
    return "\n" not in raw and " " not in raw and head.lower().endswith(_PROMPT_FILES)


def _prompt_files(raw: str, label: str | None, tree: Tree) -> list[Prompt]:
    name = raw.removeprefix(FILE)
    head, _, function = name.partition(":") if not GLOB.search(name) else (name, "", "")
    if head.lower().endswith(CODE):
        raise Unmappable(f"{raw} is a prompt function, which runs code")
    if head.lower().endswith((".md", ".j2")):
        raise Unmappable(f"{raw}: Markdown and Jinja prompt files are not read")
    if function:
        raise Unmappable(f"{raw} names a function, which only code prompt files have")
    prompts: list[Prompt] = []
    for path in tree.paths(head):
        shown = str(path.relative_to(tree.root))
        found = _prompt_file(path, shown, tree)
        many = len(found) > 1
        for k, text in enumerate(found):
            tag = f"{shown} #{k + 1}" if many else shown
            prompts.append(Prompt(f"{label}: {tag}" if label else tag, text))
    if not prompts:
        raise Unmappable(f"{raw} holds no prompt")
    return prompts


def _prompt_file(path: Path, shown: str, tree: Tree) -> list[str]:
    suffix = path.suffix.lower()
    if suffix == ".txt":
        text = tree.text(path, shown)
        return [p.strip() for p in text.split(_PROMPT_DELIMITER) if p.strip()]
    if suffix == ".json":
        return [tree.text(path, shown)]
    if suffix == ".jsonl":
        return [line for line in tree.text(path, shown).split("\n") if line.strip()]
    if suffix in (".yaml", ".yml"):
        return [json_stringify(tree.document(path, shown).data)]
    if suffix == ".csv":
        return _csv_prompts(tree.text(path, shown))
    raise Unmappable(f"{shown}: promptfoo reads no prompt from a {suffix or 'bare'} file")


def _csv_prompts(text: str) -> list[str]:
    """src/prompts/processors/csv.ts: a ``prompt`` column, or one prompt a line."""
    if "," not in text:
        lines = [line for line in text.split("\n") if line.strip()]
        return lines[1:] if lines and lines[0].strip().lower() == "prompt" else lines
    rows = list(csv.DictReader(io.StringIO(text)))
    return [row["prompt"].strip() for row in rows if (row.get("prompt") or "").strip()]
