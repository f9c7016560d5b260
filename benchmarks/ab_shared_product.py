"""What sharing the semantic half's product with the keyword half's thread is worth, measured
in one process: the same warm Store answers the benchmark's queries with the sharing on and off,
alternating query by query, so the machine's load falls on both arms alike. No query is asked
twice (a repeated one would find its catalog entries cached).

    .venv/bin/python benchmarks/ab_shared_product.py STORE [--queries 600] \
        [--json benchmarks/results/shared_product.json]

STORE is a store with a current index and a model (e.g. one bench_recall.py made). Off means
`gitmem.index.vectors.help_products` does nothing: the recall's own thread computes every block.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, write_json
from bench_recall import queries

from gitmem.api import Store
from gitmem.index import vectors


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[int(len(ordered) * share)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("store")
    parser.add_argument("--queries", type=int, default=600)
    parser.add_argument("--json")
    args = parser.parse_args()
    store = Store.open(Path(args.store))
    store.recall("warm up the index and the model")
    shared = vectors.help_products
    times: dict[str, list[float]] = {"shared": [], "alone": []}
    texts = list(dict.fromkeys(queries(args.queries * 2)))[: args.queries]
    try:
        for i, text in enumerate(texts):
            arm = "shared" if i % 2 == 0 else "alone"
            vectors.help_products = shared if arm == "shared" else (lambda owner: None)
            start = time.perf_counter()
            store.recall(text, limit=10)
            times[arm].append((time.perf_counter() - start) * 1000)
    finally:
        vectors.help_products = shared
    result = {
        "machine": machine(),
        "load_average": os.getloadavg()[0],
        "recalls_per_arm": len(times["shared"]),
        **{
            arm: {"p50_ms": statistics.median(v), "p95_ms": percentile(v, 0.95)}
            for arm, v in times.items()
        },
    }
    result["p50_ratio"] = result["shared"]["p50_ms"] / result["alone"]["p50_ms"]  # type: ignore[index]
    for arm in ("shared", "alone"):
        r = result[arm]
        print(f"{arm:7s} p50 {r['p50_ms']:.2f} ms  p95 {r['p95_ms']:.2f} ms")  # type: ignore[index]
    print(f"p50 shared/alone {result['p50_ratio']:.2f} (load {result['load_average']:.2f})")
    write_json(args.json, result)


if __name__ == "__main__":
    main()
