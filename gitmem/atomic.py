"""Replacing a file whole: write a temporary file beside it, then rename it over the target.

A reader sees the old content or the new one, never part of either, and a write that fails
(a full disk, an interrupt) leaves the old file as it was and no temporary file behind. The
hook path writes through this module, so it imports nothing but `os` (no pathlib, no typing:
see gitmem.agents.notes) and its annotations are strings.
"""

from __future__ import annotations

import os

# A constant rather than typing's (see above). mypy honours the name.
TYPE_CHECKING = False
if TYPE_CHECKING:
    StrPath = str | os.PathLike[str]

__all__ = ["TEMP_PREFIX", "replace_file"]

# How every temporary file starts. In a store's work tree a dead writer's leftover is hidden by
# this pattern in the store's .gitignore (store-template) and removed by Store._recover.
TEMP_PREFIX = ".gitmem-"


def replace_file(
    path: StrPath, data: bytes | str, *, fsync: bool = False, mode: int | None = None
) -> None:
    """Make `path` hold `data` (text as UTF-8, its newlines as given), all at once.

    The temporary file is created in `path`'s directory (one file system, so the rename is
    atomic), under a name no other process or thread holds at the same time, with the
    permissions a new file gets (0o666 less the umask) or `mode`. With `fsync` the content
    and the rename are on disk when this returns: for what must survive a crash. If anything
    fails before the rename, the temporary file is removed and the error raised.
    """
    content = data.encode("utf-8") if isinstance(data, str) else data
    target = os.fspath(path)
    directory, name = os.path.split(target)
    tmp, fd = _create(directory, name)
    try:
        try:
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        _remove(tmp)
        raise
    if fsync:
        _sync_directory(directory or os.curdir)


def _create(directory: str, name: str) -> tuple[str, int]:
    """A new, empty temporary file for `name`: the pid says whose it is, the random part
    keeps two threads apart, and O_EXCL makes sure nobody else has it."""
    while True:
        tmp = os.path.join(directory, f"{TEMP_PREFIX}{os.getpid()}-{os.urandom(4).hex()}-{name}")
        try:
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue
        except BaseException:
            # Python runs a signal's handler as a call returns: Ctrl-C can land after the file
            # was made, before the caller's `try` holds it (its descriptor is lost with the
            # call's result). The name is this call's own, so removing it removes nobody else's.
            _remove(tmp)
            raise


def _remove(tmp: str) -> None:
    # Not contextlib.suppress: the hook path would pay for importing it.
    try:  # noqa: SIM105
        os.unlink(tmp)
    except OSError:
        pass


def _sync_directory(directory: str) -> None:
    """Put the rename itself on disk. Best effort: some file systems refuse to fsync a
    directory, and the file's content already is on disk."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
