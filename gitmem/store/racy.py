"""Racily clean entries of gitmem's split index (gitmem.store.gitindex): what a write must
look at again so that an edit made in the second an entry was taken is never vouched for by
a newer index.

An entry whose file's mtime is not older than the index file is "racily clean": the file
may have changed after its stat data were taken, in the same second. Git compares such a
file's content, and when it writes an index it smudges the ones that changed
(read-cache.c, ce_smudge_racily_clean_entry) and moves racy entries of the shared index into
the split part (split-index.c, prepare_to_write_split_index), where its next write looks at
them again; there it writes them as replacements (their paths left empty, a replace bitmap).
gitmem's writes do the same: `smudged` checks them, `racy_shared` finds the shared index's,
which a write keeps in the split part (as replacements: gitmem.store.splitpart).
"""

from __future__ import annotations

import hashlib
import mmap
import os
from itertools import pairwise
from pathlib import Path

from gitmem.store import sharedindex
from gitmem.store.indexfile import NULL, STAT, Entry, entry_at, entry_bytes, fixed_at, parse

__all__ = ["racy_plain", "racy_shared", "smudged", "smudged_plain"]


def smudged(root: Path, entries: list[Entry], since: int, skip: set[bytes]) -> list[Entry]:
    """`entries` with each racily clean one smudged (its size 0, which makes git compare the
    file's content), as git's ce_smudge_racily_clean_entry does when it writes an index: an
    entry whose mtime is not older than the index read (`since`, in seconds) may have been
    edited after it was taken, in the same second; rewritten with a newer mtime, the index
    would vouch for it. A file whose content is no longer the entry's object is smudged."""
    out = []
    for entry in entries:
        stat = STAT.unpack_from(entry.fixed)  # [2]: mtime, [9]: size (0: smudged already)
        # (a path left empty: git's replacement of a shared entry, named first: `replacements`)
        racy = stat[2] >= since > 0 and stat[9] and not entry.stage
        if racy and entry.path and entry.path not in skip:
            try:
                data = (root / os.fsdecode(entry.path)).read_bytes()
                same = hashlib.sha1(b"blob %d\0" % len(data) + data).digest() == entry.oid
            except OSError:
                same = False  # gone or unreadable: git sees that anyway
            if not same:
                entry = Entry(entry.path, entry.fixed[:36] + bytes(4) + entry.fixed[40:])
        out.append(entry)
    return out


def smudged_plain(
    root: Path, raw: bytes, starts: list[int], since: int, skip: set[bytes]
) -> dict[bytes, bytes | None]:
    """`smudged` for a plain index kept as bytes: its smudged entries, encoded, by path. Only
    the entries whose mtime is not older than `since` are looked at as entries."""
    looked = racy_plain(raw, starts, since)
    checked = smudged(root, looked, since, skip)
    return {
        new.path: entry_bytes(new)
        for old, new in zip(looked, checked, strict=True)
        if new is not old
    }


def racy_plain(raw: bytes, starts: list[int], since: int) -> list[Entry]:
    """The entries of an index kept as bytes whose mtime is not older than `since`."""
    return [
        entry_at(raw, at, following)
        for at, following in pairwise(starts)
        if int.from_bytes(raw[at + 8 : at + 12]) >= since
    ]


def racy_shared(git_dir: Path, base: bytes, since: int) -> dict[int, Entry]:
    """The shared index's entries that are racily clean against the index read (their mtime
    not older than `since`), by position, which a write holds in the split part (as
    replacements, or in a fold): git may write a shared index with some (its next write
    would move them to the split part; gitmem's folds keep them out). Looked for only in a
    shared index whose file is as new as that and that may have been written then
    (`_older`): one walk of its entries' mtimes."""
    path = git_dir / f"sharedindex.{base.hex()}"
    if base == NULL or since <= 0:
        return {}
    try:
        f = open(path, "rb")  # noqa: SIM115 (closed by the with below)
    except FileNotFoundError:
        return {}
    with f:
        st = os.fstat(f.fileno())
        if (
            st.st_mtime_ns // 1_000_000_000 < since
            or st.st_size < 32
            or _older(git_dir, base, since)
        ):
            return {}
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if data[4:8] not in (b"\0\0\0\2", b"\0\0\0\3"):
                entries = enumerate(parse(bytes(data), path).entries)
                return {
                    i: e
                    for i, e in entries
                    if not e.stage and STAT.unpack_from(e.fixed)[2] >= since
                }
            if data[-20:] != base:
                return {}  # not the file it is named for: the fold's checksum names it
            key = since.to_bytes(4, "big")
            try:
                with sharedindex.starts_of(git_dir, data) as starts:
                    found = [i for i, at in enumerate(starts[:-1]) if data[at + 8 : at + 12] >= key]
                    named = {
                        i: Entry(sharedindex.name_at(data, starts, i), fixed_at(data, starts[i]))
                        for i in found
                    }
            except (IndexError, ValueError):
                return {}  # garbled past its header: likewise
            return {i: e for i, e in named.items() if not e.stage}


def _older(git_dir: Path, base: bytes, since: int) -> bool:
    """Whether the shared index `base` was written before the second `since`, though its
    mtime may be newer (git freshens the shared index it names at each write): its sidecar of
    entry starts (named for the same contents) is older. That sidecar was written with it, or
    at the first lookup after git wrote it; each entry's stat data were taken before."""
    try:
        return os.stat(sharedindex.offsets_path(git_dir, base)).st_mtime_ns // 10**9 < since
    except OSError:
        return False
