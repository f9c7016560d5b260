"""Sync a store with its remote: fetch, integrate, push, then let the index catch up.

The network half (fetch, push) runs the `git` command without the store's write lock, so
agents keep writing meanwhile; the part that moves the local branch (a fast-forward or a merge
commit built in memory, see gitmem.sync.merge) holds the lock and journals its paths like any other
write, so a sync killed at any point loses nothing and the next writer finishes its work tree.
What is pushed is the public projection of the local branch (gitmem.sync.publish), never the branch
itself. When the remote moved between our fetch and our push, the push is refused as a
non-fast-forward and sync fetches, integrates and pushes again, a bounded number of times with
jittered backoff.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.atomic import replace_file
from gitmem.errors import GitmemError
from gitmem.store.lock import LockTimeout
from gitmem.sync.gitcli import Deadline, GitFailed, remote_url, run_git, shown_url
from gitmem.sync.merge import Conflict, plan_merge
from gitmem.sync.publish import Publisher
from gitmem.sync.sshcause import explain_ssh

if TYPE_CHECKING:
    from gitmem.api import Store

MEMORY_BRANCH = "main"  # the branch `gitmem init` makes

__all__ = [
    "DEFAULT_TIMEOUT",
    "SyncResult",
    "clone",
    "shown_url",
    "sync",
    "sync_status",
]

DEFAULT_TIMEOUT = 60.0
MAX_ATTEMPTS = 10
STATE_NAME = "gitmem-sync.json"
# Index catch-up is skipped (left to the next recall) unless this many records per second of
# the time left could be indexed: a conservative rate with embeddings on a slow laptop.
_INDEX_RATE = 200.0
_STALE_LOCK = 60.0  # seconds: a ref lock file older than this belongs to a dead git command


# The user information of a URL (scheme://userinfo@host/...), up to the last "@" before the
# path, where a password or a token is.
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
        }


# --- sync ---------------------------------------------------------------------------------


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
    incoming, outgoing = 0, 0
    conflicts: list[Conflict] = []
    merged = fast_forward = False
    start_head = store.head()
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            remote_tip = _fetch(store, remote, branch, tracking, env, deadline)
            step = _integrate(store, remote, remote_tip, deadline)
            incoming += step.incoming
            conflicts.extend(step.conflicts)
            merged, fast_forward = merged or step.merged, fast_forward or step.fast_forward
            if step.public == remote_tip:
                break
            sent = len(store.repo.between(step.public, [remote_tip] if remote_tip else []))
            _push(store, remote, branch, step.public, env, deadline)
            outgoing += sent
            break
        except GitFailed as exc:
            # The remote moved since our fetch, or another sync of this clone holds a ref:
            # both pass. Anything else, or a ref lock still held at the last attempt (git's
            # message names its file), is for the user.
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
    _save_state(store.repo.git_dir, head, step.public)
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
    )


@dataclass(frozen=True)
class _Step:
    local: str  # the local branch after integrating
    public: str  # its public projection, what is pushed
    incoming: int = 0
    merged: bool = False
    fast_forward: bool = False
    conflicts: tuple[Conflict, ...] = ()


def _fetch(
    store: Store,
    remote: str,
    branch: str,
    tracking: str,
    env: Mapping[str, str],
    deadline: Deadline,
) -> str | None:
    """Fetch the remote branch into its tracking ref; its commit, or None for an empty
    remote."""
    try:
        run_git(
            [
                "fetch",
                "--no-tags",
                "--quiet",
                "--no-write-fetch-head",
                remote,
                f"+refs/heads/{branch}:{tracking}",
            ],
            cwd=store.root,
            env=env,
            deadline=deadline,
            what=f"fetching from {remote}",
        )
    except GitFailed as exc:
        if "couldn't find remote ref" not in exc.stderr:
            raise
        return None
    return store.repo.resolve(tracking)


def _integrate(store: Store, remote: str, remote_tip: str | None, deadline: Deadline) -> _Step:
    """Bring the remote's commits into the local branch (under the write lock)."""
    try:
        with store._exclusive(timeout=max(deadline.left(), 0.1)):
            return _integrate_locked(store, remote, remote_tip)
    except LockTimeout as exc:
        raise GitmemError(
            f"another gitmem write held {store.root} for the rest of the time allowed; "
            "nothing changed and nothing was lost — sync again, or raise --timeout"
        ) from exc


def _integrate_locked(store: Store, remote: str, remote_tip: str | None) -> _Step:
    repo = store.repo
    head = repo.head()
    if head is None:
        raise GitmemError(f"{store.root} has no commit yet — run gitmem init")
    publisher = Publisher(repo)
    public_known = [remote_tip] if remote_tip else []
    public = publisher.twin(head, public_known)
    step = _Step(head, public)
    if remote_tip is not None and not repo.is_ancestor(remote_tip, public):
        base = repo.merge_base(public, remote_tip)
        if base is None:
            raise GitmemError(
                f"the remote {remote} holds a different memory: its history shares no "
                "commit with this store, so nothing was changed here — to use that memory, "
                f'run "gitmem clone URL NEWPATH"; to publish this one, point the remote at '
                'an empty repository with "gitmem remote set URL"'
            )
        if public == head and base == head:
            _fast_forward(store, head, remote_tip)
            new = remote_tip
            step = _Step(new, new, incoming=len(repo.diff(head, remote_tip)), fast_forward=True)
        else:
            plan = plan_merge(repo, base, head, remote_tip)
            message = _merge_message(remote, plan.incoming, plan.conflicts, store.default_agent())
            _refuse_dirty(store, list(plan.changes))
            new = store._commit(
                plan.changes, message, "", head, check_dirty=False, merged=(remote_tip,)
            )
            public = publisher.twin(new, public_known)
            step = _Step(new, public, plan.incoming, True, False, plan.conflicts)
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


def _push(
    store: Store, remote: str, branch: str, public: str, env: Mapping[str, str], deadline: Deadline
) -> None:
    run_git(
        ["push", "--quiet", remote, f"{public}:refs/heads/{branch}"],
        cwd=store.root,
        env=env,
        deadline=deadline,
        what=f"pushing to {remote}",
    )


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


def _save_state(git_dir: Path, local: str | None, public: str) -> None:
    data = {"local": local, "public": public, "at": datetime.now(UTC).isoformat()}
    replace_file(git_dir / STATE_NAME, json.dumps(data))


# --- status and clone ---------------------------------------------------------------------


def sync_status(store: Store, remote: str = "origin") -> dict[str, Any]:
    """Ahead/behind against the remote as last fetched (no network): `ahead` counts local
    writes no push has carried yet, `behind` the remote's commits not integrated yet."""
    repo = store.repo
    config = repo.git_dir / "config"
    if f'[remote "{remote}"]' not in config.read_text(encoding="utf-8", errors="replace"):
        return {"remote": None}
    head = repo.head()
    tip = repo.resolve(f"refs/remotes/{remote}/{repo.branch()}")
    state = _load_state(repo.git_dir)
    pushed_local, pushed_public = state.get("local"), state.get("public")
    hide = [c for c in (tip, pushed_local) if c and repo.resolve(c)]
    ahead = [
        c
        for c in (repo.between(head, hide) if head else [])
        if repo.commit(c).trailers().get("Gitmem-Operation") != "sync"
    ]
    behind_hide = [c for c in (head, pushed_public) if c and repo.resolve(c)]
    behind = repo.between(tip, behind_hide) if tip else []
    return {
        "remote": remote,
        "tracking": tip,
        "ahead": len(ahead),
        "behind": len(behind),
        "last_sync": state.get("at"),
    }


def _load_state(git_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((git_dir / STATE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def clone(
    url: str, path: Path, env: Mapping[str, str], *, timeout: float = DEFAULT_TIMEOUT
) -> Path:
    """`git clone` a memory; the index builds on the first recall."""
    if path.exists() and any(path.iterdir()):
        raise GitmemError(f"{path} exists and is not empty; choose a new directory for the clone")
    shown = shown_url(url)
    try:
        run_git(
            ["clone", "--no-tags", "--quiet", "--", url, str(path)],  # a URL is never an option
            cwd=None,
            env=env,
            deadline=Deadline.after(timeout),
            what=f"cloning {shown}",
        )
    except GitFailed as exc:
        explained = explain_ssh(exc, shown, url, "clone again")
        if explained is None:
            raise
        raise explained from exc
    if not (path / "config.toml").exists():
        _check_out_memory_branch(path, env, timeout)
    if not (path / "config.toml").exists():
        raise GitmemError(
            f"{shown} holds no gitmem store (no config.toml; an empty remote?) — the clone at "
            f'{path} was left for you to inspect; to start a memory there, run "gitmem init '
            f'NEWPATH", then "gitmem remote add URL" and "gitmem sync"'
        )
    exclude = path / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    with exclude.open("a", encoding="utf-8") as handle:
        handle.write(".gitmem/\n")
    return path


def _check_out_memory_branch(path: Path, env: Mapping[str, str], timeout: float) -> None:
    """A bare repository made by `git init --bare` on a machine whose git still defaults to
    `master` names that as its HEAD, while gitmem pushes `main`: `git clone` then checks out
    nothing. Check out the remote's `main` when there is one."""
    deadline = Deadline.after(timeout)
    try:
        run_git(
            ["rev-parse", "--verify", "--quiet", f"refs/remotes/origin/{MEMORY_BRANCH}"],
            cwd=path,
            env=env,
            deadline=deadline,
            what="looking for the memory's branch",
        )
    except GitFailed:
        return
    run_git(
        ["checkout", "--quiet", "-B", MEMORY_BRANCH, f"origin/{MEMORY_BRANCH}"],
        cwd=path,
        env=env,
        deadline=deadline,
        what=f"checking out {MEMORY_BRANCH}",
    )
