"""The stamp beside a vector graph (gitmem.index.ann): `ann-<vectors>.json`, saying which vector
file the graph `ann-<vectors>.usearch` was built from, how many of its rows it covers, how many
dead rows it has removed, and which file it is: its size and CRC-32, and the (inode, mtime in
ns, size) a stat gives.

Why the stat's identity. Readers map the graph, and usearch does not check a mapped file: a
graph changed in place (same size: a stray write, an editor, a copy over it) could crash a
recall. The CRC-32 reads the whole file (~0.2 s at 1M rows), too much for every recall or
catch-up; one stat is not, and any write through the file system changes its mtime (a rename,
as `install` does, keeps both inode and mtime). So readers and writers compare the identity,
and the builder and `gitmem doctor` the checksum as well: damage beneath the file system
(bit rot) is found by those two only.

A crash between saving the graph and its stamp costs nothing: the stamp is written first with
what the new graph will be (`next`), then the graph, then the stamp again; the graph in place is
described by one or the other.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitmem.index.verify import crc32

__all__ = ["FIELDS", "Stamp", "describing", "identity", "newer", "read_stamp"]

_VERSION = 4  # 2: the graph file's size and CRC-32; 3: its inode and mtime too; 4: int8
# storage with 24 links (gitmem.index.ann): a float16 graph searched at the narrower
# widths would fall under recall@10 0.98, so it is built again
# The stamp's record of one saved graph, in order (`next` is a list of these).
FIELDS = ("covered", "removed", "size", "crc", "inode", "mtime_ns")
Saved = tuple[int, int, int, int, int, int]


@dataclass(frozen=True)
class Stamp:
    vectors: str
    dim: int
    covered: int  # rows 0..covered-1 of the vector file were offered to the graph
    removed: int  # how many of those were dead, and removed, when it was saved
    size: int  # of the graph file, in bytes
    crc: int  # its CRC-32
    inode: int  # its stat's st_ino and st_mtime_ns (kept by the rename that installs it)
    mtime_ns: int
    next: Saved | None = None  # the graph being saved, as FIELDS

    def saved(self) -> Saved:
        return (self.covered, self.removed, self.size, self.crc, self.inode, self.mtime_ns)

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": _VERSION, "vectors": self.vectors, "dim": self.dim}
        out |= dict(zip(FIELDS, self.saved(), strict=True))
        return out if self.next is None else out | {"next": list(self.next)}

    def advanced(self) -> Stamp | None:
        """The stamp of the graph `next` names, if any."""
        if self.next is None:
            return None
        return Stamp(self.vectors, self.dim, *self.next)


def read_stamp(path: Path) -> Stamp | None:
    """The stamp at `path`; None when missing, unreadable or of another version."""
    try:
        data = json.loads(path.read_text())
        if data.get("version") != _VERSION:
            return None
        then = data.get("next")
        after = None if then is None else _saved([int(v) for v in then])
        saved = _saved([int(data[f]) for f in FIELDS])
        return Stamp(str(data["vectors"]), int(data["dim"]), *saved, next=after)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


def newer(path: Path) -> bool:
    """Whether the stamp at `path` was written by a newer gitmem than this one (its version
    above `_VERSION`): that graph is left alone for the install that made it, where an older
    one's is built again (two installs sharing a store, e.g. an MCP server started before an
    upgrade, would otherwise delete each other's graphs on every write). False when there is
    no readable stamp."""
    try:
        version = json.loads(path.read_text()).get("version")
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(version, int) and not isinstance(version, bool) and version > _VERSION


def _saved(values: list[int]) -> Saved:
    if len(values) != len(FIELDS):
        raise ValueError("a saved graph has six fields")
    a, b, c, d, e, f = values
    return (a, b, c, d, e, f)


def identity(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def describing(path: Path, stamp: Stamp, *, checksum: bool) -> Stamp | None:
    """The stamp that describes the graph file at `path`: `stamp`, or the one it says was
    being saved (`next`) when the save stopped between the graph and its stamp; None when
    neither does (by one stat's inode, mtime and size; by CRC-32 too when `checksum`)."""
    try:
        found = identity(path.stat())
        crc = crc32(path) if checksum else None
    except OSError:
        return None
    for candidate in (stamp, stamp.advanced()):
        if candidate is None or (candidate.inode, candidate.mtime_ns, candidate.size) != found:
            continue
        if crc in (None, candidate.crc):
            return candidate
    return None
