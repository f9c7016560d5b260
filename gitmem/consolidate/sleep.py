"""`gitmem sleep`: one consolidation pass. It scans (gitmem.consolidate.scan), makes the safe
changes itself, each as its own commit (a link, a weight settled within bounds), writes what
needs a person as proposal files in one commit, and leaves a short report.

Nothing here removes or rewrites record text: only an accepted proposal does
(gitmem.consolidate.decide).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from gitmem.atomic import replace_file
from gitmem.consolidate.proposals import Proposal, dump_proposal, load_proposals
from gitmem.consolidate.recallstats import read_stats
from gitmem.consolidate.scan import Action, scan
from gitmem.consolidate.settings import SleepSettings, load_settings
from gitmem.consolidate.similarity import Neighbours
from gitmem.store.bundle import write_bundle
from gitmem.store.record import Record

if TYPE_CHECKING:
    from gitmem.index.index import Index
    from gitmem.store.store import Store

__all__ = ["AGENT", "REPORT_NAME", "SleepReport", "index_neighbours", "sleep"]

AGENT = "gitmem-sleep"
REPORT_NAME = "sleep-report.txt"
_NEIGHBOURS = 5


@dataclass(frozen=True)
class SleepReport:
    scanned: int
    found: int
    done: tuple[str, ...]  # one line per unattended change (its commit, or what it would be)
    proposed: tuple[Proposal, ...]
    known: int
    held: int
    dry_run: bool
    commits: tuple[str, ...]
    semantic: bool
    stopped: bool = False  # the pass stopped early: more alike pairs than it weighs

    def text(self) -> str:
        verb = "would make" if self.dry_run else "made"
        lines = [
            f"gitmem sleep{' (dry run)' if self.dry_run else ''}: scanned {self.scanned} "
            f"records ({'words and meaning' if self.semantic else 'words only: no model'}), "
            f"found {self.found}, {verb} {len(self.done)} safe change"
            f"{'s' if len(self.done) != 1 else ''}, proposed {len(self.proposed)}",
        ]
        lines += [f"  done: {line}" for line in self.done]
        lines += [f"  proposed {p.id} {p.kind}: {p.why}" for p in self.proposed]
        if self.known:
            lines.append(f"  {self.known} found again but already proposed or decided")
        if self.held:
            lines.append(f"  {self.held} more held back (sleep.max_proposals); run sleep again")
        if self.stopped:
            lines.append(
                "  stopped early: more alike pairs than one pass weighs (sleep.max_pairs, "
                "sleep.max_comparisons); what it found is above. Records this alike are often "
                "a template: raise sleep.duplicate_jaccard or subject_jaccard"
            )
        if self.proposed and not self.dry_run:
            lines.append('  review with "gitmem proposals", then "gitmem decide ID --accept"')
        return "\n".join(lines) + "\n"


def index_neighbours(index: Index) -> Neighbours | None:
    """A record's nearest records by embedding through the index's semantic half; None
    without a model."""
    if index.model is None:
        return None
    from gitmem.index.entries import Filter

    def neighbours(record: Record) -> list[tuple[str, float]]:
        found = index.semantic(f"{record.title}\n{record.body}", _NEIGHBOURS + 1, Filter())
        return [(rid, score) for rid, score in found or () if rid != record.id]

    return neighbours


def _apply(store: Store, action: Action, records: dict[str, Record]) -> tuple[str, str]:
    old = records[action.record]
    if action.kind == "link":
        new = old.with_(links=(*old.links, action.other))
        subject = f"sleep: link {old.id} to {action.other}"
    else:
        new = old.with_(weight=action.weight)
        subject = f"sleep: weight of {old.id} {old.weight:g} -> {action.weight:g}"
    result = write_bundle(
        store,
        [(old, new.with_(updated=max(new.updated, old.updated)))],
        {},
        operation="sleep",
        subject=subject,
        detail=action.why,
        trailers={"Gitmem-Record": old.id, "Gitmem-Sleep": action.kind},
        agent=AGENT,
    )
    records[old.id] = result.record
    return subject.removeprefix("sleep: ") + f" ({action.why})", result.commit or ""


def sleep(
    store: Store,
    now: datetime,
    *,
    index: Index | None = None,
    dry_run: bool = False,
    since: datetime | None = None,
    settings: SleepSettings | None = None,
) -> SleepReport:
    """One pass over the store at HEAD; see the module's docstring."""
    chosen = settings or load_settings(store.root)
    records = {r.id: r for r in store.records()}
    decided = {p.id for p in load_proposals(store)}
    neighbours = None if index is None else index_neighbours(index)
    findings = scan(
        list(records.values()),
        chosen,
        read_stats(store.cache_dir),
        now,
        decided=decided,
        neighbours=neighbours,
        since=since,
    )
    done: list[str] = []
    commits: list[str] = []
    for action in findings.actions:
        if dry_run:
            target = (
                f"link {action.record} to {action.other}"
                if action.kind == "link"
                else (f"weight of {action.record} -> {action.weight:g}")
            )
            done.append(f"{target} ({action.why})")
            continue
        line, commit = _apply(store, action, records)
        done.append(line)
        commits.append(commit)
    found = len(findings.actions) + len(findings.proposals) + findings.known + findings.held
    report = SleepReport(
        findings.scanned,
        found,
        tuple(done),
        findings.proposals,
        findings.known,
        findings.held,
        dry_run,
        (),
        neighbours is not None,
        findings.stopped,
    )
    if findings.proposals and not dry_run:
        count = len(findings.proposals)
        result = write_bundle(
            store,
            [],
            {p.path: dump_proposal(p) for p in findings.proposals},
            operation="sleep",
            subject=f"sleep: {count} proposal{'s' if count != 1 else ''} to review",
            detail=report.text().rstrip(),
            trailers={"Gitmem-Count": str(count)},
            agent=AGENT,
        )
        commits.append(result.commit or "")
    final = SleepReport(**{**report.__dict__, "commits": tuple(commits)})
    if not dry_run:
        _leave(store, final)
    return final


def _leave(store: Store, report: SleepReport) -> None:
    """The last run's report, in the cache for a person to read (the commits carry it too)."""
    try:
        store.cache_dir.mkdir(exist_ok=True)
        replace_file(store.cache_dir / REPORT_NAME, report.text())
    except OSError:
        pass
