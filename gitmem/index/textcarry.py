"""Which documents a keyword index write carries, so that deleted ones leave the statistics.

tantivy counts a deleted document in BM25's statistics (the document count, each term's
document frequency, the average field length) until the segment holding it is merged away,
and tantivy-py cannot ask for a merge. So a write of gitmem.index.textindex *carries* a
segment that holds leftovers: it deletes the segment's survivors and adds them again, in the
same commit, which empties the segment, and tantivy drops an empty segment. The objects here
are tantivy's searchers and addresses, passed in: this module does not import tantivy
(gitmem.index.textindex is its one owner).

Cost follows the segments carried, not the index: a segment's size and leftovers are in
meta.json (tantivy's own bookkeeping, listed in the order of the searcher's segments), its
documents are addressed one by one (segment, 0 .. max_doc - 1), and which of them are live is
asked of the id postings (`match`), never by listing the whole index. Readers take no lock,
so meta.json may be another commit's than the searcher's: `fits` checks it against the
searcher itself (as many segments, each one's last document where meta.json says) before any
address is read; `live` answers None if it does not fit, or if a carried segment's live
count is not meta.json's, and the caller lists the index as before.

Bounded: a write reads at most `budget` documents of the segments it carries (every document
of a segment is read to find its survivors, so this bounds what it carries too). Segments go by
leftovers per document read, most first, counting those the write itself deletes: a small
segment that an edit hits is carried at once; a big one (a full build writes the index in a
few big segments, which tantivy's merge policy rarely merges) keeps its leftovers, and scores
drift from a rebuild's. So the drift is bounded by a share (`past`): a write that would leave
more leftovers than `whole` of the documents tantivy counts rewrites the whole index instead
(docs/benchmarks.md, "Session 15: the keyword index's purge and carry", measures both). The
figures gitmem computes beside tantivy's (an identifier's score, a query's ceiling) take their
statistics from `Counted`, documents counted as tantivy counts them (leftovers included, from
the searcher itself), so that they drift with its scores rather than apart from them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gitmem.index import textdoc, texthits
from gitmem.index.textdoc import TextDoc, TextIndexCorrupt

__all__ = [
    "Counted",
    "Segment",
    "choose",
    "counted",
    "fits",
    "ghosts",
    "live",
    "past",
    "segments",
    "share",
    "written",
]

# Ids -> the addresses of the live documents with those ids, in one index.
Match = Callable[[Iterable[str]], list[Any]]
# (segment ord, document) -> an address for `searcher.doc` (tantivy.DocAddress).
Address = Callable[[int, int], Any]


@dataclass(frozen=True)
class Segment:
    """One segment as meta.json describes it; `ord` is its place among the searcher's."""

    ord: int
    max_doc: int  # documents written to it, deleted ones included
    deleted: int

    @property
    def alive(self) -> int:
        return self.max_doc - self.deleted


def segments(directory: Path) -> list[Segment]:
    """The segments of the tantivy index in `directory`, in the searcher's order."""
    try:
        meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
        return [
            Segment(n, int(s["max_doc"]), int((s.get("deletes") or {}).get("num_deleted_docs", 0)))
            for n, s in enumerate(meta["segments"])
        ]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise TextIndexCorrupt(f"no readable text index in {directory} ({err})") from err


def ghosts(directory: Path) -> int:
    """Deleted documents that tantivy still counts."""
    return sum(s.deleted for s in segments(directory))


@dataclass(frozen=True)
class Counted:
    """A searcher's term statistics as tantivy's BM25 counts them (gitmem.index.textquery's
    `Counts`): `num_docs` includes the leftovers, as each term's `doc_freq` does, so that
    the scores gitmem computes itself (an identifier's, a query's ceiling) move with tantivy's
    while leftovers wait. The searcher's own `num_docs` counts live documents only: against
    document frequencies that count leftovers, a word in nearly every document got a
    negative idf."""

    searcher: Any
    num_docs: int

    def doc_freq(self, field_name: str, field_value: Any, /) -> int:
        return int(self.searcher.doc_freq(field_name, field_value))


def counted(searcher: Any, directory: Path, address: Address) -> Counted:
    """`searcher`'s statistics, its documents counted as tantivy's BM25 counts them: the
    sum of its segments' `max_doc`. meta.json gives them when it is the searcher's (`fits`);
    when another process committed between the searcher's reload and this read, they are
    found by probing the searcher's own segments, never taken from its live count."""
    found = segments(directory)
    if fits(searcher, address, found):
        return Counted(searcher, sum(s.max_doc for s in found))
    return Counted(searcher, sum(_probed(searcher, address, o) for o in range(_ords(searcher))))


def fits(searcher: Any, address: Address, found: Sequence[Segment]) -> bool:
    """Whether `found` (meta.json's segments) are `searcher`'s: as many, and each segment's
    last document is where meta.json says (document max_doc - 1 exists, max_doc does not).
    Deleted counts are not checked here (`live` checks those it relies on)."""
    if _ords(searcher) != len(found):
        return False
    return all(
        _has(searcher, address, s.ord, s.max_doc - 1)
        and not _has(searcher, address, s.ord, s.max_doc)
        for s in found
    )


def share(directory: Path) -> float:
    """The share of the documents tantivy counts that are leftovers (0.0 if none)."""
    found = segments(directory)
    total = sum(s.max_doc for s in found)
    return sum(s.deleted for s in found) / total if total else 0.0


def _ords(searcher: Any) -> int:
    return int(searcher.num_segments)


def _has(searcher: Any, address: Address, ord_: int, doc: int) -> bool:
    """Whether segment `ord_` (one of the searcher's) holds document `doc`, deleted or not:
    tantivy's document store answers for deleted documents too, and a ValueError past the
    last one."""
    if doc < 0:
        return False
    try:
        searcher.doc(address(ord_, doc))
    except ValueError:
        return False
    return True


def _probed(searcher: Any, address: Address, ord_: int) -> int:
    """Segment `ord_`'s max_doc, found by probing: doubling, then halving (~2 log2 probes)."""
    high = 1
    while _has(searcher, address, ord_, high - 1):
        high *= 2
    low = high // 2  # documents 0 .. low - 1 exist (low 0: none known), high - 1 does not
    while high - low > 1:
        mid = (low + high) // 2
        if _has(searcher, address, ord_, mid - 1):
            low = mid
        else:
            high = mid
    return low


def choose(found: Iterable[Segment], losing: Mapping[int, int], budget: int) -> list[int]:
    """The segments to carry (their `ord`s, ascending): those with leftovers once the write
    deletes `losing` (segment ord -> its documents the write deletes), by leftovers per
    document read, most first, while the documents read stay within `budget`. A segment that
    the write empties is left out: tantivy drops it without help."""
    ranked = []
    for seg in found:
        left = seg.deleted + losing.get(seg.ord, 0)
        if left and left < seg.max_doc:
            ranked.append((-left / seg.max_doc, seg.ord, seg.max_doc))
    chosen = []
    for _, ord_, cost in sorted(ranked):
        if cost <= budget:
            chosen.append(ord_)
            budget -= cost
    return sorted(chosen)


def past(
    found: Iterable[Segment], losing: Mapping[int, int], chosen: Iterable[int], whole: float
) -> bool:
    """Whether the leftovers a write would leave, carrying `chosen`, pass `whole` of the
    documents tantivy would count: then the write rewrites the whole index instead. This
    bounds the drift from a rebuild: a segment over the budget is never carried, and tantivy
    rarely merges a full build's big segments."""
    carried = set(chosen)
    left = total = 0
    for seg in found:
        total += seg.max_doc
        gone = seg.deleted + losing.get(seg.ord, 0)
        if seg.ord not in carried and gone < seg.max_doc:  # an emptied segment is dropped
            left += gone
    return total > 0 and left > whole * total


def live(
    searcher: Any,
    address: Address,
    found: Sequence[Segment],
    chosen: Iterable[int],
    match: Match,
) -> list[Any] | None:
    """Addresses of the live documents of the `chosen` segments, in order: every document of
    those segments is read (`address(ord, doc)` makes an address), and it is live if the id
    postings (`match(ids)`, live addresses of those ids) name it. None if `found` is not the
    searcher's (`fits`, checked before any address is read: a segment that is not there
    would be a Rust panic, one past its end a ValueError), or if the live count found in a
    segment is not the one meta.json gives."""
    if not fits(searcher, address, found):
        return None
    picked = set(chosen)
    wanted = {seg.ord: seg for seg in found if seg.ord in picked}
    every = [address(o, d) for o, seg in sorted(wanted.items()) for d in range(seg.max_doc)]
    ids = {str(searcher.doc(a).get_first("id")) for a in every}
    alive = {(a.segment_ord, a.doc) for a in match(ids) if a.segment_ord in wanted}
    kept = [a for a in every if (a.segment_ord, a.doc) in alive]
    counts = {o: 0 for o in wanted}
    for a in kept:
        counts[a.segment_ord] += 1
    if any(counts[o] != seg.alive for o, seg in wanted.items()):
        return None
    return kept


def written(
    searcher: Any, chosen: list[Any], doomed: set[str], source: tuple[Any, Match], where: Path
) -> list[TextDoc]:
    """The documents at `chosen` but those of `doomed`, as the source index stores them (its
    searcher and `Match`), each with its key (the source stores none, the searched index has
    it): what a write carries, or what a catch-up writes again with another context."""
    named = [texthits.id_blob(searcher.doc(address)) for address in chosen]
    blobs = {i: b for i, b in named if i not in doomed}
    marks = texthits.keys(searcher, chosen)
    keys = {n: -1 if m is None else m[0] for n, m in zip(named, marks, strict=True)}
    stored, match = source
    try:
        found = [textdoc.from_source(stored.doc(a).get_first("doc") or "") for a in match(blobs)]
    except (ValueError, TypeError) as err:
        raise TextIndexCorrupt(f"text index in {where} is damaged: {err}", "") from err
    docs = [
        replace(doc, key=keys.get((doc.id, doc.blob), -1))
        for doc in found
        if blobs.get(doc.id) == doc.blob
    ]
    if len(docs) != len(blobs):
        raise TextIndexCorrupt(f"text index in {where} lost records' text")
    return docs
