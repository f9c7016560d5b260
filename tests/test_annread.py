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
from test_ann import _searchable, _Unlinked
from test_index import reopened

from gitmem.index import semantic
from gitmem.index.catalog import Catalog
from gitmem.index.entries import Filter
from gitmem.index.vectors import GraphRanking, query_row

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
    store.forget(ids[1], reason="wrong")  # a dead row, still in the graph until it is built
    store.recall("retry")  # caught up, graph built
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


def test_a_graph_that_misses_rows_ranks_every_row_with_the_stored_facts(
    store_path: Path,
    tiny_model_dir: Path,
    small_threshold: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A graph that cannot reach a row makes GraphRanking rank every row: asking the catalog
    row by row would then cost seconds at 1M rows, so the stored facts say which to hide."""
    store = _searchable(store_path, tiny_model_dir, 30)
    ids = [r.id for r in store.records()]
    store.supersede(ids[0], "Retry with jitter now.", title="Retry webhooks with jitter")
    store.recall("retry")
    half = store.index()._semantic_half()
    graph = half._graph()
    assert graph is not None
    unlinked = _Unlinked(graph, 3)
    monkeypatch.setattr(half, "_graph", lambda: unlinked)
    monkeypatch.setattr(semantic, "_ASK_ALL", 8)  # every row counts as many here
    asked_rows: list[int] = []
    owners = half._owners

    def counted(rows: list[int]) -> dict[int, str]:
        asked_rows.extend(rows)
        return owners(rows)

    monkeypatch.setattr(half, "_owners", counted)
    for q in QUERIES:
        found = half.search(q, 5, Filter(), without_numpy=True)
        assert found == _with_stored_facts(half, q, 5, Filter(), unlinked)
    rows = int(half._vector_matrix().shape[0])
    assert 0 < len(set(asked_rows)) < rows  # only the answers' rows were asked about


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
        "from usearch.index import Index\n"  # the wrapper after the reader: the builder's
        "wrapped = Index.restore(sys.argv[3], view=True)\n"
        "print(json.dumps([found, loaded, len(wrapped)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(store.root), str(tiny_model_dir), str(graph)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    found, modules, rows = json.loads(done.stdout)
    assert [tuple(hit) for hit in found] == expected
    assert "usearch.compiled" in modules  # the graph ranked
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
