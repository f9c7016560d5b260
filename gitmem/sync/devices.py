"""Device refs: one ref per clone on the remote, which only that clone ever writes.

Pushing every device's work to one branch makes every device race for that ref: the loser of
each race fetches, merges and pushes again, and with many devices most pushes lose. Instead a
clone publishes its public tip (gitmem.sync.publish) on `refs/gitmem/devices/<id>`, a ref no
other clone writes, so the push is a fast-forward that nobody can beat. A reader fetches every
device's ref (and the branch, which devices on an older gitmem and plain git users still push)
and integrates each tip that is new to it with the deterministic merge (gitmem.sync.merge), so
every clone ends with the same tree whichever order it saw the tips in.

The branch stays current for plain git users: the same push also offers the public tip to the
branch. When another device moved the branch since our fetch, git refuses that part; it is not
an error and not retried (that device advanced it, and the next sync of anyone advances it
further), so no device ever waits on another.

A device's id lives in `.git/gitmem-device`: the device name (gitmem.coord.presence, the host
name or $GITMEM_DEVICE) and a random suffix made at the first sync, so that two clones on one
machine are two writers, and a fresh `git clone` is a new one.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gitmem.atomic import replace_file
from gitmem.coord.presence import device_name
from gitmem.store.git import GitRepo
from gitmem.sync.gitcli import Deadline, GitFailed, run_git

__all__ = [
    "DEVICE_PREFIX",
    "Pushed",
    "device_id",
    "fetch_refspec",
    "new_tips",
    "push_tips",
    "tracking_prefix",
]

DEVICE_PREFIX = "refs/gitmem/devices/"
ID_NAME = "gitmem-device"
_VALID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,80}")


def device_id(git_dir: Path, env: Mapping[str, str]) -> str:
    """This clone's device id, made (and kept in the git directory) at its first sync."""
    path = git_dir / ID_NAME
    try:
        known = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        known = ""
    if _VALID.fullmatch(known) and not known.endswith((".lock", ".")):
        return known
    made = f"{device_name(env)}-{secrets.token_hex(3)}"
    replace_file(path, made + "\n")
    return made


def tracking_prefix(remote: str) -> str:
    """Where a fetch keeps the remote's device refs."""
    return f"refs/remotes/{remote}/devices/"


def fetch_refspec(remote: str) -> str:
    """The device refs, by their own namespace only: nothing else the remote holds."""
    return f"+{DEVICE_PREFIX}*:{tracking_prefix(remote)}*"


def new_tips(repo: GitRepo, remote: str, branch_tip: str | None) -> list[tuple[str, str]]:
    """(remote ref, commit) for each fetched tip (the branch's and every device's), one per
    commit, newest first, so that an older tip is usually inside one integrated before it
    and costs one merge-base walk; ties by id, so the order depends only on the tips."""
    tips: dict[str, str] = {}
    if branch_tip is not None:
        tips[branch_tip] = "the branch"
    prefix = tracking_prefix(remote)
    for ref, tip in sorted(repo.refs(prefix).items()):
        tips.setdefault(tip, DEVICE_PREFIX + ref.removeprefix(prefix))
    order = sorted(tips, key=lambda t: (-repo.commit(t).committed.timestamp(), t))
    return [(tips[t], t) for t in order]


@dataclass(frozen=True)
class Pushed:
    device: bool  # the device ref was sent (or already there)
    branch: str  # "advanced", "current", or "refused" (another device moved it first)


def push_tips(
    repo: GitRepo,
    remote: str,
    branch: str,
    public: str,
    device: str,
    env: Mapping[str, str],
    deadline: Deadline,
) -> Pushed:
    """Offer `public` to this device's ref and to the branch in one push. A refused branch is
    reported, not raised; a refused device ref (another sync of this clone pushed meanwhile)
    raises git's GitFailed (non-fast-forward), so that the caller fetches, integrates and
    pushes again."""
    branch_ref = f"refs/heads/{branch}"
    device_ref = DEVICE_PREFIX + device
    known = {
        device_ref: repo.resolve(tracking_prefix(remote) + device),
        branch_ref: repo.resolve(f"refs/remotes/{remote}/{branch}"),
    }
    wanted = [ref for ref, tip in known.items() if tip != public]
    if not wanted:
        return Pushed(True, "current")
    args = ["push", "--quiet", remote, *(f"{public}:{ref}" for ref in wanted)]
    try:
        run_git(args, cwd=repo.root, env=env, deadline=deadline, what=f"pushing to {remote}")
    except GitFailed as exc:
        refused = _refused(exc.stderr)
        if not refused or device_ref in refused:
            raise  # unreachable, authentication, a hook that refuses us, or a race to retry
        _remember(repo, remote, device, public, env, deadline)
        return Pushed(True, "refused")
    _remember(repo, remote, device, public, env, deadline)
    return Pushed(True, "advanced" if branch_ref in wanted else "current")


def _remember(
    repo: GitRepo, remote: str, device: str, public: str, env: Mapping[str, str], d: Deadline
) -> None:
    """Note what the remote's device ref now holds (a push does not update the tracking ref
    it has no refspec for), so that the next sync with nothing new pushes nothing, and a
    purge knows what to lease the ref's deletion on."""
    ref = tracking_prefix(remote) + device
    run_git(["update-ref", ref, public], cwd=repo.root, env=env, deadline=d, what="noting the push")


_REFUSED = re.compile(r"^ ! \[(?:remote )?rejected\]\s+\S+ -> (\S+)", re.MULTILINE)


def _refused(stderr: str) -> set[str]:
    """The refs git's push reports as refused (` ! [rejected]  src -> dst (why)`; git shows a
    branch by its short name, other refs in full)."""
    return {
        dst if dst.startswith("refs/") else f"refs/heads/{dst}" for dst in _REFUSED.findall(stderr)
    }
