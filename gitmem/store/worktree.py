"""Symbolic links in a store's work tree. gitmem reads and writes regular files only: a link
committed as a file would carry whatever it points at (outside the store, too), and a write
through a linked directory would land outside the store (issue 26)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from gitmem.errors import GitmemError

__all__ = ["LINK_FIX", "linked_part", "links_under", "refuse_linked"]

LINK_FIX = "put the file or directory itself there (or remove the link)"


def linked_part(root: Path, relative: str, *, itself: bool = True) -> str | None:
    """The first part of `relative` (its directories from `root` down, then itself unless
    `itself` is false) that is a symbolic link, relative to `root`; None when none is."""
    parts = relative.split("/")
    current = root
    for count, part in enumerate(parts if itself else parts[:-1], start=1):
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(mode):
            return "/".join(parts[:count])
    return None


def refuse_linked(root: Path, paths: Iterable[str]) -> None:
    """Raise before a write whose files lie under a linked directory of the work tree. The
    file itself may be a link: writing renames over it and deleting unlinks it, in the store."""
    seen: set[str] = set()
    for path in paths:
        directory = path.rpartition("/")[0]
        if directory in seen:
            continue
        seen.add(directory)
        linked = linked_part(root, path, itself=False)
        if linked is not None:
            raise GitmemError(
                f"{linked} is a symbolic link in the store's work tree, and gitmem writes "
                f"inside the store only; nothing was written — {LINK_FIX}, then run the "
                "command again"
            )


def links_under(directory: Path) -> Iterator[Path]:
    """Every symbolic link under `directory` (files and directories), not followed."""
    for parent, dirs, files in os.walk(directory, followlinks=False):
        for name in (*dirs, *files):
            path = Path(parent) / name
            if path.is_symlink():
                yield path
