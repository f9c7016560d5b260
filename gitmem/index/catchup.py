"""Writing the search index: catching it up with HEAD by the tree diff, building it whole into a
new directory, and compacting its vector file.

An update diffs the indexed commit's tree against HEAD's and applies only what changed: vectors
are appended, the keyword index is upserted and committed, and last the catalog moves the stamp
in the same transaction as its rows. gitmem.index.index.Index decides when to write, under the
index lock, and swaps a full build in by rename; what writes the index here (gitmem.index.build:
pygit2 and a process pool) is imported where it is used, and this module only where the index
writes, so a recall of a current index loads neither.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.index import context
from gitmem.index.catalog import VECTORS, Catalog
from gitmem.index.textindex import TextIndex
from gitmem.index.verify import MANIFEST, manifest

if TYPE_CHECKING:
    from gitmem.index.build import IndexDoc
    from gitmem.index.embedding import Embedder
    from gitmem.index.model import ModelRef
    from gitmem.store.git import GitRepo
    from gitmem.store.record import Record

__all__ = ["RECORDS_DIR", "CatchUp", "compact", "embed_docs"]

_Progress = Callable[[int, int], None]  # gitmem.index.index.Progress
RECORDS_DIR = "records"  # gitmem.store.reader's (a test holds them together), without importing it
_BATCH = 2000
_APPLY_RECORDS = 10 * _BATCH  # a full build's catalog entries applied in groups (_Held)
_APPLY_CHARS = 32 << 20  # ... or once the records held carry this much text (_held_chars)


class CatchUp:
    """The writes of an index of `repo` with `model`; what a reader should hear of (a record
    left out, a worker that failed) goes to `notices`."""

    def __init__(self, repo: GitRepo, model: ModelRef | None, notices: list[str]) -> None:
        self._repo = repo
        self._model = model
        self._model_name = "" if model is None else model.name
        self.notices = notices

    def update(
        self,
        catalog: Catalog,
        text: TextIndex,
        vectors: Any,
        old: str,
        head: str | None,
        progress: _Progress | None,
    ) -> bool:
        """Apply the tree diff from `old` (the catalog's stamp) to `head`; False, with nothing
        written, where only a rebuild agrees with git (the old commit is gone, or an id that
        two files claim is touched)."""
        repo = self._repo
        if repo.resolve(old) is None:
            return False
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
        if self._doubled(catalog, docs, removed, changed):
            # Two files claim one id (a copy made by hand): a rebuild leaves every copy out
            # (see _single_claims), and is what an update must agree with.
            return False
        removed -= {d.record.id for d in docs}
        # An id leaves only if its indexed file changed: a copy elsewhere (not at its place,
        # so never indexed) that is edited or deleted leaves the record it copies, as a rebuild.
        indexed = catalog.entries(sorted(removed))
        removed = {rid for rid, entry in indexed.items() if entry.path in changed}
        if vectors is not None:
            vectors.truncate(catalog.next_row())
        self._write(catalog, text, vectors, docs, removed, head, progress)
        return True

    def build(self, fresh: Path, head: str | None, progress: _Progress | None) -> None:
        """A whole index of `head` in the new directory `fresh`."""
        (fresh / "text").mkdir(parents=True)
        catalog = Catalog(fresh / "catalog.sqlite", create=True)
        catalog.set_meta({"model": self._model_name})
        text = TextIndex.create(fresh / "text")
        files = [
            (path, blob) for path, blob in self._repo.files(head, RECORDS_DIR) if _is_record(path)
        ]
        files, doubled = self._single_claims(files)
        catalog.set_meta({"doubled": " ".join(sorted(doubled))})
        try:
            self._fill(catalog, text, files, head, progress, fresh)
        finally:
            catalog.close()

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
            by_id.setdefault(_stem(path), []).append((path, blob))
        doubled = set()
        for rid, claims in by_id.items():
            if len(claims) > 1 and len(read_docs(self._repo, claims, [])) > 1:
                doubled.add(rid)
                paths = ", ".join(path for path, _ in claims)
                self.notices.append(
                    f"{rid} is claimed by more than one file ({paths}); left out of search "
                    'until one remains — "gitmem validate" explains'
                )
        if not doubled:
            return list(files), doubled
        return [f for f in files if _stem(f[0]) not in doubled], doubled

    def _doubled(
        self, catalog: Catalog, docs: Sequence[IndexDoc], removed: set[str], changed: set[str]
    ) -> bool:
        """Whether a catch-up touches an id that more than one file claims, or did."""
        before = set((catalog.meta("doubled") or "").split())
        ids = [d.record.id for d in docs]
        if before & (set(ids) | removed) or len(set(ids)) < len(ids):
            return True
        known = catalog.entries(ids)  # not the index's cache: it mirrors the last commit seen
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
        progress: _Progress | None,
        root: Path,
    ) -> None:
        """Index every file into a new, empty index: batches are prepared (in worker
        processes for a large store, see gitmem.index.build) and written in file order."""
        vectors = None
        if self._model is not None:
            from gitmem.index.vectors import VectorFile

            vectors = VectorFile(root / VECTORS, self._model.dim)
        embedder = None if self._model is None else self._model.get()
        folder = None if self._model is None else self._model.folder
        meta = {"commit": head or "", "model": self._model_name}
        done = 0
        from gitmem.index.build import prepared

        # The documents wait for every record's facts (their context), on disk.
        with text.filling() as add, context.filling(root, add) as keep:
            held = _Held(catalog)
            for batch in prepared(self._repo, files, embedder, folder, _BATCH):
                self.notices.extend(batch.notices)
                rows = _rows(vectors, batch.vectors, batch.docs, batch.counts)
                first = catalog.reserve_keys(len(batch.docs))
                keep(batch.text, first, [d.record for d in batch.docs])  # in their order
                held.add(
                    first,
                    [(d.record, d.path, d.blob, rows.get(d.record.id, ())) for d in batch.docs],
                )
                done += len(batch.docs)
                if progress is not None:
                    progress(done, max(len(files), done))
            held.flush()
        meta[MANIFEST] = manifest(root)  # the text index is committed and its merges done
        catalog.apply((), [], meta)
        if progress is not None and not files:
            progress(0, 0)

    def _write(
        self,
        catalog: Catalog,
        text: TextIndex,
        vectors: Any,
        docs: Sequence[IndexDoc],
        removed: set[str],
        head: str | None,
        progress: _Progress | None,
    ) -> None:
        """Index `docs` (a catch-up's changed records) and drop `removed`, in this process."""
        embedder = None if vectors is None or self._model is None else self._model.get()
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
        root = catalog.path.parent
        context.rewrite(root, text, keyed, [d.record for d in written], removed)
        files = manifest(catalog.path.parent, catalog.meta(MANIFEST))  # what was just written
        catalog.apply(
            removed,
            [(d.record, d.path, d.blob, rows.get(d.record.id, ())) for d in written],
            {"commit": head or "", "model": self._model_name, MANIFEST: files},
            first,
        )
        if progress is not None and not written:
            progress(0, 0)


class _Held:
    """A full build's catalog entries, applied `_APPLY_RECORDS` at a time (or once the records
    held carry `_APPLY_CHARS` characters of text) rather than a batch at a time: each apply is
    a transaction that checks every chunk of the row facts and rewrites those it appends to
    (gitmem.index.factstore); before the facts were chunked it rewrote them all, n²/(2 ×
    batch) rows for a build of n, which is what grouping was measured against (benchmarks.md,
    "Session 14: the rebuild's serial part"). Keys stay each batch's own (`reserve_keys`,
    consecutive in a new catalog)."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._entries: list[tuple[Record, str, str, Sequence[int]]] = []
        self._first = 0
        self._chars = 0

    def add(self, first: int, entries: Sequence[tuple[Record, str, str, Sequence[int]]]) -> None:
        if self._entries and first != self._first + len(self._entries):
            self.flush()  # keys not following on: never in a new catalog, but keep them right
        if not self._entries:
            self._first = first
        self._entries.extend(entries)
        self._chars += sum(_held_chars(record) for record, _, _, _ in entries)
        if len(self._entries) >= _APPLY_RECORDS or self._chars >= _APPLY_CHARS:
            self.flush()

    def flush(self) -> None:
        if self._entries:
            self._catalog.apply((), self._entries, {}, self._first)
        self._entries, self._chars = [], 0


def _held_chars(record: Record) -> int:
    """The text a held record keeps: body, title, abstract and the other fields' values (a
    character is 1-4 bytes in memory; the cap is a bound on the order of memory, not exact)."""
    fields = sum(len(str(value)) for _, value in record.fields)
    return len(record.body) + len(record.title) + len(record.abstract) + fields


def compact(root: Path, catalog: Catalog, old: Any) -> None:
    """Rewrite the vector file `old` (the one `catalog` names) without dead rows, after many
    edits: a new file, named with the new row numbers in one transaction."""
    live = sorted(catalog.all_rows())
    matrix = old.matrix(old.rows())
    keep = [row for row, _ in live]
    name = f"vectors-{os.urandom(6).hex()}.f32"  # not uuid: its import costs a recall ~7 ms
    fresh = type(old)(root / name, old.dim)
    fresh.replace(matrix[keep] if keep else matrix[:0])
    catalog.renumber({o: n for n, o in enumerate(keep)}, {"vectors": name})
    old.path.unlink(missing_ok=True)


def _is_record(path: str) -> bool:
    return path.startswith(RECORDS_DIR + "/") and path.endswith(".md")


def _stem(path: str) -> str:
    """`Path(path).stem` of a record's path (`_is_record`), without pathlib: a full build asks
    it of every file, and pathlib's parsing was ~3 s of a 100k build's one process."""
    name = path.rpartition("/")[2]
    return name[:-3] if len(name) > 3 else name  # ".md" alone is a hidden file with no suffix


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
