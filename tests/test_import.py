"""The plugin is loaded by every pytest run in the environment: it must stay cheap where no
rubric is used, and its public names must all resolve."""

from __future__ import annotations

import subprocess
import sys

import pytest_rubric

HEAVY = ("pydantic", "httpx", "yaml", "re2", "rapidfuzz", "sqlite3")


def test_loading_the_plugin_imports_none_of_the_heavy_dependencies() -> None:
    probe = (
        f"import sys, pytest_rubric.plugin; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_session_without_rubrics_imports_none_of_them_either(tmp_path: object) -> None:
    probe = (
        "import sys, pytest; "
        "code = pytest.main(['-q', '-p', 'no:cacheprovider', '--co'], plugins=[]); "
        f"print(sorted(m for m in {HEAVY[:5]!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=False,
        cwd=str(tmp_path),
    )
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout


def test_every_public_name_resolves() -> None:
    for name in pytest_rubric.__all__:
        assert getattr(pytest_rubric, name) is not None
    assert set(pytest_rubric.__all__) <= set(dir(pytest_rubric))


def test_every_public_name_resolves_and_every_error_is_a_rubric_error() -> None:
    import pytest_rubric

    for name in pytest_rubric.__all__:
        assert getattr(pytest_rubric, name) is not None, name
    errors = [getattr(pytest_rubric, n) for n in pytest_rubric.__all__ if n.endswith("Error")]
    assert {e.__name__ for e in errors} == {
        "DocumentError",
        "JudgeError",
        "RubricAssertionError",
        "RubricError",
        "RubricEvaluationError",
        "RubricLoadError",
    }
    for error in errors:
        assert issubclass(error, pytest_rubric.RubricError), error
        assert error.__module__ == "pytest_rubric", error
    assert issubclass(pytest_rubric.RubricAssertionError, AssertionError)
    assert "Callable" not in pytest_rubric.__all__  # would shadow typing's in a star import
