"""Hybrid recall: keyword and semantic candidates, fused (gitmem.recall.fusion), then a
bounded recency decay and a bounded weight factor. Filters are applied before ranking (see
Index.keyword/semantic). The keyword half runs in the keyword thread (gitmem.recall.worker)
while this one runs the semantic half.

The defaults are the ones the evaluation in benchmarks/retrieval chose (docs/benchmarks.md).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import math
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Protocol

from gitmem.index.entries import Entry, Filter
from gitmem.index.model import ModelRef
from gitmem.recall.fusion import Fusion, Mode, Scaling, fuse
from gitmem.recall.worker import POOL

__all__ = ["DEFAULTS", "Hit", "Options", "Result", "Source", "recall"]


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
    semantic_weight: float = 0.2  # share of the semantic half for queries in plain words
    identifier_weight: float = 0.1  # ... and for queries naming an identifier (PAY-1423, a path)
    # Decay and weight only reorder records whose relevance is close (Options.close).
    half_life_days: float = 7.0  # 0 turns decay off
    decay_floor: float = 0.9  # the oldest record keeps this share of its score
    weight_strength: float = 0.025  # score × clamp(weight, 0.25, 4) ** strength
    now: datetime | None = None
    depth: int = 100  # candidates taken from each half
    # Context (docs/search.md, "Context and the source prior"): a record's context field
    # weighs this much of its body, and a matching source multiplies its records' fused
    # score by 1 + source_prior × (its source's BM25 / the best source's). 0 turns either off.
    context_weight: float = 0.75
    source_prior: float = 0.5
    explain: bool = False  # also say what the context added to each hit's keyword score

    @property
    def close(self) -> float:
        """What "close" means: decay and weight together move a record ahead of another only
        when its fused score is at least this share of the other's. Their factor spans
        [decay_floor, 1] × [0.25 ** strength, 4 ** strength], and this is its lowest over its
        highest: 0.9 × 16 ** -0.025 = 0.84 with the defaults (for a floor in [0, 1] and a
        strength >= 0, the settings docs/search.md names)."""
        floor = self.decay_floor if self.half_life_days > 0 else 1.0
        return float(floor * 16.0**-self.weight_strength)


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
    keyword: float | None = None  # the keyword half's BM25, its context's share included
    context: float | None = None  # that share (with Options.explain, else None)
    prior: float = 1.0  # the source prior's factor on the fused score


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
    def keyword(
        self, query: str, n: int, flt: Filter, context: float = 0.0
    ) -> list[tuple[str, float]]: ...
    def source_prior(self, query: str, ids: Sequence[str]) -> dict[str, float]: ...
    def context_scores(self, query: str, ids: Sequence[str], weight: float) -> dict[str, float]: ...
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
    elif mode != "keyword" and index.model is not None and index.model.notice:
        notices.append(index.model.notice)  # a stand-in for the configured model
    index.ensure_current()
    notices.extend(index.notices)
    index.notices.clear()
    depth = max(options.depth, options.limit)
    if mode == "hybrid":
        # The halves run at once (numpy's product and tantivy's search both leave the GIL). The
        # semantic half stays in this thread: its product over every vector is the longest step,
        # and handed to the pool it began only once this thread let go of the GIL (1-3 ms
        # later at 100k records, measured); the keyword half waits for it instead.
        pending = POOL.submit(
            _keyword_then_help, index, query, depth, options, threading.get_ident()
        )
        try:
            semantic = index.semantic(query, depth, options.filter) or []
        finally:
            pending.wait()
        keyword, scale = pending.result()
    else:
        keyword, scale = _keyword(index, query, depth, options) if mode == "keyword" else ([], 1.0)
        semantic = (index.semantic(query, depth, options.filter) or []) if mode != "keyword" else []
    fused = fuse(
        query,
        keyword,
        semantic,
        mode,
        fusion=options.fusion,
        scaling=options.scaling,
        semantic_weight=options.semantic_weight,
        identifier_weight=options.identifier_weight,
    )
    prior: dict[str, float] = {}
    if options.source_prior > 0 and fused:
        p = options.source_prior
        prior = {r: 1.0 + p * s for r, s in index.source_prior(query, list(fused)).items()}
        fused = {rid: score * prior.get(rid, 1.0) for rid, score in fused.items()}
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
    k_score = {rid: score * scale for rid, score in keyword}
    context: dict[str, float] = {}
    if options.explain and options.context_weight > 0 and keyword:
        ids = [h.id for h in hits if h.id in k_score]
        context = index.context_scores(query, ids, options.context_weight)
    hits = [
        replace(
            h,
            keyword=k_score.get(h.id),
            context=context.get(h.id, 0.0) if options.explain and h.id in k_score else None,
            prior=prior.get(h.id, 1.0),
        )
        for h in hits
    ]
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


def _keyword(
    index: Source, query: str, depth: int, options: Options
) -> tuple[list[tuple[str, float]], float]:
    """The keyword half: BM25 hits, best first, divided by the query's ceiling where fusion
    wants that, and the divisor. A record can score above the ceiling (it matches in several
    fields), so the divisor is the larger of the ceiling and the best score: one division for
    all keeps BM25's order and its ratios, where a cap at 1 made distinct scores equal
    (docs/search.md)."""
    keyword = index.keyword(query, depth, options.filter, options.context_weight)
    if keyword and options.fusion == "linear" and options.scaling == "ceiling":
        scale = max(index.keyword_ceiling(query), max(s for _, s in keyword))
        if scale > 0:
            return [(rid, score / scale) for rid, score in keyword], scale
    return keyword, 1.0


def _keyword_then_help(
    index: Source, query: str, depth: int, options: Options, recalling: int
) -> tuple[list[tuple[str, float]], float]:
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
