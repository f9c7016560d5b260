"""The context block: what an agent is told about its memory when a session starts.

Three parts, in this order, inside a byte budget (default 8 KB, `hooks.context_bytes`):
1. the handoff: the last session record for this project;
2. the latest writes (what changed recently);
3. the most important memories for this project, by weight and recency.
Every line names the record id, so the agent can open it (`gitmem read ID`, MCP `read`).
This module gathers the records to pick from; gitmem.agents.contextblock picks and lays
them out.

Cost: the block is built from the search index's catalog (SQLite, standard library): no
tantivy, no vectors, no model. When the catalog is behind HEAD the block adds what git says
changed since (a tree diff, parsed records) instead of catching the index up, which would load
the embedding model; when there is no catalog at all, the block lists the records of the
latest commits only and says so. docs/hooks.md argues the choice.
"""

from __future__ import annotations

import math
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.agents.contextblock import DEFAULT_BUDGET, RECENT, SQL_SCORE, Block, Item, render
from gitmem.agents.project import TAG_PREFIX, project_tag
from gitmem.coord.sessiontag import SESSION_TAG
from gitmem.index.stamp import CATALOG, TAG_SEP, connect
from gitmem.store.gitfiles import blobs, changed_paths, head_commit

if TYPE_CHECKING:
    from gitmem.store.record import Record
    from gitmem.store.store import Store

__all__ = ["build"]

OVERLAY_MAX = 2000  # changed paths the block reads from git before giving up on them
WALK_MAX = 100  # commits read when there is no catalog


def build(
    root: Path,
    *,
    project: str = "",
    budget: int = DEFAULT_BUDGET,
    now: datetime | None = None,
    store: Store | None = None,
) -> Block:
    """The block for `project` ("" = every project) from the store at `root`. `store` is
    opened only if the catalog is behind HEAD. Proposals of `gitmem sleep` waiting for a
    decision get one line at the end, when it fits the budget."""
    from gitmem.consolidate.pending import pending_count

    block = _build(root, project=project, budget=budget, now=now, store=store)
    waiting = pending_count(root)
    line = (
        f"\n{waiting} proposal{'s' if waiting != 1 else ''} from gitmem sleep wait for review: "
        '"gitmem proposals"\n'
    )
    if not waiting or not block.text or block.bytes + len(line.encode()) > budget:
        return block
    return Block(block.text + line, block.ids, block.project, block.source)


def _build(
    root: Path,
    *,
    project: str,
    budget: int,
    now: datetime | None,
    store: Store | None,
) -> Block:
    moment = now or datetime.now(UTC)
    catalog = root / CATALOG
    stamp = _stamp(catalog)
    head = head_commit(root / ".git")
    overlay: dict[str, Item | None] = {}
    source = "index"
    if stamp is None or stamp != head:
        changes = None if stamp is None or head is None else _changes_git(root, stamp, head)
        if changes is None:
            if store is None:
                from gitmem.store.store import Store

                store = Store.open(root)
            changes = None if stamp is None else _changes(store, stamp)
        if changes is None:
            assert store is not None
            return render(_walked(store), project=project, budget=budget, now=moment, source="git")
        overlay, source = changes, "index+git" if changes else "index"
    items = _candidates(catalog, project_tag(project), moment.timestamp(), budget, set(overlay))
    if items is None:  # the catalog broke between the two reads
        items = []
    items.extend(i for i in overlay.values() if i is not None)
    return render(items, project=project, budget=budget, now=moment, source=source)


def _is_record(path: str) -> bool:
    return path.startswith("records/") and path.endswith(".md")


def _changes_git(root: Path, stamp: str, head: str) -> dict[str, Item | None] | None:
    """Like _changes, through the git command (no pygit2 import); None when git cannot."""
    try:
        changed = [(p, b) for p, b in changed_paths(root, stamp, head, "records/") if _is_record(p)]
        if len(changed) > OVERLAY_MAX:
            return None
        contents = blobs(root, [b for _, b in changed if b is not None])
    except (OSError, ValueError):
        return None
    return {
        Path(p).stem: None if b is None else _item(_parsed(contents.get(b, b"")))
        for p, b in changed
    }


def _changes(store: Store, stamp: str) -> dict[str, Item | None] | None:
    """Records changed between the catalog's commit and HEAD, read from git (None: a record
    removed); None when there are too many to read at a session's start."""
    try:
        changes = store.repo.diff(stamp, store.head())
    except (KeyError, ValueError):  # the catalog's commit is gone (history was rewritten)
        return None
    if len(changes) > OVERLAY_MAX:
        return None
    out: dict[str, Item | None] = {}
    for change in changes:
        if _is_record(change.path):
            record = None if change.new is None else _parsed(store.repo.blob(change.new))
            out[Path(change.path).stem] = _item(record)
    return out


def _stamp(path: Path) -> str | None:
    """The commit the catalog was built from; None when it is missing or unusable."""
    db = connect(path)
    if db is None:
        return None
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'commit'").fetchone()
    except sqlite3.Error:
        return None
    finally:
        db.close()
    return None if row is None else str(row[0])


_COLUMNS = "id, type, title, abstract, tags, updated, weight"


def _candidates(path: Path, tag: str, now: float, budget: int, skip: set[str]) -> list[Item] | None:
    """Every record `render` could pick from the catalog, and no more: the newest session, the
    newest writes, and the most important records, each section ranked by SQLite with the same
    key `render` uses (at 10k records, building all of them in Python costs several times as
    much). `skip`: ids the caller knows better (changed since the catalog's commit)."""
    db = connect(path)
    if db is None:
        return None
    sep_session = f"{TAG_SEP}{SESSION_TAG}{TAG_SEP}"
    mine = (
        f"{TAG_SEP}{tag}{TAG_SEP}" if tag else TAG_SEP * 2
    )  # two separators never occur: no match
    where = ["status != 'superseded'"]
    args: list[object] = []
    if tag:
        where.append("(instr(tags, ?) > 0 OR instr(tags, ?) = 0)")
        args += [f"{TAG_SEP}{tag}{TAG_SEP}", f"{TAG_SEP}{TAG_PREFIX}"]
    if skip:
        where.append(f"id NOT IN ({','.join('?' * len(skip))})")
        args += sorted(skip)
    base = f"SELECT {_COLUMNS} FROM records WHERE {' AND '.join(where)}"
    extra = len(skip)  # a skipped id's replacement may push one of these out of its section
    queries = [
        (f"{base} AND instr(tags, ?) > 0 ORDER BY updated DESC, id LIMIT ?", [sep_session, 1]),
        (
            f"{base} AND instr(tags, ?) = 0 ORDER BY updated DESC, id LIMIT ?",
            [sep_session, RECENT + extra],
        ),
        (
            f"{base} AND instr(tags, ?) = 0 ORDER BY {SQL_SCORE} DESC, id LIMIT ?",
            [sep_session, now, mine, RECENT + extra + budget // 40 + 1],
        ),
    ]
    try:
        db.execute("SELECT pow(0.5, 1.0)")
    except sqlite3.OperationalError:  # an SQLite built without its math functions
        db.create_function("pow", 2, math.pow, deterministic=True)
    found: dict[str, Item] = {}
    try:
        for sql, more in queries:
            for row in db.execute(sql, [*args, *more]):
                found[row[0]] = _row_item(*row)
    except sqlite3.Error:
        return None
    finally:
        db.close()
    return list(found.values())


def _row_item(
    rid: str, type_: str, title: str, abstract: str, tags: str, updated: int, weight: float
) -> Item:
    return Item(
        rid,
        type_,
        title,
        abstract,
        tuple(tags[1:-1].split(TAG_SEP)) if tags else (),
        updated,
        weight,
    )


def _parsed(data: bytes) -> Record | None:
    from gitmem.errors import RecordInvalid
    from gitmem.store.recordfile import parse

    try:
        return parse(data.decode("utf-8"))
    except (RecordInvalid, UnicodeDecodeError):
        return None


def _item(record: Record | None) -> Item | None:
    if record is None or record.status == "superseded":
        return None
    return Item(
        record.id,
        record.type,
        record.title,
        record.abstract,
        record.tags,
        int(record.updated.timestamp()),
        record.weight,
    )


def _walked(store: Store) -> list[Item]:
    """No catalog: the records the latest commits wrote, read from git."""
    items: dict[str, Item] = {}
    seen: set[str] = set()
    for count, commit in enumerate(store.repo.walk(store.head())):
        if count >= WALK_MAX:
            break
        rid = commit.trailers().get("Gitmem-Record", "")
        if rid and rid not in seen:
            seen.add(rid)
            item = _item(store.previous(rid))
            if item is not None:
                items[rid] = item
    return list(items.values())
