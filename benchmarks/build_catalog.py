"""A full build's catalog writes alone, at any size, without reading or embedding a record: what
applying a build's entries a batch at a time costs against applying them in groups.

    .venv/bin/python benchmarks/build_catalog.py --records 1000000 [--modes batch,grouped]

Each mode fills a new catalog in a temporary directory with `--records` synthetic records of one
vector row each, in batches of `gitmem.index.catchup._BATCH` with their keys reserved per batch as
a build does; "batch" applies each batch (the build before session 14), "grouped" hands them to
`catchup._Held` (the build since). The modes alternate over `--rounds`; each prints its CPU
seconds (this process, which is all of it: SQLite runs here) and wall seconds, and the CPU of
its last tenth of the batches (a cost that grows with the rows so far shows there).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _common import machine, median, write_json

from gitmem.index import catchup
from gitmem.index.catalog import Catalog
from gitmem.store.record import Record

START = datetime(2025, 1, 1, tzinfo=UTC)


def batches(records: int) -> list[list[Record]]:
    out = []
    for first in range(0, records, catchup._BATCH):
        out.append(
            [
                Record(
                    id=f"a-synthetic-record-title-{n:08x}",
                    type="fact",
                    title=f"A synthetic record title {n}",
                    abstract="what it is about, in one line",
                    body="",
                    created=START + timedelta(seconds=n),
                    updated=START + timedelta(seconds=n),
                    agent="bench",
                    tags=("one", "two"),
                )
                for n in range(first, min(first + catchup._BATCH, records))
            ]
        )
    return out


def fill(root: Path, work: list[list[Record]], mode: str) -> dict[str, float]:
    catalog = Catalog(root / "catalog.sqlite", create=True)
    held = catchup._Held(catalog)
    row = 0
    tail = len(work) - max(1, len(work) // 10)
    cpu, wall = time.process_time(), time.perf_counter()
    tail_cpu = 0.0
    try:
        for k, batch in enumerate(work):
            if k == tail:
                tail_cpu = time.process_time()
            first = catalog.reserve_keys(len(batch))
            entries = [
                (r, f"records/fact/{r.id}.md", f"{n:040x}", (row + n,)) for n, r in enumerate(batch)
            ]
            row += len(batch)
            if mode == "batch":
                catalog.apply((), entries, {}, first)
            else:
                held.add(first, entries)
        held.flush()
        catalog.apply((), [], {"commit": "0" * 40})
    finally:
        catalog.close()
    end = time.process_time()
    return {"cpu": end - cpu, "wall": time.perf_counter() - wall, "tail_cpu": end - tail_cpu}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--modes", default="batch,grouped")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", help="Write the figures here.")
    args = parser.parse_args()
    work = batches(args.records)
    runs: dict[str, list[dict[str, float]]] = {m: [] for m in args.modes.split(",")}
    for _ in range(args.rounds):
        for mode in runs:
            with tempfile.TemporaryDirectory() as tmp:
                got = fill(Path(tmp), work, mode)
            runs[mode].append(got)
            print(
                f"{mode}: CPU {got['cpu']:.1f} s (last tenth {got['tail_cpu']:.1f} s), "
                f"wall {got['wall']:.1f} s",
                flush=True,
            )
    for mode, got in runs.items():
        print(f"{mode}: median CPU {median([g['cpu'] for g in got]):.1f} s")
    write_json(args.json, {"machine": machine(), "records": args.records, **runs})


if __name__ == "__main__":
    main()
