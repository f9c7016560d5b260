"""Sync a store with its remote: fetch, integrate, push, then let the index catch up.

The network half (fetch, push) runs the `git` command without the store's write lock, so
agents keep writing meanwhile; the part that moves the local branch holds the lock
(gitmem.sync.integrate). What is pushed is the public projection of the local branch
(gitmem.sync.publish), never the branch itself, to this device's own ref and, when nobody
moved it first, to the branch (gitmem.sync.devices). Only a refused device ref (another sync
of this same clone pushed meanwhile) makes sync fetch, integrate and push again, a bounded
number of times with jittered backoff.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.coord.presence import REF_PREFIX, device_name, publish, tracking_ref
from gitmem.errors import GitmemError
from gitmem.sync.devices import device_id, fetch_refspec, new_tips, push_tips, tracking_prefix
from gitmem.sync.gitcli import DEFAULT_TIMEOUT, Deadline, GitFailed, remote_url, run_git, shown_url
from gitmem.sync.integrate import Step, integrate
from gitmem.sync.merge import Conflict
from gitmem.sync.purge import push_purged
from gitmem.sync.sshcause import explain_ssh
from gitmem.sync.state import save_state

if TYPE_CHECKING:
    from gitmem.api import Store

__all__ = ["SyncResult", "sync"]

MAX_ATTEMPTS = 10
# Index catch-up is skipped (left to the next recall) unless this many records per second of
# the time left could be indexed: a conservative rate with embeddings on a slow laptop.
_INDEX_RATE = 200.0
_STALE_LOCK = 60.0  # seconds: a ref lock file older than this belongs to a dead git command


@dataclass(frozen=True)
class SyncResult:
    remote: str
    url: str | None  # as shown (shown_url); None: no remote configured, nothing done
    head: str | None = None
    pushed: str | None = None  # the public commit the remote now has
    incoming: int = 0  # records (and files) taken from the remote
    outgoing: int = 0  # commits sent
    merged: bool = False
    fast_forward: bool = False
    attempts: int = 0
    conflicts: tuple[Conflict, ...] = ()
    notes: tuple[str, ...] = field(default=())
    index: str = "unchanged"  # the index after the sync: current, behind, unchanged, skipped
    device: str | None = None  # this clone's id: the remote's refs/gitmem/devices/<device>
    branch: str = "current"  # the remote branch: advanced, current, or refused (moved first)

    def to_dict(self) -> dict[str, Any]:
        return {
            "remote": self.remote,
            "url": self.url,
            "state": "synced" if self.url else "no-remote",
            "head": self.head,
            "pushed": self.pushed,
            "incoming": self.incoming,
            "outgoing": self.outgoing,
            "merged": self.merged,
            "fast_forward": self.fast_forward,
            "attempts": self.attempts,
            "conflicts": [{"key": c.key, "kind": c.kind, "note": c.note} for c in self.conflicts],
            "notes": list(self.notes),
            "index": self.index,
            "device": self.device,
            "branch": self.branch,
        }


def sync(
    store: Store,
    env: Mapping[str, str],
    *,
    remote: str = "origin",
    timeout: float = DEFAULT_TIMEOUT,
    index: bool = True,
    rng: random.Random | None = None,
) -> SyncResult:
    url = remote_url(store.root, remote, env)
    if url is None:
        return SyncResult(remote=remote, url=None, head=store.head())
    shown = shown_url(url)
    deadline = Deadline.after(timeout)
    rng = rng or random.Random()
    branch = store.repo.branch()
    tracking = f"refs/remotes/{remote}/{branch}"
    notes = _repair_tracking(store.repo.git_dir, tracking)
    # Before any fetch: fetching first would bring the purged text back from the remote.
    if (replaced := push_purged(store, remote, env, deadline)) is not None:
        notes.append(replaced)
    incoming, outgoing = 0, 0
    conflicts: list[Conflict] = []
    merged = fast_forward = False
    start_head = store.head()
    device = device_id(store.repo.git_dir, env)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            remote_tip = _fetch(store, remote, branch, tracking, env, deadline)
            step = _integrate_all(store, remote, remote_tip, deadline, notes)
            incoming += step.incoming
            conflicts.extend(step.conflicts)
            merged, fast_forward = merged or step.merged, fast_forward or step.fast_forward
            known = [remote_tip, *store.repo.refs(tracking_prefix(remote)).values()]
            sent = len(store.repo.between(step.public, [t for t in known if t]))
            pushed = push_tips(store.repo, remote, branch, step.public, device, env, deadline)
            outgoing += sent
            break
        except GitFailed as exc:
            # Another sync of this clone pushed its device ref since our fetch, or holds a
            # ref here: both pass. Anything else, or a ref lock still held at the last attempt
            # (git's message names its file), is for the user.
            busy = exc.kind == "busy" and attempt < MAX_ATTEMPTS
            if exc.kind != "non-fast-forward" and not busy:
                again = "sync again; your writes stay local commits until then"
                explained = explain_ssh(exc, f"{remote} ({shown})", url, again)
                if explained is None:
                    raise
                raise explained from exc
            if attempt == MAX_ATTEMPTS:
                raise GitmemError(
                    f"the remote {remote} kept moving: {MAX_ATTEMPTS} attempts to push "
                    "failed; your writes are safe in local commits — sync again"
                ) from exc
        time.sleep(min(rng.uniform(0.05, 0.2) * 2 ** min(attempt, 4), max(deadline.left(), 0)))
    # Not store.head(): a write that landed after the integration is not in what was pushed.
    head = step.local
    save_state(store.repo.git_dir, head, step.public)
    notes.extend(_push_presence(store, remote, env, deadline))
    _housekeeping(store, env, deadline)
    changed = incoming + len(conflicts) if head != start_head else 0
    index_state = _catch_up(store, changed, deadline) if index else "skipped"
    return SyncResult(
        remote=remote,
        url=shown,
        head=head,
        pushed=step.public,
        incoming=incoming,
        outgoing=outgoing,
        merged=merged,
        fast_forward=fast_forward,
        attempts=attempt,
        conflicts=tuple(conflicts),
        notes=tuple(notes),
        index=index_state,
        device=device,
        branch=pushed.branch,
    )


def _integrate_all(
    store: Store, remote: str, remote_tip: str | None, deadline: Deadline, notes: list[str]
) -> Step:
    """Integrate the branch's tip and every device's that is new here, in one merge commit.
    A device ref whose history shares nothing with this memory (pushed there by hand) is left
    out with a note: one bad ref must not stop every device's sync."""
    named = new_tips(store.repo, remote, remote_tip)
    tips = [tip for _, tip in named]
    step = integrate(
        store, remote, tips or remote_tip, deadline, optional={t for t in tips if t != remote_tip}
    )
    notes.extend(
        f"{ref} on {remote} shares no commit with this memory; left out"
        for ref, tip in named
        if tip in step.left_out
    )
    return step


def _fetch(
    store: Store,
    remote: str,
    branch: str,
    tracking: str,
    env: Mapping[str, str],
    deadline: Deadline,
) -> str | None:
    """Fetch the remote branch into its tracking ref, and every device's and presence ref
    into theirs (a ref the remote no longer has is dropped here too); the branch's commit,
    or None when the remote has no branch (empty, or only device refs)."""
    refs = [f"+{REF_PREFIX}*:{tracking_ref(remote)}*", fetch_refspec(remote)]
    args = ["fetch", "--no-tags", "--quiet", "--no-write-fetch-head", "--prune", remote]
    what = f"fetching from {remote}"
    try:
        run_git(
            [*args, f"+refs/heads/{branch}:{tracking}", *refs],
            cwd=store.root,
            env=env,
            deadline=deadline,
            what=what,
        )
    except GitFailed as exc:
        if "couldn't find remote ref" not in exc.stderr:
            raise
        run_git([*args, *refs], cwd=store.root, env=env, deadline=deadline, what=what)
        return None
    return store.repo.resolve(tracking)


def _push_presence(
    store: Store, remote: str, env: Mapping[str, str], deadline: Deadline
) -> list[str]:
    """Send this device's presence ref (gitmem.coord.presence) when the remote lacks its
    latest. Presence is a courtesy: a push refused here is a note, never a failed sync."""
    device = device_name(env)
    ref = publish(store, device)
    if ref is None or store.repo.resolve(ref) == store.repo.resolve(tracking_ref(remote, device)):
        return []
    try:
        run_git(
            ["push", "--quiet", remote, f"+{ref}:{ref}"],
            cwd=store.root,
            env=env,
            deadline=deadline,
            what=f"pushing presence to {remote}",
        )
    except GitFailed as exc:
        return [f"presence of {device} was not pushed ({exc}); the next sync tries again"]
    return []


def _repair_tracking(git_dir: Path, tracking: str) -> list[str]:
    """A tracking ref is only a cache of the remote's state: a corrupt one is removed, and the
    fetch writes it again; so is the lock file of a git command killed while writing it
    (git holds a ref's lock for milliseconds, so an old one has no live owner)."""
    notes = []
    lock = git_dir / f"{tracking}.lock"
    with contextlib.suppress(FileNotFoundError):
        if time.time() - lock.stat().st_mtime > _STALE_LOCK:
            lock.unlink()
            notes.append(f"{lock.name} was left by a killed git command; it was removed")
    path = git_dir / tracking
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return notes
    except (OSError, UnicodeDecodeError):
        text = ""
    if len(text) == 40 and all(ch in "0123456789abcdef" for ch in text):
        return notes
    path.unlink()
    return [*notes, f"{tracking} was corrupt; it was removed and fetched again"]


def _housekeeping(store: Store, env: Mapping[str, str], deadline: Deadline) -> None:
    """`git gc --auto`: once loose objects pile up (every write adds a few), git packs them in
    a process of its own that outlives this one, as after a `git commit`; so a long-lived store
    stays small without a sync ever waiting for a repack. Never needed for correctness."""
    if deadline.left() < 2:
        return
    with contextlib.suppress(GitFailed):
        run_git(
            ["gc", "--auto", "--quiet"], cwd=store.root, env=env, deadline=deadline, what="git gc"
        )


def _catch_up(store: Store, changed: int, deadline: Deadline) -> str:
    if not changed:
        return "unchanged"
    if not (store.cache_dir / "index" / "catalog.sqlite").exists():
        return "behind"  # never built here (a new clone): the first recall builds it
    if changed > _INDEX_RATE * max(deadline.left() - 1.0, 0.0):
        return "behind"  # the next recall catches up
    try:
        store.index()
    except GitmemError:
        return "behind"  # the sync itself is done; the next recall says what is wrong
    return "current"
