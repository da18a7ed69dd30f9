"""Root conftest: the test suite drives the plugin end to end through pytester."""

# pytester's in-process runs drop the modules a run imported; importing
# hypothesis here once keeps every inner run from re-importing it (about 1 s each).
import hypothesis  # noqa: F401

pytest_plugins = ["pytester"]
