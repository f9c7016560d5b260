"""The store's write lock, and recovery from a writer that died half-way.

The lock is an advisory `flock` on `.git/gitmem-write.lock`. The kernel drops it when its
holder exits for any reason, SIGKILL included, so a killed writer can never leave a lock that
blocks the next one. What a killed writer can leave is work half done; for that each write
first writes a small journal (`.git/gitmem-journal.json`: the commit it builds on and the
paths it writes). The next writer that takes the lock and finds a journal finishes or undoes
that work before its own, and clears the lock files libgit2 left behind.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gitmem.atomic import replace_file
from gitmem.errors import GitmemError

__all__ = ["Journal", "LockTimeout", "acquire", "cache_lock", "write_lock"]

LOCK_NAME = "gitmem-write.lock"
JOURNAL_NAME = "gitmem-journal.json"


class LockTimeout(GitmemError):
    """Another writer held the store for longer than we were willing to wait."""


@dataclass(frozen=True)
class Journal:
    """What an unfinished write was doing, as found by the next writer."""

    parent: str | None
    paths: tuple[str, ...]
    started: float


@contextmanager
def write_lock(
    git_dir: Path,
    timeout: float,
    recover: Callable[[Journal], None],
) -> Iterator[Callable[[str | None, list[str]], None]]:
    """Hold the store's write lock. Yields `begin(parent, paths)` to journal the write.

    A journal left by a dead writer is handed to `recover` first; the journal is removed
    when the block exits without an exception.
    """
    lock_path = git_dir / LOCK_NAME
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        acquire(fd, lock_path, timeout)
        journal_path = git_dir / JOURNAL_NAME
        leftover = _read_journal(journal_path)
        if leftover is not None:
            _clear_stale_git_locks(git_dir, leftover.started)
            recover(leftover)
            journal_path.unlink(missing_ok=True)

        def begin(parent: str | None, paths: list[str]) -> None:
            data = {"parent": parent, "paths": paths, "started": time.time(), "pid": os.getpid()}
            # Whole before the work it describes: after a crash it is what recovery reads.
            # Not fsynced: what it describes (libgit2's objects and ref, the work tree, the
            # index) is not either, as git's own are not by default (core.fsync), so a power
            # loss can lose the write whatever the journal says; a killed process (the crash
            # it is for) leaves it in the page cache. Its fsync and the directory's cost a
            # write ~1 ms on a quiet disk and 8-20 ms on a busy one (docs/benchmarks.md).
            replace_file(journal_path, json.dumps(data))

        yield begin
        journal_path.unlink(missing_ok=True)
    finally:
        os.close(fd)  # closing the descriptor releases the flock


@contextmanager
def cache_lock(path: Path, timeout: float, what: str) -> Iterator[None]:
    """Held by whoever updates or rebuilds a cache (`what`, for the message): a flock on
    `path`, which dies with its holder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            acquire(fd, path, timeout)
        except LockTimeout:
            raise GitmemError(
                f"another process has been updating {what} for over {timeout:g} s; try again later"
            ) from None
        yield
    finally:
        os.close(fd)


def acquire(fd: int, lock_path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
        if time.monotonic() >= deadline:
            raise LockTimeout(
                f"another gitmem write has held {lock_path} for over {timeout:g} s; "
                "wait for it to finish and try again (a writer that died holds no lock)"
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _read_journal(path: Path) -> Journal | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        # A journal cut off mid-write: the writer died before touching anything else.
        return Journal(parent=None, paths=(), started=path.stat().st_mtime)
    return Journal(
        parent=raw.get("parent"),
        paths=tuple(raw.get("paths", ())),
        started=float(raw.get("started", 0.0)),
    )


# A gitmem write holds git's lock files for well under a second; this much slack covers a
# slow disk. A lock file made later than that belongs to a live git command.
_WRITE_SPAN = 10.0


def _clear_stale_git_locks(git_dir: Path, since: float) -> None:
    """Remove git lock files the dead writer made: those created while its write ran.

    Older lock files, and newer ones, belong to someone else (a person's `git commit` in an
    editor, a git command running now) and are left alone; the write then fails with a
    message saying git is busy.
    """
    candidates = [git_dir / "index.lock", git_dir / "HEAD.lock"]
    refs = git_dir / "refs"
    if refs.exists():
        candidates.extend(refs.rglob("*.lock"))
    for lock in candidates:
        try:
            if since - 1.0 <= lock.stat().st_mtime <= since + _WRITE_SPAN:
                lock.unlink()
        except FileNotFoundError:
            continue
