"""What starting the background catch-up costs a `gitmem record` process: whole-process wall
time with GITMEM_BACKGROUND_INDEX off and on, alternated, on a new 1k-record store.

    .venv/bin/python benchmarks/ab_background_record.py [--runs 10] [--gap 3] [--json OUT]

The store's index is built first, so each catch-up is one record's; `--gap` seconds between
runs let it finish before the next write. (From a store without an index, the first write's
catch-up is a full build, which competes with whatever runs next on a 2-core machine.)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from _common import machine, make_store, median, write_json


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--gap", type=float, default=6.0)
    parser.add_argument("--json")
    args = parser.parse_args()
    root = make_store(1000)
    build = [sys.executable, "-m", "gitmem", "recall", "anything"]
    subprocess.run(build, env={**os.environ, "GITMEM_STORE": str(root)}, capture_output=True)
    times: dict[str, list[float]] = {"off": [], "on": []}
    for i in range(args.runs):
        for mode in ("off", "on"):
            env = {**os.environ, "GITMEM_STORE": str(root), "GITMEM_BACKGROUND_INDEX": mode}
            cmd = [sys.executable, "-m", "gitmem", "record", "fact", f"Body {i} {mode}."]
            began = time.perf_counter()
            subprocess.run(
                [*cmd, "--title", f"Note {i} {mode}"], env=env, check=True, capture_output=True
            )
            times[mode].append(time.perf_counter() - began)
            time.sleep(args.gap)
    report = {
        "machine": machine(),
        "load": os.getloadavg(),
        "record_s": times,
        "median": {k: median(v) for k, v in times.items()},
    }
    m = report["median"]
    print(f"gitmem record: catch-up off {m['off'] * 1000:.0f} ms, on {m['on'] * 1000:.0f} ms")
    write_json(args.json, report)


if __name__ == "__main__":
    main()
