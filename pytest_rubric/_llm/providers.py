"""``PROVIDER:MODEL`` and its key, read from :data:`~pytest_rubric._defaults.PROVIDERS` (no
httpx import: an xdist controller checks ``--rubric-judge`` and the key with this alone).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from .._defaults import PROVIDERS, Provider
from .._guards.secrets import Secret, public_url


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """``PROVIDER:MODEL`` plus where to reach it."""

    provider: str
    model: str
    url: str

    @classmethod
    def parse(
        cls, text: str, *, url: str | None = None, environ: Mapping[str, str] | None = None
    ) -> ModelSpec:
        environ = os.environ if environ is None else environ
        name, sep, model = text.partition(":")
        entry = PROVIDERS.get(name)
        if not sep or not model or entry is None:
            raise ValueError(
                f"{text!r} is not PROVIDER:MODEL; write for example openai:gpt-4o-mini or "
                f"anthropic:claude-3-5-haiku-latest (providers: {', '.join(PROVIDERS)})"
            )
        base = url or environ.get(entry.url_variable) or entry.url
        if "@" in urlsplit(base).netloc:  # the HTTP client would send it instead of the key
            raise ValueError(
                f"the URL {public_url(base)} is given with a user and password before its host; "
                f"keys come from the environment only: drop them from the URL and set "
                f"{entry.key_variable}"
            )
        return cls(provider=name, model=model, url=base.rstrip("/"))

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def public_url(self) -> str:
        """:attr:`url` as every output shows it and the cache stores it: no userinfo, no query
        string (either may hold a gateway's token)."""
        return public_url(self.url)

    def endpoint(self, path: str) -> str:
        """:attr:`url` with ``path`` added to its path, before any query string (a gateway's
        ``?api-version=``), which is sent as given."""
        base, mark, query = self.url.partition("?")
        return f"{base.rstrip('/')}{path}{mark}{query}"

    @property
    def entry(self) -> Provider:
        return PROVIDERS[self.provider]


def read_key(
    spec: ModelSpec, environ: Mapping[str, str] | None = None, *, require_key: bool = True
) -> Secret | None:
    """``spec``'s API key, from the environment only; :class:`ValueError` when the provider's
    own endpoint would be called without one (a local endpoint may need none)."""
    environ = os.environ if environ is None else environ
    if raw := environ.get(spec.entry.key_variable):
        return Secret(raw)
    if spec.url == spec.entry.url and require_key:
        raise ValueError(
            f"{spec.name} needs an API key: set {spec.entry.key_variable} in the "
            "environment (keys are never read from flags or files)"
        )
    return None
