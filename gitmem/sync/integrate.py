"""Integrating the remote's commits into the local branch, under the store's write lock: a
fast-forward, or one merge commit built in memory (gitmem.sync.merge), journalled like any
other write, so a sync killed at any point loses nothing and the next writer finishes its
work tree. Then the public projection of the result (gitmem.sync.publish), which is what a
push sends.

Several tips (the branch's and other devices', gitmem.sync.devices) make one merge commit
with each of them as a parent: the tree is merged with one tip after the other in objects
only (trees and scratch commits that no ref names), and only the last tree is committed, so
a sync adds at most one commit however many devices wrote since the last one."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitmem.errors import GitmemError
from gitmem.store.git import GitRepo
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
    left_out: tuple[str, ...] = ()  # optional tips that share no commit with this store


def integrate(
    store: Store,
    remote: str,
    tips: str | Sequence[str] | None,
    deadline: Deadline,
    *,
    optional: Collection[str] = (),
) -> Step:
    """Bring the remote's commits (one tip, or several) into the local branch (under the
    write lock). A tip in `optional` (another device's ref) whose history shares no commit
    with this store is left out (Step.left_out); any other such tip refuses the whole sync."""
    wanted = [tips] if isinstance(tips, str) else list(tips or ())
    try:
        with store._exclusive(timeout=max(deadline.left(), 0.1)):
            return _integrate_locked(store, remote, wanted, optional)
    except LockTimeout as exc:
        raise GitmemError(
            f"another gitmem write held {store.root} for the rest of the time allowed; "
            "nothing changed and nothing was lost — sync again, or raise --timeout"
        ) from exc


def _integrate_locked(
    store: Store, remote: str, tips: list[str], optional: Collection[str]
) -> Step:
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
    public = publisher.twin(head, tips)
    fresh: dict[str, str] = {}  # tip -> its merge base with public, for the tips not in it
    left_out: list[str] = []
    for tip in dict.fromkeys(tips):
        base = repo.merge_base(public, tip)
        if base is None and tip in optional:
            left_out.append(tip)
        elif base is None:
            raise GitmemError(
                f"the remote {remote} holds a different memory: its history shares no "
                "commit with this store, so nothing was changed here — to use that memory, "
                f'run "gitmem clone URL NEWPATH"; to publish this one, point the remote at '
                'an empty repository with "gitmem remote set URL"'
            )
        elif base != tip:
            fresh[tip] = base
    step = Step(head, public, left_out=tuple(left_out))
    if fresh:
        first, base = next(iter(fresh.items()))
        arriving = repo.diff(base, first)
        linked = any(c.link for c in arriving)
        if len(fresh) == 1 and public == head and base == head and not linked:
            _fast_forward(store, head, first)  # a merge leaves a link out
            new = first
            step = Step(new, new, len(arriving), fast_forward=True, left_out=tuple(left_out))
        else:
            changes, incoming, conflicts, parents = _merge_trees(repo, head, fresh)
            message = _merge_message(remote, incoming, conflicts, store.default_agent())
            _refuse_dirty(store, list(changes))
            new = store._commit(changes, message, "", head, check_dirty=False, merged=parents)
            public = publisher.twin(new, tips)
            step = Step(new, public, incoming, True, False, conflicts, tuple(left_out))
        head = new
    publisher.save(head)
    return step


def _merge_trees(
    repo: GitRepo, head: str, fresh: dict[str, str]
) -> tuple[dict[str, bytes | None], int, tuple[Conflict, ...], tuple[str, ...]]:
    """Merge `head` with each tip in turn: the writes that turn head's tree into the result,
    and the tips that are parents of the merge (one already inside the merge so far is not).
    Between tips the merged tree lives in a scratch commit no ref names (`git gc` drops it),
    so that the next three-way merge has its base: the scratch commit's parents are the tree
    merged so far and the tip just merged in. `fresh`: tip -> its merge base with head's
    public projection, the base of the first merge, so that private records are ours alone,
    as for one tip; later ones are based on the merge so far."""
    current = head
    incoming = 0
    conflicts: list[Conflict] = []
    parents: list[str] = []
    for tip, public_base in fresh.items():
        base = public_base if current == head else repo.merge_base(current, tip)
        if base == tip:
            continue  # inside a tip merged before it
        assert base is not None  # shares a commit with public, which current contains
        plan = plan_merge(repo, base, current, tip)
        incoming += plan.incoming
        conflicts.extend(plan.conflicts)
        tree = repo.tree_with(current, plan.changes)
        current = repo.recommit(head, tree, [current, tip], "sync: scratch merge\n")
        parents.append(tip)
    changes: dict[str, bytes | None] = {
        c.path: None if c.new is None else repo.blob(c.new) for c in repo.diff(head, current)
    }
    return changes, incoming, tuple(conflicts), tuple(parents)


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
