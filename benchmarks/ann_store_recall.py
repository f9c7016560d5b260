"""recall@10 of a store's own vector graph against exact search (issue 24), on the index the
product built and the store's own model: what ann_choice.py and ann_widths.py measured on
vectors made apart, here at the store's size (a million rows) without building anything.

    .venv/bin/python benchmarks/ann_store_recall.py STORE [--queries 200] [--json OUT]

The graph is opened as a recall opens it (gitmem.index.ann.open_graph: memory-mapped, as wide
a search as a recall's) beside the vector file the catalog names; the queries are the ones
the in-process recall figure asks (bench_recall.queries(200)), encoded by the store's model.
For each query, the exact 10 best rows (one product of all the queries with each block of
rows, float32) against:

- the graph alone: its 10 best keys (its distances in the graph's storage: float16
  until session 14, int8 since);
- the product's semantic ranking, gitmem.index.vectors.GraphRanking: the graph's candidates
  (and any row appended since it was saved) scored exactly from the vector file, its top 10.

Dead rows are not hidden on either side: run it on a store where no record was superseded or
forgotten (the benchmark's), or the figures count rows a recall would hide. It also times
one query's exact product over every row (what the graph saves) and the graph's search.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, median, write_json
from bench_recall import queries

from gitmem.api import Store
from gitmem.index.ann import open_graph
from gitmem.index.vectors import GraphRanking, VectorFile, query_row

K = 10
_BLOCK = 65_536


def exact_top(matrix: Any, q: Any, rows: int) -> Any:
    """The K best of the first `rows` rows for each query row of `q`: (queries, K) row numbers."""
    best_rows = np.zeros((q.shape[0], 0), dtype=np.int64)
    best_scores = np.zeros((q.shape[0], 0), dtype=np.float32)
    for start in range(0, rows, _BLOCK):
        block = np.asarray(matrix[start : min(start + _BLOCK, rows)])
        span = np.broadcast_to(np.arange(start, start + block.shape[0]), (q.shape[0], len(block)))
        ids = np.concatenate([best_rows, span], axis=1)
        scores = np.concatenate([best_scores, q @ block.T], axis=1)
        keep = np.argpartition(-scores, K - 1, axis=1)[:, :K]
        best_scores = np.take_along_axis(scores, keep, axis=1)
        best_rows = np.take_along_axis(ids, keep, axis=1)
    return best_rows


def recall(found: list[list[int]], truth: Any) -> float:
    hits = sum(len(set(f) & set(t.tolist())) for f, t in zip(found, truth, strict=True))
    return hits / (K * len(found))


def opened(root: Path) -> tuple[Any, Any, Any]:
    """The store's model, its vector matrix (every row, mapped) and its graph."""
    store = Store.open(root)
    store.index()  # caught up, as a recall would find it
    model = store.model()
    if model is None:
        raise SystemExit(f"{root}: no embedding model ({store.model_problem})")
    for path in sorted((root / ".gitmem").rglob("*.f32")):
        graph = open_graph(path.parent, path.name, model.dim)
        if graph is not None:
            vectors = VectorFile(path, model.dim)
            return model, vectors.matrix(vectors.rows()), graph
    raise SystemExit(f"{root}: no vector graph in its index (fewer than 200k rows, or no usearch)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--exact-timed", type=int, default=20, help="Queries timed exactly.")
    parser.add_argument("--json")
    args = parser.parse_args()
    model, matrix, graph = opened(Path(args.store))
    asked = queries(args.queries)
    q = np.stack([query_row(model.encode_query(text)) for text in asked])
    rows, covered = matrix.shape[0], graph.covered
    began = time.perf_counter()
    truth_covered = exact_top(matrix, q, covered)
    truth_all = truth_covered if covered == rows else exact_top(matrix, q, rows)
    batch_s = time.perf_counter() - began
    alone, ranked, graph_ms, ranked_ms = [], [], [], []
    for vector in q:
        began = time.perf_counter()
        alone.append(graph.search(vector, K).astype(np.int64).tolist())
        graph_ms.append((time.perf_counter() - began) * 1000)
        began = time.perf_counter()
        ranked.append([row for row, _ in GraphRanking(matrix, vector, graph, None).top(K)][:K])
        ranked_ms.append((time.perf_counter() - began) * 1000)
    exact_ms = []
    for vector in q[: args.exact_timed]:
        began = time.perf_counter()
        np.argpartition(-(matrix @ vector), K)[:K]
        exact_ms.append((time.perf_counter() - began) * 1000)
    results = {
        "machine": machine(),
        "rows": rows,
        "graph_covers": covered,
        "queries": len(asked),
        "recall_at_10_graph": recall(alone, truth_covered),
        "recall_at_10_graph_ranking": recall(ranked, truth_all),
        "graph_search_p50_ms": median(graph_ms),
        "graph_ranking_p50_ms": median(ranked_ms),
        "exact_one_query_p50_ms": median(exact_ms),
        "exact_all_queries_batched_s": batch_s,
        "load_average": os.getloadavg()[0],
    }
    print(
        f"{rows} rows ({covered} in the graph), {len(asked)} queries: recall@10 against exact, "
        f"graph alone {results['recall_at_10_graph']:.3f}, the product's ranking "
        f"{results['recall_at_10_graph_ranking']:.3f}; p50 graph {median(graph_ms):.2f} ms, "
        f"ranking {median(ranked_ms):.2f} ms, one exact product {median(exact_ms):.0f} ms "
        f"(load {results['load_average']:.1f})",
        flush=True,
    )
    write_json(args.json, results)


if __name__ == "__main__":
    main()
