"""The row facts: what the semantic half needs of every vector row — its record's key and id,
when the record was updated, its weight, whether it is superseded — as packed arrays, which
gitmem.index.catalog keeps in one table and rewrites in every write transaction with the rows
they describe. The semantic half ranks 100k rows and then needs these facts for its best few
hundred: as arrays they cost a look-up in memory, not a query per record (~5 ms of a recall at
100k; the ids alone, asked by key, were ~1.2 ms of it).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from itertools import accumulate
from typing import Any, NamedTuple

__all__ = ["RowFacts", "StoredFacts"]
# The ids: each row's record id (UTF-8), one after another in one part, and where each ends.
_ID_TEXT, _ID_ENDS = "ids", "id_ends"
_FACT_TYPES = {"key": "q", "updated": "q", "weight": "d", "superseded": "b"}  # array typecodes


class RowFacts:
    """Facts of each vector row, by row number: `key` is the rowid of the row's record in the
    records table (-1: a dead row, whose record changed or left), `updated` and `weight` are
    the record's, `superseded` is 1 for a superseded record (what `Filter.admits` leaves out by
    default), and `id_of(row)` is the record's id ("" for a dead row). Stdlib arrays here;
    gitmem.index.vectors reads the same bytes with numpy. The ids stay one block of bytes until a
    writer changes a row: a reader asks a few hundred of 100k, and splitting them all would
    cost more than the look-ups it saves."""

    def __init__(self, parts: dict[str, array[Any]] | None = None) -> None:
        self.parts = parts or {name: array(code) for name, code in _FACT_TYPES.items()}
        self._ids: list[str] | None = None if parts else []  # a writer's, once it changes one
        self._id_text = b""
        self._id_ends = array("q")

    @classmethod
    def from_bytes(cls, data: dict[str, bytes]) -> RowFacts | None:
        """The facts `data` holds, or None when a part is missing or the parts disagree."""
        if set(data) != {*_FACT_TYPES, _ID_TEXT, _ID_ENDS}:
            return None
        parts = {}
        for name, code in {**_FACT_TYPES, _ID_ENDS: "q"}.items():
            part = array(code)
            if len(data[name]) % part.itemsize:
                return None
            part.frombytes(data[name])
            parts[name] = part
        ends = parts.pop(_ID_ENDS)
        if len({len(part) for part in parts.values()} | {len(ends)}) != 1:
            return None
        if (ends[-1] if ends else 0) != len(data[_ID_TEXT]) or (len(ends) and ends[0] < 0):
            return None
        facts = cls(parts)
        facts._id_text, facts._id_ends = data[_ID_TEXT], ends
        return facts

    def to_bytes(self) -> dict[str, bytes]:
        text, ends = self._id_text, self._id_ends
        if self._ids is not None:
            encoded = [rid.encode() for rid in self._ids]
            text, ends = b"".join(encoded), array("q", accumulate(map(len, encoded)))
        return {
            **{name: part.tobytes() for name, part in self.parts.items()},
            _ID_TEXT: text,
            _ID_ENDS: ends.tobytes(),
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
        text, ends = self._id_text, self._id_ends
        return [text[ends[row - 1] if row else 0 : ends[row]].decode() for row in rows]

    def ids(self) -> list[str]:
        """Every row's record id, by row (a writer's list: changing a row changes it)."""
        if self._ids is None:
            text, ends = self._id_text, self._id_ends
            self._ids = [
                text[start:end].decode() for start, end in zip([0, *ends], ends, strict=False)
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
            self.put(row, -1, 0, 0.0, False, "")

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


class StoredFacts(NamedTuple):
    """Row facts as a reader finds them: for the vector file `vectors` (a name in the index
    directory), whose first `rows` rows the catalog knows."""

    facts: RowFacts
    vectors: str
    rows: int
