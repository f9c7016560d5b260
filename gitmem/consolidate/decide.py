"""A person's decisions: accepting or rejecting a proposal, and feedback on a record.

Accepting applies the proposal and marks it accepted in one commit that names it (trailer
`Gitmem-Proposal`), so `git revert` of that commit undoes the decision whole. Rejecting is a
commit of the proposal file alone: synced, it stops every device from proposing it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from gitmem.consolidate.proposals import Proposal, dump_proposal, find_proposal
from gitmem.consolidate.settings import load_settings
from gitmem.errors import GitmemError, NotFound
from gitmem.store.bundle import Change, write_bundle
from gitmem.store.record import Record, format_time

if TYPE_CHECKING:
    from gitmem.store.store import Store

__all__ = ["Decision", "Feedback", "decide", "feedback"]


@dataclass(frozen=True)
class Decision:
    proposal: Proposal
    commit: str
    records: tuple[Record, ...]  # the records the commit wrote (none for a rejection)


@dataclass(frozen=True)
class Feedback:
    record: Record
    before: float
    commit: str | None  # None: the weight was already at its bound


def _current(store: Store, proposal: Proposal) -> dict[str, Record]:
    found: dict[str, Record] = {}
    for rid in proposal.records:
        try:
            record = store.get(rid)
        except NotFound:
            record = None
        if record is None or record.status != "active" or record.id != rid:
            raise GitmemError(
                f"{proposal.id}: record {rid} is gone or no longer active since the proposal "
                f'was made; reject it ("gitmem decide {proposal.id} --reject") and run '
                '"gitmem sleep" again'
            )
        found[rid] = record
    return found


def _changes(proposal: Proposal, records: dict[str, Record], moment: datetime) -> list[Change]:
    kind = proposal.kind
    if kind in ("merge", "supersede"):
        kept = records[proposal.keep]
        (retired,) = (r for rid, r in records.items() if rid != kept.id)
        extra_tags = tuple(t for t in retired.tags if t not in kept.tags) if kind == "merge" else ()
        new_kept = kept.with_(
            supersedes=(*kept.supersedes, retired.id),
            tags=(*kept.tags, *extra_tags),
            updated=max(moment, kept.updated),
        )
        new_retired = retired.with_(
            status="superseded", superseded_by=kept.id, updated=max(moment, retired.updated)
        )
        return [(kept, new_kept), (retired, new_retired)]
    (first, *rest) = (records[rid] for rid in proposal.records)
    if kind == "demote":
        weight = first.weight if proposal.weight is None else proposal.weight
        return [(first, first.with_(weight=weight, updated=max(moment, first.updated)))]
    if kind == "archive":
        return [(first, None)]
    other = rest[0]
    if other.id in first.links:
        return []
    return [
        (first, first.with_(links=(*first.links, other.id), updated=max(moment, first.updated)))
    ]


def _named(proposal: Proposal) -> str:
    title = proposal.titles[0] if proposal.titles else proposal.records[0]
    more = len(proposal.records) - 1
    return f'"{title}"' + (f" and {more} more" if more else "")


def decide(
    store: Store, prefix: str, *, accept: bool, note: str = "", agent: str = "", now: datetime
) -> Decision:
    proposal = find_proposal(store, prefix)
    if proposal.status != "pending":
        raise GitmemError(
            f"{proposal.id} was already {proposal.status}"
            f"{' on ' + proposal.decided if proposal.decided else ''}; "
            "to undo an acceptance, git revert its commit"
        )
    who = agent.strip() or store.default_agent()
    moment = now.replace(microsecond=0)
    changes = _changes(proposal, _current(store, proposal), moment) if accept else []
    status = "accepted" if accept else "rejected"
    decided = proposal.decided_as(status, format_time(moment), note.strip(), who)
    verb = "accept" if accept else "reject"
    result = write_bundle(
        store,
        changes,
        {decided.path: dump_proposal(decided)},
        operation="decide",
        subject=f"{verb} {proposal.id}: {proposal.kind} of {_named(proposal)}",
        detail="\n\n".join(part for part in (proposal.why, note.strip()) if part),
        trailers={"Gitmem-Proposal": proposal.id, "Gitmem-Decision": status},
        agent=who,
    )
    return Decision(decided, result.commit or "", result.records)


def feedback(
    store: Store, id_or_prefix: str, *, useful: bool, agent: str = "", now: datetime
) -> Feedback:
    """Multiply (useful) or divide the record's weight by `sleep.feedback_step`, kept within
    `sleep.weight_floor` .. `sleep.weight_ceiling`; one commit that says which."""
    settings = load_settings(store.root)
    old = store.get(id_or_prefix)
    step = settings.feedback_step if useful else 1 / settings.feedback_step
    low, high = settings.weight_floor, settings.weight_ceiling
    target = round(min(high, max(low, old.weight * step)), 3)
    if (useful and old.weight >= high) or (not useful and old.weight <= low):
        target = old.weight  # outside the bounds already (set by hand): feedback leaves it
    if target == old.weight:
        return Feedback(old, old.weight, None)
    verdict = "useful" if useful else "not-useful"
    new = old.with_(weight=target, updated=max(now.replace(microsecond=0), old.updated))
    result = write_bundle(
        store,
        [(old, new)],
        {},
        operation="feedback",
        subject=f"feedback({old.type}): {verdict}: {old.title}",
        detail=f"weight {old.weight:g} -> {target:g}",
        trailers={"Gitmem-Record": old.id, "Gitmem-Feedback": verdict},
        agent=agent,
    )
    return Feedback(result.record, old.weight, result.commit)
