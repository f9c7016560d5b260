"""The keyword half keeps BM25's order: recall's scaling never makes two distinct BM25 scores
equal, and decay and weight move a record ahead of another only when their relevance is close
(Options.close). On real stores; BM25's own order is the index's keyword half, unscaled."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem.api import Store
from gitmem.index.entries import Filter
from gitmem.recall.recall import DEFAULTS, Options, recall
from gitmem.store.store import Store as PlainStore

NOW = datetime(2026, 6, 1, tzinfo=UTC)
WORDS = "anyio gotcha cors headers retry webhook cache deploy token queue schema alert".split()


def _item(
    i: int, title: str, body: str, tags: Sequence[str], age_days: float, weight: float
) -> Any:
    stamp = (NOW - timedelta(days=age_days)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "id": f"note-{i:04d}",
        "type": "fact",
        "title": title,
        "abstract": "",
        "tags": sorted(set(tags)),
        "agent": "bench",
        "scope": "shared",
        "created": stamp,
        "updated": stamp,
        "weight": weight,
        "links": [],
        "supersedes": [],
        "superseded_by": "",
        "status": "active",
        "body": body + "\n",
    }


def _store(root: Path, items: list[Any]) -> Store:
    plain, _ = PlainStore.init(root)
    plain.import_records(items, agent="bench")
    store = Store.open(root)
    store.use_model(None)
    return store


def _keyword(store: Store, query: str, options: Options) -> tuple[list[str], dict[str, float]]:
    """recall's keyword-mode order, and BM25's score of every candidate."""
    index = store.index()
    bm25 = dict(index.keyword(query, options.depth, options.filter))
    got = recall(index, query, options)
    return [h.id for h in got.hits], bm25


def test_the_record_matching_every_word_comes_first_however_many_newer_ones_match_some(
    tmp_path: Path,
) -> None:
    """The defect of issue 25: short, newer notes matching some of the words in title, tags and
    body all scored above the query's ceiling, were capped at 1.0, tied, and recency put them
    ahead of the one note holding every word."""
    items = [
        _item(0, "anyio gotcha cors headers", "anyio gotcha with cors headers", ["anyio"], 60, 1)
    ]
    items += [
        _item(i, "Gotcha: cors headers", "gotcha cors headers", ["cors"], i, 1)
        for i in range(1, 13)
    ]
    items += [
        _item(i, f"Deploy notes {i}", "deploy the anyio worker", ["deploy"], 9, 1)
        for i in range(13, 60)
    ]
    store = _store(tmp_path / "store", items)
    options = Options(mode="keyword", now=NOW, limit=20)
    order, bm25 = _keyword(store, "anyio gotcha cors headers", options)
    assert max(bm25, key=bm25.__getitem__) == "note-0000"
    assert order[0] == "note-0000"


def test_keyword_scores_stay_distinct_where_bm25s_are(tmp_path: Path) -> None:
    """Records matching in title, tags and body score above the ceiling, each differently."""
    items = [
        _item(i, " ".join(WORDS[:5]), " ".join(WORDS[:5] * n), WORDS[:5], 0, 1)
        for i, n in enumerate(range(1, 6))
    ]
    items += [_item(i, f"Filler {i}", "nothing", [], 0, 1) for i in range(10, 40)]
    store = _store(tmp_path / "store", items)
    options = Options(mode="keyword", now=NOW, limit=20, half_life_days=0.0, weight_strength=0.0)
    index = store.index()
    query = "anyio gotcha cors headers retry"
    bm25 = index.keyword(query, 100, Filter())
    fused = [h.fused for h in recall(index, query, options).hits]
    assert len(set(fused)) == len({score for _, score in bm25})
    assert fused == sorted(fused, reverse=True)


_record = st.tuples(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),  # title
    st.lists(st.sampled_from(WORDS), min_size=0, max_size=12),  # body
    st.lists(st.sampled_from(WORDS), max_size=3),  # tags
    st.floats(0, 400),  # age in days
    st.sampled_from([0.0, 0.5, 1.0, 2.0, 10.0]),  # weight
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    records=st.lists(_record, min_size=1, max_size=12),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
    tag=st.one_of(st.none(), st.sampled_from(WORDS)),
)
def test_keyword_mode_keeps_bm25s_order_but_among_close_scores(
    tmp_path_factory: Any, records: list[Any], query: str, tag: str | None
) -> None:
    """For any store and query: the top hit of --mode keyword is BM25's top hit (of the records
    the filter lets through), or one whose BM25 score is close to it; and no hit comes before
    one it does not come close to."""
    root = tmp_path_factory.mktemp("order") / "store"
    items = [
        _item(i, " ".join(t).capitalize(), " ".join(t + b), tags, age, w)
        for i, (t, b, tags, age, w) in enumerate(records)
    ]
    items += [_item(100 + i, f"Filler {i}", "nothing to see", [], 30, 1) for i in range(20)]
    store = _store(root, items)
    flt = Filter(tags=(tag,)) if tag else Filter()
    options = Options(mode="keyword", now=NOW, limit=50, filter=flt)
    assert options.close == DEFAULTS.close
    order, bm25 = _keyword(store, query, options)
    assert sorted(order) == sorted(bm25)  # keyword mode returns exactly BM25's hits
    if not order:
        return
    best = max(bm25.values())
    assert bm25[order[0]] >= options.close * best
    if sum(score >= options.close * best for score in bm25.values()) == 1:
        assert bm25[order[0]] == best
    for at, ahead in enumerate(order):
        for behind in order[at + 1 :]:
            assert bm25[ahead] >= options.close * bm25[behind]
    # Without decay and weight, "close" means equal: the order is BM25's, ties aside.
    flat = replace(options, half_life_days=0.0, weight_strength=0.0)
    assert flat.close == 1.0
    order, bm25 = _keyword(store, query, flat)
    scores = [bm25[rid] for rid in order]
    assert scores == sorted(scores, reverse=True)
