"""The keyword index's purge after edits, two code trees alternated, each on its own copy of
one store: the catch-up time of each batch of 100 amends, and how far keyword search then is
from a fresh index of the same documents.

    nice -n 5 .venv/bin/python benchmarks/ab_textcarry.py --trees BEFORE AFTER \
        --stores STORE_BEFORE STORE_AFTER [--batches 3] [--json OUT]
    PYTHONPATH=TREE .venv/bin/python benchmarks/ab_textcarry.py --one STORE --seed N --count 2000

The two stores are `cp -a` copies of one store; each is written only by its tree's code.
Batch n amends the same 100 records in both (picked from the sorted ids with seed n) and runs
one process per tree, in turn (the order swapped every batch), with `PYTHONPATH` that tree.
Each process times `store.index()` after the amends, counts the deleted documents each keyword
index (records' `text/`, sessions' `sources/`) still counts, then builds a fresh index from
the index's own stored documents (what a rebuild's keyword half would hold) and compares the
top 10 of two query sets, with the context field weighed as recall does: 200 queries of 2-6
common words (`bench_recall.queries(200, seed=3)`) and the titles of 200 records picked with
seed 4 (rarer words). Per set: mean overlap of the top 10, mean NDCG@10 taking the fresh
index's order as truth (gain 10 - rank), and the largest relative score difference of a
record in both lists. The sources' index is compared the same way on the first set.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import machine, median, write_json
from bench_recall import queries

CONTEXT = 0.75  # recall's default context weight (gitmem.recall.recall.DEFAULTS)


def _picked(root: Path, seed: int, count: int = 100) -> list[str]:
    path = root / ".gitmem" / "index" / "catalog.sqlite"
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        ids = sorted(row[0] for row in db.execute("SELECT id FROM records"))
    finally:
        db.close()
    return random.Random(seed).sample(ids, count)


def _ghosts(directory: Path) -> int:
    meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
    return sum((s.get("deletes") or {}).get("num_deleted_docs", 0) for s in meta["segments"])


def _fresh(index: Any, scratch: Path) -> Any:
    """A new index holding the documents `index` holds (no keys: hits named by id)."""
    from dataclasses import replace

    from gitmem.index.textdoc import text_fields
    from gitmem.index.textindex import TextIndex

    docs = index.stored(index.ids())
    fresh = TextIndex.create(scratch)
    with fresh.filling() as add:
        add([text_fields(replace(d, key=-1)) for d in docs], -1)
    return fresh


def _drift(index: Any, fresh: Any, asked: list[str], context: float) -> dict[str, float]:
    overlaps, ndcgs, worst = [], [], 0.0
    for query in asked:
        want = fresh.search(query, 10, context=context)
        if not want:
            continue
        got = index.search(query, 10, context=context)
        rank = {h.id: n for n, h in enumerate(want)}
        score = {h.id: h.score for h in want}
        overlaps.append(len(rank.keys() & {h.id for h in got}) / len(want))
        ideal = sum((10 - n) / math.log2(n + 2) for n in range(len(want)))
        dcg = sum((10 - rank[h.id]) / math.log2(n + 2) for n, h in enumerate(got) if h.id in rank)
        ndcgs.append(dcg / ideal)
        for h in got:
            if score.get(h.id):
                worst = max(worst, abs(h.score - score[h.id]) / score[h.id])
    return {
        "queries": len(overlaps),
        "overlap10": sum(overlaps) / max(1, len(overlaps)),
        "ndcg10": sum(ndcgs) / max(1, len(ndcgs)),
        "exact_lists": sum(o == 1.0 for o in overlaps),
        "max_rel_score_diff": worst,
    }


def one(root: Path, seed: int, count: int = 100) -> dict[str, Any]:
    from gitmem.api import Store
    from gitmem.index.textindex import TextIndex

    store = Store.open(root)
    store.index()
    for i, rid in enumerate(_picked(root, seed, count)):
        store.amend(rid, {"abstract": f"edited {seed}-{i}"})
    load = os.getloadavg()[0]
    began = time.perf_counter()
    store.index()
    took = time.perf_counter() - began
    base = root / ".gitmem" / "index"
    out: dict[str, Any] = {
        "catch_up_s": took,
        "load": load,
        "ghosts_text": _ghosts(base / "text"),
        "ghosts_sources": _ghosts(base / "sources"),
    }
    common = queries(200, seed=3)
    with tempfile.TemporaryDirectory(prefix="kw-fresh-", dir="/tmp") as scratch:
        text = TextIndex.open(base / "text")
        (Path(scratch) / "text").mkdir()
        fresh = _fresh(text, Path(scratch) / "text")
        docs = sorted(text.ids())
        titles = [d.title for d in text.stored(random.Random(4).sample(docs, 200))]
        out["text_common"] = _drift(text, fresh, common, CONTEXT)
        out["text_titles"] = _drift(text, fresh, titles, CONTEXT)
        sources = TextIndex.open(base / "sources")
        (Path(scratch) / "sources").mkdir()
        out["sources_common"] = _drift(
            sources, _fresh(sources, Path(scratch) / "sources"), common, 0.0
        )
    out["load_after"] = os.getloadavg()[0]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--stores", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, default=100, help="amends a batch (with --one)")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.seed, args.count)))
        return
    pairs = list(zip(["before", "after"], args.trees, args.stores, strict=True))
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for n in range(1, args.batches + 1):
        for name, tree, store in pairs if n % 2 else pairs[::-1]:
            env = {**os.environ, "PYTHONPATH": str(tree)}
            cmd = [sys.executable, __file__, "--one", str(store), "--seed", str(n)]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if done.returncode:
                print(f"batch {n} {name}: failed\n{done.stderr[-3000:]}", flush=True)
                continue
            result = json.loads(done.stdout.strip().splitlines()[-1])
            runs[name].append({"batch": n, **result})
            print(f"batch {n} {name}: {json.dumps(result)}", flush=True)
    summary = {
        name: {"catch_up_s_median": median([r["catch_up_s"] for r in got])}
        for name, got in runs.items()
        if got
    }
    print(json.dumps(summary, indent=2))
    if args.json:
        write_json(args.json, {"machine": machine(), "runs": runs, "summary": summary})


if __name__ == "__main__":
    main()
