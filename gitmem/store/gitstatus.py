"""The work tree's uncommitted changes, as `git status` sees them.

libgit2's status reads the git index, and libgit2 cannot read the split index gitmem keeps
(gitmem.store.gitindex), so the answer comes from git itself: it reads that form natively and
honours the user's ignore rules and settings. `--no-optional-locks`: a status that only reads
never takes index.lock from a writer.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from gitmem.errors import GitmemError

__all__ = ["status"]


def status(root: Path, prefix: str = "") -> list[tuple[str, str]]:
    """(path, "added" | "deleted" | "modified") for each uncommitted change under `prefix`,
    in path order."""
    command = ["git", "--no-optional-locks", "status", "--porcelain=v1", "-z"]
    command += ["--untracked-files=all", "--no-renames", "--", prefix or "."]
    try:
        done = subprocess.run(
            command, cwd=root, capture_output=True, stdin=subprocess.DEVNULL, check=False
        )
    except FileNotFoundError as exc:
        raise GitmemError(
            "git is not installed (or not on PATH): gitmem needs it to list uncommitted "
            "edits; install git and try again"
        ) from exc
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip()
        raise GitmemError(f"git status failed in {root}: {said}; fix what git says, then retry")
    out: list[tuple[str, str]] = []
    for item in done.stdout.decode(errors="surrogateescape").split("\0"):
        if len(item) < 4:
            continue
        code, path = item[:2], item[3:]
        if "?" in code or "A" in code:
            out.append((path, "added"))
        elif "D" in code:
            out.append((path, "deleted"))
        elif "M" in code or "T" in code:
            out.append((path, "modified"))
    return sorted(out)
