"""The reads of an opened build of the index: keyword and semantic search, and what the
catalog says of the records they find (entries, and the facts recall's scoring needs).

`Searching` is the reading part of gitmem.index.index.Index, which opens a build (its catalog
and keyword index, and the semantic half made for them: gitmem.index.semantic) and catches it
up with HEAD before each read; the state read here is the one Index keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.index import verify
from gitmem.index.catalog import VECTORS, Catalog
from gitmem.index.context import open_parts, source_prior
from gitmem.index.entries import Entry, Filter
from gitmem.index.neighbours import Neighbours
from gitmem.index.opening import same_generation
from gitmem.index.semantic import SemanticHalf, cached
from gitmem.index.textindex import TextIndex

if TYPE_CHECKING:
    from gitmem.index.model import ModelRef

__all__ = ["Searching"]


class Searching:
    """The searches of gitmem.index.index.Index, over the build it opened."""

    model: ModelRef | None
    root: Path
    rank_without_numpy: bool
    _catalog: Catalog | None
    _text: TextIndex | None
    _context: tuple[Neighbours, TextIndex] | None  # opened on first use
    _entry_cache: dict[str, Entry]
    _scoring_cache: dict[str, tuple[int, float]]
    _semantic: SemanticHalf | None
    _loaded_generation: int

    def _same_generation(self, expected: int) -> bool:
        return same_generation(self.root, expected)

    def _vectors_file(self, root: Path | None = None) -> Any:
        """The vector file the catalog names (compaction writes a new one and switches the
        name in the same transaction as the new row numbers)."""
        if self.model is None:
            return None
        from gitmem.index.vectors import VectorFile

        name = VECTORS
        if root is None and self._catalog is not None:
            name = self._catalog.vectors_name()
        return VectorFile((root or self.root) / name, self.model.dim)

    def allowed(self, flt: Filter) -> frozenset[str] | None:
        """The ids a narrow filter admits; None when (almost) everything is admitted."""
        assert self._catalog is not None
        if not flt.narrow:
            return None
        return frozenset(self._catalog.matching(flt))

    def keyword(
        self, query: str, n: int, flt: Filter, context: float = 0.0
    ) -> list[tuple[str, float]]:
        """BM25 hits, best first; `context`: the weight of the records' context (see
        gitmem.index.neighbours) against their body's, 0 for their own text alone."""
        assert self._catalog is not None and self._text is not None
        catalog = self._catalog
        allowed = self.allowed(flt)

        def admitted(keys: list[int]) -> dict[int, tuple[str, str]]:
            """(id, blob) of the keys the catalog has and `flt` admits; what recall's decay
            and weight factor will need of them is kept (see `scoring`)."""
            found = catalog.admitted(keys, flt)
            if len(self._scoring_cache) > 200_000:
                self._scoring_cache.clear()
            for rid, _, updated, weight in found.values():
                self._scoring_cache[rid] = (updated, weight)
            return {key: (rid, blob) for key, (rid, blob, _, _) in found.items()}

        with verify.text_damage():
            hits = self._text.search(query, n, allowed, admitted, context)
        if all(hit.key >= 0 for hit in hits):  # named by key: current and admitted
            return [(hit.id, hit.score) for hit in hits]
        want = n  # a text index with unkeyed documents: check each hit's entry
        while True:
            entries = self.entries([h.id for h in hits])
            out = [
                (h.id, h.score)
                for h in hits
                if h.id in entries and entries[h.id].blob == h.blob and flt.admits(entries[h.id])
            ]
            if len(out) >= n or len(hits) < want:
                return out[:n]
            want *= 4
            with verify.text_damage():
                hits = self._text.search(query, want, allowed, context=context)

    def source_prior(self, query: str, ids: Sequence[str]) -> dict[str, float]:
        """gitmem.index.context.source_prior over this index's sources."""
        facts, sources = self._context_parts()
        with verify.text_damage():
            return source_prior(facts, sources, query, ids)

    def context_scores(self, query: str, ids: Sequence[str], weight: float) -> dict[str, float]:
        """What the context field added to each of `ids`' keyword score (for --explain)."""
        assert self._text is not None
        with verify.text_damage():
            return self._text.context_scores(query, ids, weight)

    def _context_parts(self) -> tuple[Neighbours, TextIndex]:
        if self._context is None:
            self._context = open_parts(self.root)
        return self._context

    def has_type(self, name: str) -> bool:
        """Whether the index holds a record of type `name` (see Catalog.has_type)."""
        assert self._catalog is not None
        return self._catalog.has_type(name)

    def keyword_ceiling(self, query: str) -> float:
        assert self._text is not None
        with verify.text_damage():
            return self._text.ceiling(query)

    def semantic(self, query: str, n: int, flt: Filter) -> list[tuple[str, float]] | None:
        """Best-chunk cosine per record; None when there is no model."""
        if self.model is None:
            return None
        half = self._semantic_half()
        return half.search(query, n, flt, without_numpy=self.rank_without_numpy)

    def _semantic_half(self) -> SemanticHalf:
        """The semantic half of the build opened (made on first use: a keyword search never
        needs it)."""
        assert self._catalog is not None and self.model is not None
        if self._semantic is None:
            self._semantic = SemanticHalf(
                self._catalog,
                self.root,
                self.model,
                vectors=self._vectors_file,
                same_build=lambda: self._same_generation(self._loaded_generation),
                allowed=self.allowed,
                entries=self.entries,
                scoring=self._scoring_cache,
            )
        return self._semantic

    def entries(self, ids: Sequence[str]) -> dict[str, Entry]:
        assert self._catalog is not None
        return cached(self._entry_cache, ids, self._catalog.entries, 200_000)

    def every(self) -> list[Entry]:
        """Every record at HEAD, superseded ones too (for counts: `gitmem stats`)."""
        assert self._catalog is not None
        return list(self.entries(self._catalog.matching(Filter(include_superseded=True))).values())

    def scoring(self, ids: Sequence[str]) -> dict[str, tuple[int, float]]:
        """(updated, weight) of each id still indexed: what recall's decay and weight factor
        need of every candidate, and the full entry only of those it returns."""
        out: dict[str, tuple[int, float]] = {}
        missing = []
        for rid in ids:
            found = self._scoring_cache.get(rid)
            if found is None:
                missing.append(rid)
            else:
                out[rid] = found
        for rid, entry in self.entries(missing).items():
            out[rid] = (entry.updated, entry.weight)
        return out
