"""Nunjucks templates, as promptfoo renders them, by jinja2's sandboxed environment (the
``import`` extra: ``pip install pytest-rubric[import]``), whose syntax Nunjucks copies: a var
no one sets renders as empty text, as in Nunjucks, and a value is written as JavaScript writes
it. What jinja2 has and Nunjucks has not is not rendered, since promptfoo would not render it
so: a method of a text, a list or a mapping (Nunjucks calls JavaScript's), an operator on
anything but numbers or two texts (``'ab' * 3`` is ``NaN`` there), jinja2's own filters
(``format``, ``map``, ``wordwrap``, ...) and globals (``namespace``, ``lipsum``, ``dict``).
Such a template, or one jinja2 cannot read or render (promptfoo's own JavaScript filters, say),
is :class:`~.promptfoo_files.Unmappable`.

An imported config is untrusted input: the sandbox refuses attributes outside plain data, a
template renders at most :data:`MAX_RENDERED` characters, its loops and calls run at most
:data:`MAX_LOOPS` steps in all, and it reads at most :data:`MAX_READ` characters. Nothing is
computed while a template is compiled (jinja2 would fold constants there, outside every
bound), and what it computes on the way is bounded before it is made: no operator, filter,
slice or block makes more than :data:`MAX_RENDERED` characters (or a number of more than
:data:`MAX_DIGITS` digits), and one render makes at most :data:`MAX_MADE` in all. What it
renders is spent from the whole import's :class:`~.promptfoo_files.Quota` as it is made.
"""

from __future__ import annotations

import functools
import json
import math
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
    # Whatever else a filter or an operator raises on what it is given (`5 | dictsort`, an
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


def _digits(number: int) -> int:
    """At least the number of digits ``number`` has, counted from its bits."""
    return number.bit_length() * 30103 // 100_000 + 1


def _int(value: Any) -> int:
    """An argument that is a count or a width, as a count (anything else makes nothing)."""
    return max(value, 0) if isinstance(value, int) else 0


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], at: int, name: str, default: Any) -> Any:
    return args[at] if len(args) > at else kwargs.get(name, default)


# Line breaks as str.splitlines sees them.
_BREAKS = ("\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
_NUMBERS = (int, float)


def _binop_made(operator: str, left: Any, right: Any) -> tuple[int, int]:
    """What ``left <operator> right`` would make, as (characters, digits): an operator of
    Nunjucks's, on numbers or (``+``) on two texts; anything else is refused, as JavaScript
    does something else with it."""
    if isinstance(left, _NUMBERS) and isinstance(right, _NUMBERS):
        if not (isinstance(left, int) and isinstance(right, int)):
            return 0, 0
        if operator == "*":
            return 0, _digits(left) + _digits(right)
        if operator == "**" and right > 0 and abs(left) > 1:
            # Past this many, the result has more digits than any bound, whatever ``left`` is.
            return 0, right if right > 4 * MAX_DIGITS else int(right * math.log10(abs(left))) + 1
        return 0, 0
    if operator == "+" and isinstance(left, str) and isinstance(right, str):
        return len(left) + len(right), 0
    kinds = f"{type(left).__name__} and {type(right).__name__}"
    raise Unmappable(
        f"the template uses `{operator}` on {kinds}, which Nunjucks does not do as jinja2 "
        "does (in JavaScript, `'ab' * 3` is NaN and `'a' + 1` is 'a1')"
    )


def _joined_size(items: Iterable[Any], separator: int) -> int:
    """About how long ``items`` joined with a separator ``separator`` characters long is (the
    separator written out once more, as the filter writes it before joining)."""
    size = separator
    for item in items:
        size += _measure(item) + separator
        if size > MAX_MADE:
            break
    return size


def _filter_size(
    name: str, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, int | None]:
    """About how long what the filter ``name`` makes is, where it can make much more than it
    is given (None where it cannot), and the value to give it (a generator read into a list,
    so that it can be measured and still joined)."""
    if name == "join":
        items = value if isinstance(value, str | Mapping) else list(value)
        return items, _joined_size(items, _measure(_arg(args, kwargs, 0, "d", "")))
    if name == "sum" and not isinstance(_arg(args, kwargs, 1, "start", 0), _NUMBERS):
        items = list(value)  # each partial sum is a new list: n of them, each up to the whole
        return items, len(items) * _measure(items) // 2
    if name in ("center", "indent"):
        text = value if isinstance(value, str) else ""
        size = len(text) if isinstance(value, str) else _measure(value)
        if name == "center":
            return value, max(size, _int(_arg(args, kwargs, 0, "width", 80)))
        width = _arg(args, kwargs, 0, "width", 4)
        indention = len(width) if isinstance(width, str) else _int(width)
        return value, size + (sum(map(text.count, _BREAKS)) + 2) * indention
    if name == "replace":
        old, new = (str(_arg(args, kwargs, i, n, "")) for i, n in ((0, "old"), (1, "new")))
        text = str(value)
        found = text.count(old) if old else len(text) + 1
        if isinstance(count := _arg(args, kwargs, 2, "count", None), int) and count >= 0:
            found = min(found, count)
        return value, len(text) + found * max(len(new) - len(old), 0)
    if name in ("batch", "slice"):  # each batch a new list, the last one filled
        count = _arg(args, kwargs, 0, "linecount" if name == "batch" else "slices", 0)
        fill = _arg(args, kwargs, 1, "fill_with", None)
        return value, _int(count) * (4 + (0 if fill is None else _measure(fill)))
    return value, None


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
    (or an attribute of one) is empty text, a value is written as JavaScript writes it, and
    only Nunjucks's filters and globals. This one compiles; each render has one of its own
    (``type(env)(work)``)."""
    try:
        from jinja2 import ChainableUndefined, Undefined, nodes, pass_context
        from jinja2.exceptions import SecurityError, TemplateSyntaxError
        from jinja2.filters import FILTERS
        from jinja2.runtime import markup_join, str_join
        from jinja2.sandbox import SandboxedEnvironment
        from jinja2.tests import TESTS
        from jinja2.visitor import NodeTransformer
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
            if node.recursive:
                raise TemplateSyntaxError(
                    "a recursive loop is jinja2's: Nunjucks has none", node.lineno
                )
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
            if node.name not in _NUNJUCKS_FILTERS:
                return node  # compiling says the filter does not exist
            named = [nodes.Const(node.name, lineno=node.lineno), *node.args]
            return nodes.Filter(
                node.node, _FILTER, named, node.kwargs, node.dyn_args, node.dyn_kwargs,
                lineno=node.lineno,
            )  # fmt: skip

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
        # Every operator: each is checked as it runs (see ``_binop_made``), none folded.
        intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})

        def __init__(self, work: _Work) -> None:
            super().__init__(
                autoescape=False,
                undefined=ChainableUndefined,
                finalize=written,
                keep_trailing_newline=True,
                optimized=False,  # no constant folded while compiling, outside every bound
            )
            self.work = work
            self.filters = {name: FILTERS[name] for name in _NUNJUCKS_FILTERS} | own_filters
            self.globals = {name: self.globals[name] for name in ("range", "cycler", "joiner")}
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
            size, digits = _binop_made(operator, left, right)
            self.work.ahead(size, what)
            self.work.digits(digits, what)
            result = self.binop_table[operator](left, right)
            self.work.spend(result, what)
            return result

        def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
            """A macro, ``caller()``, ``range()``, a cycler or a joiner: a method of plain data
            is Python's, where Nunjucks would call JavaScript's."""
            self.work.step()
            if isinstance(owner := getattr(obj, "__self__", None), (*_DATA, *_NUMBERS)):
                raise Unmappable(
                    f"the template calls {type(owner).__name__}.{obj.__name__}, a method of "
                    "Python's that Nunjucks does not have (it calls JavaScript's)"
                )
            return super().call(context, obj, *args, **kwargs)

        def wrap_str_format(self, value: Any) -> None:
            """Nothing: a text's ``format`` stays Python's method, which ``call`` refuses."""
            return None

        def filtered(
            self, context: Context, name: str, value: Any, args: tuple[Any, ...], kwargs: Any
        ) -> Any:
            """The filter ``name`` on ``value``, refused before it makes too much."""
            what = f"the filter {name}"
            if isinstance(value, str | bytes) and name in _BY_ITEM:
                # A text gone through character by character: a Python step and an object each.
                self.work.ahead(10 * len(value), what)
            elif name not in _PICKS:
                self.work.reads(_length(value), what)
            if name in _WRITES:
                for item in (value, *args, *kwargs.values()):
                    if not isinstance(item, str):
                        self.work.ahead(_measure(item), what)
            value, size = _filter_size(name, value, args, kwargs)
            if size is not None:
                self.work.ahead(size, what)
            result = self.call_filter(name, value, args, kwargs, context=context)
            if name not in _PICKS:
                self.work.spend(result, what)
            return result

    return Sandbox(_Work())


# Nunjucks's own filters that jinja2 has too (``dump`` and ``nl2br`` it has not): the only
# filters a template may use here.
_NUNJUCKS_FILTERS = frozenset(
    {"abs", "batch", "capitalize", "center", "d", "default", "dictsort", "e", "escape"}
    | {"first", "float", "forceescape", "groupby", "indent", "int", "join", "last", "length"}
    | {"list", "lower", "random", "reject", "rejectattr", "replace", "reverse", "round"}
    | {"safe", "select", "selectattr", "slice", "sort", "string", "striptags", "sum", "title"}
    | {"trim", "truncate", "upper", "urlencode", "urlize", "wordcount"}
)
# Filters that return one of what they are given (or how many it holds): they make nothing,
# and take as long for a long text or list as for a short one.
_PICKS = frozenset({"d", "default", "first", "last", "length", "random"})
# Filters that go through their value item by item (a text's characters too).
_BY_ITEM = frozenset(
    {"batch", "dictsort", "groupby", "list", "reject", "rejectattr", "select", "selectattr"}
    | {"slice", "sort", "sum"}
)
# Filters that write their value and arguments out as text (str() of a list) before anything.
_WRITES = frozenset(
    {"capitalize", "center", "e", "escape", "forceescape", "indent", "lower", "replace"}
    | {"safe", "string", "striptags", "title", "trim", "truncate", "upper", "urlencode"}
    | {"urlize", "wordcount"}
)
