"""How far a store's recall, its index caught up through edits, is from a rebuild's.

    nice -n 5 .venv/bin/python benchmarks/recall_drift.py STORE SCRATCH [--rebuilt] [--json OUT]

Copies STORE (index included) to SCRATCH, rebuilds the copy's index (`Store.rebuild`), and
asks both the same queries at the same `now`, in keyword and hybrid mode: 200 of 2-6 common
words (`bench_recall.queries(200, seed=3)`) and the titles of 200 records picked with seed 4.
Per mode and set: mean overlap of the top 10, mean NDCG@10 taking the rebuild's order as
truth (gain 10 - rank), lists identical in order. STORE is only read.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import machine, write_json
from bench_recall import queries

NOW = datetime(2031, 1, 1, tzinfo=UTC)


def _compare(ours: Any, truth: Any, asked: list[str], mode: str) -> dict[str, float]:
    overlaps, ndcgs, same = [], [], 0
    for query in asked:
        want = [h.id for h in truth.recall(query, mode=mode, now=NOW, limit=10).hits]
        if not want:
            continue
        got = [h.id for h in ours.recall(query, mode=mode, now=NOW, limit=10).hits]
        rank = {rid: n for n, rid in enumerate(want)}
        overlaps.append(len(rank.keys() & set(got)) / len(want))
        ideal = sum((10 - n) / math.log2(n + 2) for n in range(len(want)))
        dcg = sum((10 - rank[r]) / math.log2(n + 2) for n, r in enumerate(got) if r in rank)
        ndcgs.append(dcg / ideal)
        same += got == want
    return {
        "queries": len(overlaps),
        "overlap10": sum(overlaps) / max(1, len(overlaps)),
        "ndcg10": sum(ndcgs) / max(1, len(ndcgs)),
        "identical_lists": same,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("scratch", type=Path)
    parser.add_argument("--json")
    parser.add_argument("--rebuilt", action="store_true", help="SCRATCH is rebuilt already")
    args = parser.parse_args()
    from gitmem.api import Store
    from gitmem.index.textindex import TextIndex

    if not args.rebuilt:
        shutil.copytree(args.store, args.scratch, symlinks=True)
    rebuilt = Store.open(args.scratch)
    began = time.perf_counter()
    if not args.rebuilt:
        rebuilt.rebuild()
    took = time.perf_counter() - began
    ours = Store.open(args.store)
    ours.index()
    text = TextIndex.open(args.store / ".gitmem" / "index" / "text")
    titles = [d.title for d in text.stored(random.Random(4).sample(sorted(text.ids()), 200))]
    out: dict[str, Any] = {"rebuild_s": took, "load": os.getloadavg()}
    for mode in ("keyword", "hybrid"):
        for name, asked in (("common", queries(200, seed=3)), ("titles", titles)):
            out[f"{mode}_{name}"] = _compare(ours, rebuilt, asked, mode)
            print(mode, name, json.dumps(out[f"{mode}_{name}"]), flush=True)
    write_json(args.json, {"machine": machine(), **out})


if __name__ == "__main__":
    main()
