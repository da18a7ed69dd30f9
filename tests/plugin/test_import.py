"""The plugin is loaded by every pytest run in the environment: it must stay cheap where no
rubric is used, and its public names must all resolve."""

from __future__ import annotations

import ast
import os
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


def test_a_session_without_rubrics_imports_none_of_them_either(tmp_path: object) -> None:
    """What the session imports with the plugin is what it imports without it (other plugins
    may import some: pytest-randomly reseeds numpy's generator, so it imports numpy)."""

    def imported(*args: str) -> str:
        probe = (
            "import sys, pytest; "
            f"code = pytest.main(['-q', '-p', 'no:cacheprovider', '--co', *{args!r}], plugins=[]); "
            f"print(sorted(m for m in {LIBRARIES!r} if m in sys.modules))"
        )
        return _printed(probe, Path(str(tmp_path)))[-1]

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
    # The style probe's rewrite, as the judge audit names it: there, not one of the twelve.
    assert pytest_rubric.restyle("I think it is 42.", to="confident").endswith("It is 42.")
    assert "restyle" not in pytest_rubric.__all__


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


# What loading the plugin may import of the package: the option table and what tells a rubric
# file or item. The session, its settings, the readers of option values, the results, the output
# writers and every heavy dependency wait: an installed plugin's modules load through pytest's
# rewrite hook, which without a bytecode cache parses and compiles each on every run.
PLUGIN_MODULES = {
    "pytest_rubric",
    "pytest_rubric.plugin",
    "pytest_rubric._config",
    "pytest_rubric._config.settings",  # the options table, and its registration with pytest
    "pytest_rubric._config.outputs",  # the outputs' registry, which makes four of its flags
    "pytest_rubric._defaults",
    "pytest_rubric._session",
    "pytest_rubric._session.items",
    "pytest_rubric._session.started",
    "pytest_rubric._session.xdist",  # the Role, which tells whether the run is xdist's
}
# A session also registers the plugin's hook specifications (pytest_addhooks): no imports.
SESSION_START = PLUGIN_MODULES | {"pytest_rubric.hookspec"}


def test_loading_the_plugin_imports_its_option_table_and_no_heavy_dependency() -> None:
    """One fresh interpreter answers both: no module of ``HEAVY``, nothing of the package
    past ``PLUGIN_MODULES``."""
    probe = (
        "import sys, pytest_rubric.plugin; "
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules)); "
        "print(sorted(m for m in sys.modules if m.startswith('pytest_rubric')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    heavy, package = done.stdout.strip().splitlines()
    assert heavy == "[]"
    assert set(ast.literal_eval(package)) <= PLUGIN_MODULES


UNIT_PROJECT = {
    "pytest.ini": "[pytest]\nrubric_dirs = evals\n",
    "app/__init__.py": "def add(a, b):\n    return a + b\n",
    "tests/test_app.py": "from app import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    "evals/qa.rubric.yaml": (
        "cases:\n  - id: q1\n    question: Q?\n    response: It is fine.\n"
        "    criteria: [{id: a, type: any_of, any_of: [fine]}]\n"
    ),
}


def _modules_after(tmp_path: Path, *runs: list[str]) -> list[tuple[int, list[str]]]:
    """Each run's exit code and what the interpreter has imported after it: the runs one after
    the other in one fresh interpreter, in ``tmp_path`` laid out as ``UNIT_PROJECT``."""
    for name, text in UNIT_PROJECT.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    # Each run's line starts with a mark, among the lines the runs print.
    probe = "import sys, pytest\n" + "".join(
        f"code = pytest.main(['-q', '-p', 'no:cacheprovider', *{args!r}])\n"
        "print('->', int(code), sorted(m for m in sys.modules if m.startswith('pytest_rubric') "
        f"or m.split('.')[0] in {LIBRARIES!r}))\n"
        for args in runs
    )
    printed = _printed(probe, tmp_path, PYTHONPATH=str(tmp_path))
    found = [line.split(" ", 2)[1:] for line in printed if line.startswith("-> ")]
    assert len(found) == len(runs), printed
    return [(int(code), ast.literal_eval(modules)) for code, modules in found]


def _printed(probe: str, cwd: Path, **env: str) -> list[str]:
    """The lines ``python -c probe`` prints in ``cwd``."""
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=False,
        cwd=str(cwd),
        env={**os.environ, **env},
    )
    return done.stdout.strip().splitlines()


def test_a_unit_test_run_in_a_project_with_rubric_dirs_starts_no_session(tmp_path: Path) -> None:
    """Naming the unit tests, the ini's rubric_dirs do not join the run: nothing of the
    session is imported, so the plugin costs that run its option table only. The same
    project run whole next, in the same interpreter, starts the session and grades."""
    (unit_code, unit), (whole_code, whole) = _modules_after(tmp_path, ["tests"], [])
    assert unit_code == 0
    assert set(unit) <= SESSION_START
    assert whole_code == 0
    assert "pytest_rubric._session.session" in whole
    assert "pytest_rubric._session.collect" in whole


def test_a_rubric_file_named_beside_the_unit_tests_starts_it_on_collection(
    tmp_path: Path,
) -> None:
    ((code, modules),) = _modules_after(tmp_path, ["tests", "evals/qa.rubric.yaml", "-rA"])
    assert code == 0
    assert "pytest_rubric._session.collect" in modules
