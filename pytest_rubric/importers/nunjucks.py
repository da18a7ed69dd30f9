"""Nunjucks templates, as promptfoo renders them, by jinja2's sandboxed environment (the
``import`` extra: ``pip install pytest-rubric[import]``), whose syntax Nunjucks copies: a var
no one sets renders as empty text, as in Nunjucks, and a value is written as JavaScript writes
it; a template jinja2 cannot read or render (promptfoo's own JavaScript filters, say) is
:class:`~.promptfoo_files.Unmappable`.

An imported config is untrusted input: the sandbox refuses attributes and calls
outside plain data, a template renders at most :data:`MAX_RENDERED` characters, its
loops and calls run at most :data:`MAX_LOOPS` steps in all, and it reads at most
:data:`MAX_READ` characters. Nothing is computed while a template is compiled (jinja2 would
fold constants there, outside every bound), and what it computes on the way is bounded before
it is made: no operator, filter, method, slice or block makes more than
:data:`MAX_RENDERED` characters (or a number of more than :data:`MAX_DIGITS` digits), and
one render makes at most :data:`MAX_MADE` in all. What it renders is spent from the whole
import's :class:`~.promptfoo_files.Quota` as it is made.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .._errors import Problem
from .._guards.secrets import abridged
from ._common import ImportFailed
from .promptfoo_assert import js_string
from .promptfoo_files import Quota, TooLarge, Unmappable

if TYPE_CHECKING:
    from types import CodeType

    from jinja2.runtime import Context
    from jinja2.sandbox import SandboxedEnvironment

# One template's output (and its own length, and any one value it makes), and the steps of
# all its loops and calls: a prompt is text a person wrote for a model, never megabytes, and a
# template that loops more is not one.
MAX_RENDERED = 1_000_000
MAX_LOOPS = 100_000
# What one render makes on the way to its output, in all (each text, list or block an
# operator, a filter, a call or a slice makes, each number written out): bounding each value
# alone is not enough, since a template can keep what it makes (in a list, in many `set`s, in
# a macro's frames).
MAX_MADE = 4 * MAX_RENDERED
# What one render reads in all: the texts and lists its calls and filters go through, what
# `in` and `==` compare, and what the bounds above measure; a loop's every step may read a
# long var.
MAX_READ = 100 * MAX_RENDERED
# A number a template makes has at most this many digits: Python writes no longer one (its own
# limit for str(int)), and arithmetic on longer ones only gets slow.
MAX_DIGITS = 4_300


def written_as_text(value: Any, name: str = "") -> str:
    """A var as Nunjucks writes it into text (None and undefined: empty); ``name`` is the
    var's when it is written inside another var's value."""
    if value is None:
        return ""
    if (text := js_string(value)) is None:
        shown = abridged(_json_start(value))
        raise Unmappable(
            f"{f'var {name!r}' if name else 'a var'} is {shown}: a list or an object renders "
            "as JavaScript writes it, which is not kept"
        )
    return text


def _json_start(value: Any) -> str:
    """The start of ``value`` written as JSON (enough to quote it), however much it holds:
    a list holding one long text many times is never written out whole."""
    chunks: list[str] = []
    size = 0
    encoder = json.JSONEncoder(ensure_ascii=False, default=_shown_object)
    try:
        for chunk in encoder.iterencode(value):
            chunks.append(chunk)
            size += len(chunk)
            if size > 4096:
                break
    except (ValueError, TypeError, RecursionError):  # a list that holds itself, say
        pass
    return "".join(chunks)


def _shown_object(value: Any) -> str:
    return str(value) if _measure(value, 4096) <= 4096 else f"<{type(value).__name__}>"


def render(
    text: str, vars_: dict[str, Any], missing: set[str] | None = None, budget: Quota | None = None
) -> str:
    """``text`` rendered as a Nunjucks template with ``vars_`` (a var no one sets is empty
    text, and its name is noted in ``missing``); each part made is spent from ``budget``."""
    if not any(mark in text for mark in ("{{", "{%", "{#")):
        return text
    env = _environment()  # first: it says what to install when jinja2 is not
    if len(text) > MAX_RENDERED:  # compiling it would take many times that
        raise Unmappable(f"the template is longer than {MAX_RENDERED:,} characters")
    from jinja2.exceptions import SecurityError

    code, used = _compiled(text)
    if missing is not None:
        missing.update(used - set(vars_) - set(env.globals))
    # A sandbox of its own: what one render makes and the steps it runs are counted apart.
    sandbox = type(env)(_Work())
    template = sandbox.template_class.from_code(sandbox, code, sandbox.make_globals(None))
    out: list[str] = []
    size = 0
    try:
        for part in template.generate({**vars_, "range": _range}):
            size += len(part)
            if size > MAX_RENDERED:
                raise Unmappable(f"the template renders more than {MAX_RENDERED:,} characters")
            if budget is not None:
                budget.spend(text=len(part))
            out.append(part)
    except SecurityError as exc:
        raise Unmappable(f"the template reaches outside its sandbox: {exc}") from None
    except RecursionError:
        raise Unmappable("the template nests or calls itself deeper than Python follows") from None
    except (Unmappable, TooLarge):
        raise
    # Whatever else a filter or a method raises on what it is given (`5 | dictsort`, an
    # AttributeError; truncate's own assert): a template that does not render.
    except Exception as exc:
        raise Unmappable(f"the template fails to render: {exc}") from None
    return "".join(out)


@functools.lru_cache(maxsize=256)
def _compiled(text: str) -> tuple[CodeType, frozenset[str]]:
    """``text`` compiled as a guarded template (each test's combinations render the same few
    templates again and again), and the names of the vars it uses."""
    from jinja2 import TemplateError, meta

    env = _environment()
    try:
        parsed = env.parse(text)  # guarded: finding its vars compiles it too
        return env.compile(parsed), frozenset(meta.find_undeclared_variables(parsed))
    except (TemplateError, ValueError) as exc:  # ValueError: a number longer than Python reads
        raise Unmappable(f"the template does not read as Nunjucks here: {exc}") from None
    except (RecursionError, SyntaxError):  # SyntaxError: Python's, on the code it compiles to
        raise Unmappable("the template nests deeper than Python can compile") from None


class _Work:
    """What one render has made and read, and the steps its loops and calls have run; past
    a bound, :class:`~.promptfoo_files.Unmappable` saying what would pass it."""

    def __init__(self) -> None:
        self.steps = 0
        self.made = 0
        self.read = 0

    def step(self) -> None:
        self.steps += 1
        if self.steps > MAX_LOOPS:
            raise Unmappable(f"the template's loops and calls run more than {MAX_LOOPS:,} steps")

    def ahead(self, size: int, what: str) -> None:
        """Refuse, before it is made, a value about ``size`` characters (or items) long;
        measuring it and making it count as reading it ten times over."""
        if size > MAX_RENDERED:
            raise Unmappable(
                f"the template would make more than {MAX_RENDERED:,} characters at once ({what})"
            )
        if self.made + size > MAX_MADE:
            raise Unmappable(
                f"the template makes more than {MAX_MADE:,} characters in all on the way to "
                f"its text ({what})"
            )
        self.reads(10 * size, what)  # Python measures and makes a list item by item

    def reads(self, size: int, what: str) -> None:
        self.read += size
        if self.read > MAX_READ:
            raise Unmappable(
                f"the template reads more than {MAX_READ:,} characters in all ({what})"
            )

    def make(self, size: int, what: str) -> None:
        """Count ``size`` characters as made, refused past the bounds."""
        self.ahead(size, what)
        self.made += size

    def spend(self, value: Any, what: str) -> None:
        """Count ``value`` as made, once it is: a text, a list or a mapping for what it holds
        (a number only for its digits: a few bytes, kept only where written or stored)."""
        if isinstance(value, int):
            self.digits(_digits(value), what)
        elif isinstance(value, _DATA):  # not a range, a view or a generator: no copy
            self.make(_measure(value, min(MAX_RENDERED, MAX_MADE - self.made)), what)

    def digits(self, digits: int, what: str) -> None:
        if digits > MAX_DIGITS:
            raise Unmappable(
                f"the template would make a number of more than {MAX_DIGITS:,} digits ({what})"
            )


def _measure(value: Any, limit: int = MAX_MADE) -> int:
    """About how many characters ``str(value)`` writes, counted until past ``limit``: a text
    its length, a number its digits, a list, tuple, set or mapping its items and two more for
    each (separators, quotes). What a list holds twice counts twice, and a list that holds
    itself ends past ``limit``."""
    size = 0
    stack = [value]
    while stack and size <= limit:
        item = stack.pop()
        kind = type(item)  # the plain types first: a long list is measured item by item
        if kind is str or kind is bytes:
            size += len(item)
        elif kind is int:
            size += _digits(item)
        elif kind is list or kind is tuple:
            size += 2 + 2 * len(item)
            stack += item
        elif isinstance(item, str | bytes | bytearray):
            size += len(item)
        elif isinstance(item, int):
            size += _digits(item)
        elif isinstance(item, Mapping):
            size += 2 + 4 * len(item)
            stack += item.keys()
            stack += item.values()
        elif isinstance(item, Collection) and not isinstance(item, range):
            size += 2 + 2 * len(item)
            stack += item
        elif isinstance(attrs := getattr(item, "_Namespace__attrs", None), dict):
            stack.append(attrs)  # a jinja2 namespace() writes the dict it keeps here
        else:  # a float, a range, a macro, a generator: short whatever they hold
            size += 32
    return size


_DATA = (str, bytes, list, tuple, dict, set, frozenset)


def _length(value: Any) -> int:
    """How long reading through plain data ``value`` takes, in characters of a text: Python
    goes through a list item by item, ten times slower (other objects: nothing)."""
    if isinstance(value, str | bytes):
        return len(value)
    return 10 * len(value) if isinstance(value, _DATA) else 0


def _written(value: Any) -> int:
    """About how many characters formatting ``value`` writes (``%f`` writes a float's every
    digit, up to 330)."""
    return 330 if isinstance(value, float) else _measure(value)


def _digits(number: int) -> int:
    """At least the number of digits ``number`` has, counted from its bits."""
    return number.bit_length() * 30103 // 100_000 + 1


def _width(digits: str) -> int:
    """A width or a precision written in a format (too many digits: past every bound)."""
    return int(digits) if len(digits) <= 9 else MAX_MADE + 1


def _int(value: Any) -> int:
    """An argument that is a count or a width, as a count (anything else makes nothing)."""
    return max(value, 0) if isinstance(value, int) else 0


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], at: int, name: str, default: Any) -> Any:
    return args[at] if len(args) > at else kwargs.get(name, default)


# Line breaks as str.splitlines sees them.
_BREAKS = ("\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
# After a "%" and its "(key)": flags, width, precision, length and conversion.
_PRINTF = re.compile(r"[-#0 +]*(\*|\d+)?(?:\.(\*|\d*))?[hlL]?(.)", re.DOTALL)
_SEQUENCES = (str, bytes, list, tuple)


def _printf_size(text: str | bytes, args: Any) -> int:
    """About how long ``text % args`` is: the text, and for each conversion its width, its
    precision and its value written out (a mapping's value as often as the text names it)."""
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    positional = list(args) if isinstance(args, tuple) else [args]
    size, at, taken = len(text), 0, 0

    def take() -> Any:
        nonlocal taken
        taken += 1
        return positional[taken - 1] if taken <= len(positional) else None

    while at := text.find("%", at) + 1:
        key = None
        if text.startswith("(", at):  # Python's own scan: to the matching parenthesis
            start, depth = at + 1, 0
            while (close := text.find(")", at)) != -1:
                depth += text.count("(", at, close) - 1
                at = close + 1
                if depth <= 0:
                    break
            else:
                break  # Python refuses the format
            key = text[start : at - 1]
        if (match := _PRINTF.match(text, at)) is None:
            break
        at = match.end()
        width, precision, kind = match.groups()
        if kind == "%":
            continue
        for number in (width, precision):
            size += _int(take()) if number == "*" else _width(number) if number else 0
        if key is None:
            size += _written(take())
        elif isinstance(args, Mapping):
            size += _written(args.get(key))
    return size


def _binop_size(operator: str, left: Any, right: Any) -> int | None:
    """About how long a text or list ``left <operator> right`` is, where an operator can make
    much more than it is given; None where it cannot."""
    if operator == "*":
        if isinstance(left, int) and isinstance(right, _SEQUENCES):
            left, right = right, left
        if isinstance(left, _SEQUENCES) and isinstance(right, int):
            return len(left) * _int(right)
    elif operator == "+" and isinstance(left, _SEQUENCES) and isinstance(right, _SEQUENCES):
        return len(left) + len(right)
    elif operator == "%" and isinstance(left, str | bytes):
        return _printf_size(left, right)
    return None


def _binop_digits(operator: str, left: Any, right: Any) -> int | None:
    """At least the digits of the number ``left <operator> right``, where it can have many
    more than both; None where it cannot."""
    if not (isinstance(left, int) and isinstance(right, int)):
        return None
    if operator == "*":
        return _digits(left) + _digits(right)
    if operator == "**" and right > 0 and abs(left) > 1:
        # Past this many, the result has more digits than any bound, whatever ``left`` is.
        if right > 4 * MAX_DIGITS:
            return right
        return int(right * math.log10(abs(left))) + 1
    return None


def _method_size(text: str | bytes, name: str, args: tuple[Any, ...], kwargs: Any) -> int | None:
    """About how long ``text.name(*args, **kwargs)`` is, for the methods of a text that can
    make much more than it (``join`` is measured on its items); None for the others, which
    make at most a few times ``text``."""
    size = len(text)
    if name in ("center", "ljust", "rjust", "zfill"):
        return max(size, _int(_arg(args, kwargs, 0, "width", 0)))
    if name == "expandtabs":
        tabs = text.count("\t") if isinstance(text, str) else text.count(b"\t")
        return size + tabs * _int(_arg(args, kwargs, 0, "tabsize", 8))
    if name == "replace":
        old, new = _arg(args, kwargs, 0, "old", None), _arg(args, kwargs, 1, "new", None)
        kind = str if isinstance(text, str) else bytes
        if not (isinstance(old, kind) and isinstance(new, kind)):
            return None  # the method itself refuses them
        found = text.count(old) if old else size + 1  # type: ignore[arg-type]
        if isinstance(count := _arg(args, kwargs, 2, "count", -1), int) and count >= 0:
            found = min(found, count)
        return size + found * max(len(new) - len(old), 0)
    if name == "translate" and isinstance(table := _arg(args, kwargs, 0, "table", None), Mapping):
        longest = max((len(v) for v in table.values() if isinstance(v, str | bytes)), default=1)
        return size * max(longest, 1)
    return None


def _joined_size(items: Iterable[Any], separator: int) -> int:
    """About how long ``items`` joined with a separator ``separator`` characters long is (the
    separator written out once more, as a filter writes it before joining)."""
    size = separator
    for item in items:
        size += _measure(item) + separator
        if size > MAX_MADE:
            break
    return size


# Filters that return one of what they are given, and make nothing.
_PICKS = frozenset(
    {"attr", "count", "d", "default", "first", "last", "length", "max", "min", "random"}
)
# Filters that write their value and arguments out as text (str() of a list) before anything.
_WRITES = frozenset(
    {
        "capitalize",
        "center",
        "e",
        "escape",
        "forceescape",
        "format",
        "indent",
        "lower",
        "replace",
        "safe",
        "string",
        "striptags",
        "title",
        "trim",
        "truncate",
        "upper",
        "urlencode",
        "urlize",
        "wordcount",
        "wordwrap",
        "xmlattr",
    }
)


def _filter_size(
    name: str, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any], newline: str
) -> tuple[Any, int | None]:
    """About how long what the filter ``name`` makes is, where it can make much more than it
    is given (None where it cannot), and the value to give it (a generator read into a list,
    so that it can be measured and still joined)."""
    if name == "join":
        items = value if isinstance(value, str | Mapping) else list(value)
        return items, _joined_size(items, _measure(_arg(args, kwargs, 0, "d", "")))
    if name == "sum" and not isinstance(_arg(args, kwargs, 1, "start", 0), int | float):
        items = list(value)  # each partial sum is a new list: n of them, each up to the whole
        return items, len(items) * _measure(items) // 2
    if name in ("center", "indent", "wordwrap", "tojson", "pprint"):
        return value, _layout_size(name, value, args, kwargs, newline)
    if name == "replace":
        old, new = (str(_arg(args, kwargs, i, n, "")) for i, n in ((0, "old"), (1, "new")))
        count = _arg(args, kwargs, 2, "count", None)
        return value, _method_size(
            str(value), "replace", (old, new, -1 if count is None else count), {}
        )
    if name == "format":
        return value, _printf_size(str(value), kwargs or tuple(args))
    if name in ("batch", "slice"):  # each batch a new list, the last one filled
        count = _arg(args, kwargs, 0, "linecount" if name == "batch" else "slices", 0)
        fill = _arg(args, kwargs, 1, "fill_with", None)
        return value, _int(count) * (4 + (0 if fill is None else _measure(fill)))
    return value, None


def _layout_size(
    name: str, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any], newline: str
) -> int:
    """About how long the filter ``name`` that lays ``value`` out in lines makes it: each
    line's indent or wrapping, each level's indent."""
    text = value if isinstance(value, str) else ""
    size = len(text) if isinstance(value, str) else _measure(value)
    if name == "center":
        return max(size, _int(_arg(args, kwargs, 0, "width", 80)))
    if name == "indent":
        width = _arg(args, kwargs, 0, "width", 4)
        indention = len(width) if isinstance(width, str) else _int(width)
        return size + (sum(map(text.count, _BREAKS)) + 2) * indention
    if name == "wordwrap":
        wrapstring = _arg(args, kwargs, 2, "wrapstring", None) or newline
        width = max(_int(_arg(args, kwargs, 0, "width", 79)), 1)
        # Greedy wrapping: two lines in a row hold more than ``width`` characters.
        lines = min(size, 2 * size // width) + sum(map(text.count, _BREAKS)) + 1
        return size + lines * _measure(wrapstring)
    if name == "tojson":
        indent = _arg(args, kwargs, 0, "indent", None)
        step = len(indent) if isinstance(indent, str) else _int(indent)
        return 6 * size + step * (1 + size * _depth(value))  # its indent is made first
    return size * (_depth(value) + 1)  # pprint: one level's indent more on each line


def _depth(value: Any) -> int:
    """How deep lists and mappings nest in ``value`` (counted no deeper than it can be
    measured)."""
    deepest, stack, seen = 0, [(value, 0)], 0
    while stack and seen <= MAX_RENDERED:
        item, depth = stack.pop()
        seen += 1
        deepest = max(deepest, depth)
        if isinstance(item, Mapping):
            stack += ((v, depth + 1) for v in item.values())
        elif isinstance(item, Collection) and not isinstance(item, str | bytes | range):
            stack += ((v, depth + 1) for v in item)
    return deepest


def _counted(work: _Work, iterable: Iterable[Any]) -> Iterator[Any]:
    """``iterable``, each item a step of the render."""
    for item in iterable:
        work.step()
        yield item


def _range(*args: int) -> range:
    """``range``, refused past :data:`MAX_LOOPS` steps (each loop's steps count too)."""
    steps = range(*args)
    try:
        fits = len(steps) <= MAX_LOOPS
    except OverflowError:
        fits = False
    if not fits:
        raise Unmappable(f"the template asks for a range of more than {MAX_LOOPS:,} steps")
    return steps


# The sandbox's own filters, named so that no template can name them: a loop's items counted
# as steps, `~`, every other filter and each slice through the checks above, and what `in`
# searches or `==` compares with counted as read.
_LOOP, _CONCAT, _FILTER, _SLICE, _COMPARED = "(loop)", "(~)", "(filter)", "(slice)", "(compared)"
# The tests that compare a value with another, as `in` and `==` do.
_COMPARING = frozenset(
    {"==", "!=", "<", "<=", ">", ">=", "eq", "equalto", "ne", "lt", "lessthan", "le", "gt"}
    | {"greaterthan", "ge", "in"}
)


@functools.cache
def _environment() -> SandboxedEnvironment:
    """jinja2's sandbox, set as promptfoo sets Nunjucks: no autoescaping, a var no one sets
    (or an attribute of one) is empty text, and a value is written as JavaScript writes it.
    This one compiles; each render has one of its own (``type(env)(work)``)."""
    try:
        from jinja2 import ChainableUndefined, Undefined, nodes, pass_context
        from jinja2.exceptions import SecurityError
        from jinja2.filters import FILTERS
        from jinja2.runtime import BlockReference, LoopContext, Macro, markup_join, str_join
        from jinja2.sandbox import (
            SandboxedEnvironment,
            SandboxedEscapeFormatter,
            SandboxedFormatter,
        )
        from jinja2.tests import TESTS
        from jinja2.utils import generate_lorem_ipsum
        from jinja2.visitor import NodeTransformer
        from markupsafe import Markup
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

    class Guard(NodeTransformer):
        """The parsed template with its loops, its `~`, its slices, what it compares and its
        filters through the sandbox's own filters, which count each step and check what it
        would make before it is made."""

        def visit_For(self, node: nodes.For) -> nodes.Node:
            self.generic_visit(node)
            node.iter = nodes.Filter(node.iter, _LOOP, [], [], None, None, lineno=node.lineno)
            return node

        def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
            self.generic_visit(node)
            items = nodes.List(node.nodes, lineno=node.lineno)
            return nodes.Filter(items, _CONCAT, [], [], None, None, lineno=node.lineno)

        def visit_Getitem(self, node: nodes.Getitem) -> nodes.Node:
            self.generic_visit(node)
            if not isinstance(node.arg, nodes.Slice):  # the sandbox's getitem: no new value
                return node
            bounds = [
                nodes.Const(None) if part is None else part
                for part in (node.arg.start, node.arg.stop, node.arg.step)
            ]
            return nodes.Filter(node.node, _SLICE, bounds, [], None, None, lineno=node.lineno)

        def visit_Operand(self, node: nodes.Operand) -> nodes.Node:
            self.generic_visit(node)  # `in`, `==`, `<`: what the value is compared with
            node.expr = nodes.Filter(node.expr, _COMPARED, [], [], None, None, lineno=node.lineno)
            return node

        def visit_Filter(self, node: nodes.Filter) -> nodes.Node:
            self.generic_visit(node)
            if node.name not in FILTERS:
                return node  # compiling says the filter does not exist
            named = [nodes.Const(node.name, lineno=node.lineno), *node.args]
            return nodes.Filter(
                node.node, _FILTER, named, node.kwargs, node.dyn_args, node.dyn_kwargs,
                lineno=node.lineno,
            )  # fmt: skip

    class Formatter(SandboxedFormatter):
        """``str.format`` in the sandbox, each field measured before it is written."""

        def __init__(self, env: Sandbox, **kwargs: Any) -> None:
            super().__init__(env, **kwargs)
            self.work = env.work
            self.size = 0

        def vformat(self, format_string: str, args: Any, kwargs: Any) -> str:
            self.size = len(format_string)
            return super().vformat(format_string, args, kwargs)

        def convert_field(self, value: Any, conversion: str | None) -> Any:
            if conversion:  # !r, !s, !a: the value written out first
                self.work.ahead(self.size + _measure(value), "str.format")
            return super().convert_field(value, conversion)

        def format_field(self, value: Any, format_spec: str) -> Any:
            self.size += _written(value) + sum(map(_width, re.findall(r"\d+", format_spec)))
            self.work.ahead(self.size, "str.format")
            return super().format_field(value, format_spec)

    class EscapeFormatter(Formatter, SandboxedEscapeFormatter):
        """``Markup.format``, measured the same way."""

    def sandbox(context: Context) -> Sandbox:
        return context.environment  # type: ignore[return-value]

    @pass_context  # needs the context: compiling never runs it on constants
    def written(context: Context, value: Any) -> str:
        if isinstance(value, Undefined):
            return ""
        text = written_as_text(value)
        if text is not value:  # a number written out: new text, which a block may keep
            sandbox(context).work.make(len(text), "a value written out")
        return text

    @pass_context
    def loop_steps(context: Context, iterable: Iterable[Any]) -> Iterator[Any]:
        return _counted(sandbox(context).work, iterable)

    @pass_context
    def tilde(context: Context, items: list[Any]) -> str:
        work = sandbox(context).work
        work.ahead(sum(_measure(item) for item in items), "`~`")
        eval_ctx = context.eval_ctx
        text: str = (markup_join if eval_ctx.volatile or eval_ctx.autoescape else str_join)(items)
        work.spend(text, "`~`")
        return text

    @pass_context
    def sliced(context: Context, value: Any, start: Any, stop: Any, step: Any) -> Any:
        result = value[start:stop:step]
        sandbox(context).work.spend(result, "a slice")
        return result

    @pass_context
    def compared(context: Context, value: Any) -> Any:
        sandbox(context).work.reads(_length(value), "a comparison")
        return value

    def comparing(test: Any) -> Callable[..., Any]:
        """The test ``test`` (``==``, ``in``, ...), what it compares with counted as read."""

        @pass_context
        def counted(context: Context, value: Any, other: Any) -> Any:
            sandbox(context).work.reads(10 + _length(other), "a comparison")  # a Python call
            return test(value, other)

        return counted

    compared_tests = {name: comparing(TESTS[name]) for name in _COMPARING}

    @pass_context
    def checked(context: Context, value: Any, name: str, /, *args: Any, **kwargs: Any) -> Any:
        return sandbox(context).filtered(context, name, value, args, kwargs)

    own_filters = {
        _LOOP: loop_steps,
        _CONCAT: tilde,
        _FILTER: checked,
        _SLICE: sliced,
        _COMPARED: compared,
    }

    class Sandbox(SandboxedEnvironment):
        # Each operator that can make a long text, a long list or a long number.
        intercepted_binops = frozenset({"+", "-", "*", "**", "%"})

        def __init__(self, work: _Work) -> None:
            super().__init__(
                autoescape=False,
                undefined=ChainableUndefined,
                finalize=written,
                keep_trailing_newline=True,
                optimized=False,  # no constant folded while compiling, outside every bound
            )
            self.work = work
            self.filters.update(own_filters)
            self.tests.update(compared_tests)

        def parse(
            self, source: str, name: str | None = None, filename: str | None = None
        ) -> nodes.Template:
            """The template as it runs here, guarded (see ``Guard``)."""
            template = Guard().visit(super().parse(source, name, filename))
            template.set_environment(self)
            return template  # type: ignore[no-any-return]

        def unsafe_undefined(self, obj: Any, attribute: str) -> Any:
            # Refused out loud: the lenient undefined below would render it as empty text.
            raise SecurityError(
                f"access to attribute {attribute!r} of a {type(obj).__name__} is unsafe"
            )

        def concat(self, parts: Iterable[str]) -> str:
            """A block's text (a macro's, a ``set`` block's), measured before it is joined."""
            parts = parts if isinstance(parts, list) else list(parts)
            self.work.make(sum(map(len, parts)), "a block")
            return "".join(parts)

        def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
            what = f"`{operator}`"
            if (size := _binop_size(operator, left, right)) is not None:
                self.work.ahead(size, what)
            if (digits := _binop_digits(operator, left, right)) is not None:
                self.work.digits(digits, what)
            result = self.binop_table[operator](left, right)
            self.work.spend(result, what)
            return result

        def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
            self.work.step()
            owner, name = getattr(obj, "__self__", None), getattr(obj, "__name__", "")
            what = f"{type(owner).__name__}.{name}" if owner is not None else f"{name}()"
            if name not in _QUICK_METHODS:
                self.work.reads(_length(owner), what)
            if isinstance(obj, LoopContext) and args:  # a recursive loop's loop(items)
                args = (_counted(self.work, args[0]), *args[1:])
            elif isinstance(owner, str | bytes) and name == "join" and args:
                items = list(args[0])
                self.work.ahead(_joined_size(items, len(owner)), what)
                args = (items, *args[1:])
            elif isinstance(owner, str | bytes):
                if (size := _method_size(owner, name, args, kwargs)) is not None:
                    self.work.ahead(size, what)
            elif isinstance(owner, int) and name == "to_bytes":
                self.work.ahead(_int(_arg(args, kwargs, 0, "length", 1)), what)
            elif isinstance(owner, list | dict | set) and name in _KEEPS:
                # What a list or mapping keeps from the loop that fills it counts as made.
                args = tuple(list(a) if isinstance(a, Iterator) else a for a in args)
                self.work.spend([*args, *kwargs.values()], what)
            elif obj is generate_lorem_ipsum:  # lipsum(n, html, min, max): n paragraphs
                words = (
                    _int(_arg(args, kwargs, at, key, 0)) for at, key in ((2, "min"), (3, "max"))
                )
                paragraphs = _int(_arg(args, kwargs, 0, "n", 5))
                self.work.ahead(paragraphs * max(*words, 100) * 16, "lipsum()")
            result = super().call(context, obj, *args, **kwargs)
            # A macro's or a block's text is counted as its block is joined.
            if result is not owner and not isinstance(obj, Macro | BlockReference | LoopContext):
                self.work.spend(result, what)
            return result

        def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
            if super().wrap_str_format(value) is None:  # not a text's format or format_map
                return None
            text: str = value.__self__
            formatter = (
                EscapeFormatter(self, escape=text.escape)
                if isinstance(text, Markup)
                else Formatter(self)
            )
            mapping = value.__name__ == "format_map"

            def formatted(*args: Any, **kwargs: Any) -> str:
                if mapping:  # as jinja2's own wrapper checks it
                    if kwargs:
                        raise TypeError("format_map() takes no keyword arguments")
                    if len(args) != 1:
                        raise TypeError(
                            f"format_map() takes exactly one argument ({len(args)} given)"
                        )
                    return type(text)(formatter.vformat(text, (), args[0]))
                return type(text)(formatter.vformat(text, args, kwargs))

            return functools.update_wrapper(formatted, value)

        def filtered(
            self, context: Context, name: str, value: Any, args: tuple[Any, ...], kwargs: Any
        ) -> Any:
            """The filter ``name`` on ``value``, refused before it makes too much."""
            what = f"the filter {name}"
            if isinstance(value, str | bytes) and name in _BY_ITEM:
                # A text gone through character by character: a Python step and an object each.
                self.work.ahead(10 * len(value), what)
            elif name not in _QUICK_FILTERS:
                self.work.reads(_length(value), what)
            if name == "map" and args:  # each item through the filter it names, checked
                return self.mapped(context, value, args, kwargs)
            if name in _WRITES:
                for item in (value, *args, *kwargs.values()):
                    if not isinstance(item, str):
                        self.work.ahead(_measure(item), what)
            value, size = _filter_size(name, value, args, kwargs, self.newline_sequence)
            if size is not None:
                self.work.ahead(size, what)
            result = self.call_filter(name, value, args, kwargs, context=context)
            if name not in _PICKS:
                self.work.spend(result, what)
            return result

        def mapped(
            self, context: Context, value: Any, args: tuple[Any, ...], kwargs: Any
        ) -> Iterator[Any]:
            if value:  # as jinja2's map: an undefined or empty value maps to nothing
                for item in value:
                    self.work.step()  # a call of the filter
                    yield self.filtered(context, args[0], item, args[1:], kwargs)

    return Sandbox(_Work())


# Filters that go through their value item by item (a text's characters too).
_BY_ITEM = frozenset(
    {"batch", "dictsort", "groupby", "items", "list", "map", "max", "min", "reject"}
    | {"rejectattr", "select", "selectattr", "slice", "sort", "sum", "unique"}
)
# Filters, and methods, that take as long for a long text or list as for a short one (the
# others count what they are given as read).
_QUICK_FILTERS = frozenset({"attr", "count", "d", "default", "first", "last", "length", "random"})
_QUICK_METHODS = frozenset(
    {"add", "append", "endswith", "get", "items", "keys", "pop", "startswith", "values"}
)
# The methods by which a list, a mapping or a set keeps what it is given.
_KEEPS = frozenset({"add", "append", "extend", "insert", "setdefault", "update"})
