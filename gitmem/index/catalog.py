"""The index's table of records: what each indexed record is (for filters and display), which
vector rows belong to it, and which commit and model the whole index was built from.

SQLite (the standard library's) in WAL mode: a reader sees one committed state while an
updater writes the next, and the commit stamp moves in the same transaction as the rows.

Beside the tables, the row facts (gitmem.index.rowfacts) in one table, in chunks
(gitmem.index.factstore): a write transaction rewrites the chunks whose rows it changed, with
the rows they describe. The queries that read the tables are gitmem.index.catalogreads'.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from gitmem.index import factstore, rowfacts
from gitmem.index.catalogreads import CatalogReads
from gitmem.index.catalogreads import one_at_a_time as _one_at_a_time
from gitmem.index.entries import SUPERSEDED, entry_row
from gitmem.index.rowfacts import FactChunks, RowFacts, StoredFacts
from gitmem.index.stamp import CATALOG_SCHEMA
from gitmem.store.record import Record

__all__ = [
    "DB_ERRORS",
    "VECTORS",
    "Catalog",
    "CatalogCorrupt",
]

VECTORS = "vectors.f32"  # the vector file's name until a compaction names another

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


# What a read of a damaged catalog raises (a page of random bytes: "database disk image is
# malformed"), for the index's caller to rebuild on (gitmem.index.index.DAMAGE).
DB_ERRORS: tuple[type[Exception], ...] = (sqlite3.DatabaseError,)


class Catalog(CatalogReads):
    def __init__(self, path: Path, *, create: bool = False) -> None:
        if not create and not path.exists():
            raise CatalogCorrupt(f"{path} is missing")
        self.path = path
        self._lock = threading.RLock()
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            if create:
                self._db.executescript(_TABLES)
                for table in factstore.TABLES:
                    self._db.execute(table)
                self.set_meta({"schema": CATALOG_SCHEMA})
            elif self.meta("schema") != CATALOG_SCHEMA:
                raise CatalogCorrupt(f"{path} has schema {self.meta('schema')!r}")
        except sqlite3.DatabaseError as exc:
            raise CatalogCorrupt(f"{path}: {exc}") from exc

    @_one_at_a_time
    def close(self) -> None:
        self._db.close()

    @_one_at_a_time
    def check(self) -> list[str]:
        """SQLite's own check of every page (`PRAGMA quick_check`): what it finds wrong. It
        reads the whole file, so it is for `gitmem doctor`, not for a read."""
        try:
            rows = [str(row[0]) for row in self._db.execute("PRAGMA quick_check")]
        except sqlite3.DatabaseError as exc:
            return [str(exc)]
        return [] if rows == ["ok"] else rows[:3]

    # --- meta ------------------------------------------------------------------------------

    @_one_at_a_time
    def meta(self, key: str) -> str | None:
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.DatabaseError as exc:
            raise CatalogCorrupt(str(exc)) from exc
        return None if row is None else str(row[0])

    def vectors_name(self) -> str:
        """The vector file's name: `VECTORS` until a compaction names another."""
        return self.meta("vectors") or VECTORS

    @_one_at_a_time
    def set_meta(self, values: dict[str, str]) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", list(values.items())
        )

    # --- writing ---------------------------------------------------------------------------

    @_one_at_a_time
    def reserve_keys(self, count: int) -> int:
        """The first of `count` keys no record has had or will get from another write,
        committed before the caller uses them (the text index names documents by them, and a
        write that fails halfway must not leave a key another record then gets)."""
        if count == 0:
            return self._next_key()
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            first = self._next_key()
            self.set_meta({"next_key": str(first + count)})
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return first

    @_one_at_a_time
    def apply(
        self,
        remove: Iterable[str],
        add: Sequence[tuple[Record, str, str, Sequence[int]]],
        meta: dict[str, str],
        first_key: int | None = None,
    ) -> None:
        """One transaction: drop `remove` ids, add (record, path, blob, vector rows), stamp.
        The added records get keys from `first_key` on (from `reserve_keys`), else the next."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            facts = self._facts_to_write()
            gone = list(remove) + [record.id for record, _, _, _ in add]
            for row in self.rows_of(gone) if len(facts) else ():  # none in a new catalog
                facts.kill(row)
            db.executemany("DELETE FROM records WHERE id = ?", [(i,) for i in gone])
            db.executemany("DELETE FROM chunks WHERE id = ?", [(i,) for i in gone])
            # This version never reuses a key, so a reader that sees newer tables than row
            # facts finds no record for a stale key rather than another record.
            reserved, top = self._key_marks()
            first = max(reserved, top + 1) if first_key is None else first_key
            if first <= top:
                raise CatalogCorrupt(f"keys from {first} on are taken (up to {top})")
            db.executemany(
                "INSERT INTO records (rowid, id, path, blob, type, title, abstract, tags, agent,"
                " scope, status, created, updated, weight) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (first + n, *entry_row(record, path, blob))
                    for n, (record, path, blob, _) in enumerate(add)
                ],
            )
            db.executemany(
                "INSERT INTO chunks (row, id) VALUES (?, ?)",
                [(row, record.id) for record, _, _, rows in add for row in rows],
            )
            for n, (record, _, _, rows) in enumerate(add):
                updated = int(record.updated.timestamp())
                for row in rows:
                    facts.put(
                        row,
                        first + n,
                        updated,
                        record.weight,
                        record.status == SUPERSEDED,
                        record.id,
                    )
            # Never below what reserve_keys gave out.
            self.set_meta({**meta, "next_key": str(max(first + len(add), reserved))})
            self._store_facts(facts)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _next_key(self) -> int:
        """Past every key given out, and past every rowid (an older gitmem, writing to this
        catalog, takes rowids of its own and never moves next_key)."""
        reserved, top = self._key_marks()
        return max(reserved, top + 1)

    def _key_marks(self) -> tuple[int, int]:
        """The stored next_key and the highest rowid (-1: none)."""
        top = self._db.execute("SELECT max(rowid) FROM records").fetchone()[0]
        return int(self.meta("next_key") or 0), -1 if top is None else int(top)

    def _facts_to_write(self) -> RowFacts | FactChunks:
        """Inside a write transaction: the stored row facts in chunks, each read when a row of
        it changes; else (the whole parts an older gitmem wrote, a catalog written before row
        facts existed, or damaged ones) all of them, the stored or those the tables say, for
        `_store_facts` to write whole, in chunks."""
        try:
            rows = factstore.chunked_rows(self._db, self._stamp())
            if rows is not None and rows >= self.next_row() and factstore.sound(self._db, rows):
                return FactChunks(rows, lambda n: self._chunk_facts(n, rows))
        except (sqlite3.OperationalError, ValueError, TypeError):  # no such table (a catalog
            pass  # before row facts), or damage the checks missed: all from the tables
        stored = self._stored_facts()
        if stored is None or len(stored) < self.next_row():
            return self.computed_facts()
        return stored

    def _chunk_facts(self, n: int, rows: int) -> RowFacts:
        """Chunk `n`'s stored facts, numbered from 0, or (damaged after all) the tables'."""
        facts = factstore.chunk_facts(self._db, n, rows)
        if facts is None:
            size, count = rowfacts.CHUNK_ROWS, rowfacts.chunk_rows(rows, n)
            facts = self._computed(n * size, (n + 1) * size)
            if len(facts) < count:
                facts.put(count - 1, -1, 0, 0.0, False, "")
        return facts

    def _store_facts(self, facts: RowFacts | FactChunks) -> None:
        factstore.write(self._db, self._stamp(), facts)

    def _stamp(self) -> str:
        """What row facts are written for: the commit and the vector file as the catalog
        names them in the same transaction. An older gitmem writing to this catalog moves
        one or the other without rewriting the facts, which are then not trusted."""
        return f"{self.meta('commit') or ''}\x1f{self.vectors_name()}"

    def _stored_facts(self) -> RowFacts | None:
        try:
            return factstore.read(self._db, self._stamp())
        except (sqlite3.OperationalError, ValueError, TypeError):  # no such table (an older
            return None  # gitmem), text not UTF-8, or damage the checks missed: not trusted
        except sqlite3.DatabaseError as exc:
            raise CatalogCorrupt(str(exc)) from exc

    @_one_at_a_time
    def computed_facts(self) -> RowFacts:
        """The row facts as the tables state them (what the stored ones must equal)."""
        facts = self._computed(0, None)
        top = self._db.execute("SELECT max(row) FROM chunks").fetchone()[0]
        if top is not None and len(facts) <= top:
            facts.put(top, -1, 0, 0.0, False, "")
        return facts

    def _computed(self, start: int, stop: int | None) -> RowFacts:
        """The facts of rows `start` to `stop` (None: to the last) as the tables state them,
        numbered from 0, as far as the last live row among them."""
        facts = RowFacts()
        query = (
            "SELECT chunks.row, records.rowid, records.updated, records.weight, records.status,"
            " records.id FROM chunks JOIN records ON records.id = chunks.id"
            " WHERE chunks.row >= ? AND chunks.row < ? ORDER BY chunks.row"
        )
        bounds = (start, 2**62 if stop is None else stop)
        for row, key, updated, weight, status, rid in self._db.execute(query, bounds):
            facts.put(row - start, key, updated, weight, status == SUPERSEDED, rid)
        return facts

    # --- reading ---------------------------------------------------------------------------

    @_one_at_a_time
    def row_facts(self) -> StoredFacts | None:
        """The stored row facts, with the vector file they describe and the catalog's row
        count, read in one transaction (another process's compaction renumbers rows into a
        new file); None when there are none (a catalog from before them), they are damaged,
        or they were not written for the catalog's commit and vector file."""
        try:
            self._db.execute("BEGIN")
        except sqlite3.DatabaseError as exc:
            raise CatalogCorrupt(str(exc)) from exc
        try:
            facts = self._stored_facts()
            vectors, rows = self.vectors_name(), self.next_row()
        finally:
            self._db.execute("COMMIT")
        return None if facts is None else StoredFacts(facts, vectors, rows)

    @_one_at_a_time
    def renumber(self, mapping: dict[int, int], meta: dict[str, str]) -> None:
        """After compaction: move rows to their new numbers and name the new vector file,
        in one transaction."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            facts = self._facts_to_write()
            if isinstance(facts, FactChunks):  # every row moves: all of them
                facts = self._stored_facts() or self.computed_facts()
            db.execute("UPDATE chunks SET row = -row - 1")
            db.executemany(
                "UPDATE chunks SET row = ? WHERE row = ?",
                [(new, -old - 1) for old, new in mapping.items()],
            )
            self.set_meta(meta)
            self._store_facts(facts.renumbered(mapping))  # stamped with the new file's name
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
