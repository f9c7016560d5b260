"""Presence: which agent was active when, on which device — with no commit per heartbeat.

A heartbeat only rewrites a small file in the store's cache, `.gitmem/coord/presence.json`
(`{device: {agent: entry}}`; an entry holds the agent's last project and note and its recent
spans of activity, a span ending when no heartbeat came for SPAN_GAP). Nothing in it touches
the branch: no commit, no merge, no history to grow.

It travels beside the branch: at each sync, gitmem.sync.sync calls `publish`, which writes
this device's entries as a commit on `refs/gitmem/presence/<device>` (a ref only this device
writes, each commit on top of the last, so pushing it is a fast-forward), pushes that ref and
fetches every device's. `agents` reads this device's file and the other devices' refs. So
another device sees a heartbeat after both have synced, like a record.

Standard library only at module level: a hook may beat the heart.
"""

from __future__ import annotations

import json
import platform
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.atomic import replace_file

if TYPE_CHECKING:
    from gitmem.store.reader import Reader
    from gitmem.store.store import Store

__all__ = [
    "ACTIVE_FOR",
    "REF_PREFIX",
    "Presence",
    "agents",
    "device_name",
    "heartbeat",
    "publish",
    "tracking_ref",
]

REF_PREFIX = "refs/gitmem/presence/"
FILE_NAME = "presence.json"
SPAN_GAP = timedelta(minutes=30)  # no heartbeat for this long: the next one starts a new span
ACTIVE_FOR = timedelta(minutes=15)  # "active now" when the last heartbeat is this recent
SPANS_KEPT = 20
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def device_name(env: Mapping[str, str]) -> str:
    """$GITMEM_DEVICE, else the host name, made safe for a ref name."""
    name = env.get("GITMEM_DEVICE", "").strip() or platform.node() or "device"
    return _UNSAFE.sub("-", name).strip(".-")[:64] or "device"


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    except (ValueError, AttributeError, TypeError):
        return None


@dataclass(frozen=True)
class Presence:
    """One agent on one device."""

    agent: str
    device: str
    last: datetime
    first: datetime  # the start of its latest span
    project: str = ""
    note: str = ""
    spans: tuple[tuple[datetime, datetime], ...] = ()
    local: bool = True  # from this device's file, or from another device's ref

    def active(self, now: datetime) -> bool:
        return now - self.last <= ACTIVE_FOR

    def to_dict(self, now: datetime) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "device": self.device,
            "active": self.active(now),
            "since": _iso(self.first),
            "last_seen": _iso(self.last),
            "project": self.project,
            "note": self.note,
            "spans": [[_iso(a), _iso(b)] for a, b in self.spans],
            "local": self.local,
        }


def _path(cache: Path) -> Path:
    return cache / "coord" / FILE_NAME


def _load(data: bytes | str | None) -> dict[str, dict[str, dict[str, Any]]]:
    if data is None:
        return {}
    try:
        raw = json.loads(data)
    except ValueError:
        return {}
    if not isinstance(raw, dict):
        return {}
    return {
        str(d): {str(a): e for a, e in v.items() if isinstance(e, dict)}
        for d, v in raw.items()
        if isinstance(v, dict)
    }


def _read_local(cache: Path) -> dict[str, dict[str, dict[str, Any]]]:
    try:
        return _load(_path(cache).read_bytes())
    except OSError:
        return {}


def heartbeat(
    cache: Path,
    agent: str,
    device: str,
    *,
    project: str = "",
    note: str = "",
    now: datetime | None = None,
) -> Presence:
    """Note that `agent` is active on `device` now: the cache file only, never a commit."""
    moment = (now or datetime.now(UTC)).replace(microsecond=0)
    data = _read_local(cache)
    entry = data.setdefault(device, {}).get(agent, {})
    spans = [s for s in entry.get("spans", []) if isinstance(s, list) and len(s) == 2]
    last = _parse(spans[-1][1]) if spans else None
    if last is not None and timedelta(0) <= moment - last <= SPAN_GAP:
        spans[-1] = [spans[-1][0], _iso(moment)]
    elif last is None or moment > last:
        spans.append([_iso(moment), _iso(moment)])
    data[device][agent] = {
        "project": project or entry.get("project", ""),
        "note": " ".join(note.split())[:200] or entry.get("note", ""),
        "spans": spans[-SPANS_KEPT:],
    }
    path = _path(cache)
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, json.dumps(data, indent=1, sort_keys=True))
    return _presences({device: data[device]}, local=True)[0]


def _presences(data: Mapping[str, Mapping[str, Mapping[str, Any]]], local: bool) -> list[Presence]:
    found: list[Presence] = []
    for device, by_agent in data.items():
        for agent, entry in by_agent.items():
            spans = tuple(
                (a, b)
                for a, b in ((_parse(s[0]), _parse(s[1])) for s in entry.get("spans", []))
                if a is not None and b is not None
            )
            if not spans:
                continue
            found.append(
                Presence(
                    agent=agent,
                    device=device,
                    last=spans[-1][1],
                    first=spans[-1][0],
                    project=str(entry.get("project", "")),
                    note=str(entry.get("note", "")),
                    spans=spans,
                    local=local,
                )
            )
    return found


def tracking_ref(remote: str, device: str = "") -> str:
    """Where a fetch keeps the remote's presence refs (all of them: `device` empty)."""
    return f"refs/remotes/{remote}/presence/{device}"


def agents(store: Reader, device: str, *, agent: str = "") -> list[Presence]:
    """Every agent seen, on this device (its cache file) and on the others (their refs as the
    last sync fetched them), the most recently seen first."""
    local = _read_local(store.cache_dir)
    found = _presences({device: local.get(device, {})}, local=True)
    seen: dict[str, str] = {}
    for ref, commit in store.repo.refs("refs/remotes/").items():
        _, _, name = ref.partition("/presence/")
        if name and name != device and "/" not in name:
            seen.setdefault(name, commit)  # one remote's copy is as good as another's
    for name, commit in sorted(seen.items()):
        theirs = _load(store.repo.blob_at(commit, FILE_NAME))
        found.extend(_presences({name: theirs.get(name, {})}, local=False))
    if agent:
        found = [p for p in found if p.agent == agent]
    found.sort(key=lambda p: (p.last, p.agent, p.device), reverse=True)
    return found


def publish(store: Store, device: str) -> str | None:
    """Bring this device's ref up to its presence file (a commit on top of the ref's last,
    only when the file says something new); the ref's name, or None when this device never
    beat."""
    from gitmem.store.writes import author

    ref = REF_PREFIX + device
    mine = _read_local(store.cache_dir).get(device)
    if not mine:
        return None
    data = json.dumps({device: mine}, indent=1, sort_keys=True).encode("utf-8")
    current = store.repo.resolve(ref)
    if current is None or store.repo.blob_at(current, FILE_NAME) != data:
        who = author(store.default_agent(), store.repo.config_identity())
        store.repo.commit_side_ref(ref, {FILE_NAME: data}, f"presence: {device}\n", who)
    return ref
