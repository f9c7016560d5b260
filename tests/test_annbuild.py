"""The vector graph built outside the index lock (gitmem.index.annbuild): a write that needs a
new graph starts a detached builder and returns, readers rank exactly until it is in place,
the builder puts it in place under the index lock, and `gitmem rebuild` says so (or waits
with --wait-graph). The threshold is lowered so that a few dozen records count as large."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import test_ann
from conftest import Result
from test_ann import _answers, _searchable, built, clustered
from test_quickrecall import use_model

from gitmem.index import ann, annbuild
from gitmem.index.vectors import VectorFile
from gitmem.store.lock import cache_lock

pytest.importorskip("usearch")

tiny_model_dir = test_ann.tiny_model_dir  # the fixture, shared


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """A small threshold, and each builder a write starts noted instead of started."""
    monkeypatch.setattr(ann, "THRESHOLD", 10)
    calls: list[Path] = []

    def note(root: Path, dim: int) -> bool:
        calls.append(root)
        return True

    monkeypatch.setattr(annbuild, "start", note)
    return calls


def _wait(until: Callable[[], bool], what: str, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not until():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_the_detached_builder_builds_outside_the_index_lock_and_installs_under_it(
    store_path: Path,
    tiny_model_dir: Path,
    started: list[Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = _searchable(store_path, tiny_model_dir, 30)
    dim = store.model().dim  # type: ignore[union-attr]
    exact = _answers(store)  # the write that built the index wanted a graph ...
    root = store.cache_dir / "index"
    assert started == [root]  # ... and started the builder, which was not there yet
    assert not list(root.glob("ann-*"))
    monkeypatch.undo()  # the real start, spawning `python -m gitmem.index.annbuild`
    with cache_lock(store.cache_dir / "index.lock", 10, "the search index"):
        assert annbuild.start(root, dim)
        # It builds while the index is locked (a catch-up, a rebuild) ...
        _wait(lambda: any(root.glob("ann-*.tmp-*")), "the builder's temporary graph")
        assert annbuild.running(root)
        assert annbuild.start(root, dim)  # one at work: no second
        assert not list(root.glob("ann-*.json"))  # ... and puts nothing in place meanwhile
        assert _answers(store) == exact  # readers rank exactly, without the lock
    _wait(lambda: not annbuild.running(root), "the builder to finish")
    stamp = json.loads(next(root.glob("ann-*.json")).read_text())
    assert stamp["covered"] == store.index()._catalog.next_row()  # type: ignore[union-attr]
    assert not list(root.glob("ann-*.tmp-*"))
    assert ann.open_graph(root, stamp["vectors"], dim) is not None
    assert store.check_index() == []
    assert _answers(store) == exact


def test_a_builder_finds_a_rebuild_that_happened_meanwhile_and_puts_nothing_in_place(
    store_path: Path, tiny_model_dir: Path, started: list[Path]
) -> None:
    store = _searchable(store_path, tiny_model_dir, 30)
    _answers(store)
    root = store.cache_dir / "index"

    def rebuilt_meanwhile(at: Path, prepared: ann.Prepared) -> bool:
        raise AssertionError("installed over another build")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ann, "install", rebuilt_meanwhile)
        original = annbuild.cache_lock  # type: ignore[attr-defined]

        def lock_after_a_rebuild(*args: object, **kwargs: object) -> object:
            store.rebuild()  # swaps the index directory: another catalog, another vector file
            return original(*args, **kwargs)  # type: ignore[arg-type]

        patch.setattr(annbuild, "cache_lock", lock_after_a_rebuild)
        said = annbuild.build(root, store.model().dim, wait=True)  # type: ignore[union-attr]
    assert "rebuilt or compacted meanwhile" in said
    assert not list(root.glob("ann-*"))


def test_a_compaction_keeps_the_graph_a_little_below_the_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ann, "THRESHOLD", 100)
    old = VectorFile(tmp_path / "vectors.f32", 32)
    old.append(clustered(120, 32))
    built(tmp_path, old, 120, np.zeros(120, dtype=bool))
    dead = np.zeros(90, dtype=bool)  # 90 live rows renumbered into a new file: 0.8-1 x 100
    assert ann.plan(tmp_path, "vectors-1.f32", 90, dead, 32) == ann.Outcome(build=True)
    assert not list(tmp_path.glob("ann-vectors.*"))  # the old file's graph is gone
    assert ann.plan(tmp_path, "vectors-2.f32", 90, dead, 32) == ann.Outcome()  # none had been


def test_a_writer_checks_the_graphs_size_and_header_and_never_reads_it_whole(
    store_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ann, "THRESHOLD", 10)
    monkeypatch.setattr(annbuild, "start", lambda root, dim: annbuild.build(root, dim, wait=True))
    store = _searchable(store_path, tiny_model_dir, 30)
    _answers(store)
    read: list[Path] = []

    def crc32(path: Path) -> int:
        read.append(path)
        return 0

    monkeypatch.setattr(ann, "crc32", crc32)
    store.record("fact", "Webhooks are signed with HMAC.", title="Webhook signatures")
    _answers(store)  # the catch-up: one row behind, LAZY_ROWS allows it
    assert read == []


def test_rebuild_leaves_the_graph_to_the_background_or_waits_for_it(
    store_path: Path,
    tiny_model_dir: Path,
    started: list[Path],
    gm: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _searchable(store_path, tiny_model_dir, 30)
    use_model(store_path, str(tiny_model_dir))
    result = gm("rebuild")
    assert result.code == 0, result.err
    assert "building the vector graph in the background" in result.out
    assert len(started) == 1
    result = gm("rebuild", "--json")
    assert json.loads(result.out)["graph"] == "building"
    assert len(started) == 2
    result = gm("rebuild", "--wait-graph", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["graph"] == "built"
    assert len(started) == 2  # built in this process, none started
    root = store_path / ".gitmem" / "index"
    assert len(list(root.glob("ann-*.json"))) == 1
    monkeypatch.setattr(ann, "THRESHOLD", 10**9)
    result = gm("rebuild", "--wait-graph")
    assert "vector graph" not in result.out
    assert json.loads(gm("rebuild", "--json").out)["graph"] == "none"
