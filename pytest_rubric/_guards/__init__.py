"""The guards at the edges: user code (``calls``), untrusted patterns and JSON Schemas
(``engines``, ``schemas``), files read within limits (``limits``, ``yaml``), and text
leaving the process (``secrets``, ``outgoing``); they import only ``_errors`` and
``_defaults`` of the package."""
