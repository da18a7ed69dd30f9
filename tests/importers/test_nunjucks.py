"""promptfoo's Nunjucks templates, rendered by jinja2's sandbox: what renders, what is refused,
and the error without jinja2 installed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_rubric.importers import nunjucks
from pytest_rubric.importers._common import ImportFailed
from pytest_rubric.importers.nunjucks import MAX_LOOPS, MAX_RENDERED, render
from pytest_rubric.importers.promptfoo import convert
from pytest_rubric.importers.promptfoo_files import Unmappable


def test_nunjucks_beyond_a_var_renders_as_promptfoo_renders_it() -> None:
    template = (
        "{{ name | upper }}{% if vip %}, our VIP{% endif %}:"
        "{% for item in items %} {{ loop.index }}. {{ item | title }}{% endfor %}\n"
        "{{- '  ' -}} n={{ count }} ok={{ flag }} none=[{{ nothing }}] unset=[{{ nobody.name }}]"
    )
    vars_ = {"name": "ada", "vip": True, "items": ["tea", "cake"], "count": 2.0, "flag": False}
    missing: set[str] = set()
    vars_["nothing"] = None
    assert render(template, vars_, missing) == (
        "ADA, our VIP: 1. Tea 2. Cake  n=2 ok=false none=[] unset=[]"
    )
    assert missing == {"nobody"}


def test_text_without_a_template_is_left_as_it_is() -> None:
    assert render("Say {hi} and 50% }}", {}) == "Say {hi} and 50% }}"


@pytest.mark.parametrize(
    "template",
    [
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ cycler.__init__.__globals__.os }}",
        "{{ name.format_map({}) }}",
    ],
)
@pytest.mark.hostile
def test_a_template_cannot_reach_outside_its_sandbox(template: str) -> None:
    with pytest.raises(Unmappable, match=r"sandbox|a method of Python's|not kept"):
        render(template, {"name": "x{a}"})


@pytest.mark.hostile
def test_a_template_renders_within_bounds() -> None:
    with pytest.raises(Unmappable, match=f"more than {MAX_RENDERED:,} characters"):
        render("{{ doc ~ doc }}", {"doc": "ab" * (MAX_RENDERED // 4 + 1)})
    nested = "{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}"
    with pytest.raises(Unmappable, match=f"more than {MAX_LOOPS:,} steps"):
        render(nested, {})
    assert render("{% for i in range(3) %}{{ i }}{% endfor %}", {}) == "012"


# What jinja2 has and Nunjucks has not: promptfoo would not render it so (`'ab' * 3` is NaN in
# JavaScript, a text has no `ljust`), so it is refused, never rendered as Python would. The red
# team's templates of a few bytes that made GBs in jinja2 are among them.
NOT_NUNJUCKS = {
    "{{ 'a' * 1500000000 }}": "uses `*` on str and int",
    "{% set x = [1] * 300000000 %}{{ x | length }}": "uses `*` on list and int",
    "{{ '%0999999999d' % 1 }}": "uses `%` on str and int",
    "{{ [1] + [2] }}": "uses `+` on list and list",
    "{{ 'a'.ljust(10 ** 9) }}": "calls str.ljust, a method of Python's",
    "{{ '{:>{}}'.format(1, 10 ** 9) }}": "calls str.format, a method of Python's",
    "{% for i in range(9) %}{{ doc.count('y') }}{% endfor %}": "calls str.count",
    "{% set keep = [] %}{{ keep.append(1) }}": "calls list.append",
    "{{ {'a': 1}.items() }}": "calls dict.items",
    "{{ '%0999999999d' | format(1) }}": "No filter named 'format'",
    "{{ ['a'] | map('center', 999999) | join }}": "No filter named 'map'",
    "{{ 'a b' | wordwrap(1) }}": "No filter named 'wordwrap'",
    "{{ lipsum(10 ** 6) }}": "'lipsum' is undefined",
    "{% set ns = namespace(s='x') %}{{ ns.s }}": "'namespace' is undefined",
    "{% for x in [[1]] recursive %}{{ loop(x) }}{% endfor %}": "a recursive loop is jinja2's",
}


@pytest.mark.parametrize(
    ("template", "reason"), NOT_NUNJUCKS.items(), ids=[t[:60] for t in NOT_NUNJUCKS]
)
@pytest.mark.hostile
def test_what_jinja2_has_and_nunjucks_has_not_is_refused(template: str, reason: str) -> None:
    with pytest.raises(Unmappable, match=re.escape(reason)):
        render(template, {"doc": "x" * 10})


# Templates of Nunjucks that would make GBs (or run for ever), each with the bound that refuses
# it: what would pass it is named, nothing of that size is made. A template compiles without
# running anything (jinja2 folded constants while compiling, outside every bound), and one
# operation cannot make a value past the bound before it is seen.
AT_ONCE = "would make more than {MAX_RENDERED:,} characters at once ({what})"
IN_ALL = "makes more than {MAX_MADE:,} characters in all on the way to its text ({what})"
DIGITS = "would make a number of more than {MAX_DIGITS:,} digits ({what})"
READ = "reads more than {MAX_READ:,} characters in all ({what})"
STEPS = "loops and calls run more than {MAX_LOOPS:,} steps"
HOSTILE = {
    # operators
    "{{ doc + doc }}": AT_ONCE.replace("{what}", "`+`"),
    "{{ 10 ** (10 ** 8) }}": DIGITS.replace("{what}", "`**`"),
    "{{ (10 ** 4000) * (10 ** 4000) }}": DIGITS.replace("{what}", "`*`"),
    "{% macro twice(s, n) %}{% if n %}{{ twice(s ~ s, n - 1) }}{% endif %}{% endmacro %}"
    "{{ twice('x', 60) }}": AT_ONCE.replace("{what}", "`~`"),
    # filters
    "{{ 'ab' | center(1500000000) }}": AT_ONCE.replace("{what}", "the filter center"),
    "{{ 'x' | indent(1500000000, true) }}": AT_ONCE.replace("{what}", "the filter indent"),
    "{{ doc | replace('x', 'xx') }}": AT_ONCE.replace("{what}", "the filter replace"),
    "{{ range(999) | join(doc) }}": AT_ONCE.replace("{what}", "the filter join"),
    "{{ [[doc], [doc]] | sum(start=[]) | length }}": AT_ONCE.replace("{what}", "the filter sum"),
    "{{ (range(10) | batch(999999, 'x')) | list }}": AT_ONCE.replace("{what}", "the filter batch"),
    "{% filter center(10 ** 9) %}ab{% endfilter %}": AT_ONCE.replace("{what}", "the filter center"),
    # what a template keeps, loop after loop
    "{% set x %}{% for i in range(100000) %}{{ doc[i:] }}{% endfor %}{% endset %}": (
        IN_ALL.replace("{what}", "a slice")
    ),
    # time
    "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}": (
        STEPS
    ),
    "{% for a in doc %}{% for b in doc %}{% endfor %}{% endfor %}": STEPS,
    "{% for i in range(100000) %}{% if 'y' in doc %}{% endif %}{% endfor %}": READ.replace(
        "{what}", "a comparison"
    ),
    "{% set a = range(99999) | list %}{% set b = range(99999) | list %}"
    "{% for i in range(99999) %}{% if a == b %}{% endif %}{% endfor %}": READ.replace(
        "{what}", "a comparison"
    ),
    # what jinja2 or Python raise beyond the errors of a template
    "{{ 'abc' | truncate(1, end=doc) }}": "fails to render: expected length",
    "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}": "deeper than Python follows",
    "{{ " + "9" * 5000 + " }}": "does not read as Nunjucks here: Exceeds the limit",
    "{% if 1 %}" * 200 + "x" + "{% endif %}" * 200: "nests deeper than Python can compile",
    "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}": "nests deeper than Python can compile",
    "{{ 'x' }}" + " " * MAX_RENDERED: f"longer than {MAX_RENDERED:,} characters",
}


@pytest.mark.parametrize(("template", "reason"), HOSTILE.items(), ids=[t[:60] for t in HOSTILE])
@pytest.mark.hostile
def test_a_template_that_would_make_too_much_is_refused_before_it_does(
    template: str, reason: str
) -> None:
    """Each is refused with the bound it would pass, whatever memory the machine has: the
    reason is one no size check after the fact gives."""
    expected = reason.format(**vars(nunjucks))
    with pytest.raises(Unmappable, match=re.escape(expected)):
        render(template, {"doc": "x" * 900_000})


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{ 2 ** 10 }}|{{ 7 // 2 }}|{{ 7 % 3 }}|{{ 'a' + 'b' }}|{{ 1.5 * 2 }}", "1024|3|1|ab|3"),
        ("{{ 'ab' | center(6) }}|{{ 'x\ny' | indent(2) }}", "  ab  |x\n  y"),
        (
            "{{ ['a', 'b'] | join('-') | upper }}|{{ 'hello'[1:3] }}{{ 'abc'[::-1] }}",
            "A-B|elcba",
        ),
        (
            "{% macro m(x) %}<{{ x }}>{% endmacro %}{% set s %}{{ m(1) }}{% endset %}{{ s ~ '!' }}",
            "<1>!",
        ),
        (
            "{% for x in 'ab' %}{{ x }}{% endfor %}{{ 'a' in 'cat' }}{{ 3 is in([3]) }}",
            "abtruetrue",
        ),
        ("{{ '  x  ' | trim | replace('x', 'y') | truncate(5) }}|{{ 99 ** 30 > 0 }}", "y|true"),
        (
            "{% set c = cycler('x', 'y') %}{{ c.next() }}{{ c.next() }}|"
            "{% set comma = joiner() %}{% for i in [1, 2] %}{{ comma() }}{{ i }}{% endfor %}",
            "xy|1, 2",
        ),
    ],
)
def test_ordinary_templates_render_within_every_bound(template: str, expected: str) -> None:
    assert render(template, {}) == expected


@pytest.mark.skipif(sys.platform == "win32", reason="rlimits are POSIX")
@pytest.mark.hostile
def test_an_import_lists_each_hostile_prompt_and_writes_the_rest(tmp_path: Path) -> None:
    """End to end, in a process held to 2 GiB: the red team's configs of a hundred bytes each,
    as prompts of one config. Each is listed with its reason, the plain prompt asks both tests,
    and the import ends as documented (exit status 0), never with a MemoryError traceback."""
    bound = f"the template would make more than {MAX_RENDERED:,} characters at once"
    hostile = {
        "{{ 'a' * 1500000000 }}": "the template uses `*` on str and int",
        "{{ 'ab' | center(1500000000) }}": f"{bound} (the filter center)",
        "{{ 'x' | indent(1500000000, true) }}": f"{bound} (the filter indent)",
        "{{ '%0999999999d' % 1 }}": "the template uses `%` on str and int",
        "{% set x = [1] * 300000000 %}{{ x | length }}": "the template uses `*` on list and int",
        "{{ range(99999) | join | replace('1', '" + "a" * 365 + "') }}": (
            f"{bound} (the filter replace)"
        ),
    }
    prompts = "".join(f"  - {json.dumps(p)}\n" for p in [*hostile, "Hi {{ name }}"])
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        f"prompts:\n{prompts}tests:\n"
        "  - vars: {name: Ada}\n    assert: [{type: icontains, value: ada}]\n"
        "  - vars: {name: Bo}\n    assert: [{type: icontains, value: bo}]\n"
    )
    limited = (
        "import resource, runpy\n"
        "hard = resource.getrlimit(resource.RLIMIT_AS)[1]\n"
        "cap = 2 << 30 if hard == resource.RLIM_INFINITY else min(2 << 30, hard)\n"
        "resource.setrlimit(resource.RLIMIT_AS, (cap, hard))\n"
        "runpy.run_module('pytest_rubric', run_name='__main__')\n"
    )
    command = ["import", "promptfoo", "promptfooconfig.yaml", "--out", "out"]
    done = subprocess.run(
        [sys.executable, "-c", limited, *command],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    for line, reason in enumerate(hostile.values(), start=2):
        assert re.search(
            rf"not mapped: promptfooconfig.yaml:{line}: prompt .*: {re.escape(reason)}.*; "
            "no case asks it",
            done.stdout,
        ), (line, done.stdout)
    assert "2 of 2 tests written as 2 cases (7 prompts)" in done.stdout
    written = (tmp_path / "out" / "promptfooconfig.rubric.yaml").read_text()
    assert "question: Hi Ada" in written and "question: Hi Bo" in written


def test_without_jinja2_a_config_with_templates_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "jinja2", None)  # as if it were not installed
    monkeypatch.setitem(sys.modules, "jinja2.sandbox", None)
    nunjucks._environment.cache_clear()
    try:
        plain = tmp_path / "plain.yaml"
        plain.write_text("prompts: ['Hi']\ntests: [{assert: [{type: contains, value: Hi}]}]\n")
        assert convert([plain]).rubrics  # no template: jinja2 is not needed
        config = tmp_path / "promptfooconfig.yaml"
        config.write_text(
            "prompts: ['Hi {{ name }}']\n"
            "tests: [{vars: {name: Ada}, assert: [{type: contains, value: Ada}]}]\n"
        )
        with pytest.raises(ImportFailed) as failed:
            convert([config])
    finally:
        nunjucks._environment.cache_clear()
    assert "jinja2 is not installed" in str(failed.value)
    assert "pip install pytest-rubric[import]" in str(failed.value)
