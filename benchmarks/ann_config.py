"""Which vector graph configuration (gitmem/index/ann.py's build and search parameters) meets
recall@10 >= 0.98 against exact at the lowest search time (issue 24, session 14), on a store's
REAL vectors, read-only: the first ROWS rows of its vector file (`.gitmem/index/vectors.f32`,
float32 rows of the store's embeddings), the graphs built in a scratch directory.

    nice -n 5 .venv/bin/python benchmarks/ann_config.py --vectors STORE/.gitmem/index/vectors.f32 \
        --rows 300000 --configs f16-M16-ef64,i8-M16-ef64 --widths 512,1024,2048 --asks 74,200 \
        --out /tmp/graph-s14 [--reuse] [--queries 200] [--json OUT]

A configuration is `DTYPE-MLINKS-EFCANDIDATES` (e.g. `i8-M24-ef128`): the graph's storage
(f16, i8, bf16, f32), its links a node (usearch's connectivity) and its candidates a node at
insertion (expansion_add), built on `--threads` threads as the product's builder does. Each
graph is saved as `OUT/CONFIG-ROWS.usearch` (`--reuse` maps one saved before instead of
building it again; its build figures are then absent).

The queries are the in-process recall figure's (bench_recall.queries, seed 5), encoded by the
built-in model the store names (builtin:minilm-256): the store is never opened, so nothing
is written in it. Truth: each query's 10 best rows by one blocked float32 product.

Per configuration, search width (expansion_search) and `ask` (the candidates the product asks
the graph for, gitmem.index.vectors.GraphRanking: rescored exactly from the vector file, the
best 10 kept): recall@10 of the graph's own top 10 and of the rescored answer, and the p50 of
the search plus rescoring, one thread. The timed searches run query by query with every
configuration and width in turn, so that a loaded host's noise falls on all of them alike.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from usearch.index import Index

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, median, write_json
from ann_store_recall import K, exact_top, recall
from bench_recall import queries

from gitmem.index.model import configured_model
from gitmem.index.vectors import query_row

_BATCH = 65_536  # rows a call to add, as gitmem.index.ann.prepare adds them


def parse(config: str) -> dict[str, Any]:
    """`f16-M16-ef64` as usearch's Index arguments."""
    dtype, links, candidates = config.split("-")
    metric = "cos" if dtype == "i8" else "ip"  # i8 under "ip" keeps too few levels
    return {
        "dtype": dtype,
        "metric": metric,
        "connectivity": int(links.removeprefix("M")),
        "expansion_add": int(candidates.removeprefix("ef")),
    }


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def built(config: str, matrix: Any, rows: int, out: Path, threads: int, reuse: bool) -> tuple:
    """The graph of `config` over the first `rows` rows, mapped from its saved file, and what
    building it cost (None when reused)."""
    path = out / f"{config}-{rows}.usearch"
    cost = None
    if not (reuse and path.exists()):
        index = Index(ndim=matrix.shape[1], **parse(config))
        began, cpu = time.perf_counter(), cpu_seconds()
        for start in range(0, rows, _BATCH):
            stop = min(start + _BATCH, rows)
            keys = np.arange(start, stop, dtype=np.uint64)
            index.add(keys, np.asarray(matrix[start:stop]), threads=threads)
        cost = {
            "build_wall_s": time.perf_counter() - began,
            "build_cpu_s": cpu_seconds() - cpu,
            "load_average": os.getloadavg()[0],
        }
        index.save(str(path))
        del index
        print(f"{config}: built {rows} rows, {cost}", flush=True)
    return Index.restore(str(path), view=True), cost, path.stat().st_size


def rescored(matrix: Any, q: Any, keys: Any) -> list[int]:
    """The product's answer from the graph's candidates (GraphRanking.top, no dead rows).
    Rows past the first ROWS (a reused graph saved over a longer vector file) are dropped:
    the truth does not hold them."""
    rows = np.unique(keys.astype(np.int64))
    rows = rows[rows < len(matrix)]
    scores = np.einsum("ij,j->i", matrix[rows], q)
    order = np.lexsort((rows, -scores))
    return rows[order[:K]].tolist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", required=True)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--rows", type=int, default=0, help="The first ROWS rows (0: all).")
    parser.add_argument("--configs", default="f16-M16-ef64")
    parser.add_argument("--widths", default="512,1024,2048")
    parser.add_argument("--asks", default="74", help="Candidates asked, as GraphRanking does.")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", default="builtin:minilm-256")
    parser.add_argument("--out", default="/tmp/graph-s14")
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    matrix = np.memmap(args.vectors, dtype=np.float32, mode="r").reshape(-1, args.dim)
    rows = args.rows or matrix.shape[0]
    matrix = matrix[:rows]
    model = configured_model(args.model, out)
    assert model is not None
    q = np.stack([query_row(model.encode_query(text)) for text in queries(args.queries)])
    truth = exact_top(matrix, q, rows)
    configs = args.configs.split(",")
    widths = [int(w) for w in args.widths.split(",")]
    asks = [int(a) for a in args.asks.split(",")]
    graphs, results = {}, {}
    for config in configs:
        graph, cost, size = built(config, matrix, rows, out, args.threads, args.reuse)
        graphs[config] = graph
        results[config] = {"graph_bytes": size, "build": cost, "searches": {}}
    cells = [(c, w, a) for c in configs for w in widths for a in asks]
    alone: dict[tuple, list] = {cell: [] for cell in cells}
    answers: dict[tuple, list] = {cell: [] for cell in cells}
    took: dict[tuple, list] = {cell: [] for cell in cells}
    loads = [os.getloadavg()[0]]
    for vector in q:
        for config, width, ask in cells:
            graph = graphs[config]
            graph.expansion_search = width
            began = time.perf_counter()
            keys = graph.search(vector, ask, threads=1, exact=False).keys
            answer = rescored(matrix, vector, keys)
            took[config, width, ask].append((time.perf_counter() - began) * 1000)
            alone[config, width, ask].append(keys[:K].astype(np.int64).tolist())
            answers[config, width, ask].append(answer)
    loads.append(os.getloadavg()[0])
    for config, width, ask in cells:
        figures = {
            "recall_at_10_graph": recall(alone[config, width, ask], truth),
            "recall_at_10_rescored": recall(answers[config, width, ask], truth),
            "p50_ms": median(took[config, width, ask]),
        }
        results[config]["searches"][f"width {width}, ask {ask}"] = figures
        print(
            f"{config} ({results[config]['graph_bytes'] / 1e6:.0f} MB) width {width} ask {ask}: "
            f"recall@10 graph {figures['recall_at_10_graph']:.3f}, rescored "
            f"{figures['recall_at_10_rescored']:.3f}, p50 {figures['p50_ms']:.2f} ms",
            flush=True,
        )
    print(f"load average during the searches: {loads[0]:.1f} -> {loads[1]:.1f}", flush=True)
    write_json(
        args.json,
        {
            "machine": machine(),
            "rows": rows,
            "queries": len(q),
            "threads": args.threads,
            "load_average": loads,
            "configs": results,
        },
    )


if __name__ == "__main__":
    main()
