"""Approximate nearest neighbours for the semantic half at a million rows: the candidates
measured side by side against exact search (issue 24). Run in a venv that has the candidates
(`pip install usearch faiss-cpu`); hnswlib and annoy ship no wheels (sdists that need a C++
compiler at install time), so they are not candidates for a dependency users install.

    python benchmarks/ann_choice.py --vectors V.npy --queries Q.npy [--json OUT]
    python benchmarks/ann_choice.py --store STORE ...   # a store's own vector file

For each candidate: build time, recall@10 against exact (numpy, one thread), query p50 on one
thread, the index's bytes, and the time to add 100 rows and to remove 100.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

K = 10


def exact(vectors: Any, queries: Any) -> Any:
    scores = queries @ vectors.T
    return np.argsort(-scores, axis=1)[:, :K]


def recall_at_k(found: list[list[int]], truth: Any) -> float:
    hits = sum(len(set(f[:K]) & set(t.tolist())) for f, t in zip(found, truth, strict=True))
    return hits / (K * len(found))


def timed_queries(
    search: Callable[[Any], list[int]], queries: Any
) -> tuple[list[list[int]], float]:
    found, times = [], []
    for q in queries:
        began = time.perf_counter()
        found.append(search(q))
        times.append(time.perf_counter() - began)
    return found, float(np.median(times) * 1000)


def usearch_candidate(vectors: Any, dtype: str, connectivity: int, expansion: int) -> Any:
    from usearch.index import Index

    index = Index(
        ndim=vectors.shape[1],
        metric="cos",
        dtype=dtype,
        connectivity=connectivity,
        expansion_add=128,
        expansion_search=expansion,
    )
    keys = np.arange(vectors.shape[0], dtype=np.uint64)
    began = time.perf_counter()
    index.add(keys, vectors, threads=2)
    build = time.perf_counter() - began

    def search(q: Any) -> list[int]:
        return index.search(q, K, threads=1).keys.tolist()  # type: ignore[no-any-return]

    def add(rows: Any, first: int) -> None:
        index.add(np.arange(first, first + rows.shape[0], dtype=np.uint64), rows)

    def remove(keys: list[int]) -> None:
        index.remove(keys)

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "i.usearch"
        index.save(str(path))
        size = path.stat().st_size
        began = time.perf_counter()
        Index.restore(str(path), view=True)
        view_ms = (time.perf_counter() - began) * 1000
    return build, search, add, remove, size, {"open_view_ms": view_ms}


def faiss_ivf(vectors: Any, nlist: int, nprobe: int) -> Any:
    import faiss

    faiss.omp_set_num_threads(2)
    quantizer = faiss.IndexFlatIP(vectors.shape[1])
    index = faiss.IndexIVFFlat(quantizer, vectors.shape[1], nlist, faiss.METRIC_INNER_PRODUCT)
    began = time.perf_counter()
    sample = vectors[:: max(1, vectors.shape[0] // (nlist * 39))]
    index.train(sample)
    index.add_with_ids(vectors, np.arange(vectors.shape[0], dtype=np.int64))
    build = time.perf_counter() - began
    index.nprobe = nprobe
    faiss.omp_set_num_threads(1)

    def search(q: Any) -> list[int]:
        return index.search(q.reshape(1, -1), K)[1][0].tolist()  # type: ignore[no-any-return]

    def add(rows: Any, first: int) -> None:
        index.add_with_ids(rows, np.arange(first, first + rows.shape[0], dtype=np.int64))

    def remove(keys: list[int]) -> None:
        index.remove_ids(np.asarray(keys, dtype=np.int64))

    size = faiss.serialize_index(index).nbytes
    return build, search, add, remove, size, {}


def faiss_hnsw(vectors: Any, m: int, ef: int) -> Any:
    import faiss

    faiss.omp_set_num_threads(2)
    index = faiss.IndexHNSWFlat(vectors.shape[1], m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 128
    began = time.perf_counter()
    index.add(vectors)
    build = time.perf_counter() - began
    index.hnsw.efSearch = ef
    faiss.omp_set_num_threads(1)

    def search(q: Any) -> list[int]:
        return index.search(q.reshape(1, -1), K)[1][0].tolist()  # type: ignore[no-any-return]

    def add(rows: Any, first: int) -> None:
        index.add(rows)

    def remove(keys: list[int]) -> None:
        raise NotImplementedError("faiss's HNSW cannot remove")

    size = faiss.serialize_index(index).nbytes
    return build, search, add, remove, size, {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors")
    parser.add_argument("--queries", required=True)
    parser.add_argument("--store", help="Read the vectors of this store's index instead.")
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--only", default="", help="Comma-separated candidate names.")
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.store:
        files = sorted((Path(args.store) / ".gitmem").rglob("vectors*.f32"))
        vectors = np.fromfile(files[-1], dtype=np.float32).reshape(-1, args.dim)
    else:
        vectors = np.load(args.vectors)
    queries = np.load(args.queries)[:200]
    vectors = np.ascontiguousarray(vectors[:-100])
    extra = np.ascontiguousarray(np.load(args.vectors)[-100:] if args.vectors else vectors[:100])
    truth = exact(vectors, queries)
    began = time.perf_counter()
    for q in queries[:50]:
        np.argpartition(-(vectors @ q), K)[:K]
    exact_ms = (time.perf_counter() - began) / 50 * 1000
    print(
        f"{vectors.shape[0]} rows x {vectors.shape[1]}; exact p50 ~{exact_ms:.1f} ms "
        f"(load {os.getloadavg()[0]:.1f})",
        flush=True,
    )
    candidates: dict[str, Callable[[], Any]] = {
        "usearch-f16-M16-ef64": lambda: usearch_candidate(vectors, "f16", 16, 64),
        "usearch-f16-M16-ef128": lambda: usearch_candidate(vectors, "f16", 16, 128),
        "usearch-i8-M16-ef128": lambda: usearch_candidate(vectors, "i8", 16, 128),
        "faiss-ivf-flat-nprobe32": lambda: faiss_ivf(vectors, int(4 * vectors.shape[0] ** 0.5), 32),
        "faiss-hnsw-flat-M16-ef128": lambda: faiss_hnsw(vectors, 16, 128),
    }
    only = set(filter(None, args.only.split(",")))
    report: dict[str, Any] = {"rows": vectors.shape[0], "exact_ms": exact_ms, "candidates": {}}
    for name, make in candidates.items():
        if only and name not in only:
            continue
        build, search, add, remove, size, more = make()
        found, p50 = timed_queries(search, queries)
        began = time.perf_counter()
        add(extra, vectors.shape[0])
        add_ms = (time.perf_counter() - began) * 1000
        try:
            began = time.perf_counter()
            remove(list(range(100)))
            remove_ms: float | None = (time.perf_counter() - began) * 1000
        except NotImplementedError:
            remove_ms = None
        row = {
            "build_s": build,
            "recall_at_10": recall_at_k(found, truth),
            "p50_ms": p50,
            "bytes": size,
            "add_100_ms": add_ms,
            "remove_100_ms": remove_ms,
            **more,
        }
        report["candidates"][name] = row
        print(
            f"{name}: build {build:.1f} s, recall@10 {row['recall_at_10']:.3f}, "
            f"p50 {p50:.2f} ms, {size / 1e6:.0f} MB, add 100 {add_ms:.1f} ms, remove 100 "
            f"{remove_ms if remove_ms is None else round(remove_ms, 1)} ms {more}",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
