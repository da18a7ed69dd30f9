"""The plugin is loaded by every pytest run in the environment: it must stay cheap where no
rubric is used, and its public names must all resolve."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_rubric

HEAVY = (
    "pydantic",
    "httpx",
    "yaml",
    "re2",
    "rapidfuzz",
    "regex",
    "jsonschema",
    "opentelemetry",  # --rubric-otel only
    "numpy",
    "sqlite3",
)
# What a session without rubrics must not import (pytest itself may import sqlite3).
LIBRARIES = HEAVY[:-1]


def test_loading_the_plugin_imports_none_of_the_heavy_dependencies() -> None:
    probe = (
        f"import sys, pytest_rubric.plugin; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_session_without_rubrics_imports_none_of_them_either(tmp_path: object) -> None:
    """What the session imports with the plugin is what it imports without it (other plugins
    may import some: pytest-randomly reseeds numpy's generator, so it imports numpy)."""

    def imported(*args: str) -> str:
        probe = (
            "import sys, pytest; "
            f"code = pytest.main(['-q', '-p', 'no:cacheprovider', '--co', *{args!r}], plugins=[]); "
            f"print(sorted(m for m in {LIBRARIES!r} if m in sys.modules))"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe],
            capture_output=True,
            text=True,
            check=False,
            cwd=str(tmp_path),
        )
        return done.stdout.strip().splitlines()[-1]

    assert imported() == imported("-p", "no:rubric")


def test_the_public_surface_is_at_most_twelve_names_with_no_old_ones() -> None:
    import pytest_rubric.criteria
    from pytest_rubric.criteria.registry import criterion_types

    assert len(pytest_rubric.__all__) <= 12
    for name in pytest_rubric.__all__:
        assert getattr(pytest_rubric, name) is not None, name
    assert set(pytest_rubric.__all__) <= set(dir(pytest_rubric))
    for model in criterion_types().values():
        assert getattr(pytest_rubric.criteria, model.__name__) is model
    with pytest.raises(AttributeError):
        pytest_rubric.Judge  # noqa: B018  # the deprecated alias went before 1.0
    assert not hasattr(pytest_rubric.CriterionResult, "samples")


def test_every_public_error_is_a_rubric_error() -> None:
    errors = [getattr(pytest_rubric, n) for n in pytest_rubric.__all__ if n.endswith("Error")]
    assert {e.__name__ for e in errors} == {
        "RubricAssertionError",
        "RubricError",
        "RubricEvaluationError",
        "RubricLoadError",
    }
    for error in errors:
        assert issubclass(error, pytest_rubric.RubricError), error
        assert error.__module__ == "pytest_rubric", error
    assert issubclass(pytest_rubric.RubricAssertionError, AssertionError)


def _imports(root: Path) -> dict[str, set[str]]:
    """Each module of the package and the package modules it imports, anywhere in its
    text: at the top, inside functions and under ``TYPE_CHECKING`` alike."""
    modules = {}
    for path in root.rglob("*.py"):
        parts = path.with_suffix("").relative_to(root.parent).parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
                if not node.level:
                    target = node.module or ""
                subs = {f"{target}.{a.name}" for a in node.names} & modules.keys()
                graph[name] |= subs
                if len(subs) < len(node.names) and target in modules:
                    graph[name].add(target)
            elif isinstance(node, ast.Import):
                graph[name] |= {a.name for a in node.names} & modules.keys()
        graph[name].discard(name)
    return graph


def test_the_package_has_no_import_cycle() -> None:
    graph = _imports(Path(pytest_rubric_path()).parent)
    # The package's __init__ names every public module lazily; it is nobody's dependency.
    graph = {k: v - {"pytest_rubric"} for k, v in graph.items()}
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            raise AssertionError("import cycle: " + " -> ".join([*path[path.index(name) :], name]))
        if name in done:
            return
        for target in sorted(graph[name]):
            visit(target, [*path, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])


def pytest_rubric_path() -> str:
    import pytest_rubric

    return str(pytest_rubric.__file__)
