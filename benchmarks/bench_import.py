"""What one `gitmem import` leaves in .git: loose objects and size, packed (as gitmem does
for a write of gitmem.store.commit.PACK_AFTER files or more) and not, and the time each takes.

    .venv/bin/python benchmarks/bench_import.py --count 10000 --runs 3 [--json OUT]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from unittest import mock

from _common import machine, median, synthetic_items, write_json

from gitmem.store import commit as commit_module
from gitmem.store.store import Store


def _git_facts(root: Path) -> dict[str, int]:
    out = subprocess.run(
        ["git", "-C", str(root), "count-objects", "-v"], capture_output=True, text=True, check=True
    ).stdout
    facts = dict(line.split(": ") for line in out.splitlines())
    files = [p.stat() for p in (root / ".git").rglob("*") if p.is_file()]
    return {
        "loose": int(facts["count"]),
        "git_bytes": sum(f.st_size for f in files),
        "git_disk_bytes": sum(f.st_blocks * 512 for f in files),  # what du says
    }


def one(count: int, pack: bool) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix="gitmem-import-"))
    try:
        store, _ = Store.init(work / "store")
        items = list(synthetic_items(count))
        limit = commit_module.PACK_AFTER if pack else 10**12
        with mock.patch.object(commit_module, "PACK_AFTER", limit):
            began = time.perf_counter()
            store.import_records(items, agent="bench")
            seconds = time.perf_counter() - began
        return {"seconds": seconds, **_git_facts(store.root)}
    finally:
        shutil.rmtree(work)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"loose": [], "packed": []}
    for _ in range(args.runs):  # alternated
        runs["loose"].append(one(args.count, pack=False))
        runs["packed"].append(one(args.count, pack=True))
    report = {"machine": machine(), "count": args.count, "runs": runs, "median": {}}
    for name, rows in runs.items():
        report["median"][name] = {k: median([r[k] for r in rows]) for k in rows[0]}
        m = report["median"][name]
        print(
            f"{name:7} import {m['seconds']:.2f} s  loose objects {m['loose']:.0f}  "
            f".git {m['git_bytes'] / 1e6:.1f} MB ({m['git_disk_bytes'] / 1e6:.1f} MB on disk)"
        )
    write_json(args.json, report)


if __name__ == "__main__":
    main()
