"""The four guards at the edges: user code (``calls``), untrusted patterns and schemas
(``engines``), files read within limits (``limits``, ``yaml``), and text leaving the process
(``secrets``, ``outgoing``). They import nothing else of the package but ``_errors``."""
