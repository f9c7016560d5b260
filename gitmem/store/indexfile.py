"""A git index file (Documentation/gitformat-index) as values: its entries parsed from the
bytes, and encoded back, in versions 2 and 3 (version 4, compressed paths, is read only), with
the split index's `link` extension and its EWAH bitmaps (read only).

gitmem.store.gitindex decides what the index says after a write; gitmem.store.sharedindex
reads and splices the big shared part as bytes, without these objects.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from gitmem.errors import GitmemError

__all__ = [
    "EXTENDED",
    "FIXED",
    "NO_BITMAPS",
    "NULL",
    "STAT",
    "Entry",
    "IndexFile",
    "IndexUnreadable",
    "encode",
    "entry_at",
    "entry_bytes",
    "entry_for",
    "fixed_at",
    "link",
    "parse",
    "read",
    "with_entries",
]

_HEADER = struct.Struct(">4sII")
STAT = struct.Struct(">10I")  # ctime s, ns, mtime s, ns, dev, ino, mode, uid, gid, size
FIXED = 62  # the stat data (40 bytes), the object id (20) and the flags (2)
EXTENDED = 0x4000
_NAME = 0xFFF
NULL = bytes(20)
_U32 = 0xFFFFFFFF
_FILE_MODE = 0o100644  # what gitmem's trees say of every file it writes
# The link extension's delete and replace bitmaps, both empty: git reads them unconditionally
# once a shared index is named (a link without them makes git 2.39 crash).
NO_BITMAPS = struct.pack(">IIQI", 0, 1, 0, 0) * 2
_RUN = 0xFFFFFFFF  # the longest run of empty words one EWAH marker word says
_LITERALS = 0x7FFFFFFF  # the most literal words one marker word counts


class IndexUnreadable(GitmemError):
    """The git index is in a form or a state this module does not read."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One index entry: its path and its fixed part (the stat data, the object id, the flags
    and, if the extended bit is set, the extended flags), as git writes them."""

    path: bytes
    fixed: bytes

    @property
    def oid(self) -> bytes:
        return self.fixed[40:60]

    @property
    def stage(self) -> int:
        return (self.fixed[60] >> 4) & 3


@dataclass(frozen=True, slots=True)
class IndexFile:
    """A parsed index file: its entries in file order and its `link` extension, if split."""

    version: int
    entries: list[Entry]
    link: bytes | None

    @property
    def base(self) -> bytes | None:
        return None if self.link is None else self.link[:20]

    def bitmaps(self) -> tuple[list[int], list[int]]:
        """The delete and the replace bitmap of the link extension, as positions."""
        if self.link is None or len(self.link) == 20 or self.link[20:] == NO_BITMAPS:
            return [], []
        deleted, replaced = _bitmaps(self.link[20:])
        return list(deleted), list(replaced)


@lru_cache(maxsize=4)
def _bitmaps(data: bytes) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The two bitmaps serialised in `data`, decoded once for the few writes and lookups of
    one index (a split part of ~900 replacements: ~0.4 ms a decoding)."""
    deleted, at = _ewah(data, 0)
    replaced, _ = _ewah(data, at)
    return tuple(deleted), tuple(replaced)


def entry_for(path: str, oid: bytes, st: os.stat_result) -> Entry:
    """The entry git would write for a file of these stat data holding object `oid`."""
    name = path.encode()
    stat = STAT.pack(
        (st.st_ctime_ns // 1_000_000_000) & _U32,
        st.st_ctime_ns % 1_000_000_000,
        (st.st_mtime_ns // 1_000_000_000) & _U32,
        st.st_mtime_ns % 1_000_000_000,
        st.st_dev & _U32,
        st.st_ino & _U32,
        _FILE_MODE,
        st.st_uid & _U32,
        st.st_gid & _U32,
        st.st_size & _U32,
    )
    return Entry(name, stat + oid + min(len(name), _NAME).to_bytes(2, "big"))


def read(path: Path) -> IndexFile | None:
    """The index file at `path`, or None if there is none."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return parse(data, path)


def with_entries(entries: list[Entry], added: Iterable[Entry]) -> list[Entry]:
    """`entries` with `added` put in, each replacing its path's entry at its stage (a merged
    entry replaces all stages of its path, as git's add_index_entry does), in git's order."""
    by_key = {(e.path, e.stage): e for e in entries}
    for entry in added:
        if entry.stage == 0:
            for other in (1, 2, 3):
                by_key.pop((entry.path, other), None)
        by_key[(entry.path, entry.stage)] = entry
    return [by_key[key] for key in sorted(by_key)]


def encode(entries: list[Entry], link: bytes | None) -> bytes:
    """An index file (version 2, or 3 if an entry has extended flags) of these entries and
    that link extension, with its SHA-1 trailer."""
    version = 3 if any(len(e.fixed) > FIXED for e in entries) else 2
    parts = [_HEADER.pack(b"DIRC", version, len(entries))]
    parts += (entry_bytes(e) for e in entries)
    if link is not None:
        parts += (b"link", len(link).to_bytes(4, "big"), link)
    body = b"".join(parts)
    return body + hashlib.sha1(body).digest()


def entry_at(data: bytes, at: int, following: int) -> Entry:
    """The entry of an index file of version 2 or 3 that starts at `at`, the next at
    `following` (its path is what lies between, without its NUL padding)."""
    fixed = fixed_at(data, at)
    return Entry(data[at + len(fixed) : following].rstrip(b"\0"), fixed)


def fixed_at(data: bytes | mmap.mmap, at: int) -> bytes:
    """The fixed part of the entry that starts at `at`."""
    return bytes(data[at : at + (FIXED + 2 if data[at + 60] << 8 & EXTENDED else FIXED)])


def entry_bytes(entry: Entry) -> bytes:
    """An entry as git lays it out in versions 2 and 3: the path's length in the flags, the
    path, then NUL bytes up to a multiple of 8."""
    flags = (int.from_bytes(entry.fixed[60:62]) & ~_NAME) | min(len(entry.path), _NAME)
    head = entry.fixed[:60] + flags.to_bytes(2, "big") + entry.fixed[62:]
    size = len(head) + len(entry.path)
    return head + entry.path + bytes(8 - size % 8)


def parse(data: bytes, path: Path) -> IndexFile:
    def bad(why: str) -> IndexUnreadable:
        return IndexUnreadable(
            f'{path} is not a git index gitmem can read ({why}); check it with "git status"'
        )

    if len(data) < 32:
        raise bad("too short")
    signature, version, count = _HEADER.unpack_from(data)
    if signature != b"DIRC" or version not in (2, 3, 4):
        raise bad(f"signature {signature!r}, version {version}")
    if hashlib.sha1(data[:-20]).digest() != data[-20:]:
        raise bad("its checksum does not match")
    entries: list[Entry] = []
    at, previous = 12, b""
    for _ in range(count):
        entry_at = at
        flags = int.from_bytes(data[at + 60 : at + 62])
        fixed = FIXED + 2 if flags & EXTENDED else FIXED
        start = at + fixed
        if version == 4:
            strip, start = _varint(data, start)
            end = data.index(b"\0", start)
            name = previous[: len(previous) - strip] + data[start:end]
            at = end + 1
        else:
            end = start + (flags & _NAME) if flags & _NAME < _NAME else data.index(b"\0", start)
            name = data[start:end]
            at += (fixed + len(name) + 8) & ~7
        entries.append(Entry(name, data[entry_at : entry_at + fixed]))
        previous = name
    link = None
    while at + 8 <= len(data) - 20:
        signature, size = data[at : at + 4], int.from_bytes(data[at + 4 : at + 8])
        if signature == b"link":
            link = data[at + 8 : at + 8 + size]
        elif not b"A" <= signature[:1] <= b"Z":
            raise bad(f"extension {signature!r}, which it requires, is not known here")
        at += 8 + size
    return IndexFile(version, entries, link)


def link(base: bytes, replaced: Iterable[int] = ()) -> bytes:
    """The `link` extension's contents naming the shared index `base`, with an empty delete
    bitmap and a replace bitmap of these positions of the shared index (ascending): the split
    part's first entries replace those shared entries, their paths left empty, as git's
    prepare_to_write_split_index writes them."""
    return base + _ewah_bytes([]) + _ewah_bytes(replaced)


def _ewah_bytes(positions: Iterable[int]) -> bytes:
    """git's EWAH serialisation (ewah/ewah_io.c) of a bitmap with these bits set (ascending):
    its size in bits, its words (marker words, each a run of empty words then a count of the
    literal words that follow it) and the position of its last marker word."""
    words: dict[int, int] = {}
    size = 0
    for pos in positions:
        words[pos // 64] = words.get(pos // 64, 0) | 1 << pos % 64
        size = pos + 1
    buffer, marker, run, literals, at = [0], 0, 0, 0, 0
    for word in sorted(words):
        gap = word - at
        if (gap and literals) or literals == _LITERALS or run + gap > _RUN:
            buffer[marker] = run << 1 | literals << 33
            marker, run, literals = len(buffer), 0, 0
            buffer.append(0)
        run += gap
        buffer.append(words[word])
        literals += 1
        at = word + 1
    buffer[marker] = run << 1 | literals << 33
    return struct.pack(f">II{len(buffer)}QI", size, len(buffer), *buffer, marker)


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """Git's offset encoding (varint.c): big-endian groups of 7 bits, each continuation +1."""
    byte = data[at]
    value = byte & 0x7F
    while byte & 0x80:
        at += 1
        byte = data[at]
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, at + 1


def _ewah(data: bytes, at: int) -> tuple[list[int], int]:
    """The set bits of git's EWAH bitmap serialised at `at` (ewah/ewah_io.c), and where it
    ends: marker words (a run of 0s or 1s, then a count of literal words) and literal words."""
    _bits, words = struct.unpack_from(">II", data, at)
    values = struct.unpack_from(f">{words}Q", data, at + 8)
    positions: list[int] = []
    pos = i = 0
    while i < words:
        marker = values[i]
        run, literals = (marker >> 1) & _U32, marker >> 33
        if marker & 1:
            positions.extend(range(pos, pos + run * 64))
        pos += run * 64
        for word in values[i + 1 : i + 1 + literals]:
            while word:  # its set bits only, lowest first
                low = word & -word
                positions.append(pos + low.bit_length() - 1)
                word ^= low
            pos += 64
        i += 1 + literals
    return positions, at + 8 + 8 * words + 4
