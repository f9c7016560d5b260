"""The search index: a disposable cache of HEAD, caught up from the tree diff before each read.

Layout under the store's `.gitmem/`:

    index/catalog.sqlite   records (for filters and display), vector rows, the stamp
    index/text/            the keyword index (tantivy)
    index/vectors.f32      chunk vectors (only when an embedding model is loaded)
    index/ann-*.usearch    a large index's vector graph and its stamp (gitmem.index.ann)
    index.lock             held by whoever updates or rebuilds
    graph.lock             held by the vector graph's builder (gitmem.index.annbuild)
    graph.want             appended to by each write that wants the builder
    graph.failure          the builder's last failed attempts (time, count, message)

Before a read, `Index` opens the parts of the build in place, checks that they belong to one
build, and catches up with HEAD under the lock (the writing is gitmem.index.catchup's: apply the
tree diff, or build anew). A reader trusts only the catalog: a keyword hit whose blob the catalog
does not know yet is dropped, so a half-finished update is invisible. A rebuild happens in a new
directory swapped in by rename. Anything unreadable, missing or of another version is rebuilt,
with a one-line notice (opening a build, and knowing which is in place, is gitmem.index.opening's).
The searches are gitmem.index.searching's (Index's reading part), the semantic half
gitmem.index.semantic's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gitmem.errors import GitmemError
from gitmem.index import verify
from gitmem.index.catalog import Catalog, CatalogCorrupt
from gitmem.index.diskfull import translated
from gitmem.index.entries import Entry
from gitmem.index.neighbours import Neighbours
from gitmem.index.opening import DAMAGE, damaged, generation, open_build
from gitmem.index.searching import Searching
from gitmem.index.semantic import SemanticHalf
from gitmem.index.textindex import TextIndex, TextIndexCorrupt
from gitmem.store.lock import cache_lock

# What writes the index (gitmem.index.build, gitmem.store.store) is imported where it is used: it
# loads pygit2 and a process pool, ~150 ms that a recall of a current index (gitmem.cli.quickrecall)
# does without.
if TYPE_CHECKING:
    from gitmem.index.catchup import CatchUp
    from gitmem.index.model import ModelRef
    from gitmem.store.git import GitRepo

__all__ = ["DAMAGE", "Index", "IndexNotCurrent", "IndexedStore", "Progress", "damaged"]

Progress = Callable[[int, int], None]
_LOCK_TIMEOUT = 300.0
_COPY_WAIT = 1.0  # what time travel waits for the lock to copy vectors, then embeds
_NO_COPY: tuple[type[Exception], ...] = (GitmemError, OSError, *DAMAGE)  # busy, damaged


class IndexedStore(Protocol):
    """What the index needs of a store: its cache directory and HEAD to read it, and its
    repository to catch up. gitmem.store.store.Store is one; an index that never catches up
    (`catch_up=False`) needs no repository, and gitmem.store.gitfiles.StoreTip (the store's
    files, without pygit2) is enough."""

    @property
    def cache_dir(self) -> Path: ...
    @property
    def repo(self) -> GitRepo: ...
    def head(self) -> str | None: ...


class IndexNotCurrent(GitmemError):
    """An index opened with `catch_up=False` is behind HEAD, missing or unusable."""


class Index(Searching):
    """Every search first calls `ensure_current`.

    `catch_up=False`: an index that only answers while it is current, and raises
    IndexNotCurrent instead of catching up (the fast recall path: catching up needs the
    repository). `rank_without_numpy`: whether the semantic half may rank without numpy while
    numpy is not loaded, for a process that recalls once; numpy's path is faster per query, so a
    process that recalls again and again (the API, an MCP server) pays the import once."""

    def __init__(
        self,
        store: IndexedStore,
        model: ModelRef | None,
        *,
        catch_up: bool = True,
        rank_without_numpy: bool = False,
    ) -> None:
        self.store = store
        self.model = model
        self.catch_up = catch_up
        self.rank_without_numpy = rank_without_numpy
        self.root = store.cache_dir / "index"
        self.notices: list[str] = []
        self._catalog: Catalog | None = None
        self._text: TextIndex | None = None
        self._context: tuple[Neighbours, TextIndex] | None = None  # opened on first use
        self._seen_commit: str | None = None
        # Per-process caches of what the catalog says at _seen_commit: a long-lived process
        # (an MCP server, a batch) asks for the same records again and again.
        self._entry_cache: dict[str, Entry] = {}
        # (updated, weight) of the records the semantic half ranked from the row facts,
        # which recall's decay needs and the entry cache would otherwise fetch.
        self._scoring_cache: dict[str, tuple[int, float]] = {}
        self._semantic: SemanticHalf | None = None  # made for the build opened, on first use
        self._loaded_generation = -1
        # Whether a write wants the vector graph's builder (gitmem.index.annbuild), and
        # whether to start it detached (off: the caller runs `build_graph` itself).
        self._graph_wanted = False
        self.graph_later = True

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
        if not self.catch_up:
            raise IndexNotCurrent(f"the search index in {self.root} does not mirror HEAD")
        head = self.store.head()
        with self._writing():
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
        with self._writing():
            self._clear_dead_builds()
            self._rebuild(progress)
            self._refresh_readers(self._stamp())  # under the lock: no rebuild lands meanwhile

    def repair(self, damage: BaseException) -> None:
        """Rebuild an index a search found damaged (one of DAMAGE), with the usual notice.
        The quick checks at open (gitmem.index.verify) cannot see every damage; a read
        that meets it ends up here through its caller (gitmem.api.Store.recall)."""
        reason = getattr(damage, "reason", "") or str(damage) or type(damage).__name__
        with self._writing():
            self._clear_dead_builds()
            self.notices.append(f"search index is damaged ({reason}); rebuilding it from git")
            self._rebuild(None)
            self._refresh_readers(self._stamp())

    def verify(self) -> list[str]:
        """Every damage a full check finds (gitmem.index.verify.check, and the vector graph's:
        gitmem.index.ann.check, and its builder's last failure), under the lock so that no
        catch-up is half-way; for `gitmem doctor`."""
        from gitmem.index import annbuild
        from gitmem.index.ann import check as graph_problems

        with self._locked():
            dim = None if self.model is None else self.model.dim
            found = verify.check(self.root, dim) + graph_problems(self.root)
        failed = annbuild.reported_failure(self.root)
        if failed is not None:
            import time

            when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(failed.time))
            found.append(
                f"the vector graph's builder failed {failed.count} time(s) in a row, last at"
                f" {when}: {failed.message}; recalls rank exactly; the next write tries again"
                " after a back-off, or run gitmem rebuild --wait-graph"
            )
        return found

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
            if self._context is not None:
                self._context[1].reload()
            self._entry_cache.clear()
            self._scoring_cache.clear()
            if self._semantic is not None:
                self._semantic.new_commit()
        self._seen_commit = head

    def _load(self) -> str | None:
        """Open the parts; return what is wrong with them, or None."""
        if self._catalog is not None and self._text is not None:
            try:
                swapped = generation(self.root) != self._loaded_generation
                if not swapped and self._catalog.meta("model") == self.model_name:
                    return None
            except (CatalogCorrupt, OSError):
                pass
            self._close()
        opened = open_build(self.root, self.model_name)
        if isinstance(opened, str):
            return opened
        self._catalog, self._text, self._loaded_generation = opened
        return None

    def _close(self) -> None:
        if self._catalog is not None:
            self._catalog.close()
        self._catalog = None
        self._text = None
        if self._context is not None:
            self._context[0].close()
        self._context = None
        self._entry_cache.clear()
        self._scoring_cache.clear()
        self._semantic = None

    def _locked(self) -> AbstractContextManager[None]:
        return cache_lock(self.store.cache_dir / "index.lock", _LOCK_TIMEOUT, "the search index")

    def _update(self, progress: Progress | None) -> None:
        with translated(self.root):
            self._update_now(progress)

    def _update_now(self, progress: Progress | None) -> None:
        assert self._catalog is not None and self._text is not None
        old, vectors = self._stamp(), self._vectors_file()
        catalog, text, head = self._catalog, self._text, self.store.head()
        if old is None or not self._writer().update(catalog, text, vectors, old, head, progress):
            self._rebuild(progress)
            return
        if vectors is not None and catalog.next_row() > 1.5 * catalog.live_rows() + 64:
            self._compact()
        self._refresh_graph()

    def _rebuild(self, progress: Progress | None) -> None:
        with translated(self.root):
            self._rebuild_now(progress)

    def _rebuild_now(self, progress: Progress | None) -> None:
        import shutil  # here: a recall of a current index never rebuilds (~6 ms to import)

        self._close()
        fresh = self.root.with_name(f"index.new-{os.getpid()}")
        try:
            self._writer().build(fresh, self.store.head(), progress)
        except BaseException:
            shutil.rmtree(fresh, ignore_errors=True)  # a partial build may fill the disk
            raise
        old = self.root.with_name(f"index.old-{os.getpid()}")
        if self.root.exists():
            os.replace(self.root, old)
        os.replace(fresh, self.root)
        shutil.rmtree(old, ignore_errors=True)
        if self._load() is not None:
            raise GitmemError(f"the search index at {self.root} could not be rebuilt")
        self._refresh_graph()

    def _refresh_graph(self) -> None:
        """Look at a large index's vector graph (gitmem.index.annbuild.plan; under the lock):
        note whether the builder is wanted, which `_writing` starts once the lock is released."""
        vectors = self._vectors_file()
        if vectors is None or self._catalog is None:
            return
        from gitmem.index.annbuild import plan

        outcome = plan(self.root, vectors, self._catalog)
        self.notices.extend([outcome.notice] if outcome.notice else [])
        self._graph_wanted = self._graph_wanted or outcome.build

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """The index lock, and after it the vector graph's builder when a write wanted it
        (gitmem.index.annbuild): detached, or left to `build_graph` when `graph_later` is off."""
        self._graph_wanted = False
        with self._locked():
            yield
        if self._graph_wanted and self.graph_later and self.model is not None:
            from gitmem.index import annbuild

            annbuild.start(self.root, self.model.dim)

    def build_graph(self) -> str:
        """Build the vector graph a write wanted now, in this process, outside the index lock
        (`gitmem rebuild --wait-graph`; waits for a builder at work first); what was done."""
        from gitmem.index import annbuild

        wanted, self._graph_wanted = self._graph_wanted, False
        if self.model is None or not (wanted or annbuild.running(self.root)):
            return "no vector graph wanted"
        return annbuild.build(self.root, self.model.dim, wait=True)

    def _writer(self) -> CatchUp:
        from gitmem.index.catchup import CatchUp  # here: a recall of a current index never writes

        return CatchUp(self.store.repo, self.model, self.notices)

    def _compact(self) -> None:
        """Rewrite the vector file without dead rows (after many edits)."""
        from gitmem.index.catchup import compact

        assert self._catalog is not None
        compact(self.root, self._catalog, self._vectors_file())

    # --- searching ---------------------------------------------------------------------------

    def vectors_of(self, blobs: Mapping[str, str]) -> tuple[list[tuple[str, int]], list[int], Any]:
        """The chunk vectors this index holds of `blobs` (blob -> its record's id: looked up
        by id), as it stands (not caught up first): each blob found with its number of rows,
        in order, those rows' numbers, and the vector matrix they index (memory-mapped: it
        stays valid if a compaction or a rebuild replaces the file later, so a caller copies
        it in parts). For the time-travel cache: a blob is its text, and one text has one set
        of vectors under one model. Read under the index lock, so that no compaction
        renumbers rows meanwhile; nothing without a model, from an index that does not open,
        is damaged or short of rows, or whose lock another process holds past _COPY_WAIT (a
        rebuild): the versions are embedded then."""
        if self.model is None:
            return [], [], None
        lock = cache_lock(self.store.cache_dir / "index.lock", _COPY_WAIT, "the search index")
        try:
            with lock:
                if self._load() is not None:
                    return [], [], None
                assert self._catalog is not None
                ids = set(blobs.values())
                found = [(b, row) for b, row in self._catalog.blob_rows(ids) if b in blobs]
                vectors = self._vectors_file()
                held = vectors.rows()
                if not found or any(row >= held for _, row in found):
                    return [], [], None
                matrix = vectors.matrix(held)
        except _NO_COPY:
            return [], [], None
        counts: list[tuple[str, int]] = []
        for blob, _ in found:  # a record's rows are contiguous, in order
            if counts and counts[-1][0] == blob:
                counts[-1] = (blob, counts[-1][1] + 1)
            else:
                counts.append((blob, 1))
        return counts, [row for _, row in found], matrix

    def stats(self) -> dict[str, Any]:
        from dataclasses import asdict

        from gitmem.index import annbuild

        size = sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file())
        assert self._catalog is not None
        failed = annbuild.reported_failure(self.root)
        return {
            "commit": self._stamp(),
            "records": self._catalog.count(),
            "vectors": self._catalog.live_rows(),
            "model": self.model_name or None,
            "bytes": size,
            "graph": annbuild.state(self.root, self._graph_wanted),
            "graph_failure": None if failed is None else asdict(failed),
        }
