"""Where a full rebuild's time goes, and what worker processes make of it.

    .venv/bin/python benchmarks/rebuild_stages.py --records 100000 \
        --model benchmarks/.models/minilm-distilled-256 [--store DIR]

Rebuilds once in one process with the stages timed (reading and parsing, embedding, keyword
documents, adding them to tantivy, the catalog), then alternates one-process and worker builds
(`--rounds`), reporting wall time and the CPU time of this process and of its workers.
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import machine, median, write_json
from bench_recall import store_for

import gitmem.index.build as indexbuild
from gitmem.api import Store
from gitmem.index.catalog import Catalog

SPENT: dict[str, float] = {}


def timed(function: Callable[..., Any], key: str) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            SPENT[key] = SPENT.get(key, 0.0) + time.perf_counter() - start

    return wrapper


def stages(root: Path) -> dict[str, float]:
    """One build in this process, each stage timed."""
    real = (indexbuild.read_docs, indexbuild.embed, indexbuild.text_fields, Catalog.apply)
    indexbuild.read_docs = timed(real[0], "read and parse")
    indexbuild.embed = timed(real[1], "embed")
    indexbuild.text_fields = timed(real[2], "keyword documents")
    Catalog.apply = timed(real[3], "catalog")  # type: ignore[method-assign]
    try:
        total = build(root, workers=0)["wall"]
    finally:
        indexbuild.read_docs, indexbuild.embed, indexbuild.text_fields = real[:3]
        Catalog.apply = real[3]  # type: ignore[method-assign]
    SPENT["tantivy and the rest"] = total - sum(SPENT.values())
    return {"total": total, **SPENT}


def build(root: Path, *, workers: int) -> dict[str, float]:
    chosen = indexbuild._workers
    indexbuild._workers = lambda records: workers  # type: ignore[assignment]
    try:
        store = Store.open(root)
        model = store.model()
        if model is not None:
            model.get()
        before = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        store.rebuild()
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF)
        kids_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        indexbuild._workers = chosen  # type: ignore[method-assign]
    return {
        "wall": wall,
        "cpu_self": _cpu(after) - _cpu(before),
        "cpu_workers": _cpu(kids_after) - _cpu(kids),
    }


def _cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--model", required=True)
    parser.add_argument("--store", help="Rebuild this store instead of making one.")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", help="Write the figures here.")
    args = parser.parse_args()
    root = store_for(args.store, args.records, args.model)
    staged = stages(root)
    print(f"one process, staged: {staged['total']:.1f} s")
    for key, spent in staged.items():
        if key != "total":
            print(f"  {key:22} {spent:6.1f} s")
    runs: dict[str, list[dict[str, float]]] = {"one process": [], "workers": []}
    for _ in range(args.rounds):
        runs["one process"].append(build(root, workers=0))
        runs["workers"].append(build(root, workers=args.workers))
    for name, figures in runs.items():
        walls = [f["wall"] for f in figures]
        cpu = median([f["cpu_self"] for f in figures])
        kids = median([f["cpu_workers"] for f in figures])
        print(
            f"{name}: wall {', '.join(f'{w:.1f}' for w in walls)} s (median {median(walls):.1f}); "
            f"CPU here {cpu:.1f} s, in workers {kids:.1f} s"
        )
    ratios = [
        w["wall"] / o["wall"] for o, w in zip(runs["one process"], runs["workers"], strict=True)
    ]
    print("workers / one process per round: " + ", ".join(f"{r:.2f}" for r in ratios))
    write_json(args.json, {"machine": machine(), "stages": staged, **runs, "ratios": ratios})


if __name__ == "__main__":
    main()
