"""What a recall reads of a large index when its vector graph ranks it (gitmem.index.ann,
gitmem.index.semantic): the facts of the rows the graph proposes, asked of the catalog, not the
stored row facts whole (~70 MB at 1M rows), with the same answers as those; and the graph
mapped through usearch's compiled index, without its Python wrapper's imports (docs/benchmarks.md,
"Session 14: `gitmem recall` at a million, whole process")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import test_ann
from test_ann import _searchable, _Unlinked, built, clustered
from test_index import reopened

from gitmem.index import ann, semantic
from gitmem.index.catalog import VECTORS, Catalog
from gitmem.index.catchup import compact
from gitmem.index.entries import Filter
from gitmem.index.vectors import GraphRanking, VectorFile, query_row

pytest.importorskip("usearch")
tiny_model_dir = test_ann.tiny_model_dir  # the fixtures, shared
small_threshold = test_ann.small_threshold

QUERIES = ["retry webhook deliveries", "postgres session", "deploy queue latency", "cache"]


def _with_stored_facts(half: Any, query: str, n: int, flt: Filter, graph: Any) -> Any:
    """The semantic half's answer as it was ranked before: the stored row facts, read whole,
    hide the rows a recall leaves out and give each row's record."""
    rows = half._row_arrays()
    assert rows is not None  # the stored facts are current: the comparison means something
    hide = rows.dead if flt.include_superseded else rows.hidden
    q = query_row(half._model.encode_query(query))
    return half._best_records(GraphRanking(half._vector_matrix(), q, graph, hide), rows, n)


@pytest.mark.parametrize("include_superseded", [False, True])
def test_a_graph_ranked_recall_asks_for_its_rows_facts_and_answers_as_the_stored_facts(
    store_path: Path,
    tiny_model_dir: Path,
    small_threshold: None,
    monkeypatch: pytest.MonkeyPatch,
    include_superseded: bool,
) -> None:
    store = _searchable(store_path, tiny_model_dir, 30)
    ids = [r.id for r in store.records()]
    store.supersede(ids[0], "Retry with jitter now.", title="Retry webhooks with jitter")
    store.forget(ids[1], reason="wrong")
    store.recall("retry")  # caught up, graph rebuilt (small_threshold: LAZY_ROWS 0)
    flt = Filter(include_superseded=include_superseded)
    half = reopened(store.root, tiny_model_dir).index()._semantic_half()  # nothing read yet
    read_whole: list[int] = []
    whole = Catalog.row_facts

    def counted(catalog: Catalog) -> Any:
        read_whole.append(1)
        return whole(catalog)

    monkeypatch.setattr(Catalog, "row_facts", counted)
    asked = [half.search(q, 5, flt, without_numpy=True) for q in QUERIES]
    assert read_whole == []  # the graph ranked, from a few rows' facts
    graph = half._graph()
    assert graph is not None
    assert asked == [_with_stored_facts(half, q, 5, flt, graph) for q in QUERIES]
    assert read_whole == [1]  # ... and the comparison did read them
    again = [half.search(q, 5, flt, without_numpy=False) for q in QUERIES]
    assert again == asked  # a process that recalls again and again: the stored facts, read once
    assert read_whole == [1]
    assert any(asked)
    superseded = store.get(ids[0])
    assert superseded is not None and superseded.status == "superseded"
    found = {rid for answer in asked for rid, _ in answer}
    if not include_superseded:
        assert ids[0] not in found
    assert ids[1] not in found  # forgotten: never ranked


def test_a_graph_that_misses_rows_ranks_every_row_asking_only_about_the_best(
    store_path: Path,
    tiny_model_dir: Path,
    small_threshold: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A graph that cannot reach a row makes GraphRanking rank every row: asking the catalog
    about every row would then cost seconds at 1M rows, so it asks about the best, in score
    order, until enough are shown."""
    store = _searchable(store_path, tiny_model_dir, 30)
    ids = [r.id for r in store.records()]
    store.supersede(ids[0], "Retry with jitter now.", title="Retry webhooks with jitter")
    store.recall("retry")
    half = store.index()._semantic_half()
    graph = half._graph()
    assert graph is not None
    unlinked = _Unlinked(graph, 3)
    monkeypatch.setattr(half, "_graph", lambda: unlinked)
    asked_rows: list[int] = []
    owners = half._owners

    def counted(rows: list[int]) -> dict[int, str]:
        asked_rows.extend(rows)
        return owners(rows)

    monkeypatch.setattr(half, "_owners", counted)
    rows = int(half._vector_matrix().shape[0])
    for q in QUERIES:
        half._owner_cache.clear()
        asked_rows.clear()
        found = half.search(q, 5, Filter(), without_numpy=True)
        assert found == _with_stored_facts(half, q, 5, Filter(), unlinked)
        assert 0 < len(set(asked_rows)) < rows  # only the best rows were asked about


def test_a_graph_ranked_recall_loads_neither_usearchs_package_nor_numpy_ma(
    store_path: Path, tiny_model_dir: Path, small_threshold: None
) -> None:
    """The reader maps the graph through usearch's compiled module alone: usearch's package
    imports urllib.request (http.client, ssl, email), usearch.index tqdm (~60-190 ms of a
    process together), np.unique numpy.ma (~30 ms)."""
    store = _searchable(store_path, tiny_model_dir, 30)
    expected = store.index().semantic("retry webhook", 5, Filter())
    graph = next((store.cache_dir / "index").glob("ann-*.usearch"))
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from gitmem.index.entries import Filter\n"
        "from gitmem.index.index import Index\n"
        "from gitmem.index.model import ModelRef\n"
        "from gitmem.store.gitfiles import StoreTip\n"
        "model = ModelRef.from_folder('tiny', Path(sys.argv[2]))\n"
        "index = Index(StoreTip(Path(sys.argv[1])), model, catch_up=False,"
        " rank_without_numpy=True)\n"
        "index.ensure_current()\n"
        "found = index.semantic('retry webhook', 5, Filter())\n"
        "loaded = sorted(sys.modules)\n"
        "graphed = index._semantic._graph_open is not None\n"
        "from usearch.index import Index\n"  # the wrapper after the reader: the builder's
        "wrapped = Index.restore(sys.argv[3], view=True)\n"
        "print(json.dumps([found, loaded, len(wrapped), graphed]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(store.root), str(tiny_model_dir), str(graph)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    found, modules, rows, graphed = json.loads(done.stdout)
    assert [tuple(hit) for hit in found] == expected
    assert graphed  # the graph ranked
    heavy = ("usearch", "usearch.index", "tqdm", "urllib.request", "http.client", "numpy.ma")
    assert [m for m in modules if m in heavy] == []
    assert rows > 30  # usearch's own import still works after the reader's


def test_the_compiled_graph_finds_what_usearchs_index_finds(
    store_path: Path, tiny_model_dir: Path, small_threshold: None
) -> None:
    from usearch.index import Index

    store = _searchable(store_path, tiny_model_dir, 30)
    store.recall("retry")
    half = store.index()._semantic_half()
    graph = half._graph()
    path = next((store.cache_dir / "index").glob("ann-*.usearch"))
    wrapped: Any = Index.restore(str(path), view=True)  # expansion_search: settable, untyped
    assert graph is not None and wrapped is not None
    wrapped.expansion_search = 512
    matrix = half._vector_matrix()
    for row in range(0, int(matrix.shape[0]), 7):
        q = np.asarray(matrix[row], dtype=np.float32)
        want = wrapped.search(q, 10, threads=1, exact=False)
        assert graph.search(q, 10).tolist() == want.keys[: len(want)].tolist()


def _same_answer(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    """The same records, by the same scores but for the last bit: a product in BLAS (an
    index ranked without a graph) may round otherwise than GraphRanking's row by row."""
    assert [rid for rid, _ in got] == [rid for rid, _ in want]
    assert [score for _, score in got] == pytest.approx([score for _, score in want], abs=1e-5)


def _compacting(root: Path, dim: int) -> None:
    """Another process's compaction: the rows renumbered into a new vector file."""
    catalog = Catalog(root / "catalog.sqlite")
    try:
        name = catalog.meta("vectors") or VECTORS
        compact(root, catalog, VectorFile(root / name, dim))
    finally:
        catalog.close()


def _with_dead_rows(store_path: Path, tiny_model_dir: Path) -> Any:
    """A store whose vector file's first rows are 8 forgotten records': a compaction moves
    every other row."""
    store = _searchable(store_path, tiny_model_dir, 30)
    store.recall("retry")
    catalog = Catalog(store.cache_dir / "index" / "catalog.sqlite")
    try:
        first = list(dict.fromkeys(rid for _, rid in sorted(catalog.all_rows())))[:8]
    finally:
        catalog.close()
    for rid in first:
        store.forget(rid, reason="gone")
    store.recall("retry")
    return store


@pytest.mark.parametrize("flt", [Filter(), Filter(agent="a")])
def test_a_compaction_between_the_proposal_and_the_look_up_never_mixes_numberings(
    store_path: Path,
    tiny_model_dir: Path,
    small_threshold: None,
    monkeypatch: pytest.MonkeyPatch,
    flt: Filter,
) -> None:
    """The graph proposes rows of the file mapped; the catalog is asked whose they are after
    another process's compaction renumbered them: ranked again in the new file, never the old
    numbers read against the new ones (other records, with other records' scores). Filter():
    the graph's path (AskedRows); agent="a": the narrow filter's (_best_chunks)."""
    store = _with_dead_rows(store_path, tiny_model_dir)
    query = "retry webhook deliveries"
    expected = reopened(store.root, tiny_model_dir).index()._semantic_half()
    want = expected.search(query, 5, flt, without_numpy=True)
    assert want
    half = reopened(store.root, tiny_model_dir).index()._semantic_half()
    root, dim = store.cache_dir / "index", half._model.dim
    done: list[int] = []
    if flt.status_only:
        half._vector_matrix()
        first = half._graph()
        assert first is not None
        graph = half._graph

        class Racing:
            covered, size = first.covered, first.size

            def search(self, q: Any, k: int) -> Any:
                found = first.search(q, k)
                if not done:  # proposed from the old file; the look-up comes after
                    done.append(1)
                    _compacting(root, dim)
                return found

        monkeypatch.setattr(half, "_graph", lambda: graph() if done else Racing())
    else:
        chunks = half._best_chunks

        def racing(pairs: Any, n: int, flt: Filter) -> Any:
            if not done:
                done.append(1)
                _compacting(root, dim)
            return chunks(pairs, n, flt)

        monkeypatch.setattr(half, "_best_chunks", racing)
    got = half.search(query, 5, flt, without_numpy=True)
    assert done
    _same_answer(got, want)  # the new file may be ranked without a graph
    assert half._matrix_name != VECTORS  # ranked again, in the compacted file


def test_a_record_forgotten_while_its_rows_are_ranked_is_left_out(
    store_path: Path,
    tiny_model_dir: Path,
    small_threshold: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A graph that cannot reach a row ranks every row; the best record is forgotten (and
    the catalog caught up) by another process before its rows are asked about: it is left
    out, never a crash (the stored facts, read whole, once said otherwise than the catalog)."""
    store = _searchable(store_path, tiny_model_dir, 30)
    store.recall("retry")
    query = "retry webhook deliveries"
    top = reopened(store.root, tiny_model_dir).index()._semantic_half()
    best = top.search(query, 5, Filter(), without_numpy=True)[0][0]
    half = reopened(store.root, tiny_model_dir).index()._semantic_half()
    half._vector_matrix()
    graph = half._graph()
    assert graph is not None
    unlinked = _Unlinked(graph, 3)
    monkeypatch.setattr(half, "_graph", lambda: unlinked)
    # Before the fix, past _ASK_ALL rows the stored facts (read whole) hid rows and the catalog
    # named their records: 8 made every row count as many here (no such threshold now).
    monkeypatch.setattr(semantic, "_ASK_ALL", 8, raising=False)
    owners = half._owners
    done: list[int] = []

    def racing(rows: list[int]) -> dict[int, str]:
        if not done:
            done.append(1)
            other = reopened(store.root, tiny_model_dir)
            other.forget(best, reason="gone")
            other.recall("anything")  # catches the catalog up
        return owners(rows)

    monkeypatch.setattr(half, "_owners", racing)
    got = half.search(query, 5, Filter(), without_numpy=True)
    assert done
    assert len(got) == 5
    assert best not in {rid for rid, _ in got}


class _Counted:
    """A `hide` that asks: says which rows are hidden, counting the rows it was asked about."""

    def __init__(self, hidden: np.ndarray) -> None:
        self.hidden, self.asked = hidden, 0

    def __getitem__(self, rows: np.ndarray) -> list[bool]:
        self.asked += int(rows.size)
        return [bool(h) for h in self.hidden[rows]]


def test_rows_appended_since_the_graph_are_asked_about_only_as_far_as_the_answer_needs(
    tmp_path: Path, small_threshold: None
) -> None:
    """Thousands of rows appended since the graph was built (LAZY_ROWS, more while the
    builder runs): each asked of the catalog cost ~10 us, 0.17 s at 16k rows; asked about in
    score order, only the best are. The answer is the array's, hidden rows among the best."""
    vectors = clustered(4000, 32)
    file = VectorFile(tmp_path / "vectors.f32", 32)
    file.append(vectors)
    built(tmp_path, file, 40, np.zeros(40, dtype=bool))
    graph = ann.open_graph(tmp_path, file.path.name, 32)
    assert graph is not None and graph.covered == 40
    matrix = file.matrix(4000)
    hidden = np.zeros(4000, dtype=bool)
    hidden[::3] = True
    for row in (100, 2000, 3999):
        q = vectors[row]
        counted = _Counted(hidden)
        asked = GraphRanking(matrix, q, graph, counted).top(10)
        assert asked == GraphRanking(matrix, q, graph, hidden).top(10)
        assert asked[0][0] != row or not hidden[row]
        assert len(asked) >= 10
        assert counted.asked < 200  # of 4,000


@pytest.mark.parametrize("include_superseded", [False, True])
def test_a_graph_held_back_answers_as_the_stored_facts(
    store_path: Path,
    tiny_model_dir: Path,
    small_threshold: None,
    monkeypatch: pytest.MonkeyPatch,
    include_superseded: bool,
) -> None:
    """The graph left behind (LAZY_ROWS not reached): superseded and forgotten rows still in
    it, rows appended after it, one of them superseded. A process that recalls once (the
    catalog asked about the best rows) answers as one that reads the stored facts whole."""
    store = _searchable(store_path, tiny_model_dir, 30)
    store.recall("retry")  # the graph built
    monkeypatch.setattr(ann, "LAZY_ROWS", 10**6)  # from here the graph lags
    ids = [r.id for r in store.records()]
    store.supersede(ids[0], "Retry webhook deliveries with jitter now.", title="Retry jitter")
    store.forget(ids[1], reason="wrong")
    store.forget(ids[2], reason="wrong")
    for i in range(6):
        text = f"retry webhook deliveries postgres session extra {i}"
        store.record("fact", text, title=f"Tail {i} retry webhook", agent="a")
    new = [r.id for r in store.records() if r.id not in ids]
    store.supersede(new[0], "retry webhook superseded tail", title="Tail superseded")
    store.recall("retry")
    flt = Filter(include_superseded=include_superseded)
    once = reopened(store.root, tiny_model_dir).index()._semantic_half()
    again = reopened(store.root, tiny_model_dir).index()._semantic_half()
    for q in [*QUERIES, "tail retry"]:
        asked = once.search(q, 8, flt, without_numpy=True)
        assert asked == again.search(q, 8, flt, without_numpy=False)
        assert again._row_arrays() is not None  # ... from the stored facts
        graph = once._graph()
        assert graph is not None and graph.covered < once._vector_matrix().shape[0]
        assert ids[1] not in {rid for rid, _ in asked}
        assert (ids[0] in {rid for rid, _ in asked}) <= include_superseded


def test_a_graph_whose_compiled_calls_fail_ranks_exactly(
    store_path: Path,
    tiny_model_dir: Path,
    small_threshold: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """usearch's compiled internals (not its documented API) changed by a newer version: a
    search that raises, a module without what the reader calls, rank every row exactly."""
    store = _searchable(store_path, tiny_model_dir, 30)
    store.recall("retry")
    exact = reopened(store.root, tiny_model_dir).index()._semantic_half()
    monkeypatch.setattr(exact, "_graph", lambda: None)
    half = reopened(store.root, tiny_model_dir).index()._semantic_half()
    half._vector_matrix()
    graph = half._graph()
    assert graph is not None

    class Changed:
        def search_many(self, *args: Any, **kwargs: Any) -> Any:
            return [], []  # another shape of answer

    graph._index = Changed()
    for q in QUERIES:
        got = half.search(q, 5, Filter(), without_numpy=True)
        _same_answer(got, exact.search(q, 5, Filter(), without_numpy=True))

    class Bare:  # no ScalarKind, no index_dense_metadata_from_path
        pass

    monkeypatch.setattr(ann, "_compiled", lambda: Bare())
    root = store.cache_dir / "index"
    assert ann.open_graph(root, VECTORS, half._model.dim) is None
