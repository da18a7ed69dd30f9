"""promptfoo's string checks as RE2 patterns on the answer exactly as written.

Every pattern here is meant for a ``regex`` criterion with ``normalize: false``
and ``case_sensitive: true``: it then matches exactly the answers promptfoo's
check passes (``String.prototype.includes``, ``startsWith``, ``===``,
``toLowerCase``, ``RegExp.prototype.test``). A value or pattern whose meaning
cannot be kept raises :class:`Unmappable` with the reason.
"""

from __future__ import annotations

__all__ = [
    "Unmappable",
    "all_pattern",
    "any_pattern",
    "equals_pattern",
    "icontains_pattern",
    "js_regex",
    "literal",
    "starts_pattern",
]

# The only characters outside ASCII whose JavaScript (and Python) lowercase holds an ASCII
# letter: KELVIN SIGN lowercases to "k", and LATIN CAPITAL LETTER I WITH DOT ABOVE to "i"
# followed by U+0307, so it can end a match of a value that ends in "i" (never start one).
_KELVIN = "\u212a"
_DOTTED_I = "\u0130"


class Unmappable(ValueError):
    """No pattern keeps promptfoo's meaning; the message says why."""


def _char(ch: str) -> str:
    if (ch.isascii() and ch.isalnum()) or ch == " ":
        return ch
    if ch.isascii() and ch.isprintable():
        return "\\" + ch
    return f"\\x{{{ord(ch):x}}}"


def literal(text: str) -> str:
    """A pattern matching ``text`` exactly, character for character."""
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        raise Unmappable("the value holds a lone surrogate, which UTF-8 text cannot hold")
    return "".join(_char(ch) for ch in text)


def any_pattern(values: list[str]) -> str:
    """Some value occurs (``contains-any``)."""
    return "|".join(f"(?:{literal(v)})" for v in values)


def all_pattern(values: list[str]) -> str:
    """Every value occurs, anywhere, overlaps allowed (``contains-all``): lookaheads, so the
    criterion needs ``engine: python``."""
    import re

    literal("".join(values))  # refuses lone surrogates
    return "^" + "".join(f"(?=[\\s\\S]*?{re.escape(v)})" for v in values)


def equals_pattern(value: str) -> str:
    # RE2's `$` without multi-line mode is the very end of the text (Python's `\Z`).
    return f"^{literal(value)}$"


def starts_pattern(value: str) -> str:
    return f"^{literal(value)}"


def icontains_pattern(value: str) -> str:
    """A case-sensitive pattern matching where ``output.toLowerCase()`` includes
    ``value.toLowerCase()``; only for ASCII values (non-ASCII case mapping differs between
    JavaScript's ``toLowerCase`` and any regex engine's case folding)."""
    if not value.isascii():
        raise Unmappable(
            "icontains of non-ASCII text: JavaScript's toLowerCase and this plugin's matching "
            "lowercase some letters differently (e.g. 'ẞ', 'İ', 'ſ')"
        )
    lowered = value.lower()
    parts = []
    for i, ch in enumerate(lowered):
        if not ch.isalpha():
            parts.append(_char(ch))
            continue
        options = ch + ch.upper()
        if ch == "k":
            options += _KELVIN
        if ch == "i" and i == len(lowered) - 1:
            options += _DOTTED_I
        parts.append("[" + "".join(_char(o) for o in options) + "]")
    return "".join(parts)


# --- JavaScript regex (no flags, as promptfoo builds it: `new RegExp(value)`) to RE2 -------------

# JavaScript's \s: its whitespace and line terminators.
_JS_SPACE = (
    "\\t\\n\\x{b}\\x{c}\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}"
    "\\x{205f}\\x{3000}\\x{feff}"
)
# What JavaScript's `.` does not match without the `s` flag.
_JS_LINE_ENDS = "\\n\\r\\x{2028}\\x{2029}"
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}
_MAX_REPEAT = 1000  # RE2 refuses larger counts
_WIDE = (
    "matches one UTF-16 code unit in JavaScript but one code point here, so a character "
    "outside the Basic Multilingual Plane (an emoji) counts differently; only `*` and `+` "
    "after it keep the meaning"
)


def js_regex(source: str) -> str:
    """The RE2 pattern that finds a match exactly where JavaScript's ``new RegExp(source)``
    does, for the subset of JavaScript syntax whose meaning carries over; else
    :class:`Unmappable`."""
    return _Translator(source).run()


class _Translator:
    def __init__(self, source: str) -> None:
        self.s, self.i = source, 0
        self.out: list[str] = []
        self.groups: list[bool] = []  # for each open group: whether it holds a wide atom

    def fail(self, why: str) -> Unmappable:
        return Unmappable(f"regex {self.s!r} at offset {self.i}: {why}")

    def run(self) -> str:
        if not self.s:
            raise Unmappable("an empty regex is not accepted by promptfoo")
        if any(ord(ch) > 0xFFFF or 0xD800 <= ord(ch) <= 0xDFFF for ch in self.s):
            raise Unmappable(
                "the regex holds a character outside the Basic Multilingual Plane, which "
                "JavaScript reads as two code units"
            )
        # last: what a quantifier would repeat: "atom", "wide" (one UTF-16 unit in JavaScript),
        # "widegroup" (a group holding a wide atom), or None (nothing).
        last: str | None = None
        # A wide atom repeated by * or + lies behind: the next atom must not be wide, or the
        # two could split a surrogate pair between them in JavaScript.
        self.after_wide = False
        while self.i < len(self.s):
            ch = self.s[self.i]
            if last == "wide" and ch not in "*+":
                raise self.fail(f"`.`, \\D, \\W, \\S or a negated class {_WIDE}")
            if ch in "*+?{":
                self.quantifier(last)
                last = None
                continue
            if ch in "|^$":
                self.out.append(ch)
                self.i += 1
                last = None
                if ch == "|":
                    self.after_wide = False
                continue
            if ch == "(":
                if self.s.startswith("(?:", self.i):
                    self.out.append("(?:")
                    self.i += 3
                elif self.s.startswith("(?", self.i):
                    raise self.fail("lookaround and named groups are not supported")
                else:
                    self.out.append("(")
                    self.i += 1
                self.groups.append(False)
                last = None
                continue
            if ch == ")":
                if not self.groups:
                    raise self.fail("unbalanced ')' (invalid in JavaScript)")
                wide = self.groups.pop()
                if wide and self.groups:
                    self.groups[-1] = True
                self.out.append(")")
                self.i += 1
                last = "widegroup" if wide else "atom"
                continue
            if ch == ".":
                self.out.append(f"[^{_JS_LINE_ENDS}]")
                self.i += 1
                last = "wide"
            elif ch == "[":
                last = self.char_class()
            elif ch == "\\":
                last = self.escape()
            elif ch in "]}":
                raise self.fail(f"a bare {ch!r} (JavaScript's legacy syntax reads it as a literal)")
            else:
                self.out.append(_char(ch))
                self.i += 1
                last = "atom"
            if last == "wide":
                if self.after_wide:
                    raise self.fail(f"two repeated wide atoms in a row: {_WIDE}")
                if self.groups:
                    self.groups[-1] = True
            elif last == "atom":
                self.after_wide = False
        if last == "wide":
            raise self.fail(f"`.`, \\D, \\W, \\S or a negated class {_WIDE}")
        if self.groups:
            raise self.fail("unclosed '(' (invalid in JavaScript)")
        return "".join(self.out)

    def quantifier(self, last: str | None) -> None:
        s, start = self.s, self.i
        if last is None:
            raise self.fail("a quantifier with nothing to repeat")
        if last == "widegroup":
            raise self.fail(f"a repeated group that holds `.` or a negated class: {_WIDE}")
        if s[start] == "{":
            end = s.find("}", start)
            body = s[start + 1 : end] if end > 0 else ""
            low, _, high = body.partition(",")
            if not (low.isascii() and low.isdigit() and (high == "" or high.isdigit())):
                raise self.fail("a '{' that is not a quantifier")
            if high and int(high) < int(low):
                raise self.fail("a quantifier whose range is out of order (invalid in JavaScript)")
            if int(low) > _MAX_REPEAT or (high and int(high) > _MAX_REPEAT):
                raise self.fail(f"a repeat count above {_MAX_REPEAT}, which RE2 refuses")
            token = s[start : end + 1]
        else:
            token = s[start]
        self.i = start + len(token)
        if last == "wide":
            if token not in "*+":
                raise self.fail(f"a bounded repeat of a wide atom: {_WIDE}")
            self.after_wide = True
        if self.i < len(s) and s[self.i] == "?":
            token += "?"
            self.i += 1
        if self.i < len(s) and s[self.i] in "*+?{":
            raise self.fail("a quantifier after a quantifier")
        self.out.append(token)

    def escape(self) -> str:
        s = self.s
        if self.i + 1 >= len(s):
            raise self.fail("a trailing backslash (invalid in JavaScript)")
        ch = s[self.i + 1]
        self.i += 2
        if ch in "dwDWbB":
            self.out.append("\\" + ch)
            return "wide" if ch in "DW" else "atom" if ch in "dw" else "anchor"
        if ch == "s":
            self.out.append(f"[{_JS_SPACE}]")
            return "atom"
        if ch == "S":
            self.out.append(f"[^{_JS_SPACE}]")
            return "wide"
        if ch in _SIMPLE_ESCAPES:
            self.out.append(_char(_SIMPLE_ESCAPES[ch]))
            return "atom"
        if ch.isascii() and not ch.isalnum():
            self.out.append(_char(ch))
            return "atom"
        literal_char = self.hex_escape(ch)
        self.out.append(_char(literal_char))
        return "atom"

    def hex_escape(self, ch: str) -> str:
        s = self.s
        size = {"x": 2, "u": 4}.get(ch)
        digits = s[self.i : self.i + size] if size else ""
        if size and len(digits) == size and all(c in "0123456789abcdefABCDEF" for c in digits):
            value = int(digits, 16)
            if 0xD800 <= value <= 0xDFFF:
                raise self.fail("a surrogate escape (half of a character)")
            self.i += size
            return chr(value)
        self.i -= 1
        raise self.fail(
            f"the escape \\{ch} (backreferences, \\c, \\0, \\u{{..}}, \\p and "
            "legacy escapes are not supported)"
        )

    def char_class(self) -> str:
        s = self.s
        self.i += 1
        negated = self.i < len(s) and s[self.i] == "^"
        if negated:
            self.i += 1
        items: list[str] = []
        last: str | None = None  # the previous item, when it is one literal character
        while True:
            if self.i >= len(s):
                raise self.fail("an unclosed '[' (invalid in JavaScript)")
            ch = s[self.i]
            if ch == "]":
                if not items:
                    raise self.fail("an empty class `[]` or `[^]`")
                self.i += 1
                break
            if ch == "-" and items and self.i + 1 < len(s) and s[self.i + 1] != "]":
                high = s[self.i + 1]
                if last is None or high in "\\[":
                    raise self.fail("a range whose ends are not plain characters")
                if ord(high) < ord(last):
                    raise self.fail("a class range out of order (invalid in JavaScript)")
                items[-1] = f"{_char(last)}-{_char(high)}"
                self.i += 2
                last = None
                continue
            last = None
            if ch == "[":
                raise self.fail("a '[' inside a class (kept out: RE2 reads '[:' specially)")
            if ch != "\\":
                items.append(_char(ch))
                last = ch
                self.i += 1
                continue
            if self.i + 1 >= len(s):
                raise self.fail("a trailing backslash (invalid in JavaScript)")
            nxt = s[self.i + 1]
            self.i += 2
            if nxt in "dw":
                items.append("\\" + nxt)
            elif nxt == "s":
                items.append(_JS_SPACE)
            elif nxt in "DWS":
                raise self.fail(f"\\{nxt} inside a class")
            else:
                if nxt == "b":
                    last = "\b"
                elif nxt in _SIMPLE_ESCAPES:
                    last = _SIMPLE_ESCAPES[nxt]
                elif nxt.isascii() and not nxt.isalnum():
                    last = nxt
                else:
                    last = self.hex_escape(nxt)
                items.append(_char(last))
        body = "".join(items)
        if negated:
            self.out.append(f"[^{body}]")
            return "wide"
        self.out.append(f"[{body}]")
        return "atom"
