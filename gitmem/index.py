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
import shutil
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.catalog import Catalog, CatalogCorrupt, Entry, Filter
from gitmem.errors import GitmemError, RecordInvalid
from gitmem.lock import cache_lock
from gitmem.record import Record, parse
from gitmem.store import RECORDS_DIR, Store
from gitmem.textindex import TextDoc, TextIndex, TextIndexCorrupt

if TYPE_CHECKING:
    from gitmem.embedding import Embedder

__all__ = ["Index", "IndexDoc", "ModelRef", "Progress", "embed_docs"]

Progress = Callable[[int, int], None]
_BATCH = 2000
_LOCK_TIMEOUT = 300.0


class ModelRef:
    """An embedding model known by name (what the index is stamped with), loaded on first use:
    a recall that finds the index current and asks for keywords only never pays for it."""

    def __init__(self, name: str, load: Callable[[], Embedder]) -> None:
        self.name = name
        self._load = load
        self._model: Embedder | None = None

    def get(self) -> Embedder:
        if self._model is None:
            self._model = self._load()
        return self._model

    @classmethod
    def from_folder(cls, spec: str, folder: Path) -> ModelRef:
        """The model in a local folder, named by the spec that found it and its fingerprint."""
        from gitmem import embedding

        def load() -> Embedder:
            model = embedding.load(str(folder), offline=True)
            if model is None:
                raise embedding.ModelUnavailable(f"no embedding model at {folder}")
            return model

        return cls(f"{spec}@{embedding.fingerprint(folder)}", load)


@dataclass(frozen=True)
class IndexDoc:
    record: Record
    path: str
    blob: str


class Index:
    """Every search first calls `ensure_current`."""

    def __init__(self, store: Store, model: ModelRef | None) -> None:
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
        self._loaded_generation = -1
        self._matrix: Any = None
        self._matrix_key: tuple[int, ...] | None = None

    @property
    def model_name(self) -> str:
        return "" if self.model is None else self.model.name

    # --- keeping up with HEAD ----------------------------------------------------------------

    def ensure_current(self, progress: Progress | None = None) -> None:
        """Catch up with HEAD (or rebuild) if the index is behind, missing or unusable."""
        head = self.store.head()
        problem = self._load()
        if problem is None and self._stamp() == head:
            self._refresh_readers(head)
            return
        with self._locked():
            problem = self._load()
            if problem is not None:
                if self.root.exists():
                    self.notices.append(f"search index {problem}; rebuilding it from git")
                self._rebuild(progress)
            elif self._stamp() != head:
                self._update(progress)
            # What the caches now mirror is the index's stamp, not whatever HEAD is by now.
            self._refresh_readers(self._stamp())

    def rebuild(self, progress: Progress | None = None) -> None:
        with self._locked():
            self._rebuild(progress)
        self._refresh_readers(self._stamp())

    def _stamp(self) -> str | None:
        assert self._catalog is not None
        return self._catalog.meta("commit")

    def _refresh_readers(self, head: str | None) -> None:
        if self._seen_commit != head:
            if self._text is not None:
                self._text.reload()
            self._entry_cache.clear()
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
        if not (self.root / "catalog.sqlite").exists():
            return "is missing"
        try:
            catalog = Catalog(self.root / "catalog.sqlite")
            text = TextIndex.open(self.root / "text")
        except (CatalogCorrupt, TextIndexCorrupt) as exc:
            return f"is unreadable ({exc})"
        if catalog.meta("model") != self.model_name:
            catalog.close()
            built = catalog.meta("model") or "no model"
            return f"was built with {built}, not {self.model_name or 'no model'}"
        if catalog.meta("commit") is None:
            catalog.close()
            return "was never finished"
        self._catalog, self._text = catalog, text
        self._loaded_generation = self._generation()
        return None

    def _generation(self) -> int:
        """Which build of the index is in place: a rebuild swaps in a new directory."""
        return (self.root / "catalog.sqlite").stat().st_ino

    def _close(self) -> None:
        if self._catalog is not None:
            self._catalog.close()
        self._catalog = None
        self._text = None
        self._entry_cache.clear()
        self._matrix, self._matrix_key = None, None

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
        for change in repo.diff(old, head):
            if not _is_record(change.path):
                continue
            if change.old is not None:
                removed.add(Path(change.path).stem)
            if change.new is not None:
                added.append((change.path, change.new))
        docs = list(self._parse(added))
        removed -= {d.record.id for d in docs}
        vectors = self._vectors_file()
        if vectors is not None:
            vectors.truncate(self._catalog.next_row())
        self._write(self._catalog, self._text, docs, removed, head, progress)
        if vectors is not None and self._catalog.next_row() > 1.5 * self._catalog.live_rows() + 64:
            self._compact()

    def _rebuild(self, progress: Progress | None) -> None:
        self._close()
        fresh = self.root.with_name(f"index.new-{os.getpid()}")
        shutil.rmtree(fresh, ignore_errors=True)
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
        self._write(catalog, text, self._parse(files), set(), head, progress, fresh, len(files))
        catalog.close()
        old = self.root.with_name(f"index.old-{os.getpid()}")
        if self.root.exists():
            os.replace(self.root, old)
        os.replace(fresh, self.root)
        shutil.rmtree(old, ignore_errors=True)
        if self._load() is not None:
            raise GitmemError(f"the search index at {self.root} could not be rebuilt")

    def _parse(self, files: Sequence[tuple[str, str]]) -> Iterator[IndexDoc]:
        """Records found at their own path. A file elsewhere (renamed or copied by hand) is
        left out, so one id is one file and an update agrees with a rebuild."""
        for path, blob in files:
            try:
                record = parse(self.store.repo.blob(blob).decode("utf-8"))
            except (UnicodeDecodeError, RecordInvalid):
                self.notices.append(f"{path} is not a valid record; left out of search")
                continue
            if record.path != path:
                self.notices.append(
                    f"{path} holds {record.id}, whose place is {record.path}; left out of "
                    'search — "gitmem validate" explains'
                )
                continue
            yield IndexDoc(record, path, blob)

    def _write(
        self,
        catalog: Catalog,
        text: TextIndex,
        docs: Iterable[IndexDoc],
        removed: set[str],
        head: str | None,
        progress: Progress | None,
        root: Path | None = None,
        total: int | None = None,
    ) -> None:
        """Index `docs` (parsed as they are consumed, a batch at a time) and drop `removed`.
        One thread: an embedding thread beside the parser was slower (measured at 20k and 100k
        records), because tokenizing and parsing both need the GIL and trade it per call."""
        vectors = self._vectors_file(root)
        embedder = None if vectors is None or self.model is None else self.model.get()
        written: list[IndexDoc] = []
        rows: dict[str, list[int]] = {}
        for batch in _batches(docs, _BATCH):
            written.extend(batch)
            if embedder is not None:
                rows.update(embed_docs(embedder, vectors, batch))
            if progress is not None:
                progress(len(written), max(total or 0, len(written)))
        text.write([_text_doc(d) for d in written], sorted(removed))
        catalog.apply(
            removed,
            [(d.record, d.path, d.blob, rows.get(d.record.id, ())) for d in written],
            {"commit": head or "", "model": self.model_name},
        )
        if progress is not None and not written:
            progress(0, 0)

    def _vectors_file(self, root: Path | None = None) -> Any:
        """The vector file the catalog names (compaction writes a new one and switches the
        name in the same transaction as the new row numbers)."""
        if self.model is None:
            return None
        from gitmem.vectors import VectorFile

        name = "vectors.f32"
        if root is None and self._catalog is not None:
            name = self._catalog.meta("vectors") or name
        return VectorFile((root or self.root) / name, self.model.get().info.dim)

    def _compact(self) -> None:
        """Rewrite the vector file without dead rows (after many edits)."""
        assert self._catalog is not None
        old = self._vectors_file()
        live = sorted(self._catalog.all_rows())
        matrix = old.matrix(old.rows())
        keep = [row for row, _ in live]
        name = f"vectors-{uuid.uuid4().hex[:12]}.f32"
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
        allowed = self.allowed(flt)
        want = n
        while True:
            hits = self._text.search(query, want, allowed)
            entries = self.entries([h.id for h in hits])
            out = [
                (h.id, h.score)
                for h in hits
                if h.id in entries and entries[h.id].blob == h.blob and flt.admits(entries[h.id])
            ]
            if len(out) >= n or len(hits) < want:
                return out[:n]
            want *= 4

    def keyword_ceiling(self, query: str) -> float:
        assert self._text is not None
        return self._text.ceiling(query)

    def semantic(self, query: str, n: int, flt: Filter) -> list[tuple[str, float]] | None:
        """Best-chunk cosine per record; None when there is no model."""
        if self.model is None:
            return None
        from gitmem.vectors import normalise, top_rows

        assert self._catalog is not None
        matrix = self._vector_matrix()
        q = normalise(self.model.get().encode([query]))
        allowed = self.allowed(flt)
        subset = None if allowed is None else self._catalog.rows_of(allowed)
        want = n + n // 2
        while True:
            pairs = top_rows(matrix, q, want, subset)
            owners = self._catalog.owners([row for row, _ in pairs])
            entries = self.entries(list(owners.values()))
            best: dict[str, float] = {}
            for row, score in pairs:
                rid = owners.get(row)
                entry = None if rid is None else entries.get(rid)
                if rid is None or entry is None or not flt.admits(entry):
                    continue
                best.setdefault(rid, score)
            if len(best) >= n or len(pairs) < want:
                ranked = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
                return ranked[:n]
            want *= 4

    def entries(self, ids: Sequence[str]) -> dict[str, Entry]:
        assert self._catalog is not None
        cache = self._entry_cache
        missing = [i for i in ids if i not in cache]
        found = self._catalog.entries(missing) if missing else {}
        if len(cache) > 200_000:
            cache.clear()
        cache.update(found)
        # Read with get: the other half of a recall may clear the cache from its thread.
        return {i: e for i in ids if (e := found.get(i) or cache.get(i)) is not None}

    def _vector_matrix(self) -> Any:
        """The live part of the vector file, mapped once per size of the file."""
        assert self._catalog is not None
        vectors = self._vectors_file()
        rows = min(vectors.rows(), self._catalog.next_row())
        try:
            stat = vectors.path.stat()
            key: tuple[int, ...] = (rows, stat.st_ino, stat.st_size)
        except FileNotFoundError:
            key = (rows, 0, 0)
        if key != self._matrix_key:
            self._matrix, self._matrix_key = vectors.matrix(rows), key
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


def _batches(docs: Iterable[IndexDoc], size: int) -> Iterator[list[IndexDoc]]:
    batch: list[IndexDoc] = []
    for doc in docs:
        batch.append(doc)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _is_record(path: str) -> bool:
    return path.startswith(RECORDS_DIR + "/") and path.endswith(".md")


def _text_doc(doc: IndexDoc) -> TextDoc:
    r = doc.record
    return TextDoc(r.id, doc.blob, r.title, r.abstract, r.body, r.tags, r.type)


def embed_docs(embedder: Embedder, vectors: Any, docs: Sequence[IndexDoc]) -> dict[str, list[int]]:
    """Embed every chunk of every record; a record's rows are contiguous."""
    from gitmem.embedding import chunks
    from gitmem.vectors import normalise

    texts: list[str] = []
    owners: list[str] = []
    for doc in docs:
        r = doc.record
        head = f"{r.title}\n{r.abstract}".strip()
        for piece in chunks(r.body) or [""]:
            texts.append(f"{head}\n{piece}".strip())
            owners.append(r.id)
    if not texts:
        return {}
    first = vectors.append(normalise(embedder.encode(texts)))
    rows: dict[str, list[int]] = {}
    for offset, rid in enumerate(owners):
        rows.setdefault(rid, []).append(first + offset)
    return rows
