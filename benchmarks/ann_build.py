"""What the vector graph costs to build, and what each cheaper build loses (issue 24).

    nice python benchmarks/ann_build.py --vectors V.npy --queries Q.npy [--rows N]
        [--only NAME,...] [--json OUT]

One usearch HNSW graph a configuration, built from scratch over the first N rows the way
gitmem.index.ann builds one (inner product on unit vectors, keys = row numbers), then searched
at the widths given: recall@10 against exact (numpy), query p50 on one thread, and recall@10
as gitmem answers: the graph asked for `ASK` rows, their cosines computed exactly, the best 10
kept (gitmem.index.vectors.GraphRanking), so the graph's own order does not count. Each line
reports the build's wall time and its CPU time (this process's, all threads): on a shared
host the CPU time is the figure to compare, the wall time what a user would wait.
A configuration is `dtype-M<connectivity>-ef<expansion_add>-t<threads>`, e.g. f16-M16-ef64-t2.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import numpy as np

K = 10
ASK = K + 64  # GraphRanking.top's first ask for k = 10
DEFAULT = "f16-M16-ef128-t2,f16-M16-ef64-t2,f16-M16-ef40-t2,f16-M12-ef64-t2,i8-M16-ef64-t2"


def parse(name: str) -> tuple[str, int, int, int]:
    dtype, m, ef, threads = name.split("-")
    return dtype, int(m[1:]), int(ef[2:]), int(threads[1:])


def measure(name: str, vectors: Any, queries: Any, truth: Any, widths: list[int]) -> dict[str, Any]:
    from usearch.index import Index

    dtype, connectivity, expansion, threads = parse(name)
    index = Index(
        ndim=vectors.shape[1],
        # i8 quantizes each component to 1/127: unit vectors of 256 dims (components ~0.06)
        # keep only a few levels under "ip", so i8 is measured with "cos" (the same order).
        metric="cos" if dtype == "i8" else "ip",
        dtype=dtype,
        connectivity=connectivity,
        expansion_add=expansion,
    )
    keys = np.arange(vectors.shape[0], dtype=np.uint64)
    cpu, wall = time.process_time(), time.perf_counter()
    index.add(keys, vectors, threads=threads)
    out: dict[str, Any] = {
        "name": name,
        "rows": int(vectors.shape[0]),
        "build_wall_s": round(time.perf_counter() - wall, 1),
        "build_cpu_s": round(time.process_time() - cpu, 1),
        "load": os.getloadavg()[0],
    }
    for width in widths:
        index.expansion_search = width
        hits, rescored, times = 0, 0, []
        for q, want in zip(queries, truth, strict=True):
            began = time.perf_counter()
            found = index.search(q, K, threads=1).keys
            times.append(time.perf_counter() - began)
            hits += len(set(found.tolist()) & set(want.tolist()))
            asked = index.search(q, ASK, threads=1).keys.astype(np.int64)
            best = asked[np.argsort(-(vectors[asked] @ q))[:K]]
            rescored += len(set(best.tolist()) & set(want.tolist()))
        out[f"recall@{width}"] = round(hits / (K * len(queries)), 4)
        out[f"rescored@{width}"] = round(rescored / (K * len(queries)), 4)
        out[f"p50_ms@{width}"] = round(float(np.median(times)) * 1000, 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--nq", type=int, default=200, help="Queries to search with.")
    parser.add_argument("--widths", default="256,512", help="expansion_search values.")
    parser.add_argument("--only", default=DEFAULT, help="Comma-separated configurations.")
    parser.add_argument("--json", help="Append one JSON line a configuration to this file.")
    args = parser.parse_args()
    vectors = np.ascontiguousarray(np.load(args.vectors)[: args.rows], dtype=np.float32)
    queries = np.load(args.queries)[: args.nq].astype(np.float32)
    truth = np.argsort(-(queries @ vectors.T), axis=1)[:, :K]
    widths = [int(w) for w in args.widths.split(",")]
    for name in args.only.split(","):
        emit(measure(name, vectors, queries, truth, widths), args.json)


def emit(result: dict[str, Any], path: str | None) -> None:
    """Print `result` as one JSON line, and append it to the file at `path` if given."""
    print(json.dumps(result), flush=True)
    if path:
        with open(path, "a") as out:
            out.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
