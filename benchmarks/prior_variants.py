"""The source prior's formula, compared on both datasets (issue 21, session 13): each variant
turns the sources' BM25 for a query into each source's share of the lift, and recall
multiplies a record's fused score by 1 + p x its source's share (docs/search.md).

    .venv/bin/python benchmarks/prior_variants.py coding ceil,best,gap,dist [--model DIR]
    .venv/bin/python benchmarks/prior_variants.py locomo ceil,best [--model DIR]

Variants: "ceil" (the product's: BM25 over the query's ceiling in the sources' index, capped
at 1), "best" (the first one: BM25 over the best source's), "gap" (over the best, times how
far the best stands above the runner-up), "dist" (above the median of the sources found,
over the best's). Each at p 0.5 and 1, with context at the default weight, against "plain"
(no context, no prior) and "context only"; hybrid mode, paired bootstrap (1,000 resamples).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_locomo
from locomo import DATA, store_of, stores

from gitmem.evaluate import Query, load_queries, model_ref, run_queries, score
from gitmem.index import context
from gitmem.index import index as index_module
from gitmem.recall.recall import DEFAULTS, Options

HERE = Path(__file__).resolve().parent
Shares = Callable[[list[tuple[str, float]], float], dict[str, float]]


def best(found: list[tuple[str, float]], ceiling: float) -> dict[str, float]:
    top = max(s for _, s in found)
    return {i: s / top for i, s in found}


def ceil(found: list[tuple[str, float]], ceiling: float) -> dict[str, float]:
    return {i: min(1.0, s / ceiling) for i, s in found} if ceiling > 0 else {}


def gap(found: list[tuple[str, float]], ceiling: float) -> dict[str, float]:
    ranked = sorted((s for _, s in found), reverse=True)
    second = ranked[1] if len(ranked) > 1 else 0.0
    return {i: s / ranked[0] * (ranked[0] - second) / ranked[0] for i, s in found}


def dist(found: list[tuple[str, float]], ceiling: float) -> dict[str, float]:
    values = [s for _, s in found]
    top, middle = max(values), statistics.median(values)
    if top <= middle:
        return {}
    return {i: max(0.0, (s - middle) / (top - middle)) for i, s in found}


VARIANTS: dict[str, Shares] = {"ceil": ceil, "best": best, "gap": gap, "dist": dist}


def with_shares(shares: Shares) -> Callable[..., dict[str, float]]:
    """Index.source_prior with `shares` in place of the product's formula."""

    def source_prior(self: Any, query: str, ids: Sequence[str]) -> dict[str, float]:
        facts, sources = self._context_parts()
        found = [(h.id, h.score) for h in sources.search(query, context.SOURCES_DEPTH)]
        found = [(i, s) for i, s in found if s > 0]
        if not found:
            return {}
        share = shares(found, sources.ceiling(query))
        return {r: share[s] for r, s in facts.sources(ids).items() if share.get(s, 0) > 0}

    return source_prior


def rows(pairs: list[tuple[Any, list[Query]]], options: Options) -> list[Any]:
    out = []
    for store, queries in pairs:
        for q, ranked in zip(queries, run_queries(store, queries, options), strict=True):
            out.append((q, score(ranked, q.gold)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", choices=("coding", "locomo"))
    parser.add_argument("variants", help=f"comma-separated: {','.join(VARIANTS)}")
    parser.add_argument("--model", default=str(HERE / ".models" / "minilm-distilled-256"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    hybrid = replace(DEFAULTS, mode="hybrid")
    scores: dict[str, list[Any]] = {}
    with tempfile.TemporaryDirectory(prefix="gitmem-prior-") as tmp:
        work = Path(tmp)
        if args.dataset == "coding":
            folder = HERE / "retrieval" / "coding-agent"
            lines = (folder / "records.jsonl").read_text(encoding="utf-8").splitlines()
            records = [json.loads(line) for line in lines if line.strip()]
            queries = load_queries(folder / "queries.jsonl")
            pairs = [(store_of(records, model_ref(args.model), work / "d"), queries)]
        else:
            pairs = stores(json.loads(DATA.read_text(encoding="utf-8")), args.model, work)
        product = index_module.Index.source_prior
        try:
            for name in args.variants.split(","):
                index_module.Index.source_prior = with_shares(VARIANTS[name])  # type: ignore[method-assign]
                for p in (0.5, 1.0):
                    scores[f"{name} p={p}"] = rows(pairs, replace(hybrid, source_prior=p))
        finally:
            index_module.Index.source_prior = product  # type: ignore[method-assign]
        plain = replace(hybrid, source_prior=0.0, context_weight=0.0)
        scores["plain"] = rows(pairs, plain)
        scores["context only"] = rows(pairs, replace(hybrid, source_prior=0.0))
    figures = bench_locomo.report(scores, "plain", 1000)
    print(bench_locomo.show(figures, "plain"))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
