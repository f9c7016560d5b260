"""A git index file of version 2 or 3 searched and spliced as bytes, without parsing its
entries into objects: the shared index of gitmem's split index (gitmem.store.gitindex) lists
every file of the store (100k entries, ~13 MB at 100k records), and a write must neither
scan it nor build 100k Python objects.

Entries are sorted by path and laid out from offset 12, each padded to a multiple of 8 bytes
(Documentation/gitformat-index): the fixed part (62 bytes, 64 with extended flags) whose last
two bytes say the path's length, the path, then 1 to 8 NUL bytes. `find` bisects the bytes:
from a middle offset it takes the first aligned place where a chain of well-formed entries
starts, compares that path, and halves; the last stretch is walked entry by entry from a
known start. `splice` walks the entries once (their boundaries only) and copies the unchanged
runs of bytes around the changed entries.
"""

from __future__ import annotations

import hashlib
import mmap
import struct
from collections.abc import Mapping

__all__ = ["find", "plain", "splice"]

Data = bytes | mmap.mmap  # an index file read, or mapped
_FIXED = 62
_EXTENDED = 0x4000
_NAME = 0xFFF
_WALK = 4096  # bytes of entries walked one by one once the bisection is down to them
_CHAIN = 3  # well-formed entries in a row that make an aligned place an entry's start


def _entry(data: Data, at: int, end: int) -> tuple[bytes, int] | None:
    """The path of the entry that would start at `at` and where the next one starts, if the
    bytes there are a well-formed entry (a short path without NUL, then NUL padding)."""
    if at + _FIXED + 1 > end:
        return None
    flags = data[at + 60] << 8 | data[at + 61]
    fixed = _FIXED + 2 if flags & _EXTENDED else _FIXED
    length = flags & _NAME
    start = at + fixed
    following = at + ((fixed + length + 8) & ~7)
    if length in (0, _NAME) or following > end:
        return None
    name = data[start : start + length]
    if b"\0" in name or any(data[start + length : following]):
        return None
    return name, following


def _start_from(data: Data, at: int, end: int) -> int | None:
    """The first aligned place from `at` where `_CHAIN` well-formed entries (or fewer, up to
    the end) follow one another."""
    at += (4 - at) % 8  # entries start at 12 + 8k
    while at < end:
        place, ok = at, True
        for _ in range(_CHAIN):
            if place == end:
                break
            found = _entry(data, place, end)
            if found is None:
                ok = False
                break
            place = found[1]
        if ok:
            return at
        at += 8
    return None


def find(data: Data, name: bytes, end: int | None = None) -> bytes | None:
    """The fixed part of `name`'s first entry (lowest stage) in an index file of version 2
    or 3 whose entries end at `end` (without extensions: before the checksum), or None."""
    end = len(data) - 20 if end is None else end
    low, high = 12, end  # low: a known entry start at or before the entry sought
    while high - low > _WALK:
        middle = _start_from(data, (low + high) // 2, high)
        if middle is None:
            high = (low + high) // 2
            continue
        found = _entry(data, middle, end)
        assert found is not None
        if found[0] < name:
            low = found[1]
        else:
            high = middle
    at = low
    while at < end:
        found = _entry(data, at, end)
        if found is None or found[0] > name:
            return None
        if found[0] == name:
            flags = data[at + 60] << 8 | data[at + 61]
            return data[at : at + (_FIXED + 2 if flags & _EXTENDED else _FIXED)]
        at = found[1]
    return None


def _starts(data: bytes) -> list[int]:
    """Where each entry starts, and where the entries end: one walk from the first entry."""
    count = int.from_bytes(data[8:12])
    starts: list[int] = []
    at = 12
    for _ in range(count):
        starts.append(at)
        flags = data[at + 60] << 8 | data[at + 61]
        fixed = _FIXED + 2 if flags & _EXTENDED else _FIXED
        length = flags & _NAME
        if length == _NAME:
            length = data.index(b"\0", at + fixed) - at - fixed
        at += (fixed + length + 8) & ~7
    starts.append(at)
    return starts


def plain(data: bytes) -> list[int] | None:
    """The entries' starts (`_starts`) if `data` is a whole, plain index file of version 2 or
    3 (its checksum right; no `link` nor any other extension git requires); None if not."""
    if len(data) < 32 or data[:4] != b"DIRC" or data[4:8] not in (b"\0\0\0\2", b"\0\0\0\3"):
        return None
    if hashlib.sha1(data[:-20]).digest() != data[-20:]:
        return None
    try:
        starts = _starts(data)
    except (IndexError, ValueError):
        return None
    at = starts[-1]
    while at + 8 <= len(data) - 20:
        if not b"A" <= data[at : at + 1] <= b"Z":  # link, sdir: not a plain index
            return None
        at += 8 + int.from_bytes(data[at + 4 : at + 8])
    return starts


def splice(
    data: bytes, changes: Mapping[bytes, bytes | None], starts: list[int] | None = None
) -> bytes:
    """The index file `data` (version 2 or 3, its extensions dropped) with each changed path's
    entries (all stages) replaced by the given encoded entry, or removed (None). `starts`:
    `_starts(data)`, if known."""
    version = int.from_bytes(data[4:8])
    count = int.from_bytes(data[8:12])
    starts = _starts(data) if starts is None else starts

    def name_at(i: int) -> bytes:
        flags = data[starts[i] + 60] << 8 | data[starts[i] + 61]
        fixed = _FIXED + 2 if flags & _EXTENDED else _FIXED
        return data[starts[i] + fixed : starts[i + 1]].rstrip(b"\0")

    def first_at_or_after(name: bytes) -> int:
        low, high = 0, count
        while low < high:
            middle = (low + high) // 2
            if name_at(middle) < name:
                low = middle + 1
            else:
                high = middle
        return low

    parts: list[bytes] = []
    copied, total = 0, count  # entries copied up to; the new count
    extended = version == 3
    for name in sorted(changes):
        first = last = first_at_or_after(name)
        while last < count and name_at(last) == name:
            last += 1
        parts.append(data[starts[copied] : starts[first]])
        new = changes[name]
        if new is not None:
            parts.append(new)
            extended = extended or bool(new[60] << 8 & _EXTENDED)
        total += (new is not None) - (last - first)
        copied = last
    parts.append(data[starts[copied] : starts[count]])
    body = struct.pack(">4sII", b"DIRC", 3 if extended else 2, total) + b"".join(parts)
    return body + hashlib.sha1(body).digest()
