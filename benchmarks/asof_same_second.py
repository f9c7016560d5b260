"""What a write landing on HEAD's effective second costs the next recall at a moment: it adds a
commit at HEAD's second (as two writes in one second, or a clock behind, do), then times a
fresh process's recall one year back and says whether the span index was rebuilt
(docs/benchmarks.md, "Session 15 review: the span index's fixes").

    PYTHONPATH=CODE python benchmarks/asof_same_second.py STORE [--when ...] [--writes 2]

It writes to STORE (commits records): run it on a copy. Run it with the code to measure on
PYTHONPATH; the recall runs in a child process so that nothing is warm.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

RECALL = """
import sys, time
from gitmem.api import Store
t = time.perf_counter()
hits = Store.open(sys.argv[1]).recall("harbour ferry timetable", as_of=sys.argv[2]).hits
print(time.perf_counter() - t, len(hits))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--when", default="2025-12-06T12:00:00Z")
    parser.add_argument("--writes", type=int, default=2)
    args = parser.parse_args()
    root = args.store
    head_time = git(root, "log", "-1", "--format=%cI")
    spans = root / ".gitmem" / "timeline" / "spans" / "spans.sqlite"
    for n in range(args.writes):
        # An edit of a record's body (its last line): a valid new version, one event.
        note = root / git(root, "ls-files", "records").splitlines()[n]
        note.write_text(note.read_text() + f"\nEdited in HEAD's second ({n}).\n")
        git(root, "add", "-A", str(note))
        env = {**os.environ, "GIT_COMMITTER_DATE": head_time, "GIT_AUTHOR_DATE": head_time}
        subprocess.run(
            ["git", "commit", "-q", "-m", f"same second {n}"], cwd=root, env=env, check=True
        )
        before = spans.stat().st_ino if spans.exists() else -1
        load = os.getloadavg()[0]
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-P", "-c", RECALL, str(root), args.when],
            capture_output=True,
            text=True,
            check=True,
        )
        wall = time.perf_counter() - started
        print(
            json.dumps(
                {
                    "write": n,
                    "head_second": head_time,
                    "recall_wall_s": round(wall, 2),
                    "recall_in_child_s": round(float(out.stdout.split()[0]), 2),
                    "span_index_rebuilt": spans.stat().st_ino != before,
                    "load": load,
                }
            ),
            flush=True,
        )


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


if __name__ == "__main__":
    main()
