"""The keyword half of a view of the past at a moment, searched in the span index
(gitmem.recall.spans) instead of an index of the view's own records.

A search asks the span index for its best documents and names only those live at T (t0 <= T <
t1): their keys are looked up in the spans' table (gitmem.index.texthits keeps fetching while
too few are named). Nothing here grows with the view: each search reads the rows of the hits
it looks at. BM25's statistics are those of every span in the index, not of the view alone:
docs/time-travel.md, "How exact is it?", says what that changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gitmem.index.context import SOURCES_DEPTH
from gitmem.recall.spans import Spans
from gitmem.recall.timelinedb import chunks, marks

__all__ = ["SpanView"]

_LIVE = "t0 <= ? AND (t1 IS NULL OR t1 > ?)"
Resolve = Callable[[list[int]], dict[int, tuple[str, str]]]


class SpanView:
    """What PastText answers for a view at effective time `t`, from the spans live then."""

    def __init__(self, spans: Spans, t: int) -> None:
        self.spans = spans
        self.t = t

    def search(
        self, query: str, n: int, allowed: frozenset[str] | None, context: float
    ) -> list[tuple[str, float]]:
        """(id, BM25 score) of the best records among `allowed` ids (None: all)."""
        hits = self.spans.text.search(query, n, None, self._live("spans", allowed), context)
        return [(h.id, h.score) for h in hits if h.key >= 0]  # every span has a key

    def ceiling(self, query: str) -> float:
        return self.spans.text.ceiling(query)

    def source_prior(self, query: str, ids: Sequence[str]) -> dict[str, float]:
        """As gitmem.index.context.source_prior, over the sources' documents live at T."""
        sources = self.spans.sources
        ceiling = sources.ceiling(query)
        if ceiling <= 0 or not ids:
            return {}
        found = sources.search(query, SOURCES_DEPTH, resolve=self._live("sources", None))
        share = {h.id: min(1.0, h.score / ceiling) for h in found if h.score > 0 and h.key >= 0}
        rows = self._rows("id, source", "active = 1 AND source != ''", ids)
        return {rid: share[source] for rid, source in rows if source in share}

    def context_scores(self, query: str, ids: Sequence[str], weight: float) -> dict[str, float]:
        named = {f"{rid}@{key}": rid for rid, key in self._rows("id, key", "1", ids)}
        scores = self.spans.text.context_scores(query, sorted(named), weight)
        return {named[span]: score for span, score in scores.items() if span in named}

    def _rows(self, columns: str, where: str, ids: Sequence[str]) -> list[tuple[str, str]]:
        """`columns` of the spans of `ids` live at T that match `where`."""
        out: list[tuple[str, str]] = []
        for part in chunks(sorted(set(ids))):
            query = (
                f"SELECT {columns} FROM spans WHERE id IN ({marks(len(part))})"
                f" AND {_LIVE} AND {where}"
            )
            out.extend(self.spans.db.execute(query, [*part, self.t, self.t]).fetchall())
        return out

    def _live(self, table: str, allowed: frozenset[str] | None) -> Resolve:
        """Names the keys of `table`'s spans live at T (and among `allowed` ids)."""
        name = "id" if table == "spans" else "name"
        blob = "blob" if table == "spans" else "digest"

        def resolve(keys: list[int]) -> dict[int, tuple[str, str]]:
            out: dict[int, tuple[str, str]] = {}
            for start in range(0, len(keys), 500):
                part = keys[start : start + 500]
                query = (
                    f"SELECT key, {name}, {blob} FROM {table}"
                    f" WHERE key IN ({marks(len(part))}) AND {_LIVE}"
                )
                for key, rid, version in self.spans.db.execute(query, [*part, self.t, self.t]):
                    if allowed is None or rid in allowed:
                        out[key] = (rid, version)
            return out

        return resolve
