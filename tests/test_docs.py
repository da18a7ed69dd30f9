"""The README is the front door: short, the two commands first, and no link that leads nowhere;
and every signpost in the repository leads somewhere.

The documentation itself lives in docs/ and is checked by ``make docs`` (mkdocs --strict,
with anchors validated); these checks cover the one page mkdocs does not build, and the
references to the package that docstrings, comments and pages make: each names a module or
a name that exists, and none cites an issue number or a design page the repository does not
hold.
"""

from __future__ import annotations

import functools
import importlib
import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MAX_LINES = 300


def readme() -> str:
    return README.read_text(encoding="utf-8")


def test_the_readme_has_at_most_300_lines() -> None:
    assert len(readme().splitlines()) <= MAX_LINES


def test_the_readme_starts_with_the_two_commands() -> None:
    lines = readme().splitlines()
    assert lines[0] == "# pytest-rubric"
    first_block = [line for line in lines[1:] if line.strip()][:3]
    assert first_block[0] == "```sh"
    assert first_block[1].startswith("make demo ")
    assert first_block[2].startswith("make test ")


def relative_links(text: str) -> list[str]:
    """Every Markdown link and image target outside code blocks that is not a URL or anchor."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    targets = re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", prose)
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:|#", t)]


def test_every_relative_link_in_the_readme_leads_to_a_file() -> None:
    links = relative_links(readme())
    assert "docs/report.png" in links  # the screenshot still shows
    missing = [link for link in links if not (ROOT / unquote(link.split("#", 1)[0])).is_file()]
    assert missing == []


def test_the_link_finder_sees_what_it_must() -> None:
    text = (
        "See [a](docs/a.md#x), ![b](docs/b.png), [c](https://x.org), [d](#local).\n"
        "```\n[e](not/a/link.md)\n```\n`[f](nor/this.md)`\n"
    )
    assert relative_links(text) == ["docs/a.md#x", "docs/b.png"]


def test_every_criterion_type_of_the_registry_has_a_row_in_the_criteria_reference() -> None:
    from pytest_rubric.criteria.registry import criterion_types

    page = (ROOT / "docs" / "reference" / "criteria.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `(\w+)` \|", page, flags=re.MULTILINE))
    assert rows >= set(criterion_types())


def test_every_provider_of_the_registry_has_its_row_in_the_judge_guide() -> None:
    """The providers table says what ``PROVIDERS`` holds: a provider added there and not
    here (or a variable renamed) fails."""
    from pytest_rubric._defaults import PROVIDERS

    page = (ROOT / "docs" / "guides" / "judge.md").read_text(encoding="utf-8")
    table = page[page.index("## Providers") :].split("\n\n")[1]
    rows = {m[1]: m[0] for m in re.finditer(r"^\| `(\w+)` \|.*$", table, flags=re.MULTILINE)}
    assert set(rows) == set(PROVIDERS)
    for name, provider in PROVIDERS.items():
        for said in (provider.url, provider.url_variable, provider.key_variable):
            assert f"`{said}`" in rows[name], (name, said)


# --- signposts ---------------------------------------------------------------------------

PACKAGE = ROOT / "pytest_rubric"
TOP = {p.stem for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file()}
TOP.discard("__init__")
TOP.discard("__main__")
_FILE_ENDINGS = {
    "py",
    "md",
    "json",
    "yaml",
    "yml",
    "toml",
    "html",
    "csv",
    "txt",
    "ini",
    "cfg",
    "png",
    "tsv",
    "rubric",
    "lock",
    "sh",
    "jsonl",
}
_SPAN = re.compile(r"``?([^`\n]+?)``?")
_DOTTED = re.compile(r"(?<![\w/.-])(~?\.{0,2}[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w/-])")


def texts() -> list[Path]:
    found = [*PACKAGE.rglob("*.py"), *ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md")]
    found += [*(ROOT / "tests").rglob("*.py"), *(ROOT / "bench").rglob("*.py")]
    found += [ROOT / "tests" / "README.md", ROOT / "docs" / "hooks.py"]
    found.remove(Path(__file__).resolve())  # its examples of stale references
    return [p for p in found if p.is_file()]


@functools.cache
def _module(name: str) -> object | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` names a module of the package, or a name in one (an attribute, a
    class's member, a dataclass's field)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = _module(".".join(parts[:cut]))
        if module is None:
            continue
        target: object = module
        for name in parts[cut:]:
            fields = (
                getattr(target, "model_fields", None)
                or getattr(target, "__dataclass_fields__", None)
                or {}
            )
            annotations = getattr(target, "__annotations__", {})
            if hasattr(target, name):
                target = getattr(target, name)
            elif name in fields or name in annotations:
                return True  # a field: its type is not followed further
            else:
                return name in getattr(target, "__slots__", ())
        return True
    return False


def references(path: Path, text: str) -> list[tuple[int, str, str]]:
    """``(line, as written, as resolved)`` for each reference to the package in ``path``."""
    if path.is_relative_to(PACKAGE):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        package = parts if path.name == "__init__.py" else parts[:-1]
        if parts[-1] == "__init__":
            package = parts[:-1]
    else:
        package = ["pytest_rubric"]
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for span in _SPAN.findall(line):
            for written in _DOTTED.findall(span):
                name = written.lstrip("~")
                if name.rsplit(".", 1)[-1] in _FILE_ENDINGS:
                    continue
                if name.startswith("."):
                    dots = len(name) - len(name.lstrip("."))
                    base = package[: len(package) - dots + 1]
                    resolved = ".".join([*base, name.lstrip(".")])
                elif name.split(".")[0] == "pytest_rubric":
                    resolved = name
                elif name.split(".")[0] in TOP:
                    resolved = f"pytest_rubric.{name}"
                elif name.startswith("_") and not name.startswith("__"):
                    resolved = f"pytest_rubric.{name}"  # a private module, by its old name?
                else:
                    continue
                found.append((number, written, resolved))
    return found


@functools.cache
def _modules() -> frozenset[str]:
    """Every module and folder of the package, by its own name."""
    return frozenset({p.stem for p in PACKAGE.rglob("*.py")} | {p.name for p in PACKAGE.iterdir()})


@functools.cache
def _defined_names() -> frozenset[str]:
    """Every module, folder, function, class and assigned name of the package."""
    names = set(_modules())
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        names.update(re.findall(r"(?:def|class) (\w+)", text))
        names.update(re.findall(r"^\s*(?:self\.)?(\w+)\s*[:=]", text, flags=re.MULTILINE))
    return frozenset(names)


# A private module named alone, as comments point at one: "see _audit"; and a private name
# in code marks, ``_scoring``, which may be a module or a name of one.
_SEE = re.compile(r"\bsee (_[a-z][a-z_]*)\b(?![.(]?\w)")
_ALONE = re.compile(r"`{1,2}(_[a-z][a-z_]*)\b(?![.(`]?\w)")


def stale_references(path: Path, text: str | None = None) -> list[str]:
    """The references in ``path`` (or in ``text``, as if it were there) that lead nowhere."""
    text = path.read_text(encoding="utf-8") if text is None else text
    shown = path.relative_to(ROOT)
    stale = [
        f"{shown}:{line}: {written}"
        for line, written, resolved in references(path, text)
        if not resolves(resolved) and not resolves(resolved.removeprefix("pytest_rubric."))
    ]
    own = set(re.findall(r"(?:def|class) (\w+)", text))  # a test's helper, say
    for number, line in enumerate(text.splitlines(), start=1):
        stale += [
            f"{shown}:{number}: {name}" for name in _SEE.findall(line) if name not in _modules()
        ]
        stale += [
            f"{shown}:{number}: {name}"
            for name in _ALONE.findall(line)
            if name not in _defined_names() and name not in own
        ]
    return stale


def test_every_reference_to_the_package_resolves() -> None:
    assert [s for path in texts() for s in stale_references(path)] == []


def test_a_stale_reference_is_found() -> None:
    docstring = (
        '"""See ``_report.stats.no_such``, ``judge.base.mean_raw_score``, ``_scoring`` (see _audit),\n'
        "``pytest_rubric._report.stats``, ``_report.stats.mean``, ``~.limits.MAX_NESTING``,\n"
        '``.yaml.construct`` and ``criteria.registry.CONTEXT_KEY``."""\n'
    )
    found = stale_references(PACKAGE / "_guards" / "probe.py", docstring)
    assert sorted(f.split(": ", 1)[1] for f in found) == [
        "_audit",
        "_report.stats.no_such",
        "_scoring",
        "judge.base.mean_raw_score",
    ]


# An issue cited by number, or the design page the project was built from (it lives outside
# the repository): the reader can follow neither.
# The words may wrap across a line break ("issue\n24").
_CITATION = re.compile(
    r"\b[Ii]ssues?\s+#?\d+|\bDESIGN\b|[Dd]esign\s+page|\b[Tt]he\s+design\b|\.\./shared"
    # "the issue", "the scale issue's", "pytest #11783": an issue, by its number or not
    r"|\b[Tt]he\s+(?:\w+\s+)?issues?\b(?!\s+(?:of|in|with)\b)|(?<=[A-Za-z]\s)#\d{4,}\b"
)


def test_nothing_cites_an_issue_number_or_a_design_page_outside_the_repository() -> None:
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    citing = []
    for name in tracked:
        path = ROOT / name
        if path.suffix not in (".py", ".md", ".toml", ".yaml", ".yml", ".cfg", ".ini", "") or (
            not path.is_file()
        ):
            continue
        text = path.read_text(encoding="utf-8")
        for found in _CITATION.finditer(text) if name != "tests/test_docs.py" else ():
            citing.append(f"{name}:{text.count(chr(10), 0, found.start()) + 1}: {found.group()}")
    assert citing == []
