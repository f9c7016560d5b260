"""How long the time-travel copy holds the index lock to find HEAD's vector rows of some
blobs: every chunk row scanned (before session 13's fix) against a lookup by record id
(Catalog.blob_rows), for a catch-up's few versions and for a first build's all.

    .venv/bin/python benchmarks/bench_blob_rows.py CATALOG [--runs 5]

CATALOG: an index's catalog.sqlite (opened read-only; e.g. a 1M-record store's)."""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import time
from pathlib import Path

from gitmem.index.catalog import Catalog

SCAN = "SELECT r.blob, c.row FROM chunks c JOIN records r ON r.id = c.id ORDER BY c.row"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("catalog", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    db = sqlite3.connect(f"file:{args.catalog}?mode=ro", uri=True)
    pairs = db.execute("SELECT blob, id FROM records").fetchall()
    catalog = Catalog(args.catalog)
    rng = random.Random(1)
    cases = {"catch-up (1,000 versions)": rng.sample(pairs, 1000), "build (all)": pairs}
    for name, wanted in cases.items():
        blobs = {b: i for b, i in wanted}
        scan: list[float] = []
        by_id: list[float] = []  # Catalog.blob_rows: by id, or one scan for many
        for _ in range(args.runs):  # alternately, on a loaded machine
            t = time.perf_counter()
            every = [(str(b), int(r)) for b, r in db.execute(SCAN)]  # the former blob_rows()
            old = [(b, r) for b, r in every if b in blobs]  # and its caller's filter
            scan.append(time.perf_counter() - t)
            t = time.perf_counter()
            ids = set(blobs.values())
            new = [(b, r) for b, r in catalog.blob_rows(ids) if b in blobs]  # as vectors_of
            by_id.append(time.perf_counter() - t)
            assert sorted(old) == sorted(new)
        s, n = statistics.median(scan), statistics.median(by_id)
        print(
            f"{name}: scan {s:.3f} s, blob_rows {n:.3f} s, ratio {s / n:.1f}x ({len(pairs)} rows)"
        )


if __name__ == "__main__":
    main()
