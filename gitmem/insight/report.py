"""`gitmem report --html`: one self-contained page a person opens from disk.

No script, no CDN, no font or image to fetch: inline CSS (gitmem.insight.style) and inline SVG
charts (gitmem.insight.svg), so it opens offline in any browser, follows the reader's light or
dark setting, and prints. Each section has an id and each key number a `data-value`, which is
what the browser test reads. The numbers are gitmem.insight.stats', the same as `gitmem stats
--json`; a section shows what exists in the store and says so plainly when nothing does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING, Any

from gitmem.consolidate.proposals import KINDS
from gitmem.coord.sessiontag import SESSION_TAG
from gitmem.errors import GitmemError
from gitmem.graph.entity import Entity
from gitmem.index.entries import Entry
from gitmem.insight import svg
from gitmem.insight.stats import store_stats
from gitmem.insight.style import CSS
from gitmem.insight.work import Work, read_work

if TYPE_CHECKING:
    from gitmem.api import Store

__all__ = ["render_report"]

DECISIONS = 12  # latest decisions shown, each with its supersede chain
CHAIN = 6  # older versions followed back per decision
SESSIONS = 12
TABLE_ROWS = 12
PARENTS = 15  # groups of the entity graph shown (largest first), each with CHILDREN at most
CHILDREN = 20
BLOCKERS = 25
PROPOSALS = 20


def render_report(store: Store, since: datetime | None = None) -> tuple[str, dict[str, Any]]:
    """The page, and the stats it shows."""
    entries = store.index().every()
    work = read_work(store)
    stats = store_stats(store, since, entries, work)
    start = None if since is None else since.timestamp()
    recent = [e for e in entries if start is None or e.updated >= start]
    body = [
        _header(stats),
        _summary(stats),
        _growth(stats),
        _breakdown(stats),
        _decisions(store, recent),
        _graph(work, stats["graph"]),
        _sessions(recent),
        _proposals(work, stats["proposals"]),
        _health(stats, entries),
    ]
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>gitmem report: {escape(stats['store'])}</title>"
        f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
    return page, stats


def _section(key: str, title: str, inner: str) -> str:
    return f'<section id="{key}"><h2>{escape(title)}</h2>{inner}</section>'


def _empty(text: str) -> str:
    return f'<p class="empty">{escape(text)}</p>'


def _header(stats: dict[str, Any]) -> str:
    window = f" · since {escape(stats['since'][:10])}" if stats["since"] else ""
    head = (stats["head"] or "no commits")[:10]
    return (
        f'<header id="top"><h1>gitmem memory report</h1><p class="meta">'
        f"<code>{escape(stats['store'])}</code> at <code>{escape(head)}</code> · generated "
        f"{escape(stats['generated'].replace('T', ' '))}{window}</p></header>"
    )


def _card(key: str, label: str, value: Any) -> str:
    return (
        f'<div class="card"><span class="n" id="n-{key}" data-value="{escape(str(value))}">'
        f'{escape(str(value))}</span><span class="k">{escape(label)}</span></div>'
    )


def _summary(stats: dict[str, Any]) -> str:
    records, history, sync = stats["records"], stats["history"], stats["sync"]
    added = sum(week["added"] for week in stats["growth"])
    cards = [
        _card("records", "records at HEAD", records["total"]),
        _card("active", "active", records["active"]),
        _card("superseded", "superseded", records["total"] - records["active"]),
        _card("added", "added in the window" if stats["since"] else "added (all time)", added),
        _card("commits", "writes (commits)", history["commits"]),
        _card("supersedes", "supersedes", history["supersedes"]),
        _card("forgets", "forgets", history["forgets"]),
        _card("unpushed", "writes not pushed", sync.get("ahead", "—") if sync["remote"] else "—"),
    ]
    return _section("summary", "Summary", f'<div class="cards">{"".join(cards)}</div>')


def _growth(stats: dict[str, Any]) -> str:
    weeks = stats["growth"]
    labels = [week["start"] for week in weeks]

    def series(key: str) -> dict[str, list[int]]:
        names = sorted({name for week in weeks for name in week[key]})
        return {name: [week[key].get(name, 0) for week in weeks] for name in names}

    by_type = svg.stacked_bars(
        labels, series("by_type"), title="Records added per week, by type", chart_id="chart-type"
    )
    by_agent = svg.stacked_bars(
        labels, series("by_agent"), title="Records added per week, by agent", chart_id="chart-agent"
    )
    return (
        '<section id="growth"><h2>Memories over time</h2>'
        f"<h3>By type</h3>{by_type}<h3>By agent</h3>{by_agent}</section>"
    )


def _count_table(title: str, key: str, counts: dict[str, int]) -> str:
    rows = list(counts.items())
    shown = rows[:TABLE_ROWS]
    more = len(rows) - len(shown)
    body = "".join(
        f'<tr><td>{escape(name)}</td><td class="num" data-value="{n}">{n}</td></tr>'
        for name, n in shown
    )
    if more:
        rest = sum(n for _, n in rows[TABLE_ROWS:])
        body += f'<tr><td class="note">{more} more</td><td class="num">{rest}</td></tr>'
    if not rows:
        body = '<tr><td class="empty" colspan="2">none</td></tr>'
    return (
        f'<div><table id="by-{key}"><thead><tr><th>{escape(title)}</th><th class="num">records'
        f"</th></tr></thead><tbody>{body}</tbody></table></div>"
    )


def _breakdown(stats: dict[str, Any]) -> str:
    records = stats["records"]
    tables = [
        _count_table("type", "type", records["by_type"]),
        _count_table("agent", "agent", records["by_agent"]),
        _count_table("scope", "scope", records["by_scope"]),
        _count_table("project", "project", records["by_project"]),
    ]
    tags = "".join(
        f'<span class="tag">{escape(tag)} <b>{n}</b></span>' for tag, n in stats["top_tags"]
    )
    return (
        '<section id="breakdown"><h2>What is in the memory</h2>'
        f'<div class="grid2">{"".join(tables)}</div>'
        f'<h3>Top tags</h3><p id="tags">{tags or "<span class=empty>no tags</span>"}</p></section>'
    )


def _when(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M")


def _latest(entries: Iterable[Entry], n: int) -> list[Entry]:
    return sorted(entries, key=lambda e: (-e.updated, e.id))[:n]


def _decisions(store: Store, entries: Sequence[Entry]) -> str:
    active = (e for e in entries if e.type == "decision" and e.status != "superseded")
    chosen = _latest(active, DECISIONS)
    if not chosen:
        return _section("decisions", "Latest decisions", _empty("No decisions recorded."))
    items = []
    for entry in chosen:
        chain = "".join(
            f"<li>replaced <code>{escape(rid)}</code>: {escape(title)}</li>"
            for rid, title in _chain(store, entry.id)
        )
        items.append(
            f'<li class="decision" data-id="{escape(entry.id)}"><b>{escape(entry.title)}</b> '
            f'<span class="meta">{_when(entry.updated)} · {escape(entry.agent)} · '
            f"<code>{escape(entry.id)}</code></span>"
            + (f'<ul class="chain">{chain}</ul>' if chain else "")
            + "</li>"
        )
    return _section("decisions", "Latest decisions", f"<ul>{''.join(items)}</ul>")


def _chain(store: Store, rid: str) -> list[tuple[str, str]]:
    """The versions a decision superseded, newest first, as far back as CHAIN."""
    out: list[tuple[str, str]] = []
    seen = {rid}
    current = rid
    while len(out) < CHAIN:
        try:
            older = [r for r in store.get(current).supersedes if r not in seen]
        except GitmemError:  # a record forgotten since: the chain ends there
            break
        if not older:
            break
        current = older[0]
        seen.add(current)
        try:
            out.append((current, store.get(current).title))
        except GitmemError:
            out.append((current, "(forgotten)"))
            break
    return out


def _sessions(entries: Sequence[Entry]) -> str:
    chosen = _latest((e for e in entries if SESSION_TAG in e.tags), SESSIONS)
    if not chosen:
        return _section("sessions", "Recent sessions", _empty("No agent sessions recorded."))
    rows = "".join(
        f"<tr><td>{_when(e.updated)}</td><td>{escape(e.agent)}</td><td>{escape(e.title)}</td></tr>"
        for e in chosen
    )
    return (
        '<section id="sessions"><h2>Recent sessions</h2><table><thead><tr><th>when</th>'
        f"<th>agent</th><th>session</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _graph(work: Work, counts: dict[str, Any]) -> str:
    """The work graph: its size, what is blocked (highlighted, with the chain of blockers and
    for how long, from history), and the entities grouped under their parent."""
    graph = work.graph
    if not graph.entities:
        return _section(
            "graph",
            "Work graph",
            _empty("No entities: index the plans and tasks with `gitmem entity index-all`."),
        )
    cards = [
        _card("entities", "entities", counts["entities"]),
        _card("blocked", "blocked", counts["blocked"]),
        _card("dangling", "dangling edges", counts["dangling"]),
    ]
    rows = []
    for blocked in work.blocked[:BLOCKERS]:
        e, data = blocked.entity, blocked.to_dict(work.now)
        days = "—" if data["blocked_days"] is None else f"{data['blocked_days']:g} days"
        chain = " ← ".join(
            escape(link.title or link.key) + (" (cycle)" if link.cycle else "")
            for link in blocked.chain[:4]
        )
        rows.append(
            f'<tr class="blocked" data-id="{escape(e.id)}"><td>{escape(e.title)}</td>'
            f"<td>{escape(e.state)}</td><td class=num>{days}</td><td>{chain or '—'}</td></tr>"
        )
    table = (
        '<table id="blockers"><thead><tr><th>blocked</th><th>state</th><th class="num">for'
        f"</th><th>by</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        if rows
        else _empty("Nothing is blocked.")
    )
    blocked_ids = {b.entity.id for b in work.blocked}
    groups: dict[str, list[str]] = {}
    for edge in (edge for edges in graph.out.values() for edge in edges):
        if edge.rel == "parent" and edge.target in graph.entities:
            groups.setdefault(edge.target, []).append(edge.source)
    items = []
    for parent, children in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:PARENTS]:
        shown = sorted(children, key=lambda c: (c not in blocked_ids, graph.entities[c].title))
        lis = "".join(_entity_li(graph.entities[c], c in blocked_ids) for c in shown[:CHILDREN])
        more = len(shown) - CHILDREN
        if more > 0:
            lis += f'<li class="note">{more} more</li>'
        head = graph.entities[parent]
        items.append(
            f'<li><b>{escape(head.title)}</b> <span class="meta">{escape(head.type)} · '
            f"{escape(head.state or 'no state')}</span><ul>{lis}</ul></li>"
        )
    tree = f'<ul id="entity-tree">{"".join(items)}</ul>' if items else ""
    return _section(
        "graph",
        "Work graph",
        f'<div class="cards">{"".join(cards)}</div><h3>Blocked</h3>{table}'
        + (f"<h3>By parent</h3>{tree}" if tree else ""),
    )


def _entity_li(entity: Entity, blocked: bool) -> str:
    css = ' class="blocked"' if blocked else ""
    return (
        f'<li{css} data-id="{escape(entity.id)}">{escape(entity.title)} '
        f'<span class="meta">{escape(entity.state or "no state")}</span></li>'
    )


def _proposals(work: Work, counts: dict[str, Any]) -> str:
    """What gitmem sleep proposed and nobody has decided yet (docs/consolidation.md): merges
    first, then supersedes, demotions, archives, links; the strongest evidence first."""
    rank = {kind: n for n, kind in enumerate(KINDS)}  # merges first: the store's worst rot
    pending = sorted(
        (p for p in work.proposals if p.status == "pending"),
        key=lambda p: (rank.get(p.kind, len(rank)), tuple(-v for v in p.strength), p.id),
    )
    decided = ", ".join(f"{n} {status}" for status, n in counts["decided"].items())
    said = f'<p class="note">Decided: {escape(decided)}.</p>' if decided else ""
    if not pending:
        return (
            '<section id="proposals"><h2>Waiting for review</h2><p class="empty" data-value="0">'
            f"No pending proposals (`gitmem sleep` makes them).</p>{said}</section>"
        )
    rows = "".join(
        f'<tr data-id="{escape(p.id)}"><td><code>{escape(p.id)}</code></td>'
        f"<td>{escape(p.kind)}</td><td>{escape(' · '.join(p.titles or p.records))}</td>"
        f"<td>{escape(p.why)}</td></tr>"
        for p in pending[:PROPOSALS]
    )
    more = len(pending) - PROPOSALS
    tail = f'<p class="note">{more} more: `gitmem proposals`.</p>' if more > 0 else ""
    return (
        f'<section id="proposals"><h2>Waiting for review</h2><p><span id="n-proposals" '
        f'data-value="{len(pending)}">{len(pending)}</span> pending: decide each with '
        "<code>gitmem decide ID --accept|--reject</code>.</p>"
        '<table id="proposal-list"><thead><tr><th>id</th><th>kind</th><th>records</th>'
        f"<th>why</th></tr></thead><tbody>{rows}</tbody></table>{tail}{said}</section>"
    )


def _health(stats: dict[str, Any], entries: Sequence[Entry]) -> str:
    sync, index = stats["sync"], stats["index"]
    if not sync["remote"]:
        line = "no remote: this memory lives on this machine only"
    elif sync.get("tracking") is None:
        line = f"{escape(sync['remote'])}: never fetched"
    else:
        last = sync.get("last_sync")
        when = escape(last[:16].replace("T", " ")) if last else "never"
        line = (
            f"{escape(sync['remote'])}: {sync['ahead']} write(s) not pushed, {sync['behind']} "
            f"remote commit(s) not merged; last sync {when}"
        )
    state = escape(str(index.get("state", "unknown")))
    css = "good" if index.get("state") == "current" else "bad"
    recall = stats["recall"]
    titles = {e.id: e.title for e in entries}
    top = "".join(
        f'<li data-id="{escape(rid)}">{escape(titles.get(rid, rid))} <b>{n}</b></li>'
        for rid, n in recall["top"]
    )
    return (
        '<section id="health"><h2>Sync and index</h2>'
        f'<p id="sync-line">Sync: {line}</p>'
        f'<p>Search index: <span id="index-state" class="{css}">{state}</span></p>'
        f'<p class="note" id="recall-line">Recall statistics: {escape(recall["note"])}; '
        f"{recall['never_recalled']} active record(s) never recalled.</p>"
        + (f'<h3>Most recalled</h3><ol id="top-recalled">{top}</ol>' if top else "")
        + "</section>"
    )
