"""What finding index damage costs (issue 26), on an existing index, read only.

    .venv/bin/python benchmarks/bench_verify.py STORE/.gitmem/index [--runs 200]

Prints: the keyword index's files and bytes; the manifest a build records (every file's
CRC-32, read cold or from the page cache) and a catch-up's (checksums of unchanged files
reused); the check at every open (`verify.quick`: sizes, and checksums of files up to
verify.SMALL; median and p95 of --runs); and doctor's full check of the files (`verify.full`).
Nothing is written: the manifest is computed in memory, not stored.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from _common import machine, median, percentile

from gitmem.index import verify


def _timed(call: object, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        call()  # type: ignore[operator]
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("index", type=Path)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    root: Path = args.index
    start = time.perf_counter()
    recorded = verify.manifest(root)
    build_ms = (time.perf_counter() - start) * 1000
    files = json.loads(recorded)
    small = sum(1 for size, _ in files.values() if size <= verify.SMALL)
    catch_up = _timed(lambda: verify.manifest(root, recorded), 20)
    quick = _timed(lambda: verify.quick(root, recorded), args.runs)
    full = _timed(lambda: verify.full(root, recorded), 5)
    print(json.dumps(machine()))
    print(
        f"files {len(files)} ({small} up to {verify.SMALL} bytes), "
        f"{sum(s for s, _ in files.values()) / 1e6:.1f} MB"
    )
    print(f"manifest at a build: {build_ms:.0f} ms; at a catch-up: {median(catch_up):.2f} ms")
    print(f"check at open: median {median(quick):.3f} ms, p95 {percentile(quick, 0.95):.3f} ms")
    print(f"doctor's check of the files: median {median(full):.0f} ms")


if __name__ == "__main__":
    main()
