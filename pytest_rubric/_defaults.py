"""The plugin's words and defaults: modes, default limits, the retry policy, ``NAME=VALUE``,
``repeat:`` and ``pass_when:``.

Standard library only, and no other module of the package: everything may import it.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# --rubric-grader: how the judged criteria are asked, by import path (a judge.strategies.Strategy),
# so the flag's choices are known before any of the judge is imported.
GRADERS: dict[str, str] = {
    "per-criterion": "pytest_rubric.judge.strategies:PER_CRITERION",
    "one-shot": "pytest_rubric.judge.strategies:ONE_SHOT",
    "holistic": "pytest_rubric.judge.strategies:HOLISTIC",
}


@dataclass(frozen=True, slots=True)
class Provider:
    """Where one provider of ``--rubric-judge PROVIDER:MODEL`` answers and how it is called."""

    url: str  # the provider's own endpoint, where a key is required
    key_variable: str  # the variable that holds the key (every output is redacted of it)
    url_variable: str  # the environment variable that moves the endpoint
    wire: str  # the protocol it speaks: a key of _llm.clients.WIRES
    batch: bool = False  # whether --rubric-judge-batch speaks its batch API (_llm.batch)


# The providers, one entry each: everything else reads this table (here, at the bottom of the
# package, because the redaction in _guards.secrets needs the key variables).
PROVIDERS: dict[str, Provider] = {
    "openai": Provider(
        url="https://api.openai.com/v1",
        key_variable="OPENAI_API_KEY",
        url_variable="OPENAI_BASE_URL",
        wire="openai",
        batch=True,
    ),
    "anthropic": Provider(
        url="https://api.anthropic.com",
        key_variable="ANTHROPIC_API_KEY",
        url_variable="ANTHROPIC_BASE_URL",
        wire="anthropic",
        batch=True,
    ),
}
CACHE_MODES = ("use", "refresh", "off", "replay")
# --rubric-response-cache: the application under test is called unless a run asks otherwise.
RESPONSE_CACHE_MODES = ("off", "use", "replay")
EVIDENCE_MODES = ("check", "require", "off")  # --rubric-judge-evidence, see judge.evidence
SUMMARY_MODES = ("auto", "on", "off")  # ini rubric_summary
# --rubric-judge-probe-kinds: what the probed criteria are judged again on (see _session.auditing).
PROBE_KINDS = ("tone", "length", "position")
DEFAULT_MIN_SCORE = 0.8  # the pass mark of cases that set none (ini rubric_min_score)
DEFAULT_CALL_TIMEOUT = 60.0  # seconds a callable or target may run (ini rubric_call_timeout)
# Seconds a check whose cost can grow faster than the answer (a JSON validation, evidence
# matching) may run before its criterion is ERROR (ini rubric_check_timeout).
DEFAULT_CHECK_TIMEOUT = 5.0
# At most a day: a thread's wait past threading.TIMEOUT_MAX would overflow.
MAX_CALL_TIMEOUT = 86_400.0
# What a failing item shows of the question and the response (ini rubric_show_response).
SHOW_QUESTION = 300
SHOW_RESPONSE = 1_000

SET_A_JUDGE = (
    "set --rubric-judge PROVIDER:MODEL (or ini rubric_judge, or the RUBRIC_JUDGE variable)"
)
"""How to configure a judge: the end of every message about a missing one."""
NO_KEY = "no key for judge "
"""How the reason of a criterion SKIPPED for a judge set without its key begins (a keyless
run's; ``merge`` tells such shards by it)."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard a judge tries before a criterion becomes ERROR."""

    timeout: float = 60.0
    attempts: int = 4  # per call, the first one included
    backoff: float = 0.5  # first delay; doubles each retry, with full jitter
    max_backoff: float = 20.0
    max_retry_after: float = 30.0  # a longer Retry-After is capped to this
    budget: int = 200  # retries per session, across all calls


def is_rubric_file(path: Path, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns)


def first_data_file(directory: Path, patterns: Sequence[str]) -> Path | None:
    """The first YAML or JSON file under ``directory`` (in name order) when no file there
    matches ``patterns``; None when one does, or there is none."""
    first: Path | None = None
    for root, folders, files in os.walk(directory):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for name in sorted(files):
            if is_rubric_file(Path(name), tuple(patterns)):
                return None
            if first is None and name.endswith((".yaml", ".yml", ".json")):
                first = Path(root) / name
    return first


def named(text: str) -> tuple[str | None, str]:
    """``NAME=VALUE`` as ``(NAME, VALUE)``; a plain ``VALUE`` as ``(None, VALUE)``. A name holds
    no ``:``, so ``openai:m=1`` is a value."""
    name, sep, value = text.partition("=")
    if sep and name.strip() and ":" not in name:
        return name.strip(), value.strip()
    return None, text.strip()


def subject_named(text: str, *, model: bool = False) -> tuple[str, str]:
    """``[NAME=]VALUE`` as ``(subject, VALUE)``: the subject is NAME, else what VALUE names: a
    target's function, after its last ``:`` (``app.bot:answer``: ``answer``); with ``model``,
    a ``PROVIDER:MODEL``'s model, after its first (``openai:llama3.1:8b``: ``llama3.1:8b``)."""
    name, value = named(text)
    # A model's name may hold ':' itself (Ollama's tags, fine-tuned models); a module never does.
    parts = value.split(":", 1) if model else value.rsplit(":", 1)
    return name or parts[-1], value


def subject_clash(flag: str, texts: Iterable[str], *, model: bool = False) -> str | None:
    """Why the ``[NAME=]VALUE`` subjects ``texts`` given with ``flag`` (models, with ``model``)
    clash, or None: the same value, or two subjects of one name (nothing given is ever dropped
    in silence)."""
    values: set[str] = set()
    names: dict[str, str] = {}
    for text in texts:
        subject, value = subject_named(text, model=model)
        if value in values:
            return f"{flag} {value} is given twice; give each subject once"
        if subject in names:
            return (
                f"{flag}: {names[subject]} and {text} are both subject {subject!r}; name one of "
                f"them, {flag} OTHER={value}"
            )
        values.add(value)
        names[subject] = text
    return None


# ``repeat:`` and ``pass_when:`` as written: how many samples an item gets, and the rule they
# pass by (``_grade.scoring.item_passes``): ``mean`` (the default; the mean sample score reaches
# ``min_score``, no ``required`` criterion went the wrong way), ``all`` (pass^k), ``any``
# (pass@k), or a number X in (0, 1] (the share of samples that pass alone). An ERROR on a
# substance criterion makes the item an ERROR whatever the rule.
MAX_REPEAT = 1000
PassWhen = str | float
_PASS_HINT = "write mean, all, any, or a number X in (0, 1] (the share of samples that must pass)"


def _shown(value: Any) -> str:
    return repr(value) if len(repr(value)) <= 20 else repr(value)[:19] + "…"


def parse_pass_when(value: Any) -> PassWhen:
    """``value`` as a pass rule; ValueError, with what to write instead, for anything else."""
    if isinstance(value, str):
        if value in ("mean", "all", "any"):
            return value
        with contextlib.suppress(ValueError):  # else the str is refused just below
            value = float(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{value!r} is not a pass rule; {_PASS_HINT}")
    if not 0 < value <= 1:
        raise ValueError(f"{_shown(value)} is outside (0, 1]; {_PASS_HINT}")
    return float(value)


def parse_repeat(value: Any) -> int:
    """``value`` as a number of responses per item; ValueError, saying what to write, if not."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_REPEAT:
        raise ValueError(
            f"{_shown(value)} is not a number of responses per item; write a whole number "
            f"from 1 to {MAX_REPEAT}, e.g. `repeat: 5`"
        )
    return value


class ResponseTally:
    """How many answers this process asked the application for (a call that failed counts:
    the application was called), and how many came from the response cache instead
    (``--rubric-response-cache``): the summary's ``responses: N of M replayed`` line. Counted
    from any thread (``repeat`` asks concurrently)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.asked = 0
        self.replayed = 0

    def add(self, asked: int, replayed: int) -> None:
        """Count answers: one of this process's, or another process's (an xdist worker's)."""
        with self._lock:
            self.asked += asked
            self.replayed += replayed
