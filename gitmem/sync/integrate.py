"""Integrating the remote's commits into the local branch, under the store's write lock: a
fast-forward, or a merge commit built in memory (gitmem.sync.merge), journalled like any
other write, so a sync killed at any point loses nothing and the next writer finishes its
work tree. Then the public projection of the result (gitmem.sync.publish), which is what a
push sends."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitmem.errors import GitmemError
from gitmem.store.lock import LockTimeout
from gitmem.store.worktree import refuse_linked
from gitmem.sync.gitcli import Deadline
from gitmem.sync.merge import Conflict, plan_merge
from gitmem.sync.publish import Publisher
from gitmem.sync.purge import pending_push

if TYPE_CHECKING:
    from gitmem.api import Store

__all__ = ["Step", "integrate"]


@dataclass(frozen=True)
class Step:
    local: str  # the local branch after integrating
    public: str  # its public projection, what is pushed
    incoming: int = 0
    merged: bool = False
    fast_forward: bool = False
    conflicts: tuple[Conflict, ...] = ()


def integrate(store: Store, remote: str, remote_tip: str | None, deadline: Deadline) -> Step:
    """Bring the remote's commits into the local branch (under the write lock)."""
    try:
        with store._exclusive(timeout=max(deadline.left(), 0.1)):
            return _integrate_locked(store, remote, remote_tip)
    except LockTimeout as exc:
        raise GitmemError(
            f"another gitmem write held {store.root} for the rest of the time allowed; "
            "nothing changed and nothing was lost — sync again, or raise --timeout"
        ) from exc


def _integrate_locked(store: Store, remote: str, remote_tip: str | None) -> Step:
    repo = store.repo
    head = repo.head()
    if head is None:
        raise GitmemError(f"{store.root} has no commit yet — run gitmem init")
    if pending_push(repo.git_dir) is not None:  # a purge finished while this sync fetched
        raise GitmemError(
            f"{store.root} was purged while this sync fetched the old history; nothing was "
            'merged — run "gitmem sync" again: it replaces the remote\'s history first'
        )
    publisher = Publisher(repo)
    public_known = [remote_tip] if remote_tip else []
    public = publisher.twin(head, public_known)
    step = Step(head, public)
    if remote_tip is not None and not repo.is_ancestor(remote_tip, public):
        base = repo.merge_base(public, remote_tip)
        if base is None:
            raise GitmemError(
                f"the remote {remote} holds a different memory: its history shares no "
                "commit with this store, so nothing was changed here — to use that memory, "
                f'run "gitmem clone URL NEWPATH"; to publish this one, point the remote at '
                'an empty repository with "gitmem remote set URL"'
            )
        arriving = repo.diff(base, remote_tip)
        linked = any(c.link for c in arriving)
        if public == head and base == head and not linked:  # a merge leaves a link out
            _fast_forward(store, head, remote_tip)
            new = remote_tip
            step = Step(new, new, incoming=len(arriving), fast_forward=True)
        else:
            plan = plan_merge(repo, base, head, remote_tip)
            message = _merge_message(remote, plan.incoming, plan.conflicts, store.default_agent())
            _refuse_dirty(store, list(plan.changes))
            new = store._commit(
                plan.changes, message, "", head, check_dirty=False, merged=(remote_tip,)
            )
            public = publisher.twin(new, public_known)
            step = Step(new, public, plan.incoming, True, False, plan.conflicts)
        head = new
    publisher.save(head)
    return step


def _fast_forward(store: Store, head: str, target: str) -> None:
    repo = store.repo
    index_lock = repo.git_dir / "index.lock"
    if index_lock.exists():  # checked before the branch moves, as every write does
        raise GitmemError(
            f"git is busy in this store ({index_lock} exists); if no git command is running "
            "there, remove that file, then sync again"
        )
    paths = [c.path for c in repo.diff(head, target)]
    refuse_linked(store.root, paths)
    _refuse_dirty(store, paths)
    assert store._begin is not None
    store._begin(head, paths)
    repo.move_branch(target, head)


def _refuse_dirty(store: Store, paths: list[str]) -> None:
    """Refuse to overwrite a person's uncommitted edits. A path with no file in the work tree
    has nothing to lose (most paths a sync writes are new ones), so only files are compared."""
    for path in paths:
        if (store.root / path).exists() and store.repo.is_dirty(path):
            raise GitmemError(
                f"{path} has uncommitted edits and the remote changed it; commit them first "
                'with "gitmem commit", then sync again'
            )


def _merge_message(remote: str, incoming: int, conflicts: tuple[Conflict, ...], agent: str) -> str:
    subject = f"sync: merge {incoming} change{'s' if incoming != 1 else ''} from {remote}"
    lines = [subject, ""]
    if conflicts:
        lines += [f"- {c.note}" for c in conflicts] + [""]
    lines += [
        "Gitmem-Operation: sync",
        f"Gitmem-Count: {incoming}",
        f"Gitmem-Conflicts: {len(conflicts)}",
        f"Gitmem-Agent: {agent}",
    ]
    return "\n".join(lines) + "\n"
