"""Many devices, one remote: N clones (one process each) write records and sync in a loop.

Each clone is a separate `gitmem clone` of one bare remote on this machine, run by its own
process through the Python API (Store.record, gitmem.sync.sync.sync, as `gitmem sync` does):
write --per-sync records, sync, again, for --duration seconds. Then every clone syncs twice
more, one after the other (the final rounds), and the script checks what must hold:

- 0 records lost: every record any clone wrote is in every clone's HEAD tree;
- 0 conflict markers in any clone's tree; `git fsck --strict` clean on the remote and clones;
- all clones identical at the end (one tree id), and the remote's branch holds that tree
  (what a plain `git clone` checks out);

and reports records landed per second, push rejections per record (pushes git refused, each
of which costs a fetch-merge-push round; with device refs a refused *branch* push is counted
apart, since it is not retried), sync p50/p95 and the commits the remote holds.

--code DIR runs the clones with another gitmem source tree first on PYTHONPATH (for the
before/after: `git archive main | tar -x -C DIR`), same dependencies.

    .venv/bin/python benchmarks/sim_devices.py --clones 20 --duration 300 [--code DIR]
        [--json benchmarks/results/sim_devices.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, percentile, write_json

HERE = Path(__file__).resolve().parent

WORKER = r"""
import json, os, sys, time
from pathlib import Path
import gitmem
from gitmem.api import Store
from gitmem.errors import GitmemError
from gitmem.sync.sync import MAX_ATTEMPTS, sync

mode = sys.argv[1]
if mode == "seed":
    from gitmem.sync.gitcli import set_remote
    store, _ = Store.init(Path(sys.argv[2]))
    set_remote(store.root, "origin", sys.argv[3], os.environ, add=True)
    sync(store, os.environ, index=False)
elif mode == "clone":
    from gitmem.sync.clone import clone
    clone(sys.argv[2], Path(sys.argv[3]), os.environ)
elif mode == "run":
    import importlib
    phases = {}
    def timed(name, fn):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                key = args[0][0] if name == "git" else name
                phases[key] = phases.get(key, 0.0) + time.perf_counter() - start
        return wrapper
    for module in ("gitmem.sync.sync", "gitmem.sync.devices"):
        try:
            loaded = importlib.import_module(module)
        except ImportError:
            continue
        loaded.run_git = timed("git", loaded.run_git)
    sync_module = importlib.import_module("gitmem.sync.sync")
    sync_module.integrate = timed("integrate", sync_module.integrate)
    root, tag, until, per_sync = sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
    store = Store.open(Path(root))
    ids, seconds = [], []
    rejected = branch_refused = failures = 0
    errors = []
    n = 0
    while time.time() < until:
        for _ in range(per_sync):
            ids.append(store.record("fact", f"{tag} wrote note {n} about topic {n % 17}",
                                    title=f"{tag} note {n}").record.id)
            n += 1
        start = time.perf_counter()
        try:
            result = sync(store, os.environ, index=False, timeout=120)
        except GitmemError as exc:
            seconds.append(time.perf_counter() - start)
            failures += 1
            if "kept moving" in str(exc):
                rejected += MAX_ATTEMPTS
            errors.append(str(exc)[:300])
            continue
        seconds.append(time.perf_counter() - start)
        rejected += result.attempts - 1
        branch_refused += getattr(result, "branch", "") == "refused"
    print(json.dumps({"ids": ids, "seconds": seconds, "rejected": rejected,
                      "branch_refused": branch_refused, "failures": failures,
                      "errors": errors[:5], "code": gitmem.__file__, "phases": phases}))
elif mode == "final":
    store = Store.open(Path(sys.argv[2]))
    for attempt in range(5):
        try:
            result = sync(store, os.environ, index=False, timeout=300)
            break
        except GitmemError as exc:
            print(exc, file=sys.stderr)
    else:
        sys.exit(1)
    print(json.dumps({"attempts": result.attempts}))
"""


def isolated_env(tmp: Path, code: Path | None) -> dict[str, str]:
    """A throwaway HOME with a git identity, no inherited GIT_*/GITMEM_* settings."""
    home = tmp / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Sim Device\n\temail = sim@gitmem.local\n[init]\n\tdefaultBranch = main\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITMEM_"))}
    env |= {"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "XDG_CONFIG_HOME": str(home)}
    if code is not None:
        env["PYTHONPATH"] = str(code)
    return env


def worker(env: dict[str, str], *args: str, timeout: float = 900) -> str:
    done = subprocess.run(
        [sys.executable, "-c", WORKER, *args],
        env=env,
        cwd=env["HOME"],  # not this checkout: `python -c` puts the working directory first
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(f"worker {args[0]} failed: {done.stderr[-2000:]}")
    return done.stdout


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def record_ids(root: Path, rev: str = "HEAD") -> set[str]:
    names = git(root, "ls-tree", "-r", "--name-only", rev, "records").split()
    return {n.rsplit("/", 1)[-1].removesuffix(".md") for n in names if n.endswith(".md")}


def markers(root: Path) -> int:
    found = subprocess.run(
        ["git", "grep", "-l", "-E", "^(<<<<<<<|>>>>>>>) ", "HEAD"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    return len(found.stdout.split())


def fsck(path: Path) -> bool:
    return (
        subprocess.run(["git", "fsck", "--strict"], cwd=path, capture_output=True).returncode == 0
    )


def simulate(clones: int, duration: float, per_sync: int, code: Path | None) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="gitmem-sim-"))
    env = isolated_env(tmp, code)
    bare = tmp / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True, env=env)
    worker(env, "seed", str(tmp / "seed"), str(bare))
    roots = [tmp / f"clone{c:02d}" for c in range(clones)]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda r: worker(env, "clone", str(bare), str(r)), roots))
    load_before = uptime()
    until = time.time() + duration
    started = time.monotonic()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, "run", str(r), f"c{c:02d}", str(until), str(per_sync)],
            env=env,
            cwd=env["HOME"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for c, r in enumerate(roots)
    ]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=duration + 900)
        if p.returncode != 0:
            raise RuntimeError(f"a clone's process failed: {err[-2000:]}")
        outs.append(json.loads(out))
    elapsed = time.monotonic() - started
    load_after = uptime()
    final_started = time.monotonic()
    final_attempts = []
    for _ in range(2):
        for root in roots:
            final_attempts.append(json.loads(worker(env, "final", str(root)))["attempts"])
    final_seconds = time.monotonic() - final_started
    written = [i for o in outs for i in o["ids"]]
    trees = {git(r, "rev-parse", "HEAD^{tree}").strip() for r in roots}
    lost = max(len(set(written) - record_ids(r)) for r in roots)
    branch_tree = git(bare, "rev-parse", "refs/heads/main^{tree}").strip()
    seconds = [s for o in outs for s in o["seconds"]]
    rejected = sum(o["rejected"] for o in outs)
    return {
        "clones": clones,
        "duration_s": duration,
        "per_sync": per_sync,
        "code": outs[0]["code"],
        "elapsed_s": round(elapsed, 1),
        "records": len(written),
        "distinct_records": len(set(written)),
        "records_per_second": round(len(written) / elapsed, 2),
        "syncs": len(seconds),
        "sync_p50_s": round(percentile(seconds, 0.5), 2),
        "sync_p95_s": round(percentile(seconds, 0.95), 2),
        "push_rejections": rejected,
        "push_rejections_per_record": round(rejected / max(len(written), 1), 4),
        "branch_refused": sum(o["branch_refused"] for o in outs),
        "failed_syncs": sum(o["failures"] for o in outs),
        "errors": [e for o in outs for e in o["errors"]][:5],
        "seconds_in": {
            key: round(sum(o["phases"].get(key, 0.0) for o in outs), 1)
            for key in sorted({k for o in outs for k in o["phases"]})
        },
        "sync_seconds_total": round(sum(seconds), 1),
        "final_rounds_s": round(final_seconds, 1),
        "final_attempts_max": max(final_attempts),
        "records_lost": lost,
        "conflict_markers": sum(markers(r) for r in roots),
        "clone_trees": len(trees),
        "branch_current": trees == {branch_tree},
        "fsck_remote": fsck(bare),
        "fsck_clones": all(fsck(r) for r in roots),
        "remote_commits": int(git(bare, "rev-list", "--count", "--all").strip()),
        "device_refs": len(git(bare, "for-each-ref", "refs/gitmem/devices/").splitlines()),
        "load_before": load_before,
        "load_after": load_after,
        "dir": str(tmp),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clones", type=int, default=20)
    parser.add_argument("--duration", type=float, default=300.0)
    parser.add_argument("--per-sync", type=int, default=1, help="records written per sync")
    parser.add_argument("--code", default="", help="another gitmem source tree to run")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    code = Path(args.code).resolve() if args.code else None
    result = simulate(args.clones, args.duration, args.per_sync, code)
    print(json.dumps(result, indent=1))
    if args.json:
        write_json(args.json, {"machine": machine(), "simulation": result})


if __name__ == "__main__":
    main()
