"""Nothing hostile gets through: judge replies that try to crash the reader, keys that
come back in pieces, and text too long to copy whole into a result.

Every test here failed before the fix it pins (checked against the code before it).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_rubric._schema import Judge
from pytest_rubric._secrets import Secret, clip, redact

BOOL = Judge(id="a", requirement="Says A")
SCORE = Judge(id="s", requirement="How good?", kind="score")
KEY = "sk-test-9QvX2mLp7RtW4yZb8NcK3hJd"
HUGE = "1" + "0" * 399  # a 400-digit score
DEEP = '{"a": ' * 100_000 + "1" + "}" * 100_000


def windows(key: str, size: int = 12) -> set[str]:
    """Every piece of ``key`` that is long enough to count as the key."""
    return {key[i : i + size] for i in range(len(key) - size + 1)}


def leaked(key: str, output: str) -> list[str]:
    return sorted(w for w in windows(key) if w in output)


# --- keys, and pieces of keys ----------------------------------------------------------------


@pytest.mark.parametrize(
    "piece",
    [KEY[:-1], KEY[1:], KEY[5:17], KEY[:12], KEY[-12:]],
    ids=["minus-last", "minus-first", "middle-12", "first-12", "last-12"],
)
def test_a_piece_of_a_key_of_12_characters_or_more_is_redacted(piece: str) -> None:
    got = redact(f"the judge said {piece}, twice: {piece}!", Secret(KEY))
    assert got == "the judge said ***, twice: ***!"


@given(
    key=st.text(min_size=12, max_size=40),
    pieces=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=6),
    noise=st.lists(st.text(max_size=15), max_size=7),
)
def test_no_12_character_piece_of_a_key_survives_redaction(
    key: str, pieces: list[tuple[int, int]], noise: list[str]
) -> None:
    parts = [key[a:b] for a, b in pieces] + [key]
    text = "".join(p + n for p, n in zip(parts, noise + [""] * len(parts), strict=False))
    assert leaked(key, redact(text, Secret(key))) == []


def test_text_is_redacted_then_cut_to_2000_characters_with_a_count() -> None:
    assert clip("short", Secret(KEY)) == "short"
    long = "x" * 3_000
    assert clip(long) == "x" * 2_000 + "… [1,000 more characters]"
    # A key across the cut would leave a piece behind if the cut came first.
    straddling = "y" * 1_990 + KEY + "z" * 12_345
    got = clip(straddling, Secret(KEY))
    assert got == "y" * 1_990 + "***" + "z" * 7 + "… [12,338 more characters]"
    assert leaked(KEY, got) == []
