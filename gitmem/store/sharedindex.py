"""A git index file of version 2 or 3 searched and spliced as bytes, without parsing its
entries into objects: the shared index of gitmem's split index (gitmem.store.gitindex) lists
every file of the store (100k entries, ~13 MB at 100k records), and a write must neither
scan it nor build 100k Python objects.

Entries are sorted by path and laid out from offset 12, each padded to a multiple of 8 bytes
(Documentation/gitformat-index): the fixed part (62 bytes, 64 with extended flags) whose last
two bytes say the path's length, the path, then 1 to 8 NUL bytes. Where an entry starts
cannot be told from the bytes around it (a path's bytes can read as a well-formed entry), so
`find` bisects over the entries' starts: a plain index's from its one walk (`plain`), a
shared index's from a sidecar (`.git/gitmem-offsets.<id>`, uint32s, mapped) written with it
or, for one git wrote, by one walk the first time. `splice` walks the entries once (their
boundaries only) and copies the unchanged runs of bytes around the changed entries.

The files themselves: `write_shared` puts a new shared index in place (its sidecar first),
`remove_unused` removes the ones no index has named for five minutes, as git expires them.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import struct
import time
from array import array
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path

__all__ = [
    "find",
    "index_of",
    "name_at",
    "offsets_path",
    "plain",
    "remove_unused",
    "splice",
    "starts_of",
    "write_offsets",
    "write_shared",
]

Data = bytes | mmap.mmap  # an index file read, or mapped
UNUSED_FOR = 300.0  # seconds a shared index no index names is kept (a git command may read it)
STALE_AFTER = 60.0  # seconds after which a temporary file is a dead writer's, whatever its pid
_TMP = ".tmp-"  # temporary files: `<name>.tmp-<pid>`
_FIXED = 62
_EXTENDED = 0x4000
_NAME = 0xFFF


def _name(data: Data, at: int, end: int) -> bytes:
    """The path of the entry that starts at `at` (a known entry start)."""
    flags = data[at + 60] << 8 | data[at + 61]
    fixed = _FIXED + 2 if flags & _EXTENDED else _FIXED
    length = flags & _NAME
    if length == _NAME:
        length = data.find(b"\0", at + fixed, end) - at - fixed
    return data[at + fixed : at + fixed + length]


def name_at(data: Data, starts: Sequence[int], i: int) -> bytes:
    """The path of the `i`th entry of an index file of version 2 or 3 whose entries start at
    `starts` (the last item: where they end)."""
    return bytes(_name(data, starts[i], starts[-1]))


def find(data: Data, name: bytes, starts: Sequence[int]) -> bytes | None:
    """The fixed part of `name`'s first entry (lowest stage) in an index file of version 2
    or 3 whose entries start at `starts` (the last item: where they end), or None."""
    i = index_of(data, name, starts)
    if i is None:
        return None
    at = starts[i]
    flags = data[at + 60] << 8 | data[at + 61]
    return data[at : at + (_FIXED + 2 if flags & _EXTENDED else _FIXED)]


def index_of(data: Data, name: bytes, starts: Sequence[int]) -> int | None:
    """The position of `name`'s first entry (lowest stage) in an index file of version 2 or
    3 whose entries start at `starts` (the last item: where they end), or None."""
    low, high = 0, len(starts) - 1
    end = starts[-1]
    while low < high:
        middle = (low + high) // 2
        if _name(data, starts[middle], end) < name:
            low = middle + 1
        else:
            high = middle
    if low == len(starts) - 1 or _name(data, starts[low], end) != name:
        return None
    return low


def offsets_path(git_dir: Path, trailer: bytes) -> Path:
    """The sidecar of entry starts gitmem keeps for the shared index of this trailer."""
    return git_dir / f"gitmem-offsets.{trailer.hex()}"


def write_offsets(git_dir: Path, data: Data) -> None:
    """Write the sidecar of `data`'s entry starts (the trailer, then native uint32s), synced,
    atomically; before the shared index it describes is put in place."""
    trailer = bytes(data[len(data) - 20 :])
    target = offsets_path(git_dir, trailer)
    tmp = target.with_name(f"{target.name}{_TMP}{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(trailer + array("I", _starts(data)).tobytes())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def starts_of(git_dir: Path, data: Data) -> Iterator[Sequence[int]]:
    """The entry starts of the shared index `data`, from its sidecar (mapped: a lookup reads
    O(log n) of it). A missing sidecar, or one that does not match (a shared index git
    wrote), is computed by one walk and written for the next time (if the disk lets it)."""
    count = int.from_bytes(data[8:12])
    trailer = bytes(data[len(data) - 20 :])
    with ExitStack() as stack:
        try:
            f = stack.enter_context(open(offsets_path(git_dir, trailer), "rb"))
        except FileNotFoundError:
            f = None
        if f is not None and os.fstat(f.fileno()).st_size == 20 + 4 * (count + 1):
            side = stack.enter_context(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
            view = stack.enter_context(memoryview(side))
            starts = stack.enter_context(view[20:].cast("I"))
            if side[:20] == trailer and starts[0] == 12:
                yield starts
                return
    walked = _starts(data)
    with suppress(OSError):  # read-only or full: the walk stands for this lookup
        write_offsets(git_dir, data)
    yield walked


def _starts(data: Data) -> list[int]:
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
            length = data.find(b"\0", at + fixed) - at - fixed
            if length < 0:
                raise ValueError("a path without its NUL")
        at += (fixed + length + 8) & ~7
    starts.append(at)
    return starts


def plain(data: bytes) -> list[int] | None:
    """The entries' starts (`_starts`) if `data` is a whole, plain index file of version 2 or
    3 (its checksum right; no `link` nor any other extension git requires); None if not."""
    found = layout(data)
    return None if found is None or found[1] is not None else found[0]


def layout(data: bytes) -> tuple[list[int], bytes | None] | None:
    """The entries' starts (`_starts`) and the `link` extension's contents (None: no link)
    of a whole index file of version 2 or 3 (its checksum right; no extension git requires
    but `link`); None if it is not one."""
    if len(data) < 32 or data[:4] != b"DIRC" or data[4:8] not in (b"\0\0\0\2", b"\0\0\0\3"):
        return None
    if hashlib.sha1(data[:-20]).digest() != data[-20:]:
        return None
    try:
        starts = _starts(data)
    except (IndexError, ValueError):
        return None
    at, link = starts[-1], None
    while at + 8 <= len(data) - 20:
        size = int.from_bytes(data[at + 4 : at + 8])
        if data[at : at + 4] == b"link":
            link = data[at + 8 : at + 8 + size]
        elif not b"A" <= data[at : at + 1] <= b"Z":  # sdir and the like: not ours to write
            return None
        at += 8 + size
    return starts, link


def splice(
    data: bytes,
    changes: Mapping[bytes, bytes | None],
    starts: list[int] | None = None,
    extensions: bytes = b"",
    leading: Sequence[bytes] = (),
    leading_count: int | None = None,
) -> bytes:
    """The index file `data` (version 2 or 3, its extensions replaced by `extensions`, encoded)
    with each changed path's entries (all stages) replaced by the given encoded entry, or
    removed (None), and the encoded entries `leading` put before them (git's replacements, which
    a split part lists first; `leading_count` of them if an item holds several, of the
    version of `data`). `starts`: `_starts(data)`, if known."""
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

    parts: list[bytes] = list(leading)
    added = len(leading) if leading_count is None else leading_count
    copied, total = 0, count + added  # entries copied up to; the new count
    extended = version == 3 or any(e[60] << 8 & _EXTENDED for e in leading)
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
    parts.append(extensions)
    body = struct.pack(">4sII", b"DIRC", 3 if extended else 2, total) + b"".join(parts)
    return body + hashlib.sha1(body).digest()


# --- the shared index files ------------------------------------------------------------------


def write_shared(git_dir: Path, data: bytes) -> None:
    """Write a shared index (named for its own trailer, so never changed once written),
    synced before it is renamed in, and its sidecar of entry starts before it. One that is
    there already is touched instead, as git's write_shared_index does: an index is about to
    name it again, and `remove_unused` (or git's own expiry) goes by its mtime."""
    name = f"sharedindex.{data[-20:].hex()}"
    target = git_dir / name
    if target.exists():
        with suppress(OSError):  # read-only: then nobody removes it either
            os.utime(target)
        return
    tmp = git_dir / f"{name}{_TMP}{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        write_offsets(git_dir, data)  # before the shared index: never stale
        os.replace(tmp, target)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.errno is not None:
            raise OSError(exc.errno, os.strerror(exc.errno), str(target)) from exc
        raise


def remove_unused(git_dir: Path, keep: bytes, left: bytes | None) -> None:
    """Once the new index is in place: remove the shared indexes (and their sidecars) unused
    for five minutes, none a git command could still be reading. The one the old index named
    is kept and touched, so that it ages from now, when it stopped being used (as git does).
    Also the temporary files of a fold that died before renaming them (`_stale`)."""
    if left is not None and left != bytes(20):
        with suppress(OSError):
            os.utime(git_dir / f"sharedindex.{left.hex()}")
    now = time.time()
    kept = {f"sharedindex.{keep.hex()}"} | ({f"sharedindex.{left.hex()}"} if left else set())
    for other in git_dir.glob("sharedindex.*"):
        with suppress(OSError):
            if _TMP in other.name:
                if _stale(other, now):
                    other.unlink()
            elif other.name not in kept and other.stat().st_mtime < now - UNUSED_FOR:
                other.unlink()
    for sidecar in git_dir.glob("gitmem-offsets.*"):
        with suppress(OSError):
            if _TMP in sidecar.name:
                if _stale(sidecar, now):
                    sidecar.unlink()
                continue
            shared = git_dir / f"sharedindex.{sidecar.name.removeprefix('gitmem-offsets.')}"
            if not shared.exists():
                sidecar.unlink()


def _stale(tmp: Path, now: float) -> bool:
    """Whether a temporary file of `write_shared` or `write_offsets` (`<name>.tmp-<pid>`) was
    left by a writer that died: its process is gone, or it is older than a minute (the pid
    may have been reused since; writing one takes well under that)."""
    try:
        pid = int(tmp.name.rsplit(_TMP, 1)[1])
    except ValueError:
        return False  # not one of ours
    if tmp.stat().st_mtime < now - STALE_AFTER:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, someone else's
    return False
