"""``python -m pytest_rubric merge A.json B.json ...`` (see :mod:`pytest_rubric._cli.merge`),
``python -m pytest_rubric import FORMAT ...`` (see :mod:`pytest_rubric.importers`) and
``python -m pytest_rubric collect ...`` (see :mod:`pytest_rubric._cli.freeze`) and
``python -m pytest_rubric init [DIR]`` (see :mod:`pytest_rubric._cli.init`)."""

from __future__ import annotations

import sys

from ._cli.merge import main

if __name__ == "__main__":
    sys.exit(main())
