"""Every finished run, kept: one SQLite file in the server's data folder.
(What one stored run holds, StoredRun, is app/runner/stored_run.py.)

No Streamlit import (tests use it directly; the app holds one store per server). A run is a
row: its id, when, whose browser, which lesson, its settings and headline figures as JSON,
and the whole result (``RunResult.to_dict``) as zlib-compressed JSON, read back with
``RunResult.from_dict``.

What can go wrong with a file on a shared server, and what the store does:
- missing (first start, or deleted): made anew, its folder too;
- corrupt (not a database, or a failed integrity check): moved aside as ``runs.db.corrupt-*``
  and a fresh one made; ``notice`` says so in one line for the pages to show;
- locked or busy (another writer, a backup tool): the run waits in memory and a background
  thread writes it when the lock goes (it stays readable meanwhile), so a run that finished
  then is not lost;
- too big: past ``PIPELAB_MAX_STORED_MB`` the oldest runs are pruned.
Beside the runs, each browser's course progress (which lessons' "check yourself" it answered
all right): a row per browser and lesson, so a reload keeps it as it keeps My runs.
Run ids are random, URL-safe and checked against one pattern before any lookup.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pipelab.app.runner.stored_run import (
    BATCH,
    INDEX,
    LEGACY_HEADLINE_KEYS,
    StoredRun,
    headline_of,
    new_run_id,
    settings_of,
    valid_run_id,
)
from pipelab.engine.errors import Message

DATA_DIR_ENV = "PIPELAB_DATA_DIR"
MAX_MB_ENV = "PIPELAB_MAX_STORED_MB"
DEFAULT_DATA_DIR = "runs"  # under the repository root (git-ignored) when the env var is unset
DEFAULT_MAX_MB = 500.0
DB_NAME = "runs.db"
BUSY_TIMEOUT_S = 2.0  # SQLite's own wait for a lock, per attempt
RETRY_EVERY_S = 0.5

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    owner TEXT NOT NULL,
    lesson TEXT NOT NULL,
    label TEXT NOT NULL,
    settings TEXT NOT NULL,
    headline TEXT NOT NULL,
    result BLOB NOT NULL,
    size INTEGER NOT NULL,
    context TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS runs_owner ON runs (owner, created);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created);
CREATE TABLE IF NOT EXISTS progress (
    owner TEXT NOT NULL,
    lesson TEXT NOT NULL,
    checked INTEGER NOT NULL,
    updated REAL NOT NULL,
    PRIMARY KEY (owner, lesson)
);
"""
COLUMNS = "id, created, owner, lesson, label, settings, headline, result, size, context"
ADDED_COLUMNS = {"context": "TEXT NOT NULL DEFAULT '{}'"}
"""Columns added since the first file: a file an older server made gets them on opening."""


@dataclass(frozen=True)
class _Pending:
    run: StoredRun
    blob: bytes


class RunStore:
    """The runs of one server. Thread-safe: one connection per call, writes serialized."""

    def __init__(self, folder: str | os.PathLike, max_mb: float = DEFAULT_MAX_MB):
        self.folder = Path(folder)
        self.path = self.folder / DB_NAME
        self.max_bytes = int(max_mb * 2**20)
        self.notice: Message | None = None
        """One line for the pages when the store had to start afresh (None otherwise)."""
        self._write_lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._pending_lock = threading.Lock()
        self._retry: threading.Thread | None = None
        self._open_fresh_if_broken()

    @classmethod
    def from_env(cls, root: str | os.PathLike = ".") -> "RunStore":
        folder = os.environ.get(DATA_DIR_ENV) or os.path.join(root, DEFAULT_DATA_DIR)
        return cls(folder, float(os.environ.get(MAX_MB_ENV, DEFAULT_MAX_MB)))

    # ---- the file ----------------------------------------------------------------------
    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A connection that commits (or rolls back) and is closed on leaving. sqlite3's own
        ``with`` does not close: a connection an exception's traceback holds lives until the
        garbage collector runs and keeps the file's WAL open, so a later connection to a file
        overwritten under it read the old pages from that WAL instead of the new bytes."""
        self.folder.mkdir(parents=True, exist_ok=True)  # a data folder removed under a running server
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
        db.row_factory = sqlite3.Row
        try:
            with db:
                yield db
        finally:
            db.close()

    def _open_fresh_if_broken(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            with self._connect() as db:
                if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                    raise sqlite3.DatabaseError("integrity check failed")
                self._create(db)
            return
        except sqlite3.OperationalError as err:
            if _busy(err):  # locked by another writer: the file is fine, the schema comes later
                return
            reason = err
        except sqlite3.DatabaseError as err:
            reason = err
        aside = self.path.with_name(f"{DB_NAME}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        os.replace(self.path, aside)
        for suffix in ("-wal", "-shm", "-journal"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        with self._connect() as db:
            self._create(db)
        self.notice = Message.of("stored_unreadable", reason=_one_line(reason), name=aside.name)

    @staticmethod
    def _create(db: sqlite3.Connection) -> None:
        db.execute("PRAGMA auto_vacuum = FULL")  # takes effect on a new file: pruned runs give space back
        db.execute("PRAGMA journal_mode = WAL")  # readers (the pages) go on while a run is written
        db.executescript(SCHEMA)
        have = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
        for name, kind in ADDED_COLUMNS.items():
            if name not in have:
                db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")

    # ---- writing -----------------------------------------------------------------------
    def save(self, result, owner: str, lesson: str, label: str = "", run_id: str | None = None,
             context: dict | None = None) -> str:
        """Store a finished run and return its id. A busy database delays the write, never
        loses it: the run waits in memory (readable meanwhile) until the lock goes.
        ``context``: what its page knew at Run (stored_run.run_context), for its verdict later."""
        run_id = run_id if valid_run_id(run_id) else new_run_id()
        blob = zlib.compress(json.dumps(result.to_dict()).encode(), 6)
        run = StoredRun(run_id, time.time(), owner, lesson, label or result.config.schedule, settings_of(result),
                        headline_of(result), dict(context or {}))
        pending = _Pending(run, blob)
        try:
            written = self._write(pending)
        except sqlite3.DatabaseError:  # the file went bad under a running server
            self._open_fresh_if_broken()
            written = self._write(pending)
        if not written:
            with self._pending_lock:
                self._pending[run_id] = pending
                if self._retry is None or not self._retry.is_alive():
                    self._retry = threading.Thread(target=self._retry_pending, name="pipelab-store-retry",
                                                   daemon=True)
                    self._retry.start()
        return run_id

    def _write(self, pending: _Pending) -> bool:
        """True once written; False when the database stayed busy (try again later)."""
        run = pending.run
        try:
            with self._write_lock, self._connect() as db:
                self._create(db)
                db.execute(f"INSERT OR REPLACE INTO runs ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           (run.id, run.created, run.owner, run.lesson, run.label, json.dumps(run.settings),
                            json.dumps(run.headline), pending.blob, len(pending.blob), json.dumps(run.context)))
                self._prune(db)
            return True
        except sqlite3.OperationalError as err:
            if _busy(err):
                return False
            raise

    def _prune(self, db: sqlite3.Connection) -> None:
        """Oldest first, until the results fit the budget (the newest run always stays)."""
        total = db.execute("SELECT COALESCE(SUM(size), 0) FROM runs").fetchone()[0]
        if total <= self.max_bytes:
            return
        for row in db.execute("SELECT id, size FROM runs ORDER BY created, rowid").fetchall()[:-1]:
            db.execute("DELETE FROM runs WHERE id = ?", (row["id"],))
            total -= row["size"]
            if total <= self.max_bytes:
                break

    def _retry_pending(self) -> None:
        while True:
            with self._pending_lock:
                waiting = list(self._pending.values())
                if not waiting:
                    self._retry = None
                    return
            for pending in waiting:
                if self._write(pending):
                    with self._pending_lock:
                        self._pending.pop(pending.run.id, None)
            time.sleep(RETRY_EVERY_S)

    def waiting(self) -> int:
        """Runs finished but not yet written (the database was busy)."""
        with self._pending_lock:
            return len(self._pending)

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every waiting run is written; True when none waits."""
        deadline = time.monotonic() + timeout
        while self.waiting() and time.monotonic() < deadline:
            time.sleep(0.05)
        return not self.waiting()

    # ---- reading -----------------------------------------------------------------------
    def load(self, run_id: str):
        """The RunResult stored under ``run_id``, or None (unknown or malformed id)."""
        from pipelab.engine.results.result import RunResult
        if not valid_run_id(run_id):
            return None
        with self._pending_lock:
            pending = self._pending.get(run_id)
        blob = pending.blob if pending else None
        if blob is None:
            row = self._query("SELECT result FROM runs WHERE id = ?", (run_id,))
            if not row:
                return None
            blob = row[0]["result"]
        return RunResult.from_dict(json.loads(zlib.decompress(blob)))

    def get(self, run_id: str) -> StoredRun | None:
        if not valid_run_id(run_id):
            return None
        rows = self._listing("WHERE id = ?", (run_id,), lambda r: r.id == run_id)
        return rows[0] if rows else None

    def runs_of(self, owner: str, limit: int = 200) -> list[StoredRun]:
        """One browser's runs, newest first."""
        return self._listing("WHERE owner = ? ORDER BY created DESC LIMIT ?", (owner, limit),
                             lambda r: r.owner == owner)

    def all_runs(self, lesson: str | None = None, limit: int = 5000) -> list[StoredRun]:
        """The class's runs, newest first, optionally of one lesson."""
        if lesson:
            return self._listing("WHERE lesson = ? ORDER BY created DESC LIMIT ?", (lesson, limit),
                                 lambda r: r.lesson == lesson)
        return self._listing("ORDER BY created DESC LIMIT ?", (limit,), lambda r: True)

    def batch(self, run: StoredRun) -> list[StoredRun]:
        """Every stored run of ``run``'s batch (the runs one button started), in the order
        they were started; [run] for a run stored without one."""
        batch = run.context.get(BATCH)
        if not batch:
            return [run]
        found = self._listing("WHERE json_extract(context, '$.batch') = ? ORDER BY created DESC", (batch,),
                              lambda r: r.context.get(BATCH) == batch)
        return sorted(found, key=lambda r: r.context.get(INDEX, 0)) or [run]

    def lessons(self) -> list[str]:
        return [row["lesson"] for row in self._query("SELECT DISTINCT lesson FROM runs ORDER BY lesson", ())]

    def stored_bytes(self) -> int:
        return self._query("SELECT COALESCE(SUM(size), 0) AS n FROM runs", ())[0]["n"]

    # ---- course progress ---------------------------------------------------------------
    def checked_lessons(self, owner: str) -> set[str]:
        """The lessons whose every "check yourself" question ``owner``'s browser last answered right."""
        return {row["lesson"] for row in self._query("SELECT lesson FROM progress WHERE owner = ? AND checked = 1",
                                                     (owner,))}

    def set_checked(self, owner: str, lesson: str, checked: bool) -> bool:
        """Keep whether ``owner``'s latest answers to ``lesson``'s checks were all right. False when
        the database stayed busy: the page's session still knows, and its next Check writes it."""
        try:
            with self._write_lock, self._connect() as db:
                self._create(db)
                db.execute("INSERT OR REPLACE INTO progress (owner, lesson, checked, updated) VALUES (?, ?, ?, ?)",
                           (owner, lesson, int(checked), time.time()))
            return True
        except sqlite3.OperationalError as err:
            if _busy(err):
                return False
            raise
        except sqlite3.DatabaseError:  # the file went bad under a running server: a fresh one
            self._open_fresh_if_broken()
            return False

    def _listing(self, where: str, args: tuple, matches) -> list[StoredRun]:
        """Stored rows, plus the runs still waiting to be written that ``matches`` accepts."""
        rows = self._query(f"SELECT id, created, owner, lesson, label, settings, headline, context FROM runs {where}",
                           args)
        found = [StoredRun(r["id"], r["created"], r["owner"], r["lesson"], r["label"], json.loads(r["settings"]),
                           _current(json.loads(r["headline"])), json.loads(r["context"] or "{}")) for r in rows]
        with self._pending_lock:  # finished while the database was busy: listed all the same
            stored = {f.id for f in found}
            waiting = [p.run for p in self._pending.values() if p.run.id not in stored and matches(p.run)]
        return sorted(found + waiting, key=lambda r: r.created, reverse=True)

    def _query(self, sql: str, args: tuple) -> list[sqlite3.Row]:
        """A read. A busy database is waited for a few times; a missing table reads as empty;
        a file gone bad is moved aside for a fresh one (``notice`` says so) and reads as empty."""
        for attempt in range(3):
            try:
                with self._connect() as db:
                    return db.execute(sql, args).fetchall()
            except sqlite3.OperationalError as err:
                if "no such table" in str(err):
                    return []
                if not _busy(err):
                    raise
                if attempt == 2:
                    self.notice = Message.of("stored_busy")
                    return []
                time.sleep(RETRY_EVERY_S)
            except sqlite3.DatabaseError:
                self._open_fresh_if_broken()
                return []
        return []


def _current(headline: dict) -> dict:
    """A stored headline without the keys no run writes any more (LEGACY_HEADLINE_KEYS), so
    the lists of a server that kept older runs show no empty column for them."""
    return {k: v for k, v in headline.items() if k not in LEGACY_HEADLINE_KEYS}


def _busy(err: sqlite3.OperationalError) -> bool:
    text = str(err).lower()
    return "locked" in text or "busy" in text


def _one_line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return lines[0] if lines else type(err).__name__
