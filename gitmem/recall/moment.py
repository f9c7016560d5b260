"""What recall ranks from at a moment of the past (a time, not a commit): the span index
(gitmem.recall.spans) searched at that moment, and the timeline's vectors of the versions live
then. Nothing here reads the whole view or the whole history: the keyword half names its hits
live at T, entries are read for the ids asked, and the semantic half reads the live spans'
vector rows (one scan of the spans' table) and ranks them exactly, as a view did.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence

from gitmem.index.entries import Entry, Filter
from gitmem.recall.spans import Spans
from gitmem.recall.spanview import SpanView
from gitmem.recall.timeline import Timeline
from gitmem.recall.timelinedb import entries_of, rows_of

__all__ = ["MomentIndex", "best_per_record"]

_Rows = tuple[list[tuple[int, int, str]], list[int], list[int]]


class MomentIndex:
    """A `recall.Source` for the memory at effective time `t` (between the store's first
    commit and HEAD's written time)."""

    present = False
    notes: tuple[str, ...] = ()

    def __init__(self, timeline: Timeline, spans: Callable[[], Spans], t: int) -> None:
        """`spans`: the span index, caught up with the timeline (opened on first use)."""
        self.timeline = timeline
        self.model = timeline.model
        self.notices: list[str] = []
        self.t = t
        self._spans = spans
        self._text: SpanView | None = None
        self._entries: dict[str, Entry] = {}
        self._admitted: dict[Filter, _Rows] = {}

    def ensure_current(self) -> None:
        """Fixed once made; the timeline and its spans caught up before."""

    def prepare(self) -> None:
        """Open the span index (it may be caught up or built: call outside recall's threads)."""
        self.text()

    def text(self) -> SpanView:
        if self._text is None:
            self._text = SpanView(self._spans(), self.t, self._entries_of)
        return self._text

    def keyword(
        self, query: str, n: int, flt: Filter, context: float = 0.0
    ) -> list[tuple[str, float]]:
        return self.text().search(query, n, flt, context)

    def keyword_ceiling(self, query: str) -> float:
        return self.text().ceiling(query)

    def source_prior(self, query: str, ids: Sequence[str]) -> dict[str, float]:
        return self.text().source_prior(query, ids)

    def context_scores(self, query: str, ids: Sequence[str], weight: float) -> dict[str, float]:
        return self.text().context_scores(query, ids, weight)

    def semantic(self, query: str, n: int, flt: Filter) -> list[tuple[str, float]] | None:
        """The best-chunk cosine of the records live at T that `flt` admits, ranked exactly
        over their vector rows."""
        if self.model is None:
            return None
        from gitmem.index.vectors import Ranking, query_row

        runs, starts, subset = self._rows(flt)
        q = query_row(self.model.encode_query(query))
        ranking = Ranking(self.timeline.matrix(), q, subset)
        return best_per_record(
            ranking.top, n, lambda row: runs[bisect.bisect_right(starts, row) - 1][2]
        )

    def _rows(self, flt: Filter) -> _Rows:
        """The vector rows of the records live at T that `flt` admits: (first row, count, id)
        of each version in row order, the first rows, and every row (kept per filter)."""
        found = self._admitted.get(flt)
        if found is not None:
            return found
        where = "1" if flt.include_superseded else "active = 1"
        live = self.text().live("id, blob, row0, nrows", where)
        if flt.narrow:
            entries = self._entries_of(blob for _, blob, _, _ in live)
            live = [r for r in live if (e := entries.get(r[1])) is not None and flt.admits(e)]
        looked = rows_of(self.timeline.db, [blob for _, blob, first, _ in live if first < 0])
        runs = sorted(
            [(first, count, rid) for rid, _, first, count in live if first >= 0]
            + [
                (row, 1, rid)
                for rid, blob, first, _ in live
                if first < 0
                for row in looked.get(blob, ())
            ]
        )
        subset = [row for first, count, _ in runs for row in range(first, first + count)]
        found = self._admitted[flt] = (runs, [first for first, _, _ in runs], subset)
        return found

    def scoring(self, ids: Sequence[str]) -> dict[str, tuple[int, float]]:
        return {rid: (entry.updated, entry.weight) for rid, entry in self.entries(ids).items()}

    def entries(self, ids: Sequence[str]) -> dict[str, Entry]:
        """The entries of `ids` live at T (read once each)."""
        known = self._entries
        wanted = [rid for rid in ids if rid not in known]
        if wanted:
            blobs = dict(self.text().rows("id, blob", "1", wanted))
            found = self._entries_of(blobs.values())
            known.update((rid, found[blob]) for rid, blob in blobs.items() if blob in found)
        return {rid: known[rid] for rid in ids if rid in known}

    def _entries_of(self, blobs: Iterable[str]) -> dict[str, Entry]:
        return entries_of(self.timeline.db, blobs)


def best_per_record(
    top: Callable[[int], list[tuple[int, float]]], n: int, owner: Callable[[int], str]
) -> list[tuple[str, float]]:
    """The n best records by their best row's score (ties by id), widening the rows asked of
    `top` until n records are found or the rows run out."""
    want = n + n // 2
    while True:
        pairs = top(want)
        best: dict[str, float] = {}
        for row, score in pairs:
            best.setdefault(owner(row), score)
        if len(best) >= n or len(pairs) < want:
            return sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
        want *= 4
