"""A recall that races another process's compaction (gitmem.index.semantic): the compaction
writes a new vector file, names it in the catalog and removes the old one, so a reader that
read the old name just before finds its file gone. Before session 15 that reader saw 0 rows
against the catalog's count and called the index damaged (a whole rebuild with a false notice:
~10 minutes at a million records), or raised an OSError when the file went between its stat
and its map. Now it reads the name again and ranks in the new file; only a name that stays
and is still wrong is damage. The compaction here is real: another Store on the same
repository, catching up after edits, at a deterministic point of the reader's work."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from test_index import fill, reopened, tiny_model_dir

from gitmem.api import Store
from gitmem.index import ann, annbuild
from gitmem.index.catalog import VECTORS, Catalog
from gitmem.index.entries import Filter
from gitmem.index.vectors import VectorFile
from gitmem.index.verify import IndexDamaged

__all__ = ["tiny_model_dir"]  # the fixture, shared

QUERY = "retry webhook deliveries"
NOW = datetime(2030, 1, 1, tzinfo=UTC)  # decay measured from one moment
_BIG = "Chunked notes. " + "word " * 12_000  # ~75 vector rows: two edits leave enough dead


def _vector_name(store: Store) -> str:
    catalog = Catalog(store.cache_dir / "index" / "catalog.sqlite")
    try:
        return catalog.meta("vectors") or VECTORS
    finally:
        catalog.close()


def _near_a_compaction(store_path: Path, model_dir: Path) -> tuple[Store, str]:
    """A store whose next edit of the big record (its id returned) makes the catch-up that
    follows compact the vector file."""
    store = reopened(store_path, model_dir)
    fill(store)
    big = store.record("context", _BIG, title="Big chunked note", agent="a").record.id
    store.recall(QUERY)
    store.amend(big, {"abstract": "first revision"})
    store.recall(QUERY)
    assert _vector_name(store) == VECTORS  # not compacted yet
    return store, big


def _compact_elsewhere(store_path: Path, model_dir: Path, big: str) -> None:
    """Another process's edit and catch-up (another Store on the same repository), which
    compacts: the vector file is renamed and the old one removed."""
    other = reopened(store_path, model_dir)
    before = _vector_name(other)
    other.amend(big, {"abstract": "second revision"})
    other.recall("anything")
    assert _vector_name(other) != before  # compacted
    assert not (other.cache_dir / "index" / before).exists()


def _compacting_at_the_map(
    monkeypatch: pytest.MonkeyPatch, store_path: Path, model_dir: Path, big: str
) -> list[int]:
    """The next vector file mapped in this process is mapped after another process's
    compaction (which maps the old file itself, unhindered); the list returned says it came."""
    mapping = VectorFile.matrix
    done: list[int] = []

    def racing(file: VectorFile, rows: int) -> Any:
        if not done:
            done.append(1)
            _compact_elsewhere(store_path, model_dir, big)
        return mapping(file, rows)

    monkeypatch.setattr(VectorFile, "matrix", racing)
    return done


def _generation(store: Store) -> int:
    return (store.cache_dir / "index" / "catalog.sqlite").stat().st_ino


def test_a_compaction_between_the_name_and_the_map_is_ranked_in_the_new_file(
    store_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name read, then the compaction: the old file is gone when its rows are counted.
    A recall through the API ranks in the new file: no "damaged" notice, no rebuild."""
    store, big = _near_a_compaction(store_path, tiny_model_dir)
    index = store.index()
    half = index._semantic_half()
    vectors = half._vectors
    done: list[int] = []

    def racing() -> Any:
        found = vectors()  # the catalog's name of the vector file, read
        if not done:
            done.append(1)
            _compact_elsewhere(store_path, tiny_model_dir, big)
        return found

    monkeypatch.setattr(half, "_vectors", racing)
    generation = _generation(store)
    hits = store.recall(QUERY, mode="semantic", now=NOW).hits
    assert done
    assert [n for n in index.notices if "damaged" in n] == []
    assert _generation(store) == generation  # not rebuilt
    assert half._matrix_name == _vector_name(store) != VECTORS  # ranked in the new file
    fresh = reopened(store_path, tiny_model_dir).recall(QUERY, mode="semantic", now=NOW).hits
    assert [h.id for h in hits] == [h.id for h in fresh] != []


def test_a_compaction_between_the_stat_and_the_map_is_ranked_in_the_new_file(
    store_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old file still there when its rows are counted, gone when it is mapped (before:
    a FileNotFoundError out of the recall)."""
    _, big = _near_a_compaction(store_path, tiny_model_dir)
    half = reopened(store_path, tiny_model_dir).index()._semantic_half()
    done = _compacting_at_the_map(monkeypatch, store_path, tiny_model_dir, big)
    got = half.search(QUERY, 5, Filter(), without_numpy=False)
    assert done
    monkeypatch.undo()
    fresh = reopened(store_path, tiny_model_dir).index()._semantic_half()
    assert got == fresh.search(QUERY, 5, Filter(), without_numpy=False) != []
    assert half._matrix_name != VECTORS


def test_a_vector_file_gone_under_the_same_name_is_still_damage(
    store_path: Path, tiny_model_dir: Path
) -> None:
    """The name read again is the same: the file is damaged (removed by hand), a rebuild's
    business, not a compaction's."""
    store, _ = _near_a_compaction(store_path, tiny_model_dir)
    half = reopened(store_path, tiny_model_dir).index()._semantic_half()
    os.unlink(store.cache_dir / "index" / VECTORS)
    with pytest.raises(IndexDamaged, match="holds 0 vector rows"):
        half.search(QUERY, 5, Filter(), without_numpy=False)


def test_the_graph_builder_meets_a_compaction_as_a_stale_index_not_a_failure(
    store_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The detached builder reads the row facts and the vector file's name, then maps the
    file: a compaction between the two is "compacted meanwhile" (the next write starts it
    again), not a failure that backs the builder off."""
    pytest.importorskip("usearch")
    store, big = _near_a_compaction(store_path, tiny_model_dir)
    root = store.cache_dir / "index"
    done = _compacting_at_the_map(monkeypatch, store_path, tiny_model_dir, big)
    dim = reopened(store_path, tiny_model_dir).model().dim  # type: ignore[union-attr]
    said = annbuild.build(root, dim, wait=True)
    assert done
    assert "rebuilt or compacted meanwhile" in said
    assert annbuild.reported_failure(root) is None


@pytest.fixture
def graph_ranked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A vector graph ranks even this small index, built as soon as a write wants it."""
    pytest.importorskip("usearch")
    monkeypatch.setattr(ann, "THRESHOLD", 10)
    monkeypatch.setattr(ann, "LAZY_ROWS", 0)
    monkeypatch.setattr(
        annbuild, "start", lambda root, dim: bool(annbuild.build(root, dim, wait=True))
    )


def test_a_compaction_between_the_map_and_the_graph_ranks_again_in_the_new_file(
    store_path: Path, tiny_model_dir: Path, graph_ranked: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vector graph has the same window: a compaction between mapping the vector file and
    opening its graph removes the old file's graph. No damage: the mapped file is ranked
    exactly, then (its name changed) again in the new file, with the new file's graph."""
    store, big = _near_a_compaction(store_path, tiny_model_dir)
    half = reopened(store_path, tiny_model_dir).index()._semantic_half()
    opening = ann.open_graph
    done: list[int] = []

    def racing(root: Path, name: str, dim: int) -> Any:
        if not done:
            done.append(1)
            _compact_elsewhere(store_path, tiny_model_dir, big)
            assert not ann.graph_paths(root, name)[1].exists()  # the old file's graph: gone
        return opening(root, name, dim)

    monkeypatch.setattr(ann, "open_graph", racing)
    got = half.search(QUERY, 5, Filter(), without_numpy=False)
    assert done
    assert half._graph() is not None  # the new file's, built by the compacting write
    monkeypatch.setattr(ann, "open_graph", opening)
    fresh = reopened(store_path, tiny_model_dir).index()._semantic_half()
    assert got == fresh.search(QUERY, 5, Filter(), without_numpy=False) != []
    assert half._matrix_name == _vector_name(store) != VECTORS
