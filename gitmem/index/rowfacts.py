"""The row facts: what the semantic half needs of every vector row — its record's key and id,
when the record was updated, its weight, whether it is superseded — as packed arrays. The
semantic half ranks 100k rows and then needs these facts for its best few hundred: as arrays
they cost a look-up in memory, not a query per record (~5 ms of a recall at 100k; the ids
alone, asked by key, were ~1.2 ms of it).

gitmem.index.catalog stores them in chunks of CHUNK_ROWS rows, each part of each chunk a blob
of its own, and a write transaction rewrites only the chunks it changed (`FactChunks`): at a
million rows, rewriting them whole was ~2 s of every catch-up (docs/benchmarks.md, "Session
14: catch-up with row facts in chunks"). A reader joins the chunks' arrays into one of each.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Mapping
from itertools import accumulate
from typing import Any, NamedTuple

__all__ = [
    "CHUNK_ROWS",
    "FactChunks",
    "RowFacts",
    "StoredFacts",
    "chunk_count",
    "chunk_part",
    "chunk_rows",
]
CHUNK_ROWS = 1024  # rows a chunk holds (each but the last exactly as many)
# The ids: each row's record id (UTF-8), one after another in one part, and where each ends.
_ID_TEXT, _ID_ENDS = "ids", "id_ends"
_FACT_TYPES = {"key": "q", "updated": "q", "weight": "d", "superseded": "b"}  # array typecodes
PART_NAMES = (*_FACT_TYPES, _ID_TEXT, _ID_ENDS)
_DEAD = (-1, 0, 0.0, False, "")  # a dead row's facts (key, updated, weight, superseded, id)


def chunk_count(rows: int) -> int:
    """How many chunks of CHUNK_ROWS rows hold `rows` rows."""
    return -(-rows // CHUNK_ROWS)


def chunk_rows(rows: int, chunk: int) -> int:
    """The rows chunk `chunk` holds of `rows` in all (the last may be short)."""
    return min(CHUNK_ROWS, rows - chunk * CHUNK_ROWS)


def chunk_part(name: str, chunk: int) -> str:
    """The stored name of part `name` of chunk `chunk` ("key.0", "id_ends.12")."""
    return f"{name}.{chunk}"


_ITEM_BYTES = {name: array(code).itemsize for name, code in _FACT_TYPES.items()}


def _id_ends(text: bytes, ends_bytes: bytes, rows: int) -> tuple[bytes, array[int]] | None:
    """The ids of `rows` rows as stored (their text and where each ends), or None when the
    ends are not `rows` items whose first and last stay within the text."""
    ends = array("q")
    if len(ends_bytes) != rows * ends.itemsize:
        return None
    ends.frombytes(ends_bytes)
    if (ends[-1] if ends else 0) != len(text) or (rows and ends[0] < 0):
        return None
    return text, ends


def _id_block(text: bytes, ends_bytes: bytes, rows: int) -> tuple[bytes, array[int]] | None:
    """As `_id_ends`, and None too when an end is before the one before it or an id is not
    UTF-8: checked here, for a reader (`ids_of`) to find them sound. ~30-45 us a chunk
    (benchmarks/bench_fact_ids_check.py), mostly the ends' order; ids are ASCII
    (record.ID_RE) but for damage or a hand-made file, so one isascii() call checks them."""
    block = _id_ends(text, ends_bytes, rows)
    if block is None:
        return None
    items = block[1].tolist()
    if items != sorted(items):
        return None
    if not text.isascii():
        try:
            for start, end in zip([0, *items], items, strict=False):
                text[start:end].decode()
        except UnicodeDecodeError:
            return None
    return block


def _rows_of(data: Mapping[str, bytes]) -> int | None:
    """The rows that `data` (one part of each name) holds, or None when a part is missing,
    is not bytes, or holds another number of rows."""
    if set(data) != set(PART_NAMES) or not all(isinstance(v, bytes) for v in data.values()):
        return None
    rows = len(data["key"]) // _ITEM_BYTES["key"]
    if any(len(data[name]) != rows * size for name, size in _ITEM_BYTES.items()):
        return None
    return rows


class RowFacts:
    """Facts of each vector row, by row number: `key` is the rowid of the row's record in the
    records table (-1: a dead row, whose record changed or left), `updated` and `weight` are
    the record's, `superseded` is 1 for a superseded record (what `Filter.admits` leaves out by
    default), and `id_of(row)` is the record's id ("" for a dead row). Stdlib arrays here;
    gitmem.index.vectors reads the same bytes with numpy. The ids stay blocks of bytes (one a
    stored chunk) until a writer changes a row: a reader asks a few hundred of 100k, and
    splitting them all would cost more than the look-ups it saves."""

    def __init__(self, parts: dict[str, array[Any]] | None = None) -> None:
        self.parts = parts or {name: array(code) for name, code in _FACT_TYPES.items()}
        self._ids: list[str] | None = None if parts else []  # a writer's, once it changes one
        self._id_blocks: list[tuple[bytes, array[int]]] = []  # each block's text and ends
        self._block_rows = 1  # rows a block holds (each but the last)

    @classmethod
    def from_bytes(cls, data: Mapping[str, bytes]) -> RowFacts | None:
        """The facts `data` holds (one part of each name, as `to_bytes` gives), or None when
        a part is missing or the parts disagree."""
        return cls.from_chunks({chunk_part(name, 0): part for name, part in data.items()})

    @classmethod
    def from_chunks(cls, data: Mapping[str, bytes], rows: int | None = None) -> RowFacts | None:
        """The facts of `rows` rows from their chunks of CHUNK_ROWS rows (None: one chunk,
        however long), each part of chunk n named `chunk_part(name, n)` in `data`; None when
        one is missing or disagrees, or `data` holds others."""
        count = 1 if rows is None else chunk_count(rows)
        if len(data) != count * len(PART_NAMES):
            return None
        blocks, pieces = [], []
        for n in range(count):
            chunk = {name: data.get(chunk_part(name, n), b"") for name in PART_NAMES}
            held = _rows_of(chunk)
            if held is None or (rows is not None and held != chunk_rows(rows, n)):
                return None
            block = _id_block(chunk[_ID_TEXT], chunk[_ID_ENDS], held)
            if block is None:
                return None
            blocks.append(block)
            pieces.append(chunk)
        parts = {}
        for name, code in _FACT_TYPES.items():
            parts[name] = array(code)
            parts[name].frombytes(b"".join(chunk[name] for chunk in pieces))
        facts = cls(parts)
        facts._id_blocks = blocks
        facts._block_rows = CHUNK_ROWS if rows is not None else max(len(facts), 1)
        return facts

    def to_bytes(self, start: int = 0, stop: int | None = None) -> dict[str, bytes]:
        """The parts of rows `start` to `stop` (all: to the end) as bytes, numbered from 0."""
        stop = len(self) if stop is None else min(stop, len(self))
        if self._ids is not None:
            ids = self._ids[start:stop]
        elif len(self._id_blocks) == 1:  # one block: the bytes as they are, cut
            text, ends = self._id_blocks[0]
            first = ends[start - 1] if start else 0
            cut = array("q", ends[start:stop])
            whole = text[first : cut[-1] if len(cut) else first]
            return self._fixed_bytes(start, stop) | {
                _ID_TEXT: whole,
                _ID_ENDS: array("q", (end - first for end in cut)).tobytes(),
            }
        else:
            ids = self.ids_of(range(start, stop))
        encoded = [rid.encode() for rid in ids]
        return self._fixed_bytes(start, stop) | {
            _ID_TEXT: b"".join(encoded),
            _ID_ENDS: array("q", accumulate(map(len, encoded))).tobytes(),
        }

    def _fixed_bytes(self, start: int, stop: int) -> dict[str, bytes]:
        return {name: part[start:stop].tobytes() for name, part in self.parts.items()}

    def chunks(self) -> dict[int, dict[str, bytes]]:
        """Every chunk's parts as bytes, by chunk number (`to_bytes` of its rows)."""
        return {
            n: self.to_bytes(start, start + CHUNK_ROWS)
            for n, start in enumerate(range(0, len(self), CHUNK_ROWS))
        }

    def __len__(self) -> int:
        return len(self.parts["key"])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RowFacts):
            return NotImplemented
        return self.parts == other.parts and self.ids() == other.ids()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def id_of(self, row: int) -> str:
        """The id of the record row `row` belongs to ("" for a dead row)."""
        return self.ids_of([row])[0]

    def ids_of(self, rows: Iterable[int]) -> list[str]:
        """The ids of the records `rows` belong to, in their order."""
        if self._ids is not None:
            ids = self._ids
            return [ids[row] for row in rows]
        blocks, size = self._id_blocks, self._block_rows
        out = []
        for row in rows:
            block, at = divmod(row, size)
            text, ends = blocks[block]
            out.append(text[ends[at - 1] if at else 0 : ends[at]].decode())
        return out

    def ids(self) -> list[str]:
        """Every row's record id, by row (a writer's list: changing a row changes it)."""
        if self._ids is None:
            self._ids = [
                text[start:end].decode()
                for text, ends in self._id_blocks
                for start, end in zip([0, *ends], ends, strict=False)
            ]
        return self._ids

    def put(
        self, row: int, key: int, updated: int, weight: float, superseded: bool, rid: str
    ) -> None:
        ids = self.ids()
        short = row + 1 - len(self)
        if short > 0:  # rows past the end: dead until set
            for name, part in self.parts.items():
                part.extend([-1 if name == "key" else 0] * short)
            ids.extend([""] * short)
        parts = self.parts
        parts["key"][row] = key
        parts["updated"][row] = updated
        parts["weight"][row] = weight
        parts["superseded"][row] = int(superseded)
        ids[row] = rid

    def kill(self, row: int) -> None:
        """Mark a row dead (its facts as a row never set: one form for equal facts)."""
        if row < len(self):
            self.put(row, *_DEAD)

    def renumbered(self, mapping: dict[int, int]) -> RowFacts:
        """The facts after compaction moved row `old` to `mapping[old]` (others are dead)."""
        fresh = RowFacts()
        parts = self.parts
        for old, new in sorted(mapping.items(), key=lambda pair: pair[1]):
            if old < len(self):
                fresh.put(
                    new,
                    parts["key"][old],
                    parts["updated"][old],
                    parts["weight"][old],
                    bool(parts["superseded"][old]),
                    self.id_of(old),
                )
        return fresh


class FactChunks:
    """A writer's row facts in chunks of CHUNK_ROWS rows, as the catalog stores them: `put` and
    `kill` as RowFacts', each loading only the chunk it changes (`load(n)`: chunk n's facts,
    numbered from 0) and marking it dirty, so that a write costs what it changed rather than
    the store's size. Rows past the end are dead until set, as in RowFacts."""

    def __init__(self, rows: int, load: Callable[[int], RowFacts]) -> None:
        self._rows, self._load, self.size = rows, load, CHUNK_ROWS
        self._stored = rows  # rows in stored chunks: a chunk past them is new
        self._chunks: dict[int, RowFacts] = {}
        self.dirty: set[int] = set()

    def __len__(self) -> int:
        return self._rows

    def _chunk(self, n: int) -> RowFacts:
        if n not in self._chunks:
            self._chunks[n] = self._load(n) if n * self.size < self._stored else RowFacts()
        return self._chunks[n]

    def put(
        self, row: int, key: int, updated: int, weight: float, superseded: bool, rid: str
    ) -> None:
        size = self.size
        n, at = divmod(row, size)
        if row >= self._rows:  # every chunk before n filled to its size, with dead rows
            for short in range(self._rows // size, n):  # a partial last one, or new
                self._chunk(short).put(size - 1, *_DEAD)
                self.dirty.add(short)
            self._rows = row + 1
        self._chunk(n).put(at, key, updated, weight, superseded, rid)
        self.dirty.add(n)

    def kill(self, row: int) -> None:
        if row < self._rows:
            self.put(row, *_DEAD)

    def changed(self) -> dict[int, dict[str, bytes]]:
        """The parts of each chunk changed, as bytes, by chunk number."""
        return {n: self._chunks[n].to_bytes() for n in sorted(self.dirty)}


class StoredFacts(NamedTuple):
    """Row facts as a reader finds them: for the vector file `vectors` (a name in the index
    directory), whose first `rows` rows the catalog knows."""

    facts: RowFacts
    vectors: str
    rows: int
