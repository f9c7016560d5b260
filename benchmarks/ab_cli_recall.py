"""`gitmem recall` as a whole process with the code of two git revisions, alternated process by
process on one store (the machine's hour moves this figure by a quarter; a ratio is honest).

    .venv/bin/python benchmarks/ab_cli_recall.py --base 6499ec2 --store STORE [--runs 20]

Each process is `gitmem recall QUERY` through gitmem's entry point, run inside the unpacked
revision with its bytecode compiled first (as an installed package has it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import checkout, compiled, machine, write_json

ENTRY = (
    "import sys; sys.argv = ['gitmem', 'recall', sys.argv[1]]\n"
    "from gitmem.__main__ import main\n"
    "main()\n"
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--head", default="HEAD")
    parser.add_argument("--store", required=True)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--query", default="webhook retry policy deploy")
    parser.add_argument("--json")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["GITMEM_STORE"] = str(Path(args.store).resolve())
    times: dict[str, list[float]] = {"base": [], "head": []}
    with tempfile.TemporaryDirectory() as tmp:
        sources = {}
        for name in ("base", "head"):
            (Path(tmp) / name).mkdir()
            sources[name] = checkout(getattr(args, name), Path(tmp) / name)
            compiled(env, sources[name])
        for run in range(args.runs):
            for name in ("base", "head") if run % 2 == 0 else ("head", "base"):
                start = time.perf_counter()
                subprocess.run(
                    [sys.executable, "-c", ENTRY, args.query],
                    cwd=sources[name],  # `-c` imports from here first: this revision's gitmem
                    env={**env, "PYTHONPATH": str(sources[name])},
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
