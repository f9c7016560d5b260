"""Proposals: what `gitmem sleep` suggests and a person decides, kept as files in the store.

One JSON file per proposal, `proposals/<id>.json`, tracked like the records so it syncs: a
rejection made on one device is known on all of them, and the same proposal is never made
again. The id is a hash of the kind and the records it names, so two devices that find the
same thing write the same file. The files sit outside `records/`, so the index and recall
never see them (docs/consolidation.md).

Two devices that both ran sleep before syncing wrote the same file with different `created`
stamps, so sync meets two versions of it; `merge_choice` says which stays, so that a decision
made on either device is never lost to a pending copy (gitmem.sync.merge).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from gitmem.errors import NotFound, RecordInvalid, UsageError
from gitmem.store.reader import Reader

__all__ = [
    "KINDS",
    "PROPOSALS_DIR",
    "STATUSES",
    "Proposal",
    "dump_proposal",
    "find_proposal",
    "load_proposals",
    "merge_choice",
    "parse_proposal",
    "proposal_id",
]

PROPOSALS_DIR = "proposals"
KINDS = ("merge", "supersede", "demote", "archive", "link")
STATUSES = ("pending", "accepted", "rejected")


@dataclass(frozen=True)
class Proposal:
    """One suggested change with its evidence. `records` is what it names, `keep` the one a
    merge or supersede keeps current, `weight` a demotion's new weight."""

    id: str
    kind: str
    records: tuple[str, ...]
    why: str
    created: str
    keep: str = ""
    weight: float | None = None
    evidence: Mapping[str, float] = field(default_factory=dict)
    titles: tuple[str, ...] = ()
    status: str = "pending"
    decided: str = ""
    note: str = ""
    by: str = ""

    @property
    def path(self) -> str:
        return f"{PROPOSALS_DIR}/{self.id}.json"

    def decided_as(self, status: str, moment: str, note: str, by: str) -> Proposal:
        return replace(self, status=status, decided=moment, note=note, by=by)

    @property
    def strength(self) -> tuple[float, float]:
        """How strong its evidence is, to put the best first: the highest similarity of a
        merge, supersede or link, the age in days of an archive or a demotion; between equals,
        the one more of whose evidence agrees (the sum): a static model gives two notes that
        differ by a number a cosine of 1.0, as it does an exact duplicate, whose words agree
        too."""
        values = self.evidence.values()
        return (max(values, default=0.0), sum(values))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["records"] = list(self.records)
        data["titles"] = list(self.titles)
        data["evidence"] = dict(self.evidence)
        return data


def proposal_id(kind: str, records: tuple[str, ...]) -> str:
    digest = hashlib.sha1(f"{kind}\0{chr(0).join(sorted(records))}".encode()).hexdigest()
    return f"p-{digest[:10]}"


def dump_proposal(proposal: Proposal) -> bytes:
    return (json.dumps(proposal.to_dict(), indent=2, sort_keys=True) + "\n").encode("utf-8")


def parse_proposal(data: bytes, path: str) -> Proposal:
    """A proposal file, checked: what sync brought in from another device is validated too."""
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordInvalid(f"{path}: not a JSON proposal ({exc})") from exc
    problems: list[str] = []
    if not isinstance(raw, dict):
        raise RecordInvalid(f"{path}: a proposal is a JSON object")
    if raw.get("kind") not in KINDS:
        problems.append(f"kind must be one of {', '.join(KINDS)}")
    if raw.get("status") not in STATUSES:
        problems.append(f"status must be one of {', '.join(STATUSES)}")
    records = raw.get("records")
    if not isinstance(records, list) or not records or not all(isinstance(r, str) for r in records):
        problems.append("records must be a list of record ids")
        records = []
    if problems:
        raise RecordInvalid(f"{path}: " + "; ".join(problems), tuple(problems))
    weight = raw.get("weight")
    expected = proposal_id(str(raw["kind"]), tuple(records))
    if raw.get("id") != expected or path != f"{PROPOSALS_DIR}/{expected}.json":
        raise RecordInvalid(f"{path}: the id does not match its kind and records ({expected})")
    evidence, titles = raw.get("evidence") or {}, raw.get("titles") or []
    if not isinstance(evidence, dict) or not all(
        isinstance(v, int | float) for v in evidence.values()
    ):
        raise RecordInvalid(f"{path}: evidence must map names to numbers")
    if not isinstance(titles, list):
        raise RecordInvalid(f"{path}: titles must be a list")
    return Proposal(
        id=expected,
        kind=str(raw["kind"]),
        records=tuple(records),
        why=str(raw.get("why", "")),
        created=str(raw.get("created", "")),
        keep=str(raw.get("keep", "")),
        weight=float(weight) if isinstance(weight, int | float) else None,
        evidence={str(k): float(v) for k, v in evidence.items()},
        titles=tuple(str(t) for t in titles),
        status=str(raw["status"]),
        decided=str(raw.get("decided", "")),
        note=str(raw.get("note", "")),
        by=str(raw.get("by", "")),
    )


def load_proposals(store: Reader) -> Iterator[Proposal]:
    """Every proposal at HEAD, in id order; a file that does not parse is skipped."""
    head = store.repo.head()
    for path, blob in store.repo.files(head, PROPOSALS_DIR):
        if path.endswith(".json"):
            try:
                yield parse_proposal(store.repo.blob(blob), path)
            except RecordInvalid:
                continue


def find_proposal(store: Reader, prefix: str) -> Proposal:
    if not prefix.strip():
        raise UsageError('give a proposal id; list them with "gitmem proposals"')
    matches = [p for p in load_proposals(store) if p.id.startswith(prefix.strip())]
    if not matches:
        raise NotFound(f'no proposal "{prefix}" — list them with "gitmem proposals"')
    if len(matches) > 1:
        shown = ", ".join(p.id for p in matches[:10])
        raise UsageError(f'"{prefix}" is ambiguous; it matches {shown} — give more of the id')
    return matches[0]


def merge_choice(path: str, versions: Sequence[tuple[str, bytes]]) -> tuple[str, str] | None:
    """Of several versions (blob id, content) of one proposal file, the one a sync merge keeps
    and why; None when one does not parse (then the plain file rule decides).

    A decision beats a pending copy: a rejection or an acceptance is a person's word, and
    pending is what any device that ran sleep writes. An acceptance beats a rejection: its
    record changes are in the merged tree whichever status wins, so "accepted" is the one
    that tells the truth about HEAD (`git revert` of its commit undoes it). Two decisions
    alike: the later `decided`; two pending copies: the earlier `created`. Last, the larger
    blob id, so every device keeps the same version whichever merges first."""
    try:
        parsed = [(blob, parse_proposal(data, path)) for blob, data in versions]
    except RecordInvalid:
        return None
    decided = [(blob, p) for blob, p in parsed if p.status != "pending"]
    if not decided:
        first = min(p.created for _, p in parsed)
        blob = max(b for b, p in parsed if p.created == first)
        return blob, f"both pending: the one proposed first ({first or 'undated'}) stays"
    blob, kept = max(decided, key=lambda v: (v[1].status == "accepted", v[1].decided, v[0]))
    statuses = {p.status for _, p in parsed}
    if "pending" in statuses:
        why = f"{kept.status} ({kept.decided or 'undated'}) beats pending"
    elif len(statuses) > 1:
        why = "accepted beats rejected: the acceptance's changes are in the tree"
    else:
        why = f"both {kept.status}: the later decision ({kept.decided or 'undated'}) stays"
    return blob, why
