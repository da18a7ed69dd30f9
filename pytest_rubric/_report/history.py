"""Results kept over time: ``--rubric-history PATH`` and ``python -m pytest_rubric history``.

One SQLite file (WAL mode) holds every run appended to it: its ``run`` metadata, its
leaderboard and its per-item results, appended once per run by the process that writes the
reports (the xdist controller; ``merge --history`` for shards). It is schema-versioned
(``PRAGMA user_version``): a newer file is refused, an older one migrated. A file that
cannot be used is one warning naming it; the run and its other outputs are never lost to
it. The file is data from elsewhere: a row of the wrong type is skipped and counted, for
one warning.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from .._guards.outgoing import outgoing, outgoing_data
from .run import HistoryRun

if TYPE_CHECKING:
    from .report import SessionReport

SCHEMA_VERSION = 2  # 1: runs, subjects, items; 2: each leaderboard row whole
_TIMEOUT = 10.0  # seconds to wait for another writer's lock

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS runs (
        id INTEGER PRIMARY KEY,
        started_at TEXT NOT NULL,
        git_commit TEXT,
        run TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS subjects (
        run_id INTEGER NOT NULL REFERENCES runs(id),
        subject TEXT NOT NULL,
        rank INTEGER NOT NULL,
        correctness REAL NOT NULL,
        ci_low REAL,
        ci_high REAL,
        passed INTEGER NOT NULL,
        total INTEGER NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS items (
        run_id INTEGER NOT NULL REFERENCES runs(id),
        nodeid TEXT NOT NULL,
        subject TEXT NOT NULL,
        score REAL NOT NULL,
        passed INTEGER NOT NULL,
        errors INTEGER NOT NULL
    )""",
    # A leaderboard row as the JSON writes it (fluency, naive rank, tier, trace figures...).
    """CREATE TABLE IF NOT EXISTS leaderboard (
        run_id INTEGER NOT NULL REFERENCES runs(id),
        subject TEXT NOT NULL,
        row TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS subjects_by_run ON subjects (run_id)",
    "CREATE INDEX IF NOT EXISTS items_by_run ON items (run_id)",
    "CREATE INDEX IF NOT EXISTS leaderboard_by_run ON leaderboard (run_id)",
)
# Every table and index the schema makes, as sqlite_master lists it: (type, name).
_OURS = {(statement.split()[1].lower(), statement.split()[5]) for statement in _SCHEMA}


class HistoryError(Exception):
    """The history file cannot be used; the message names it and says what to do."""


def _wrong(started_at: object, commit: object) -> str | None:
    """What is of the wrong type in a run's row, or None."""
    if type(started_at) is not str:
        return f"started_at is {type(started_at).__name__}"
    try:  # a number written there is text to SQLite, but no time
        datetime.fromisoformat(started_at)
    except ValueError:
        return "started_at is not an ISO 8601 time"
    if commit is not None and type(commit) is not str:
        return f"git_commit is {type(commit).__name__}"
    return None


def _wrong_subject(name: object, value: object, low: object, high: object) -> str | None:
    """What is of the wrong type in a subject's row, or None: every correctness and interval
    bound is a number from 0 to 1 (SQLite keeps any type, and any number)."""
    if type(name) is not str:
        return f"subject is {type(name).__name__}"
    for field, given in (("correctness", value), ("ci_low", low), ("ci_high", high)):
        number = type(given) in (int, float)
        fits = number and 0 <= given <= 1  # type: ignore[operator]
        if not fits and (field == "correctness" or given is not None):
            shown = "out of [0, 1]" if number else type(given).__name__
            return f"{field} is {shown}, not a number from 0 to 1"
    return None


def skipped_warning(path: Path, skipped: list[str], *, flag: str = "--rubric-") -> str:
    """The one warning for the rows of ``path`` that :func:`read_runs` skipped; ``flag`` is
    what the command's own history flag begins with (merge's: ``--history``)."""
    count = len(skipped)
    return outgoing(
        f"{flag}history {path}: {count} row{'s' if count != 1 else ''} with values of the "
        f"wrong type skipped ({skipped[0]}); the other rows are read"
    )


# What to do with a file that is not a history: a run starts a new one, a reader needs another.
_MOVE_ASIDE = "move it aside and a new history starts"
_GIVE_ONE = "give the file a run's --rubric-history PATH writes"


def _open(path: Path, flag: str = "--rubric-", *, reading: bool = False) -> sqlite3.Connection:
    """The history at ``path``, created or migrated to this version's schema; ``flag`` as in
    :func:`skipped_warning`; ``reading``: for ``python -m pytest_rubric history``, whose
    errors name the path as given."""
    what = str(path) if reading else f"{flag}history {path}"
    if path.exists() and not path.is_file():
        raise HistoryError(f"{what}: not a regular file; give the path of a .sqlite3 file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, timeout=_TIMEOUT, isolation_level=None)
    except (sqlite3.Error, OSError) as exc:  # OSError: a parent that cannot be made
        raise HistoryError(f"{what}: cannot open it ({exc})") from None
    # Text that is not UTF-8 is read, never a failed query.
    db.text_factory = lambda data: data.decode("utf-8", "replace")
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        # By kind as well as name: a trigger or a view that takes one of ours ("runs") would
        # run its own query, without end, in every read or append.
        held = set(db.execute("SELECT type, name FROM sqlite_master"))
        if version > SCHEMA_VERSION:
            raise HistoryError(
                f"{what}: written by a newer pytest-rubric (history schema {version}; this one "
                f"reads up to {SCHEMA_VERSION}); upgrade pytest-rubric, or give another file"
            )
        if foreign := sorted(f"{k} {n}" for k, n in held - _OURS if not n.startswith("sqlite_")):
            raise HistoryError(
                f"{what}: it holds {', '.join(foreign[:3])}, which a pytest-rubric history does "
                "not: not ours; give another file"
            )
        db.execute("PRAGMA journal_mode=WAL")
        if version < SCHEMA_VERSION:  # 0 (new, or before versions), 1 -> 2: the tables now
            db.execute("BEGIN IMMEDIATE")
            with db:  # committed, or rolled back on any error
                for statement in _SCHEMA:
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except sqlite3.DatabaseError as exc:
        db.close()
        raise HistoryError(
            f"{what}: not a readable SQLite database ({exc}); "
            + (_GIVE_ONE if reading else _MOVE_ASIDE)
        ) from None
    except HistoryError:
        db.close()
        raise
    return db


def append(path: Path, report: SessionReport, *, flag: str = "--rubric-") -> None:
    """Append the run ``report`` describes: its metadata, leaderboard and items, in one
    transaction. Raises :class:`HistoryError` when the file cannot be used, naming the
    flag as :func:`skipped_warning` does."""
    from .document import LeaderboardRowModel, RunModel, written

    run = written(RunModel, report.run) if report.run is not None else {}
    db = _open(path, flag)
    try:
        db.execute("BEGIN IMMEDIATE")
        with db:  # committed, or rolled back on any error
            run_id = db.execute(
                "INSERT INTO runs (started_at, git_commit, run) VALUES (?, ?, ?)",
                (
                    str(run.get("started_at") or ""),
                    run.get("git_commit"),
                    json.dumps(outgoing_data(run), sort_keys=True),
                ),
            ).lastrowid
            db.executemany(
                "INSERT INTO subjects VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        run_id,
                        outgoing(row.subject),
                        row.rank,
                        row.correctness,
                        *(row.correctness_ci or (None, None)),
                        row.passed,
                        row.total,
                    )
                    for row in report.leaderboard
                ],
            )
            db.executemany(
                "INSERT INTO leaderboard VALUES (?, ?, ?)",
                [
                    (
                        run_id,
                        outgoing(row.subject),
                        json.dumps(
                            outgoing_data(written(LeaderboardRowModel, row)), sort_keys=True
                        ),
                    )
                    for row in report.leaderboard
                ],
            )
            db.executemany(
                "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (
                        run_id,
                        outgoing(r.nodeid or r.case),
                        outgoing(r.subject),
                        r.score,
                        int(r.passed),
                        len(r.errors),
                    )
                    for r in report.results
                ],
            )
    except sqlite3.Error as exc:
        raise HistoryError(
            f"{flag}history {path}: cannot append this run ({exc}); it is not in the history"
        ) from None
    finally:
        db.close()


def read_runs(
    path: Path,
    *,
    subject: str | None = None,
    last: int | None = None,
    skipped: list[str] | None = None,
) -> list[HistoryRun]:
    """The runs in ``path``, oldest first: the last ``last`` of them (all when None), each
    with its subjects (only ``subject`` when given). A row with a value of the wrong type is
    skipped, and said in ``skipped`` (``"run 3: correctness is str, ..."``). With
    ``subject``, the runs are those that graded it; one that none graded is an error naming
    those the history holds."""
    if path.is_dir():
        raise HistoryError(f"{path}: a directory, not a history; {_GIVE_ONE}")
    if not path.is_file():
        raise HistoryError(f"{path}: no such history file")
    wrong: list[str] = [] if skipped is None else skipped
    db = _open(path, reading=True)
    try:
        query = "SELECT id, started_at, git_commit FROM runs"
        given: list[object] = []
        if subject is not None:  # the runs that graded it
            query += " WHERE id IN (SELECT run_id FROM subjects WHERE subject = ?)"
            given.append(subject)
        query += " ORDER BY id DESC"
        if last:
            query += " LIMIT ?"
            given.append(last)
        rows = db.execute(query, given).fetchall()
        rows.reverse()
        if not rows and subject is not None:
            held = [n for (n,) in db.execute("SELECT DISTINCT subject FROM subjects ORDER BY 1")]
            if held:
                more = f" and {len(held) - 10} more" if len(held) > 10 else ""
                raise HistoryError(
                    f"{path}: no run graded subject {subject!r}; its runs graded "
                    f"{', '.join(held[:10])}{more}"
                )
        if not rows:
            return []
        first = rows[0][0]
        wanted = "" if subject is None else " AND subject = ?"
        subjects: dict[int, list[tuple[str, float, float | None, float | None]]] = {}
        for run_id, name, value, low, high in db.execute(
            "SELECT run_id, subject, correctness, ci_low, ci_high FROM subjects "
            f"WHERE run_id >= ?{wanted} ORDER BY run_id, rank, subject",
            (first,) if subject is None else (first, subject),
        ):
            if (problem := _wrong_subject(name, value, low, high)) is not None:
                wrong.append(f"run {run_id}: {problem}")
                continue
            subjects.setdefault(run_id, []).append((name, float(value), _float(low), _float(high)))
    except sqlite3.Error as exc:
        raise HistoryError(f"{path}: cannot read it ({exc})") from None
    finally:
        db.close()
    runs = []
    for run_id, started_at, commit in rows:
        if (problem := _wrong(started_at, commit)) is not None:
            wrong.append(f"run {run_id}: {problem}")
            continue
        runs.append(HistoryRun(started_at, commit, tuple(subjects.get(run_id, ()))))
    return runs


def _float(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


TREND_RUNS = 20  # the runs the HTML's trend draws, this one included


def with_trend(
    report: SessionReport, path: Path, *, warn: Callable[[str], None], flag: str = "--rubric-"
) -> SessionReport:
    """``report`` with its ``trend``: the last runs of the history at ``path`` and this one,
    oldest first. A history that cannot be read adds nothing (appending says why, once); its
    rows of the wrong type are skipped, said once through ``warn`` (naming ``flag`` as
    :func:`skipped_warning` does)."""
    skipped: list[str] = []
    try:
        past = read_runs(path, last=TREND_RUNS - 1, skipped=skipped)
    except HistoryError:
        past = []
    if skipped:
        warn(skipped_warning(path, skipped, flag=flag))
    run = report.run
    now = HistoryRun(
        run.started_at if run is not None else "",
        run.git_commit if run is not None else None,
        tuple(
            (row.subject, row.correctness, *(row.correctness_ci or (None, None)))
            for row in report.leaderboard
        ),
    )
    return replace(report, trend=(*past, now))
