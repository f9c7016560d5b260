"""Catch-up after 100 commits on a large store, two code trees alternated: the row facts
written whole (before) against in chunks (gitmem.index.factstore), each on the same store.

    nice -n 5 .venv/bin/python benchmarks/ab_rowfacts.py STORE --trees BEFORE AFTER \
        [--rounds 3] [--json OUT]

Each round runs, for each tree in turn (ABBA order across rounds), one process with
`PYTHONPATH` that tree: a warm-up catch-up after 100 new records (untimed: it brings the row
facts into that tree's form, whole or chunks, which is a one-time cost of switching), then
two timed catch-ups after 100 new records each (appended rows: one or two chunks dirty) and
two after 100 edits of records picked at random (their old rows die all over the store),
and the time a reader takes to read all the row facts (`Catalog.row_facts`, median of 3).
`--profile OUT` instead runs one catch-up after 100 edits (`--kind new`: 100 new records)
under cProfile in this process.
The store is written to: use a copy.
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import random
import sqlite3
import time
from pathlib import Path
from typing import Any

from _common import ab_parser, ab_report, alternated, median


def _ids(root: Path, count: int) -> list[str]:
    """`count` record ids picked at random (by rowid) from the store's catalog."""
    path = root / ".gitmem" / "index" / "catalog.sqlite"
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        top = db.execute("SELECT max(rowid) FROM records").fetchone()[0]
        picked: list[str] = []
        while len(picked) < count:
            row = db.execute(
                "SELECT id FROM records WHERE rowid >= ? LIMIT 1", (random.randrange(top),)
            )
            found = row.fetchone()
            if found and found[0] not in picked:
                picked.append(found[0])
        return picked
    finally:
        db.close()


def write_batch(store: Any, kind: str) -> None:
    """100 commits: new records ("new"), or edits of records picked at random ("edits")."""
    tag = random.randrange(10**6)
    if kind == "new":
        for i in range(100):
            store.record("fact", f"New fact {tag}-{i} about row facts.", title=f"New {tag} {i}")
    else:
        for i, rid in enumerate(_ids(store.root, 100)):
            store.amend(rid, {"abstract": f"edited {tag}-{i}"})


def _catch_up(store: Any, kind: str) -> float:
    write_batch(store, kind)
    began = time.perf_counter()
    store.index()
    return time.perf_counter() - began


def _read_facts(root: Path) -> float:
    from gitmem.index.catalog import Catalog

    times = []
    for _ in range(3):
        catalog = Catalog(root / ".gitmem" / "index" / "catalog.sqlite")
        began = time.perf_counter()
        stored = catalog.row_facts()
        times.append(time.perf_counter() - began)
        catalog.close()
        assert stored is not None, "no row facts read"
    return median(times)


def one(root: Path) -> dict[str, Any]:
    from gitmem.api import Store

    store = Store.open(root)
    store.index()
    warm = _catch_up(store, "new")
    return {
        "warm_up_s": warm,
        "new_s": [_catch_up(store, "new") for _ in range(2)],
        "edits_s": [_catch_up(store, "edits") for _ in range(2)],
        "read_facts_s": _read_facts(root),
        "load": os.getloadavg()[0],
    }


def profile(root: Path, out: Path, kind: str = "edits") -> None:
    from gitmem.api import Store

    store = Store.open(root)
    store.index()
    write_batch(store, kind)
    profiler = cProfile.Profile()
    began = time.perf_counter()
    profiler.runcall(store.index)
    print(f"catch-up after 100 {kind}: {time.perf_counter() - began:.2f} s", flush=True)
    with out.open("w") as stream:
        pstats.Stats(profiler, stream=stream).sort_stats("cumulative").print_stats(45)


def main() -> None:
    parser = ab_parser(__doc__)
    parser.add_argument("--profile", type=Path, help="cProfile one catch-up to this file")
    parser.add_argument("--kind", choices=("edits", "new"), default="edits", help="for --profile")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.store)))
        return
    if args.profile:
        profile(args.store, args.profile, args.kind)
        return
    runs = alternated(__file__, args.store, args.trees, args.rounds)
    summary = {
        tree: {
            "new_s_median": median([t for r in got for t in r["new_s"]]),
            "edits_s_median": median([t for r in got for t in r["edits_s"]]),
            "read_facts_s_median": median([r["read_facts_s"] for r in got]),
        }
        for tree, got in runs.items()
        if got
    }
    ab_report(args.json, runs, summary)


if __name__ == "__main__":
    main()
