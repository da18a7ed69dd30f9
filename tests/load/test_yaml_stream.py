"""A plain YAML rubric file is built from the parser's events, without the node tree: the same
data, to the type, and the same lines as the composed tree gives; anything else is left to it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytest_rubric._load.loader as loader_module
from pytest_rubric import RubricLoadError
from pytest_rubric._guards.yaml import YamlLoader, construct, stream
from pytest_rubric._load.loader import parse_suite
from tests.conftest import examples

ROOT = Path(__file__).resolve().parents[2]


def composed(text: str) -> Any:
    loader = YamlLoader(text)
    try:
        node = loader.get_single_node()
        return construct(loader, node, anchors="&" in text)[0] if node is not None else None
    finally:
        loader.dispose()


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (keys included)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return [(k, type(k)) for k in a] == [(k, type(k)) for k in b] and all(
            same(a[k], b[k]) for k in a
        )
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb: [1, 2.5, true, null, ~, 2024-01-01, '1', \"x\", 1e-6, 0x1F, 012, -3, .inf, yes]\n",
        "- {id: a, n: 1e309}\n- x\n",
        "a: |\n  hi\n  there\nb: >\n  folded\n",
        "x: !!set {a, b}\nk: !!binary aGVsbG8=\nt: 2001-12-14t21:59:43.10-05:00\n",
        "f: 30 February\n'1': quoted key\n",
    ],
)
def test_a_plain_document_streams_to_what_the_node_tree_builds(text: str) -> None:
    streamed = stream(text)
    assert streamed is not None
    assert same(streamed[0], composed(text))


@pytest.mark.parametrize(
    "text",
    [
        "? [a]\n: b\n",  # a key that is not plain text
        "a: 1\na: 2\n",  # a key given twice: construct names both lines
        "a: &x 1\nb: *x\n",  # anchors and aliases: construct bounds their copies
        "<<: {a: 1}\n",  # a merge key
        "",
        "--- a\n--- b\n",  # two documents
        "{1: a, 1.0: b}\n",  # one key as the dict sees keys
        "d: 2024-02-30\n",  # a value that cannot be read: construct's problem
        "a: [" * 120 + "]" * 120 + "\n",  # nested past the limit
        "a: 'unclosed\n",
    ],
)
def test_anything_else_is_left_to_the_node_tree(text: str) -> None:
    assert stream(text) is None


scalars = st.one_of(
    st.text(max_size=12),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.sampled_from(["1e-6", "0o17", "yes", "~", "2020-01-02", "+1", ".5", "<<", "!x"]),
)
documents = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=examples(150), deadline=None)
@given(documents, st.sampled_from([None, False, True]))
def test_whatever_yaml_writes_streams_as_it_composes(data: Any, flow: bool | None) -> None:
    import yaml

    text = yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True)
    streamed = stream(text)
    if streamed is not None:
        assert same(streamed[0], composed(text))


FILE = """\
suite: lines
target: app.answers:answer
targets:
  first: app.answers:first
  second: app.answers:second
cases:
  - id: one
    question: "Q1?"
    criteria: [{id: a, type: any_of, any_of: [x]}]

  - {id: two, question: "Q2?", criteria: [{id: a, type: any_of, any_of: [y]}]}
  -
    id: three
    question: Q3?
    criteria:
      - {id: a, type: any_of, any_of: [z]}
"""


def full_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader_module, "stream", lambda text: None)


BARE = """\
- id: one
  question: "Q1?"
  criteria: [{id: a, type: any_of, any_of: [x]}]

- {id: two, question: "Q2?", criteria: [{id: a, type: any_of, any_of: [y]}]}
"""


@pytest.mark.parametrize("text", [FILE, BARE])
def test_a_streamed_file_keeps_the_lines_the_node_tree_gives(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    streamed = parse_suite(text, path=Path("lines.rubric.yaml"))
    full_tree(monkeypatch)
    tree = parse_suite(text, path=Path("lines.rubric.yaml"))
    assert streamed.case_lines == tree.case_lines
    assert streamed.target_lines == tree.target_lines
    assert streamed.suite == tree.suite


def test_a_problem_in_a_streamed_file_is_located_as_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = FILE.replace("any_of: [y]", "any_of: 3").replace("question: Q3?", "questoin: Q3?")
    with pytest.raises(RubricLoadError) as streamed:
        parse_suite(text, path=Path("lines.rubric.yaml"))
    full_tree(monkeypatch)
    with pytest.raises(RubricLoadError) as tree:
        parse_suite(text, path=Path("lines.rubric.yaml"))
    assert streamed.value.render("lines.rubric.yaml") == tree.value.render("lines.rubric.yaml")


def test_the_bundled_examples_load_the_same_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    paths = sorted((ROOT / "examples").rglob("*.rubric.yaml"))
    assert paths
    streamed = [parse_suite(p.read_text(encoding="utf-8"), path=p) for p in paths]
    full_tree(monkeypatch)
    for path, loaded in zip(paths, streamed, strict=True):
        tree = parse_suite(path.read_text(encoding="utf-8"), path=path)
        assert (loaded.suite, loaded.case_lines) == (tree.suite, tree.case_lines), path
