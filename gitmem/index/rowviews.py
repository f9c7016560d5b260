"""The facts of vector rows as the semantic half's ranking reads them (gitmem.index.semantic)
where it has no arrays of every row's facts (gitmem.index.vectors.RowArrays): asked of the
catalog for the rows a vector graph proposes, or read from the row facts' stdlib arrays."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gitmem.index.entries import SUPERSEDED, Entry, Filter
from gitmem.index.rowfacts import RowFacts

__all__ = ["AskedRows", "FactsView"]


class AskedRows:
    """The row facts of the rows a vector graph proposes, asked of the catalog for those rows
    alone, as RowArrays gives them for every row: read whole, the stored facts are ~70 MB of
    SQLite blobs at 1M rows, 0.2-0.5 s of a `gitmem recall` that then uses a few hundred rows'
    (docs/benchmarks.md, "Session 14: `gitmem recall` at a million, whole process"). The same
    facts: the stored ones are written from these tables (Catalog.computed_facts): a row no
    record owns is dead, a superseded record's rows hidden unless asked for. Indexed by rows,
    it says which of them a recall leaves out (GraphRanking's `hide`, which asks about the
    best rows only, in score order, even when it ranks every row); the record's id is its key,
    None for a dead row."""

    def __init__(
        self,
        owners: Callable[[list[int]], dict[int, str]],
        entries: Callable[[Sequence[str]], dict[str, Entry]],
        flt: Filter,
    ) -> None:
        self._owners, self._entries = owners, entries
        self._include_superseded = flt.include_superseded
        self._known: dict[int, Entry | None] = {}  # row: its record's entry (None: dead)

    def _ask(self, rows: Sequence[int]) -> list[Entry | None]:
        missing = [row for row in rows if row not in self._known]
        if missing:
            owners = self._owners(missing)
            found = self._entries(list(dict.fromkeys(owners.values())))
            for row in missing:
                rid = owners.get(row)
                self._known[row] = None if rid is None else found.get(rid)
        return [self._known[row] for row in rows]

    def __getitem__(self, rows: Any) -> Any:
        return [
            entry is None or (entry.status == SUPERSEDED and not self._include_superseded)
            for entry in self._ask(rows.tolist())
        ]

    def take(self, part: str, rows: list[int]) -> list[Any]:
        field = "id" if part == "key" else part  # "key", "updated" or "weight"
        return [None if entry is None else getattr(entry, field) for entry in self._ask(rows)]

    def ids_of(self, rows: list[int]) -> list[str]:
        return self.take("key", rows)


class FactsView:
    """The row facts' stdlib arrays as `_best_records` reads them (as vectors.RowArrays)."""

    def __init__(self, facts: RowFacts) -> None:
        self.ids_of = facts.ids_of
        self._parts = facts.parts

    def take(self, part: str, rows: list[int]) -> list[Any]:
        values = self._parts[part]
        return [values[row] for row in rows]
