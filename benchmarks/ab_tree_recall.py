"""`gitmem recall` as a whole process with two source trees, alternated process by process on
one store: the work tree as it is now (uncommitted edits included) against another tree on
disk. For a store whose index only a tree with a local edit can read as it is (the 1M store's
catalog schema held at 2, docs/benchmarks.md), which ab_cli_recall.py's installs of committed
revisions cannot give.

    .venv/bin/python benchmarks/ab_tree_recall.py --base-tree DIR --store STORE \
        [--runs 15] [--extras scale] [--json OUT]

Each tree is installed as a user installs gitmem (`_common.installed_python`: a regular pip
install with `extras`, in benchmarks/.venvs/tree-base-<extras> and tree-head-<extras>), and
each process is that venv's `gitmem recall QUERY` console script, run outside the repository.
Before timing, both trees answer every query once with `--json` at a fixed `--now`, and their
answers must be the same. Queries: bench_recall.queries(runs, seed=9), each timed once a tree,
the order swapped every query; each process's wall time and CPU time (user + system: on a
loaded host the steadier of the two) are reported, as medians and as paired head/base ratios.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import _worktree, installed_env, installed_python, machine, median, outside, write_json
from bench_recall import queries

NOW = "2026-12-06T00:00:00Z"  # one moment for both trees' answers (decay depends on it)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base-tree", required=True, help="A source tree with pyproject.toml.")
    parser.add_argument("--store", required=True)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--extras", default="scale")
    parser.add_argument("--json")
    args = parser.parse_args()
    store = str(Path(args.store).resolve())
    commands: dict[str, Path] = {}
    envs: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        sources = {"base": Path(args.base_tree).resolve(), "head": _worktree(Path(tmp))}
        for name, source in sources.items():
            python = installed_python(source, f"tree-{name}-{args.extras}", args.extras)
            envs[name] = installed_env(python, {**os.environ, "GITMEM_STORE": store})
            commands[name] = python.parent / "gitmem"  # the command a user runs
    asked = queries(args.runs, seed=9)
    for q in asked:
        answers = {
            name: _run([str(commands[name]), "recall", q, "--json", "--now", NOW], envs[name])
            for name in ("base", "head")
        }
        if answers["base"] != answers["head"]:
            sys.exit(f"the trees answer {q!r} differently")
    load_before = os.getloadavg()[0]
    times: dict[str, list[float]] = {"base": [], "head": []}
    cpu: dict[str, list[float]] = {"base": [], "head": []}  # user + system, the process's
    for run, q in enumerate(asked):
        for name in ("base", "head") if run % 2 == 0 else ("head", "base"):
            before = _children_cpu()
            start = time.perf_counter()
            _run([str(commands[name]), "recall", q], envs[name])
            times[name].append((time.perf_counter() - start) * 1000)
            cpu[name].append((_children_cpu() - before) * 1000)
    load_after = os.getloadavg()[0]
    paired = [h / b for h, b in zip(times["head"], times["base"], strict=True)]
    paired_cpu = [h / b for h, b in zip(cpu["head"], cpu["base"], strict=True)]
    result: dict[str, Any] = {
        "machine": machine(),
        "store": store,
        "base_tree": str(sources["base"]),
        "runs": args.runs,
        "load_average": [load_before, load_after],
        "base_ms": median(times["base"]),
        "head_ms": median(times["head"]),
        "head_over_base": median(paired),
        "base_cpu_ms": median(cpu["base"]),
        "head_cpu_ms": median(cpu["head"]),
        "head_over_base_cpu": median(paired_cpu),
        "times_ms": times,
        "cpu_ms": cpu,
    }
    print(
        f"gitmem recall, whole process, median of {args.runs}: base {result['base_ms']:.0f} ms,"
        f" head {result['head_ms']:.0f} ms, head/base {result['head_over_base']:.2f}"
        f" (paired); CPU: base {result['base_cpu_ms']:.0f} ms, head {result['head_cpu_ms']:.0f} ms,"
        f" head/base {result['head_over_base_cpu']:.2f}; load average {load_before:.1f} ->"
        f" {load_after:.1f}",
        flush=True,
    )
    write_json(args.json, result)


def _children_cpu() -> float:
    """Seconds of CPU (user and system) the finished children of this process have used: on a
    loaded host, what a process costs, where its wall time is mostly waiting for a core."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _run(cmd: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env, cwd=outside())
    return done.stdout


if __name__ == "__main__":
    main()
