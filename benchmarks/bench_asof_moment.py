"""`--as-of` one year back in a fresh process, two versions of gitmem alternated on one store
(docs/benchmarks.md, "Session 15: time travel without a per-view index").

    python benchmarks/bench_asof_moment.py STORE --sides base=/tmp/base new=/tmp/new \
        --rounds 3 [--first] [--when 2025-12-06T12:00Z] [--json OUT]

Each side is a directory holding a `gitmem` package (`git archive REV gitmem | tar -x -C DIR`),
put first on PYTHONPATH of a fresh process that opens the store and times one hybrid and then
one keyword recall as of WHEN (the process's first recall pays what a new `gitmem recall
--as-of` pays; its imports are timed apart). The sides share the store's time-travel cache (the
same schema); `--first` empties what a first use makes before every run: the versions a view
kept (`made`) and the span index, so each run pays a view's first cost from the blobs.
`uptime`'s load is recorded before and after each run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = """
import json, sys, time
t0 = time.perf_counter()
from datetime import datetime
import gitmem
from gitmem.api import Store
imported = time.perf_counter() - t0
store = Store.open(sys.argv[1])
when = datetime.fromisoformat(sys.argv[2].replace("Z", "+00:00"))
out = {"import_s": imported, "code": gitmem.__file__}
for n, (mode, query) in enumerate((("hybrid", "deploy rollback"), ("keyword", "session token"))):
    t = time.perf_counter()
    hits = store.recall(query, as_of=when, mode=mode).hits
    out[f"{mode}_s"] = time.perf_counter() - t
    out[f"{mode}_hits"] = [h.id for h in hits]
out["process_s"] = time.perf_counter() - t0
print(json.dumps(out))
"""


def forget_first_use(store: Path) -> None:
    """Empty the kept versions and drop the span index: the next view starts from blobs."""
    timeline = store / ".gitmem" / "timeline"
    shutil.rmtree(timeline / "spans", ignore_errors=True)
    db = sqlite3.connect(timeline / "timeline.sqlite")
    try:
        db.execute("DELETE FROM made")
        db.commit()
    finally:
        db.close()


def run(store: Path, side: Path, when: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(side)}
    load = os.getloadavg()[0]
    done = subprocess.run(
        # -P: the working directory's own gitmem must not come before the side's
        [sys.executable, "-P", "-c", CHILD, str(store), when],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=3600,
    )
    out: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    out.update(load_before=load, load_after=os.getloadavg()[0])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--sides", nargs="+", required=True, help="NAME=DIR, alternated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--first", action="store_true", help="empty what a first use makes")
    parser.add_argument("--when", default="2025-12-06T12:00:00Z")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sides = dict(item.split("=", 1) for item in args.sides)
    runs: dict[str, list[dict[str, object]]] = {name: [] for name in sides}
    for _ in range(args.rounds):
        for name, side in sides.items():
            if args.first:
                forget_first_use(args.store)
            found = run(args.store, Path(side), args.when)
            runs[name].append(found)
            print(name, json.dumps({k: v for k, v in found.items() if not k.endswith("hits")}))
            assert str(found["code"]).startswith(side), found["code"]
    summary = {
        name: {
            key: statistics.median(float(str(r[key])) for r in found)
            for key in ("hybrid_s", "keyword_s", "process_s", "import_s")
        }
        for name, found in runs.items()
    }
    names = list(sides)
    same = all(
        a["hybrid_hits"] == b["hybrid_hits"] and a["keyword_hits"] == b["keyword_hits"]
        for a, b in zip(runs[names[0]], runs[names[-1]], strict=True)
    )
    print(json.dumps({"medians": summary, "same_hits": same}, indent=1))
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "medians": summary}, indent=1))


if __name__ == "__main__":
    main()
