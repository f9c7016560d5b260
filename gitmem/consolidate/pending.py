"""How many proposals wait for a decision, read from the work tree with the standard library
only: SessionStart mentions them, and the hook path must not load pygit2 for it (a light
module, tests/test_architecture.py). gitmem's writes leave the work tree equal to HEAD, so
the files there are the proposals at HEAD.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["pending_count"]

# dump_proposal writes sorted keys with two-space indents: this exact text marks a pending one.
_PENDING = b'"status": "pending"'


def pending_count(root: Path) -> int:
    try:
        files = list((root / "proposals").glob("p-*.json"))
    except OSError:
        return 0
    count = 0
    for path in files:
        try:
            count += _PENDING in path.read_bytes()
        except OSError:
            continue
    return count
