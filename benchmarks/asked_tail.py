"""The rows appended since a vector graph, asked of the catalog (review of s14-proc, issue 24).

A one-shot `gitmem recall` of a graph-ranked index hides rows through the catalog
(gitmem.index.rowviews.AskedRows). Before: every row the graph proposed and every row appended
since it (up to LAZY_ROWS, more while the builder runs) was asked about; after: GraphRanking
scores them first and asks about the best, in score order, until k are shown. This times both
on a synthetic catalog of a million records, one chunk each, the appended rows being the last
`tail` rows, alternately, median of `--runs`.

    python benchmarks/asked_tail.py /tmp/review-proc/cat.sqlite --runs 5
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from gitmem.index.catalog import Catalog
from gitmem.index.entries import Filter
from gitmem.index.rowviews import AskedRows
from gitmem.index.vectors import GraphRanking

ROWS = 1_000_000
DIM = 16  # the product is not what is timed: the catalog's look-ups are


def synthetic(path: Path) -> None:
    """A catalog of ROWS active records, one chunk each (written once, ~1 min)."""
    Catalog(path, create=True).close()
    db = sqlite3.connect(path)
    db.execute("BEGIN")
    db.executemany(
        "INSERT INTO records VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            (f"a-synthetic-record-{n:08x}", f"records/x/{n:08x}.md", f"{n:040x}", "fact",
             f"A synthetic record {n}", "one line of text", "|t1|t2|", "agent", "", "active",
             1_700_000_000 + n, 1_700_000_000 + n, 1.0)
            for n in range(ROWS)
        ),
    )  # fmt: skip
    db.executemany(
        "INSERT INTO chunks VALUES (?,?)", ((n, f"a-synthetic-record-{n:08x}") for n in range(ROWS))
    )
    db.execute("COMMIT")
    db.close()


class _Proposing:
    """A graph of the first ROWS - tail rows that proposes `k` of them."""

    def __init__(self, covered: int, rng: Any) -> None:
        self.covered, self.size, self._rng = covered, covered, rng

    def search(self, q: Any, k: int) -> Any:
        return self._rng.choice(self.covered, size=k, replace=False).astype(np.uint64)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("catalog", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--k", type=int, default=15)  # _best_records' want for 10 records
    args = parser.parse_args()
    if not args.catalog.exists():
        synthetic(args.catalog)
    catalog = Catalog(args.catalog)
    rng = np.random.default_rng(1)
    matrix = rng.normal(size=(ROWS, DIM)).astype(np.float32)
    q = rng.normal(size=DIM).astype(np.float32)
    for tail in (1_000, 4_096, 16_384, 65_536):
        before, after = [], []
        for _ in range(args.runs):
            graph = _Proposing(ROWS - tail, rng)
            asked = AskedRows(catalog.owners, catalog.entries, Filter())
            start = time.perf_counter()  # before: every proposed and appended row asked
            proposed = graph.search(q, max(2 * args.k, args.k + 64)).astype(np.int64)
            rows = np.concatenate([proposed, np.arange(ROWS - tail, ROWS, dtype=np.int64)])
            np.asarray(asked[rows], dtype=bool)
            before.append(time.perf_counter() - start)
            asked = AskedRows(catalog.owners, catalog.entries, Filter())
            start = time.perf_counter()  # after: the whole top, scoring included
            GraphRanking(matrix, q, graph, asked).top(args.k)
            after.append(time.perf_counter() - start)
        print(
            f"{tail:>6} appended rows: asking all {statistics.median(before) * 1000:7.1f} ms,"
            f" in score order {statistics.median(after) * 1000:6.1f} ms (median of {args.runs})"
        )
    catalog.close()


if __name__ == "__main__":
    main()
