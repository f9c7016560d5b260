"""`gitmem recall` as a whole process with the code of two git revisions, alternated process by
process on one store (the machine's hour moves this figure by a quarter; a ratio is honest).

    .venv/bin/python benchmarks/ab_cli_recall.py --base 6499ec2 --store STORE [--runs 20]

Each process is the `gitmem recall QUERY` command of a regular install of the revision
(`pip install` of its tree, not the editable dev install) in benchmarks/.venvs/ab-<revision>,
made on the first run and reused while the revision's package files stay the same. When the
head's index format differs, give it a copy of the store whose index it has built:
`--head-store COPY` (as ab_recall.py), or each process would rebuild the other's index.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from _common import REPO, checkout, installed_env, installed_python, machine, outside, write_json


def install(revision: str) -> Path:
    """The python of a venv where `revision` is installed."""
    short = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", revision],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        return installed_python(checkout(revision, Path(tmp), whole_tree=True), f"ab-{short}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", required=True)
    parser.add_argument("--head", default="HEAD")
    parser.add_argument("--store", required=True)
    parser.add_argument("--head-store", help="The head's copy of STORE (default: STORE).")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--query", default="webhook retry policy deploy")
    parser.add_argument("--json")
    args = parser.parse_args()
    stores = {"base": args.store, "head": args.head_store or args.store}
    commands, envs = {}, {}
    for name in ("base", "head"):
        python = install(getattr(args, name))
        store = str(Path(stores[name]).resolve())
        envs[name] = installed_env(python, {**os.environ, "GITMEM_STORE": store})
        commands[name] = python.parent / "gitmem"  # the command a user runs
    times: dict[str, list[float]] = {"base": [], "head": []}
    for run in range(args.runs):
        for name in ("base", "head") if run % 2 == 0 else ("head", "base"):
            start = time.perf_counter()
            subprocess.run(
                [str(commands[name]), "recall", args.query],
                cwd=outside(),
                env=envs[name],
                capture_output=True,
                check=True,
            )
            times[name].append((time.perf_counter() - start) * 1000)
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, value in medians.items():
        print(f"{name} ({getattr(args, name)}): median {value:.0f} ms of {args.runs} processes")
    ratio = medians["head"] / medians["base"]
    print(f"head / base {ratio:.2f} (load {os.getloadavg()[0]:.2f})")
    write_json(args.json, {"machine": machine(), **times, "medians": medians, "ratio": ratio})


if __name__ == "__main__":
    main()
