"""What differs between two git trees, read from their raw objects: a subtree whose id is the
same on both sides is never read, and of a tree that differs only the entries that differ are
decoded (the others are equal bytes, set aside in C), so a diff's cost follows what changed,
not the size of the store. libgit2's tree diff reads and compares every entry of both trees:
3.6 s of a catch-up at a million records (docs/benchmarks.md, "Session 15: the catch-up's
diff at a million records").

`pairs` yields each entry that is not a tree and differs, as (path, before, after), a side
being (hex id, mode) or None, in git's order: a directory sorts as its name and a slash, so
"a.b" < "a/x" < "a0", and a name that is a file on one side and a directory on the other
comes once as the file and once as the directory's files. gitmem.store.gitread reads the
objects (pygit2 is its to import) and makes Changes of them; a tree on one side only it lists
with libgit2 (`whole`: faster for a large one, as a new month of records is), and so a tree
this module cannot read or parse, and a pair of trees either of which is over `LARGE` bytes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator

__all__ = ["LARGE", "Pair", "Read", "Side", "Whole", "pairs"]

Side = tuple[str, int]  # an entry's hex id and mode
Pair = tuple[str, Side | None, Side | None]  # path, before, after
Read = Callable[[bytes], bytes | None]  # a tree's raw id -> its raw object (None: unreadable)
Whole = Callable[[bytes | None, bytes | None, str], Iterator[Pair]]  # libgit2's, at a path

_TREE = 0o040000
_KIND = 0o170000
_ENTRY = re.compile(rb"[0-7]+ [^\0]*\0.{20}", re.DOTALL)  # mode, space, name, NUL, SHA-1
# A tree this large (bytes of its object, ~30k entries) is compared by libgit2 instead: splitting
# and comparing two such trees here cost 2-2.6x libgit2's diff of them (session 15's review: one
# changed entry of a 100,000-entry directory, 0.37 s against 0.14-0.19 s), as a directory grows
# when a bulk import fills one month of one type.
LARGE = 2 << 20


def pairs(
    read: Read, whole: Whole, old: bytes | None, new: bytes | None, base: str
) -> Iterator[Pair]:
    """The entries that differ between the trees `old` and `new` (raw ids; None: the empty
    tree), their paths under `base`."""
    if old is None or new is None:
        yield from whole(old, new, base)
        return
    if old == new:
        return
    old_data, new_data = read(old), read(new)
    if old_data is None or new_data is None or max(len(old_data), len(new_data)) > LARGE:
        yield from whole(old, new, base)  # unreadable, or large enough for libgit2 to be faster
        return
    before, after = _entries(old_data), _entries(new_data)
    if before is None or after is None:
        yield from whole(old, new, base)
        return
    left, right = _parsed(before - after), _parsed(after - before)
    for key in sorted(left.keys() | right.keys()):  # bytes: git's order, whatever the names
        a, b = left.get(key), right.get(key)
        if a == b:  # a tree's mode written two ways, "040000" and "40000"
            continue
        name = os.fsdecode(key.removesuffix(b"/"))  # as pygit2 decodes a path
        path = f"{base}/{name}" if base else name
        if key.endswith(b"/"):  # a tree on one side at least, never a file
            yield from pairs(read, whole, a and a[0], b and b[0], path)
        else:
            yield path, _side(a), _side(b)


def _entries(data: bytes) -> set[bytes] | None:
    """A tree object's entries, each as its bytes; None if they are not all well formed."""
    found = _ENTRY.findall(data)
    return set(found) if sum(map(len, found)) == len(data) else None


def _parsed(entries: set[bytes]) -> dict[bytes, tuple[bytes, int]]:
    """Entries by their place in git's order, their names' bytes (a directory's ending in a
    slash; names that are not UTF-8 stay apart, as git keeps them): raw id and mode, the mode
    as written (libgit2's diff does not normalise it either: "100664" differs from
    "100644")."""
    out: dict[bytes, tuple[bytes, int]] = {}
    for entry in entries:
        space = entry.index(b" ")
        end = entry.index(b"\0", space)
        mode = int(entry[:space], 8)
        name = entry[space + 1 : end]
        out[name + b"/" if mode & _KIND == _TREE else name] = (entry[end + 1 :], mode)
    return out


def _side(entry: tuple[bytes, int] | None) -> Side | None:
    return None if entry is None else (entry[0].hex(), entry[1])
