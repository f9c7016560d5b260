"""Writing a git repository, through pygit2: commits, trees, branch moves and the work tree.

GitRepo is the repository gitmem opens: a GitReader (gitmem.store.gitread, the other module
that imports pygit2) with the writes.

A write builds new trees from HEAD's tree with one TreeBuilder per directory on the changed
paths, so its cost grows with the depth of the layout and the size of the directories it
touches, not with the size of the store. The commit then moves the branch (libgit2 refuses if
the branch moved meanwhile), and the work tree and the git index are brought to the new HEAD
for exactly the paths written, so `git status` stays clean and a person's unrelated edits are
left alone.

A write the machine refuses (no space, a file size limit, a read-only file system, no
permission) is raised as the OSError it is, naming the place (gitmem.errors.environment_error
says it), and leaves the branch where it was. libgit2 gives no errno and often no message of
its own for a failed write (it reports an earlier, handled error instead), so its word is not
taken: a write it failed is tried again here, as the OS sees it (`_probe`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path

import pygit2

from gitmem.atomic import TEMP_PREFIX, replace_file
from gitmem.errors import GitmemError, environment_error
from gitmem.store import gitindex
from gitmem.store.gitread import GitReader, Identity
from gitmem.store.worktree import refuse_linked

__all__ = ["GitRepo"]


class GitRepo(GitReader):
    """A repository gitmem reads and writes."""

    @classmethod
    def init(cls, root: Path, branch: str = "main") -> GitRepo:
        made = not (root / ".git").exists()
        try:
            repo = pygit2.init_repository(str(root), bare=False, initial_head=branch)
        except (pygit2.GitError, OSError) as exc:
            if made:  # half a .git is no repository, and would make `gitmem init` refuse
                shutil.rmtree(root / ".git", ignore_errors=True)
            cause = None if isinstance(exc, OSError) and exc.errno else _probe([(root, 1 << 14)])
            if cause is None:
                raise
            raise cause from exc
        return cls(repo)

    # --- writing -----------------------------------------------------------------------------

    def commit_files(
        self,
        changes: Mapping[str, bytes | None],
        message: str,
        author: Identity,
        committer: Identity,
        parent: str | None,
        merged: Sequence[str] = (),
    ) -> str:
        """One commit on top of `parent` that writes (bytes) or deletes (None) each path.

        The branch moves only if it still points at `parent`; then the work tree and the git
        index follow for those paths. `merged`: further parents (a sync's merge commit).
        Returns the new commit id.
        """
        repo = self._repo
        refuse_linked(self.root, changes)
        base_tree = repo[parent].peel(pygit2.Tree) if parent else None
        blobs = {
            tuple(path.split("/")): (None if data is None else self._blob(data))
            for path, data in changes.items()
        }
        tree_id = self._build(base_tree, blobs)
        if tree_id is None:
            with self._writing(lambda: [(self._objects, 64)]):
                tree_id = repo.TreeBuilder().write()
        now = int(datetime.now(UTC).timestamp())
        author_sig = pygit2.Signature(author.name, author.email, now, 0)
        committer_sig = pygit2.Signature(committer.name, committer.email, now, 0)
        parents = [pygit2.Oid(hex=p) for p in (parent, *merged) if p]
        try:
            with self._writing(lambda: [(self._objects, len(message) + 1024), *self._ref_files()]):
                new_id = repo.create_commit(
                    "HEAD", author_sig, committer_sig, message, tree_id, parents
                )
        except pygit2.GitError as exc:
            raise GitmemError(
                f"the branch moved while writing ({exc}); nothing was committed — run it again"
            ) from exc
        try:
            self._sync_worktree(changes)
        except Exception as exc:
            if self._undo(str(new_id), parent, list(changes)):
                raise
            if not isinstance(exc, OSError) or environment_error(exc) is None:
                raise
            where = "" if exc.filename is None else f"{exc.filename}: "
            raise GitmemError(
                f"commit {str(new_id)[:12]} was made, but the work tree could not follow "
                f"({where}{os.strerror(exc.errno or 0)}) — free some space or fix the "
                "permissions; the next gitmem write brings the work tree up to date"
            ) from exc
        return str(new_id)

    def _blob(self, data: bytes) -> pygit2.Oid:
        with self._writing(lambda: [(self._objects, len(data) + len(data) // 64 + 64)]):
            blob_id: pygit2.Oid = self._repo.create_blob(data)
        return blob_id

    def _undo(self, new: str, parent: str | None, paths: Sequence[str]) -> bool:
        """Put the branch back on `parent` after a commit the work tree or the git index could
        not follow (a full disk), and those paths as they were; whether that was done.

        The work tree goes first and the branch last: if any step fails, the commit stands
        and the write's journal has the next writer bring the work tree up to it
        (Store._recover), as after a crash."""
        try:
            for path in paths:
                old = None if parent is None else self.blob_at(parent, path)
                target = self.root / path
                try:
                    current: bytes | None = target.read_bytes()
                except FileNotFoundError:
                    current = None
                if old is None:
                    if current is not None:
                        target.unlink()
                    _prune_empty_dirs(target.parent, self.root)  # and what the write made
                elif current != old:
                    _atomic_write(target, old)
            name = f"refs/heads/{self.branch()}"
            ref = self._repo.references.get(name)
            if ref is None or str(ref.target) != new:
                return False
            if parent is None:
                ref.delete()
            else:
                ref.set_target(pygit2.Oid(hex=parent), "gitmem: undo a write the disk refused")
        except (OSError, pygit2.GitError):
            return False
        return True

    def _build(
        self, tree: pygit2.Tree | None, changes: Mapping[tuple[str, ...], pygit2.Oid | None]
    ) -> pygit2.Oid | None:
        repo = self._repo
        builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
        nested: dict[str, dict[tuple[str, ...], pygit2.Oid | None]] = {}
        for parts, blob in changes.items():
            if len(parts) == 1:
                if blob is None:
                    if builder.get(parts[0]) is not None:
                        builder.remove(parts[0])
                else:
                    builder.insert(parts[0], blob, pygit2.enums.FileMode.BLOB)
            else:
                nested.setdefault(parts[0], {})[parts[1:]] = blob
        for name, sub_changes in nested.items():
            entry = builder.get(name)
            is_tree = entry is not None and entry.type_str == "tree"
            sub_tree = repo[entry.id].peel(pygit2.Tree) if entry is not None and is_tree else None
            sub_id = self._build(sub_tree, sub_changes)
            if sub_id is None:
                if entry is not None:
                    builder.remove(name)
            else:
                builder.insert(name, sub_id, pygit2.enums.FileMode.TREE)
        if len(builder) == 0:
            return None
        with self._writing(lambda: [(self._objects, 128 * len(builder) + 64)]):
            result: pygit2.Oid = builder.write()
        return result

    # --- projections and branch moves (sync) -------------------------------------------------

    def without(self, commit_id: str, paths: Sequence[str]) -> str:
        """The id of `commit_id`'s tree with these paths left out."""
        return self.tree_with(commit_id, dict.fromkeys(paths))

    def tree_with(self, commit_id: str, changes: Mapping[str, bytes | None]) -> str:
        """The id of `commit_id`'s tree with each path written (bytes) or left out (None).
        Objects only: no ref, no git index, no work tree (a sync's merge of several tips)."""
        tree = self._repo[commit_id].peel(pygit2.Tree)
        if not changes:
            return str(tree.id)
        blobs = {
            tuple(path.split("/")): (None if data is None else self._blob(data))
            for path, data in changes.items()
        }
        tree_id = self._build(tree, blobs)
        if tree_id is None:
            with self._writing(lambda: [(self._objects, 64)]):
                tree_id = self._repo.TreeBuilder().write()
        return str(tree_id)

    def recommit(self, commit_id: str, tree_id: str, parents: Sequence[str], message: str) -> str:
        """A commit with another tree and parents but `commit_id`'s author, committer and
        times, so the same inputs give the same id on every run. No ref moves."""
        c = self._repo[commit_id].peel(pygit2.Commit)
        with self._writing(lambda: [(self._objects, len(message) + 1024)]):
            new_id = self._repo.create_commit(
                None,
                c.author,
                c.committer,
                message,
                pygit2.Oid(hex=tree_id),
                [pygit2.Oid(hex=p) for p in parents],
            )
        return str(new_id)

    def move_branch(self, new: str, expected: str | None) -> None:
        """Point the current branch at `new` (a fast-forward), if it still is at `expected`;
        the work tree and the git index follow for the paths that differ."""
        moved = GitmemError("the store changed during sync; nothing was lost — sync again")
        ref = self._repo.references.get(f"refs/heads/{self.branch()}")
        # One read of the ref, compared and then moved: the window for a `git commit` run by
        # hand in between is the time libgit2 takes to lock the ref.
        if ref is None or str(ref.target) != expected:
            raise moved
        changed = [c.path for c in self.diff(expected, new)]
        try:
            with self._writing(self._ref_files):
                ref.set_target(pygit2.Oid(hex=new), "gitmem sync: fast-forward")
        except pygit2.GitError as exc:
            raise GitmemError(
                f"could not move the branch ({exc}); nothing was lost — sync again"
            ) from exc
        self.checkout_paths(new, changed)

    def commit_side_ref(
        self, ref: str, files: Mapping[str, bytes], message: str, who: Identity
    ) -> str:
        """A commit of just `files` on top of `ref`'s commit (if any), and `ref` moved to it:
        for refs beside the branch (presence, docs/coord.md), which neither HEAD, the work
        tree nor the git index ever see."""
        repo = self._repo
        old = repo.references.get(ref)
        tree_id = self._build(None, {tuple(p.split("/")): self._blob(d) for p, d in files.items()})
        assert tree_id is not None
        sig = pygit2.Signature(who.name, who.email, int(datetime.now(UTC).timestamp()), 0)
        parents = [] if old is None else [old.target]
        with self._writing(lambda: [(self._objects, len(message) + 1024), *self._ref_files()]):
            new_id = repo.create_commit(None, sig, sig, message, tree_id, parents)
            repo.references.create(ref, new_id, force=True)
        return str(new_id)

    # --- the work tree --------------------------------------------------------------------

    def checkout_paths(self, commit_id: str, paths: list[str]) -> None:
        """Make the work tree and the git index match `commit_id` for these paths."""
        refuse_linked(self.root, paths)
        self._sync_worktree({path: self.blob_at(commit_id, path) for path in paths})

    def _sync_worktree(self, files: Mapping[str, bytes | None]) -> None:
        """Write (or delete) these files in the work tree and stage them in the git index:
        each written file's entry has the stat data it was written with (gitmem.store.gitindex
        writes the index, in git's split form unless core.splitIndex is false)."""
        entries: dict[str, gitindex.Entry | None] = {}
        for path, data in files.items():
            target = self.root / path
            if data is None:
                if target.is_symlink() or target.exists():  # a link may point nowhere
                    target.unlink()
                    _prune_empty_dirs(target.parent, self.root)
                entries[path] = None
            else:
                _atomic_write(target, data)
                entries[path] = gitindex.entry_for(path, pygit2.hash(data).raw, target.lstat())
        index_file = self.git_dir / "index"
        config = self._repo.config
        split = "core.splitIndex" not in config or config.get_bool("core.splitIndex")
        with self._writing(lambda: [(index_file, _size(index_file) + 4096)]):
            gitindex.stage(self.git_dir, entries, split=split, root=self.root)

    # --- writes the machine refuses -----------------------------------------------------------

    @property
    def _objects(self) -> Path:
        return self.git_dir / "objects"

    def _ref_files(self) -> list[tuple[Path, int]]:
        """Where moving the current branch writes: its lock file and the two reflogs it
        appends to (a reflog grows with every write, so its size is what a limit meets)."""
        branch = self.branch()
        logs = [self.git_dir / "logs" / "HEAD", self.git_dir / "logs" / "refs" / "heads" / branch]
        ref = self.git_dir / "refs" / "heads" / branch
        return [(ref, 64), *((log, _size(log) + 1024) for log in logs)]

    @contextmanager
    def _writing(self, places: Callable[[], Sequence[tuple[Path, int]]]) -> Iterator[None]:
        """Around a libgit2 call that writes these files (or files in these directories) of up
        to these sizes, computed only if it fails: a failure the OS causes is raised as the
        OSError it is, naming the file."""
        try:
            yield
        except (pygit2.GitError, OSError) as exc:
            if isinstance(exc, OSError) and exc.errno is not None:
                raise  # the OS's own error, with its errno: nothing to find out
            cause = _probe(places())
            if cause is None:
                raise
            raise cause from exc


def _atomic_write(target: Path, data: bytes) -> None:
    """Write beside the target and rename over it: a reader never sees half a file. An error
    names the target (os.write names no file, and the temporary file is nobody's concern)."""
    try:
        try:
            replace_file(target, data)
        except FileNotFoundError:
            target.parent.mkdir(parents=True, exist_ok=True)
            replace_file(target, data)
    except OSError as exc:
        if exc.errno is None:
            raise
        raise OSError(exc.errno, os.strerror(exc.errno), str(target)) from exc


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _probe(places: Sequence[tuple[Path, int]]) -> OSError | None:
    """Why the OS would refuse to write `size` bytes to each place (a file, or a new file in
    a directory), if it would: no space, over quota, a file size limit, a read-only file
    system, no permission. None if it would not: then a failed write was not its doing.

    A new file of that size is written in the place's directory, or the nearest one that
    exists (libgit2 would create the rest): libgit2 writes objects, refs and the index whole
    and renames them, and a reflog it appends to meets a file size limit at its whole size."""
    for place, size in places:
        where = place if place.is_dir() else place.parent
        while not where.exists() and where != where.parent:
            where = where.parent
        name = where / f"{TEMP_PREFIX}probe-{os.getpid()}-{os.urandom(4).hex()}"
        cause: OSError | None = None
        try:
            replace_file(name, bytes(max(size, 1)))  # closes before it returns: an NFS may
        except OSError as exc:  # tell only then
            cause = exc
        finally:
            with suppress(OSError):
                os.unlink(name)
        if cause is not None and cause.errno is not None:
            told = OSError(cause.errno, os.strerror(cause.errno), str(place))
            if environment_error(told) is not None:
                return told
    return None


def _prune_empty_dirs(directory: Path, root: Path) -> None:
    while directory != root and root in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent
