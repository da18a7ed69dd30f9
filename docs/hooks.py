"""mkdocs hooks: the reference pages the code knows, generated at build time.

A page holding ``<!-- generated: options -->`` gets the table of every ``--rubric-*``
flag and ``rubric_*`` ini key, read from the plugin's own registration
(``pytest_rubric._config.settings.OPTIONS``), defaults included; one holding
``<!-- generated: json -->`` gets the ``--rubric-json`` document's fields, read from
its pydantic models (``pytest_rubric._report.document``). So neither page can drift
from the code: a flag added there is documented here on the next build.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

_MARKERS = {
    "<!-- generated: options -->": lambda: options_table(),
    "<!-- generated: json -->": lambda: json_reference(),
}


def on_page_markdown(markdown: str, page: Any = None, **_: Any) -> str:
    for marker, build in _MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, build())
    # CONTRIBUTING.md links into docs/ as the repository's root sees it; included on the site
    # in development/, its links are read from there.
    if page is not None and page.file.src_uri == "development/contributing.md":
        text = (Path(__file__).parent.parent / "CONTRIBUTING.md").read_text(encoding="utf-8")
        markdown = markdown.replace('--8<-- "CONTRIBUTING.md"', text.replace("](docs/", "](../"))
    return markdown


# --- options ---------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(value: Any, action: str | None = None) -> str:
    if action == "store_true":
        return "off"
    if value in (None, "", [], ()):
        return ""
    if isinstance(value, list | tuple):
        return " ".join(f"`{v}`" for v in value)
    return f"`{value}`"


def options_table() -> str:
    from pytest_rubric._config.settings import OPTIONS

    rows = ["| flag | ini | default | what it does |", "|---|---|---|---|"]
    for option in OPTIONS:
        shown = ""
        if option.flag:
            shown = f"`{option.flag_text}{' ' + option.metavar if option.metavar else ''}`"
            if option.choices:
                shown += " (" + ", ".join(f"`{c}`" for c in option.choices) + ")"
            if option.action == "append":
                shown += " (repeatable)"
        ini = f"`{option.dest}`" if option.ini else ""
        what = option.help if option.flag else option.ini_help or option.help
        rows.append(
            f"| {shown} | {ini} | {_default(option.default, option.action)} | {_cell(what)} |"
        )
    return "\n".join(rows)


# --- the JSON document -----------------------------------------------------------------------


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is typing.Literal:
        return " \\| ".join(f'`"{a}"`' if isinstance(a, str) else f"`{a}`" for a in args)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " or ".join(_type_name(a) for a in args)
    if origin in (list, tuple):
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        return "object"
    if annotation is type(None):
        return "null"
    name = getattr(annotation, "__name__", str(annotation))
    return {"str": "string", "float": "number", "int": "integer", "bool": "boolean"}.get(
        name, f"[{name}](#{name.lower()})" if name.endswith("Model") else name
    )


def json_reference() -> str:
    from pydantic import BaseModel

    from pytest_rubric._report import document as models

    out: list[str] = []
    seen: set[str] = set()
    order = [models.DocumentModel]
    while order:
        model = order.pop(0)
        if model.__name__ in seen:
            continue
        seen.add(model.__name__)
        out += [f"### {model.__name__}", "", (model.__doc__ or "").strip(), ""]
        out += ["| field | type | required |", "|---|---|---|"]
        for name, info in model.model_fields.items():
            shown = info.alias or name
            out.append(
                f"| `{shown}` | {_type_name(info.annotation)} | "
                f"{'yes' if info.is_required() else 'no'} |"
            )
            for inner in _models_in(info.annotation):
                if issubclass(inner, BaseModel):
                    order.append(inner)
        out.append("")
    return "\n".join(out)


def _models_in(annotation: Any) -> list[type]:
    found: list[type] = []
    if isinstance(annotation, type):
        found.append(annotation)
    for arg in typing.get_args(annotation):
        found += _models_in(arg)
    return found
