"""Sync figures with a local bare remote.

1. Sync of 1k new records into a 100k-record store, index update included: device A imports
   1k records and syncs; device B, which has one local write of its own (so its sync is a
   real merge, not a fast-forward), syncs and its index catches up. Median of --runs.
2. The 3x3 race of tests/test_sync_race.py (3 clones x 3 processes x 50 records, syncing
   every 10 records): records landed per second and push retries per record. Median of
   --race-runs.

    .venv/bin/python benchmarks/bench_sync.py [--records 100000] [--model DIR] [--json out]

With --model (default: benchmarks/.models/minilm-distilled-256 if present) B's index has
embeddings; without one it is keyword-only, and the output says so.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _common import machine, make_store, median, synthetic_items, write_json
from bench_recall import configure_model

from gitmem.api import Store
from gitmem.sync.sync import sync

HERE = Path(__file__).resolve().parent
DEFAULT_MODEL = HERE / ".models" / "minilm-distilled-256"


def one_sync(a: Store, b: Store, run: int) -> dict[str, float]:
    b.record("fact", f"B's own note {run}", title=f"Local note {run}", agent="bench")
    items = []
    for i, item in enumerate(synthetic_items(1000, seed=100 + run)):
        item["id"] = f"new-{run}-{i:04d}-{item['id'][-6:]}"
        items.append(item)
    a.import_records(items, agent="bench")
    sync(a, os.environ, index=False)
    start = time.perf_counter()
    result = sync(b, os.environ, timeout=600)
    total = time.perf_counter() - start
    assert result.incoming >= 1 and result.merged and result.index == "current", result
    return {"sync_s": total}


def big_sync(records: int, model: Path | None, runs: int) -> dict[str, object]:
    start = time.perf_counter()
    root = make_store(records)
    if model is not None:
        configure_model(root, str(model))
    bare = root.parent / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(root), str(bare)], check=True)
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", str(bare)], check=True)
    subprocess.run(["git", "-C", str(root), "fetch", "-q", "origin"], check=True)
    b_root = root.parent / "b"
    from gitmem.sync.clone import clone

    clone(str(bare), b_root, os.environ, timeout=600)
    a, b = Store.open(root), Store.open(b_root)
    print(
        f"{records} records, two clones, built in {time.perf_counter() - start:.0f} s", flush=True
    )
    start = time.perf_counter()
    b.rebuild()
    embeddings = b.model() is not None
    print(
        f"B's index built in {time.perf_counter() - start:.0f} s "
        f"({'with' if embeddings else 'without'} embeddings)",
        flush=True,
    )
    figures = [one_sync(a, b, run) for run in range(runs)]
    seconds = median([f["sync_s"] for f in figures])
    shown = ", ".join(f"{f['sync_s']:.2f}" for f in figures)
    print(f"sync of 1k new records into {records}: median {seconds:.2f} s ({shown})", flush=True)
    return {
        "records": records,
        "embeddings": embeddings,
        "model": str(model) if model else None,
        "sync_1k_s_median": seconds,
        "sync_1k_s_runs": [f["sync_s"] for f in figures],
    }


def race_figures(runs: int) -> dict[str, object]:
    import test_sync  # noqa: F401  (isolates HOME and git identity, as in the tests)
    from test_sync_race import CLONES, RECORDS, SYNC_EVERY, WORKERS, race

    out = []
    for _ in range(runs):
        tmp = Path(tempfile.mkdtemp(prefix="gitmem-race-"))
        bare = tmp / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
        seed, _ = Store.init(tmp / "seed")
        subprocess.run(
            ["git", "-C", str(seed.root), "remote", "add", "origin", str(bare)], check=True
        )
        sync(seed, os.environ, index=False)
        out.append(race(bare, CLONES, WORKERS, RECORDS, SYNC_EVERY))
        print(
            f"race: {out[-1]['records_per_second']:.1f} records/s, "
            f"{out[-1]['retries_per_record']:.3f} retries/record, {out[-1]['seconds']:.1f} s",
            flush=True,
        )
    return {key: median([float(f[key]) for f in out]) for key in out[0]} | {
        "runs": len(out),
        "shape": f"{CLONES} clones x {WORKERS} processes x {RECORDS} records",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--model", default=str(DEFAULT_MODEL) if DEFAULT_MODEL.is_dir() else "")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--race-runs", type=int, default=3)
    parser.add_argument("--json", default=str(HERE / "results" / "sync.json"))
    args = parser.parse_args()
    results: dict[str, object] = {"machine": machine()}
    results["race"] = race_figures(args.race_runs)
    results["sync_1k"] = big_sync(args.records, Path(args.model) if args.model else None, args.runs)
    write_json(args.json, results)


if __name__ == "__main__":
    main()
