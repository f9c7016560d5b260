"""The index's table of records: what each indexed record is (for filters and display), which
vector rows belong to it, and which commit and model the whole index was built from.

SQLite (the standard library's) in WAL mode: a reader sees one committed state while an
updater writes the next, and the commit stamp moves in the same transaction as the rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from gitmem.record import Record

__all__ = [
    "SCHEMA_VERSION",
    "Catalog",
    "CatalogCorrupt",
    "Entry",
    "Filter",
    "entry_from_row",
    "entry_row",
]

SCHEMA_VERSION = "1"
_SEP = "\x1f"

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    id TEXT PRIMARY KEY, path TEXT NOT NULL, blob TEXT NOT NULL, type TEXT NOT NULL,
    title TEXT NOT NULL, abstract TEXT NOT NULL, tags TEXT NOT NULL, agent TEXT NOT NULL,
    scope TEXT NOT NULL, status TEXT NOT NULL, created INTEGER NOT NULL,
    updated INTEGER NOT NULL, weight REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (row INTEGER PRIMARY KEY, id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_by_id ON chunks (id);
CREATE INDEX IF NOT EXISTS records_by_type ON records (type, status);
"""


class CatalogCorrupt(Exception):
    """The catalog file is unreadable or from another schema version."""


class Entry(NamedTuple):
    """A record as the catalog knows it (a tuple: recall builds thousands per second)."""

    id: str
    path: str
    blob: str
    type: str
    title: str
    abstract: str
    tags: tuple[str, ...]
    agent: str
    scope: str
    status: str
    created: int  # Unix seconds, UTC
    updated: int
    weight: float


@dataclass(frozen=True)
class Filter:
    """Which records a recall may return. Empty fields do not filter."""

    types: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()  # every one of them
    agent: str = ""
    scope: str = ""
    since: int | None = None  # created at or after (Unix seconds)
    until: int | None = None  # created at or before
    include_superseded: bool = False
    exclude: frozenset[str] = frozenset()  # ids never to return

    def sql(self) -> tuple[str, list[object]]:
        clauses: list[str] = []
        args: list[object] = []
        if self.types:
            clauses.append(f"type IN ({','.join('?' * len(self.types))})")
            args.extend(self.types)
        for tag in self.tags:
            clauses.append("instr(tags, ?) > 0")
            args.append(f"{_SEP}{tag}{_SEP}")
        if self.agent:
            clauses.append("agent = ?")
            args.append(self.agent)
        if self.scope:
            clauses.append("scope = ?")
            args.append(self.scope)
        if self.since is not None:
            clauses.append("created >= ?")
            args.append(self.since)
        if self.until is not None:
            clauses.append("created <= ?")
            args.append(self.until)
        if not self.include_superseded:
            clauses.append("status != 'superseded'")
        if self.exclude:
            clauses.append(f"id NOT IN ({','.join('?' * len(self.exclude))})")
            args.extend(sorted(self.exclude))
        return (" AND ".join(clauses) or "1"), args

    def admits(self, entry: Entry) -> bool:
        """The same test as `sql`, on an entry already fetched."""
        return not (
            entry.id in self.exclude
            or (not self.include_superseded and entry.status == "superseded")
            or (self.types and entry.type not in self.types)
            or (self.tags and not set(self.tags) <= set(entry.tags))
            or (self.agent and entry.agent != self.agent)
            or (self.scope and entry.scope != self.scope)
            or (self.since is not None and entry.created < self.since)
            or (self.until is not None and entry.created > self.until)
        )

    @property
    def narrow(self) -> bool:
        """Whether it can exclude more than superseded records."""
        return bool(
            self.types
            or self.tags
            or self.agent
            or self.scope
            or self.since is not None
            or self.until is not None
            or self.exclude
        )


class Catalog:
    def __init__(self, path: Path, *, create: bool = False) -> None:
        if not create and not path.exists():
            raise CatalogCorrupt(f"{path} is missing")
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            if create:
                self._db.executescript(_TABLES)
                self.set_meta({"schema": SCHEMA_VERSION})
            elif self.meta("schema") != SCHEMA_VERSION:
                raise CatalogCorrupt(f"{path} has schema {self.meta('schema')!r}")
        except sqlite3.DatabaseError as exc:
            raise CatalogCorrupt(f"{path}: {exc}") from exc

    def close(self) -> None:
        self._db.close()

    # --- meta ------------------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.DatabaseError as exc:
            raise CatalogCorrupt(str(exc)) from exc
        return None if row is None else str(row[0])

    def set_meta(self, values: dict[str, str]) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", list(values.items())
        )

    # --- writing ---------------------------------------------------------------------------

    def apply(
        self,
        remove: Iterable[str],
        add: Sequence[tuple[Record, str, str, Sequence[int]]],
        meta: dict[str, str],
    ) -> None:
        """One transaction: drop `remove` ids, add (record, path, blob, vector rows), stamp."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            gone = list(remove) + [record.id for record, _, _, _ in add]
            db.executemany("DELETE FROM records WHERE id = ?", [(i,) for i in gone])
            db.executemany("DELETE FROM chunks WHERE id = ?", [(i,) for i in gone])
            db.executemany(
                "INSERT INTO records VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [entry_row(record, path, blob) for record, path, blob, _ in add],
            )
            db.executemany(
                "INSERT INTO chunks (row, id) VALUES (?, ?)",
                [(row, record.id) for record, _, _, rows in add for row in rows],
            )
            self.set_meta(meta)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    # --- reading ---------------------------------------------------------------------------

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM records").fetchone()[0])

    def next_row(self) -> int:
        row = self._db.execute("SELECT max(row) FROM chunks").fetchone()[0]
        return 0 if row is None else int(row) + 1

    def live_rows(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM chunks").fetchone()[0])

    def entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        wanted = list(dict.fromkeys(ids))
        out: dict[str, Entry] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            query = f"SELECT * FROM records WHERE id IN ({','.join('?' * len(part))})"
            for row in self._db.execute(query, part):
                out[row[0]] = entry_from_row(row)
        return out

    def matching(self, flt: Filter) -> list[str]:
        where, args = flt.sql()
        return [r[0] for r in self._db.execute(f"SELECT id FROM records WHERE {where}", args)]

    def rows_of(self, ids: Iterable[str]) -> list[int]:
        wanted = list(ids)
        out: list[int] = []
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            query = f"SELECT row FROM chunks WHERE id IN ({','.join('?' * len(part))})"
            out.extend(r[0] for r in self._db.execute(query, part))
        return sorted(out)

    def owners(self, rows: Sequence[int]) -> dict[int, str]:
        """Record id of each live row; dead rows are absent."""
        out: dict[int, str] = {}
        for start in range(0, len(rows), 500):
            part = list(rows[start : start + 500])
            query = f"SELECT row, id FROM chunks WHERE row IN ({','.join('?' * len(part))})"
            out.update({int(r): str(i) for r, i in self._db.execute(query, part)})
        return out

    def all_rows(self) -> list[tuple[int, str]]:
        return [(int(r), str(i)) for r, i in self._db.execute("SELECT row, id FROM chunks")]

    def renumber(self, mapping: dict[int, int], meta: dict[str, str]) -> None:
        """After compaction: move rows to their new numbers and name the new vector file,
        in one transaction."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("UPDATE chunks SET row = -row - 1")
            db.executemany(
                "UPDATE chunks SET row = ? WHERE row = ?",
                [(new, -old - 1) for old, new in mapping.items()],
            )
            self.set_meta(meta)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


def entry_row(record: Record, path: str, blob: str) -> tuple[object, ...]:
    return (
        record.id,
        path,
        blob,
        record.type,
        record.title,
        record.abstract,
        _SEP + _SEP.join(record.tags) + _SEP if record.tags else "",
        record.agent,
        record.scope,
        record.status,
        int(record.created.timestamp()),
        int(record.updated.timestamp()),
        record.weight,
    )


def entry_from_row(row: tuple[Any, ...]) -> Entry:
    tags = row[6]
    return Entry._make((*row[:6], tuple(tags[1:-1].split(_SEP)) if tags else (), *row[7:]))
