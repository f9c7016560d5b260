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
from gitmem.store import gitindex, gitstatus

__all__ = ["Change", "Commit", "GitReader", "Identity", "PathStatus"]

# Tree entries that are not regular files: gitmem never writes them and takes none from a remote.
_NOT_FILES = frozenset({pygit2.enums.FileMode.LINK, pygit2.enums.FileMode.COMMIT})


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
        """Paths that differ between two commits (either may be None for the empty tree)."""
        if old == new:
            return []
        old_tree = self._repo[old].peel(pygit2.Tree) if old else None
        new_tree = self._repo[new].peel(pygit2.Tree) if new else None
        if old_tree is None and new_tree is None:
            return []
        if old_tree is None:
            assert new_tree is not None
            diff = new_tree.diff_to_tree(swap=True)
        elif new_tree is None:
            diff = old_tree.diff_to_tree()
        else:
            diff = old_tree.diff_to_tree(new_tree)
        zero = "0" * 40
        out: list[Change] = []
        for delta in diff.deltas:
            old_id = str(delta.old_file.id)
            new_id = str(delta.new_file.id)
            out.append(
                Change(
                    path=delta.new_file.path or delta.old_file.path,
                    old=None if old_id == zero else old_id,
                    new=None if new_id == zero else new_id,
                    link=new_id != zero and delta.new_file.mode in _NOT_FILES,
                )
            )
        return out

    def changed(self, old: str | None, new: str | None, prefix: str) -> list[Change]:
        """The files under `prefix` that differ between two commits, as `diff` gives them.

        Subtrees with equal ids are skipped unread, so a commit's cost follows the directories
        it touched; libgit2's diff reads much more (13 ms a commit at 10k records)."""
        out: list[Change] = []
        self._tree_changes(self._subtree(old, prefix), self._subtree(new, prefix), prefix, out)
        return out

    def _subtree(self, commit_id: str | None, prefix: str) -> pygit2.Tree | None:
        if commit_id is None:
            return None
        tree = self._repo[commit_id].peel(pygit2.Tree)
        try:
            entry = tree[prefix]
        except KeyError:
            return None
        return self._repo[entry.id].peel(pygit2.Tree) if entry.type_str == "tree" else None

    def _tree_changes(
        self, old: pygit2.Tree | None, new: pygit2.Tree | None, base: str, out: list[Change]
    ) -> None:
        if old is not None and new is not None and old.id == new.id:
            return
        left = {str(e.name): e for e in old} if old is not None else {}
        right = {str(e.name): e for e in new} if new is not None else {}
        for name in sorted(left.keys() | right.keys()):
            a, b = left.get(name), right.get(name)
            if a is not None and b is not None and a.id == b.id:
                continue
            path = f"{base}/{name}"
            trees = [
                self._repo[e.id].peel(pygit2.Tree)
                if e is not None and e.type_str == "tree"
                else None
                for e in (a, b)
            ]
            if trees[0] is not None or trees[1] is not None:
                self._tree_changes(trees[0], trees[1], path, out)
            blobs = [str(e.id) if e is not None and e.type_str == "blob" else None for e in (a, b)]
            if blobs[0] is not None or blobs[1] is not None:
                out.append(Change(path, blobs[0], blobs[1]))

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
