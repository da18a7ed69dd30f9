"""The LLM judge: what grades judged criteria, behind one narrow interface.

Grading sees only :class:`JudgeRunner` (``schedule`` a :class:`JudgeRequest`,
wait for its ``result``) and what comes back, a :class:`Judged`. The judge's
own modules:

=================  ===========================================================
``requests``       what one piece of judge work is (``JudgeRequest``) and its
                   key (``JudgeKey``)
``prompts``        the prompts of the three strategies
``replies``        the readers of the judge's replies
``strategies``     ``--rubric-grader``: each prompt paired with its reader
``transport``      the background event loop, the concurrency bound, calls
``runner``         scheduling answers, samples and their combination
``panel``          several judges, one grade per criterion
``evidence``       a MET's quotes checked against the answer
=================  ===========================================================

Reaching a model over HTTP (providers, clients, the reply cache, costs, batch
APIs) is ``pytest_rubric._llm``'s, shared with the model under test; the
names below that live there are kept here, imported on first use, for code
that imported them from ``pytest_rubric.judge``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._defaults import PROVIDERS, Provider
    from .._guards.secrets import known_keys
    from .._llm.base import JudgeClient, Judged, JudgeError, JudgeStats, Reply, Sampling
    from .._llm.cache import CachedCalls, JudgeCache
    from .._llm.clients import WIRES, AnthropicClient, OpenAIClient, make_client
    from .._llm.http import HTTPClient
    from .._llm.providers import JudgeSpec, read_key
    from .runner import JudgeRunner
    from .strategies import STRATEGIES, Strategy

_LAZY = {
    "AnthropicClient": ".._llm.clients",
    "CachedCalls": ".._llm.cache",
    "HTTPClient": ".._llm.http",
    "JudgeCache": ".._llm.cache",
    "JudgeClient": ".._llm.base",
    "JudgeError": ".._llm.base",
    "JudgeRunner": ".runner",
    "JudgeSpec": ".._llm.providers",
    "JudgeStats": ".._llm.base",
    "Judged": ".._llm.base",
    "OpenAIClient": ".._llm.clients",
    "PROVIDERS": ".._defaults",
    "Provider": ".._defaults",
    "Reply": ".._llm.base",
    "STRATEGIES": ".strategies",
    "Sampling": ".._llm.base",
    "Strategy": ".strategies",
    "WIRES": ".._llm.clients",
    "known_keys": ".._guards.secrets",
    "make_client": ".._llm.clients",
    "read_key": ".._llm.providers",
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
