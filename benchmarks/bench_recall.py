"""Search figures at scale: full rebuild, incremental update after 100 commits, recall latency
in-process (hybrid), `gitmem recall` as a whole process with its breakdown, and resident memory.

    .venv/bin/python benchmarks/bench_recall.py --model benchmarks/.models/minilm-distilled-256 \
        [--records 100000] [--json out.json]

The model is the 256-dimension static model `make bench-model` distils (see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import WORDS, machine, make_store, median, write_json

from gitmem.api import Store

QUERY_WORDS = WORDS


def queries(count: int, seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(QUERY_WORDS) for _ in range(rng.randint(2, 6))) for _ in range(count)
    ]


def configure_model(root: Path, model: str) -> None:
    """Point the store's config at the model directory, as a user would."""
    config = root / "config.toml"
    text = config.read_text().replace(
        'model = "minishlab/potion-base-8M"', f'model = "{Path(model).resolve()}"'
    )
    config.write_text(text)
    subprocess.run(
        ["git", "-C", str(root), "commit", "-qam", "use the benchmark model"], check=True
    )


def child(code: str, root: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


IN_PROCESS = """
import json, sys, time
sys.path.insert(0, "benchmarks")
from pathlib import Path
from bench_recall import queries
from gitmem.api import Store
store = Store.open(Path(sys.argv[1]))
start = time.perf_counter()
store.recall("warm up the index and the model")
warm = time.perf_counter() - start
times = []
for q in queries(200):
    start = time.perf_counter()
    store.recall(q, limit=10)
    times.append(time.perf_counter() - start)
times.sort()
# VmHWM, not ru_maxrss: the latter keeps the parent's high-water mark across fork and exec.
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM")][0]
rss = int(hwm.split()[1]) / 1024
print(json.dumps({"first_ms": warm * 1000, "p50_ms": times[len(times) // 2] * 1000,
                  "p95_ms": times[int(len(times) * 0.95)] * 1000, "max_rss_mb": rss}))
"""

MODEL_LOAD = """
import json, sys, time
from pathlib import Path
start = time.perf_counter()
from gitmem.api import Store
store = Store.open(Path(sys.argv[1]))
ref = store.model()
t0 = time.perf_counter(); ref.get().encode(["warm"]); load = time.perf_counter() - t0
print(json.dumps({"model_load_ms": load * 1000}))
"""


def whole_process(root: Path, runs: int) -> dict[str, float]:
    env = {**os.environ, "GITMEM_STORE": str(root)}

    def wall(cmd: list[str]) -> float:
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
        return time.perf_counter() - start

    recall = [
        wall([sys.executable, "-m", "gitmem", "recall", q, "--limit", "10"])
        for q in queries(runs, seed=9)
    ]
    startup = [wall([sys.executable, "-c", "pass"]) for _ in range(runs)]
    imports = [wall([sys.executable, "-c", "import gitmem.cli"]) for _ in range(runs)]
    loads = [child(MODEL_LOAD, root)["model_load_ms"] for _ in range(runs)]
    return {
        "recall_ms": median(recall) * 1000,
        "python_startup_ms": median(startup) * 1000,
        "import_cli_ms": (median(imports) - median(startup)) * 1000,
        "model_load_ms": median(loads),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--cli-runs", type=int, default=7)
    parser.add_argument("--json")
    args = parser.parse_args()
    results: dict[str, object] = {"machine": machine(), "records": args.records}

    start = time.perf_counter()
    root = make_store(args.records)
    configure_model(root, args.model)
    print(
        f"store of {args.records} records built in {time.perf_counter() - start:.0f} s", flush=True
    )

    store = Store.open(root)
    start = time.perf_counter()
    stats = store.rebuild()
    results["rebuild_s"] = time.perf_counter() - start
    results["index_bytes"] = stats["bytes"]
    print(
        f"full rebuild (embeddings included): {results['rebuild_s']:.1f} s, "
        f"index {stats['bytes'] / 1e6:.0f} MB, {stats['vectors']} vectors",
        flush=True,
    )

    for i in range(100):
        store.record("fact", f"New fact {i} about {random.choice(WORDS)}.", title=f"New fact {i}")
    start = time.perf_counter()
    store.index()
    results["incremental_100_commits_s"] = time.perf_counter() - start
    print(
        f"incremental update after 100 commits: {results['incremental_100_commits_s']:.2f} s",
        flush=True,
    )

    figures = [child(IN_PROCESS, root) for _ in range(3)]
    results["recall_in_process"] = {key: median([f[key] for f in figures]) for key in figures[0]}
    r = results["recall_in_process"]
    print(
        f"recall in-process, hybrid: p50 {r['p50_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms, "  # type: ignore[index]
        f"max RSS {r['max_rss_mb']:.0f} MB (median of 3 processes × 200 queries)",
        flush=True,
    )  # type: ignore[index]

    cli = whole_process(root, args.cli_runs)
    results["cli_recall"] = cli
    print(
        f"gitmem recall, whole process: {cli['recall_ms']:.0f} ms (python start "
        f"{cli['python_startup_ms']:.0f} ms, import gitmem.cli {cli['import_cli_ms']:.0f} ms, "
        f"model load {cli['model_load_ms']:.0f} ms)",
        flush=True,
    )
    write_json(args.json, results)


if __name__ == "__main__":
    main()
