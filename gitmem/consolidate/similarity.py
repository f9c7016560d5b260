"""How alike two records are: word-set Jaccard over title and body, found exactly without
comparing every pair (the prefix and positional filters of similarity joins), and the
embedding cosine when a caller passes a neighbour search.

`near_duplicates(records)` is the entry point, used by `gitmem sleep` for the whole store
(measured by benchmarks/bench_sleep.py). Capture keeps its own rule for a new record against
the store (gitmem/capture/dedup.py, measured by benchmarks/bench_capture.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from gitmem.store.record import Record

__all__ = ["Budget", "Pair", "jaccard", "near_duplicates", "similar_sets", "words"]

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an and are as at be been but by for from has have in is it its of on or that the this "
    "to was we were will with not no do does our us you they them so if then than".split()
)

Neighbours = Callable[[Record], Sequence[tuple[str, float]]]


@dataclass
class Budget:
    """What one similarity join may spend: candidate pairs it scores and alike pairs it keeps.
    A store of templated records can make most pairs alike (10k records, 50M pairs): a join
    that reaches either limit stops, keeps what it found and sets `stopped`, so a pass costs
    bounded time and memory whatever the store holds."""

    comparisons: int
    pairs: int
    stopped: bool = False

    def compared(self) -> bool:
        """Count one scored candidate; False once the budget is spent."""
        self.comparisons -= 1
        self.stopped = self.stopped or self.comparisons < 0
        return not self.stopped

    def kept(self) -> bool:
        """Room for one more alike pair (counted); False, and stopped, when there is none: a
        join that finds exactly `pairs` pairs has not stopped."""
        self.pairs -= 1
        self.stopped = self.stopped or self.pairs < 0
        return not self.stopped


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
    sets: Mapping[str, frozenset[str]], threshold: float, budget: Budget | None = None
) -> Iterator[tuple[str, str, float]]:
    """(a, b, Jaccard) for every pair of sets at least `threshold` alike, a < b, exactly, and
    without scoring every pair: the prefix filter of all-pairs similarity joins. With each set's
    words ordered rarest first, two sets that alike share a word among the first
    `n - ceil(threshold * n) + 1` of each, so only those prefixes are indexed and probed.
    With a `budget`, the join stops where it runs out (Budget)."""
    spend = budget or Budget(comparisons=1 << 62, pairs=1 << 62)
    if threshold <= 0:
        ids = sorted(sets)
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                if not spend.compared() or not spend.kept():
                    return
                yield a, b, jaccard(sets[a], sets[b])
        return
    frequency: dict[str, int] = {}
    for words_ in sets.values():
        for word in words_:
            frequency[word] = frequency.get(word, 0) + 1
    postings: dict[str, list[tuple[str, int]]] = {}  # word -> (set, the word's position in it)
    found: list[tuple[str, str, float]] = []
    # Smaller sets first: a set only meets the ones indexed before it, and the length filter
    # then needs one direction only.
    for rid in sorted(sets, key=lambda r: (len(sets[r]), r)):
        mine = sets[rid]
        size = len(mine)
        ordered = sorted(mine, key=lambda w: (frequency[w], w))
        prefix = ordered[: size - math.ceil(threshold * size - 1e-9) + 1]
        # A set indexed here meets only sets at least its size, which need an overlap of at
        # least 2t/(1+t) of it: a shorter prefix is indexed than is probed.
        indexed = size - math.ceil(2 * threshold / (1 + threshold) * size - 1e-9) + 1
        seen: set[str] = set()
        for i, word in enumerate(prefix):
            for other, j in postings.get(word, ()):
                if other in seen:
                    continue
                seen.add(other)  # the first shared word gives the tightest bound: decided here
                theirs = len(sets[other])
                if theirs < threshold * size:  # Jaccard is at most small / large
                    continue
                # Positional filter: words after the first shared one can add at most this.
                reach = 1 + min(size - i - 1, theirs - j - 1)
                if reach < threshold / (1 + threshold) * (size + theirs) - 1e-9:
                    continue
                if not spend.compared():
                    break
                score = jaccard(mine, sets[other])
                if score >= threshold:
                    if not spend.kept():
                        break
                    found.append((min(rid, other), max(rid, other), score))
            if spend.stopped:
                break
            if i < indexed:
                postings.setdefault(word, []).append((rid, i))
        if spend.stopped:
            break
    yield from sorted(found)


def _text(record: Record) -> str:
    return f"{record.title}\n{record.body}"


def near_duplicates(
    records: Iterable[Record],
    *,
    threshold: float = 0.6,
    cosine: float = 0.92,
    neighbours: Neighbours | None = None,
    budget: Budget | None = None,
) -> list[Pair]:
    """Pairs of records at least `threshold` alike in words or, through `neighbours` (a
    record's nearest records by embedding, with their cosine), at least `cosine` alike in
    meaning. Sorted by id pair; each pair once. `budget` bounds the word join (Budget)."""
    items = list(records)
    sets = {r.id: words(_text(r)) for r in items}
    found = {(a, b): Pair(a, b, score) for a, b, score in similar_sets(sets, threshold, budget)}
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
