"""The vector graph built outside the index lock (gitmem.index.annbuild): a write that needs a
new graph starts a detached builder and returns, readers rank exactly until it is in place,
the builder puts it in place under the index lock, and `gitmem rebuild` says so (or waits
with --wait-graph). The threshold is lowered so that a few dozen records count as large."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
import test_ann
from conftest import Result
from test_ann import _answers, _searchable, built, clustered
from test_quickrecall import use_model

from gitmem.api import Store
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
    spawns: list[Sequence[str]] = []
    spawn = annbuild.start_detached

    def counted(args: Sequence[str], env: Mapping[str, str], output: str) -> bool:
        spawns.append(args)
        return spawn(args, env, output)

    monkeypatch.setattr(annbuild, "start_detached", counted)
    log = store.cache_dir / "hooks.log"  # the hooks keep one: the builder writes to it
    log.write_text("")
    with cache_lock(store.cache_dir / "index.lock", 10, "the search index"):
        assert annbuild.start(root, dim)
        # It builds while the index is locked (a catch-up, a rebuild) ...
        _wait(lambda: any(root.glob("ann-*.tmp-*")), "the builder's temporary graph")
        assert annbuild.running(root)
        assert annbuild.start(root, dim) and len(spawns) == 1  # one at work: no second
        assert annbuild.failure(root) is not None  # its attempt, noted till it ends ...
        assert annbuild.reported_failure(root) is None  # ... is not shown as a failure
        assert not list(root.glob("ann-*.json"))  # ... and puts nothing in place meanwhile
        assert _answers(store) == exact  # readers rank exactly, without the lock
    _wait(lambda: not annbuild.running(root), "the builder to finish")
    assert "Z vector graph builder: built the vector graph of" in log.read_text()
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

    def dead(rows: int) -> int:  # 90 live rows renumbered into a new file: 0.8-1 x 100
        return 0

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
    with monkeypatch.context() as patch:  # --wait-graph, and the graph cannot be built
        patch.setattr(ann, "prepare", _fail_prepare)
        result = gm("rebuild", "--wait-graph", "--json")
    assert result.code == 1
    stats = json.loads(result.out)
    assert stats["graph"] == "failed" and "out of memory" in stats["graph_failure"]["message"]
    assert "the vector graph could not be built" in result.err
    assert len(started) == 2  # tried in this process
    result = gm("rebuild", "--wait-graph")
    assert result.code == 0 and "could not be built" not in result.err
    monkeypatch.setattr(ann, "THRESHOLD", 10**9)
    result = gm("rebuild", "--wait-graph")
    assert "vector graph" not in result.out
    assert json.loads(gm("rebuild", "--json").out)["graph"] == "none"


def _large(store_path: Path, model: Path) -> tuple[Store, Path, int]:
    """A store past the (lowered) threshold, its index built: the store, the index, its dim."""
    store = _searchable(store_path, model, 30)
    _answers(store)
    return store, store.cache_dir / "index", store.model().dim  # type: ignore[union-attr]


Large = tuple[Store, Path, int]


@pytest.fixture
def large(store_path: Path, tiny_model_dir: Path, spawned: list[list[str]]) -> Large:
    """_large, with each builder it starts noted (`spawned`)."""
    return _large(store_path, tiny_model_dir)


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The real annbuild.start, each detached builder it spawns noted instead (one that dies)."""
    monkeypatch.setattr(ann, "THRESHOLD", 10)
    monkeypatch.delenv("GITMEM_BACKGROUND_INDEX")  # conftest turns background work off
    calls: list[list[str]] = []

    def note(args: list[str], env: object, output: str = "") -> bool:
        calls.append(list(args))
        return True

    monkeypatch.setattr(annbuild, "start_detached", note)
    return calls


def test_a_request_made_while_a_builder_works_on_a_stale_snapshot_is_built(
    store_path: Path, tiny_model_dir: Path, spawned: list[list[str]]
) -> None:
    store, root, dim = _large(store_path, tiny_model_dir)
    assert len(spawned) == 1
    rebuilds: list[int] = []
    real_prepare = ann.prepare

    def rebuilt_meanwhile(*args: object, **kwargs: object) -> object:
        if not rebuilds:  # the first round's snapshot goes stale under it
            rebuilds.append(1)
            assert store.rebuild()["graph"] == "building"  # asks: a builder is at work
        return real_prepare(*args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ann, "prepare", rebuilt_meanwhile)
        said = annbuild.build(root, dim, wait=False)  # the detached builder's work
    assert rebuilds and len(spawned) == 1  # the rebuild's request went to the builder ...
    assert "built the vector graph" in said, said  # ... which built again for it
    stamp = json.loads(next(root.glob("ann-*.json")).read_text())
    assert stamp["covered"] == store.index()._catalog.next_row()  # type: ignore[union-attr]
    assert store.check_index() == []
    assert not annbuild.running(root) and annbuild.failure(root) is None


def test_a_stale_build_stops_between_batches_of_rows(
    store_path: Path, tiny_model_dir: Path, started: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, root, dim = _large(store_path, tiny_model_dir)
    monkeypatch.setattr(ann, "_ADD_BATCH", 4)
    real_add = ann._new(4).__class__.add
    added: list[int] = []

    def add(index: object, keys: object, *args: object, **kwargs: object) -> object:
        added.append(1)
        if len(added) == 2:
            store.rebuild()  # a rebuild while the builder adds rows
        return real_add(index, keys, *args, **kwargs)

    monkeypatch.setattr(ann._new(4).__class__, "add", add)
    said = annbuild.build(root, dim, wait=True)
    assert "rebuilt or compacted meanwhile" in said
    assert len(added) == 2  # not one batch more
    assert not list(root.glob("ann-*"))


def test_a_long_lived_reader_uses_a_graph_installed_after_it_saw_the_commit(
    store_path: Path, tiny_model_dir: Path, started: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, root, dim = _large(store_path, tiny_model_dir)
    exact = _answers(store)  # looked for the graph: none yet (the builder is only noted)
    assert not list(root.glob("ann-*"))
    said = annbuild.build(root, dim, wait=True)
    assert "built the vector graph" in said
    used: list[object] = []
    from gitmem.index import vectors

    class Counting(vectors.GraphRanking):
        def __init__(self, *args: object) -> None:
            used.append(args)
            super().__init__(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(vectors, "GraphRanking", Counting)
    assert _answers(store) == exact  # the same process, the same commit ...
    assert len(used) == len(exact)  # ... and every query through the graph


def _fail_prepare(*args: object, **kwargs: object) -> None:
    raise RuntimeError("usearch ran out of memory")


def test_a_failing_builder_backs_off_and_says_why(
    large: Large, spawned: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, root, dim = large
    assert len(spawned) == 1
    with monkeypatch.context() as patch:
        patch.setattr(ann, "prepare", _fail_prepare)
        said = annbuild.build(root, dim, wait=True)  # the builder that was started: fails
    assert "could not be built (usearch ran out of memory)" in said
    failed = annbuild.failure(root)
    assert failed is not None and failed.count == 1 and "out of memory" in failed.message
    for i in range(5):
        store.record("fact", f"Queues drain before deploys {i}.", title=f"Drain {i}")
        _answers(store)
    assert len(spawned) == 1  # backing off: a minute after one failure
    stats = store.rebuild()  # gitmem rebuild --json
    assert stats["graph"] == "failed" and "out of memory" in stats["graph_failure"]["message"]
    assert any("builder failed 1 time(s)" in p for p in store.check_index())  # gitmem doctor
    (root.parent / annbuild.FAILURE).write_text(
        json.dumps({"time": time.time() - 61, "count": 1, "message": failed.message})
    )
    store.record("fact", "Webhooks are signed with HMAC.", title="Webhook signatures")
    _answers(store)
    assert len(spawned) == 2  # the minute is over: started again
    with monkeypatch.context() as patch:  # ... and it fails again: two minutes now
        patch.setattr(ann, "prepare", _fail_prepare)
        annbuild.build(root, dim, wait=True)
    again = annbuild.failure(root)
    assert again is not None and again.count == 2
    assert again.retry_at() - again.time == pytest.approx(120)
    assert "built the vector graph" in annbuild.build(root, dim, wait=True)
    assert annbuild.failure(root) is None and store.rebuild()["graph_failure"] is None


def test_a_builder_that_dies_counts_as_failed(
    large: Large, spawned: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, root, dim = large

    class Killed(BaseException):
        """Stands for SIGKILL, or a crash inside usearch."""

    def dies(*args: object, **kwargs: object) -> None:
        raise Killed

    monkeypatch.setattr(ann, "prepare", dies)
    with pytest.raises(Killed):
        annbuild.build(root, dim, wait=True)
    failed = annbuild.failure(root)
    assert failed is not None and "stopped before it finished" in failed.message
    store.record("fact", "Queues drain before deploys.", title="Drain queues")
    _answers(store)
    assert len(spawned) == 1  # not started again at once


def test_the_builder_runs_isolated_from_the_current_directory(
    store_path: Path, tiny_model_dir: Path, spawned: list[list[str]]
) -> None:
    _answers(_searchable(store_path, tiny_model_dir, 30))
    assert len(spawned) == 1
    assert spawned[0][1:4] == ["-P", "-m", "gitmem.index.annbuild"]  # as gitmem.index.build


def test_the_builders_output_goes_to_the_hook_log_when_there_is_one(
    store_path: Path,
    tiny_model_dir: Path,
    spawned: list[list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gitmem.hooks.events import LOG_NAME

    outputs: list[str] = []

    def note(args: list[str], env: object, output: str) -> bool:
        outputs.append(output)
        return True

    monkeypatch.setattr(annbuild, "start_detached", note)
    store = _searchable(store_path, tiny_model_dir, 30)
    _answers(store)
    assert outputs == [os.devnull]
    assert spawned == []  # the fixture's note was replaced by this one
    (store.cache_dir / LOG_NAME).write_text("")
    store.rebuild()
    assert outputs == [os.devnull, str(store.cache_dir / LOG_NAME)]


def _never(*args: object) -> bool:
    raise AssertionError("a builder was started")


def test_background_work_off_builds_the_graph_in_the_writing_process(
    store_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ann, "THRESHOLD", 10)
    monkeypatch.setattr(annbuild, "start_detached", _never)
    store, root, _ = _large(store_path, tiny_model_dir)  # GITMEM_BACKGROUND_INDEX=off here
    stamp = json.loads(next(root.glob("ann-*.json")).read_text())
    assert stamp["covered"] == store.index()._catalog.next_row()  # type: ignore[union-attr]
    assert not annbuild.running(root) and store.check_index() == []


def test_a_writer_without_usearch_reads_no_row_facts_and_leaves_the_graph(
    store_path: Path, tiny_model_dir: Path, started: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, root, dim = _large(store_path, tiny_model_dir)
    annbuild.build(root, dim, wait=True)
    graphs = sorted(root.glob("ann-*"))
    catalog = store.index()._catalog
    assert catalog is not None and graphs
    monkeypatch.setattr(ann, "available", lambda: False)  # an install without the extra

    def unread() -> None:
        raise AssertionError("row facts read")

    monkeypatch.setattr(catalog, "row_facts", unread)
    vectors = VectorFile(root / str(catalog.meta("vectors") or "vectors.f32"), dim)
    assert annbuild.plan(root, vectors, catalog) == ann.Outcome()
    assert sorted(root.glob("ann-*")) == graphs
