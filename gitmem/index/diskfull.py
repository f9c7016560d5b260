"""A write of the index that the machine refused (no space, over quota, a file size limit),
told as the OSError it is: SQLite and tantivy report it in their own words, which the CLI
would take for a bug (issue 26). gitmem.errors.environment_error then says "no space left"
and the next step. Known by the libraries' words, so this module imports neither."""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Iterator
from pathlib import Path

__all__ = ["refused_write", "translated"]

_SQLITE_FULL = 13  # "database or disk is full"
_SQLITE_IOERR = 10  # "disk I/O error": SQLite's word for a write past a file size limit too
_PROBE = 1 << 20  # bytes a probe writes to ask the machine what it refused
# Rust's io::Error as tantivy prints it: "No space left on device (os error 28)".
_OS_ERROR = re.compile(r"\(os error (\d+)\)")
_REFUSED = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def refused_write(exc: BaseException, where: Path) -> OSError | None:
    """The OSError (naming `where`) behind `exc` or what it was raised from, if the machine
    refused a write; None for anything else."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _REFUSED:
            return None if current is exc else current
        code = None
        sqlite = getattr(current, "sqlite_errorcode", None)
        if sqlite == _SQLITE_FULL:
            code = errno.ENOSPC
        elif isinstance(sqlite, int) and sqlite & 0xFF == _SQLITE_IOERR:
            code = _probe(where)
        elif (found := _OS_ERROR.search(str(current))) and int(found.group(1)) in _REFUSED:
            code = int(found.group(1))
        if code is not None:
            return OSError(code, os.strerror(code), str(where))
        current = current.__cause__ or current.__context__
    return None


def _probe(where: Path) -> int | None:
    """The errno of a write of the same kind beside `where`, when the machine refuses it (an
    I/O error names no cause; git.py asks the same way of libgit2's)."""
    probe = where.parent / f".probe-{os.getpid()}"  # beside the index: the cache, ignored by git
    try:
        with probe.open("wb") as handle:
            handle.write(b"\0" * _PROBE)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        return exc.errno if exc.errno in _REFUSED else None
    finally:
        probe.unlink(missing_ok=True)
    return None


@contextlib.contextmanager
def translated(where: Path) -> Iterator[None]:
    """Around a write of the index under `where`: a refused write is raised as its OSError."""
    try:
        yield
    except Exception as exc:
        refused = refused_write(exc, where)
        if refused is None:
            raise
        raise refused from exc
