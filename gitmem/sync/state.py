"""What the last sync of a clone left in `.git/gitmem-sync.json` (the local and the public
commit it pushed, and when), and the ahead/behind that `gitmem status` and `gitmem remote
show` report from it without the network."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.atomic import replace_file
from gitmem.sync.devices import tracking_prefix

if TYPE_CHECKING:
    from gitmem.api import Store

__all__ = ["save_state", "sync_status"]

STATE_NAME = "gitmem-sync.json"


def save_state(git_dir: Path, local: str | None, public: str) -> None:
    data = {"local": local, "public": public, "at": datetime.now(UTC).isoformat()}
    replace_file(git_dir / STATE_NAME, json.dumps(data))


def sync_status(store: Store, remote: str = "origin") -> dict[str, Any]:
    """Ahead/behind against the remote as last fetched (no network): `ahead` counts local
    writes no push has carried yet, `behind` the remote's commits (on the branch or another
    device's ref) not integrated yet."""
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
    # The branch and every other device's ref, as fetched (gitmem.sync.devices).
    tips = {tip, *repo.refs(tracking_prefix(remote)).values()} - {None}
    behind = {c for t in tips if t for c in repo.between(t, behind_hide)}
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
