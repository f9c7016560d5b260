"""`gitmem report --html` and `gitmem stats` on a 10k-record store: whole-process time and the
page's size (issue 23's budget: file <= 2 MB, generated <= 3 s with 10k records).

    .venv/bin/python benchmarks/bench_report.py [--records 10000] [--runs 5] [--json out.json]

The store: `--records` synthetic records (two years of them, seven types, three agents) in one
import, 40 decision supersede chains of three, and a history as long as the record count (each
record a commit of its own, as a store written by agents has): the extra commits are made
directly with pygit2, empty, with the trailers gitmem writes (record, supersede, forget), since
writing 10k records one command at a time would take the benchmark ten minutes. The report
reads the history's trailers, so its length is what costs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pygit2
from _common import machine, make_store, median, write_json

from gitmem.api import Store

GITMEM = str(Path(sys.executable).with_name("gitmem"))


def add_history(root: Path, commits: int) -> None:
    repo = pygit2.Repository(str(root))
    sig = pygit2.Signature("bench", "bench@example.com")
    parent = repo.head.target
    tree = repo[parent].tree.id
    kinds = ["record"] * 8 + ["supersede", "forget"]
    for i in range(commits):
        op = kinds[i % len(kinds)]
        message = f"{op}(fact): bench {i}\n\nGitmem-Operation: {op}\nGitmem-Record: bench-{i}\n"
        parent = repo.create_commit(None, sig, sig, message, tree, [parent])
    repo.references["refs/heads/main"].set_target(parent)


def add_chains(store: Store, chains: int) -> None:
    for i in range(chains):
        first = store.record("decision", f"Option A for area {i}.", title=f"Area {i}: option A")
        second = store.supersede(first.record.id, f"Option B for area {i}.", title=f"Area {i}: B")
        store.supersede(second.record.id, f"Option C for area {i}.", title=f"Area {i}: option C")


def timed(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    root = make_store(args.records)
    store = Store.open(root)
    add_chains(store, 40)
    add_history(root, args.records)
    env = {**os.environ, "GITMEM_STORE": str(root), "GITMEM_BACKGROUND_INDEX": "off"}
    out = root.parent / "report.html"
    report = [GITMEM, "report", "--html", str(out)]
    stats = [GITMEM, "stats", "--json"]
    subprocess.run([GITMEM, "rebuild"], env=env, check=True, capture_output=True)
    timed(report, env)  # warm: the page cache, the timeline of nothing
    rounds: dict[str, list[float]] = {"report": [], "stats": []}
    for _ in range(args.runs):  # alternated
        rounds["report"].append(timed(report, env))
        rounds["stats"].append(timed(stats, env))
    size = out.stat().st_size
    commits = int(
        subprocess.run(
            ["git", "rev-list", "--count", "HEAD"], cwd=root, capture_output=True, text=True
        ).stdout
    )
    result = {
        "machine": machine(),
        "load": os.getloadavg()[0],
        "records": args.records + 120,
        "commits": commits,
        "report_s": {"median": median(rounds["report"]), "all": rounds["report"]},
        "stats_s": {"median": median(rounds["stats"]), "all": rounds["stats"]},
        "report_bytes": size,
    }
    print(
        f"{result['records']} records, {commits} commits (load {result['load']:.1f}): "
        f"report {result['report_s']['median']:.2f} s (median of {args.runs}), "
        f"{size / 1e6:.2f} MB; stats {result['stats_s']['median']:.2f} s"
    )
    write_json(args.json, result)


if __name__ == "__main__":
    main()
