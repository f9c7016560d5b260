"""A gitmem write after `git status` left git's replace bitmap in a big store's split index
(issue 24, the write path's review in session 13): an amend shadows an entry of the shared
index, then a `git status` rewrites the index (it has racily clean entries) with a replace
bitmap, then the next write is timed, `gitindex.stage` only, in process.

The code of a base revision ("before", default `main`) against the work tree's ("after"),
each on its own copy of one repository, a worker process per write, alternated round by
round (the order flipped each round), so that a busy machine weighs on both alike. Then `git
diff-files` empty (every entry's stat data true) and `git fsck` in both copies.

    .venv/bin/python benchmarks/bench_git_bitmaps.py [--repo DIR] [--files 100000]
        [--before main] [--rounds 7] [--json OUT]

`--repo`: a git work tree whose files are committed (copied as hard links, never changed: a
worker writes a new file where it writes one, and git replaces the index by renaming); by
default one of `--files` files is made and committed (a few minutes at 100k).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from _common import REPO, checkout, machine, median, run_code, write_json

WORKER = r"""
import json, subprocess, sys, time
from pathlib import Path
from gitmem.store import gitindex

root, amended, added = Path(sys.argv[1]), sys.argv[2], sys.argv[3]


def written(rel, data):
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)  # a new file: the copies share the others (hard links)
    target.write_bytes(data)
    oid = subprocess.run(["git", "hash-object", "-w", rel], cwd=root, check=True,
                         capture_output=True, text=True).stdout.strip()
    return gitindex.entry_for(rel, bytes.fromhex(oid), target.lstat())


gitindex.stage(root / ".git", {amended: written(amended, b"amended\n")})  # shadows a shared one
time.sleep(1.1)
subprocess.run(["git", "status", "--porcelain"], cwd=root, check=True, capture_output=True)
before = gitindex.read(root / ".git" / "index")
entry = written(added, added.encode())
wall, cpu = time.perf_counter(), time.process_time()
gitindex.stage(root / ".git", {added: entry})
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
after = gitindex.read(root / ".git" / "index")
print(json.dumps({"ms": 1000 * wall, "cpu_ms": 1000 * cpu,
                  "bitmaps": [len(b) for b in before.bitmaps()],
                  "folded": after.base != before.base}))
"""


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def made_repo(into: Path, files: int) -> Path:
    git(into, "init", "-q")
    for n in range(files):
        target = into / "records" / f"{n % 256:02x}" / f"record-{n}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"record {n}\n")
    git(into, "add", "-A")
    git(into, "-c", "user.name=bench", "-c", "user.email=b@x", "commit", "-qm", "all")
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--before", default="main")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        source = args.repo or made_repo(work / "made", args.files)
        paths = git(source, "ls-files").split()
        (work / "before").mkdir()
        sides = {"before": checkout(args.before, work / "before"), "after": REPO}
        copies = {}
        for side in sides:
            copies[side] = work / f"repo-{side}"
            shutil.copytree(source, copies[side], symlinks=True, copy_function=os.link)
            # A hard link changes each file's ctime: git's first status replaces every entry,
            # and the first amend (not timed) folds them, on both sides alike.
            git(copies[side], "status", "--porcelain")
        results: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
        for n in range(args.rounds):
            order = list(sides) if n % 2 == 0 else list(reversed(sides))
            for side in order:
                amended = paths[(n * 7919) % len(paths)]
                out = run_code(sides[side], WORKER, str(copies[side]), amended, f"new/{n}.md")
                results[side].append(json.loads(out))
        for side in sides:
            assert git(copies[side], "diff-files", "--name-only") == "", side  # stat data true
            git(copies[side], "fsck", "--no-progress")
    figures: dict[str, dict[str, Any]] = {
        side: {
            "median_ms": median([r["ms"] for r in rows]),
            "median_cpu_ms": median([r["cpu_ms"] for r in rows]),
            "runs": rows,
        }
        for side, rows in results.items()
    }
    report = {"machine": machine(), "files": len(paths), "before": args.before, **figures}
    write_json(args.json, report)
    for side, fig in figures.items():
        bitmaps = [r["bitmaps"] for r in fig["runs"]]
        folds = sum(bool(r["folded"]) for r in fig["runs"])
        print(
            f"{side}: median {fig['median_ms']:.1f} ms wall, {fig['median_cpu_ms']:.1f} ms CPU;"
            f" git's bitmaps before each write {bitmaps}; folds {folds}/{len(fig['runs'])}"
        )


if __name__ == "__main__":
    main()
