"""Which run wrote a report: versions, when, which commit, which judge, what the caches served.

:class:`RunInfo` is the JSON document's ``run``; ``merge`` combines the shards'
(:func:`merged`). The commit is read from the files git keeps (:func:`git_commit`): no git
binary, nothing run, None outside a checkout.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from .._guards.secrets import public_url

_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1, or a SHA-256 repository's
_SHORT_SHA = 12  # as the header shows a commit
# A symbolic ref may name another; git itself follows a few levels.
_REF_DEPTH = 5
# HEAD, a loose ref and a .git file are a line each; more is not git's.
_MAX_REF_FILE = 4096


@dataclass(frozen=True, slots=True)
class RunJudge:
    """One judge of the run. A user's own judge (``pytest_rubric_make_judge``) has its name
    only: provider, model and url are None. The url never carries userinfo or a query
    string, however it was given."""

    name: str
    provider: str | None = None
    model: str | None = None
    url: str | None = None

    def __post_init__(self) -> None:
        if self.url is not None:
            object.__setattr__(self, "url", public_url(self.url))

    @property
    def shown(self) -> str:
        """``openai:gpt-4o-mini at https://api.openai.com/v1``, or a custom judge's name."""
        return self.name if self.url is None else f"{self.name} at {self.url}"


@dataclass(frozen=True, slots=True)
class RunInfo:
    """The JSON document's ``run`` (its fields: ``_report.document.RunModel``)."""

    plugin_version: str
    pytest_version: str
    python_version: str
    started_at: str  # ISO 8601, UTC: 2026-12-04T09:30:00Z
    duration_s: float
    git_commit: str | None = None
    judges: tuple[RunJudge, ...] = ()
    grader: str = "per-criterion"
    cache_mode: str = "use"
    cache_hits: int = 0  # the judge cache's, summed over xdist workers
    cache_misses: int = 0
    responses_replayed: int = 0  # the application's answers taken from a cache
    complete: bool = True
    # In a merge: the files of the shards whose runs were interrupted (not in the document).
    interrupted: tuple[str, ...] = ()

    @property
    def incomplete(self) -> str | None:
        """What every output says of a run that was interrupted; None for a complete one."""
        if self.complete:
            return None
        if not self.interrupted:
            return "the run was interrupted"
        if len(self.interrupted) == 1:
            return f"shard {self.interrupted[0]} was interrupted"
        return f"shards {', '.join(self.interrupted)} were interrupted"

    def header(self) -> list[tuple[str, str]]:
        """The header line of the HTML and Markdown, as ``(label, value)`` pairs."""
        items = [("pytest-rubric", self.plugin_version)]
        if self.incomplete is not None:
            items.append(("incomplete", self.incomplete))
        if self.judges:
            label = "judge" if len(self.judges) == 1 else "judges"
            judges = ", ".join(judge.shown for judge in self.judges)
            items.append((label, f"{judges} ({self.grader})"))
        else:
            items.append(("judge", "none"))
        if self.git_commit is not None:
            items.append(("commit", self.git_commit[:_SHORT_SHA]))
        items.append(("started", f"{self.started_at} ({self.duration_s:.1f} s)"))
        if self.responses_replayed:
            items.append(("responses replayed", str(self.responses_replayed)))
        return items


def plugin_version() -> str:
    """The installed pytest-rubric's version ("unknown" when it runs uninstalled)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-rubric")
    except PackageNotFoundError:
        return "unknown"


def iso_time(timestamp: float) -> str:
    """``timestamp`` (seconds since the epoch) in ISO 8601, UTC, to the second."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def merged(runs: Sequence[RunInfo]) -> RunInfo | None:
    """The ``run`` of shards merged into one document (None when no shard has one).

    The first shard's versions, commit, grader and cache mode; ``started_at`` the earliest
    start and ``duration_s`` from it to the end of the last shard to finish; every shard's
    judges, each once; the cache's hits and misses and ``responses_replayed`` summed;
    ``complete`` only when every shard's run was.
    """
    if len(runs) <= 1:
        return runs[0] if runs else None
    starts = [datetime.fromisoformat(run.started_at) for run in runs]
    starts = [s if s.tzinfo is not None else s.replace(tzinfo=UTC) for s in starts]
    start = min(starts)
    end = max(s + timedelta(seconds=run.duration_s) for s, run in zip(starts, runs, strict=True))
    return replace(
        runs[0],
        started_at=iso_time(start.timestamp()),
        duration_s=round((end - start).total_seconds(), 3),
        judges=tuple(dict.fromkeys(judge for run in runs for judge in run.judges)),
        cache_hits=sum(run.cache_hits for run in runs),
        cache_misses=sum(run.cache_misses for run in runs),
        responses_replayed=sum(run.responses_replayed for run in runs),
        complete=all(run.complete for run in runs),
    )


def git_commit(start: Path) -> str | None:
    """The commit checked out in the git work tree holding ``start``, or None: not in one, or
    one that cannot be read (no commit yet, a file git would not write).

    Read from the files git keeps, as git itself resolves them: the nearest ``.git`` from
    ``start`` upward (a folder, or a file pointing to one: a linked worktree, a submodule),
    its ``HEAD`` (a commit when detached, else a ref), the ref as a loose file (in the
    worktree's own folder or the repository's common one) or a line of ``packed-refs``.
    """
    try:
        for directory in (start, *start.parents):
            dot_git = directory / ".git"
            if dot_git.exists():
                break
        else:
            return None
        gitdir = dot_git
        if dot_git.is_file():
            if (pointer := _small(dot_git)) is None or not pointer.startswith("gitdir:"):
                return None
            gitdir = directory / pointer.removeprefix("gitdir:").strip()
        commondir = _small(gitdir / "commondir")
        common = gitdir if commondir is None else gitdir / commondir
        head = _small(gitdir / "HEAD")
        for _ in range(_REF_DEPTH):
            if head is None or not head.startswith("ref:"):
                break
            head = _ref(gitdir, common, head.removeprefix("ref:").strip())
        return head if head is not None and _SHA.fullmatch(head) else None
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _small(path: Path) -> str | None:
    """The stripped text of a small regular file, or None."""
    if not path.is_file() or path.stat().st_size > _MAX_REF_FILE:
        return None
    return path.read_text(encoding="utf-8").strip()


def _ref(gitdir: Path, common: Path, ref: str) -> str | None:
    """What ``ref`` (``refs/heads/main``) holds: a loose file, else a ``packed-refs`` line."""
    if not ref.startswith("refs/") or ".." in ref.split("/"):
        return None
    for folder in (gitdir, common):
        if (loose := _small(folder / ref)) is not None:
            return loose
    packed = common / "packed-refs"
    if packed.is_file():
        with packed.open(encoding="utf-8") as lines:
            for line in lines:
                sha, _, name = line.strip().partition(" ")
                if name == ref and not sha.startswith(("#", "^")):
                    return sha
    return None


@dataclass(frozen=True, slots=True)
class HistoryRun:
    """One run as the history keeps it: when, which commit, each subject's correctness."""

    started_at: str
    git_commit: str | None
    subjects: tuple[tuple[str, float, float | None, float | None], ...]
