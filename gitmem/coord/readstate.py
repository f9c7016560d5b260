"""Which messages this device has shown to whom: local, never committed.

"Read" is a fact about one device's screen, not about the shared memory: committing it would
make every `gitmem inbox` a commit, and two devices reading the same broadcast would conflict.
What must travel to the sender is the acknowledgement (gitmem.coord.messages.ack), which is a
commit. The file is `.gitmem/coord/read.json` in the store's cache, `{agent: [message id]}`;
losing it only makes old messages unread again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from gitmem.atomic import replace_file

__all__ = ["mark_read", "read_ids"]

_FILE = ("coord", "read.json")


def _path(cache: Path) -> Path:
    return cache.joinpath(*_FILE)


def _load(cache: Path) -> dict[str, list[str]]:
    try:
        raw = json.loads(_path(cache).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {str(k): [str(i) for i in v] for k, v in raw.items() if isinstance(v, list)}


def read_ids(cache: Path, agent: str) -> frozenset[str]:
    return frozenset(_load(cache).get(agent, ()))


def mark_read(cache: Path, agent: str, ids: Iterable[str]) -> None:
    """Remember `ids` as shown to `agent` (two inboxes at once may drop one's marks: they
    come back unread, nothing worse)."""
    data = _load(cache)
    known = data.get(agent, [])
    new = [i for i in ids if i not in set(known)]
    if not new:
        return
    data[agent] = sorted({*known, *new})
    path = _path(cache)
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, json.dumps(data, indent=1, sort_keys=True))
