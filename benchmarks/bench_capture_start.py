"""What capture's sweep costs SessionStart (issue 20): the hook, whole process as a host runs
it, with capture on (a detached `gitmem distill --sweep` is spawned, since a session was noted)
and off (GITMEM_CAPTURE=off: nothing is spawned), alternated run by run; median of --runs each.

    .venv/bin/python benchmarks/bench_capture_start.py [--runs 15] [--json OUT]

The store holds one noted session (so the sweep has a reason to start) and a distiller that
answers at once (/bin/true); each spawned sweep is given 1.5 s to finish before the next run.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import compiled, machine, median, write_json
from bench_capture import claude_line, enqueue, new_store, timed_hook


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json")
    args = parser.parse_args()
    root = new_store([], 'command = ["/bin/true"]\n')
    enqueue(root, [claude_line(i, random.Random(1)) for i in range(5)])
    project = Path(tempfile.mkdtemp(prefix="gitmem-bench-project-"))
    env = compiled({**os.environ, "GITMEM_STORE": str(root)})
    times: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(args.runs):
        for mode in ("on", "off"):
            event = {
                "session_id": f"s-{mode}",
                "cwd": str(project),
                "hook_event_name": "SessionStart",
                "source": "startup",
            }
            times[mode].append(timed_hook("session-start", event, env, mode))
            if mode == "on":
                time.sleep(1.5)  # the spawned sweep finishes before the next run
    result = {
        "machine": machine(),
        "load": os.getloadavg()[0],
        "session_start_ms": {mode: {"median": median(v), "all": v} for mode, v in times.items()},
    }
    on, off = median(times["on"]), median(times["off"])
    print(
        f"SessionStart whole process (load {result['load']:.1f}, median of {args.runs}): "
        f"capture on {on:.1f} ms, off {off:.1f} ms, the sweep's spawn {on - off:+.1f} ms"
    )
    write_json(args.json, result)


if __name__ == "__main__":
    main()
