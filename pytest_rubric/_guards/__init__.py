"""The guards at the edges: user code (``calls``), untrusted patterns (``engines``) and
JSON Schemas (``schemas``: checked at load, run within a time bound, no retrieval,
ever), files read within limits (``limits``, ``yaml``), and text leaving the
process (``secrets``, ``outgoing``). They import nothing else of the package but
``_errors`` and ``_defaults``."""
