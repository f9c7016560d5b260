"""What one consolidation pass finds: the proposals it would make and the few safe changes it
would make itself. Pure: records, recall statistics and a neighbour search in, findings out;
gitmem.consolidate.sleep writes them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from gitmem.consolidate.proposals import Proposal, proposal_id
from gitmem.consolidate.recallstats import RecallStats
from gitmem.consolidate.settings import SleepSettings
from gitmem.consolidate.similarity import (
    Budget,
    Neighbours,
    jaccard,
    near_duplicates,
    similar_sets,
    words,
)
from gitmem.store.record import Record, format_time

__all__ = ["Action", "Findings", "scan"]

# Records gitmem's own commands write, which a merge or a demotion would fight: an entity
# mirrors its file (the next index rewrites it), messages and tasks are coordination, not
# knowledge. SESSION_TAG is gitmem.coord.sessiontag's (a wing of the same layer, so not
# imported; tests/test_consolidate.py checks they agree).
WRITTEN_BY_GITMEM = frozenset({"entity", "message", "task"})
SESSION_TAG = "session"

_DAY = 86400.0
_ORDER = {"merge": 0, "supersede": 1, "archive": 2, "demote": 3, "link": 4}


@dataclass(frozen=True)
class Action:
    """A safe, reversible change made unattended: link `record` to `other`, or settle its
    weight at `weight`."""

    kind: str  # "link" or "weight"
    record: str
    other: str = ""
    weight: float = 1.0
    why: str = ""


@dataclass(frozen=True)
class Findings:
    scanned: int
    proposals: tuple[Proposal, ...]
    actions: tuple[Action, ...]
    known: int  # found again, but already proposed or decided: not proposed again
    held: int  # found, but past max_proposals this run
    stopped: bool = False  # a word join ran out of its budget (max_pairs, max_comparisons)


def _keeper(a: Record, b: Record) -> tuple[Record, Record]:
    """(kept, retired) of two duplicates: the heavier, then the newer, then the larger id."""
    kept = max((a, b), key=lambda r: (r.weight, r.updated, r.id))
    return kept, (b if kept is a else a)


def scan(
    records: Sequence[Record],
    settings: SleepSettings,
    stats: RecallStats,
    now: datetime,
    *,
    decided: Collection[str] = (),
    neighbours: Neighbours | None = None,
    since: datetime | None = None,
) -> Findings:
    """Findings over the active, non-private `records` (private ones never leave the device,
    and a proposal naming one would) that people and agents write: not the mirrors and logs
    gitmem's commands keep (WRITTEN_BY_GITMEM, the hooks' session records). `decided`: ids
    of proposals already in the store. With `since`, pairs need one record updated since
    then."""
    live = [
        r
        for r in records
        if r.status == "active"
        and r.scope != "private"
        and r.type not in WRITTEN_BY_GITMEM
        and SESSION_TAG not in r.tags
    ]
    by_id = {r.id: r for r in live}
    stamp = format_time(now)
    found: list[Proposal] = []
    seen: set[str] = set()

    def fresh(*ids: str) -> bool:
        return since is None or any(by_id[i].updated >= since for i in ids)

    def propose(kind: str, ids: tuple[str, ...], why: str, **extra: object) -> None:
        pid = proposal_id(kind, ids)
        if pid not in seen:
            seen.add(pid)
            titles = tuple(by_id[i].title for i in ids)
            found.append(Proposal(pid, kind, ids, why, stamp, titles=titles, **extra))  # type: ignore[arg-type]

    near: dict[str, list[tuple[str, float]]] = {}

    def remembered(record: Record) -> Sequence[tuple[str, float]]:
        if record.id not in near and neighbours is not None:
            near[record.id] = [(o, s) for o, s in neighbours(record) if o in by_id]
        return near.get(record.id, [])

    budgets = [Budget(settings.max_comparisons, settings.max_pairs) for _ in range(2)]
    paired: set[tuple[str, str]] = set()
    for pair in near_duplicates(
        live,
        threshold=settings.duplicate_jaccard,
        cosine=settings.duplicate_cosine,
        neighbours=remembered if neighbours is not None else None,
        budget=budgets[0],
    ):
        paired.add((pair.a, pair.b))
        a, b = by_id[pair.a], by_id[pair.b]
        if not fresh(a.id, b.id) or a.id in b.supersedes or b.id in a.supersedes:
            continue
        kept, retired = _keeper(a, b)
        evidence = {"jaccard": round(pair.jaccard, 4)}
        if pair.cosine is not None:
            evidence["cosine"] = pair.cosine
        how = f"cosine {pair.cosine:.2f}" if pair.cosine is not None else ""
        why = (
            f"near-duplicates (word overlap {pair.jaccard:.2f}{', ' + how if how else ''}); "
            f'keep "{kept.title}", mark {retired.id} superseded by it'
        )
        propose("merge", tuple(sorted((a.id, b.id))), why, keep=kept.id, evidence=evidence)

    titles = {r.id: words(r.title) for r in live}
    for a_id, b_id, score in similar_sets(titles, settings.subject_jaccard, budgets[1]):
        a, b = by_id[a_id], by_id[b_id]
        if (a_id, b_id) in paired or a.type != b.type or not fresh(a_id, b_id):
            continue
        newer, older = (a, b) if (a.created, a.id) > (b.created, b.id) else (b, a)
        body = jaccard(words(a.body), words(b.body))
        why = (
            f"same subject and type ({a.type}: titles {score:.2f} alike) but different text "
            f"(word overlap {body:.2f}); the newer {newer.id} may replace {older.id}"
        )
        evidence = {"title_jaccard": round(score, 4), "jaccard": round(body, 4)}
        propose("supersede", tuple(sorted((a_id, b_id))), why, keep=newer.id, evidence=evidence)

    covered = {i for p in found for i in p.records}
    logged_for = (now.timestamp() - stats.since) / _DAY if stats.since is not None else 0.0
    for record in live:
        age = (now - record.updated).total_seconds() / _DAY
        if record.id in covered or age < settings.stale_days or stats.count[record.id]:
            continue
        if record.weight <= settings.stale_weight:
            why = (
                f"not updated for {age:.0f} days, weight {record.weight:g}, never recalled; "
                "archiving removes it from HEAD (history keeps it)"
            )
            propose("archive", (record.id,), why, evidence={"age_days": round(age, 1)})
        elif logged_for >= settings.stale_days and record.weight > settings.weight_floor:
            lower = max(settings.weight_floor, min(settings.stale_weight, record.weight / 2))
            why = (
                f"not updated for {age:.0f} days and not recalled in {logged_for:.0f} days of "
                f"recall statistics; weight {record.weight:g} -> {lower:g}"
            )
            evidence = {"age_days": round(age, 1), "logged_days": round(logged_for, 1)}
            propose("demote", (record.id,), why, weight=lower, evidence=evidence)

    if neighbours is not None:
        for record in live:
            for other, score in remembered(record):
                key = tuple(sorted((record.id, other)))
                if other == record.id or key in paired or not fresh(*key):
                    continue
                if not settings.link_cosine <= score < settings.duplicate_cosine:
                    continue
                if other in record.links or record.id in by_id[other].links:
                    continue
                why = f"close in meaning (cosine {score:.2f}) and not linked"
                propose("link", (key[0], key[1]), why, evidence={"cosine": round(score, 4)})

    actions: list[Action] = []
    for (one, two), times in sorted(stats.together.items()):
        if times < settings.co_recall_links or one not in by_id or two not in by_id:
            continue
        if two in by_id[one].links or one in by_id[two].links:
            continue
        actions.append(Action("link", one, two, why=f"recalled together {times} times"))
    for record in live:
        times = stats.count[record.id]
        if times >= settings.recall_settle and record.weight < 1.0:
            why = f"recalled {times} times, weight {record.weight:g}"
            actions.append(Action("weight", record.id, weight=1.0, why=why))

    new = [p for p in found if p.id not in decided]
    # The strongest first within a kind: past max_proposals, the weakest wait for the next run,
    # and every device that scans the same store holds back the same ones.
    new.sort(key=lambda p: (_ORDER[p.kind], tuple(-v for v in p.strength), p.id))
    chosen = new[: settings.max_proposals]
    return Findings(
        scanned=len(live),
        proposals=tuple(chosen),
        actions=tuple(actions[: settings.max_actions]),
        known=len(found) - len(new),
        held=len(new) - len(chosen),
        stopped=any(b.stopped for b in budgets),
    )
