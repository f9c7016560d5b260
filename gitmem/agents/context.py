"""The context block: what an agent is told about its memory when a session starts.

Three parts, in this order, inside a byte budget (default 8 KB, `hooks.context_bytes`):
1. the handoff: the last session record for this project;
2. the latest writes (what changed recently);
3. the most important memories for this project, by weight and recency.
Every line names the record id, so the agent can open it (`gitmem read ID`, MCP `read`).

Cost: the block is built from the search index's catalog (SQLite, standard library): no
tantivy, no vectors, no model. When the catalog is behind HEAD the block adds what git says
changed since (a tree diff, parsed records) instead of catching the index up, which would load
the embedding model; when there is no catalog at all, the block lists the records of the
latest commits only and says so. docs/hooks.md argues the choice.
"""

from __future__ import annotations

import heapq
import math
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from gitmem.agents.project import TAG_PREFIX, project_tag
from gitmem.coord.sessiontag import SESSION_TAG
from gitmem.index.stamp import CATALOG, TAG_SEP, connect
from gitmem.store.gitfiles import blobs, changed_paths, head_commit

if TYPE_CHECKING:
    from gitmem.store.record import Record
    from gitmem.store.store import Store

__all__ = ["DEFAULT_BUDGET", "Block", "Item", "build", "render", "render_ranked"]

DEFAULT_BUDGET = 8192
RECENT = 5  # latest writes shown
HALF_LIFE_DAYS = 90.0  # importance halves its recency share every quarter
LINE_MAX = 320  # bytes of one line, so one long abstract cannot eat the budget
OVERLAY_MAX = 2000  # changed paths the block reads from git before giving up on them
WALK_MAX = 100  # commits read when there is no catalog
_HOW = (
    "Each line is [record id] (type) title — abstract. Open one with `gitmem read ID` "
    "(MCP: read); record what you learn with `gitmem record` (MCP: record).\n"
)


class Item(NamedTuple):
    """What the block needs of a record (a NamedTuple: SessionStart builds 10k of them)."""

    id: str
    type: str
    title: str
    abstract: str
    tags: tuple[str, ...]
    updated: int  # Unix seconds
    weight: float


@dataclass(frozen=True)
class Block:
    text: str  # "" when the store has nothing to say
    ids: tuple[str, ...]  # the records it names, in order
    project: str
    source: str  # "index", "index+git" (catalog behind HEAD), "git" (no catalog), "recall"

    @property
    def bytes(self) -> int:
        return len(self.text.encode("utf-8"))

    def to_dict(self) -> dict[str, object]:
        return {
            "project": self.project,
            "bytes": self.bytes,
            "ids": list(self.ids),
            "source": self.source,
            "text": self.text,
        }


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
            f"{base} AND instr(tags, ?) = 0 ORDER BY {_SQL_SCORE} DESC, id LIMIT ?",
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


# --- rendering ---------------------------------------------------------------------------------


def _importance(item: Item, now: float, tag: str) -> float:
    return _score(item.weight, item.updated, bool(tag) and tag in item.tags, now)


def _score(weight: float, updated: int, mine: bool, now: float) -> float:
    age_days = max(0.0, (now - updated) / 86400.0)
    recency = 0.3 + 0.7 * math.pow(0.5, age_days / HALF_LIFE_DAYS)
    return min(max(weight, 0.25), 4.0) * recency * (1.5 if mine else 1.0)


# _score in SQL, the same operations in the same order (parameters: now, the project's tag), so
# that SQLite ranks the catalog without a Python call per record.
_SQL_SCORE = (
    "min(max(weight, 0.25), 4.0) * (0.3 + 0.7 * pow(0.5, max(0.0, (? - updated) / 86400.0) / "
    f"{HALF_LIFE_DAYS!r})) * (CASE WHEN instr(tags, ?) > 0 THEN 1.5 ELSE 1.0 END)"
)


def _belongs(item: Item, tag: str) -> bool:
    """This project's records and the ones tagged with no project at all (preferences that
    hold everywhere); other projects' records stay out."""
    if not tag:
        return True
    return tag in item.tags or not any(t.startswith(TAG_PREFIX) for t in item.tags)


def _day(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d")


def _line(item: Item, dated: bool) -> str:
    when = f", {_day(item.updated)}" if dated else ""
    text = f"- [{item.id}] ({item.type}{when}) {' '.join(item.title.split())}"
    abstract = " ".join(item.abstract.split())
    if abstract and abstract != item.title:
        text += f" — {abstract}"
    encoded = text.encode("utf-8")
    if len(encoded) > LINE_MAX:
        text = encoded[: LINE_MAX - 3].decode("utf-8", "ignore").rstrip() + "…"
    return text + "\n"


def _newest_first(item: Item) -> tuple[int, str]:
    return -item.updated, item.id


def render(
    items: dict[str, Item] | Iterable[Item],
    *,
    project: str = "",
    budget: int = DEFAULT_BUDGET,
    now: datetime | None = None,
    source: str = "index",
) -> Block:
    """Lay out the block from `items` within `budget` bytes (UTF-8)."""
    pool = list(items.values()) if isinstance(items, dict) else list(items)
    tag = project_tag(project)
    mine = [i for i in pool if _belongs(i, tag)]
    if not mine:
        return Block("", (), project, source)
    moment = (now or datetime.now(UTC)).timestamp()
    sessions = heapq.nsmallest(1, (i for i in mine if SESSION_TAG in i.tags), key=_newest_first)
    others = [i for i in mine if SESSION_TAG not in i.tags]
    recent = heapq.nsmallest(RECENT, others, key=_newest_first)
    shown = {i.id for i in recent}
    # No more lines than the budget could hold (a line is at least ~40 bytes): at 10k records
    # a partial selection saves sorting them all.
    important = heapq.nsmallest(
        budget // 40 + 1,
        (i for i in others if i.id not in shown),
        key=lambda i: (-_importance(i, moment, tag), i.id),
    )
    where = f" for project {project}" if project else ""
    sections = [
        ("Last session", sessions, True),
        ("Latest writes", recent, True),
        ("Important", important, False),
    ]
    text, ids = _lay_out(f"# gitmem: memories{where}\n{_HOW}", sections, budget)
    return Block(text, ids, project, source)


def render_ranked(items: Iterable[Item], *, title: str, budget: int) -> Block:
    """`items` in the order given (a recall's ranking, best first) under `title`, within
    `budget` bytes: what UserPromptSubmit injects."""
    text, ids = _lay_out(f"# gitmem: {title}\n{_HOW}", [("Related", list(items), True)], budget)
    return Block(text, ids, "", "recall")


def _lay_out(
    head: str, sections: list[tuple[str, list[Item], bool]], budget: int
) -> tuple[str, tuple[str, ...]]:
    """The text and the ids it names: whole lines, section by section, until the next line
    would pass the budget. ("", ()) when no line fits."""
    out = [head]
    used = len(head.encode("utf-8"))
    ids: list[str] = []
    for title, group, dated in sections:
        heading = f"\n## {title}\n"
        lines: list[str] = []
        for item in group:
            line = _line(item, dated)
            cost = len(line.encode("utf-8")) + (0 if lines else len(heading.encode("utf-8")))
            if used + cost > budget:
                break
            lines.append(line)
            ids.append(item.id)
            used += cost
        if lines:
            out.append(heading)
            out.extend(lines)
    return ("".join(out), tuple(ids)) if ids else ("", ())
