"""Search figures at scale: full rebuild, incremental update after 100 commits, recall latency
in-process (hybrid), `gitmem recall` as a whole process with its breakdown, and resident memory.

    .venv/bin/python benchmarks/bench_recall.py --model benchmarks/.models/minilm-distilled-256 \
        [--records 100000] [--json out.json]
    ... --recall-only STORE [--in-process-runs 7]   # recall figures only, on a store made before
    ... --cli-only STORE [--cli-runs 7]             # the process figures only
    ... --incremental-only STORE                     # 3 catch-ups of 100 new commits each
    ... --rebuild-only STORE [--rebuild-runs 3]      # full rebuilds of STORE's index

The model is the 256-dimension static model `make bench-model` distils (see docs/benchmarks.md).
The process figures come from a regular install of the work tree (`pip install`, not the
editable dev install) in benchmarks/.venvs/worktree, made on the first run and again whenever
the package's files change.
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
from _common import (
    WORDS,
    installed_env,
    installed_worktree,
    last_json,
    machine,
    make_store,
    median,
    outside,
    process_figures,
    write_json,
)

from gitmem.api import Store
from gitmem.store.config import DEFAULT_MODEL

QUERY_WORDS = WORDS


def queries(count: int, seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(QUERY_WORDS) for _ in range(rng.randint(2, 6))) for _ in range(count)
    ]


def configure_model(root: Path, model: str) -> None:
    """Point the store's config at the model (a directory, or a name such as the default
    "builtin:minilm-256"), as a user would."""
    config = root / "config.toml"
    spec = str(Path(model).resolve()) if Path(model).is_dir() else model
    if spec == DEFAULT_MODEL:
        return  # the store's config names it already
    config.write_text(config.read_text().replace(f'model = "{DEFAULT_MODEL}"', f'model = "{spec}"'))
    subprocess.run(
        ["git", "-C", str(root), "commit", "-qam", "use the benchmark model"], check=True
    )


def store_for(store: str | None, records: int, model: str) -> Path:
    """The store a benchmark rebuilds: `store` as given (made earlier, its config naming the
    model), or a new one of `records` synthetic records using `model`."""
    if store:
        return Path(store)
    root = make_store(records)
    configure_model(root, model)
    return root


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
times, cpu = [], []
for q in queries(200):
    start, used = time.perf_counter(), time.process_time()
    store.recall(q, limit=10)
    times.append(time.perf_counter() - start)
    cpu.append(time.process_time() - used)  # every thread's, BLAS's included: steadier under load
times.sort()
cpu.sort()
# VmHWM, not ru_maxrss: the latter keeps the parent's high-water mark across fork and exec.
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM")][0]
rss = int(hwm.split()[1]) / 1024
print(json.dumps({"first_ms": warm * 1000, "p50_ms": times[len(times) // 2] * 1000,
                  "p95_ms": times[int(len(times) * 0.95)] * 1000, "max_rss_mb": rss,
                  "cpu_p50_ms": cpu[len(cpu) // 2] * 1000}))
"""

# The fast recall path (gitmem/cli/quickrecall.py) one stage after the other, in one process: where
# a `gitmem recall` process spends its time. (The real run overlaps the two halves of the
# search, so its stages do not add up to its wall time exactly.)
STAGES = """
import contextlib, io, json, os, sys, time
from pathlib import Path
marks = [time.perf_counter()]
names = []
def mark(name):
    marks.append(time.perf_counter()); names.append(name)
from gitmem.cli import quickrecall
request = quickrecall.parse([sys.argv[2]])
mark("import_quickrecall_ms")
from gitmem.index.model import configured_model
from gitmem.store.config import load_config
from gitmem.store.location import model_cache
root = Path(sys.argv[1])
model = configured_model(load_config(root).model, root, model_cache(os.environ))
from gitmem.index.index import Index
from gitmem.store.gitfiles import StoreTip
mark("config_model_ref_index_imports_ms")
from gitmem.recall.recall import recall
from gitmem.recall.options import recall_options
mark("import_recall_ms")
model.encode_query("warm")  # the model as a recall reads it (numpy-free where it can be)
mark("model_load_ms")
index = Index(StoreTip(root), model, catch_up=False, rank_without_numpy=True)
result = recall(index, request.query, recall_options(request.arguments(), os.environ))
mark("search_ms")
from gitmem.cli import display
with contextlib.redirect_stdout(io.StringIO()):
    display.recall(request.query, result, as_json=False, explain=False)
mark("output_ms")
assert quickrecall.__file__.startswith(sys.argv[3]), quickrecall.__file__  # the installed one
figures = {n: (marks[i + 1] - marks[i]) * 1000 for i, n in enumerate(names)}
figures["numpy_loaded"] = float("numpy" in sys.modules)  # 1.0: the search took numpy's path
print(json.dumps(figures))
"""
FULL_CLI = "import sys; from gitmem.cli.main import run; sys.exit(run(sys.argv[1:]))"


def whole_process(root: Path, runs: int, extras: str = "") -> dict[str, float]:
    """`gitmem recall` as a process (the fast path), the full CLI forced for the same query,
    `python -c pass` and the stages, alternated so that a busy machine weighs on all alike.
    Each runs the work tree installed as a user installs gitmem (with `extras`), outside the
    repository."""
    root = root.resolve()  # the children run elsewhere
    python = installed_worktree(extras)
    venv = str(python.parent.parent)
    plain = installed_env(python, {**os.environ, "GITMEM_STORE": str(root)})
    env = {**plain, "OPENBLAS_THREAD_TIMEOUT": "4"}

    def wall(cmd: list[str], environ: dict[str, str]) -> float:
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=environ, cwd=outside())
        return (time.perf_counter() - start) * 1000

    times: dict[str, list[float]] = {}
    stages: list[dict[str, float]] = []
    for q in queries(runs, seed=9):
        for name, cmd, environ in [
            ("recall_ms", [str(python), "-m", "gitmem", "recall", q], plain),
            ("full_cli_ms", [str(python), "-c", FULL_CLI, "recall", q], plain),
            ("python_startup_ms", [str(python), "-c", "pass"], plain),
        ]:
            times.setdefault(name, []).append(wall(cmd, environ))
        stages.append(last_json([str(python), "-c", STAGES, str(root), q, venv], env, outside()))
    return process_figures(times, stages)


def report_cli(cli: dict[str, float]) -> None:
    stages = ", ".join(
        f"{key.removesuffix('_ms').replace('_', ' ')} {value:.0f}"
        for key, value in cli.items()
        if key.endswith("_ms") and key not in ("recall_ms", "full_cli_ms", "python_startup_ms")
    )
    print(
        f"gitmem recall, whole process: {cli['recall_ms']:.0f} ms (the full CLI: "
        f"{cli['full_cli_ms']:.0f} ms; python start {cli['python_startup_ms']:.0f} ms; "
        f"stages in ms: {stages}; numpy loaded: {'yes' if cli.get('numpy_loaded') else 'no'}; "
        f"load average {cli['load_average']:.1f})",
        flush=True,
    )


def in_process(root: Path, runs: int) -> dict[str, float]:
    """Median over `runs` processes of each in-process figure (200 queries each)."""
    figures = [child(IN_PROCESS, root) for _ in range(runs)]
    r = {key: median([f[key] for f in figures]) for key in figures[0]}
    r["load_average"] = os.getloadavg()[0]
    print(
        f"recall in-process, hybrid: p50 {r['p50_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms, "
        f"CPU p50 {r['cpu_p50_ms']:.1f} ms, max RSS {r['max_rss_mb']:.0f} MB "
        f"(median of {runs} processes × 200 queries; load {r['load_average']:.2f})",
        flush=True,
    )
    return r


def incremental(store: Store, writes: list[float] | None = None) -> float:
    """Seconds the index takes to catch up with 100 new commits (one record each); each
    write's seconds are appended to `writes` when given."""
    tag = random.randrange(10**6)
    for i in range(100):
        text = f"New fact {tag}-{i} about {random.choice(WORDS)}."
        start = time.perf_counter()
        store.record("fact", text, title=f"New fact {tag} {i}")
        if writes is not None:
            writes.append(time.perf_counter() - start)
    start = time.perf_counter()
    store.index()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--model", default=DEFAULT_MODEL, help="a model dir or name (default: the built-in one)"
    )
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--cli-runs", type=int, default=7)
    parser.add_argument("--json")
    parser.add_argument("--in-process-runs", type=int, default=3)
    parser.add_argument("--cli-only", metavar="STORE", help="Only the process figures, on STORE.")
    parser.add_argument(
        "--incremental-only", metavar="STORE", help="Only catch-ups after 100 commits, on STORE."
    )
    parser.add_argument(
        "--recall-only", metavar="STORE", help="Only the recall figures (in-process, process)."
    )
    parser.add_argument("--rebuild-only", metavar="STORE", help="Only full rebuilds, of STORE.")
    parser.add_argument("--rebuild-runs", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, object] = {"machine": machine(), "records": args.records}
    if args.rebuild_only:  # a store whose config names the model, e.g. one made before
        store = Store.open(Path(args.rebuild_only))
        times = []
        for _ in range(args.rebuild_runs):
            start = time.perf_counter()
            store.rebuild()
            times.append(time.perf_counter() - start)
        results["rebuild_runs_s"] = times
        results["rebuild_s"] = median(times)
        print(f"full rebuild: {[round(t, 1) for t in times]} s, median {median(times):.1f} s")
        write_json(args.json, results)
        return
    if args.recall_only:  # a store with a current index, e.g. one this script built before
        root = Path(args.recall_only)
        results["recall_in_process"] = in_process(root, args.in_process_runs)
        results["cli_recall"] = cli = whole_process(root, args.cli_runs)
        report_cli(cli)
        write_json(args.json, results)
        return
    if args.incremental_only:  # adds 300 records to STORE
        store = Store.open(Path(args.incremental_only))
        store.index()
        times = [incremental(store) for _ in range(3)]
        results["incremental_100_commits_s"] = sorted(times)[1]
        print(f"incremental update after 100 commits: {[round(t, 2) for t in times]} s")
        write_json(args.json, results)
        return
    if args.cli_only:  # a store with a current index, e.g. one this script built before
        results["cli_recall"] = cli = whole_process(Path(args.cli_only), args.cli_runs)
        report_cli(cli)
        write_json(args.json, results)
        return

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

    results["incremental_100_commits_s"] = incremental(store)
    print(
        f"incremental update after 100 commits: {results['incremental_100_commits_s']:.2f} s",
        flush=True,
    )

    results["recall_in_process"] = in_process(root, args.in_process_runs)
    cli = whole_process(root, args.cli_runs)
    results["cli_recall"] = cli
    report_cli(cli)
    write_json(args.json, results)


if __name__ == "__main__":
    main()
