"""The catalog's reads of its tables (gitmem.index.catalog): records by id or filter, vector
rows and their owners. `CatalogReads` is the reading part of gitmem.index.catalog.Catalog,
which opens the connection; every method holds the catalog's lock (`one_at_a_time`)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

from gitmem.index.entries import Entry, Filter, entry_from_row

__all__ = ["CatalogReads", "one_at_a_time"]

_S = TypeVar("_S", bound="CatalogReads")
_P = ParamSpec("_P")
_R = TypeVar("_R")


def one_at_a_time(
    method: Callable[Concatenate[_S, _P], _R],
) -> Callable[Concatenate[_S, _P], _R]:
    """Hold the catalog's lock for the whole call. A hybrid recall asks the catalog from two
    threads at once (the keyword thread and the semantic half), and one sqlite3 connection is
    not safe for that: SQLite keeps the last error per connection, so a statement failing in
    one thread while the other's succeeds was reported as the wrong error (a DatabaseError:
    index damage, a rebuild) or as none at all (CPython's SystemError), seen in CI. Every
    method returns what it read whole, so the lock covers the statements' steps too."""

    @functools.wraps(method)
    def held(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._lock:
            return method(self, *args, **kwargs)

    return held


class CatalogReads:
    """The queries of gitmem.index.catalog.Catalog that read its tables."""

    _db: Any  # the catalog's sqlite3 connection (its module is the only one to import sqlite3)
    _lock: threading.RLock

    @one_at_a_time
    def admitted(self, keys: Sequence[int], flt: Filter) -> dict[int, tuple[str, str, int, float]]:
        """(id, blob, updated, weight) of each key (a records rowid) whose record `flt`
        admits."""
        where, args = flt.sql()
        out: dict[int, tuple[str, str, int, float]] = {}
        for start in range(0, len(keys), 500):
            part = list(keys[start : start + 500])
            query = (
                "SELECT rowid, id, blob, updated, weight FROM records"
                f" WHERE rowid IN ({','.join('?' * len(part))}) AND ({where})"
            )
            for key, ident, blob, updated, weight in self._db.execute(query, [*part, *args]):
                out[int(key)] = (str(ident), str(blob), int(updated), float(weight))
        return out

    @one_at_a_time
    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM records").fetchone()[0])

    @one_at_a_time
    def has_type(self, name: str) -> bool:
        """Whether some record is of type `name` (one whose schema is gone still counts)."""
        query = "SELECT 1 FROM records WHERE type = ? LIMIT 1"
        return self._db.execute(query, (name,)).fetchone() is not None

    @one_at_a_time
    def next_row(self) -> int:
        row = self._db.execute("SELECT max(row) FROM chunks").fetchone()[0]
        return 0 if row is None else int(row) + 1

    @one_at_a_time
    def live_rows(self, since: int = 0) -> int:
        """The live vector rows (numbered `since` or more: a range of the table, where a count
        of all of them reads its smaller index, ~40 ms at a million)."""
        if since <= 0:
            return int(self._db.execute("SELECT count(*) FROM chunks").fetchone()[0])
        query = "SELECT count(*) FROM chunks WHERE row >= ?"
        return int(self._db.execute(query, (since,)).fetchone()[0])

    @one_at_a_time
    def entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        wanted = list(dict.fromkeys(ids))
        out: dict[str, Entry] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            query = f"SELECT * FROM records WHERE id IN ({','.join('?' * len(part))})"
            for row in self._db.execute(query, part):
                out[row[0]] = entry_from_row(row)
        return out

    @one_at_a_time
    def matching(self, flt: Filter) -> list[str]:
        where, args = flt.sql()
        return [r[0] for r in self._db.execute(f"SELECT id FROM records WHERE {where}", args)]

    @one_at_a_time
    def rows_of(self, ids: Iterable[str]) -> list[int]:
        wanted = list(ids)
        out: list[int] = []
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            query = f"SELECT row FROM chunks WHERE id IN ({','.join('?' * len(part))})"
            out.extend(r[0] for r in self._db.execute(query, part))
        return sorted(out)

    @one_at_a_time
    def owners(self, rows: Sequence[int]) -> dict[int, str]:
        """Record id of each live row; dead rows are absent."""
        out: dict[int, str] = {}
        for start in range(0, len(rows), 500):
            part = list(rows[start : start + 500])
            query = f"SELECT row, id FROM chunks WHERE row IN ({','.join('?' * len(part))})"
            out.update({int(r): str(i) for r, i in self._db.execute(query, part)})
        return out

    @one_at_a_time
    def blob_rows(self, ids: Iterable[str]) -> list[tuple[str, int]]:
        """(blob, vector row) of each live row of the records `ids` names, each record's rows
        together and in order: looked up by id (the records' key, chunks_by_id). For a fifth
        of the records or more, every live row instead (the caller keeps the blobs it wants):
        one scan is then cheaper, ~2-3 us a row against ~15 us an id at 1M records
        (benchmarks/bench_blob_rows.py)."""
        keep = set(ids)
        if len(keep) * 5 >= (self._db.execute("SELECT max(rowid) FROM records").fetchone()[0] or 0):
            scan = "SELECT r.blob, c.row FROM chunks c JOIN records r ON r.id = c.id ORDER BY c.row"
            return [(str(b), int(r)) for b, r in self._db.execute(scan)]
        wanted = sorted(keep)
        out: list[tuple[str, int]] = []
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            query = (
                "SELECT r.blob, c.row FROM records r JOIN chunks c ON c.id = r.id"
                f" WHERE r.id IN ({','.join('?' * len(part))}) ORDER BY r.id, c.row"
            )
            out.extend((str(b), int(r)) for b, r in self._db.execute(query, part))
        return out

    @one_at_a_time
    def all_rows(self) -> list[tuple[int, str]]:
        return [(int(r), str(i)) for r, i in self._db.execute("SELECT row, id FROM chunks")]
