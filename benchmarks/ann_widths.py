"""How wide the vector graph must search: one usearch graph of the first ROWS vectors, then
recall@10 against exact and p50 at several widths. It builds session 13's graph (float16,
16 links, 128 candidates a node), whose figures set the widths until session 14; the product's
build and widths since session 15 (int8, 24 links) were measured by benchmarks/ann_config.py.
Run in a venv with usearch (benchmarks/ann_choice.py says how the vectors are made).

    python benchmarks/ann_widths.py ROWS VECTORS.npy QUERIES.npy
"""

from __future__ import annotations

import sys
import time

import numpy as np
from usearch.index import Index


def main() -> None:
    rows, vectors_path, queries_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    vectors = np.load(vectors_path)[:rows]
    queries = np.load(queries_path)[:200]
    truth = np.argsort(-(queries @ vectors.T), axis=1)[:, :10]
    graph = Index(
        ndim=vectors.shape[1], metric="ip", dtype="f16", connectivity=16, expansion_add=128
    )
    began = time.perf_counter()
    graph.add(np.arange(rows, dtype=np.uint64), vectors, threads=2)
    print(f"{rows} rows: build {time.perf_counter() - began:.1f} s", flush=True)
    for width in (128, 256, 512, 1024):
        graph.expansion_search = width
        times, hits = [], 0
        for q, best in zip(queries, truth, strict=True):
            began = time.perf_counter()
            keys = graph.search(q, 10, threads=1).keys
            times.append(time.perf_counter() - began)
            hits += len(set(keys.tolist()) & set(best.tolist()))
        print(
            f"width {width}: recall@10 {hits / (10 * len(queries)):.3f}, "
            f"p50 {np.median(times) * 1000:.2f} ms",
            flush=True,
        )


if __name__ == "__main__":
    main()
