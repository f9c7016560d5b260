"""The vector graph's build across versions of gitmem (gitmem.index.annstamp's version): a graph
of an older version (session 14's float16, 16 links) is not searched, and the catch-up after the
next write builds it again as this version's (int8 under the cosine, 24 links); a graph of a
newer version, made by another install sharing the store, is left alone rather than deleted and
rebuilt by each write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_ann
from test_ann import _answers, _searchable

from gitmem.api import Store
from gitmem.index import ann, annstamp

pytest.importorskip("usearch")

tiny_model_dir = test_ann.tiny_model_dir  # the fixtures, shared
small_threshold = test_ann.small_threshold


def _none_dead(n: int) -> int:
    return 0


def _files(root: Path) -> tuple[Path, Path]:
    return next(root.glob("ann-*.usearch")), next(root.glob("ann-*.json"))


def _header(path: Path) -> tuple[str, str, int]:
    from usearch.index import Index

    index = Index.restore(str(path), view=True)
    assert index is not None
    return str(index.dtype), str(index.metric), int(index.connectivity)


def _session_14_graph(
    store_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Store, Path]:
    """A store whose graph was built by session 14's code: float16, inner product, 16 links,
    stamped version 3."""
    with monkeypatch.context() as old:
        old.setattr(ann, "_DTYPE", "f16")
        old.setattr(ann, "_METRIC", "ip")
        old.setattr(ann, "_CONNECTIVITY", 16)
        old.setattr(annstamp, "_VERSION", 3)
        store = _searchable(store_path, model, 30)
        _answers(store)
    root = store.cache_dir / "index"
    graph, stamp = _files(root)
    assert json.loads(stamp.read_text())["version"] == 3
    assert _header(graph) == ("ScalarKind.F16", "MetricKind.IP", 16)
    return store, root


def test_an_older_graph_is_not_searched_and_the_next_write_builds_this_versions(
    store_path: Path, tiny_model_dir: Path, small_threshold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, root = _session_14_graph(store_path, tiny_model_dir, monkeypatch)
    graph, stamp = _files(root)
    name, dim = json.loads(stamp.read_text())["vectors"], store.index().model.dim
    assert not annstamp.newer(stamp)  # an older one's: built again, not left alone
    assert ann.open_graph(root, name, dim) is None  # readers rank exactly meanwhile
    assert _answers(store) and graph.exists()  # and a recall alone leaves it (no write)
    store.record("fact", "Queues drain before deploys.", title="Drain queues")
    _answers(store)  # the index catches up with the write: its plan starts the builder
    graph, stamp = _files(root)
    assert json.loads(stamp.read_text())["version"] == annstamp._VERSION == 4
    assert _header(graph) == ("ScalarKind.I8", "MetricKind.Cos", 24)
    assert ann.open_graph(root, name, dim) is not None


def test_a_newer_installs_graph_is_left_alone_by_a_write(
    store_path: Path, tiny_model_dir: Path, small_threshold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _searchable(store_path, tiny_model_dir, 30)
    _answers(store)
    root = store.cache_dir / "index"
    graph, stamp = _files(root)
    made = graph.stat().st_ino, graph.read_bytes()
    name = json.loads(stamp.read_text())["vectors"]
    rows = store.index()._catalog.next_row()
    with monkeypatch.context() as old:  # this install is the older one now
        old.setattr(annstamp, "_VERSION", annstamp._VERSION - 1)
        assert annstamp.newer(stamp)
        outcome = ann.plan(root, name, rows, _none_dead, store.index().model.dim)
        assert outcome == ann.Outcome()  # no notice, no build
    assert (graph.stat().st_ino, graph.read_bytes()) == made and stamp.exists()
    with monkeypatch.context() as new:  # and the newer install itself still keeps it
        new.setattr(annstamp, "_VERSION", annstamp._VERSION)
        outcome = ann.plan(root, name, rows, _none_dead, store.index().model.dim)
        assert outcome.notice is None and graph.exists()


@pytest.mark.parametrize(
    "text", ["", "{", '{"version": "9"}', '{"version": true}', "[]", '{"version": 4}']
)
def test_a_stamp_is_newer_only_when_it_says_a_higher_version(tmp_path: Path, text: str) -> None:
    path = tmp_path / "ann-vectors.json"
    path.write_text(text)
    assert not annstamp.newer(path)
    path.write_text('{"version": 5}')
    assert annstamp.newer(path)
