"""How alike two records are: word-set Jaccard over title and body, found without comparing
every pair (an inverted index of words, the commonest left out), and the embedding cosine
when a caller passes a neighbour search.

`near_duplicates(records)` is the one entry point: capture (issue 20) can use it to check a
new record against the store, and `gitmem sleep` uses it for the whole store.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from gitmem.store.record import Record

__all__ = ["Pair", "jaccard", "near_duplicates", "similar_sets", "words"]

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an and are as at be been but by for from has have in is it its of on or that the this "
    "to was we were will with not no do does our us you they them so if then than".split()
)
# A word in more records than this share is no evidence of duplication, and its postings
# would make the pass quadratic.
_COMMON_SHARE, _COMMON_MIN = 0.05, 50

Neighbours = Callable[[Record], Sequence[tuple[str, float]]]


@dataclass(frozen=True)
class Pair:
    """Two records (ids in order) and how alike they are; `cosine` None without a model."""

    a: str
    b: str
    jaccard: float
    cosine: float | None = None


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def words(text: str) -> frozenset[str]:
    """The content words of `text`, lower-cased and crudely stemmed."""
    return frozenset(_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)


def similar_sets(
    sets: Mapping[str, frozenset[str]], threshold: float
) -> Iterator[tuple[str, str, float]]:
    """(a, b, Jaccard) for every pair of sets at least `threshold` alike, a < b; only pairs
    sharing an uncommon word are scored, so the cost follows the overlaps, not n squared."""
    postings: dict[str, list[str]] = {}
    for rid, mine in sets.items():
        for word in mine:
            postings.setdefault(word, []).append(rid)
    common = max(_COMMON_MIN, int(len(sets) * _COMMON_SHARE))
    for rid, mine in sets.items():
        shared: set[str] = set()
        for word in mine:
            ids = postings[word]
            if len(ids) <= common:
                shared.update(other for other in ids if other < rid)
        for other in sorted(shared):
            theirs = sets[other]
            small, large = sorted((len(mine), len(theirs)))
            if small < threshold * large:  # Jaccard is at most small / large
                continue
            score = jaccard(mine, theirs)
            if score >= threshold:
                yield other, rid, score


def _text(record: Record) -> str:
    return f"{record.title}\n{record.body}"


def near_duplicates(
    records: Iterable[Record],
    *,
    threshold: float = 0.6,
    cosine: float = 0.92,
    neighbours: Neighbours | None = None,
) -> list[Pair]:
    """Pairs of records at least `threshold` alike in words or, through `neighbours` (a
    record's nearest records by embedding, with their cosine), at least `cosine` alike in
    meaning. Sorted by id pair; each pair once."""
    items = list(records)
    sets = {r.id: words(_text(r)) for r in items}
    found = {(a, b): Pair(a, b, score) for a, b, score in similar_sets(sets, threshold)}
    if neighbours is not None:
        known = set(sets)
        for record in items:
            for other, score in neighbours(record):
                if other == record.id or other not in known or score < cosine:
                    continue
                key = (min(other, record.id), max(other, record.id))
                previous = found.get(key)
                lexical = jaccard(sets[key[0]], sets[key[1]])
                if previous is None or previous.cosine is None or previous.cosine < score:
                    found[key] = Pair(key[0], key[1], lexical, round(score, 4))
    return [found[key] for key in sorted(found)]
