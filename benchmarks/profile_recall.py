"""Where an in-process hybrid recall spends its time, stage by stage, on an existing store.

    .venv/bin/python benchmarks/profile_recall.py STORE [--queries 200] [--cprofile]

Wraps the stages (index catch-up, query embedding, the product (Ranking's __init__) and
top-k, the catalog's owner and entry look-ups, tantivy's search, fusion) in perf_counter
spans and runs the benchmark's queries twice, each time in a fresh Store warmed by one query
as bench_recall.py does: once as recall runs them (the halves side by side: each span's start
and end, median over queries, relative to the start of the recall, show what overlaps) and
once one stage after another (each stage's own cost, without the other half competing for the
two cores). `--cprofile` adds the functions with the most own time (one after another).
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import os
import pstats
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_recall import queries

import gitmem.index.catalog
import gitmem.index.index
import gitmem.index.textindex
import gitmem.index.vectors
import gitmem.recall.recall
import gitmem.recall.worker
from gitmem.api import Store

Span = tuple[str, str, float, float]  # stage, thread, start, end
STAGES: list[tuple[Any, str]] = [
    (gitmem.index.index.Index, "ensure_current"),
    (gitmem.index.index.Index, "semantic"),
    (gitmem.index.index.Index, "keyword"),
    (gitmem.index.index.Index, "keyword_ceiling"),
    (gitmem.index.index.Index, "_best_chunks"),
    (gitmem.index.vectors.Ranking, "__init__"),  # the product over every row
    (gitmem.index.vectors.Ranking, "top"),
    (gitmem.index.textindex.TextIndex, "search"),
    (gitmem.index.catalog.Catalog, "owners"),
    (gitmem.index.catalog.Catalog, "entries"),
    (gitmem.index.index.Index, "_best_records"),
    (gitmem.index.index.Index, "scoring"),
    (gitmem.recall.recall, "fuse"),
]


class Inline:
    """A keyword thread (gitmem.recall.worker.Worker) that runs the job at once, in the
    caller's."""

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        job = gitmem.recall.worker.Job(fn, args)
        job.run()
        return job


def instrument(spans: list[Span], store: Store) -> None:
    def wrap(owner: Any, name: str, label: str) -> None:
        inner = getattr(owner, name, None)
        if inner is None:  # a stage this version of the code does not have
            return

        @functools.wraps(inner)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                thread = "main" if threading.current_thread() is threading.main_thread() else "pool"
                spans.append((label, thread, start, time.perf_counter()))

        setattr(owner, name, timed)

    for owner, name in STAGES:
        wrap(owner, name, name)
    model = store.model()
    if model is not None:
        wrap(type(model.get()), "encode", "encode")


def run(root: Path, texts: list[str], spans: list[Span]) -> dict[str, list[tuple[float, float]]]:
    store = Store.open(root)
    store.recall("warm up the index and the model")
    found: dict[str, list[tuple[float, float]]] = {}
    for text in texts:
        spans.clear()
        start = time.perf_counter()
        store.recall(text, limit=10)
        spans.append(("recall", "main", start, time.perf_counter()))
        per: dict[str, tuple[float, float]] = {}
        for label, thread, a, b in spans:
            key = f"{label} ({thread})"
            first, total = per.get(key, (a, 0.0))
            per[key] = (min(first, a), total + b - a)
            found.setdefault(key + " end", []).append(((b - start) * 1000, 0.0))
        for key, (a, total) in per.items():
            found.setdefault(key, []).append(((a - start) * 1000, total * 1000))
    return found


def report(title: str, found: dict[str, list[tuple[float, float]]], *, timeline: bool) -> None:
    print(f"\n{title}")
    print(f"  {'stage (thread)':34s} {'start':>7s} {'end':>7s} {'ms p50':>7s} {'p95':>7s}")
    rows = [(k, v) for k, v in found.items() if not k.endswith(" end")]
    rows.sort(key=lambda kv: statistics.median(s for s, _ in kv[1]))
    for key, values in rows:
        costs = sorted(c for _, c in values)
        start = statistics.median(s for s, _ in values)
        end = statistics.median(e for e, _ in found[key + " end"])
        where = f"{start:7.2f} {end:7.2f}" if timeline else f"{'':7s} {'':7s}"
        p95 = costs[int(len(costs) * 0.95)]
        print(f"  {key:34s} {where} {statistics.median(costs):7.2f} {p95:7.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("store")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--cprofile", action="store_true")
    args = parser.parse_args()
    root = Path(args.store)
    texts = queries(args.queries)
    spans: list[Span] = []
    instrument(spans, Store.open(root))
    load = f"{os.getloadavg()[0]:.2f}"
    print(f"{len(texts)} queries, load average {load}")
    report("as recall runs them (the halves side by side)", run(root, texts, spans), timeline=True)
    pool = gitmem.recall.recall.POOL
    gitmem.recall.recall.POOL = Inline()  # type: ignore[assignment]
    try:
        report("one after another", run(root, texts, spans), timeline=False)
        if args.cprofile:
            profile = cProfile.Profile()
            profile.runcall(run, root, texts, spans)
            pstats.Stats(profile).sort_stats("tottime").print_stats(20)
    finally:
        gitmem.recall.recall.POOL = pool


if __name__ == "__main__":
    main()
