"""`gitmem graph diff FROM TO`: how the work graph moved between two moments or commits.

Read from git history through the time-travel cache (gitmem.recall.asof), the views at both
ends compared entity by entity, as `gitmem diff` compares records: no snapshots to take first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gitmem.errors import UsageError
from gitmem.graph.blockers import DONE_STATES, is_blocked
from gitmem.graph.entity import ENTITY_TYPE
from gitmem.recall.asof import Moment, TimeTravel
from gitmem.store.record import format_time

__all__ = ["GraphChanges", "graph_diff"]


@dataclass(frozen=True)
class GraphChanges:
    start: Moment
    end: Moment
    new: tuple[dict[str, Any], ...]
    removed: tuple[dict[str, Any], ...]
    status_changes: tuple[dict[str, Any], ...]
    newly_blocked: tuple[dict[str, Any], ...]
    completed: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        def end(m: Moment) -> dict[str, Any]:
            return {"time": format_time(m.time), "commit": m.commit}

        return {
            "from": end(self.start),
            "to": end(self.end),
            "new": list(self.new),
            "removed": list(self.removed),
            "status_changes": list(self.status_changes),
            "newly_blocked": list(self.newly_blocked),
            "completed": list(self.completed),
        }


def graph_diff(
    travel: TimeTravel, start: str | datetime, end: str | datetime | None
) -> GraphChanges:
    first = travel.moment(start)
    last = travel.moment("now" if end is None else end)
    if first.time > last.time:
        raise UsageError(
            f"FROM ({first.label}) is later than TO ({last.label}); give the earlier one first"
        )
    old = {k: v for k, v in travel.view(first).entries.items() if v.type == ENTITY_TYPE}
    new = {k: v for k, v in travel.view(last).entries.items() if v.type == ENTITY_TYPE}
    blobs = {e.blob for e in old.values()} | {e.blob for e in new.values()}
    fields = {blob: data for blob, (data, _) in travel.timeline.fields(sorted(blobs)).items()}

    def facts(blob: str) -> dict[str, Any]:
        data = fields.get(blob, {})
        blocked_by = data.get("blocked_by") or []
        return {
            "state": str(data.get("state") or ""),
            "blocked_by": tuple(blocked_by if isinstance(blocked_by, list) else [blocked_by]),
            "entity_type": str(data.get("entity_type") or ""),
            "title": str(data.get("title") or ""),
            "path": str(data.get("path") or ""),
        }

    def item(rid: str, f: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {
            "id": rid,
            "type": f["entity_type"],
            "title": f["title"],
            "path": f["path"],
            "state": f["state"],
            **extra,
        }

    added, removed, moved, blocked, completed = [], [], [], [], []
    for rid in sorted(new.keys() | old.keys()):
        a = facts(old[rid].blob) if rid in old else None
        b = facts(new[rid].blob) if rid in new else None
        if b is None:
            assert a is not None
            removed.append(item(rid, a))
            continue
        was_blocked = a is not None and is_blocked(a["state"], a["blocked_by"])
        if a is None:
            added.append(item(rid, b))
        elif a["state"] != b["state"]:
            moved.append(item(rid, b, old_state=a["state"]))
        if is_blocked(b["state"], b["blocked_by"]) and not was_blocked:
            blocked.append(item(rid, b, blocked_by=list(b["blocked_by"])))
        if b["state"] in DONE_STATES and (a is None or a["state"] not in DONE_STATES):
            completed.append(item(rid, b))
    return GraphChanges(
        first, last, tuple(added), tuple(removed), tuple(moved), tuple(blocked), tuple(completed)
    )
