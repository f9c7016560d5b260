"""The git index (.git/index), kept by gitmem in git's split form so that a write stages its
few paths without rewriting an entry for every file in the store.

A plain index holds one entry per tracked file (its stat data and object id), and libgit2 can
only write it whole: ~10 MB and ~70 ms at 100k records, on every write. Git's split index
(`git update-index --split-index`, Documentation/gitformat-index) keeps most entries in an
immutable `.git/sharedindex.<id>` and only the changed ones in the small `.git/index`, whose
`link` extension names the shared file. gitmem writes that form itself:

- a write (`stage`) reads the small index, puts its paths' new entries in it and writes it
  back: its cost follows the number of entries changed since the last fold, not the store;
  a path of the shared index is changed by a replacement, as git writes it, never by an
  entry of its name, which git reads into memory it frees (gitmem.store.splitpart);
- the split part is folded into a new shared index when it passes FOLD_AT entries, when a
  path of the shared index is removed (the delete bitmap is not written here), when git left
  a delete bitmap, when an older gitmem may have written it (once), and when the index is
  still plain (an existing store: migrated silently, once);
- with `core.splitIndex=false` (a user's way back, with `git update-index --no-split-index`)
  every write is a plain, whole index, as before.

Git reads the form natively; libgit2 cannot ("unsupported mandatory extension"), so no pygit2
code may touch the index: the one lookup gitmem needs (`staged_id`) is here. Everything is
under git's `index.lock`. Entries are written with the stat data of the file just written,
so `git status` finds them clean without reading the file; racily clean entries are smudged
when the index is rewritten, as git does, and kept in the split part, from the shared index
as well (as replacements), so that the next write still checks them (gitmem.store.racy).
"""

from __future__ import annotations

import hashlib
import mmap
import os
import time
from collections.abc import Iterable, Mapping
from itertools import pairwise
from pathlib import Path

from gitmem.errors import GitmemError
from gitmem.store import racy, sharedindex, splitpart
from gitmem.store.indexfile import (
    NO_BITMAPS,
    NULL,
    STAT,
    Entry,
    IndexFile,
    IndexUnreadable,
    encode,
    entry_at,
    entry_bytes,
    entry_for,
    parse,
    read,
    with_entries,
)

__all__ = [
    "FOLD_AT",
    "Entry",
    "IndexFile",
    "IndexUnreadable",
    "busy",
    "entry_for",
    "merged",
    "read",
    "stage",
    "staged_id",
]

FOLD_AT = 1000  # entries the split part may hold before a write folds them into a new shared file
LOCK_WAIT = 2.0  # seconds a write waits for a git command's index.lock before it gives up


def merged(git_dir: Path, index: IndexFile | None) -> list[Entry]:
    """Every entry the index says, its shared part and its split part put together, sorted."""
    if index is None:
        return []
    if index.link is None:
        return index.entries
    base = _shared(git_dir, index)
    entries = [] if base is None else list(base.entries)
    deleted, replaced = index.bitmaps()
    for n, pos in enumerate(replaced):  # the split part's first entries, in order
        new = index.entries[n]
        entries[pos] = Entry(new.path or entries[pos].path, new.fixed)
    gone = set(deleted)
    entries = [e for i, e in enumerate(entries) if i not in gone]
    return with_entries(entries, index.entries[len(replaced) :])


def staged_id(git_dir: Path, path: str) -> bytes | None:
    """The object id the index stages for `path` (stage 0), or None."""
    name = path.encode()
    try:
        raw = (git_dir / "index").read_bytes()
    except FileNotFoundError:
        return None
    laid = sharedindex.layout(raw)
    bisected = laid is not None and _unmarked(laid[1])  # plain, or split with no bitmaps
    if laid is not None and not bisected:  # the replacements: looked at first
        starts, link = laid
        assert link is not None
        readable, replacement = splitpart.replacement_of(git_dir, raw, starts, link, name)
        if replacement is not None:
            return None if replacement.stage else replacement.oid
        if readable:
            count = len(IndexFile(2, [], link).bitmaps()[1])
            raw, starts = splitpart.after_replacements(raw, starts, count)
            laid, bisected = (starts, link), True
    if laid is not None and bisected:
        starts, link = laid
        fixed = sharedindex.find(raw, name, starts)  # the split part overrides the shared one
        if fixed is None and link is not None and link[:20] != NULL:
            shared = _find_shared(git_dir, IndexFile(2, [], link), name)
            fixed = None if shared is None else shared.fixed
        return None if fixed is None or Entry(name, fixed).stage else Entry(name, fixed).oid
    index = parse(raw, git_dir / "index")
    if index.link is None or not any(index.bitmaps()):
        for entry in reversed(index.entries):  # the split part overrides the shared one
            if entry.path == name:
                return entry.oid if entry.stage == 0 else None
        if index.base is None or index.base == NULL:
            return None
        found = _find_shared(git_dir, index, name)
        return None if found is None or found.stage else found.oid
    for entry in merged(git_dir, index):
        if entry.path == name and entry.stage == 0:
            return entry.oid
    return None


def stage(
    git_dir: Path,
    changes: Mapping[str, Entry | None],
    *,
    split: bool = True,
    root: Path | None = None,
) -> None:
    """Make the index say each path's new entry (None: the path is no longer tracked), under
    git's index.lock; in the split form unless `split` is False. `root`: the work tree (by
    default the directory holding `git_dir`)."""
    index_path = git_dir / "index"
    lock = git_dir / "index.lock"
    fd = _lock(lock)
    try:
        try:
            # One moment for the whole write, by the file system's clock (the lock file was
            # just made): what a fold keeps in the split part is decided once (`_fresh`).
            cutoff = os.fstat(fd).st_mtime_ns // 1_000_000_000 - 1
            data, shared, before = _restaged(
                git_dir, changes, split, root or git_dir.parent, cutoff
            )
            if shared is not None:
                sharedindex.write_shared(git_dir, shared)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(lock, index_path)
    except BaseException as exc:
        lock.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.errno is not None and exc.filename is None:
            raise OSError(exc.errno, os.strerror(exc.errno), str(index_path)) from exc
        raise
    if shared is not None:  # only now is the shared index the old index named unused
        if split:
            splitpart.mark(git_dir)  # a fold's index shadows no shared entry by name
        sharedindex.remove_unused(git_dir, keep=shared[-20:], left=before)


# --- building an index file -----------------------------------------------------------------


def _restaged(
    git_dir: Path, changes: Mapping[str, Entry | None], split: bool, root: Path, cutoff: int
) -> tuple[bytes, bytes | None, bytes | None]:
    """The new index file, the new shared index if any, and the shared index the current
    index names (if any). A plain index (an existing store's, or with core.splitIndex=false)
    is spliced as bytes, not parsed."""
    path = git_dir / "index"
    try:
        with open(path, "rb") as f:
            raw, since = f.read(), os.fstat(f.fileno()).st_mtime_ns // 1_000_000_000
    except FileNotFoundError:
        return (*_staged(git_dir, None, changes, split, cutoff), None)
    laid = sharedindex.layout(raw)
    if split and laid is not None and laid[1] is not None:
        within = splitpart.within(git_dir, raw, laid[0], laid[1], changes, since, root, FOLD_AT)
        if within is not None:
            return within, None, None
    starts = None if laid is None or laid[1] is not None else laid[0]
    if starts is None:
        current = _named(git_dir, raw, laid) or parse(raw, path)
        before = current.base
        if any(current.bitmaps()):
            # git's delete bitmap (replacements alone are named by `_named`): the index is
            # folded whole, as if plain, so that the replacements (their paths left empty)
            # are checked under their names and every racy entry, of either part, is held in
            # the split part (`_staged`), as git's prepare_to_write_split_index does.
            current = IndexFile(current.version, merged(git_dir, current), None)
        elif current.base is not None:  # the shared index's racy entries, held the same way
            shared_racy = list(racy.racy_shared(git_dir, current.base, since).values())
            current = IndexFile(
                current.version, with_entries(shared_racy, current.entries), current.link
            )
        kept = racy.smudged(root, current.entries, since, {p.encode() for p in changes})
        current = IndexFile(current.version, kept, current.link)
        return (*_staged(git_dir, current, changes, split, cutoff, since), before)
    spliced = racy.smudged_plain(root, raw, starts, since, {p.encode() for p in changes})
    if not split:
        spliced.update(
            {p.encode(): None if e is None else entry_bytes(e) for p, e in changes.items()}
        )
        return sharedindex.splice(raw, spliced, starts), None, None
    fresh = [e for e in changes.values() if e is not None and _fresh(e, cutoff)]
    spliced.update({p.encode(): None if e is None else entry_bytes(e) for p, e in changes.items()})
    # The migration's racily clean entries (smudged or not) stay in the split part, where the
    # next write checks them again; in the shared index nothing would (`_staged`).
    names = {p.encode() for p in changes}
    unsettled = [e for e in racy.racy_plain(raw, starts, since) if e.path not in names]
    held = [*fresh, *racy.smudged(root, [e for e in unsettled if not e.stage], since, set())]
    spliced.update({e.path: None for e in held})
    shared = sharedindex.splice(raw, spliced, starts)
    return _split_part(shared, held), shared, None


def _named(
    git_dir: Path, raw: bytes, laid: tuple[list[int], bytes | None] | None
) -> IndexFile | None:
    """A split part with a replace bitmap (and no delete bitmap) as entries of their names
    and no bitmaps, which a fold splices into the shared index as bytes; None if it is not
    one (parsed whole, then)."""
    if laid is None or laid[1] is None or _unmarked(laid[1]):
        return None
    starts, link = laid[0], laid[1]
    named = splitpart.replacements(git_dir, raw, starts, link)
    if named is None:
        return None
    rest, rest_starts = splitpart.after_replacements(raw, starts, len(named))
    entries = [entry_at(rest, at, following) for at, following in pairwise(rest_starts)]
    # git adds the split part's named entries over its replacements: they win, as here
    return IndexFile(2, with_entries(named, entries), link[:20] + NO_BITMAPS)


def _unmarked(link: bytes | None) -> bool:
    """Whether an index of this `link` (None: a plain index) has no delete or replace
    bitmap: its entries are all its own, in git's order."""
    return link is None or not any(IndexFile(2, [], link).bitmaps())


def _staged(
    git_dir: Path,
    current: IndexFile | None,
    changes: Mapping[str, Entry | None],
    split: bool,
    cutoff: int,
    since: int = 0,
) -> tuple[bytes, bytes | None]:
    """The new index file, and the new shared index if this write folds. A fold keeps in the
    split part, beside the entries just written, every entry of the split part that is still
    racily clean (its mtime not older than `since`, the index read): the shared index's entries
    are not looked at again (`smudged`), so one edited later in that same second would pass for
    clean; git's prepare_to_write_split_index does the same."""
    updates = {path.encode(): entry for path, entry in changes.items()}
    racy = [
        e
        for e in (current.entries if current is not None else ())
        if e.path
        and not e.stage
        and e.path not in updates
        and STAT.unpack_from(e.fixed)[2] >= since > 0
    ]
    held = [*(e for e in updates.values() if _fresh(e, cutoff)), *racy]
    base = None if current is None else current.base
    if split and current is not None and base not in (None, NULL) and not any(current.bitmaps()):
        settled = {p: None if _fresh(e, cutoff) else e for p, e in updates.items()}
        spliced = _spliced(git_dir, current, {**settled, **{e.path: None for e in racy}})
        if spliced is not None:
            return _split_part(spliced, held), spliced
    if not split:
        everything = [e for e in merged(git_dir, current) if e.path not in updates]
        everything = with_entries(everything, [e for e in updates.values() if e is not None])
        return encode(everything, None), None
    out = updates.keys() | {e.path for e in racy}
    kept = [e for e in merged(git_dir, current) if e.path not in out]
    older = [e for e in updates.values() if e is not None and not _fresh(e, cutoff)]
    shared = encode(with_entries(kept, older), None)
    return _split_part(shared, held), shared


def _fresh(entry: Entry | None, cutoff: int) -> bool:
    """Whether an entry a fold writes stays in the split part (or, None, is gone): one whose
    file's mtime is not two seconds older than now may still be racily clean against the
    index about to be written, and the next write must check it (`smudged`), which it does
    not do for the shared index's entries. Older ones go into the shared index (an import's
    thousands of files, but its last second's): they cannot be racy against any later index.
    `cutoff` is one second before the write's moment by the file system's clock (the mtime
    of the lock file it made), decided once a write: an entry judged twice could be judged
    both ways across a second's tick and land in neither part (review, session 13)."""
    return entry is None or STAT.unpack_from(entry.fixed)[2] >= cutoff


def _split_part(shared: bytes, written: Iterable[Entry | None]) -> bytes:
    """The small index over a fold's new shared index, holding the entries just written that
    are `_fresh` (the caller's choice)."""
    return encode(
        with_entries([], (e for e in written if e is not None)), shared[-20:] + NO_BITMAPS
    )


def _spliced(
    git_dir: Path, current: IndexFile, updates: Mapping[bytes, Entry | None]
) -> bytes | None:
    """The shared index with the split part folded in and `updates` put in (None: the path
    taken out), its unchanged entries copied as bytes (gitmem.store.sharedindex); None if it
    is not of a form that allows it."""
    if any(e.stage for e in current.entries):
        return None
    data = _shared_bytes(git_dir, current)
    if data is None or data[:4] != b"DIRC" or data[4:8] not in (b"\0\0\0\2", b"\0\0\0\3"):
        return None
    if hashlib.sha1(data[:-20]).digest() != data[-20:]:
        return None  # parsed whole, which names the damage
    changes: dict[bytes, bytes | None] = {e.path: entry_bytes(e) for e in current.entries}
    changes.update({p: None if e is None else entry_bytes(e) for p, e in updates.items()})
    return sharedindex.splice(data, changes)


def busy(git_dir: Path) -> bool:
    """Whether git's index.lock is still there after waiting up to LOCK_WAIT for the git
    command that holds it (a `git status` an editor runs) to finish, as `_lock` waits."""
    lock = git_dir / "index.lock"
    for _ in range(int(LOCK_WAIT / 0.01)):
        if not lock.exists():
            return False
        time.sleep(0.01)
    return lock.exists()


def _lock(lock: Path) -> int:
    """git's index.lock, taken as git takes it; a git command's is waited for a while."""
    for _ in range(int(LOCK_WAIT / 0.01)):
        try:
            return os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            time.sleep(0.01)
    raise GitmemError(
        f"git is busy in this store ({lock} exists); if no git command is running there, "
        "remove that file and try again"
    )


# --- reading ----------------------------------------------------------------------------------


def _shared(git_dir: Path, index: IndexFile) -> IndexFile | None:
    data = _shared_bytes(git_dir, index)
    name = f"sharedindex.{(index.base or NULL).hex()}"
    return None if data is None else parse(data, git_dir / name)


def _shared_bytes(git_dir: Path, index: IndexFile) -> bytes | None:
    """The shared index the link names (None: it names none)."""
    base = index.base
    if base is None or base == NULL:
        return None
    path = git_dir / f"sharedindex.{base.hex()}"
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise _unreadable_shared(path, "missing") from None


def _unreadable_shared(path: Path, why: str) -> IndexUnreadable:
    return IndexUnreadable(
        f"the git index names {path}, which is {why}; rebuild the index from the last commit "
        'with "git read-tree HEAD" (the files are left as they are), then try again'
    )


def _find_shared(git_dir: Path, index: IndexFile, name: bytes) -> Entry | None:
    """The shared index's entry for `name`, found without reading the others (version 4,
    whose paths are compressed, is parsed whole)."""
    path = git_dir / f"sharedindex.{(index.base or NULL).hex()}"
    try:
        f = open(path, "rb")  # noqa: SIM115 (closed by the with below)
    except FileNotFoundError:
        raise _unreadable_shared(path, "missing") from None
    if os.fstat(f.fileno()).st_size < 32:
        f.close()
        raise _unreadable_shared(path, "empty or cut short")
    with f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data[-20:] != (index.base or NULL):  # as git checks: not the file it is named for
            raise _unreadable_shared(path, "damaged (its checksum is not its name)")
        if data[4:8] == (4).to_bytes(4, "big"):
            found = [e for e in parse(bytes(data), path).entries if e.path == name]
            return found[0] if found else None
        try:
            with sharedindex.starts_of(git_dir, data) as starts:
                fixed = sharedindex.find(data, name, starts)
        except (IndexError, ValueError):
            raise _unreadable_shared(path, "damaged (its entries cannot be read)") from None
    return None if fixed is None else Entry(name, fixed)
