"""The push race: 3 clones x 3 concurrent processes x 50 records each, syncing as they go.
At the end every clone has all 450 records and identical trees, and git fsck is clean."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from conftest import assert_clean, git
from test_sync import make_clone, run_sync

from gitmem.api import Store

pytest_plugins = ["test_sync"]  # its `remote` fixture

CLONES, WORKERS, RECORDS, SYNC_EVERY = 3, 3, 50, 10

WORKER = """
import json, os, sys
from pathlib import Path
from gitmem.api import Store
from gitmem.errors import GitmemError
from gitmem.sync.sync import sync

root, tag, count, every = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
store = Store.open(Path(root))
retries = syncs = failures = 0
for i in range(count):
    store.record("fact", f"{tag} wrote number {i}", title=f"{tag} record {i}")
    if i % every == every - 1 or i == count - 1:
        for _ in range(5):
            try:
                result = sync(store, os.environ, index=False, timeout=60)
            except GitmemError as exc:
                failures += 1
                print(exc, file=sys.stderr)
                continue
            retries += result.attempts - 1
            syncs += 1
            break
print(json.dumps({"retries": retries, "syncs": syncs, "failures": failures}))
"""


def race(remote: Path, clones: int, workers: int, records: int, every: int) -> dict[str, float]:
    """Run the race; return its figures (the benchmark calls this too)."""
    stores = [make_clone(remote, f"clone{c}") for c in range(clones)]
    started = time.monotonic()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(s.root), f"c{c}w{w}", str(records), str(every)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for c, s in enumerate(stores)
        for w in range(workers)
    ]
    figures = [json.loads(p.communicate(timeout=600)[0]) for p in procs]
    elapsed = time.monotonic() - started
    for _ in range(2):  # everyone has pushed; one round brings every clone up to date
        for store in stores:
            run_sync(Store.open(store.root), index=False)
    total = clones * workers * records
    trees = {git(s.root, "rev-parse", "HEAD^{tree}").strip() for s in stores}
    counts = [len(Store.open(s.root).catalog()) for s in stores]
    assert trees and len(trees) == 1, trees
    assert counts == [total] * clones, counts
    for store in stores:
        assert_clean(store.root)
    subprocess.run(["git", "fsck", "--strict"], cwd=remote, check=True, capture_output=True)
    retries = sum(f["retries"] for f in figures)
    return {
        "records": total,
        "seconds": elapsed,
        "records_per_second": total / elapsed,
        "retries_per_record": retries / total,
        "syncs": sum(f["syncs"] for f in figures),
        "failed_syncs": sum(f["failures"] for f in figures),
    }


def test_three_clones_three_writers_each(remote: Path) -> None:
    figures = race(remote, CLONES, WORKERS, RECORDS, SYNC_EVERY)
    assert figures["records"] == 450
