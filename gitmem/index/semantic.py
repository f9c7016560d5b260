"""The semantic half of reading an index: the records whose best chunk is nearest a query.

One `SemanticHalf` reads one opened build (gitmem.index.index.Index makes it with the catalog
it opened and drops it with them) and keeps what it maps and reads there: the vector file's
live rows, mapped once per size of the file, the row facts, read once per commit seen, and the
owners of rows asked. A recall whose filter asks only about status ranks rows with the row
facts alone, without asking SQLite anything; in a process that recalls once and has not loaded
numpy, through gitmem.index.literank, bit for bit as numpy's path (docs/architecture.md). The
rows' facts where there are no arrays of them are gitmem.index.rowviews'.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from gitmem.index.catalog import Catalog
from gitmem.index.entries import Entry, Filter
from gitmem.index.rowfacts import StoredFacts
from gitmem.index.rowviews import AskedRows, FactsView
from gitmem.index.verify import IndexDamaged

if TYPE_CHECKING:
    from gitmem.index.model import ModelRef

__all__ = ["SemanticHalf", "cached"]

_K = TypeVar("_K")
_V = TypeVar("_V")
# Vector file names a reader tries in one mapping: each one more means another process
# compacted in the few milliseconds between reading the name and mapping the file.
_RENAMES = 3


class SemanticHalf:
    """Ranks the vector rows of one opened build for a query. `vectors` gives the vector file
    the catalog names now (another process's compaction renames it), `same_build` whether that
    build is still the one in place, and `scoring` is the index's cache of (updated, weight)
    per record, which this fills for the records it ranks from the row facts."""

    def __init__(
        self,
        catalog: Catalog,
        root: Path,
        model: ModelRef,
        *,
        vectors: Callable[[], Any],
        same_build: Callable[[], bool],
        allowed: Callable[[Filter], frozenset[str] | None],
        entries: Callable[[Sequence[str]], dict[str, Entry]],
        scoring: dict[str, tuple[int, float]],
    ) -> None:
        self._catalog = catalog
        self._root = root
        self._model = model
        self._vectors = vectors
        self._same_build = same_build
        self._allowed = allowed
        self._entries = entries
        self._scoring = scoring
        # Mapping the vector file anew for each query costs a page fault per 4 KiB, and a
        # long-lived process (an MCP server, a batch) asks for the same rows again and again.
        self._owner_cache: dict[int, str] = {}
        self._rows: Any = None  # the row facts as arrays (vectors.RowArrays), with the matrix
        self._facts: StoredFacts | bool | None = False  # ... as stdlib arrays (False: not read)
        self._matrix_name = ""  # the vector file mapped as _matrix
        self._matrix: Any = None
        self._matrix_key: tuple[int, ...] | None = None
        self._graph_opened = False  # the vector graph looked for (gitmem.index.ann) ...
        self._graph_open: Any = None  # ... and what was found
        self._graph_key: tuple[int, int] | None = None  # its stamp's (inode, mtime) then

    def new_commit(self) -> None:
        """Forget what the last commit seen said of the rows (the mapping stays)."""
        self._owner_cache.clear()
        self._rows, self._facts = None, False
        self._graph_opened = False

    def _graph_named(self, vectors: str) -> bool:
        """Whether the vector file `vectors` has a graph beside it (a stat; numpy not loaded)."""
        from gitmem.index.ann import graph_paths

        return graph_paths(self._root, vectors)[1].exists()

    def _graph(self) -> Any:
        """The vector graph of the mapped file (gitmem.index.ann), opened once per commit
        seen; None for an index ranked exactly (small, no usearch, no graph built yet). While
        there is none, its stamp is looked at again each query (one stat), so that a
        long-lived reader (an MCP server) picks up a graph the builder installs later."""
        if self._graph_opened and self._graph_open is not None:
            return self._graph_open
        from gitmem.index.ann import graph_paths, open_graph

        try:
            found = graph_paths(self._root, self._matrix_name)[1].stat()
            key: tuple[int, int] | None = (found.st_ino, found.st_mtime_ns)
        except OSError:
            key = None
        if not self._graph_opened or key != self._graph_key:
            self._graph_opened, self._graph_key = True, key
            opened = (
                None if key is None else open_graph(self._root, self._matrix_name, self._model.dim)
            )
            self._graph_open = opened
        return self._graph_open

    def search(
        self, query: str, n: int, flt: Filter, *, without_numpy: bool
    ) -> list[tuple[str, float]]:
        """Best-chunk cosine per record, the top `n` that `flt` admits. `without_numpy`: rank
        through literank while numpy is not loaded, for a process that recalls once."""
        if without_numpy and flt.status_only and "numpy" not in sys.modules:
            found = self.without_numpy(query, n, flt)
            if found is not None:
                return found
        from gitmem.index.vectors import query_row

        q = query_row(self._model.encode_query(query))
        # Rows are looked up in the catalog by number (its owners, the subset of a narrow
        # filter) after the graph proposed them from the mapped file; another process's
        # compaction renumbers the rows into a new file in one transaction, and a look-up after
        # it would give other records' rows. Whether one came between, the catalog's name of
        # the vector file says, read after the last look-up: then ranked again, in the new
        # file, once; a second one in between answers nothing, as a swapped build does.
        for _ in range(2):
            found = self._ranked(q, n, flt, without_numpy=without_numpy)
            if found is None or self._catalog.vectors_name() == self._matrix_name:
                return found or []
        return []

    def _ranked(
        self, q: Any, n: int, flt: Filter, *, without_numpy: bool
    ) -> list[tuple[str, float]] | None:
        """`search`'s ranking in the mapped file; None when the index was rebuilt under this
        reader (see _vector_matrix)."""
        from gitmem.index.vectors import Ranking

        matrix = self._vector_matrix()
        if matrix is None:
            return None
        allowed = self._allowed(flt)
        graph = self._graph() if flt.status_only else None
        if graph is not None:  # a large index (gitmem.index.ann)
            from gitmem.index.vectors import GraphRanking

            # A process that recalls once asks the catalog for the facts of the rows the graph
            # proposes; one that recalls again and again reads the stored facts once (~0.1 ms
            # a query against ~2-5 for the catalog's). The same facts either way.
            rows = None if without_numpy else self._row_arrays()
            if rows is None:
                rows = hide = AskedRows(self._owners, self._entries, flt)
            else:
                hide = rows.dead if flt.include_superseded else rows.hidden
            return self._best_records(GraphRanking(matrix, q, graph, hide), rows, n)
        rows = self._row_arrays() if flt.status_only else None
        if rows is not None:  # the filter asks only about status: the row facts know it
            hide = rows.dead if flt.include_superseded else rows.hidden
            return self._best_records(Ranking(matrix, q, None, hide), rows, n)
        subset = None if allowed is None else self._catalog.rows_of(allowed)
        ranking = Ranking(matrix, q, subset)  # the product once, however far `want` widens
        want = n + n // 2
        while True:
            pairs = ranking.top(want)
            best = self._best_chunks(pairs, n, flt)
            if len(best) >= n or len(pairs) < want:
                ranked = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
                return ranked[:n]
            want *= 4

    def without_numpy(self, query: str, n: int, flt: Filter) -> list[tuple[str, float]] | None:
        """The semantic half as `search` computes it, bit for bit, through gitmem.index.literank
        (ctypes over numpy's own OpenBLAS) and the row facts' stdlib arrays: importing numpy
        is ~110-200 ms of a `gitmem recall` process, a third of its budget. Taken only by an
        index that recalls once (gitmem.index.index.Index.rank_without_numpy) while numpy is
        not loaded; None where it cannot answer (no such BLAS, no row facts, a model it
        cannot read without numpy, a damaged vector file): then numpy's path answers."""
        if self._graph_named(self._catalog.vectors_name()):
            return None  # a graph ranks a large index (gitmem.index.ann): numpy's path
        from gitmem.index import literank

        if not literank.available():
            return None
        stored = self._lite_facts()
        if stored is None or self._graph_named(stored.vectors):
            return None  # the facts' file, named in their transaction: as above
        facts, path = stored.facts, self._root / stored.vectors  # the file they describe
        try:
            dim = self._model.dim
            rows = self._rows_held(path.stat().st_size // (dim * 4), stored.rows, path.name)
        except OSError:
            return None
        if len(facts) < rows:
            return None
        key, superseded = facts.parts["key"], facts.parts["superseded"]
        hide = literank.hidden_rows(key, superseded, rows, flt.include_superseded)
        try:
            ranking = literank.LiteRanking(path, rows, dim, self._model.encode_query(query), hide)
            if not self._same_build():
                return []  # the file ranked may be a newer build's (see _vector_matrix)
            return self._best_records(ranking, FactsView(facts), n)
        except literank.Unranked:
            return None

    def _lite_facts(self) -> StoredFacts | None:
        """The catalog's row facts, read once per commit seen (as `_row_arrays`)."""
        if self._facts is False:
            self._facts = self._catalog.row_facts()
        return self._facts if isinstance(self._facts, StoredFacts) else None

    def _best_records(self, ranking: Any, rows: Any, n: int) -> list[tuple[str, float]]:
        """The top `n` records by their best row, when `ranking` holds only rows the filter
        admits: as _best_chunks, with the row facts (ids included) instead of the catalog's
        rows. A record another process removed since the facts were read still ranks here;
        recall leaves it out when it finds no entry for it."""
        want = n + n // 2
        while True:
            pairs = ranking.top(want)
            best: dict[int, tuple[float, int]] = {}  # record key: (best score, its row)
            cut = None
            keys = rows.take("key", [row for row, _ in pairs])
            for (row, score), key in zip(pairs, keys, strict=True):
                if cut is not None and score < cut:
                    break
                if key is not None and key not in best:  # None: a row found dead (AskedRows)
                    best[key] = (score, row)
                    if len(best) == n:
                        cut = score
            if len(best) >= n or len(pairs) < want:
                break
            want *= 4
        # By score, as the pairs came; equal scores (ties) by id, for the same answer whatever
        # the rows' order in the file.
        kept = list(best.values())
        ids = rows.ids_of([row for _, row in kept])
        ranked = [(rid, score, row) for rid, (score, row) in zip(ids, kept, strict=True)]
        if len({score for score, _ in kept}) < len(kept):
            ranked.sort(key=lambda hit: (-hit[1], hit[0]))
        ranked = ranked[:n]
        if len(self._scoring) > 200_000:
            self._scoring.clear()
        chosen = [row for _, _, row in ranked]
        facts = zip(rows.take("updated", chosen), rows.take("weight", chosen), strict=True)
        for (rid, _, _), (updated, weight) in zip(ranked, facts, strict=True):
            self._scoring[rid] = (int(updated), float(weight))
        return [(rid, score) for rid, score, _ in ranked]

    def _row_arrays(self) -> Any:
        """The row facts of the mapped matrix as arrays, read once per matrix; None where the
        catalog has none that cover it (written by an older gitmem: until its next update)."""
        assert self._matrix is not None
        if self._rows is None:
            from gitmem.index.vectors import RowArrays

            stored = self._lite_facts()  # read once: at 1M rows ~70 MB of blobs from SQLite
            rows = self._matrix.shape[0]
            self._rows = False
            if stored is not None and stored.vectors == self._matrix_name:  # the mapped file's
                facts = stored.facts
                self._rows = RowArrays.of(facts.parts, rows, facts.ids_of) or False
        return self._rows or None

    def _best_chunks(self, pairs: list[tuple[int, float]], n: int, flt: Filter) -> dict[str, float]:
        """Each admitted record's best score among `pairs` (best first), as far as the top `n`
        records need: below the n-th record's score nothing can enter them (records tying with
        it still can, as ties go by id), so the catalog is not asked about the rest: a third of
        the semantic half's look-ups at 100k records."""
        owners = self._owners([row for row, _ in pairs])
        order = list(dict.fromkeys(rid for row, _ in pairs if (rid := owners.get(row))))
        place = {rid: i for i, rid in enumerate(order)}
        entries: dict[str, Entry] = {}
        asked = 0  # entries of order[:asked] are fetched
        best: dict[str, float] = {}
        cut = None
        for row, score in pairs:
            rid = owners.get(row)
            if cut is not None and score < cut:
                break
            if rid is None or rid in best:
                continue
            if place[rid] >= asked:
                more = order[asked : asked + max(n - len(best), 16)]
                entries.update(self._entries(more))
                asked += len(more)
            entry = entries.get(rid)
            if entry is None or not flt.admits(entry):
                continue
            best[rid] = score
            if len(best) == n:
                cut = score
        return best

    def _owners(self, rows: list[int]) -> dict[int, str]:
        """Record id of each live row, cached like entries and dropped with the vector file's
        mapping too (see _vector_matrix)."""
        return cached(self._owner_cache, rows, self._catalog.owners, 400_000)

    def _rows_held(self, held: int, named: int, name: str) -> int:
        """The rows to rank: the file may hold more than the catalog names (an update appends
        before its catalog commit), never fewer, unless another process's rebuild swapped in
        a shorter file or its compaction renamed it (`_vector_matrix` then answers without
        it, or from the new file): a truncated file is damage, rebuilt by the index's caller."""
        if held < named and self._same_build():
            raise IndexDamaged(f"{name} holds {held} vector rows, the catalog {named}")
        return min(held, named)

    def _vector_matrix(self) -> Any:
        """The live part of the vector file, mapped once per size of the file; None when
        the file in place is no longer the build this reader's catalog describes, or when
        other processes' compactions renamed it every time it was looked for.

        A compaction writes a new file, names it in the catalog and removes the old one: a
        reader that read the old name just before finds that file gone (0 rows against the
        catalog's count, or an OSError if it goes between the stat and the map). So before a
        missing or short file is called damage (a whole rebuild: minutes at 1M), the
        catalog's name is read again: a new name is mapped instead; only a name that stays
        and is still wrong is damage."""
        for _ in range(_RENAMES):
            vectors = self._vectors()
            try:
                return self._mapped(vectors)
            except (IndexDamaged, ValueError, OSError):
                if self._catalog.vectors_name() == vectors.path.name:
                    raise
        return None

    def _mapped(self, vectors: Any) -> Any:
        """`_vector_matrix` of the file `vectors` (the one the catalog named)."""
        rows = self._rows_held(vectors.rows(), self._catalog.next_row(), vectors.path.name)
        try:
            stat = vectors.path.stat()
            key: tuple[int, ...] = (rows, stat.st_ino, stat.st_size)
        except FileNotFoundError:
            key = (rows, 0, 0)
        if key != self._matrix_key:
            # Another process's rebuild may have swapped its directory in since this reader
            # opened the catalog: the file may then be the new build's (shorter than `rows`
            # or laid out otherwise). None this once; the next read reopens all.
            try:
                matrix = vectors.matrix(rows)
            except (ValueError, OSError):
                if self._same_build():
                    raise  # damaged, not swapped
                return None
            if not self._same_build():
                return None
            remapped = self._matrix_key is not None
            self._matrix, self._matrix_key = matrix, key
            self._matrix_name = vectors.path.name
            self._graph_opened = False
            if remapped:  # a compaction renumbers rows into a new file under the same stamp
                self._owner_cache.clear()
                self._rows, self._facts = None, False
            # Else keep the facts `without_numpy` read (~70 MB at 1M rows: read once): they
            # name the file they describe, and `_row_arrays` takes them only for this one.
        return self._matrix


def cached(
    cache: dict[_K, _V], keys: Sequence[_K], fetch: Callable[[list[_K]], dict[_K, _V]], cap: int
) -> dict[_K, _V]:
    """What `fetch` says of `keys`, asked only for those `cache` lacks (emptied past `cap`).
    Read with get: the other half of a recall may clear the cache from its thread."""
    missing = [k for k in keys if k not in cache]
    found = fetch(missing) if missing else {}
    if len(cache) > cap:
        cache.clear()
    cache.update(found)
    return {k: v for k in keys if (v := found.get(k) or cache.get(k)) is not None}
