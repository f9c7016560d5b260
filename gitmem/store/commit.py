"""How a store writes: under its write lock, from reading to committing, one commit a write.

`Committer` is the machinery every write of `gitmem.store.store.Store` (which extends it), a
sync's integration (gitmem.sync.integrate), a purge and a bundle of decisions
(gitmem.store.bundle) go through: the re-entrant lock hold (`_exclusive`), the commit under it
(`_commit`: git not busy, no uncommitted edits overwritten, HEAD unchanged since the write
read it) and the recovery of what a writer that died left half-done (`_recover`, from the
lock's journal).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Concatenate, ParamSpec, TypeVar

from gitmem.atomic import TEMP_PREFIX
from gitmem.errors import GitmemError
from gitmem.store import gitindex, writes
from gitmem.store.config import Config
from gitmem.store.git import GitRepo
from gitmem.store.gitfiles import pack_loose_objects
from gitmem.store.lock import Journal, write_lock
from gitmem.store.reader import Reader

__all__ = ["LOCK_TIMEOUT", "PACK_AFTER", "Committer", "exclusively"]

LOCK_TIMEOUT = 60.0
PACK_AFTER = 256  # a write of this many files or more packs its objects (gitfiles)

_S = TypeVar("_S", bound="Committer")
_P = ParamSpec("_P")
_R = TypeVar("_R")


def exclusively(
    method: Callable[Concatenate[_S, _P], _R],
) -> Callable[Concatenate[_S, _P], _R]:
    """Run a write method under the store's write lock, from reading to committing."""

    @functools.wraps(method)
    def wrapper(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._exclusive():
            return method(self, *args, **kwargs)

    return wrapper


class Committer(Reader):
    """An opened store that can commit: its reads (gitmem.store.reader), the write lock and
    the one commit each write makes."""

    def __init__(self, repo: GitRepo, config: Config) -> None:
        super().__init__(repo, config)
        self._begin: Callable[[str | None, list[str]], None] | None = None  # lock held

    @contextmanager
    def _exclusive(self, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
        """Hold the store's write lock (re-entrant within this object). Each write reads the
        record it changes and commits inside one hold, so concurrent writers cannot lose each
        other's changes."""
        if self._begin is not None:
            yield
            return
        with write_lock(self.repo.git_dir, timeout, self._recover) as begin:
            self._begin = begin
            try:
                yield
            finally:
                self._begin = None

    def _commit(
        self,
        files: Mapping[str, bytes | None],
        message: str,
        agent: str,
        expected: str | None,
        *,
        check_dirty: bool = True,
        merged: Sequence[str] = (),
    ) -> str:
        index_lock = self.repo.git_dir / "index.lock"
        with self._exclusive():
            assert self._begin is not None
            if gitindex.busy(self.repo.git_dir):
                raise GitmemError(
                    f"git is busy in this store ({index_lock} exists); if no git command is "
                    "running there, remove that file and try again"
                )
            if check_dirty:
                for path in files:
                    if self.repo.is_dirty(path):
                        raise GitmemError(
                            f"{path} has uncommitted edits; commit them first with "
                            '"gitmem commit" (or discard them with git restore)'
                        )
            head = self.repo.head()
            if expected is not None and head != expected:
                raise GitmemError("the store changed while preparing this write; run it again")
            self._begin(head, list(files))
            who = writes.author(agent, self.repo.config_identity())
            new = self.repo.commit_files(
                files, message, who, self.repo.config_identity() or who, head, merged
            )
        self._follow(head, new, files)
        if len(files) >= PACK_AFTER:  # an import, a big hand edit: pack what it wrote
            pack_loose_objects(self.root)
        return new

    def _recover(self, journal: Journal) -> None:
        head = self.repo.head()
        if head is not None and head != journal.parent and journal.paths:
            self.repo.checkout_paths(head, list(journal.paths))
        for path in journal.paths:  # what the dead writer left half-written beside them
            for tmp in (self.root / path).parent.glob(f"{TEMP_PREFIX}*"):
                tmp.unlink(missing_ok=True)
