"""The keyword half of the memory at a moment, searched in the span index
(gitmem.recall.spans) instead of an index of the view's own records.

A search asks the span index for its best documents and names only those live at T (t0 <= T <
t1) that the filter admits: their keys are looked up in the spans' table (gitmem.index.texthits
keeps fetching while too few are named). Nothing here grows with the view: each search reads
the rows of the hits it looks at. BM25's statistics are those of every span in the index, not
of the view alone: docs/time-travel.md, "How exact is it?", says what that changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from gitmem.index.context import SOURCES_DEPTH
from gitmem.index.entries import Entry, Filter
from gitmem.recall.spans import Spans
from gitmem.recall.timelinedb import chunks, marks

__all__ = ["SpanView"]

_LIVE = "t0 <= ? AND (t1 IS NULL OR t1 > ?)"
_SOURCES_AT_ONCE = 3000  # live sources' spans searched by their ids (textindex's term set)
Resolve = Callable[[list[int]], dict[int, tuple[str, str]]]
Entries = Callable[[Iterable[str]], dict[str, Entry]]  # blob -> entry, of valid versions


class SpanView:
    """The span index searched at effective time `t`."""

    def __init__(self, spans: Spans, t: int, entries: Entries) -> None:
        self.spans = spans
        self.t = t
        self._entries = entries
        self._sourced: frozenset[str] | None = None

    def search(self, query: str, n: int, flt: Filter, context: float) -> list[tuple[str, float]]:
        """(id, BM25 score) of the best records live at T that `flt` admits."""
        below = self._below("spans")
        hits = self.spans.text.search(query, n, None, self._named(flt), context, below)
        return [(h.id, h.score) for h in hits if h.key >= 0]  # every span has a key

    def ceiling(self, query: str) -> float:
        return self.spans.text.ceiling(query)

    def source_prior(self, query: str, ids: Sequence[str]) -> dict[str, float]:
        """As gitmem.index.context.source_prior, over the sources' documents live at T."""
        sources = self.spans.sources
        ceiling = sources.ceiling(query)
        if ceiling <= 0 or not ids:
            return {}
        found = sources.search(
            query, SOURCES_DEPTH, self._live_sources(), self._sources, below=self._below("sources")
        )
        share = {h.id: min(1.0, h.score / ceiling) for h in found if h.score > 0 and h.key >= 0}
        rows = self.rows("id, source", "active = 1 AND source != ''", ids)
        return {rid: share[source] for rid, source in rows if source in share}

    def context_scores(self, query: str, ids: Sequence[str], weight: float) -> dict[str, float]:
        named = {f"{rid}@{key}": rid for rid, key in self.rows("id, key", "1", ids)}
        scores = self.spans.text.context_scores(query, sorted(named), weight)
        return {named[span]: score for span, score in scores.items() if span in named}

    def rows(self, columns: str, where: str, ids: Sequence[str]) -> list[Any]:
        """`columns` of the spans of `ids` live at T that match `where`."""
        out: list[Any] = []
        for part in chunks(sorted(set(ids))):
            query = (
                f"SELECT {columns} FROM spans WHERE id IN ({marks(len(part))})"
                f" AND {_LIVE} AND {where}"
            )
            out.extend(self.spans.db.execute(query, [*part, self.t, self.t]).fetchall())
        return out

    def live(self, columns: str, where: str) -> list[Any]:
        """`columns` of every span live at T that matches `where` (one scan of the table)."""
        query = f"SELECT {columns} FROM spans WHERE {_LIVE} AND {where}"
        return self.spans.db.execute(query, (self.t, self.t)).fetchall()

    def _live_sources(self) -> frozenset[str] | None:
        """The sources' spans live at T, when few enough for tantivy to search only them (a
        source's document changes with each of its records: most of its spans are closed);
        None otherwise (the hits are named out instead). Read once per moment."""
        if self._sourced is None:
            rows = self._sources_live("name, key", _SOURCES_AT_ONCE + 1)
            self._sourced = (
                frozenset(f"{name}@{key}" for name, key in rows)
                if len(rows) <= _SOURCES_AT_ONCE
                else frozenset()
            )
        return self._sourced or None

    def _sources_live(self, columns: str, limit: int) -> list[Any]:
        query = f"SELECT {columns} FROM sources WHERE {_LIVE} LIMIT ?"
        return self.spans.db.execute(query, (self.t, self.t, limit)).fetchall()

    def _below(self, table: str) -> int | None:
        """The first key of `table` opened after T (keys grow with t0: gitmem.recall.spans);
        None when every span opened by T."""
        query = f"SELECT min(key) FROM {table} WHERE t0 > ?"
        found = self.spans.db.execute(query, (self.t,)).fetchone()[0]
        return None if found is None else int(found)

    def _named(self, flt: Filter) -> Resolve:
        """Names the keys of the records' spans live at T that `flt` admits."""

        def resolve(keys: list[int]) -> dict[int, tuple[str, str]]:
            found = self._keyed("spans", "id, blob, active", keys)
            if not flt.include_superseded:
                found = {key: row for key, row in found.items() if row[2]}
            if flt.narrow:
                entries = self._entries(row[1] for row in found.values())
                found = {
                    key: row
                    for key, row in found.items()
                    if (entry := entries.get(row[1])) is not None and flt.admits(entry)
                }
            return {key: (row[0], row[1]) for key, row in found.items()}

        return resolve

    def _sources(self, keys: list[int]) -> dict[int, tuple[str, str]]:
        found = self._keyed("sources", "name, digest", keys)
        return {key: (row[0], row[1]) for key, row in found.items()}

    def _keyed(self, table: str, columns: str, keys: list[int]) -> dict[int, tuple[Any, ...]]:
        """key -> `columns` of `table`'s spans among `keys` live at T."""
        out: dict[int, tuple[Any, ...]] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            query = (
                f"SELECT key, {columns} FROM {table} WHERE key IN ({marks(len(part))}) AND {_LIVE}"
            )
            for key, *row in self.spans.db.execute(query, [*part, self.t, self.t]):
                out[key] = tuple(row)
        return out
