"""The split part of gitmem's split index (gitmem.store.gitindex) changed without a fold, in
the form git itself writes: a path of the shared index is changed by a *replacement* (an
entry listed first in the split part, its path left empty, its position in the shared index
set in the link extension's replace bitmap), never by an entry of the same name.

Why not by name: git reads such a named entry (merge_base_index adds it with
add_index_entry) by putting it in place of the shared entry in its in-memory shared index,
though it lives in the memory of the index just read. A command that then rebuilds the index
from a tree and writes it (`git commit -- path`'s temporary index, `git reset --hard`,
`git checkout <rev>`, `git read-tree -m`) frees that memory first and reads it afterwards:
a use after free (valgrind: an invalid read of the entry's name length, then of its name, in
the split index's write), which crashes git now and then and may write a wrong index.
gitmem's writes before session 14 shadowed shared entries by name (an amend of an old
record); git's own replacements are copied into the shared index's memory instead.

An index written by that older code may still hold such entries: `within` declines to change
it until one fold has rewritten it (the marker file `REPLACES`, written with a fold, says
this repository's index no longer has any).
"""

from __future__ import annotations

import mmap
import os
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from itertools import pairwise
from pathlib import Path

from gitmem.store import racy, sharedindex
from gitmem.store.indexfile import (
    NULL,
    Entry,
    IndexFile,
    entry_at,
    entry_bytes,
    link,
)

__all__ = [
    "REPLACES",
    "after_replacements",
    "mark",
    "replacement_of",
    "replacements",
    "within",
]

REPLACES = "gitmem-replaces"  # in .git: the index has no entry shadowing a shared one by name


def mark(git_dir: Path) -> None:
    """Say that the index just written by a fold has no named entry shadowing a shared one
    (a read-only .git is left as it is: its next write folds again)."""
    with suppress(OSError):
        (git_dir / REPLACES).touch()


def within(
    git_dir: Path,
    raw: bytes,
    starts: list[int],
    link_in: bytes,
    changes: Mapping[str, Entry | None],
    since: int,
    root: Path,
    limit: int,
) -> bytes | None:
    """The split part `raw` (entries at `starts`, `link_in` its link) with `changes` put in,
    as bytes: a path of the shared index as a replacement, any other spliced in by name; its
    racily clean entries smudged (`racy.smudged`, `racy.smudged_plain`) and the shared
    index's racy entries held as replacements, as git's prepare_to_write_split_index holds
    them, so that the next write checks them again. None if this write must fold: more than
    `limit` entries, the shared index missing or not of version 2 or 3, a path of it removed
    or with conflict stages, git's delete bitmap, or an index older code may have written
    (no `REPLACES` marker). A write costs a walk of the split part's entry boundaries and a
    bisection of the shared index per changed path, not a Python object per entry."""
    base = link_in[:20]
    updates = {path.encode(): entry for path, entry in changes.items()}
    if base != NULL and not (git_dir / REPLACES).exists():
        return None
    deleted, replaced = IndexFile(2, [], link_in).bitmaps()
    if deleted or (replaced and base == NULL) or len(replaced) >= len(starts):
        return None
    held: dict[int, Entry] = {}  # replacements written anew, by position in the shared index
    moved: set[bytes] = set()  # the changed paths written as replacements
    kept: dict[int, bytes] = {}  # the replacements copied as they are
    if base != NULL:
        with _shared(git_dir, base) as shared:
            if shared is None:
                return None
            data, shared_starts = shared
            if replaced and max(replaced) >= len(shared_starts) - 1:
                return None
            for path, entry in updates.items():
                pos = sharedindex.index_of(data, path, shared_starts)
                if pos is None:
                    continue
                if entry is None or _conflicted(data, shared_starts, pos):
                    return None  # a delete bitmap, or conflict stages: folded
                held[pos] = entry
                moved.add(path)
            for n, pos in enumerate(replaced):  # the split part's first entries, in order
                at, following = starts[n], starts[n + 1]
                if pos in held:
                    continue
                if int.from_bytes(raw[at + 8 : at + 12]) >= since:  # racy: checked by name
                    name = sharedindex.name_at(data, shared_starts, pos)
                    held[pos] = Entry(name, entry_at(raw, at, following).fixed)
                else:
                    kept[pos] = raw[at:following]
        for pos, entry in racy.racy_shared(git_dir, base, since).items():
            if pos not in kept:
                held.setdefault(pos, entry)
    raw, starts = after_replacements(raw, starts, len(replaced))
    spliced = racy.smudged_plain(root, raw, starts, since, set(updates))
    spliced.update(
        {p: None if e is None or p in moved else entry_bytes(e) for p, e in updates.items()}
    )  # a moved path's entry of its name, if an older gitmem left one, goes
    if held or len(link_in) == 20:  # (a link without bitmaps would crash git 2.39)
        anew = sorted(held)
        checked = racy.smudged(root, [held[pos] for pos in anew], since, set(updates))
        for pos, entry in zip(anew, checked, strict=True):
            kept[pos] = entry_bytes(Entry(b"", entry.fixed))
        order = sorted(kept)
        ext, leading = link(base, order), [kept[p] for p in order]
    else:  # the replacements as they were, bitmap and all (most writes add new paths only)
        ext, leading = link_in, [b"".join(kept[p] for p in replaced)] if kept else []
    data_out = sharedindex.splice(
        raw, spliced, starts, b"link" + len(ext).to_bytes(4, "big") + ext, leading, len(kept)
    )
    return None if int.from_bytes(data_out[8:12]) > limit else data_out


def _conflicted(data: mmap.mmap, starts: Sequence[int], pos: int) -> bool:
    """Whether the shared entry at `pos` is a conflict stage, or has one after it."""
    if data[starts[pos] + 60] & 0x30:
        return True
    following = pos + 1
    return following < len(starts) - 1 and sharedindex.name_at(
        data, starts, following
    ) == sharedindex.name_at(data, starts, pos)


@contextmanager
def _shared(git_dir: Path, base: bytes) -> Iterator[tuple[mmap.mmap, Sequence[int]] | None]:
    """The shared index `base`, mapped, and its entry starts; None if it is missing, cut
    short, not the file `base` names (its trailer, as git checks), not of version 2 or 3, or
    its entries cannot be walked (the fold parses it whole, and names what is wrong)."""
    try:
        f = open(git_dir / f"sharedindex.{base.hex()}", "rb")  # noqa: SIM115 (closed below)
    except FileNotFoundError:
        yield None
        return
    with f:
        if os.fstat(f.fileno()).st_size < 32:
            yield None
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if data[4:8] not in (b"\0\0\0\2", b"\0\0\0\3") or data[-20:] != base:
                yield None
                return
            with ExitStack() as stack:
                try:
                    shared_starts = stack.enter_context(sharedindex.starts_of(git_dir, data))
                except (IndexError, ValueError):  # garbled past its header
                    yield None
                    return
                yield data, shared_starts


def replacement_of(
    git_dir: Path, raw: bytes, starts: list[int], link_in: bytes, name: bytes
) -> tuple[bool, Entry | None]:
    """Whether the split part `raw` is of a form read here (no delete bitmap, its shared
    index of version 2 or 3), and the replacement it holds for `name`, if any: the shared
    index bisected for `name`'s position, looked for in the replace bitmap."""
    deleted, replaced = IndexFile(2, [], link_in).bitmaps()
    base = link_in[:20]
    if deleted or (replaced and base == NULL) or len(replaced) >= len(starts):
        return False, None
    if not replaced:
        return True, None
    with _shared(git_dir, base) as shared:
        if shared is None or max(replaced) >= len(shared[1]) - 1:
            return False, None
        pos = sharedindex.index_of(shared[0], name, shared[1])
    n = bisect_left(replaced, pos) if pos is not None else len(replaced)
    if n == len(replaced) or replaced[n] != pos:
        return True, None
    return True, Entry(name, entry_at(raw, starts[n], starts[n + 1]).fixed)


def replacements(
    git_dir: Path, raw: bytes, starts: list[int], link_in: bytes | None
) -> list[Entry] | None:
    """The split part's first entries, the replacements of the shared entries its replace
    bitmap marks, each under its shared entry's path (the file leaves it empty); None if the
    index is not of a form that allows it (a delete bitmap, a shared index of version 4
    whose paths are compressed, a bitmap that does not match): parsed whole, then."""
    if link_in is None:
        return []
    deleted, replaced = IndexFile(2, [], link_in).bitmaps()
    base = link_in[:20]
    if deleted or (replaced and base == NULL):
        return None
    if not replaced:
        return []
    if len(replaced) >= len(starts):
        return None  # the fold names what is wrong
    with _shared(git_dir, base) as shared:
        if shared is None or max(replaced) >= len(shared[1]) - 1:
            return None
        names = [sharedindex.name_at(shared[0], shared[1], pos) for pos in replaced]
    written = (entry_at(raw, at, following) for at, following in pairwise(starts))
    return [Entry(e.path or name, e.fixed) for e, name in zip(written, names, strict=False)]


def after_replacements(raw: bytes, starts: list[int], count: int) -> tuple[bytes, list[int]]:
    """The split part without its first `count` entries (the replacements), and its entries'
    starts: the entries it adds, sorted by path as a lookup or a splice needs them."""
    if not count:
        return raw, starts
    cut = starts[count] - 12
    return raw[:8] + (len(starts) - 1 - count).to_bytes(4, "big") + raw[cut + 12 :], [
        at - cut for at in starts[count:]
    ]
