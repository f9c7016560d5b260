"""Reading a git repository, through pygit2: objects, trees, history, the work tree's state.

One of the two modules that import pygit2 (with gitmem.store.git, whose GitRepo adds the
writes to this GitReader). What they hand out are frozen values of their own (Commit, Change,
PathStatus, Identity), so no other module meets a pygit2 object.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Self

import pygit2

from gitmem.errors import StoreMissing
from gitmem.store import gitindex, gitstatus, treediff

__all__ = ["Change", "Commit", "GitReader", "Identity", "PathStatus"]

# Tree entries that are not regular files: gitmem never writes them and takes none from a remote.
_NOT_FILES = frozenset({pygit2.enums.FileMode.LINK, pygit2.enums.FileMode.COMMIT})
_SUBMODULE = pygit2.enums.FileMode.COMMIT
_KIND = 0o170000  # a mode's type bits: a file (of either mode), a link, a tree, a submodule
_ZERO = "0" * 40  # libgit2's id of a side that is not there


@dataclass(frozen=True)
class Identity:
    name: str
    email: str


@dataclass(frozen=True)
class Commit:
    id: str
    parents: tuple[str, ...]
    author: Identity
    committer: Identity
    authored: datetime
    committed: datetime
    message: str

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]

    def trailers(self) -> dict[str, str]:
        """`Key: value` lines of the last paragraph; the first value wins for repeated keys."""
        paragraphs = self.message.strip().split("\n\n")
        out: dict[str, str] = {}
        if len(paragraphs) < 2:
            return out
        for line in paragraphs[-1].splitlines():
            key, sep, value = line.partition(": ")
            if sep and key and " " not in key:
                out.setdefault(key, value.strip())
        return out


@dataclass(frozen=True)
class Change:
    """One path that differs between two commits."""

    path: str
    old: str | None  # blob id before, None when added
    new: str | None  # blob id after, None when deleted
    link: bool = False  # after: a symbolic link (or a submodule), not a regular file


@dataclass(frozen=True)
class PathStatus:
    path: str
    state: str  # "modified", "added", "deleted"


def _identity(sig: pygit2.Signature) -> Identity:
    return Identity(sig.name, sig.email)


def _time(sig: pygit2.Signature) -> datetime:
    return datetime.fromtimestamp(sig.time, UTC)


class GitReader:
    """A non-bare repository with a work tree, opened once and reused for many operations."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self._repo = repo
        workdir = repo.workdir
        if workdir is None:
            raise StoreMissing(f"{repo.path} is a bare repository; a store needs a work tree")
        self.root = Path(workdir).resolve()
        self.git_dir = Path(repo.path).resolve()

    # --- opening -----------------------------------------------------------------------------

    @classmethod
    def open(cls, root: Path) -> Self:
        if not (root / ".git").exists():
            raise StoreMissing(f"no git repository at {root}")
        try:
            repo = pygit2.Repository(str(root), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
        except pygit2.GitError as exc:
            raise StoreMissing(f"cannot open the git repository at {root}: {exc}") from exc
        return cls(repo)

    def config_identity(self) -> Identity | None:
        config = self._repo.config
        try:
            name, email = config["user.name"], config["user.email"]
        except KeyError:
            return None
        return None if name is None or email is None else Identity(str(name), str(email))

    # --- reading -----------------------------------------------------------------------------

    def head(self) -> str | None:
        try:
            return str(self._repo.head.target)
        except (pygit2.GitError, KeyError):
            return None

    def branch(self) -> str:
        ref = self._repo.lookup_reference("HEAD")
        target = ref.target if isinstance(ref.target, str) else "HEAD"
        return target.removeprefix("refs/heads/")

    def resolve(self, rev: str) -> str | None:
        """A commit id for a ref, a (short) hash or a revision expression; None if none."""
        try:
            obj = self._repo.revparse_single(rev)
            commit = obj.peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            return None
        return str(commit.id)

    def refs(self, prefix: str) -> dict[str, str]:
        """name -> commit of every reference under `prefix` (e.g. "refs/gitmem/presence/")."""
        found: dict[str, str] = {}
        for name in self._repo.references:
            if name.startswith(prefix):
                target = self.resolve(name)
                if target is not None:
                    found[name] = target
        return found

    def is_ancestor(self, ancestor: str, commit_id: str) -> bool:
        """Whether `ancestor` is `commit_id` or reachable from it."""
        if ancestor == commit_id:
            return True
        return bool(self._repo.descendant_of(commit_id, ancestor))

    def commit(self, commit_id: str) -> Commit:
        c = self._repo[commit_id].peel(pygit2.Commit)
        return Commit(
            id=str(c.id),
            parents=tuple(str(p) for p in c.parent_ids),
            author=_identity(c.author),
            committer=_identity(c.committer),
            authored=_time(c.author),
            committed=_time(c.committer),
            message=c.message,
        )

    def blob_at(self, commit_id: str, path: str) -> bytes | None:
        entry_id = self.entry_id(commit_id, path)
        return None if entry_id is None else self.blob(entry_id)

    def entry_id(self, commit_id: str, path: str) -> str | None:
        tree = self._repo[commit_id].peel(pygit2.Tree)
        try:
            entry = tree[path]
        except KeyError:
            return None
        return str(entry.id) if entry.type_str == "blob" else None

    def entry_ids(self, commit_id: str, paths: Iterable[str]) -> dict[str, str | None]:
        """The id of each path's entry at a commit, a blob's or a tree's (None: absent), the
        commit's tree read once: a history walk asks for many paths per commit."""
        tree = self._repo[commit_id].peel(pygit2.Tree)
        out: dict[str, str | None] = {}
        for path in paths:
            try:
                out[path] = str(tree[path].id)
            except KeyError:
                out[path] = None
        return out

    def blob(self, blob_id: str) -> bytes:
        """A blob's bytes (KeyError if there is none). Read from the object database directly:
        half the cost of making an object first, and an index build reads every blob."""
        kind, data = self._repo.odb.read(pygit2.Oid(hex=blob_id))
        if kind != pygit2.enums.ObjectType.BLOB:
            raise KeyError(f"{blob_id} is not a blob")
        out: bytes = data
        return out

    def files(self, commit_id: str | None, prefix: str) -> Iterator[tuple[str, str]]:
        """(path, blob id) of every file under `prefix` at a commit, in path order."""
        if commit_id is None:
            return
        tree = self._repo[commit_id].peel(pygit2.Tree)
        try:
            sub = tree[prefix.rstrip("/")] if prefix else tree
        except KeyError:
            return
        if sub.type_str != "tree":
            return
        base = prefix.rstrip("/")
        yield from self._walk(self._repo[sub.id].peel(pygit2.Tree), base)

    def _walk(self, tree: pygit2.Tree, base: str) -> Iterator[tuple[str, str]]:
        for entry in tree:
            path = f"{base}/{entry.name}" if base else str(entry.name)
            if entry.type_str == "tree":
                yield from self._walk(self._repo[entry.id].peel(pygit2.Tree), path)
            elif entry.type_str == "blob":
                yield path, str(entry.id)

    def diff(self, old: str | None, new: str | None) -> list[Change]:
        """Paths that differ between two commits (either may be None for the empty tree), in
        git's order, as libgit2's tree diff gives them: a rename is a deletion and an
        addition, and so is a file that becomes a link, a submodule or a directory (or back);
        a mode changed alone is a change with the same ids. Subtrees with equal ids are not
        read (gitmem.store.treediff), so the cost follows what changed."""
        if old == new:
            return []
        out: list[Change] = []
        for path, a, b in self._pairs(self._tree(old), self._tree(new), ""):
            if a is not None and b is not None and a[1] & _KIND == b[1] & _KIND:
                out.append(Change(path, a[0], b[0], link=b[1] in _NOT_FILES))
                continue
            if a is not None:
                out.append(Change(path, a[0], None))
            if b is not None:
                out.append(Change(path, None, b[0], link=b[1] in _NOT_FILES))
        return out

    def changed(self, old: str | None, new: str | None, prefix: str) -> list[Change]:
        """The files (links included, submodules not) under `prefix` that differ between two
        commits, one change a path, in git's order; a mode changed alone is none. The history
        walk's question (gitmem.recall.commitwalk): what content each commit wrote where."""
        out: list[Change] = []
        pairs = self._pairs(self._subtree(old, prefix), self._subtree(new, prefix), prefix)
        for path, a, b in pairs:
            before = a[0] if a is not None and a[1] & _KIND != _SUBMODULE else None
            after = b[0] if b is not None and b[1] & _KIND != _SUBMODULE else None
            if before != after:
                out.append(Change(path, before, after))
        return out

    def _pairs(self, old: bytes | None, new: bytes | None, base: str) -> Iterator[treediff.Pair]:
        return treediff.pairs(self._raw_tree, self._whole, old, new, base)

    def _tree(self, commit_id: str | None) -> bytes | None:
        """The raw id of a commit's tree."""
        return self._repo[commit_id].peel(pygit2.Tree).id.raw if commit_id else None

    def _subtree(self, commit_id: str | None, prefix: str) -> bytes | None:
        if not commit_id:
            return None
        try:
            entry = self._repo[commit_id].peel(pygit2.Tree)[prefix]
        except KeyError:
            return None
        return entry.id.raw if entry.type_str == "tree" else None

    def _raw_tree(self, tree_id: bytes) -> bytes | None:
        """A tree's raw object; None if it is not a tree, or not in the object database any
        more (a purge pruned it while this repository still holds it parsed: libgit2's diff
        then reads what it holds, as it always did)."""
        try:
            kind, data = self._repo.odb.read(pygit2.Oid(raw=tree_id))
        except KeyError:  # pygit2's NotFoundError
            return None
        return bytes(data) if kind == pygit2.enums.ObjectType.TREE else None

    def _tree_object(self, tree_id: bytes | None) -> pygit2.Tree | None:
        return None if tree_id is None else self._repo[pygit2.Oid(raw=tree_id)].peel(pygit2.Tree)

    def _whole(self, old: bytes | None, new: bytes | None, base: str) -> Iterator[treediff.Pair]:
        """libgit2's diff of two trees (raw ids; None: the empty tree), as treediff's pairs:
        how a tree on one side only is listed."""
        a, b = self._tree_object(old), self._tree_object(new)
        if b is None:
            if a is None:
                return
            diff = a.diff_to_tree()
        elif a is None:
            diff = b.diff_to_tree(swap=True)
        else:
            diff = a.diff_to_tree(b)
        prefix = f"{base}/" if base else ""
        for delta in diff.deltas:
            sides = [
                None if str(f.id) == _ZERO else (str(f.id), int(f.mode))
                for f in (delta.old_file, delta.new_file)
            ]
            yield prefix + (delta.new_file.path or delta.old_file.path), sides[0], sides[1]

    def walk(self, start: str | None) -> Iterator[Commit]:
        """Commits reachable from `start`, newest first (topological, then time)."""
        if start is None:
            return
        order = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME
        for c in self._repo.walk(start, order):
            yield self.commit(str(c.id))

    def status(self, prefix: str = "") -> list[PathStatus]:
        """Uncommitted changes in the work tree or the git index, under `prefix`: git's own
        word (libgit2 cannot read the split index gitmem keeps, gitmem.store.gitindex)."""
        return [PathStatus(path, state) for path, state in gitstatus.status(self.root, prefix)]

    def is_dirty(self, path: str) -> bool:
        """Whether one path differs in the work tree or the git index from HEAD.

        Compared by content hash and one index lookup, not with libgit2's status, whose cost
        grows with the size of the index."""
        head = self.head()
        committed = None if head is None else self.entry_id(head, path)
        target = self.root / path
        try:
            # A link is what git stores of it, the name it points at, not what it points at.
            data = os.fsencode(os.readlink(target)) if target.is_symlink() else target.read_bytes()
            on_disk: str | None = str(pygit2.hash(data))
        except FileNotFoundError:
            on_disk = None
        if on_disk != committed:
            return True
        staged = gitindex.staged_id(self.git_dir, path)
        return (None if staged is None else staged.hex()) != committed

    # --- the history graph (sync) -------------------------------------------------------------

    def merge_base(self, a: str, b: str) -> str | None:
        base = self._repo.merge_base(a, b)
        return None if base is None else str(base)

    def between(self, tip: str, hidden: Sequence[str]) -> list[str]:
        """Commits reachable from `tip` but not from any of `hidden`, parents first."""
        order = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE
        walker = self._repo.walk(tip, order)
        for commit_id in hidden:
            walker.hide(commit_id)
        return [str(c.id) for c in walker]

    def tree_of(self, commit_id: str) -> str:
        return str(self._repo[commit_id].peel(pygit2.Tree).id)
