"""normalize() and parse_numbers(): the text forms every deterministic check compares."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_rubric.criteria.normalize import normalize, parse_numbers

# --- normalize ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Café", "cafe"),
        ("CAFÉ crème brûlée", "cafe creme brulee"),
        ("naïve résumé", "naive resume"),
        ("Ångström", "angstrom"),
        ("cafe\u0301", "cafe"),  # already decomposed: combining acute accent dropped
    ],
)
def test_accents_are_removed(text: str, expected: str) -> None:
    assert normalize(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\ufb01ne", "fine"),  # fi ligature
        ("\ufb00", "ff"),  # ff ligature
        ("\uff21\uff22\uff23", "abc"),  # fullwidth ABC
        ("x\u00b2", "x2"),  # superscript two
        ("\u2460", "1"),  # circled digit one
    ],
)
def test_nfkd_compatibility_forms(text: str, expected: str) -> None:
    assert normalize(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Straße", "strasse"),
        ("STRASSE", "strasse"),
        ("Hello World", "hello world"),
        ("ΣΊΣΥΦΟΣ", "σισυφοσ"),  # casefold, not lower(): final sigma folds too
    ],
)
def test_casefold(text: str, expected: str) -> None:
    assert normalize(text) == expected


def test_casefold_makes_sharp_s_equal_to_ss() -> None:
    assert normalize("Straße") == normalize("STRASSE") == normalize("strasse")


def test_every_dash_becomes_hyphen_minus() -> None:
    """Every character Unicode calls a dash (category Pd: hyphens, dashes, wave dashes), all in
    its first two planes; found when the test runs (not in every worker's collection)."""
    dashes = [chr(c) for c in range(0x20000) if unicodedata.category(chr(c)) == "Pd"]
    assert len(dashes) > 20
    kept = [f"U+{ord(d):04X}" for d in dashes if normalize(f"long{d}term") != "long-term"]
    assert kept == []


@pytest.mark.parametrize(
    "minus",
    # minus sign, small and fullwidth hyphen-minus, superscript, subscript, modifier, heavy and
    # commercial minus
    ["\u2212", "\ufe63", "\uff0d", "\u207b", "\u208b", "\u02d7", "\u2796", "\u2052"],
)
def test_minus_signs_become_hyphen_minus(minus: str) -> None:
    assert normalize(f"{minus}3.5") == "-3.5"


def test_all_dashes_in_one_string() -> None:
    text = "".join(chr(c) for c in range(0x2010, 0x2016)) + "\u2212"
    assert normalize(text) == "-------"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\u2018single\u2019", "'single'"),
        ("\u201cdouble\u201d", '"double"'),
        ("don\u2019t", "don't"),
        ("\u201alow\u201b", "'low'"),
        ("\u201elow\u201f", '"low"'),
        ("\u00abguillemets\u00bb", '"guillemets"'),
    ],
)
def test_curly_quotes_become_straight(text: str, expected: str) -> None:
    assert normalize(text) == expected


# Every curly quotation mark Unicode names (left and right, and the low and reversed -9 forms).
CURLY = re.compile(
    r"(LEFT|RIGHT) (SINGLE|DOUBLE) QUOTATION MARK|(SINGLE|DOUBLE) .*-9 QUOTATION MARK"
)


def test_every_curly_quote_becomes_straight() -> None:
    quotes = [chr(c) for c in range(0x20000) if CURLY.fullmatch(unicodedata.name(chr(c), ""))]
    assert len(quotes) > 8
    kept = []
    for quote in quotes:
        straight = "'" if "SINGLE" in unicodedata.name(quote) else '"'
        if normalize(f"{quote}x{quote}") != f"{straight}x{straight}":
            kept.append(f"U+{ord(quote):04X}")
    assert kept == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a  b", "a b"),
        ("a\nb", "a b"),
        ("a\r\n\r\nb", "a b"),
        ("a\tb", "a b"),
        ("a\u00a0b", "a b"),  # no-break space
        ("a \n\t\u00a0 b", "a b"),
        ("a\u2003\u2009b", "a b"),  # em space, thin space
        ("  padded \n", "padded"),
        ("", ""),
        (" \n\t ", ""),
    ],
)
def test_whitespace_runs_become_one_space(text: str, expected: str) -> None:
    assert normalize(text) == expected


def test_casefold_false_keeps_case_but_still_normalizes() -> None:
    assert normalize("Café \u2013 “Quoted”\n\tText", casefold=False) == 'Cafe - "Quoted" Text'


def test_casefold_false_keeps_sharp_s() -> None:
    assert normalize("Straße", casefold=False) == "Straße"
    assert normalize("ÉCOLE", casefold=False) == "ECOLE"


def test_ascii_text_is_only_casefolded_and_squeezed() -> None:
    assert normalize("  The NPV is $1,157.63 -- OK?  ") == "the npv is $1,157.63 -- ok?"


@given(st.text())
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once


@given(st.text())
def test_normalized_text_has_no_whitespace_runs_or_padding(text: str) -> None:
    out = normalize(text)
    assert out == out.strip()
    assert "  " not in out
    assert "\n" not in out
    assert "\t" not in out


# --- parse_numbers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$1,157.63", [1157.63]),
        ("12%", [12.0, 0.12]),
        ("12 percent", [12.0, 0.12]),
        ("-3.5", [-3.5]),
        ("\u22123.5", [-3.5]),  # Unicode minus sign
        ("1.2e3", [1200.0]),
        ("(4.5)", [-4.5, 4.5]),  # accounting negative, also offered as written
        ("$1 million", [1.0, 1e6]),
        ("1,000,000", [1e6]),
        ("2020-2021", [2020.0, 2021.0]),
        ("v1.2", []),
        ("42", [42.0]),
        ("0.5", [0.5]),
        ("€3", [3.0]),
        ("10k", [10.0, 10_000.0]),
        ("1.5bn", [1.5, 1.5e9]),
        ("no digits here", []),
        ("", []),
    ],
)
def test_parse_numbers_forms(text: str, expected: list[float]) -> None:
    assert list(parse_numbers(text)) == pytest.approx(expected, rel=1e-12, abs=0)


def test_percent_yields_written_value_then_fraction() -> None:
    values = list(parse_numbers("12%"))
    assert values[0] == 12.0
    assert values[1] == pytest.approx(0.12, rel=1e-12)
    assert len(values) == 2


def test_markdown_bullet_is_not_a_minus_sign() -> None:
    assert list(parse_numbers("- 12%")) == pytest.approx([12.0, 0.12])
    assert all(v > 0 for v in parse_numbers("- 12%"))
    assert list(parse_numbers("- 3\n- 4")) == [3.0, 4.0]


def test_year_range_is_two_positive_years() -> None:
    assert list(parse_numbers("in 2020-2021 sales grew")) == [2020.0, 2021.0]


def test_numbers_in_a_sentence_come_in_order() -> None:
    text = "The NPV is $1,157.63, a 12% return, versus (4.5) last year and −3.5 before."
    assert list(parse_numbers(text)) == pytest.approx([1157.63, 12.0, 0.12, -4.5, 4.5, -3.5])


def test_version_and_word_tails_are_not_numbers() -> None:
    assert list(parse_numbers("python3 and v1.2 and x86")) == []


def test_trailing_full_stop_is_not_part_of_the_number() -> None:
    assert list(parse_numbers("It costs 1157.63.")) == [1157.63]


def test_thousands_separator_only_in_groups_of_three() -> None:
    # "1,000,000" is one number; the groups are not parsed again on their own.
    assert list(parse_numbers("1,000,000 and 2,500")) == [1e6, 2500.0]


@given(st.text())
def test_parse_numbers_never_raises_and_yields_floats(text: str) -> None:
    values = list(parse_numbers(text))
    assert all(isinstance(v, float) for v in values)


@given(st.integers(min_value=-(10**9), max_value=10**9))
def test_any_written_integer_parses_back(n: int) -> None:
    assert list(parse_numbers(f"the answer is {n} today")) == [float(n)]


@given(st.integers(min_value=1000, max_value=10**12))
def test_thousands_separated_integer_parses_back(n: int) -> None:
    assert list(parse_numbers(f"${n:,}")) == [float(n)]
