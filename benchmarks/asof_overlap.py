"""How far the span index's answers move from a view's own exact index: overlap@10 of recall at
a moment (one year back by default), keyword and hybrid, over two sets of queries: known items
(the titles of every k-th record of the view, by id) and topics (bench_recall's queries: two
to six common words) (docs/benchmarks.md, "Session 15: time travel without a per-view index",
and its review's subsection).

    python benchmarks/asof_overlap.py STORE [--when 2025-12-06T12:00:00Z] [--queries 50]

The span index's BM25 statistics are those of every (version, context) in history; the view's
own index (gitmem.recall.pastcontext, what every view built before) has the view's alone.
Also times each side's recall in this process, the view's index made first.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from bench_recall import queries as topics

from gitmem.api import Store
from gitmem.recall.asof import PastIndex
from gitmem.recall.recall import DEFAULTS, Options, Source, recall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--when", default="2025-12-06T12:00:00Z")
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    when = datetime.fromisoformat(args.when.replace("Z", "+00:00"))
    store = Store.open(args.store)
    travel = store.time_travel()
    moment = travel.moment(when)
    spans = travel._past(moment)
    view = travel.view(moment)
    ids = sorted(view.entries)
    step = max(1, len(ids) // args.queries)
    titles = [view.entries[i].title for i in ids[::step][: args.queries]]
    sets = {"titles": titles, "topics": topics(args.queries)}
    exact = PastIndex(travel.timeline, view, travel._versions)
    out: dict[str, object] = {"load": os.getloadavg()[0], "view": len(ids), "when": args.when}
    t = time.perf_counter()
    exact._text()
    out["exact_index_s"] = time.perf_counter() - t
    spans.prepare()
    for name, queries in sets.items():
        for mode in ("keyword", "hybrid"):
            options = replace(DEFAULTS, mode=mode, now=moment.time)
            out[f"{name} {mode}"] = compare(spans, exact, queries, options)
    out["load_end"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))


def compare(spans: Source, exact: Source, queries: list[str], options: Options) -> dict[str, float]:
    """Overlap@10 and in-process times of `queries` recalled from both."""
    laps, same, top1, took_spans, took_exact = [], 0, 0, [], []
    for q in queries:
        t = time.perf_counter()
        a = [h.id for h in recall(spans, q, options).hits]
        took_spans.append(time.perf_counter() - t)
        t = time.perf_counter()
        b = [h.id for h in recall(exact, q, options).hits]
        took_exact.append(time.perf_counter() - t)
        laps.append(len(set(a[:10]) & set(b[:10])) / max(1, min(10, len(b))))
        same += a[:10] == b[:10]
        top1 += a[:1] == b[:1]
    return {
        "queries": len(queries),
        "overlap@10 mean": statistics.mean(laps),
        "overlap@10 min": min(laps),
        "identical top-10 lists": same,
        "same first hit": top1,
        "spans p50 ms": 1000 * statistics.median(took_spans),
        "own index p50 ms": 1000 * statistics.median(took_exact),
    }


if __name__ == "__main__":
    main()
