"""Deterministic three-way merge of two histories' trees, decided record by record.

Records are matched by id, not by path, so an edit that moved a record (its type changed)
still meets the other side's edit of the same record. For each id, and for each other file
by path, the usual three-way rule applies: a side that did not change it takes the other
side's version. When both sides changed it differently:

- a record edited on both sides: the version with the later `updated` (ties: the larger blob
  id) stays current; every other version is kept as a superseded record whose id is derived
  from its blob (`<id>-<blob[:8]>`, the same on every device), `superseded_by` the winner,
  and the winner lists it in `supersedes`;
- a record edited on one side and forgotten (deleted) on the other: the edited version stays
  (nothing is lost; forget it again if that was meant);
- a file whose versions have an order of their own (a path rule in `_RULES`: a proposal, where
  a decision beats a pending copy, gitmem.consolidate.proposals.merge_choice): the version
  that rule chooses wins;
- any other file (config.toml, a schema), or a ruled file that does not parse: the version
  with the larger blob id wins and the other stays in the history of its own parent commit;
  both are named in the report.

The decision depends only on the base and the set of versions, never on which side is
"ours", so whichever device merges first, every device ends with the same tree. No file ever
gets conflict markers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from gitmem.consolidate.proposals import PROPOSALS_DIR, merge_choice
from gitmem.errors import RecordInvalid
from gitmem.store.git import GitRepo
from gitmem.store.gitread import Change
from gitmem.store.record import Record, record_path
from gitmem.store.recordfile import dump, parse

__all__ = ["Conflict", "MergePlan", "plan_merge"]

_RECORDS = "records/"

Entries = frozenset[tuple[str, str]]  # (path, blob id) of one record id or one file

# A rule for the files under one folder: given the path and its versions (blob id, content),
# the blob to keep and why, or None to leave it to the larger-blob rule. Each must depend only
# on the set of versions, so every device keeps the same one.
Rule = Callable[[str, Sequence[tuple[str, bytes]]], tuple[str, str] | None]
_RULES: dict[str, Rule] = {PROPOSALS_DIR + "/": merge_choice}


@dataclass(frozen=True)
class Conflict:
    """One thing both sides changed, and what the merge kept."""

    key: str  # the record id, or the file's path
    kind: str  # "record", "edit-vs-forget", "file", "link"
    note: str  # one line for the user


@dataclass(frozen=True)
class MergePlan:
    """What to write on top of our tree to make the merged tree."""

    changes: dict[str, bytes | None]
    incoming: int  # records (and files) taken from the other side as they were
    conflicts: tuple[Conflict, ...]


def plan_merge(repo: GitRepo, base: str, ours: str, theirs: str) -> MergePlan:
    mine, other = repo.diff(base, ours), repo.diff(base, theirs)
    # A symbolic link (or submodule) the other side added is left out: gitmem keeps regular
    # files only, and a link would be written into the work tree as its target's name (git
    # status dirty) or followed out of the store. The merged tree lacks it, so the push
    # removes it from the remote too; the report names it.
    links = [c for c in other if c.link]
    other = [c for c in other if not c.link]
    base_state: dict[str, dict[str, str]] = {}
    for change in (*mine, *other):
        entries = base_state.setdefault(_key(change.path), {})
        if change.old is not None:
            entries[change.path] = change.old
    our_state, their_state = _apply(base_state, mine), _apply(base_state, other)
    changes: dict[str, bytes | None] = {}
    conflicts: list[Conflict] = []
    incoming = 0
    for key in sorted(base_state):
        b = frozenset(base_state[key].items())
        o = frozenset(our_state[key].items())
        t = frozenset(their_state[key].items())
        if o == t or t == b:
            continue
        if o == b:
            target = {path: repo.blob(blob) for path, blob in t}
            incoming += 1
        else:
            target, conflict = _resolve(repo, key, o, t)
            conflicts.append(conflict)
        changes.update(_delta(repo, o, target))
    conflicts.extend(
        Conflict(
            c.path,
            "link",
            f"{c.path} is a symbolic link (or a submodule) on the remote: left out, and this "
            "merge removes it there — gitmem keeps regular files only; commit the file itself",
        )
        for c in links
    )
    return MergePlan(changes, incoming, tuple(conflicts))


def _key(path: str) -> str:
    if path.startswith(_RECORDS) and path.endswith(".md"):
        return "id:" + path.rsplit("/", 1)[-1].removesuffix(".md")
    return "file:" + path


def _apply(
    base: Mapping[str, dict[str, str]], changes: Iterable[Change]
) -> dict[str, dict[str, str]]:
    state = {key: dict(entries) for key, entries in base.items()}
    for change in changes:
        entries = state[_key(change.path)]
        if change.new is None:
            entries.pop(change.path, None)
        else:
            entries[change.path] = change.new
    return state


def _delta(repo: GitRepo, ours: Entries, target: Mapping[str, bytes]) -> dict[str, bytes | None]:
    """The writes that turn our entries for one key into the target ones."""
    out: dict[str, bytes | None] = {path: None for path, _ in ours if path not in target}
    have = dict(ours)
    for path, data in target.items():
        if path not in have or repo.blob(have[path]) != data:
            out[path] = data
    return out


def _resolve(
    repo: GitRepo, key: str, ours: Entries, theirs: Entries
) -> tuple[dict[str, bytes], Conflict]:
    kind, name = key.split(":", 1)
    if not ours or not theirs:
        kept = ours or theirs
        what = "record" if kind == "id" else "file"
        return {path: repo.blob(blob) for path, blob in kept}, Conflict(
            name,
            "edit-vs-forget",
            f"{what} {name} was edited on one side and removed on the other: "
            "the edited version is kept (remove it again if that was meant)",
        )
    versions = sorted({blob: path for path, blob in (*ours, *theirs)}.items())
    if kind == "id":
        records = _parse_all(repo, versions)
        if records is not None:
            return _resolve_record(name, records)
    winner_blob, winner_path = max(versions)
    why = ""
    rule = next((r for folder, r in _RULES.items() if name.startswith(folder)), None)
    chosen = None if rule is None else rule(name, [(b, repo.blob(b)) for b, _ in versions])
    if chosen is not None:
        winner_blob, why = chosen[0], f" ({chosen[1]})"
        winner_path = dict(versions)[winner_blob]
    lost = ", ".join(blob[:10] for blob, _ in versions if blob != winner_blob)
    return {winner_path: repo.blob(winner_blob)}, Conflict(
        name,
        "file",
        f"{name} was changed on both sides: kept version {winner_blob[:10]}{why}; the other "
        f"({lost}) stays in history (git show {lost.split(',')[0]})",
    )


def _parse_all(repo: GitRepo, versions: list[tuple[str, str]]) -> list[tuple[str, Record]] | None:
    out = []
    for blob, _path in versions:
        try:
            out.append((blob, parse(repo.blob(blob).decode("utf-8"))))
        except (RecordInvalid, UnicodeDecodeError):
            return None  # a file a person broke: merged as a plain file, nothing parsed
    return out


def _resolve_record(
    record_id: str, versions: list[tuple[str, Record]]
) -> tuple[dict[str, bytes], Conflict]:
    winner_blob, winner = max(versions, key=lambda v: (v[1].updated, v[0]))
    kept: list[str] = []
    target: dict[str, bytes] = {}
    for blob, record in versions:
        if blob == winner_blob:
            continue
        variant_id = f"{record.id}-{blob[:8]}"
        variant = record.with_(id=variant_id, status="superseded", superseded_by=winner.id)
        target[record_path(variant.type, variant.created, variant_id)] = dump(variant).encode()
        kept.append(variant_id)
    supersedes = tuple(dict.fromkeys((*winner.supersedes, *kept)))
    current = winner.with_(supersedes=supersedes)
    target[current.path] = dump(current).encode()
    return target, Conflict(
        record_id,
        "record",
        f"record {record_id} was changed on both sides: the later version stays current, "
        f"the other is kept as {', '.join(kept)} (superseded)",
    )
