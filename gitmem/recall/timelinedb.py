"""The time-travel cache's SQLite database (gitmem.recall.timeline): its tables, how it is
opened, and the few statements every part of the cache runs."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from gitmem.index.entries import Entry, entry_from_row

__all__ = [
    "TABLES",
    "Connection",
    "DatabaseError",
    "chunks",
    "connect",
    "count_events",
    "entries_of",
    "marks",
    "meta_value",
    "next_row",
    "rows_of",
    "write",
]

# In the order of entries.Entry.
ENTRY = (
    "id, path, blob, type, title, abstract, tags, agent, scope, status, created, updated, weight"
)

Connection = sqlite3.Connection
DatabaseError = sqlite3.DatabaseError

TABLES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE commits (oid TEXT PRIMARY KEY, t INTEGER NOT NULL, gen INTEGER NOT NULL);
CREATE TABLE events (
    id TEXT NOT NULL, path TEXT NOT NULL, blob TEXT, oid TEXT NOT NULL,
    t INTEGER NOT NULL, gen INTEGER NOT NULL
);
CREATE INDEX events_by_time ON events (t);
CREATE INDEX events_by_id ON events (id);
CREATE TABLE versions (
    id TEXT NOT NULL, path TEXT NOT NULL, blob TEXT PRIMARY KEY, type TEXT NOT NULL,
    title TEXT NOT NULL, abstract TEXT NOT NULL, tags TEXT NOT NULL, agent TEXT NOT NULL,
    scope TEXT NOT NULL, status TEXT NOT NULL, created INTEGER NOT NULL,
    updated INTEGER NOT NULL, weight REAL NOT NULL,
    ok INTEGER NOT NULL, fields TEXT NOT NULL, body TEXT NOT NULL
);
CREATE TABLE made (blob TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE rows (row INTEGER PRIMARY KEY, blob TEXT NOT NULL);
CREATE INDEX rows_by_blob ON rows (blob);
"""


def connect(path: Path, wait: float = 5.0) -> sqlite3.Connection:
    db = sqlite3.connect(path, wait, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db


def write(db: sqlite3.Connection, *steps: tuple[str, Sequence[Sequence[object]]]) -> bool:
    """Run each (statement, its parameters' rows) in one transaction; False, with nothing
    written, if the database stays busy past the connection's timeout or fails (a full
    disk): what a read adds to the cache (views' Made, content-addressed, so any writer's row
    is right) never fails it."""
    try:
        db.execute("BEGIN IMMEDIATE")
        try:
            for statement, rows in steps:
                db.executemany(statement, rows)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
    except sqlite3.Error:
        return False
    return True


def meta_value(db: sqlite3.Connection, key: str) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def next_row(db: sqlite3.Connection) -> int:
    row = db.execute("SELECT max(row) FROM rows").fetchone()[0]
    return 0 if row is None else int(row) + 1


def marks(n: int) -> str:
    return ",".join("?" * n)


def chunks(items: Sequence[str], size: int = 500) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def count_events(db: sqlite3.Connection, upto: int | None = None) -> int:
    """Events in the table; with `upto`, those at or before that effective time."""
    if upto is None:
        return int(db.execute("SELECT count(*) FROM events").fetchone()[0])
    return int(db.execute("SELECT count(*) FROM events WHERE t <= ?", (upto,)).fetchone()[0])


def entries_of(db: sqlite3.Connection, blobs: Iterable[str]) -> dict[str, Entry]:
    """blob -> the entry of each valid version among `blobs`."""
    out: dict[str, Entry] = {}
    for part in chunks(sorted(set(blobs))):
        query = f"SELECT {ENTRY} FROM versions WHERE ok = 1 AND blob IN ({marks(len(part))})"
        out.update((row[2], entry_from_row(row)) for row in db.execute(query, part))
    return out


def rows_of(db: sqlite3.Connection, blobs: Iterable[str]) -> dict[str, list[int]]:
    """blob -> its vector rows, in order."""
    out: dict[str, list[int]] = {}
    for part in chunks(sorted(set(blobs))):
        query = f"SELECT row, blob FROM rows WHERE blob IN ({marks(len(part))}) ORDER BY row"
        for row, blob in db.execute(query, part):
            out.setdefault(blob, []).append(int(row))
    return out
