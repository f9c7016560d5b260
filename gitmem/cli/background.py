"""Catching the search index up in the background after a write, so that the next recall
finds it current (and takes the fast path, gitmem.cli.quickrecall) instead of paying the
catch-up itself: after 30 writes at 10k records that was 290-521 ms of one recall.

A write that commits calls `catch_up_later(root, env)` last: it starts `python -m
gitmem.cli.background ROOT`, detached (its own session, no terminal, output to /dev/null, at a
lower priority; with gitmem.detach, which does not import subprocess), and
returns; starting it can never fail or slow the write beyond the spawn (an error is dropped:
the next recall catches up as it always has). The process takes a
non-blocking lock (`.gitmem/catchup.lock`): when another catch-up is running it leaves at
once, and the running one, before it leaves, looks at HEAD again and catches up once more if
a write landed meanwhile. The index's own lock keeps it and any recall from writing the index
at once. `GITMEM_BACKGROUND_INDEX=off` turns it off (docs/search.md).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["catch_up_later", "main"]

_LOCK = "catchup.lock"  # under the store's .gitmem/
_ROUNDS = 5  # at most this many catch-ups a process does before it leaves to the next


def catch_up_later(root: Path, env: Mapping[str, str]) -> None:
    """Start the detached catch-up of `root`'s index, unless turned off."""
    if env.get("GITMEM_BACKGROUND_INDEX", "").strip().lower() in ("off", "0", "no", "false"):
        return
    from gitmem.detach import start_detached

    start_detached([sys.executable, "-m", "gitmem.cli.background", str(root.absolute())], env)


def main(argv: list[str]) -> int:
    """Catch `argv[0]`'s index up with HEAD, rounds until it stays current; always 0."""
    import contextlib
    import fcntl

    root = Path(argv[0])
    with contextlib.suppress(OSError):
        os.nice(10)  # the agent's own work comes first
    try:
        cache = root / ".gitmem"
        cache.mkdir(exist_ok=True)
        fd = os.open(cache / _LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return 0
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return 0  # another catch-up runs; it looks at HEAD again before it leaves
        with contextlib.suppress(Exception):
            _catch_up(root)
    finally:
        os.close(fd)
    return 0


def _catch_up(root: Path) -> None:
    from gitmem.api import Store
    from gitmem.store.location import model_cache

    for _ in range(_ROUNDS):
        store = Store.open(root)
        store.model_cache = model_cache(os.environ)
        index = store.index()
        if index.current():
            return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
