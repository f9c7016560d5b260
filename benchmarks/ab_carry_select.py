"""What a keyword write spends finding the documents it carries, two code trees alternated,
on a store's index as it is (read only: nothing is written).

    nice -n 5 .venv/bin/python benchmarks/ab_carry_select.py STORE --trees BEFORE AFTER \
        [--rounds 3] [--ids 600] [--json OUT]

Each round runs one process per tree (order swapped every round) with `PYTHONPATH` that
tree: it opens the store's keyword index (`.gitmem/index/text`) and times `TextIndex._carry`
for `--ids` record ids picked at random from the catalog (what a catch-up after 100 edits
deletes: the edited records and the neighbours whose context changed), three times, and
reports the median and how many documents it would carry. `_carry` only reads; the write
that would follow is not made.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import machine, median, write_json


def one(root: Path, count: int, seed: int) -> dict[str, Any]:
    from gitmem.index import textindex

    base = root / ".gitmem" / "index"
    db = sqlite3.connect(f"file:{base / 'catalog.sqlite'}?mode=ro", uri=True)
    try:
        ids = sorted(row[0] for row in db.execute("SELECT id FROM records"))
    finally:
        db.close()
    doomed = set(random.Random(seed).sample(ids, count))
    index = textindex.TextIndex.open(base / "text")
    index._main.reload()
    index._source.reload()
    # The code before took no budget.
    args = (
        (doomed, textindex.CARRY)
        if len(inspect.signature(index._carry).parameters) == 2
        else (doomed,)
    )
    times, carried = [], 0
    for _ in range(3):
        began = time.perf_counter()
        docs = index._carry(*args)
        times.append(time.perf_counter() - began)
        carried = len(docs)
    return {"carry_s": median(times), "runs_s": times, "carried": carried, "load": os.getloadavg()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--trees", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ids", type=int, default=600)
    parser.add_argument("--json")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.store, args.ids, args.seed)))
        return
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    pairs = list(zip(["before", "after"], args.trees, strict=True))
    for n in range(args.rounds):
        for name, tree in pairs if n % 2 == 0 else pairs[::-1]:
            env = {**os.environ, "PYTHONPATH": str(tree)}
            cmd = [sys.executable, __file__, str(args.store), "--one", "--ids", str(args.ids)]
            done = subprocess.run([*cmd, "--seed", str(n)], env=env, capture_output=True, text=True)
            if done.returncode:
                print(f"round {n} {name}: failed\n{done.stderr[-3000:]}", flush=True)
                continue
            result = json.loads(done.stdout.strip().splitlines()[-1])
            runs[name].append(result)
            print(f"round {n} {name}: {json.dumps(result)}", flush=True)
    summary = {name: median([r["carry_s"] for r in got]) for name, got in runs.items() if got}
    print(json.dumps(summary))
    write_json(args.json, {"machine": machine(), "runs": runs, "summary": summary})


if __name__ == "__main__":
    main()
