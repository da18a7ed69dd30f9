"""Ready to release: ``make dist`` builds the sdist and the
wheel from a fresh copy of the project and ``twine check`` passes on both; the wheel,
installed into a fresh virtual environment, runs ``python -m pytest_rubric init`` and a
rubric run.

The fresh environment (made without a pip of its own) gets the package from the wheel alone,
with ``pip --python <it> install --no-index --no-deps``. Its dependencies (pytest, pydantic, httpx, ...) cannot be downloaded in a test
that makes no network call, so a ``.pth`` file puts this environment's site-packages after
its own: only as a folder on the path, so that the editable install of the checkout there
(a ``.pth`` hook of its own, not followed) is never what ``import pytest_rubric`` finds. The
test checks that the import comes from the wheel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(argv: list[str], cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, f"{argv}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def fresh_copy(destination: Path) -> None:
    """What a fresh clone of the working tree holds: the files git tracks or would add."""
    listed = run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], ROOT)
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


@pytest.mark.slow
def test_make_dist_builds_checked_files_whose_wheel_runs_in_a_fresh_environment(
    tmp_path: Path,
) -> None:
    if shutil.which("make") is None or shutil.which("git") is None:
        pytest.skip("needs make and git")
    clone = tmp_path / "clone"
    fresh_copy(clone)
    # The Makefile's own recipe, with this environment as its interpreter (-o: the venv it
    # would create is taken as made).
    out = run(["make", "-o", ".venv/.installed-stamp", "dist", f"PY={sys.executable}"], clone)
    built = sorted(p.name for p in (clone / "dist").iterdir())
    assert built == ["pytest_rubric-0.1.0-py3-none-any.whl", "pytest_rubric-0.1.0.tar.gz"]
    assert out.count("PASSED") == 2, out  # twine check, on each

    venv = tmp_path / "fresh"
    # No pip of its own (bootstrapping one is most of this test's CPU): this environment's pip
    # installs into it with --python.
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path)
    python = venv / "bin" / "python"
    purelib = run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], tmp_path
    )
    (Path(purelib.strip()) / "_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    wheel = clone / "dist" / built[0]
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    run([*pip, "install", "--quiet", "--no-index", "--no-deps", str(wheel)], tmp_path)
    where = run(
        [str(python), "-c", "import pytest_rubric; print(pytest_rubric.__file__)"], tmp_path
    )
    assert where.startswith(str(venv)), where

    project = tmp_path / "project"
    project.mkdir()
    out = run([str(python), "-m", "pytest_rubric", "init", "."], project)
    assert "wrote evals/example.rubric.yaml" in out
    (project / "pytest.ini").write_text("[pytest]\nrubric_dirs = evals\n")
    out = run([str(python), "-m", "pytest", "-q"], project)
    assert "2 passed" in out, out


def test_the_documented_release_workflow_is_the_repository_s() -> None:
    page = (ROOT / "docs/development/releasing.md").read_text(encoding="utf-8")
    block = page.split("```yaml\n", 1)[1].split("```", 1)[0]
    workflow = (ROOT / ".github/workflows/release.yml").read_text(encoding="utf-8")
    assert block == workflow
    assert "id-token: write" in workflow and "run: make dist" in workflow
    assert "pip install pytest-rubric" in page
