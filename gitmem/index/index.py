"""The search index: a disposable cache of HEAD, caught up from the tree diff before each read.

Layout under the store's `.gitmem/`:

    index/catalog.sqlite   records (for filters and display), vector rows, the stamp
    index/text/            the keyword index (tantivy)
    index/vectors.f32      chunk vectors (only when an embedding model is loaded)
    index.lock             held by whoever updates or rebuilds

An update diffs the indexed commit's tree against HEAD's and applies only what changed:
vectors are appended, the keyword index is upserted and committed, and last the catalog moves
the stamp in the same transaction as its rows. A reader trusts only the catalog: a keyword hit
whose blob the catalog does not know yet is dropped, so a half-finished update is invisible.
A rebuild happens in a new directory swapped in by rename. Anything unreadable, missing or of
another version is rebuilt, with a one-line notice.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from gitmem.errors import GitmemError
from gitmem.index.catalog import (
    VECTORS,
    Catalog,
    CatalogCorrupt,
    Entry,
    Filter,
    RowFacts,
    StoredFacts,
)
from gitmem.index.textindex import TextIndex, TextIndexCorrupt
from gitmem.store.lock import cache_lock

# What writes the index (gitmem.index.build, gitmem.store.store) is imported where it is used: it
# loads pygit2 and a process pool, ~150 ms that a recall of a current index (gitmem.cli.quickrecall)
# does without.
if TYPE_CHECKING:
    from gitmem.index.build import IndexDoc
    from gitmem.index.embedding import Embedder
    from gitmem.index.model import ModelRef
    from gitmem.store.git import GitRepo

__all__ = ["Index", "IndexedStore", "Progress", "embed_docs"]

Progress = Callable[[int, int], None]
RECORDS_DIR = "records"  # gitmem.store.store's (a test holds them together), without importing it
_BATCH = 2000
_LOCK_TIMEOUT = 300.0
_OPEN_TRIES = 5  # opens of an index another process keeps swapping (see Index._load)
_K = TypeVar("_K")
_V = TypeVar("_V")


class IndexedStore(Protocol):
    """What the index needs of a store: its cache directory and HEAD to read it, and its
    repository to catch up. gitmem.store.store.Store is one; gitmem.cli.quickrecall passes one
    without a repository, for an index it only reads while it is current."""

    @property
    def cache_dir(self) -> Path: ...
    @property
    def repo(self) -> GitRepo: ...
    def head(self) -> str | None: ...


class Index:
    """Every search first calls `ensure_current`."""

    # Whether the semantic half may rank without numpy while numpy is not loaded: for a
    # process that recalls once (gitmem.cli.quickrecall). numpy's path is faster per query, so
    # a process that recalls again and again (the API, an MCP server) pays the import once.
    rank_without_numpy = False

    def __init__(self, store: IndexedStore, model: ModelRef | None) -> None:
        self.store = store
        self.model = model
        self.root = store.cache_dir / "index"
        self.notices: list[str] = []
        self._catalog: Catalog | None = None
        self._text: TextIndex | None = None
        self._seen_commit: str | None = None
        # Per-process caches of what the catalog and the vector file say at _seen_commit: a
        # long-lived process (an MCP server, a batch) asks for the same records again and again,
        # and mapping the vector file anew for each query costs a page fault per 4 KiB.
        self._entry_cache: dict[str, Entry] = {}
        self._owner_cache: dict[int, str] = {}
        # (updated, weight) of the records the semantic half ranked from the row facts,
        # which recall's decay needs and the entry cache would otherwise fetch.
        self._scoring_cache: dict[str, tuple[int, float]] = {}
        self._rows: Any = None  # the row facts as arrays (vectors.RowArrays), with the matrix
        self._facts: StoredFacts | bool | None = False  # ... as stdlib arrays (False: not read)
        self._matrix_name = ""  # the vector file mapped as _matrix
        self._loaded_generation = -1
        self._matrix: Any = None
        self._matrix_key: tuple[int, ...] | None = None

    @property
    def model_name(self) -> str:
        return "" if self.model is None else self.model.name

    # --- keeping up with HEAD ----------------------------------------------------------------

    def current(self) -> bool:
        """Whether the index opens cleanly and mirrors HEAD (its readers then see that commit):
        all a read needs. The fast recall path (gitmem.cli.quickrecall) asks only this."""
        head = self.store.head()
        if self._load() is None and self._stamp() == head:
            try:
                self._refresh_readers(head)  # the text index reloads by path ...
            except TextIndexCorrupt:  # ... found between a rebuild's two renames
                pass
            else:
                if self._same_generation(self._loaded_generation):
                    return True
            self._close()  # ... or it may now read another build's: open all anew
        return False

    def ensure_current(self, progress: Progress | None = None) -> None:
        """Catch up with HEAD (or rebuild) if the index is behind, missing or unusable."""
        if self.current():
            return
        head = self.store.head()
        with self._locked():
            self._clear_dead_builds()
            problem = self._load()
            if problem is not None:
                existed = self.root.exists()
                if existed:
                    self.notices.append(f"search index {problem}; rebuilding it from git")
                self._rebuild(progress)
                assert self._catalog is not None
                if not existed and (count := self._catalog.count()):  # nothing to build: no word
                    plural = "" if count == 1 else "s"
                    self.notices.append(f"built the search index from git ({count} record{plural})")
            elif self._stamp() != head:
                self._update(progress)
            # What the caches now mirror is the index's stamp, not whatever HEAD is by now.
            self._refresh_readers(self._stamp())

    def rebuild(self, progress: Progress | None = None) -> None:
        with self._locked():
            self._clear_dead_builds()
            self._rebuild(progress)
            self._refresh_readers(self._stamp())  # under the lock: no rebuild lands meanwhile

    def _clear_dead_builds(self) -> None:
        """Remove the build directories of rebuilds that died (killed, out of disk): builds
        run under the lock this process holds, so no other is alive, and a partial one can
        be as large as the whole index."""
        import shutil  # here: a recall of a current index never takes the lock

        for left in [*self.root.parent.glob("index.new-*"), *self.root.parent.glob("index.old-*")]:
            shutil.rmtree(left, ignore_errors=True)

    def _stamp(self) -> str | None:
        assert self._catalog is not None
        return self._catalog.meta("commit")

    def _refresh_readers(self, head: str | None) -> None:
        if self._seen_commit != head:
            if self._text is not None:
                self._text.reload()
            self._entry_cache.clear()
            self._owner_cache.clear()
            self._scoring_cache.clear()
            self._rows, self._facts = None, False
        self._seen_commit = head

    def _load(self) -> str | None:
        """Open the parts; return what is wrong with them, or None."""
        if self._catalog is not None and self._text is not None:
            try:
                swapped = self._generation() != self._loaded_generation
                if not swapped and self._catalog.meta("model") == self.model_name:
                    return None
            except (CatalogCorrupt, OSError):
                pass
            self._close()
        for _ in range(_OPEN_TRIES):
            try:  # held open while the parts open, so that no new file can take its inode
                held = os.open(self.root / "catalog.sqlite", os.O_RDONLY)
            except OSError:
                return "is missing"
            try:
                generation = os.fstat(held).st_ino
                opened = self._open_parts()
                if isinstance(opened, str):
                    return opened
                catalog, text = opened
                if self._same_generation(generation):
                    break
            finally:
                os.close(held)
            # Another process's rebuild swapped its directory in between the opens: the
            # catalog may be the old build's and the text index the new one's.
            catalog.close()
        else:
            return "kept changing while it was opened (another process was rebuilding it)"
        self._catalog, self._text = catalog, text
        self._loaded_generation = generation
        return None

    def _open_parts(self) -> tuple[Catalog, TextIndex] | str:
        """The catalog and the text index, or what is wrong with them."""
        try:
            catalog = Catalog(self.root / "catalog.sqlite")
        except CatalogCorrupt as exc:
            return f"is unreadable ({exc})"
        try:
            text = TextIndex.open(self.root / "text")
            built, commit = catalog.meta("model"), catalog.meta("commit")
        except (CatalogCorrupt, TextIndexCorrupt) as exc:
            catalog.close()
            return f"is unreadable ({getattr(exc, 'reason', exc)})"  # the caller rebuilds it
        if built != self.model_name or commit is None:
            catalog.close()
            if built != self.model_name:
                return f"was built with {built or 'no model'}, not {self.model_name or 'no model'}"
            return "was never finished"
        return catalog, text

    def _same_generation(self, generation: int) -> bool:
        """Whether the build in place is still `generation`: a file that is open (the
        catalog this reader holds) keeps its inode from any new file, and a rebuild's new
        catalog exists before the old one goes."""
        try:
            return self._generation() == generation
        except OSError:
            return False

    def _generation(self) -> int:
        """Which build of the index is in place: a rebuild swaps in a new directory."""
        return (self.root / "catalog.sqlite").stat().st_ino

    def _close(self) -> None:
        if self._catalog is not None:
            self._catalog.close()
        self._catalog = None
        self._text = None
        self._entry_cache.clear()
        self._owner_cache.clear()
        self._scoring_cache.clear()
        self._matrix, self._matrix_key, self._rows, self._facts = None, None, None, False

    def _locked(self) -> AbstractContextManager[None]:
        return cache_lock(self.store.cache_dir / "index.lock", _LOCK_TIMEOUT, "the search index")

    def _update(self, progress: Progress | None) -> None:
        assert self._catalog is not None and self._text is not None
        repo = self.store.repo
        old, head = self._stamp(), self.store.head()
        if old is None or repo.resolve(old) is None:
            self._rebuild(progress)
            return
        removed: set[str] = set()
        added: list[tuple[str, str]] = []
        changed: set[str] = set()
        for change in repo.diff(old, head):
            if not _is_record(change.path):
                continue
            changed.add(change.path)
            if change.old is not None:
                removed.add(Path(change.path).stem)
            if change.new is not None:
                added.append((change.path, change.new))
        from gitmem.index.build import read_docs

        docs = read_docs(repo, added, self.notices)
        if self._doubled(docs, removed, changed):
            # Two files claim one id (a copy made by hand): a rebuild leaves every copy out
            # (see _single_claims), and is what an update must agree with.
            self._rebuild(progress)
            return
        removed -= {d.record.id for d in docs}
        # An id leaves only if its indexed file changed: a copy elsewhere (not at its place,
        # so never indexed) that is edited or deleted leaves the record it copies, as a rebuild.
        indexed = self._catalog.entries(sorted(removed))
        removed = {rid for rid, entry in indexed.items() if entry.path in changed}
        vectors = self._vectors_file()
        if vectors is not None:
            vectors.truncate(self._catalog.next_row())
        self._write(self._catalog, self._text, docs, removed, head, progress)
        if vectors is not None and self._catalog.next_row() > 1.5 * self._catalog.live_rows() + 64:
            self._compact()

    def _rebuild(self, progress: Progress | None) -> None:
        import shutil  # here: a recall of a current index never rebuilds (~6 ms to import)

        self._close()
        fresh = self.root.with_name(f"index.new-{os.getpid()}")
        (fresh / "text").mkdir(parents=True)
        catalog = Catalog(fresh / "catalog.sqlite", create=True)
        catalog.set_meta({"model": self.model_name})
        text = TextIndex.create(fresh / "text")
        head = self.store.head()
        files = [
            (path, blob)
            for path, blob in self.store.repo.files(head, RECORDS_DIR)
            if _is_record(path)
        ]
        files, doubled = self._single_claims(files)
        catalog.set_meta({"doubled": " ".join(sorted(doubled))})
        try:
            self._fill(catalog, text, files, head, progress, fresh)
        finally:
            catalog.close()
        old = self.root.with_name(f"index.old-{os.getpid()}")
        if self.root.exists():
            os.replace(self.root, old)
        os.replace(fresh, self.root)
        shutil.rmtree(old, ignore_errors=True)
        if self._load() is not None:
            raise GitmemError(f"the search index at {self.root} could not be rebuilt")

    def _single_claims(
        self, files: Sequence[tuple[str, str]]
    ) -> tuple[list[tuple[str, str]], set[str]]:
        """`files` without those of an id that two valid records at their own place claim
        (a record copied by hand into another type's directory, say): which copy is the
        record is for a person to decide, so none is searchable until one remains. Also
        the doubled ids, which the catalog keeps so that an update touching them rebuilds."""
        from gitmem.index.build import read_docs

        by_id: dict[str, list[tuple[str, str]]] = {}
        for path, blob in files:
            by_id.setdefault(Path(path).stem, []).append((path, blob))
        doubled = set()
        for rid, claims in by_id.items():
            if len(claims) > 1 and len(read_docs(self.store.repo, claims, [])) > 1:
                doubled.add(rid)
                paths = ", ".join(path for path, _ in claims)
                self.notices.append(
                    f"{rid} is claimed by more than one file ({paths}); left out of search "
                    'until one remains — "gitmem validate" explains'
                )
        return [f for f in files if Path(f[0]).stem not in doubled], doubled

    def _doubled(self, docs: Sequence[IndexDoc], removed: set[str], changed: set[str]) -> bool:
        """Whether a catch-up touches an id that more than one file claims, or did."""
        assert self._catalog is not None
        before = set((self._catalog.meta("doubled") or "").split())
        ids = [d.record.id for d in docs]
        if before & (set(ids) | removed) or len(set(ids)) < len(ids):
            return True
        known = self._catalog.entries(ids)  # not the cache: it mirrors the last commit seen
        return any(
            (entry := known.get(d.record.id)) is not None
            and entry.path != d.path
            and entry.path not in changed
            for d in docs
        )

    def _fill(
        self,
        catalog: Catalog,
        text: TextIndex,
        files: Sequence[tuple[str, str]],
        head: str | None,
        progress: Progress | None,
        root: Path,
    ) -> None:
        """Index every file into a new, empty index: batches are prepared (in worker
        processes for a large store, see gitmem.index.build) and written in file order."""
        vectors = self._vectors_file(root)
        embedder = None if vectors is None or self.model is None else self.model.get()
        folder = None if self.model is None else self.model.folder
        meta = {"commit": head or "", "model": self.model_name}
        done = 0
        from gitmem.index.build import prepared

        with text.filling() as add:
            for batch in prepared(self.store.repo, files, embedder, folder, _BATCH):
                self.notices.extend(batch.notices)
                rows = _rows(vectors, batch.vectors, batch.docs, batch.counts)
                first = catalog.reserve_keys(len(batch.docs))
                add(batch.text, first)  # the text of batch.docs, in their order
                entries = [
                    (d.record, d.path, d.blob, rows.get(d.record.id, ())) for d in batch.docs
                ]
                catalog.apply((), entries, {}, first)
                done += len(batch.docs)
                if progress is not None:
                    progress(done, max(len(files), done))
        catalog.apply((), [], meta)
        if progress is not None and not files:
            progress(0, 0)

    def _write(
        self,
        catalog: Catalog,
        text: TextIndex,
        docs: Sequence[IndexDoc],
        removed: set[str],
        head: str | None,
        progress: Progress | None,
    ) -> None:
        """Index `docs` (a catch-up's changed records) and drop `removed`, in this process."""
        vectors = self._vectors_file()
        embedder = None if vectors is None or self.model is None else self.model.get()
        written: list[IndexDoc] = []
        rows: dict[str, list[int]] = {}
        for start in range(0, len(docs), _BATCH):
            batch = docs[start : start + _BATCH]
            written.extend(batch)
            if embedder is not None:
                rows.update(embed_docs(embedder, vectors, batch))
            if progress is not None:
                progress(len(written), len(docs))
        from gitmem.index.build import text_doc

        first = catalog.reserve_keys(len(written))
        keyed = [replace(text_doc(d), key=first + n) for n, d in enumerate(written)]
        text.write(keyed, sorted(removed))
        catalog.apply(
            removed,
            [(d.record, d.path, d.blob, rows.get(d.record.id, ())) for d in written],
            {"commit": head or "", "model": self.model_name},
            first,
        )
        if progress is not None and not written:
            progress(0, 0)

    def _vectors_file(self, root: Path | None = None) -> Any:
        """The vector file the catalog names (compaction writes a new one and switches the
        name in the same transaction as the new row numbers)."""
        if self.model is None:
            return None
        from gitmem.index.vectors import VectorFile

        name = VECTORS
        if root is None and self._catalog is not None:
            name = self._catalog.meta("vectors") or name
        return VectorFile((root or self.root) / name, self.model.dim)

    def _compact(self) -> None:
        """Rewrite the vector file without dead rows (after many edits)."""
        assert self._catalog is not None
        old = self._vectors_file()
        live = sorted(self._catalog.all_rows())
        matrix = old.matrix(old.rows())
        keep = [row for row, _ in live]
        name = f"vectors-{os.urandom(6).hex()}.f32"  # not uuid: its import costs a recall ~7 ms
        fresh = type(old)(self.root / name, old.dim)
        fresh.replace(matrix[keep] if keep else matrix[:0])
        self._catalog.renumber({o: n for n, o in enumerate(keep)}, {"vectors": name})
        old.path.unlink(missing_ok=True)

    # --- searching ---------------------------------------------------------------------------

    def allowed(self, flt: Filter) -> frozenset[str] | None:
        """The ids a narrow filter admits; None when (almost) everything is admitted."""
        assert self._catalog is not None
        if not flt.narrow:
            return None
        return frozenset(self._catalog.matching(flt))

    def keyword(self, query: str, n: int, flt: Filter) -> list[tuple[str, float]]:
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

        hits = self._text.search(query, n, allowed, admitted)
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
            hits = self._text.search(query, want, allowed)

    def has_type(self, name: str) -> bool:
        """Whether the index holds a record of type `name` (see Catalog.has_type)."""
        assert self._catalog is not None
        return self._catalog.has_type(name)

    def keyword_ceiling(self, query: str) -> float:
        assert self._text is not None
        return self._text.ceiling(query)

    def semantic(self, query: str, n: int, flt: Filter) -> list[tuple[str, float]] | None:
        """Best-chunk cosine per record; None when there is no model."""
        if self.model is None:
            return None
        assert self._catalog is not None
        if self.rank_without_numpy and flt.status_only and "numpy" not in sys.modules:
            found = self._semantic_without_numpy(query, n, flt)
            if found is not None:
                return found
        from gitmem.index.vectors import Ranking, query_row

        matrix = self._vector_matrix()
        if matrix is None:  # the index was rebuilt under this reader (see _vector_matrix)
            return []
        q = query_row(self.model.encode_query(query))
        allowed = self.allowed(flt)
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

    def _semantic_without_numpy(
        self, query: str, n: int, flt: Filter
    ) -> list[tuple[str, float]] | None:
        """The semantic half as `semantic` computes it, bit for bit, through gitmem.index.literank
        (ctypes over numpy's own OpenBLAS) and the row facts' stdlib arrays: importing numpy
        is ~110-200 ms of a `gitmem recall` process, a third of its budget. Taken only by an
        index that recalls once (`rank_without_numpy`) while numpy is not loaded; None
        where it cannot answer (no such BLAS, no row facts, a model it cannot read without
        numpy, a damaged vector file): then numpy's path answers."""
        assert self._catalog is not None and self.model is not None
        from gitmem.index import literank

        if not literank.available():
            return None
        stored = self._lite_facts()
        if stored is None:
            return None
        facts, path = stored.facts, self.root / stored.vectors  # the file they describe
        try:
            dim = self.model.dim
            rows = min(path.stat().st_size // (dim * 4), stored.rows)  # as _vector_matrix
        except OSError:
            return None
        if len(facts) < rows:
            return None
        key, superseded = facts.parts["key"], facts.parts["superseded"]
        hide = literank.hidden_rows(key, superseded, rows, flt.include_superseded)
        try:
            ranking = literank.LiteRanking(path, rows, dim, self.model.encode_query(query), hide)
            if not self._same_generation(self._loaded_generation):
                return []  # the file ranked may be a newer build's (see _vector_matrix)
            return self._best_records(ranking, _FactsView(facts), n)
        except literank.Unranked:
            return None

    def _lite_facts(self) -> StoredFacts | None:
        """The catalog's row facts, read once per commit seen (as `_row_arrays`)."""
        assert self._catalog is not None
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
                if key not in best:
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
        if len(self._scoring_cache) > 200_000:
            self._scoring_cache.clear()
        chosen = [row for _, _, row in ranked]
        facts = zip(rows.take("updated", chosen), rows.take("weight", chosen), strict=True)
        for (rid, _, _), (updated, weight) in zip(ranked, facts, strict=True):
            self._scoring_cache[rid] = (int(updated), float(weight))
        return [(rid, score) for rid, score, _ in ranked]

    def _row_arrays(self) -> Any:
        """The row facts of the mapped matrix as arrays, read once per matrix; None where the
        catalog has none that cover it (written by an older gitmem: until its next update)."""
        assert self._catalog is not None and self._matrix is not None
        if self._rows is None:
            from gitmem.index.vectors import RowArrays

            stored = self._catalog.row_facts()
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
                entries.update(self.entries(more))
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
        assert self._catalog is not None
        return _cached(self._owner_cache, rows, self._catalog.owners, 400_000)

    def entries(self, ids: Sequence[str]) -> dict[str, Entry]:
        assert self._catalog is not None
        return _cached(self._entry_cache, ids, self._catalog.entries, 200_000)

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

    def _vector_matrix(self) -> Any:
        """The live part of the vector file, mapped once per size of the file; None when
        the file in place is no longer the build this reader's catalog describes."""
        assert self._catalog is not None
        vectors = self._vectors_file()
        rows = min(vectors.rows(), self._catalog.next_row())
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
                if self._same_generation(self._loaded_generation):
                    raise  # damaged, not swapped
                return None
            if not self._same_generation(self._loaded_generation):
                return None
            self._matrix, self._matrix_key = matrix, key
            self._matrix_name = vectors.path.name
            # Another process's compaction renumbers rows into a new file under the same stamp.
            self._owner_cache.clear()
            self._rows, self._facts = None, False
        return self._matrix

    def stats(self) -> dict[str, Any]:
        size = sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file())
        assert self._catalog is not None
        return {
            "commit": self._stamp(),
            "records": self._catalog.count(),
            "vectors": self._catalog.live_rows(),
            "model": self.model_name or None,
            "bytes": size,
        }


class _FactsView:
    """The row facts' stdlib arrays as `_best_records` reads them (as vectors.RowArrays)."""

    def __init__(self, facts: RowFacts) -> None:
        self.ids_of = facts.ids_of
        self._parts = facts.parts

    def take(self, part: str, rows: list[int]) -> list[Any]:
        values = self._parts[part]
        return [values[row] for row in rows]


def _cached(
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


def _is_record(path: str) -> bool:
    return path.startswith(RECORDS_DIR + "/") and path.endswith(".md")


def embed_docs(embedder: Embedder, vectors: Any, docs: Sequence[IndexDoc]) -> dict[str, list[int]]:
    """Embed every chunk of every record into `vectors`; the rows of each record."""
    from gitmem.index.build import embed

    matrix, counts = embed(embedder, docs)
    return _rows(vectors, matrix, docs, counts)


def _rows(
    vectors: Any, matrix: Any, docs: Sequence[IndexDoc], counts: Sequence[int]
) -> dict[str, list[int]]:
    """Append `matrix` to `vectors`; each record's rows (contiguous, in `docs` order)."""
    if vectors is None or matrix is None:
        return {}
    row = vectors.append(matrix)
    rows: dict[str, list[int]] = {}
    for doc, count in zip(docs, counts, strict=True):
        rows.setdefault(doc.record.id, []).extend(range(row, row + count))
        row += count
    return rows
