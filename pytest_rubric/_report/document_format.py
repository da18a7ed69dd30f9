"""What the ``--rubric-json`` writer (``_render.json``) and its reader (``_report.document``) share.

A leaf module, so neither has to import the other to know the format's
version or the error a bad document raises.
"""

from __future__ import annotations

from .._errors import DocumentError

__all__ = ["VERSION", "DocumentError"]

VERSION = 1
