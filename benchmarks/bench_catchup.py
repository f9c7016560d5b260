"""The first recall after a run of CLI writes, with the background catch-up
(gitmem.cli.background) on and off, alternated on one store.

Each round makes `--writes` `gitmem record` processes in a row, waits `--gap` seconds (an
agent's next step), then times one `gitmem recall` process; with the catch-up off the
recall pays the catch-up itself. It also reports how long after the last write the index was
current with the catch-up on.

    .venv/bin/python benchmarks/bench_catchup.py --count 10000 --writes 30 --rounds 3 \
        --model benchmarks/.models/minilm-distilled-256 [--json OUT]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import machine, make_store, median, write_json

from gitmem.api import Store
from gitmem.evaluate import model_ref
from gitmem.index.stamp import catalog_stamp
from gitmem.store.gitfiles import head_commit


def _run(root: Path, args: list[str], background: str) -> float:
    env = {**os.environ, "GITMEM_STORE": str(root), "GITMEM_BACKGROUND_INDEX": background}
    began = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "gitmem", *args], env=env, check=True, capture_output=True
    )
    return time.perf_counter() - began


def _current_after(root: Path, limit: float) -> float | None:
    began = time.perf_counter()
    while time.perf_counter() - began < limit:
        if catalog_stamp(root) == head_commit(root / ".git"):
            return time.perf_counter() - began
        time.sleep(0.02)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--writes", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gap", type=float, default=2.0)
    parser.add_argument("--model", required=True)
    parser.add_argument("--json")
    args = parser.parse_args()
    root = make_store(args.count)
    store = Store.open(root)
    store.use_model(model_ref(args.model))
    store.index()
    rows: dict[str, list[float]] = {"on": [], "off": []}
    current: list[float | None] = []
    n = 0
    for _ in range(args.rounds):
        for background in ("off", "on"):
            for _ in range(args.writes):
                n += 1
                body = f"Note {n}: the webhook retry budget is {n} tries."
                _run(root, ["record", "fact", body, "--title", f"Note {n}"], background)
            if background == "on":
                current.append(_current_after(root, 60.0))
            else:
                time.sleep(args.gap)
            rows[background].append(_run(root, ["recall", "webhook retry budget"], background))
            _current_after(root, 60.0)  # nothing of this round left for the next
    report = {
        "machine": machine(),
        "count": args.count,
        "writes": args.writes,
        "recall_s": rows,
        "current_after_last_write_s": current,
        "median": {k: median(v) for k, v in rows.items()},
    }
    print(
        f"first recall after {args.writes} writes at {args.count}: catch-up off "
        f"{report['median']['off'] * 1000:.0f} ms, on {report['median']['on'] * 1000:.0f} ms; "
        f"index current {current} s after the last write"
    )
    write_json(args.json, report)


if __name__ == "__main__":
    main()
