"""The verdict store: verdicts by key (see :mod:`.verdict_keys`) in one SQLite file.

Every process of every run on the machine opens it at once: xdist workers, concurrent runs.
WAL lets readers go on while one writes; each verdict is one transaction, written when its
item is graded, so that a run killed with ``kill -9`` at any moment leaves every verdict it
finished and a database SQLite recovers on the next open (WAL with synchronous=NORMAL loses
nothing to a killed process, only, at worst, the last commits to a power cut).
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..verdict import Outcome, Verdict

FILE_NAME = "verdicts.sqlite3"
# A new layout gets a new table: stores of two versions of the plugin can share a file.
TABLE = "verdicts_v1"
# How long opening waits for another process's write lock before calling the store locked:
# a verdict's write holds it for milliseconds.
OPEN_WAIT = 3.0
# How long a lookup or a write waits for the lock during the run.
BUSY_WAIT = 60.0
SCHEMA = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
    key TEXT PRIMARY KEY,
    verdict TEXT NOT NULL,
    run TEXT NOT NULL,
    item TEXT NOT NULL,
    benchmark TEXT NOT NULL,
    stored_at REAL NOT NULL,
    seconds REAL
)"""
# Added to the first layout: how long grading took, for a plan's costs (sweeps.plan). A file
# made before it gains the column; a plugin that predates it never reads it.
ADD_SECONDS = f"ALTER TABLE {TABLE} ADD COLUMN seconds REAL"


class StoreError(HarnessError):
    """The store cannot be used: its message names the file and says why. At the start of a
    run it is a usage error; found later by a worker, an error of the item it was serving."""


@dataclasses.dataclass(frozen=True)
class Stored:
    """One verdict as the store keeps it, and where it was graded: the run (its folder's
    name) and the item (``TASK[SAMPLE]``)."""

    verdict: Verdict
    run: str
    item: str
    #: How long grading it took (None: not recorded).
    seconds: float | None = None


def encode(verdict: Verdict) -> str:
    return json.dumps(verdict.to_dict(), separators=(",", ":"))


def decode(text: str) -> Verdict:
    data: dict[str, Any] = json.loads(text)
    return Verdict(**{**data, "outcome": Outcome(data["outcome"])})


def _why(exc: sqlite3.Error, waited: float) -> str:
    """What an SQLite error says about the file, for a person."""
    message = str(exc)
    if "locked" in message or "busy" in message:
        return f"is locked by another process (still locked after {waited:g} s)"
    if isinstance(exc, sqlite3.OperationalError) and "unable to open" in message:
        return f"cannot be opened ({message})"
    if "readonly" in message:
        return f"cannot be written ({message}); --codebench-store read only reads it"
    return f"is not a readable verdict store ({message})"


class VerdictStore:
    """One process's connection to the store at ``path``. ``readable``: lookups answer (else
    they miss); ``writable``: verdicts are kept. Opening checks the file at once: a corrupt,
    foreign or locked file raises :class:`StoreError` before anything is graded."""

    def __init__(self, path: Path, *, readable: bool = True, writable: bool = True, wait: float = OPEN_WAIT) -> None:
        self.path = path
        self.readable = readable
        self.writable = writable
        self._db: sqlite3.Connection | None = None
        if not writable and not path.exists():
            return  # nothing to read, and nothing to make
        try:
            self._db = self._open(wait)
        except sqlite3.Error as exc:
            self.close()
            raise StoreError(f"the verdict store {path} {_why(exc, wait)}") from None
        except OSError as exc:
            raise StoreError(f"the verdict store {path} cannot be opened ({exc.strerror or exc})") from None

    def _open(self, wait: float) -> sqlite3.Connection:
        if self.writable:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit (isolation_level None): each statement is its own transaction.
        db = sqlite3.connect(self.path, timeout=wait, isolation_level=None, check_same_thread=False)
        self._db = db
        if self.writable:
            db.execute("PRAGMA journal_mode=WAL").fetchone()
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(SCHEMA)
            if "seconds" not in {row[1] for row in db.execute(f"PRAGMA table_info({TABLE})")}:
                db.execute(ADD_SECONDS)
            # Can this process write at all (no other holds the file locked)? Asked now, not
            # on the first verdict after minutes of grading.
            db.execute("BEGIN IMMEDIATE")
            db.execute("ROLLBACK")
        db.execute(f"SELECT key FROM {TABLE} LIMIT 1").fetchall()
        db.execute(f"PRAGMA busy_timeout={int(BUSY_WAIT * 1000)}")
        return db

    def get(self, key: str) -> Stored | None:
        """The verdict stored under ``key``, if any (always None where not ``readable``)."""
        if self._db is None or not self.readable:
            return None
        cursor = self._db.execute(f"SELECT * FROM {TABLE} WHERE key = ?", (key,))
        row = cursor.fetchone()
        if row is None:
            return None
        # By name: a file of the first layout, read-only, has no seconds column.
        columns = dict(zip((column[0] for column in cursor.description), row, strict=True))
        return Stored(decode(columns["verdict"]), columns["run"], columns["item"], columns.get("seconds"))

    def put(self, key: str, stored: Stored, benchmark: str) -> None:
        """Keep ``stored`` under ``key`` (one transaction); nothing where not ``writable``."""
        if self._db is None or not self.writable:
            return
        self._db.execute(
            f"INSERT OR REPLACE INTO {TABLE} (key, verdict, run, item, benchmark, stored_at, seconds) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (key, encode(stored.verdict), stored.run, stored.item, benchmark, time.time(), stored.seconds),
        )

    def seconds(self, benchmark: str) -> dict[str, float]:
        """How long each of ``benchmark``'s items (``TASK[SAMPLE]``) took to grade when it was
        last graded, where that was recorded."""
        if self._db is None:
            return {}
        try:
            rows = self._db.execute(
                f"SELECT item, seconds FROM {TABLE} WHERE benchmark = ? AND seconds IS NOT NULL ORDER BY stored_at",
                (benchmark,),
            ).fetchall()
        except sqlite3.OperationalError:  # a file of the first layout, opened read-only
            return {}
        return {item: float(seconds) for item, seconds in rows}

    def count(self) -> int:
        if self._db is None:
            return 0
        return int(self._db.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0])

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
