"""promptfoo's Nunjucks templates, rendered by jinja2's sandbox: what renders, what is refused,
and the error without jinja2 installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_rubric.importers import promptfoo_render
from pytest_rubric.importers._common import ImportFailed
from pytest_rubric.importers.promptfoo import convert
from pytest_rubric.importers.promptfoo_files import Unmappable
from pytest_rubric.importers.promptfoo_render import MAX_LOOPS, MAX_RENDERED, render


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
    with pytest.raises(Unmappable, match=r"sandbox|fails to render|not kept"):
        render(template, {"name": "x{a}"})


@pytest.mark.hostile
def test_a_template_renders_within_bounds() -> None:
    with pytest.raises(Unmappable, match=f"more than {MAX_RENDERED:,} characters"):
        render(f"{{{{ 'ab' * {MAX_RENDERED // 2 + 1} }}}}", {})
    nested = "{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}"
    with pytest.raises(Unmappable, match=f"more than {MAX_LOOPS:,} steps"):
        render(nested, {})
    assert render("{% for i in range(3) %}{{ i }}{% endfor %}", {}) == "012"


def test_without_jinja2_a_config_with_templates_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "jinja2", None)  # as if it were not installed
    monkeypatch.setitem(sys.modules, "jinja2.sandbox", None)
    promptfoo_render._environment.cache_clear()
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
        promptfoo_render._environment.cache_clear()
    assert "jinja2 is not installed" in str(failed.value)
    assert "pip install pytest-rubric[import]" in str(failed.value)
