"""Root conftest: the test suite drives the plugin end to end through pytester."""

# pytester's in-process runs drop the modules a run imported. Importing these
# here keeps them for every run:
# - hypothesis, so no run re-imports it (about 1 s each);
# - numpy where installed, whose C core cannot be loaded twice in one process;
# - what httpx imports lazily on its first request (httpcore, h11, anyio's
#   asyncio backend): a run that re-imported httpcore would raise its
#   exceptions as classes httpx no longer maps to its own;
# - every module of the plugin, subpackages included, which imports its heavy parts only
#   on first use: a run that re-imported them would rebuild the pydantic models, and
#   rewrite and compile their asserts, each time (half of an in-process run's time).
import contextlib
import importlib
import importlib.metadata
import os
import pkgutil
import sys
import tempfile

# The suite starts dozens of fresh interpreters (xdist workers, its own included, and
# `python -m` runs), each of which imports pytest and the plugin. Where the environment
# says PYTHONDONTWRITEBYTECODE (as this project's machines do), each would compile them
# from source again: about 0.3 s of CPU apiece, a sixth of the suite's. The processes
# started from here keep their bytecode in one folder under the temporary directory instead
# (never beside the sources), and reuse it. A prefix set by the caller is left alone.
# This process does the same, before the imports below: the plugin's modules, rewritten for
# their asserts, are compiled from source otherwise (about 0.6 CPU-seconds a run of the
# suite, in the process that starts the xdist workers).
if sys.flags.dont_write_bytecode and not os.environ.get("PYTHONPYCACHEPREFIX"):
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    _user = os.getuid() if hasattr(os, "getuid") else "user"
    os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(
        tempfile.gettempdir(), f"pytest-rubric-pycache-{_user}"
    )
    sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]
    sys.dont_write_bytecode = False

import anyio._backends._asyncio  # noqa: F401
import certifi  # noqa: F401
import h11  # noqa: F401
import httpcore  # noqa: F401
import hypothesis  # noqa: F401

# numpy is not a dependency (the statistics are closed forms now): kept only where installed.
with contextlib.suppress(ImportError):
    import numpy  # noqa: F401

import pytest_rubric

for _module in pkgutil.walk_packages(pytest_rubric.__path__, "pytest_rubric."):
    if not _module.name.endswith("__main__"):
        importlib.import_module(_module.name)

pytest_plugins = ["pytester"]


# Each in-process run (pytester.runpytest) loads the environment's plugins again, and pytest,
# pluggy and pytest-metadata read the distributions' metadata for it: each METADATA parsed as
# an e-mail message, each entry_points.txt and RECORD parsed again (RECORD to mark the plugins'
# modules for assertion rewriting), every time: about a quarter of a small in-process run's
# CPU. Nothing is installed while the suite runs, so this process reads each distribution's
# metadata, entry points and files once. The sessions the suite starts in fresh interpreters
# are left as they are. RUBRIC_SUITE_METADATA=fresh reads every time, to measure it
# (bench/README.md, bench_suite.py).
def _read_once(name: str) -> property:
    read = vars(importlib.metadata.Distribution)[name].fget
    done: dict[str, object] = {}

    def once(self: importlib.metadata.PathDistribution) -> object:
        where = str(self._path)  # the distribution's folder: one set of files
        if where not in done:
            done[where] = read(self)
        return done[where]

    return property(once)


if os.environ.get("RUBRIC_SUITE_METADATA") != "fresh":
    for _name in ("metadata", "entry_points", "files"):
        setattr(importlib.metadata.PathDistribution, _name, _read_once(_name))
