"""Purge: remove a leaked text, or a whole record, from every commit of a store's history.

The guard stops a credential before it reaches a commit, but one can still get in: through
`--allow-secret` by mistake, a commit made by hand, an older version written before a rule
existed. Git keeps it in every later clone until history itself is rewritten, which this module
does with git-filter-repo (its only importer): every blob that holds the text gets the text
replaced by `[PURGED]`, or every version of the record is dropped; commit messages are
rewritten the same way. Everything else keeps its bytes, so other records' blobs keep their ids,
and commits keep their messages, authors and dates (their ids change from the first purged
commit on: their parents did). Then the reflogs are expired and unreachable objects pruned, so
that no object in the repository holds the text any more, and the index is rebuilt.

The remote still has the old history. Purge rewrites the remote-tracking ref too and leaves
`.git/gitmem-purge.json`: the next `gitmem sync` replaces the remote's branch with the purged
one by a forced push, leased on the commit the remote had (so another device's push in the
meantime is never overwritten), before it fetches anything (gitmem.sync.sync).
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.atomic import replace_file
from gitmem.errors import GitmemError, NotFound, UsageError
from gitmem.sync.devices import DEVICE_PREFIX, tracking_prefix
from gitmem.sync.gitcli import Deadline, GitFailed, git_env, remote_url, run_git, shown_url
from gitmem.sync.state import STATE_NAME, sync_status

if TYPE_CHECKING:
    from gitmem.api import Store

__all__ = ["PENDING_NAME", "PurgeResult", "pending_push", "purge", "push_purged"]

PENDING_NAME = "gitmem-purge.json"
REPLACEMENT = b"[PURGED]"
MIN_TEXT = 6  # shorter texts are in too many unrelated files to be anyone's secret
_MEMO_NAME = "gitmem-publish.json"  # gitmem.sync.publish's cache of twins, by old commit ids


@dataclass(frozen=True)
class PurgeResult:
    head_before: str
    head_after: str | None
    blobs_changed: int  # versions of record files that held the text, or the record's versions
    paths: tuple[str, ...]  # the files that had a version changed or dropped
    remote: str | None  # the remote whose history still holds the text, if it was ever pushed
    url: str | None  # as shown (shown_url)

    def to_dict(self) -> dict[str, Any]:
        return {
            "head_before": self.head_before,
            "head_after": self.head_after,
            "blobs_changed": self.blobs_changed,
            "paths": list(self.paths),
            "remote": self.remote,
            "url": self.url,
            "push_pending": self.remote is not None,
        }


def purge(
    store: Store,
    env: Mapping[str, str],
    *,
    texts: Sequence[str] = (),
    record: str | None = None,
    remote: str = "origin",
) -> PurgeResult:
    """Rewrite all of the store's history without `texts` (or without the record `record`).

    Refuses, changing nothing, when there is nothing to purge, when the work tree has changes
    git does not have, or when the remote (as last fetched) has commits this store has not
    integrated: they would be lost to every device when the purged history replaces the
    remote's. The caller has asked the person to confirm: this cannot be undone.
    """
    needles = [t.encode() for t in texts]
    if bool(needles) == (record is not None):
        raise UsageError("purge needs one of --text, --text-file or --record")
    if any(len(n) < MIN_TEXT for n in needles):
        raise UsageError(
            f"a text to purge must be at least {MIN_TEXT} characters: a shorter one is in "
            "too many records to be a secret — give the whole credential"
        )
    repo = store.repo
    head = repo.head()
    if head is None:
        raise GitmemError(f"{store.root} has no commit yet: nothing to purge")
    with store._exclusive(timeout=10.0):
        _refuse_unsafe(store, env, remote)
        versions = _record_versions(store.root, env, record) if record else ()
        paths = tuple(sorted({path for _oid, path in versions}))
        if record and not paths:
            raise NotFound(f"no version of a record {record} in the history of {store.root}")
        before = _holding(store.root, env, needles) if needles else ()
        if needles and not before:
            raise NotFound(
                f"the text is in no commit, record or message of {store.root}'s history: "
                "nothing to purge"
            )
        branch = repo.branch()
        tracking = repo.resolve(f"refs/remotes/{remote}/{branch}")
        prefix = tracking_prefix(remote)
        devices = {
            DEVICE_PREFIX + ref.removeprefix(prefix): tip for ref, tip in repo.refs(prefix).items()
        }
        _rewrite(store.root, needles, set(paths))
        _forget_old_objects(store.root, env)
        if needles and _holding(store.root, env, needles):
            raise GitmemError(  # filter-repo rewrote every ref; an object outside them remains
                f"the text is still in an object of {store.root} after the rewrite — "
                'run "git reflog expire --expire=now --all && git gc --prune=now" there'
            )
        _drop_caches(store, remote, branch, tracking, devices)
    store.rebuild()
    url = remote_url(store.root, remote, env) if tracking else None
    return PurgeResult(
        head_before=head,
        head_after=repo.head(),
        blobs_changed=len(before) if needles else len({oid for oid, _path in versions}),
        paths=tuple(sorted({p for _oid, p in before if p})) if needles else paths,
        remote=remote if tracking else None,
        url=shown_url(url) if url else None,
    )


def _refuse_unsafe(store: Store, env: Mapping[str, str], remote: str) -> None:
    changed = _git(store.root, env, ["status", "--porcelain", "--untracked-files=no"])
    if changed.strip():
        raise GitmemError(
            f"{store.root} has changes git does not have yet; purge rewrites the work tree — "
            "commit them (gitmem validate, then git commit) or discard them, then purge again"
        )
    status = sync_status(store, remote)
    if status.get("behind"):
        raise GitmemError(
            f"the remote {remote} has {status['behind']} commit(s) this store has not "
            "integrated (as of the last fetch): another device's work, which the purged "
            'history would drop — run "gitmem sync" first, then purge'
        )


def _git(root: Path, env: Mapping[str, str], args: list[str]) -> str:
    return run_git(args, cwd=root, env=env, deadline=Deadline.after(600), what=f"git {args[0]}")


def _record_versions(
    root: Path, env: Mapping[str, str], record: str
) -> tuple[tuple[str, str], ...]:
    """Every version of the record, as (blob id, path): its file moves with its type or month."""
    listing = _git(root, env, ["rev-list", "--all", "--objects"])
    name = f"/{record}.md"
    found = {
        (oid, path)
        for oid, _, path in (line.partition(" ") for line in listing.splitlines())
        if path.startswith("records/") and path.endswith(name)
    }
    return tuple(sorted(found))


def _objects(root: Path, env: Mapping[str, str]) -> Iterator[tuple[str, str, bytes]]:
    """Every object in the repository, reachable or not: (id, type, content)."""
    proc = subprocess.Popen(
        ["git", "cat-file", "--batch-all-objects", "--batch", "--unordered"],
        cwd=root,
        env=git_env(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    try:
        while header := proc.stdout.readline():
            oid, kind, size = header.split()
            data = proc.stdout.read(int(size))
            proc.stdout.read(1)  # the newline after each object
            yield oid.decode(), kind.decode(), data
    finally:
        proc.stdout.close()
        proc.wait()


def _holding(
    root: Path, env: Mapping[str, str], needles: list[bytes]
) -> tuple[tuple[str, str], ...]:
    """The objects that hold one of the texts, each with a path that names it (for blobs)."""
    hits = [oid for oid, _kind, data in _objects(root, env) if any(n in data for n in needles)]
    if not hits:
        return ()
    paths: dict[str, str] = {}
    for line in _git(root, env, ["rev-list", "--all", "--objects"]).splitlines():
        oid, _, path = line.partition(" ")
        if path:
            paths.setdefault(oid, path)
    return tuple((oid, paths.get(oid, "")) for oid in hits)


def _rewrite(root: Path, needles: list[bytes], paths: set[str]) -> None:
    """One pass of git-filter-repo over every ref: texts replaced, the record's files dropped."""
    import git_filter_repo as fr

    def blob(blob: Any, _metadata: Any) -> None:
        for needle in needles:
            blob.data = blob.data.replace(needle, REPLACEMENT)

    def message(text: bytes) -> bytes:
        for needle in needles:
            text = text.replace(needle, REPLACEMENT)
        return text

    def filename(name: bytes) -> bytes | None:
        return None if name.decode("utf-8", "surrogateescape") in paths else name

    work = root / ".git" / "filter-repo"  # its maps and its "already ran" mark, which would ask
    shutil.rmtree(work, ignore_errors=True)  # a question of a later run
    where = str(root)
    # --partial: keep the remote and its tracking refs (rewritten like the rest) and leave the
    # reflogs and the pruning to _forget_old_objects; --force: a store is not a fresh clone.
    args = fr.FilteringOptions.parse_args(
        ["--force", "--partial", "--quiet", "--source", where, "--target", where]
    )
    callbacks: dict[str, Any] = {"message_callback": message}
    if needles:
        callbacks["blob_callback"] = blob
    if paths:
        callbacks["filename_callback"] = filename
    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            fr.RepoFilter(args, **callbacks).run()
    except SystemExit as exc:  # how filter-repo reports a failure
        raise GitmemError(
            f"git-filter-repo could not rewrite {root}: {said.getvalue().strip() or exc} — "
            "nothing was purged; check the repository with git fsck"
        ) from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _forget_old_objects(root: Path, env: Mapping[str, str]) -> None:
    """Drop everything that still reaches the old history: ORIG_HEAD, the reflogs, and then
    the unreachable objects themselves."""
    (root / ".git" / "ORIG_HEAD").unlink(missing_ok=True)
    _git(root, env, ["reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all"])
    _git(root, env, ["gc", "--prune=now", "--quiet"])


def _drop_caches(
    store: Store, remote: str, branch: str, tracking: str | None, devices: dict[str, str]
) -> None:
    """The caches that name old commits or hold old text, and the push the remote needs: the
    branch replaced, and every device ref (each holds the old history) deleted."""
    git_dir = store.repo.git_dir
    (git_dir / _MEMO_NAME).unlink(missing_ok=True)
    (git_dir / STATE_NAME).unlink(missing_ok=True)
    shutil.rmtree(store.cache_dir / "timeline", ignore_errors=True)
    if tracking is None:
        return
    pending = pending_push(git_dir)
    old = pending["old"] if pending else tracking  # the remote has not moved since then
    new = store.repo.resolve(f"refs/remotes/{remote}/{branch}")
    if pending:
        devices = pending.get("devices", {})  # as the remote had them at the first purge
    data = {"remote": remote, "branch": branch, "old": old, "new": new, "devices": devices}
    replace_file(git_dir / PENDING_NAME, json.dumps(data))


def pending_push(git_dir: Path) -> dict[str, Any] | None:
    """The forced push a purge left for the next sync, if any."""
    try:
        data = json.loads((git_dir / PENDING_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def push_purged(
    store: Store, remote: str, env: Mapping[str, str], deadline: Deadline
) -> str | None:
    """Replace the remote's branch with its purged history, if a purge left that to do; a
    note for the sync's output, or None. The push is leased on the commit the remote had at
    the purge: if another device pushed since, it is refused and nothing of theirs is lost."""
    git_dir = store.repo.git_dir
    pending = pending_push(git_dir)
    if pending is None or pending.get("remote") != remote:
        return None
    branch, old, new = pending["branch"], pending["old"], pending["new"]
    devices: dict[str, str] = pending.get("devices") or {}
    # One atomic push: the branch replaced and every device ref deleted (each held the old
    # history, and the next fetch would bring it back), each leased on what the remote had
    # at the purge. The next sync creates this device's ref again from the purged history.
    leases = [f"--force-with-lease={ref}:{tip}" for ref, tip in sorted(devices.items())]
    try:
        run_git(
            [
                "push",
                "--quiet",
                "--atomic",
                f"--force-with-lease=refs/heads/{branch}:{old}",
                *leases,
                remote,
                f"{new}:refs/heads/{branch}",
                *(f":{ref}" for ref in sorted(devices)),
            ],
            cwd=store.root,
            env=env,
            deadline=deadline,
            what=f"replacing the history of {remote} with the purged one",
        )
    except GitFailed as exc:
        if "stale info" not in exc.stderr and "rejected" not in exc.stderr:
            raise
        raise GitmemError(
            f"the remote {remote} moved since the purge (another device pushed), so its history "
            "still holds the purged text and nothing was overwritten — remove "
            f'.git/{PENDING_NAME}, run "gitmem sync" (it brings that device\'s commits, and the '
            "old history with them), then purge again"
        ) from exc
    (git_dir / PENDING_NAME).unlink(missing_ok=True)
    return f"replaced the history of {remote} with the purged one (a forced push)"
