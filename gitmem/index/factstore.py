"""The row facts (gitmem.index.rowfacts) as the catalog stores them: the `row_fact_chunks`
table, one blob a part of a chunk of CHUNK_ROWS rows ("key.0", "ids.0", ... "id_ends.976"),
and in the `row_facts` table a stamp saying what they were written for. A write transaction
rewrites only the chunks it changed (a catch-up at a million rows rewrote them all, ~2 s:
docs/benchmarks.md, "Session 14: catch-up with row facts in chunks").

The stamp is the catalog's (commit and vector file, gitmem.index.catalog) and, after a
separator, "chunks SIZE rows ROWS". A stamp without it is a gitmem's from before chunks, whose
parts are whole, one of each name, in `row_facts` beside the stamp: read as they are, and
moved to chunks by the next write (`write` of whole facts), no rebuild. That older gitmem
reads `row_facts` alone: it finds the stamp not its own there and does without the facts;
writing, it puts its whole parts and its own stamp there, which it and this version then read
(the chunks it leaves behind in their own table are not).

Functions of the catalog's sqlite3 connection (`db`: typed Any here, as sqlite3 is the
catalog's to import), called inside its transactions; SQLite's errors (no such table, in a
catalog from before row facts) are the catalog's to catch.
"""

from __future__ import annotations

from typing import Any

from gitmem.index import rowfacts
from gitmem.index.rowfacts import PART_NAMES, FactChunks, RowFacts, chunk_part

__all__ = ["TABLES", "chunk_facts", "chunked_rows", "read", "sound", "write"]

TABLES = (
    "CREATE TABLE IF NOT EXISTS row_facts (part TEXT PRIMARY KEY, data BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS row_fact_chunks (part TEXT PRIMARY KEY, data BLOB NOT NULL)",
)
_STAMP = "stamp"  # the part that says what they were written for
_CHUNKED = "chunks {size} rows {rows}"
_WHOLE = -1  # what `_form` says of an older gitmem's whole parts
_ITEM_BYTES = {"key": 8, "updated": 8, "weight": 8, "superseded": 1, "id_ends": 8}


def _form(stamp: bytes, catalogs: str) -> int | None:
    """The rows of the chunked facts `stamp` describes (_WHOLE: whole parts), or None when
    they were not written for the catalog's stamp `catalogs`, or in chunks of another size."""
    text = stamp.decode(errors="replace")
    if text == catalogs:
        return _WHOLE
    mine, _, written = text.rpartition("\x1f")
    rows = written.removeprefix(_CHUNKED.format(size=rowfacts.CHUNK_ROWS, rows=""))
    if (
        mine != catalogs
        or not (rows.isascii() and rows.isdigit() and len(rows) <= 18)  # int() takes them
        or written != _CHUNKED.format(size=rowfacts.CHUNK_ROWS, rows=rows)
    ):
        return None
    return int(rows)


def chunked_rows(db: Any, catalogs: str) -> int | None:
    """The rows of the stored facts when they are in chunks, written for `catalogs`."""
    found = db.execute("SELECT data FROM row_facts WHERE part = ?", (_STAMP,)).fetchone()
    if found is None or not isinstance(found[0], bytes):
        return None
    rows = _form(found[0], catalogs)
    return None if rows is None or rows == _WHOLE else rows


def _item(data: bytes) -> int:
    return int.from_bytes(data, "little", signed=True)


def sound(db: Any, rows: int) -> bool:
    """Whether the chunks of `rows` rows are all there and agree, as RowFacts.from_chunks
    checks, without reading them: SQLite knows each blob's length, and of the ends only the
    first and last items are read (~40 ms at a million rows on a loaded host, against
    0.3-0.6 s to read them all)."""
    found: dict[str, int] = {}
    sizes = "SELECT part, typeof(data), length(data) FROM row_fact_chunks"
    for part, kind, length in db.execute(sizes):
        if kind != "blob":
            return False
        found[str(part)] = int(length)
    ends: dict[str, tuple[int, int]] = {}
    edges = (  # the id_ends parts alone, by the key's range: 'id_ends.' < their names < 'id_ends/'
        "SELECT part, substr(data, 1, 8), substr(data, -8) FROM row_fact_chunks"
        " WHERE part > 'id_ends.' AND part < 'id_ends/'"
    )
    for part, first, last in db.execute(edges):
        if not isinstance(first, bytes) or not isinstance(last, bytes):  # an empty blob's: NULL
            return False
        ends[str(part)] = (_item(first), _item(last))
    if len(found) != rowfacts.chunk_count(rows) * len(PART_NAMES):
        return False
    for n in range(rowfacts.chunk_count(rows)):
        count = rowfacts.chunk_rows(rows, n)
        first, last = ends.get(chunk_part("id_ends", n), (-1, -1))
        if first < 0 or found.get(chunk_part("ids", n)) != last:
            return False
        for name, size in _ITEM_BYTES.items():
            if found.get(chunk_part(name, n)) != count * size:
                return False
    return True


def chunk_facts(db: Any, n: int, rows: int) -> RowFacts | None:
    """Chunk `n`'s stored facts (of `rows` in all), numbered from 0; None if damaged."""
    names = {chunk_part(name, n): name for name in PART_NAMES}
    query = f"SELECT part, data FROM row_fact_chunks WHERE part IN ({','.join('?' * len(names))})"
    found = {names[str(part)]: data for part, data in db.execute(query, list(names))}
    facts = RowFacts.from_bytes(found)  # None for a part that is not bytes (damage)
    return facts if facts is not None and len(facts) == rowfacts.chunk_rows(rows, n) else None


def read(db: Any, catalogs: str) -> RowFacts | None:
    """All the stored facts written for `catalogs`, in either form; None when there are none
    (no table: a gitmem before row facts), they are damaged, or they are another's."""
    found = {str(name): data for name, data in db.execute("SELECT part, data FROM row_facts")}
    if not all(isinstance(data, bytes) for data in found.values()):  # text: damaged
        return None
    rows = _form(found.pop(_STAMP, b""), catalogs)
    if rows is None:
        return None
    if rows == _WHOLE:  # an older gitmem's whole parts
        return RowFacts.from_bytes(found)
    chunks = {
        str(name): data for name, data in db.execute("SELECT part, data FROM row_fact_chunks")
    }
    return RowFacts.from_chunks(chunks, rows)  # None for a part that is not bytes (damage)


def write(db: Any, catalogs: str, facts: RowFacts | FactChunks) -> None:
    """Store `facts` for the catalog's stamp `catalogs`: the chunks a FactChunks changed, or
    all of a RowFacts (in place of whatever form was there: no stale chunk past the end, no
    older gitmem's whole parts, stay)."""
    for table in TABLES:  # a catalog written before row facts, or chunks, lacks them
        db.execute(table)
    if isinstance(facts, FactChunks):
        chunks = facts.changed()
    else:
        db.execute("DELETE FROM row_fact_chunks")
        chunks = facts.chunks()
    db.execute("DELETE FROM row_facts")  # an older gitmem's whole parts, when there were
    written = _CHUNKED.format(size=rowfacts.CHUNK_ROWS, rows=len(facts))
    db.execute(
        "INSERT INTO row_facts (part, data) VALUES (?, ?)",
        (_STAMP, f"{catalogs}\x1f{written}".encode()),
    )
    db.executemany(
        "INSERT OR REPLACE INTO row_fact_chunks (part, data) VALUES (?, ?)",
        [
            (chunk_part(name, n), data)
            for n, chunk in chunks.items()
            for name, data in chunk.items()
        ],
    )
