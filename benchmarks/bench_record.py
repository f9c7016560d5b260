"""Record latency in-process at several store sizes, `gitmem record` whole-process wall time,
and the import of 10k records.

    .venv/bin/python benchmarks/bench_record.py [--sizes 1000,10000,100000] [--json out.json]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, make_store, median, percentile, synthetic_items, write_json

from gitmem.git import GitRepo
from gitmem.store import Store


def in_process(root: Path, writes: int) -> dict[str, float]:
    store = Store.open(root)
    store.record("fact", "warm up", title="Warm up", agent="bench")
    spent_in_checkout: list[float] = []
    original = GitRepo._sync_worktree

    def timed(self: GitRepo, files: dict[str, bytes | None]) -> None:
        start = time.perf_counter()
        original(self, files)
        spent_in_checkout.append(time.perf_counter() - start)

    GitRepo._sync_worktree = timed  # type: ignore[method-assign]
    totals = []
    try:
        for i in range(writes):
            start = time.perf_counter()
            store.record(
                "decision",
                f"Body of decision {i}.\n",
                title=f"Decision {i}",
                tags=["bench"],
                agent="bench",
            )
            totals.append(time.perf_counter() - start)
    finally:
        GitRepo._sync_worktree = original  # type: ignore[method-assign]
    return {
        "p50_ms": percentile(totals, 0.5) * 1000,
        "p95_ms": percentile(totals, 0.95) * 1000,
        "worktree_and_git_index_p50_ms": percentile(spent_in_checkout, 0.5) * 1000,
    }


def whole_process(root: Path, runs: int) -> dict[str, float]:
    gitmem = [sys.executable, "-m", "gitmem"]
    env = {**os.environ, "GITMEM_STORE": str(root)}

    def wall(cmd: list[str]) -> float:
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
        return time.perf_counter() - start

    startup = [wall([sys.executable, "-c", "pass"]) for _ in range(runs)]
    imports = [wall([sys.executable, "-c", "import gitmem.cli"]) for _ in range(runs)]
    record = [
        wall([*gitmem, "record", "fact", f"cli body {i}", "--title", f"CLI fact {i}"])
        for i in range(runs)
    ]
    return {
        "record_ms": median(record) * 1000,
        "python_startup_ms": median(startup) * 1000,
        "import_cli_ms": median(imports) * 1000,
    }


def import_speed(count: int) -> float:
    root = make_store(0)
    items = list(synthetic_items(count, seed=11))
    store = Store.open(root)
    start = time.perf_counter()
    store.import_records(items, agent="bench")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--writes", type=int, default=60)
    parser.add_argument("--cli-runs", type=int, default=9)
    parser.add_argument("--json")
    args = parser.parse_args()
    results: dict[str, object] = {"machine": machine(), "record_in_process": {}}
    for size in (int(s) for s in args.sizes.split(",")):
        start = time.perf_counter()
        root = make_store(size)
        built = time.perf_counter() - start
        figures = in_process(root, args.writes)
        results["record_in_process"][size] = figures  # type: ignore[index]
        print(
            f"store of {size:>6}: built in {built:5.1f} s; record p50 {figures['p50_ms']:.1f} ms"
            f", p95 {figures['p95_ms']:.1f} ms (work tree + git index p50 "
            f"{figures['worktree_and_git_index_p50_ms']:.1f} ms)",
            flush=True,
        )
        if size == 1000:
            cli = whole_process(root, args.cli_runs)
            results["cli_1k"] = cli
            print(
                f"gitmem record, whole process (1k store): {cli['record_ms']:.0f} ms "
                f"(python start {cli['python_startup_ms']:.0f} ms, import gitmem.cli "
                f"{cli['import_cli_ms']:.0f} ms)",
                flush=True,
            )
    seconds = import_speed(10_000)
    results["import_10k_s"] = seconds
    print(f"import of 10k records: {seconds:.1f} s")
    write_json(args.json, results)


if __name__ == "__main__":
    main()
