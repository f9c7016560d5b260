"""Retrieval evaluation: R@1, R@5, R@10, MRR and NDCG@10 per query category and mode, with
bootstrap confidence intervals, on any dataset in the generic JSONL format
(benchmarks/retrieval/README.md): records.jsonl (gitmem's export format) and queries.jsonl
({id, query, category, gold: [ids], now?}).

The dataset is imported into a throwaway store and indexed through the real code path, so the
figures are those of `gitmem recall`.
"""

from __future__ import annotations

import json
import math
import random
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gitmem.api import Store
from gitmem.errors import UsageError
from gitmem.index import modelfiles
from gitmem.index.model import ModelRef
from gitmem.recall.recall import DEFAULTS, Options
from gitmem.recall.timeparse import parse_moment
from gitmem.store.schema import Schema

__all__ = ["METRICS", "Query", "evaluate", "format_report", "load_queries", "score", "store_for"]

METRICS = ("r@1", "r@5", "r@10", "mrr", "ndcg@10")
DEFAULT_NOW = "2026-10-01T00:00:00Z"


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    category: str
    gold: tuple[str, ...]
    now: str


_FORMAT = (
    "a dataset is a folder with records.jsonl and queries.jsonl (benchmarks/retrieval/README.md)"
)


def _read(path: Path) -> str:
    """One of a dataset's files, or a UsageError that says what a dataset is."""
    if not path.parent.is_dir():
        raise UsageError(f"no dataset at {path.parent}: {_FORMAT}")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path.parent} has no {path.name}: {_FORMAT}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None


def _records(dataset: Path) -> list[dict[str, Any]]:
    path = dataset / "records.jsonl"
    items = []
    for number, line in enumerate(_read(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise UsageError(f"{path} line {number}: not JSON ({exc})") from exc
        if not isinstance(item, dict):
            raise UsageError(f"{path} line {number}: not a record (an object with an id)")
        items.append(item)
    if not items:
        raise UsageError(f"{path} holds no records: {_FORMAT}")
    return items


def load_queries(path: Path) -> list[Query]:
    out: list[Query] = []
    for number, line in enumerate(_read(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            out.append(
                Query(
                    id=str(item["id"]),
                    text=str(item["query"]),
                    category=str(item.get("category", "all")),
                    gold=tuple(item["gold"]),
                    now=str(item.get("now") or DEFAULT_NOW),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{path} line {number}: not a query ({exc})") from exc
    return out


def score(ranked: Sequence[str], gold: Sequence[str]) -> dict[str, float]:
    """The metrics of one ranked list (binary relevance)."""
    wanted = set(gold)
    found = [i for i, rid in enumerate(ranked[:10]) if rid in wanted]
    first = next((i for i, rid in enumerate(ranked) if rid in wanted), None)
    dcg = sum(1.0 / math.log2(i + 2) for i in found)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(wanted), 10)))
    return {
        "r@1": len([i for i in found if i < 1]) / len(wanted),
        "r@5": len([i for i in found if i < 5]) / len(wanted),
        "r@10": len(found) / len(wanted),
        "mrr": 0.0 if first is None else 1.0 / (first + 1),
        "ndcg@10": dcg / ideal if ideal else 0.0,
    }


def store_for(dataset: Path, model: ModelRef | None, workdir: Path) -> Store:
    """A store holding the dataset's records, indexed."""
    items = _records(dataset)
    store, _ = Store.init(workdir / "store")
    # A dataset is judged on retrieval, not on this store's schemas: any type, no required field.
    known = dict(store.schemas)
    for item in items:
        name = str(item.get("type", ""))
        known.setdefault(name, Schema(type=name, description="evaluation", fields=()))
    store.schemas = {
        name: replace(sch, fields=tuple(replace(f, required=False) for f in sch.fields))
        for name, sch in known.items()
    }
    store.import_records(items, agent="eval", secrets="allow")
    store.use_model(model)
    store.index()
    return store


def run_queries(store: Store, queries: Sequence[Query], options: Options) -> list[list[str]]:
    """Each query against the memory as it stood at its `now`: records created later are left
    out, and a record counts as superseded only once its successor existed."""
    created: dict[str, int] = {}
    successor: dict[str, str] = {}
    for record in store.records():
        created[record.id] = int(record.created.timestamp())
        if record.superseded_by:
            successor[record.id] = record.superseded_by
    rankings: list[list[str]] = []
    for q in queries:
        now = parse_moment(q.now)
        stamp = int(now.timestamp())
        retired = frozenset(
            rid for rid, new in successor.items() if created.get(new, stamp + 1) <= stamp
        )
        flt = replace(options.filter, until=stamp, include_superseded=True, exclude=retired)
        chosen = replace(options, now=now, limit=10, filter=flt)
        result = store.recall(q.text, options=chosen, limit=10, mode=chosen.mode)
        rankings.append([h.id for h in result.hits])
    return rankings


def summarise(
    queries: Sequence[Query], rankings: Sequence[Sequence[str]], resamples: int, seed: int = 0
) -> dict[str, Any]:
    """Mean and 95% bootstrap interval of each metric, per category and overall."""
    per_query = [score(r, q.gold) for q, r in zip(queries, rankings, strict=True)]
    groups: dict[str, list[int]] = {"all": list(range(len(queries)))}
    for i, q in enumerate(queries):
        groups.setdefault(q.category, []).append(i)
    out: dict[str, Any] = {}
    for name, members in groups.items():
        out[name] = {"n": len(members)}
        for metric in METRICS:
            values = [per_query[i][metric] for i in members]
            low, high = _interval(values, resamples, seed)
            out[name][metric] = {"mean": sum(values) / len(values), "low": low, "high": high}
    return out


def paired_difference(
    a: Sequence[float], b: Sequence[float], resamples: int, seed: int = 0
) -> dict[str, float]:
    """Mean of a - b over paired queries, with a 95% bootstrap interval."""
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    low, high = _interval(diffs, resamples, seed)
    return {"mean": sum(diffs) / len(diffs), "low": low, "high": high}


def _interval(values: Sequence[float], resamples: int, seed: int) -> tuple[float, float]:
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return means[int(0.025 * resamples)], means[min(int(0.975 * resamples), resamples - 1)]


def model_ref(spec: str) -> ModelRef:
    path = modelfiles.locate(spec)
    if path is None:
        raise UsageError(f"no embedding model at {spec}")
    return ModelRef.from_folder(spec, path)


def evaluate(
    dataset: Path,
    *,
    model: str | None,
    resamples: int = 1000,
    options: Options = DEFAULTS,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Every mode the model allows, on every query; JSON-ready figures."""
    queries = load_queries(dataset / "queries.jsonl")
    if not queries:
        raise UsageError(f"{dataset / 'queries.jsonl'} holds no queries: {_FORMAT}")
    ref = model_ref(model) if model and model != "none" else None
    with tempfile.TemporaryDirectory(prefix="gitmem-eval-") as tmp:
        store = store_for(dataset, ref, Path(tmp))
        modes = ["keyword"] + (["semantic", "hybrid"] if ref is not None else [])
        report: dict[str, Any] = {
            "dataset": str(dataset),
            "queries": len(queries),
            "model": model if ref is not None else None,
            "options": {
                "fusion": options.fusion,
                "semantic_weight": options.semantic_weight,
                "half_life_days": options.half_life_days,
                "decay_floor": options.decay_floor,
            },
            "modes": {},
        }
        per_mode: dict[str, list[float]] = {}
        categories = sorted({q.category for q in queries})
        for mode in modes:
            if progress:
                progress(f"evaluating {mode} on {len(queries)} queries")
            rankings = run_queries(store, queries, replace(options, mode=mode))  # type: ignore[arg-type]
            report["modes"][mode] = summarise(queries, rankings, resamples)
            per_mode[mode] = [
                score(r, q.gold)["ndcg@10"] for q, r in zip(queries, rankings, strict=True)
            ]
        if "hybrid" in per_mode:
            best = max(("keyword", "semantic"), key=lambda m: sum(per_mode[m]))
            report["hybrid_minus_best_single"] = {
                "versus": best,
                "metric": "ndcg@10",
                **paired_difference(per_mode["hybrid"], per_mode[best], resamples),
            }
            # Per category, against each half: "loses beyond noise" = the interval is below 0.
            report["hybrid_minus_by_category"] = {
                single: {
                    cat: paired_difference(
                        [
                            v
                            for v, q in zip(per_mode["hybrid"], queries, strict=True)
                            if q.category == cat
                        ],
                        [
                            v
                            for v, q in zip(per_mode[single], queries, strict=True)
                            if q.category == cat
                        ],
                        resamples,
                    )
                    for cat in categories
                }
                for single in ("keyword", "semantic")
            }
    return report


def format_report(report: Mapping[str, Any]) -> str:
    lines = [f"{report['queries']} queries; model: {report['model'] or 'none (keyword only)'}"]
    for mode, groups in report["modes"].items():
        lines.append(f"\n{mode}")
        lines.append(f"  {'category':<12} {'n':>4} " + " ".join(f"{m:>17}" for m in METRICS))
        for name, figures in groups.items():
            cells = " ".join(
                f"{figures[m]['mean']:.3f} [{figures[m]['low']:.2f},{figures[m]['high']:.2f}]"
                for m in METRICS
            )
            lines.append(f"  {name:<12} {figures['n']:>4} {cells}")
    diff = report.get("hybrid_minus_best_single")
    if diff:
        lines.append(
            f"\nhybrid - {diff['versus']} ({diff['metric']}): {diff['mean']:+.3f} "
            f"[{diff['low']:+.3f}, {diff['high']:+.3f}]"
        )
    for single, cats in report.get("hybrid_minus_by_category", {}).items():
        cells = ", ".join(
            f"{cat} {d['mean']:+.3f} [{d['low']:+.2f},{d['high']:+.2f}]" for cat, d in cats.items()
        )
        lines.append(f"hybrid - {single} by category (ndcg@10): {cells}")
    return "\n".join(lines) + "\n"
