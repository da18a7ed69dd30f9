"""``python -m pytest_rubric merge|import|collect|history|init ...`` (see
:mod:`pytest_rubric._cli.merge`)."""

from __future__ import annotations

import sys

from ._cli.merge import main

if __name__ == "__main__":
    sys.exit(main())
