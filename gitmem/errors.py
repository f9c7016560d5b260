"""The one error family gitmem raises, and the exit codes the CLI maps it to.

Expected outcomes are return values; these are for requests gitmem refuses.
"""

from __future__ import annotations

import errno
import os

__all__ = [
    "EXIT_BUG",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_OUTPUT_LOST",
    "EXIT_READER_LEFT",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "GitmemError",
    "NotFound",
    "RecordInvalid",
    "SecretFound",
    "StoreMissing",
    "UsageError",
    "bug_message",
    "environment_error",
    "failure",
]

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_BUG = 3
EXIT_INTERRUPTED = 130
EXIT_OUTPUT_LOST = 120  # what the interpreter itself gives when it cannot flush stdout
EXIT_READER_LEFT = 141  # 128 + SIGPIPE: what `git log | head -1` gives


def bug_message(exc: BaseException) -> str:
    """What the CLI says, with EXIT_BUG, of an exception nothing expected (gitmem.cli.main, and the
    recall fast path gitmem.cli.quickrecall, which must say the same)."""
    return f"internal error (a bug in gitmem, please report it): {exc!r}"


# Files the machine would not let gitmem write, and the next step for each (environment_error).
_FREE = "free some space, then run the command again"
_OWNER = "check who owns the store and its permissions, then run the command again"
_NEXT_STEP = {
    errno.ENOSPC: _FREE,
    errno.EDQUOT: _FREE,
    errno.EFBIG: "free some space (or raise the file size limit, ulimit -f), then run the "
    "command again",
    errno.EROFS: "check where the store lives (--store, $GITMEM_STORE) and put it on a "
    "writable file system, then run the command again",
    errno.EACCES: _OWNER,
    errno.EPERM: _OWNER,
}


def environment_error(exc: BaseException) -> str | None:
    """What the CLI says, with EXIT_REFUSED, of a file the machine would not let gitmem write
    (no space, over quota, too large, a read-only file system, no permission); None for any
    other exception. For every entry point that turns exceptions into exit codes."""
    if not isinstance(exc, OSError) or exc.errno not in _NEXT_STEP:
        return None
    problem = os.strerror(exc.errno)
    name = exc.filename
    where = f" {os.fsdecode(name)}" if isinstance(name, (str, bytes)) else " a file"
    verb = "cannot access" if exc.errno in (errno.EACCES, errno.EPERM) else "cannot write"
    return f"{verb}{where}: {problem} — {_NEXT_STEP[exc.errno]}"


def failure(exc: Exception) -> tuple[str, int]:
    """What an entry point says of an exception that ended a command, and its exit code: a
    GitmemError's own message and code, a write the machine refused (environment_error) with
    EXIT_REFUSED, anything else as a bug (EXIT_BUG). The one place a bug becomes exit code 3,
    for the full CLI and the fast paths alike."""
    if isinstance(exc, GitmemError):
        return str(exc), exc.exit_code
    told = environment_error(exc)
    if told is not None:
        return told, EXIT_REFUSED
    return bug_message(exc), EXIT_BUG


class GitmemError(Exception):
    """A request gitmem refused. The message names the object and the next step."""

    exit_code = EXIT_REFUSED


class UsageError(GitmemError):
    """The request itself is malformed (bad flag value, unparseable date, ...)."""

    exit_code = EXIT_USAGE


class StoreMissing(GitmemError):
    """No gitmem store where one was expected."""


class NotFound(GitmemError):
    """No record (or commit) matches what was asked for."""


class RecordInvalid(GitmemError):
    """One or more records break the format or their schema."""

    def __init__(self, message: str, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


class SecretFound(GitmemError):
    """A write would put a credential into git history."""

    def __init__(self, message: str, findings: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.findings = findings
