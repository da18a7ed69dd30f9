"""API keys held so that they cannot leak into output, reports, caches or exception text."""

from __future__ import annotations

__all__ = ["Secret", "redact"]

_MASK = "***"


class Secret:
    """A key from the environment. Its ``repr`` and ``str`` never show the value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The value, for the one place that sends it: an HTTP header."""
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __reduce__(self) -> tuple[object, ...]:  # never pickled with its value (xdist, caches)
        raise TypeError("a Secret cannot be pickled")


def redact(text: str, *secrets: Secret | None) -> str:
    """``text`` with every secret's value replaced by ``***``."""
    for secret in secrets:
        if secret is not None and len(secret.reveal()) >= 4:
            text = text.replace(secret.reveal(), _MASK)
    return text
