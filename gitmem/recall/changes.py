"""A semantic diff between two moments: the views at both ends compared record by record.

Records are matched by id, so an edit, a move to another type's directory, or a change of
status reads as a change of that record, not as a file deleted and another added. Each list
is in id order, so two clones print the same diff.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gitmem.errors import UsageError
from gitmem.index.entries import Entry
from gitmem.recall.asof import Moment, TimeTravel, View
from gitmem.store.record import format_time

__all__ = ["Changes", "Edit", "FieldChange", "Item", "diff"]

# Moves with every write; the other fields say what the write was.
_QUIET = frozenset({"updated"})


@dataclass(frozen=True)
class Item:
    """A record named in a diff; `by` is the record that superseded it."""

    id: str
    type: str
    title: str
    status: str = "active"
    by: str = ""
    by_title: str = ""


@dataclass(frozen=True)
class FieldChange:
    field: str
    old: Any
    new: Any


@dataclass(frozen=True)
class Edit:
    """A record at both ends whose content changed (superseding aside)."""

    record: Item
    fields: tuple[FieldChange, ...]
    body_edited: bool


@dataclass(frozen=True)
class Changes:
    start: Moment
    end: Moment
    added: tuple[Item, ...]
    superseded: tuple[Item, ...]
    forgotten: tuple[Item, ...]
    changed: tuple[Edit, ...]
    notes: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.added or self.superseded or self.forgotten or self.changed)

    def to_dict(self) -> dict[str, Any]:
        """The JSON `gitmem diff --json` prints (schema in its help)."""

        def item(i: Item, *extra: str) -> dict[str, Any]:
            out: dict[str, Any] = {"id": i.id, "type": i.type, "title": i.title}
            for name in extra:
                out[name] = getattr(i, name)
            return out

        return {
            "from": _end(self.start),
            "to": _end(self.end),
            "added": [item(i, "status") for i in self.added],
            "superseded": [item(i, "by", "by_title") for i in self.superseded],
            "forgotten": [item(i) for i in self.forgotten],
            "changed": [
                {
                    **item(e.record),
                    "fields": [{"field": f.field, "old": f.old, "new": f.new} for f in e.fields],
                    "body_edited": e.body_edited,
                }
                for e in self.changed
            ],
            "notes": list(self.notes),
        }


def diff(travel: TimeTravel, start: str | datetime, end: str | datetime | None = None) -> Changes:
    """What changed from `start` to `end` (None: now)."""
    first = travel.moment(start)
    last = travel.moment("now" if end is None else end)
    if first.time > last.time:
        raise UsageError(
            f"FROM ({first.label}) is later than TO ({last.label}); give the earlier one first"
        )
    before, after = travel.view(first), travel.view(last)
    old, new = before.entries, after.entries
    changed_ids = sorted(rid for rid in old.keys() & new.keys() if old[rid].blob != new[rid].blob)
    details = travel.timeline.fields(
        [old[rid].blob for rid in changed_ids] + [new[rid].blob for rid in changed_ids]
    )
    superseded: list[Item] = []
    edits: list[Edit] = []
    for rid in changed_ids:
        a, b = old[rid], new[rid]
        (fa, body_a), (fb, body_b) = details[a.blob], details[b.blob]
        if a.status != "superseded" and b.status == "superseded":
            by = str(fb.get("superseded_by") or "")
            later = new.get(by)
            superseded.append(_item(b, by, "" if later is None else later.title))
            continue
        fields = tuple(
            FieldChange(name, fa.get(name), fb.get(name))
            for name in dict.fromkeys([*fa, *fb])
            if name not in _QUIET and fa.get(name) != fb.get(name)
        )
        edits.append(Edit(_item(b), fields, body_a != body_b))
    return Changes(
        first,
        last,
        added=tuple(_item(new[rid]) for rid in sorted(new.keys() - old.keys())),
        superseded=tuple(superseded),
        forgotten=tuple(_item(old[rid]) for rid in sorted(old.keys() - new.keys())),
        changed=tuple(edits),
        notes=_notes(before, after),
    )


def _item(entry: Entry, by: str = "", by_title: str = "") -> Item:
    return Item(entry.id, entry.type, entry.title, entry.status, by, by_title)


def _end(moment: Moment) -> dict[str, Any]:
    return {"time": format_time(moment.time), "commit": moment.commit}


def _notes(*views: View) -> tuple[str, ...]:
    return tuple(dict.fromkeys(note for view in views for note in view.notes))
