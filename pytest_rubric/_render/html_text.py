"""What every part of the HTML report writes with: escaped text, table rows, answer ids."""

from __future__ import annotations

import hashlib
import html
from collections.abc import Sequence

__all__ = ["anchor", "e", "tr"]


def e(text: object) -> str:
    return html.escape(str(text), quote=True)


def tr(cells: Sequence[str], tag: str = "td") -> str:
    return "<tr>" + "".join(f"<{tag}>{e(cell)}</{tag}>" for cell in cells) + "</tr>"


def anchor(nodeid: str) -> str:
    """The page id of an answer (a node id holds characters an id cannot)."""
    return "answer-" + hashlib.sha1(nodeid.encode("utf-8", "replace")).hexdigest()[:12]
