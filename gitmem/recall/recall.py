"""Hybrid recall: keyword and semantic candidates, fused, then a bounded recency decay and a
bounded weight factor. Filters are applied before ranking (see Index.keyword/semantic).

Fusion methods:
- "rrf": reciprocal-rank fusion, sum of w / (k + rank) with k = 60;
- "linear": min-max normalised scores of each half, weighted sum.
The defaults are the ones the evaluation in benchmarks/retrieval chose (docs/benchmarks.md).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import math
import os
import queue
import re
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from gitmem.index.entries import Entry, Filter
from gitmem.index.model import ModelRef

__all__ = ["DEFAULTS", "Hit", "Options", "Result", "Source", "has_identifier", "recall"]

Mode = Literal["hybrid", "keyword", "semantic"]
Fusion = Literal["rrf", "linear"]
Scaling = Literal["minmax", "max", "ceiling"]
RRF_K = 60


class _Job:
    """A call handed to the keyword thread, and what it returned or raised."""

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self._fn, self._args = fn, args
        self._done = threading.Event()
        self._value: Any = None
        self._error: BaseException | None = None

    def run(self) -> None:
        try:
            self._value = self._fn(*self._args)
        except BaseException as exc:  # raised again in the thread that asks for the result
            self._error = exc
        finally:
            self._done.set()

    def wait(self) -> None:
        self._done.wait()

    def result(self) -> Any:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value


class _Worker:
    """One thread running the keyword halves handed to it, one after another: what
    concurrent.futures' ThreadPoolExecutor(max_workers=1) was here, without that package's
    import (it brings logging: ~12 ms of each `gitmem recall` process, measured). Started at
    the first hybrid recall; a daemon, so it never holds up an exit; a fork's child starts
    its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[_Job] | None = None

    def submit(self, fn: Callable[..., Any], *args: Any) -> _Job:
        job = _Job(fn, args)
        with self._lock:
            if self._jobs is None:
                self._jobs = queue.SimpleQueue()
                threading.Thread(
                    target=_work, args=(self._jobs,), name="gitmem-keyword", daemon=True
                ).start()
            self._jobs.put(job)
        return job

    def forked(self) -> None:
        """In a fork's child: the parent's thread is not there, and its lock may be held."""
        self._lock, self._jobs = threading.Lock(), None


def _work(jobs: queue.SimpleQueue[_Job]) -> None:
    while True:
        jobs.get().run()


_POOL = _Worker()
os.register_at_fork(after_in_child=_POOL.forked)


@dataclass(frozen=True)
class Options:
    mode: Mode = "hybrid"
    limit: int = 10
    filter: Filter = field(default_factory=Filter)
    # Chosen by benchmarks/tune_recall.py on benchmarks/retrieval (docs/benchmarks.md).
    fusion: Fusion = "linear"
    # How linear fusion scales each half to [0, 1]: "minmax" maps the weakest candidate to 0;
    # "max" divides by the best (scores below 0 count as 0); "ceiling" divides keyword scores
    # by what a record matching every query term would score (so a weak keyword match stays
    # weak) and semantic ones by the best.
    scaling: Scaling = "ceiling"
    semantic_weight: float = 0.3  # share of the semantic half for queries in plain words
    identifier_weight: float = 0.1  # ... and for queries naming an identifier (PAY-1423, a path)
    half_life_days: float = 14.0  # 0 turns decay off
    decay_floor: float = 0.8  # the oldest record keeps this share of its score
    weight_strength: float = 0.1  # score × clamp(weight, 0.25, 4) ** strength
    now: datetime | None = None
    depth: int = 100  # candidates taken from each half


DEFAULTS = Options()


@dataclass(frozen=True)
class Hit:
    id: str
    type: str
    title: str
    abstract: str
    path: str
    created: int
    updated: int
    status: str  # "superseded" is shown as such: only --include-superseded returns one
    score: float
    keyword_rank: int | None
    semantic_rank: int | None
    fused: float
    decay: float
    weight: float


@dataclass(frozen=True)
class Result:
    hits: tuple[Hit, ...]
    mode: Mode  # the mode actually used (hybrid falls back to keyword without a model)
    notices: tuple[str, ...] = ()


class Source(Protocol):
    """What recall ranks from: the HEAD index, or the store as it stood (gitmem.recall.asof)."""

    model: ModelRef | None
    notices: list[str]

    def ensure_current(self) -> None: ...
    def keyword(self, query: str, n: int, flt: Filter) -> list[tuple[str, float]]: ...
    def keyword_ceiling(self, query: str) -> float: ...
    def semantic(self, query: str, n: int, flt: Filter) -> list[tuple[str, float]] | None: ...
    def scoring(self, ids: Sequence[str]) -> dict[str, tuple[int, float]]: ...
    def entries(self, ids: Sequence[str]) -> dict[str, Entry]: ...


def recall(index: Source, query: str, options: Options = DEFAULTS) -> Result:
    notices: list[str] = []
    mode = options.mode
    if mode != "keyword" and index.model is None:
        notices.append(
            "semantic search is off (no embedding model loaded); answering with keywords only "
            '— "gitmem doctor" says how to enable it'
        )
        mode = "keyword"
    index.ensure_current()
    notices.extend(index.notices)
    index.notices.clear()
    depth = max(options.depth, options.limit)
    if mode == "hybrid":
        # The halves run at once (numpy's product and tantivy's search both leave the GIL). The
        # semantic half stays in this thread: its product over every vector is the longest step,
        # and handed to the pool it began only once this thread let go of the GIL (1-3 ms
        # later at 100k records, measured); the keyword half waits for it instead.
        pending = _POOL.submit(
            _keyword_then_help, index, query, depth, options, threading.get_ident()
        )
        try:
            semantic = index.semantic(query, depth, options.filter) or []
        finally:
            pending.wait()
        keyword = pending.result()
    else:
        keyword = _keyword(index, query, depth, options) if mode == "keyword" else []
        semantic = (index.semantic(query, depth, options.filter) or []) if mode != "keyword" else []
    fused = _fuse(query, keyword, semantic, mode, options)
    facts = index.scoring(list(fused))
    now = (options.now or datetime.now(UTC)).timestamp()
    k_rank = {rid: i + 1 for i, (rid, _) in enumerate(keyword)}
    s_rank = {rid: i + 1 for i, (rid, _) in enumerate(semantic)}
    ranked = _best_first(fused, facts, now, options)
    hits: list[Hit] = []
    while len(hits) < options.limit:
        # Full entries only for the hits returned: more are asked only if one has gone
        # since it was scored (another process's update).
        chosen = list(itertools.islice(ranked, options.limit - len(hits)))
        if not chosen:
            break
        entries = index.entries([rid for _, rid, _, _, _ in chosen])
        hits.extend(
            _hit(entries[rid], -neg, k_rank.get(rid), s_rank.get(rid), base, decay, weight)
            for neg, rid, base, decay, weight in chosen
            if rid in entries
        )
    return Result(tuple(hits), mode, tuple(notices))


_Scored = tuple[float, str, float, float, float]  # -score, id, fused score, decay, weight


def _best_first(
    fused: dict[str, float],
    facts: dict[str, tuple[int, float]],
    now: float,
    options: Options,
) -> Iterator[_Scored]:
    """The candidates that have facts, by final score (fused × decay × weight factor; best
    first, ties by id), with the factors of only as many as that order needs: they are taken
    by fused score, and one is given out once no candidate left could beat it (none has
    factors above `_factor_bounds`). A recall returns ~10 of ~200 candidates, and each
    factor costs a power: ~0.5 ms of every recall, on its critical path, measured."""
    known = [rid for rid in fused if rid in facts]
    bounds = _factor_bounds(known, fused, facts, now, options)
    if bounds is None:  # every one scored, then sorted
        yield from sorted(_scored(rid, fused[rid], facts, now, options) for rid in known)
        return
    low, high = bounds
    order = sorted(known, key=fused.__getitem__, reverse=True)  # equal ones in any order
    done: list[_Scored] = []  # a heap
    at = 0
    while done or at < len(order):
        if at < len(order):
            base = fused[order[at]]
            ceiling = base * (high if base >= 0 else low) + _SLACK * abs(base) + _TINY
            if not done or -done[0][0] <= ceiling:  # the next might beat (or tie) the best
                heapq.heappush(done, _scored(order[at], base, facts, now, options))
                at += 1
                continue
        yield heapq.heappop(done)


_SLACK = 1e-9  # relative: covers the rounding of a product of three floats ...
_TINY = 8 * math.ulp(0.0)  # ... and, absolute, where it is subnormal (its error is absolute)


def _scored(
    rid: str, base: float, facts: dict[str, tuple[int, float]], now: float, options: Options
) -> _Scored:
    updated, weight = facts[rid]
    decay, factor = _decay(updated, now, options), _weighting(weight, options)
    return (-(base * decay * factor), rid, base, decay, factor)


def _weighting(weight: float, options: Options) -> float:
    """The weight factor: the record's weight, clamped to [0.25, 4], to the strength."""
    return float(min(max(weight, 0.25), 4.0) ** options.weight_strength)


def _factor_bounds(
    known: list[str],
    fused: dict[str, float],
    facts: dict[str, tuple[int, float]],
    now: float,
    options: Options,
) -> tuple[float, float] | None:
    """The lowest and highest product of decay and weight factor among the `known`
    candidates, or None where bounds would not order the scores (a negative factor, a NaN
    or infinite score or weight). Each factor is monotone in its fact (newer, heavier), so
    the extremes come from the extreme facts."""
    if not known:
        return None
    times, weights = zip(*(facts[rid] for rid in known), strict=True)
    decays = [_decay(min(times), now, options), _decay(max(times), now, options)]
    factors = [_weighting(min(weights), options), _weighting(max(weights), options)]
    low, high = min(decays) * min(factors), max(decays) * max(factors)
    if not (0 <= low <= high < math.inf) or not math.isfinite(
        sum(weights) + sum(fused[rid] for rid in known)
    ):
        return None
    return low, high


def _keyword(index: Source, query: str, depth: int, options: Options) -> list[tuple[str, float]]:
    """The keyword half: BM25 hits, divided by the query's ceiling where fusion wants that."""
    keyword = index.keyword(query, depth, options.filter)
    if keyword and options.fusion == "linear" and options.scaling == "ceiling":
        ceiling = index.keyword_ceiling(query)
        if ceiling > 0:
            keyword = [(rid, min(score / ceiling, 1.0)) for rid, score in keyword]
    return keyword


def _keyword_then_help(
    index: Source, query: str, depth: int, options: Options, recalling: int
) -> list[tuple[str, float]]:
    """The keyword half, then this thread's share of the semantic half's product (the longer
    of the two at scale: gitmem.index.vectors), the one the thread `recalling` runs."""
    keyword = _keyword(index, query, depth, options)
    # Only a product of gitmem.index.vectors takes helpers; a process that never loaded it (and
    # numpy) ranks without them (gitmem.index.literank).
    vectors = sys.modules.get("gitmem.index.vectors")
    if vectors is not None:
        with contextlib.suppress(Exception):  # a failed block goes back to the product's thread
            vectors.help_products(recalling)
    return keyword


_IDENTIFIER = re.compile(
    r"[A-Za-z]+[-_][A-Za-z0-9_-]*\d|\d+[-_][A-Za-z]"  # PAY-1423, E_11000, v2-beta
    r"|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b"  # DATABASE_URL
    r"|\w+/[\w./-]+|\w+\.(?:go|py|ts|tsx|js|rs|md|yaml|yml|toml|json|sql|tf)\b"  # paths
    r"|\b[0-9a-f]{7,40}\b|\bv?\d+\.\d+(?:\.\d+)?\b"  # hashes, versions
    r"|\b[a-z]+[A-Z]\w*\b|\b(?=\w*\d)(?=\w*[A-Za-z])\w{4,}\b"  # camelCase, E11000, 42P05
)


def has_identifier(query: str) -> bool:
    """Whether the query names something exact, where keywords know best."""
    return _IDENTIFIER.search(query) is not None


def _fuse(
    query: str,
    keyword: list[tuple[str, float]],
    semantic: list[tuple[str, float]],
    mode: Mode,
    options: Options,
) -> dict[str, float]:
    scale = options.scaling
    # Keyword scores already divided by the ceiling are absolute: leave them as they are.
    k_scale: Scaling | None = None if scale == "ceiling" else scale
    s_scale: Scaling = "max" if scale == "ceiling" else scale
    if mode == "keyword":
        return _normalised(keyword, k_scale) if options.fusion == "linear" else _rrf(keyword, 1.0)
    if mode == "semantic":
        return _normalised(semantic, s_scale) if options.fusion == "linear" else _rrf(semantic, 1.0)
    w = options.identifier_weight if has_identifier(query) else options.semantic_weight
    out: dict[str, float] = {}
    if options.fusion == "rrf":
        parts = [_rrf(keyword, 1.0 - w), _rrf(semantic, w)]
    else:
        parts = [
            {k: v * (1.0 - w) for k, v in _normalised(keyword, k_scale).items()},
            {k: v * w for k, v in _normalised(semantic, s_scale).items()},
        ]
    for part in parts:
        for rid, score in part.items():
            out[rid] = out.get(rid, 0.0) + score
    return out


def _rrf(ranked: list[tuple[str, float]], weight: float) -> dict[str, float]:
    return {rid: weight / (RRF_K + rank) for rank, (rid, _) in enumerate(ranked, start=1)}


def _normalised(ranked: list[tuple[str, float]], scaling: Scaling | None) -> dict[str, float]:
    """Scores to [0, 1]; the best maps to 1 (a list of equal scores maps to 1). None: the
    scores are already on an absolute scale."""
    if not ranked:
        return {}
    if scaling is None:
        return dict(ranked)
    scores = [s for _, s in ranked]
    low = min(scores) if scaling == "minmax" else 0.0
    high = max(scores)
    if scaling == "max":
        scores = [max(s, 0.0) for s in scores]
        ranked = [(rid, max(s, 0.0)) for rid, s in ranked]
    span = high - low
    return {rid: (1.0 if span <= 0 else (s - low) / span) for rid, s in ranked}


def _decay(updated: int, now: float, options: Options) -> float:
    if options.half_life_days <= 0:
        return 1.0
    age_days = max(0.0, (now - updated) / 86400.0)
    fresh = math.pow(0.5, age_days / options.half_life_days)
    return options.decay_floor + (1.0 - options.decay_floor) * fresh


def _hit(
    entry: Entry,
    score: float,
    keyword_rank: int | None,
    semantic_rank: int | None,
    fused: float,
    decay: float,
    weight: float,
) -> Hit:
    return Hit(
        id=entry.id,
        type=entry.type,
        title=entry.title,
        abstract=entry.abstract,
        path=entry.path,
        created=entry.created,
        updated=entry.updated,
        status=entry.status,
        score=score,
        keyword_rank=keyword_rank,
        semantic_rank=semantic_rank,
        fused=fused,
        decay=decay,
        weight=weight,
    )
