"""What names a judge and counts its use, without the HTTP machinery (no httpx import).

An xdist controller never calls the judge, its workers do; it only checks
``--rubric-judge`` and the key up front, and adds up the workers' usage. This
module is all it needs, so it starts without importing httpx.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from .._secrets import Secret

__all__ = ["KEY_VARIABLES", "PROVIDERS", "JudgeSpec", "JudgeStats", "known_keys", "read_key"]

PROVIDERS = ("openai", "anthropic")
_DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
_URL_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
KEY_VARIABLES = tuple(_KEY_ENV.values())


def known_keys(environ: Mapping[str, str] | None = None) -> list[Secret]:
    """The providers' API keys set in the environment: what every output is redacted of."""
    environ = os.environ if environ is None else environ
    return [Secret(environ[v]) for v in KEY_VARIABLES if environ.get(v)]


@dataclass(frozen=True, slots=True)
class JudgeSpec:
    """``PROVIDER:MODEL`` plus where to reach it."""

    provider: str
    model: str
    url: str

    @classmethod
    def parse(
        cls, text: str, *, url: str | None = None, environ: Mapping[str, str] | None = None
    ) -> JudgeSpec:
        environ = os.environ if environ is None else environ
        provider, sep, model = text.partition(":")
        if not sep or not model or provider not in PROVIDERS:
            raise ValueError(
                f"{text!r} is not PROVIDER:MODEL; write for example openai:gpt-4o-mini or "
                f"anthropic:claude-3-5-haiku-latest (providers: {', '.join(PROVIDERS)})"
            )
        base = url or environ.get(_URL_ENV[provider]) or _DEFAULT_URLS[provider]
        return cls(provider=provider, model=model, url=base.rstrip("/"))

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def key_variable(self) -> str:
        return _KEY_ENV[self.provider]

    @property
    def is_default_url(self) -> bool:
        return self.url == _DEFAULT_URLS[self.provider]


@dataclass(slots=True)
class JudgeStats:
    """Usage of one judge over a session (updated from the judge's event loop only)."""

    calls: int = 0
    retries: int = 0
    errors: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    fallbacks: list[str] = field(default_factory=list)

    def line(self, name: str) -> str:
        text = (
            f"judge {name}: {self.calls} calls, {self.retries} retries, {self.errors} errors, "
            f"tokens {self.tokens_in} in / {self.tokens_out} out"
        )
        if self.cache_hits or self.cache_misses:
            text += f", cache {self.cache_hits} hits / {self.cache_misses} misses"
        if self.fallbacks:
            text += f"; output mode fell back: {', '.join(dict.fromkeys(self.fallbacks))}"
        return text


def read_key(
    spec: JudgeSpec, environ: Mapping[str, str] | None = None, *, require_key: bool = True
) -> Secret | None:
    """``spec``'s API key, from the environment only.

    Raises :class:`ValueError` when the provider's own endpoint would be
    called without one (a local endpoint may need none).
    """
    environ = os.environ if environ is None else environ
    raw = environ.get(spec.key_variable, "")
    key = Secret(raw) if raw else None
    if key is None and spec.is_default_url and require_key:
        raise ValueError(
            f"{spec.name} needs an API key: set {spec.key_variable} in the "
            "environment (keys are never read from flags or files)"
        )
    return key
