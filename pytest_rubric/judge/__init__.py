"""The LLM judge: what grades judged criteria, behind one narrow interface.

Grading sees only :class:`JudgeRunner` (``schedule`` an answer, wait for its
``result``) and what comes back, a :class:`Judged`; setting it up takes a
:class:`JudgeSpec` (or the hook's :class:`JudgeClient`), :func:`make_client`
and the :class:`JudgeCache`. Behind them:

=================  ===========================================================
``providers``      the registry of providers (endpoint, key and URL
                   variables, wire), ``PROVIDER:MODEL`` parsing, key reading
``base``           the shared words: errors, sampling, replies, usage counts
``http``           the HTTP machinery: deadline, size cap, redirects, retries
``clients``        the wires (OpenAI-compatible, Anthropic), one class each
``cache``          the SQLite reply cache and the one cached call
``cost``           prices, money, the ``--rubric-max-cost`` budget
``transport``      the background event loop, the concurrency bound, calls
``prompts``        the prompts of the three strategies
``replies``        the readers of the judge's replies
``strategies``     ``--rubric-grader``: each prompt paired with its reader
``runner``         scheduling answers, samples and their combination
``batch``          ``--rubric-judge-batch``: the calls sent through a batch API
=================  ===========================================================

The names below are imported on first use: ``providers`` and ``base`` need
no httpx, and ``http`` imports it only for its first request, so an xdist
controller, a run without a judge or one served from the cache never loads it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import JudgeClient, Judged, JudgeError, JudgeStats, Reply, Sampling
    from .cache import CachedCalls, JudgeCache
    from .clients import WIRES, AnthropicClient, OpenAIClient, make_client
    from .http import HTTPClient
    from .providers import PROVIDERS, JudgeSpec, Provider, known_keys, read_key
    from .runner import JudgeRunner
    from .strategies import STRATEGIES, Strategy

_LAZY = {
    "AnthropicClient": ".clients",
    "CachedCalls": ".cache",
    "HTTPClient": ".http",
    "JudgeCache": ".cache",
    "JudgeClient": ".base",
    "JudgeError": ".base",
    "JudgeRunner": ".runner",
    "JudgeSpec": ".providers",
    "JudgeStats": ".base",
    "Judged": ".base",
    "OpenAIClient": ".clients",
    "PROVIDERS": ".providers",
    "Provider": ".providers",
    "Reply": ".base",
    "STRATEGIES": ".strategies",
    "Sampling": ".base",
    "Strategy": ".strategies",
    "WIRES": ".clients",
    "known_keys": ".providers",
    "make_client": ".clients",
    "read_key": ".providers",
}

__all__ = [
    "PROVIDERS",
    "STRATEGIES",
    "WIRES",
    "AnthropicClient",
    "CachedCalls",
    "HTTPClient",
    "JudgeCache",
    "JudgeClient",
    "JudgeError",
    "JudgeRunner",
    "JudgeSpec",
    "JudgeStats",
    "Judged",
    "OpenAIClient",
    "Provider",
    "Reply",
    "Sampling",
    "Strategy",
    "known_keys",
    "make_client",
    "read_key",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_rubric.judge' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
