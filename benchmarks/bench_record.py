"""Record latency in-process at several store sizes, `gitmem record` whole-process wall time
(the quick path, the full CLI and where the time goes), and the import of 10k records.

    .venv/bin/python benchmarks/bench_record.py [--sizes 1000,10000,100000] [--json out.json]

The process figures come from a regular install of the work tree (`pip install`, not the
editable dev install) in benchmarks/.venvs/worktree, made on the first run and again whenever
the package's files change.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    installed_env,
    installed_worktree,
    last_json,
    machine,
    make_store,
    outside,
    percentile,
    process_figures,
    synthetic_items,
    write_json,
)

from gitmem.store.git import GitRepo
from gitmem.store.store import Store


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


# The quick record path (gitmem/cli/quickrecord.py) one stage after the other, in one process:
# where a `gitmem record` process spends its time after Python has started.
STAGES = """
import contextlib, io, json, os, sys, time
from pathlib import Path
marks = [time.perf_counter()]
names = []
def mark(name):
    marks.append(time.perf_counter()); names.append(name)
import pygit2
mark("import_pygit2_ms")
from gitmem.cli import quickrecord
mark("import_gitmem_ms")
import gitmem.store.guard
mark("import_guard_ms")
request = quickrecord.parse(sys.argv[2:-1])
store = quickrecord.Store.open(Path(sys.argv[1]))
mark("open_store_ms")
result = store.record(request.type, request.body, title=request.values["title"])
mark("write_ms")
from gitmem.cli.writeinput import report_write  # quickrecord has imported it
with contextlib.redirect_stdout(io.StringIO()):
    report_write(result, False)
mark("output_ms")
assert quickrecord.__file__.startswith(sys.argv[-1]), quickrecord.__file__  # the installed one
print(json.dumps({n: (marks[i + 1] - marks[i]) * 1000 for i, n in enumerate(names)}))
"""
# `gitmem record` as it was before the quick path: gitmem's entry point, straight to typer.
FULL_CLI = "from gitmem import __main__ as m; m.QUICK_PATHS.pop('record'); m.main()"


def whole_process(root: Path, runs: int) -> dict[str, float]:
    """`gitmem record` as a process (the quick path), the full CLI forced for the same kind of
    record, `python -c pass`, `import gitmem.cli.writes` (the app and the record command) and
    the quick path's stages, alternated run by run so that a busy machine weighs on all alike.
    Medians. Each runs the work tree installed as a user installs gitmem, outside the
    repository."""
    root = root.resolve()  # the children run elsewhere
    python = installed_worktree()
    venv = str(python.parent.parent)
    env = installed_env(python, {**os.environ, "GITMEM_STORE": str(root)})

    def wall(cmd: list[str]) -> tuple[float, float]:
        """Wall time and the child's CPU time (user + system), in ms: on a shared machine the
        CPU time says what the process needs when it has a core to itself."""
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env, cwd=outside())
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - used.ru_utime + after.ru_stime - used.ru_stime
        return elapsed * 1000, cpu * 1000

    times: dict[str, list[float]] = {}
    stages: list[dict[str, float]] = []
    for i in range(runs):
        record = ["record", "fact", f"cli body {i}", "--title"]
        for name, cmd in [
            ("record_ms", [str(python), "-m", "gitmem", *record, f"CLI fact {i}"]),
            ("full_cli_ms", [str(python), "-c", FULL_CLI, *record, f"Full CLI fact {i}"]),
            ("python_startup_ms", [str(python), "-c", "pass"]),
            ("import_cli_ms", [str(python), "-c", "import gitmem.cli.writes"]),
        ]:
            elapsed, cpu = wall(cmd)
            times.setdefault(name, []).append(elapsed)
            times.setdefault(name.replace("_ms", "_cpu_ms"), []).append(cpu)
        stage = [str(python), "-c", STAGES, str(root), *record[1:], f"Stages fact {i}", venv]
        stages.append(last_json(stage, env, outside()))
    return process_figures(times, stages)


def report_cli(cli: dict[str, float]) -> None:
    processes = ("record", "full_cli", "python_startup", "import_cli")
    stages = ", ".join(
        f"{key.removesuffix('_ms').replace('_', ' ')} {value:.0f}"
        for key, value in cli.items()
        if key.endswith("_ms") and key.removesuffix("_ms").removesuffix("_cpu") not in processes
    )

    def both(name: str) -> str:
        return f"{cli[name + '_ms']:.0f} ms (CPU {cli[name + '_cpu_ms']:.0f})"

    print(
        f"gitmem record, whole process (1k store): {both('record')}; the full CLI: "
        f"{both('full_cli')}; python start {both('python_startup')}, import gitmem.cli.writes "
        f"{both('import_cli')}; quick path stages in ms: {stages}; "
        f"load average {cli['load_average']:.1f}",
        flush=True,
    )


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
            report_cli(cli)
    seconds = import_speed(10_000)
    results["import_10k_s"] = seconds
    print(f"import of 10k records: {seconds:.1f} s")
    write_json(args.json, results)


if __name__ == "__main__":
    main()
