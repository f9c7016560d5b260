"""The vector graph of a large index (gitmem.index.ann): near enough to exact, kept current by
the catch-up as a rebuild would make it, and rebuilt when damaged. The threshold is lowered so
that a store of a few dozen records counts as large, and the builder a write starts
(gitmem.index.annbuild) runs in the test's process when it starts, so that each write leaves
the graph as the detached builder would; tests/test_annbuild.py runs the detached one."""

from __future__ import annotations

import json
import os
import random
import shutil
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from test_index import fill, reopened
from tinymodel import build_tiny_model

from gitmem.api import Store
from gitmem.index import ann, annbuild
from gitmem.index.annstamp import FIELDS
from gitmem.index.entries import Filter
from gitmem.index.vectors import GraphRanking, Ranking, VectorFile, normalise

pytest.importorskip("usearch")

WORDS = "cache webhook retry postgres deploy session token queue schema latency".split()


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("model") / "tiny"
    build_tiny_model(out)
    return out


def build_now(root: Path, dim: int) -> bool:
    """annbuild.start, in this process: the builder runs to the end before the write returns."""
    annbuild.build(root, dim, wait=True)
    return True


@pytest.fixture
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ann, "THRESHOLD", 10)
    monkeypatch.setattr(ann, "LAZY_ROWS", 0)  # every catch-up brings the graph up to date
    monkeypatch.setattr(annbuild, "start", build_now)


def built(root: Path, file: VectorFile, rows: int, dead: np.ndarray) -> None:  # type: ignore[type-arg]
    """The graph of `file`'s first `rows` rows, made and put in place as the builder does."""
    prepared = ann.prepare(root, file.path.name, file.matrix(rows), dead, threads=2)
    assert prepared is not None and ann.install(root, prepared)


def clustered(rows: int, dim: int, seed: int = 3) -> np.ndarray:  # type: ignore[type-arg]
    """Unit vectors around 50 centres: neighbours that are near, as real embeddings have."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(50, dim))
    return normalise(centres[rng.integers(0, 50, rows)] + 0.6 * rng.normal(size=(rows, dim)))


def test_recall_at_10_against_exact(tmp_path: Path, small_threshold: None) -> None:
    vectors = clustered(6000, 32)
    file = VectorFile(tmp_path / "vectors.f32", 32)
    file.append(vectors)
    dead = np.zeros(6000, dtype=bool)
    dead[::7] = True  # rows whose record changed: never proposed
    built(tmp_path, file, 6000, dead)
    graph = ann.open_graph(tmp_path, file.path.name, 32)
    assert graph is not None and graph.covered == 6000
    queries = clustered(100, 32, seed=9)
    found = 0
    for q in queries:
        exact = {row for row, _ in Ranking(file.matrix(6000), q, None, dead.copy()).top(10)}
        approximate = GraphRanking(file.matrix(6000), q, graph, dead).top(10)
        assert not any(dead[row] for row, _ in approximate)
        found += len(exact & {row for row, _ in approximate[:10]})
    assert found / (10 * len(queries)) >= 0.98


def test_a_graph_behind_the_vector_file_ranks_the_newer_rows_exactly(
    tmp_path: Path, small_threshold: None
) -> None:
    vectors = clustered(3000, 32)
    file = VectorFile(tmp_path / "vectors.f32", 32)
    file.append(vectors[:2000])
    built(tmp_path, file, 2000, np.zeros(2000, dtype=bool))
    file.append(vectors[2000:])  # an update the graph has not seen
    graph = ann.open_graph(tmp_path, file.path.name, 32)
    assert graph is not None and graph.covered == 2000
    q = vectors[2500]
    top = GraphRanking(file.matrix(3000), q, graph, None).top(1)
    assert top[0][0] == 2500 and top[0][1] == pytest.approx(1.0, abs=1e-5)


class _Unlinked:
    """A graph whose search never reaches one of its rows, as a graph built on several threads
    may leave a node no link leads to."""

    def __init__(self, graph: ann.Graph, lost: int) -> None:
        self.covered, self.size, self._graph, self._lost = graph.covered, graph.size, graph, lost

    def search(self, query: np.ndarray, k: int) -> np.ndarray:  # type: ignore[type-arg]
        found = self._graph.search(query, k)
        return found[found != self._lost]  # type: ignore[no-any-return]


def test_a_row_the_graph_cannot_reach_is_still_ranked(
    tmp_path: Path, small_threshold: None
) -> None:
    vectors = clustered(40, 32)
    file = VectorFile(tmp_path / "vectors.f32", 32)
    file.append(vectors)
    built(tmp_path, file, 40, np.zeros(40, dtype=bool))
    graph = ann.open_graph(tmp_path, file.path.name, 32)
    assert graph is not None and graph.size == 40
    unlinked = _Unlinked(graph, 17)
    top = GraphRanking(file.matrix(40), vectors[17], unlinked, None).top(3)
    assert top[0][0] == 17  # the graph answered fewer rows than it holds: ranked exactly
    assert [row for row, _ in top] == [
        row for row, _ in Ranking(file.matrix(40), vectors[17]).top(3)
    ]


def _searchable(root: Path, model: Path, count: int) -> Store:
    store = reopened(root, model)
    fill(store)
    rng = random.Random(5)
    for i in range(count):
        text = " ".join(rng.choice(WORDS) for _ in range(12))
        store.record("fact", f"{text} ({i})", title=f"Note {i} {text[:30]}", agent="a")
    return store


QUERIES = ["retry webhook deliveries", "postgres session", "deploy queue latency", "cache"]


def _answers(store: Store) -> list[list[tuple[str, float]]]:
    now = datetime(2030, 1, 1, tzinfo=UTC)  # decay measured from one moment
    return [
        [(h.id, round(h.score, 6)) for h in store.recall(q, limit=5, now=now).hits] for q in QUERIES
    ]


def _stamp(store: Store) -> dict[str, object]:
    found = sorted((store.cache_dir / "index").glob("ann-*.json"))
    assert len(found) == 1, found
    data: dict[str, object] = json.loads(found[0].read_text())
    return data


def test_graph_kept_current_by_the_catch_up_answers_as_a_rebuilt_one(
    store_path: Path,
    tiny_model_dir: Path,
    small_threshold: None,
) -> None:
    store = _searchable(store_path, tiny_model_dir, 30)
    _answers(store)  # built, with its graph
    first = _stamp(store)
    ids = [r.id for r in store.records()]
    store.supersede(ids[0], "Retry with jitter now.", title="Retry webhooks with jitter")
    store.forget(ids[1], reason="wrong")
    store.record("fact", "Webhooks are signed with HMAC.", title="Webhook signatures")
    incremental = _answers(store)
    caught_up = _stamp(store)
    assert caught_up["vectors"] == first["vectors"]  # the same graph, added to ...
    assert int(caught_up["covered"]) > int(first["covered"])  # type: ignore[call-overload]
    assert int(caught_up["removed"]) > int(first["removed"])  # type: ignore[call-overload]
    shutil.rmtree(store.cache_dir)
    rebuilt = reopened(store.root, tiny_model_dir)
    assert _answers(rebuilt) == incremental
    assert any(incremental)


def test_a_damaged_graph_is_ignored_by_readers_and_built_again_by_the_next_write(
    store_path: Path,
    tiny_model_dir: Path,
    small_threshold: None,
) -> None:
    store = _searchable(store_path, tiny_model_dir, 30)
    before = _answers(store)
    graph = next((store.cache_dir / "index").glob("ann-*.usearch"))
    graph.write_bytes(b"\0" * 64)  # damage the disk could do
    again = reopened(store.root, tiny_model_dir)
    assert _answers(again) == before  # ranked exactly meanwhile
    again.record("fact", "Queues drain before deploys.", title="Drain queues")
    result = again.recall("queue deploy")
    assert any("vector graph" in n and "building it again" in n for n in result.notices)
    assert graph.stat().st_size > 64
    assert _stamp(again)["covered"] == again.index()._catalog.next_row()  # type: ignore[union-attr]


def test_a_graph_a_little_behind_is_left_for_readers_to_complete(
    store_path: Path, tiny_model_dir: Path, small_threshold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ann, "LAZY_ROWS", 1000)
    store = _searchable(store_path, tiny_model_dir, 30)
    _answers(store)
    first = _stamp(store)
    ids = [r.id for r in store.records()]
    store.forget(ids[1], reason="wrong")
    store.record("fact", "Webhooks are signed with HMAC.", title="Webhook signatures")
    behind = _answers(store)
    assert _stamp(store) == first  # not saved again ...
    shutil.rmtree(store.cache_dir)
    assert _answers(reopened(store.root, tiny_model_dir)) == behind  # ... and the same answers


def test_small_stores_keep_exact_ranking_and_no_graph(
    store_path: Path,
    tiny_model_dir: Path,
) -> None:
    store = _searchable(store_path, tiny_model_dir, 5)
    _answers(store)
    assert not list((store.cache_dir / "index").glob("ann-*"))


def test_the_numpy_free_path_leaves_a_graph_indexed_store_to_numpys(
    store_path: Path, tiny_model_dir: Path, small_threshold: None
) -> None:
    """`gitmem recall`'s fast path ranks exactly without numpy; with a graph it must not, or
    the CLI and the API would answer differently."""
    store = _searchable(store_path, tiny_model_dir, 30)
    _answers(store)
    half = store.index()._semantic_half()
    assert half.without_numpy("retry webhook", 5, Filter()) is None
    for graph in (store.cache_dir / "index").glob("ann-*"):
        graph.unlink()
    exact = reopened(store.root, tiny_model_dir).index()._semantic_half()
    assert exact.without_numpy("retry webhook", 5, Filter())  # ranked, exactly


def _exact(
    store: Store, model: Path, monkeypatch: pytest.MonkeyPatch
) -> list[list[tuple[str, float]]]:
    """The answers of a rebuilt index ranked exactly (no graph), threshold restored after."""
    shutil.rmtree(store.cache_dir)
    with monkeypatch.context() as patch:
        patch.setattr(ann, "THRESHOLD", 10**9)
        return _answers(reopened(store.root, model))


@pytest.mark.parametrize("graph_saved", [False, True])
def test_a_save_cut_off_between_graph_and_stamp_costs_no_new_graph(
    store_path: Path,
    tiny_model_dir: Path,
    small_threshold: None,
    monkeypatch: pytest.MonkeyPatch,
    graph_saved: bool,
) -> None:
    # The builder wrote the stamp naming the new graph as `next`, then died before the graph
    # was in place (graph_saved=False) or before the stamp was written again (True).
    store = _searchable(store_path, tiny_model_dir, 30)
    _answers(store)
    index_dir = store.cache_dir / "index"
    stamp_path = next(index_dir.glob("ann-*.json"))
    graph = next(index_dir.glob("ann-*.usearch"))
    old_stamp, old_graph = json.loads(stamp_path.read_text()), index_dir / "old.usearch"
    os.link(graph, old_graph)  # the graph as saved, the same file (inode, mtime)
    store.record("fact", "Webhooks are signed with HMAC.", title="Webhook signatures")
    _answers(store)
    new = json.loads(stamp_path.read_text())
    assert new["covered"] > old_stamp["covered"]
    cut = old_stamp | {"next": [new[f] for f in FIELDS]}
    stamp_path.write_text(json.dumps(cut))
    if not graph_saved:
        os.replace(old_graph, graph)
    old_graph.unlink(missing_ok=True)
    started: list[Path] = []

    def note(root: Path, dim: int) -> bool:
        started.append(root)
        return True

    monkeypatch.setattr(annbuild, "start", note)
    monkeypatch.setattr(ann, "LAZY_ROWS", 1000)
    assert store.check_index() == []  # gitmem doctor: a graph its stamp describes
    again = reopened(store.root, tiny_model_dir)
    again.record("fact", "Queues drain before deploys.", title="Drain queues")
    found = _answers(again)
    assert not started  # no new graph: the one in place is near enough
    assert not any("vector graph" in n for n in again.recall("queue deploy").notices)
    assert found == _exact(again, tiny_model_dir, monkeypatch)


def test_a_graph_that_cannot_be_built_leaves_the_recall_answering_exactly(
    store_path: Path, tiny_model_dir: Path, small_threshold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _searchable(store_path, tiny_model_dir, 30)
    _answers(store)
    before = _stamp(store)

    tried: list[Path] = []

    def fails(path: Path) -> int:
        tried.append(path)
        raise OSError(28, "No space left on device")  # what a full disk does to the save

    monkeypatch.setattr(ann, "crc32", fails)
    store.record("fact", "Queues drain before deploys.", title="Drain queues")
    found = _answers(store)
    assert tried, "the build was not attempted"
    failed = annbuild.failure(store.cache_dir / "index")
    assert failed is not None and "No space left" in failed.message
    assert _stamp(store) == before  # the graph in place is kept, behind ...
    assert not list((store.cache_dir / "index").glob("*.tmp-*"))  # ... and nothing half-saved
    monkeypatch.undo()
    assert found == _exact(store, tiny_model_dir, monkeypatch)  # rows past it ranked exactly


def test_a_plan_that_fails_drops_the_graph_and_the_recall_answers_exactly(
    store_path: Path, tiny_model_dir: Path, small_threshold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _searchable(store_path, tiny_model_dir, 30)
    _answers(store)

    def fails(*args: object, **kwargs: object) -> None:
        raise RuntimeError("usearch could not read the header")

    monkeypatch.setattr(ann, "_header", fails)
    store.record("fact", "Queues drain before deploys.", title="Drain queues")
    result = store.recall("queue deploy")
    assert any("could not be updated" in n for n in result.notices)
    assert not list((store.cache_dir / "index").glob("ann-*"))
    found = _answers(store)
    assert found == _exact(store, tiny_model_dir, monkeypatch)


def _damage_in_place(graph: Path) -> None:
    """Flip bytes of `graph` in its second half, keeping its size and inode, as a stray write
    would (its mtime moves on; made sure of on a file system with coarse timestamps)."""
    before = graph.stat().st_mtime_ns
    data = bytearray(graph.read_bytes())
    for at in random.Random(7).sample(range(len(data) // 2, len(data)), 20):
        data[at] ^= 0xFF
    with graph.open("r+b") as handle:  # in place: the same inode
        handle.write(bytes(data))
    if graph.stat().st_mtime_ns == before:
        os.utime(graph, ns=(before + 1, before + 1))


def test_a_graph_changed_in_place_is_never_mapped_and_the_next_write_builds_it_again(
    store_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ann, "THRESHOLD", 10)  # LAZY_ROWS as shipped: a write is near enough
    monkeypatch.setattr(annbuild, "start", build_now)
    store = _searchable(store_path, tiny_model_dir, 30)
    before = _answers(store)
    assert store.check_index() == []
    root = store.cache_dir / "index"
    graph = next(root.glob("ann-*.usearch"))
    inode = graph.stat().st_ino
    _damage_in_place(graph)
    assert graph.stat().st_ino == inode
    dim = store.model().dim  # type: ignore[union-attr]
    assert ann.open_graph(root, str(_stamp(store)["vectors"]), dim) is None  # never mapped
    again = reopened(store.root, tiny_model_dir)
    assert _answers(again) == before  # ranked exactly
    again.record("fact", "Queues drain before deploys.", title="Drain queues")
    result = again.recall("queue deploy")  # the catch-up removes it and starts the builder
    assert any("vector graph" in n and "building it again" in n for n in result.notices)
    assert again.check_index() == []  # built anew, not extended
    assert _stamp(again)["covered"] == again.index()._catalog.next_row()  # type: ignore[union-attr]
    assert ann.open_graph(root, str(_stamp(again)["vectors"]), dim) is not None


@pytest.mark.parametrize("how", ["in place", "bit rot"])
def test_doctor_removes_a_damaged_graph_and_says_so(
    store_path: Path, tiny_model_dir: Path, small_threshold: None, how: str
) -> None:
    store = _searchable(store_path, tiny_model_dir, 30)
    before = _answers(store)
    graph = next((store.cache_dir / "index").glob("ann-*.usearch"))
    stat = graph.stat()
    _damage_in_place(graph)
    if how == "bit rot":  # beneath the file system: the stat cannot tell, the checksum can
        os.utime(graph, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    problems = store.check_index()  # gitmem doctor
    why = "changed or replaced" if how == "in place" else "checksum does not match"
    assert len(problems) == 1 and why in problems[0] and "removed" in problems[0], problems
    assert not graph.exists()
    assert _answers(reopened(store.root, tiny_model_dir)) == before  # ranked exactly
    store.record("fact", "Queues drain before deploys.", title="Drain queues")
    _answers(store)
    assert graph.exists() and store.check_index() == []  # the next write built it again


def test_a_graph_of_another_size_than_its_stamp_says_is_not_opened(
    tmp_path: Path, small_threshold: None
) -> None:
    file = VectorFile(tmp_path / "vectors.f32", 32)
    file.append(clustered(100, 32))
    built(tmp_path, file, 100, np.zeros(100, dtype=bool))
    assert ann.open_graph(tmp_path, file.path.name, 32) is not None
    path, _ = ann.graph_paths(tmp_path, file.path.name)
    with path.open("ab") as handle:
        handle.write(b"\0" * 8)  # a reader never maps a graph its stamp does not describe
    assert ann.open_graph(tmp_path, file.path.name, 32) is None


def _graphs(store: Store) -> list[str]:
    return sorted(p.name for p in (store.cache_dir / "index").glob("ann-*"))


def test_the_graph_is_kept_a_little_below_the_threshold_and_by_installs_without_usearch(
    store_path: Path, tiny_model_dir: Path, small_threshold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _searchable(store_path, tiny_model_dir, 30)
    _answers(store)
    live = store.index()._catalog.live_rows()  # type: ignore[union-attr]
    monkeypatch.setattr(ann, "THRESHOLD", live)
    ids = [r.id for r in store.records()]
    store.forget(ids[0], reason="gone")
    _answers(store)
    assert _graphs(store)  # one below the threshold: kept (and brought up to date)
    with monkeypatch.context() as patch:
        patch.setattr(ann, "available", lambda: False)  # an install without the extra
        store.forget(ids[1], reason="gone")
        _answers(store)
        assert _graphs(store)  # left for the install that built it
    for rid in ids[2 : 2 + live // 5]:
        store.forget(rid, reason="gone")
    _answers(store)
    assert not _graphs(store)  # below 0.8 x the threshold: removed
    store.record("fact", "Queues drain before deploys.", title="Drain queues")
    _answers(store)
    assert not _graphs(store)  # and not built again until the threshold


def test_a_save_cut_off_twice_leaves_a_graph_its_stamp_describes(
    store_path: Path, tiny_model_dir: Path, small_threshold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _searchable(store_path, tiny_model_dir, 30)
    _answers(store)
    stamp_path = next((store.cache_dir / "index").glob("ann-*.json"))
    old = json.loads(stamp_path.read_text())
    store.record("fact", "Webhooks are signed with HMAC.", title="Webhook signatures")
    _answers(store)
    new = json.loads(stamp_path.read_text())
    # Cut off once after the new graph was put in place, before its stamp was written ...
    stamp_path.write_text(json.dumps(old | {"next": [new[f] for f in FIELDS]}))
    assert store.check_index() == []

    class Killed(BaseException):
        """Stands for SIGKILL between the stamp naming the next graph and the graph's rename."""

    rename = os.replace
    killed_at: list[str] = []

    def replace(source: str | Path, target: str | Path) -> None:
        if ".usearch.tmp-" in str(source):  # the graph's rename, its stamp naming it as next
            killed_at.append(json.loads(stamp_path.read_text())["next"])
            raise Killed
        rename(source, target)

    store.record("fact", "Queues drain before deploys.", title="Drain queues")
    with monkeypatch.context() as patch:  # ... and again, by the next save, before its rename
        patch.setattr(os, "replace", replace)
        with pytest.raises(Killed):
            _answers(store)
    assert killed_at  # cut off where it was meant to be
    assert ann.check(stamp_path.parent) == []  # the graph in place is still described


def test_the_search_widens_with_the_graphs_rows() -> None:
    assert ann.search_width(1_000) == ann.search_width(ann._WIDTH_ROWS) == ann._NARROWEST
    widths = [ann.search_width(rows) for rows in range(200_000, 2_000_001, 100_000)]
    assert widths == sorted(widths) and len(set(widths)) == len(widths)
    assert ann.search_width(1_000_000) == ann._WIDTH_AT_1M
    assert ann.search_width(10**9) == ann._WIDEST


def test_a_graph_past_the_width_rows_is_searched_wider_as_opened(
    tmp_path: Path, small_threshold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ann, "_WIDTH_ROWS", 100)  # a 300-row graph counts as a large one
    vectors = clustered(300, 32)
    file = VectorFile(tmp_path / "vectors.f32", 32)
    file.append(vectors)
    built(tmp_path, file, 300, np.zeros(300, dtype=bool))
    graph = ann.open_graph(tmp_path, file.path.name, 32)
    assert graph is not None
    assert graph._index.expansion_search == ann.search_width(300) > ann._NARROWEST
    top = GraphRanking(file.matrix(300), vectors[42], graph, None).top(1)
    assert top[0][0] == 42
