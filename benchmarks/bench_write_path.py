"""The write path's cost as the store grows: in-process `Store.record` at 1k and 100k records,
the code of a base revision ("before", default `main`) against the work tree's ("after", as
it is when the run starts, uncommitted edits included: the JSON says so),
alternated write by write over both sizes in one run, so that a busy machine weighs on all
four alike and the 100k/1k ratio is measured in the same minutes.

Each (revision, size) pair is a worker process holding a Store open on its own copy of one
synthetic store; a write's wall and CPU time are taken inside the worker, around
`Store.record` only. Then a fold (a `forget` of a record in the shared index, which rewrites
it whole) and `git status` clean and `git fsck` in every copy.

    .venv/bin/python benchmarks/bench_write_path.py [--sizes 1000,100000] [--writes 41]
        [--before main] [--store 100000=/path/to/a/store/to/copy] [--prefill 900]

`--prefill N` stages N records into git's split part first (the same entries again), so
that the writes meet it as full as it gets before a fold (FOLD_AT, 1000) rather than just
after one; a store's writes meet every size in between.

(The libgit2 plain-index path and git's `git update-index` that the split index replaced
were measured by this script's earlier version, at commit 2f8dc8f; docs/benchmarks.md.)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, _worktree, checkout, machine, make_store, percentile, write_json

WORKER = r"""
import json, sys, time
from pathlib import Path
import gitmem
from gitmem.store.store import Store
store = Store.open(Path(sys.argv[1]))
for n in range(2):  # warm: the catalog read, a first fold of an imported index
    store.record("fact", f"warm up {n}", title=f"Warm up {n}", agent="bench")
prefill = int(sys.argv[2])
if prefill:  # the split part as full as it gets before a fold: records staged again, as is
    import pygit2
    from gitmem.store import gitindex
    repo = pygit2.Repository(sys.argv[1])
    paths = []
    def walk(tree, prefix):
        for e in tree:
            if len(paths) >= prefill:
                return
            if e.type_str == "tree":
                walk(repo[e.id], prefix + e.name + "/")
            elif prefix.startswith("records/"):
                paths.append((prefix + e.name, e.id.raw))
    walk(repo.head.peel(pygit2.Commit).tree, "")
    root = Path(sys.argv[1])
    entries = {p: gitindex.entry_for(p, oid, (root / p).lstat()) for p, oid in paths}
    gitindex.stage(root / ".git", entries, root=root)
print(json.dumps({"package": gitmem.__file__}), flush=True)
for line in sys.stdin:
    command, _, arg = line.strip().partition(" ")
    if command == "write":
        t0, c0 = time.perf_counter(), time.process_time()
        store.record("decision", f"Body {arg}.\n", title=f"Decision {arg}", agent="bench")
        out = {"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}
    elif command == "forget":  # a record of the store's own: in the shared index
        victim = next(r for r in store.records() if r.agent != "bench")
        t0 = time.perf_counter()
        store.forget(victim.id, reason="bench", agent="bench")
        out = {"wall": time.perf_counter() - t0}
    print(json.dumps(out), flush=True)
"""


class Worker:
    def __init__(self, root: Path, package_dir: Path, prefill: int) -> None:
        # `-c` puts the working directory first on sys.path, ahead of PYTHONPATH and of the
        # dev install's finder: the worker imports the gitmem in `package_dir` (checked).
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(root), str(prefill)],
            cwd=package_dir,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(package_dir)},
        )
        self.root = root
        self.package = self._reply()["package"]
        assert self.package.startswith(str(package_dir)), (self.package, package_dir)

    def _reply(self) -> dict[str, float | str]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the worker on {self.root} died")
        result: dict[str, float | str] = json.loads(line)
        return result

    def ask(self, command: str) -> dict[str, float | str]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self._reply()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def stores(size: int, given: Path | None, into: Path) -> dict[str, Path]:
    """Two copies of one store of `size` records (built, or copied from `given`)."""
    source = given or make_store(size)
    copies = {}
    for name in ("before", "after"):
        copies[name] = into / f"{size}-{name}"
        shutil.copytree(source, copies[name], symlinks=True)
    if given is None:
        shutil.rmtree(source.parent, ignore_errors=True)
    return copies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--writes", type=int, default=41)
    parser.add_argument("--before", default="main", help="the base revision")
    parser.add_argument("--store", action="append", default=[], help="SIZE=PATH to copy")
    parser.add_argument(
        "--prefill",
        type=int,
        default=0,
        help="records staged into the split part first (its size just before a fold: 900)",
    )
    parser.add_argument("--json")
    args = parser.parse_args()
    given = {int(k): Path(v) for k, v in (s.split("=", 1) for s in args.store)}
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[str, object] = {
        "machine": machine(),
        "before": args.before,
        "prefill": args.prefill,
    }
    with tempfile.TemporaryDirectory(prefix="gitmem-bench-write-") as tmp:
        work = Path(tmp)
        (work / "before-src").mkdir()
        (work / "after-src").mkdir()
        # Both snapshots now: edits made while the stores are copied do not reach the run.
        packages = {
            "before": checkout(args.before, work / "before-src"),
            "after": _worktree(work / "after-src"),
        }
        results["revisions"] = {
            "before": _git(REPO, "rev-parse", args.before).strip(),
            "after": _git(REPO, "rev-parse", "HEAD").strip(),
            "after_edited": bool(_git(REPO, "status", "--porcelain", "--", "gitmem")),
        }
        workers: dict[tuple[int, str], Worker] = {}
        for size in sizes:
            for name, root in stores(size, given.get(size), work).items():
                workers[(size, name)] = Worker(root, packages[name], args.prefill)
        results["load_before"] = os.getloadavg()[0]
        times: dict[tuple[int, str], list[dict[str, float | str]]] = {k: [] for k in workers}
        keys = list(workers)
        for i in range(args.writes):
            for key in keys if i % 2 else reversed(keys):
                times[key].append(workers[key].ask(f"write {i}"))
        results["load_after"] = os.getloadavg()[0]
        for (size, name), worker in workers.items():
            fold = worker.ask("forget")["wall"]
            worker.close()
            assert _git(worker.root, "status", "--porcelain") == "", worker.root
            _git(worker.root, "fsck", "--no-dangling")
            wall = [float(t["wall"]) for t in times[(size, name)]]
            cpu = [float(t["cpu"]) for t in times[(size, name)]]
            results[f"{size}_{name}"] = figures = {
                "p50_ms": percentile(wall, 0.5) * 1000,
                "p95_ms": percentile(wall, 0.95) * 1000,
                "cpu_p50_ms": percentile(cpu, 0.5) * 1000,
                "fold_forget_ms": float(fold) * 1000,
            }
            print(
                f"{size:>6} records, {name:<6}: record p50 {figures['p50_ms']:.1f} ms (p95 "
                f"{figures['p95_ms']:.1f}, CPU p50 {figures['cpu_p50_ms']:.1f}); a fold "
                f"(forget) {figures['fold_forget_ms']:.0f} ms",
                flush=True,
            )
    for name in ("before", "after"):
        if len(sizes) > 1:
            big, small = results[f"{sizes[-1]}_{name}"], results[f"{sizes[0]}_{name}"]
            assert isinstance(big, dict) and isinstance(small, dict)
            print(
                f"{name}: {sizes[-1]}/{sizes[0]} p50 ratio {big['p50_ms'] / small['p50_ms']:.2f}, "
                f"CPU {big['cpu_p50_ms'] / small['cpu_p50_ms']:.2f}"
            )
    print(
        f"load {results['load_before']:.1f} -> {results['load_after']:.1f}; {results['revisions']}"
    )
    write_json(args.json, results)


if __name__ == "__main__":
    main()
