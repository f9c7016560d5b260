"""What the check of the row facts' ids costs a reader: factstore.read of synthetic facts
(ASCII ids as a store's are), with rowfacts._id_block as it checks them (the ends never
decrease, the ids are UTF-8) against rowfacts._id_ends (the lengths alone, as before the
review fix), alternated in one process, in a random order each run.

    .venv/bin/python benchmarks/bench_fact_ids_check.py [--rows 1000000] [--runs 7]

Writes its SQLite file in a temporary directory, removed at the end."""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from gitmem.index import factstore, rowfacts
from gitmem.index.rowfacts import RowFacts

STAMP = "commit\x1fvectors.f32"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    facts = RowFacts()
    for row in range(args.rows):
        facts.put(row, row, 1_700_000_000 + row, 1.0, row % 7 == 0, f"a-record-title-{row}-abcdef")
    checked = rowfacts._id_block
    with tempfile.TemporaryDirectory() as tmp:
        db = sqlite3.connect(Path(tmp) / "facts.sqlite", isolation_level=None)
        for table in factstore.TABLES:
            db.execute(table)
        db.execute("BEGIN")
        factstore.write(db, STAMP, facts)
        db.execute("COMMIT")
        times: dict[str, list[float]] = {"lengths only": [], "checked": []}
        for _ in range(args.runs):
            pair = [("lengths only", rowfacts._id_ends), ("checked", checked)]
            random.shuffle(pair)  # neither always second
            for name, block in pair:
                rowfacts._id_block = block
                start = time.perf_counter()
                read = factstore.read(db, STAMP)
                times[name].append(time.perf_counter() - start)
                assert read is not None and len(read) == args.rows
        db.close()
    rowfacts._id_block = checked
    for name, runs in times.items():
        print(f"{name}: median {statistics.median(runs) * 1000:.0f} ms of {len(runs)}")
    ratio = statistics.median(times["checked"]) / statistics.median(times["lengths only"])
    print(f"checked / lengths only: {ratio:.2f}")


if __name__ == "__main__":
    main()
