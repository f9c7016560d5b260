"""The keyword half of a view of the past, with context and the source prior as they stood then
(docs/search.md, "`--as-of`").

A record's context and its source's document are pure functions of one tree's active records
(gitmem.index.neighbours). The time-travel cache keys its versions by blob, and a blob's
context depends on the moment, so a view makes its own: on its first keyword search, the
view's records are indexed as a full build of the HEAD index would index that tree (the same
documents, contexts and sources' index, made by the same code: gitmem.index.context.filling),
into a temporary directory removed with the view. BM25's statistics are then those of the
view's records alone, so a recall as of a commit ranks as a clone checked out at that commit
recalls at its HEAD. Only the keyword half needs it: the semantic half's vectors are of each
version's own chunks, which the time-travel cache already holds. The documents are made from
each version's record and fields as the cache keeps them, never by parsing a blob again.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Callable, Sequence
from itertools import islice
from pathlib import Path

from gitmem.index.context import filling, open_parts, source_prior
from gitmem.index.textindex import TextIndex
from gitmem.recall.versions import Made

__all__ = ["PastText", "Versions"]

_KEPT = 30_000  # versions kept in memory, a few KB each


class Versions:
    """Each version's record and keyword fields (without context), read from the time-travel
    cache, which made them when it first met the version (gitmem.recall.versions), and kept
    per process while they fit: views at different dates share most of their versions."""

    def __init__(self, load: Callable[[Sequence[str]], dict[str, Made]]) -> None:
        self._load = load
        self._made: dict[str, Made] = {}

    def get(self, blobs: Sequence[str]) -> list[Made]:
        """The Made of each of `blobs` (valid versions the cache holds), in their order. The
        answer is built apart from what is kept, which then drops its oldest versions to stay
        within _KEPT: a view larger than that is answered whole all the same."""
        kept = self._made
        found = {blob: kept[blob] for blob in blobs if blob in kept}
        missing = [blob for blob in blobs if blob not in found]
        if missing:
            loaded = self._load(missing)
            found.update(loaded)
            kept.update(loaded)
            for blob in list(islice(kept, max(0, len(kept) - _KEPT))):
                del kept[blob]
        return [found[blob] for blob in blobs]


class PastText:
    """The keyword index of one view's records, with their context, and its sources' index."""

    def __init__(self, made: Sequence[Made]) -> None:
        """`made`: each record of the view, with its document's fields (see `Versions`)."""
        self.root = root = Path(tempfile.mkdtemp(prefix="gitmem-asof-"))
        # Removed with this object (or at exit): a view is never kept on disk.
        self._cleanup = weakref.finalize(self, shutil.rmtree, root, True)
        try:
            (root / "text").mkdir()
            text = TextIndex.create(root / "text")
            with text.filling() as add, filling(root, add) as keep:
                keep(tuple(fields for _, fields in made), -1, [record for record, _ in made])
            self.text = text
            self.facts, self.sources = open_parts(root)
        except BaseException:
            self._cleanup()
            raise

    def close(self) -> None:
        self.facts.close()
        self._cleanup()

    def search(
        self, query: str, n: int, allowed: frozenset[str] | None, context: float
    ) -> list[tuple[str, float]]:
        """(id, BM25 score) of the best records among `allowed` ids (None: all)."""
        return [(h.id, h.score) for h in self.text.search(query, n, allowed, context=context)]

    def ceiling(self, query: str) -> float:
        return self.text.ceiling(query)

    def source_prior(self, query: str, ids: Sequence[str]) -> dict[str, float]:
        """As the HEAD index's (gitmem.index.index.Index.source_prior), over the view."""
        return source_prior(self.facts, self.sources, query, ids)

    def context_scores(self, query: str, ids: Sequence[str], weight: float) -> dict[str, float]:
        return self.text.context_scores(query, ids, weight)
