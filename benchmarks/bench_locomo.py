"""LoCoMo's development half through the product: R@5, R@10 and NDCG@10 overall and per
category, each configuration against a baseline with a paired bootstrap (issue 21).

The stores are benchmarks/locomo.py's: one per conversation, one record per dialog turn with
`source` = "session:N", created at its session's time plus 30 s per turn; each question is a
query asked after the last session; a hit is a turn its evidence lists; category 5 is left out.
The dataset is read from ../shared/datasets/locomo-dev/ (its README: origin, CC BY-NC 4.0) and
never copied into the project.

    .venv/bin/python benchmarks/bench_locomo.py [--model DIR] [--baseline bm25] [--probe] \
        [--no-titles] [--context-cap WORDS] [--dataset DIR] [--resamples 2000] [--json OUT]

Configurations: "bm25" (keyword mode, decay and weight off), "keyword" (keyword mode with the
defaults) and, with --model, "semantic" and "hybrid". Under each configuration's figures is
its paired difference from the baseline: the mean over the same queries and a 95% bootstrap
interval (gitmem.evaluate.paired_difference); an interval wholly above (below) zero is a gain
(a loss) beyond noise. --dataset runs a `gitmem eval` dataset (benchmarks/retrieval/README.md)
instead, each query at its own `now` as gitmem.evaluate.run_queries asks it.

--probe measures what context would buy the keyword half, in the benchmark and not in the
product (docs/search.md, "Context: a design"). Beside each store it builds, through the
product, one "context" store per window k whose record for a turn holds the text (title,
abstract, body) of the records within ±k of it in time in the same source, not its own, and a
"source" store with one record per source holding all its records' text. A context field of
weight w is emulated by adding w × the record's BM25 in the context store to its own BM25
(tantivy scores a query over several fields as the boosted sum of per-field BM25: this is what
a field of boost w adds). The source prior of strength p adds p × (the best own score) × (the
record's source's BM25 / the best source's) ("p="), or multiplies the record's score by
1 + p × that ratio ("×p="). The "hits:" variants take both from the own search's candidates
at query time instead of an index (a record's context: its neighbours' own scores, summed).
Every query searches each store with the filter run_queries gives it, DEPTH candidates deep.
The grid is printed by its overall means; the bootstrap is shown for the best of each kind by
NDCG@10 (the best of a grid flatters it) and for PROPOSED, the setting chosen in advance.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from locomo import DATA, configurations, dataset, measure, store_of

from gitmem.api import Store
from gitmem.evaluate import (
    Query,
    load_queries,
    model_ref,
    paired_difference,
    run_queries,
    score,
)
from gitmem.index.entries import Filter
from gitmem.recall.recall import DEFAULTS, Options
from gitmem.recall.timeparse import parse_moment

METRICS = ("r@5", "r@10", "ndcg@10")
Scores = dict[str, list[tuple[Query, dict[str, float]]]]  # configuration -> per-query scores
NO_TITLES = False  # --no-titles
CAP = 0  # --context-cap: the words a record lends each neighbour (not its source); 0: all
DEPTH = 100  # candidates taken from each keyword search, as recall's Options.depth
WINDOWS = (1, 2, 3)
CONTEXT_WEIGHTS = (0.25, 0.5, 0.75, 1.0)
PRIORS = (0.25, 0.5, 0.75, 1.0)
PROPOSED = "ctx±2 w=0.5 ×p=0.5"  # the middle of the grid, the setting docs/search.md proposes


def report(
    scores: Scores, baseline: str, resamples: int, compared: set[str] | None = None
) -> dict[str, Any]:
    """Means per configuration and group, and the paired difference from `baseline` of each
    configuration in `compared` (all by default)."""
    out: dict[str, Any] = {}
    base = scores[baseline]
    for name, rows in scores.items():
        groups: dict[str, list[int]] = {"all": list(range(len(rows)))}
        for i, (q, _) in enumerate(rows):
            groups.setdefault(q.category, []).append(i)
        figures: dict[str, Any] = {}
        for group, members in groups.items():
            cell: dict[str, Any] = {"n": len(members)}
            for m in METRICS:
                values = [rows[i][1][m] for i in members]
                cell[m] = round(sum(values) / len(values), 4)
                if name != baseline and (compared is None or name in compared):
                    diff = paired_difference(values, [base[i][1][m] for i in members], resamples)
                    cell[f"{m} vs {baseline}"] = {k: round(v, 4) for k, v in diff.items()}
            figures[group] = cell
        out[name] = figures
    return out


def show(figures: dict[str, Any], baseline: str) -> str:
    lines = []
    for name, groups in figures.items():
        for group, cell in groups.items():
            means = " ".join(f"{m}={cell[m]:.3f}" for m in METRICS)
            lines.append(f"{name:<22} {group:<12} n={cell['n']:<4} {means}")
            if f"r@5 vs {baseline}" in cell:
                deltas = "  ".join(
                    f"{m} {d['mean']:+.3f} [{d['low']:+.3f},{d['high']:+.3f}]"
                    for m in METRICS
                    if (d := cell[f"{m} vs {baseline}"])
                )
                lines.append(f"{'':<22} {'':<12} vs {baseline}: {deltas}")
    return "\n".join(lines)


# --- the probe: context and a source prior, emulated with extra stores ---------------------


@dataclass
class Conversation:
    """A conversation's own store, its context stores (one per window) and session store."""

    own: Store
    context: dict[int, Store]
    sessions: Store
    session_of: dict[str, str]  # turn id -> session record id
    near: dict[int, dict[str, list[str]]]  # window -> turn id -> the turns within it
    queries: list[Query]
    filters: dict[str, Filter]  # query id -> the records it may see (as run_queries)
    found: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)

    def bm25(self, store: str, q: Query) -> dict[str, float]:
        """The top DEPTH raw BM25 scores of a query in one of the stores ("own", "k2"...)."""
        key = (store, q.id)
        if key not in self.found:
            chosen = {"own": self.own, "sessions": self.sessions}.get(store)
            chosen = chosen or self.context[int(store[1:])]
            hits = chosen.index().keyword(q.text, DEPTH, self.filters[q.id])
            self.found[key] = dict(hits)
        return self.found[key]


def _filters(records: Sequence[dict[str, Any]], queries: Sequence[Query]) -> dict[str, Filter]:
    """What gitmem.evaluate.run_queries lets each query see: records created by its `now`,
    and none whose successor existed by then."""
    created = {r["id"]: int(parse_moment(r["created"]).timestamp()) for r in records}
    successor = {r["id"]: r["superseded_by"] for r in records if r.get("superseded_by")}
    out = {}
    for q in queries:
        stamp = int(parse_moment(q.now).timestamp())
        retired = frozenset(
            r for r, new in successor.items() if created.get(new, stamp + 1) <= stamp
        )
        out[q.id] = Filter(until=stamp, include_superseded=True, exclude=retired)
    return out


def _neighbourhoods(records: Sequence[dict[str, Any]], k: int) -> dict[str, list[str]]:
    """Each turn's neighbours: the turns within ±k of it in the same source, by time."""
    by_source: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_source.setdefault(r["source"], []).append(r)
    out = {}
    for turns in by_source.values():
        turns.sort(key=lambda r: (r["created"], r["id"]))
        ids = [r["id"] for r in turns]
        for i, rid in enumerate(ids):
            out[rid] = ids[max(0, i - k) : i] + ids[i + 1 : i + k + 1]
    return out


def _context(records: Sequence[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """Each turn's context record: the text of its neighbours (not its own)."""
    text = {r["id"]: _text(r, CAP) for r in records}
    near = _neighbourhoods(records, k)
    return [
        r
        | {
            "title": "·",
            "abstract": "",
            "tags": [],
            "body": "\n".join(text[n] for n in near[r["id"]]) or "·",
        }
        for r in records
    ]


def _text(record: dict[str, Any], cap: int = 0) -> str:
    """What a record lends its neighbours and its source: its title, abstract and body
    (without the title under --no-titles), its first `cap` words if `cap`."""
    if NO_TITLES:
        record = record | {"title": ""}
    text = "\n".join(filter(None, (record["title"], record.get("abstract"), record["body"])))
    return " ".join(text.split()[:cap]) if cap else text


def _sessions(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per source, holding all its turns."""
    joined: dict[str, dict[str, Any]] = {}
    for r in records:
        first = {"id": _session_id(r), "type": "session", "title": "·", "body": ""}
        first = joined.setdefault(r["source"], first | {"created": r["created"]})
        first["body"] += _text(r) + "\n"
        first["created"] = min(first["created"], r["created"])
    return list(joined.values())


def _session_id(record: dict[str, Any]) -> str:
    return "source-" + hashlib.sha1(str(record["source"]).encode()).hexdigest()[:12]


def conversation(records: list[dict[str, Any]], queries: list[Query], folder: Path) -> Conversation:
    """One dataset's stores for the probe, made through the product in `folder`."""
    folder.mkdir()
    return Conversation(
        own=store_of(records, None, folder / "own"),
        context={k: store_of(_context(records, k), None, folder / f"k{k}") for k in WINDOWS},
        sessions=store_of(_sessions(records), None, folder / "sessions"),
        session_of={r["id"]: _session_id(r) for r in records},
        near={k: _neighbourhoods(records, k) for k in WINDOWS},
        queries=queries,
        filters=_filters(records, queries),
    )


Ranker = Callable[[Conversation, Query], list[str]]


def ranker(
    window: int = 0,
    weight: float = 0.0,
    prior: float = 0.0,
    hits: bool = False,
    scaled: bool = False,
) -> Ranker:
    """Rank a conversation's turns: own BM25 + weight × context BM25 (±window), then the
    source prior of strength `prior`. With `hits`, both come from the own search's candidates
    alone, at query time: a turn's context score is the sum of its neighbours' own scores, a
    session's the sum of its turns'. With `scaled`, the prior multiplies a turn's score by
    1 + prior × (its session's BM25 / the best session's) instead of adding to it."""

    def rank(conv: Conversation, q: Query) -> list[str]:
        own = conv.bm25("own", q)
        scores = dict(own)
        if weight and window:
            if hits:
                near = conv.near[window]
                context = {
                    rid: c
                    for rid in set(own) | {n for r in own for n in near[r]}
                    if (c := sum(own.get(n, 0.0) for n in near[rid]))
                }
            else:
                context = conv.bm25(f"k{window}", q)
            for rid, s in context.items():
                scores[rid] = scores.get(rid, 0.0) + weight * s
        if prior and scores:
            if hits:
                sessions: dict[str, float] = {}
                for rid, s in own.items():
                    sid = conv.session_of[rid]
                    sessions[sid] = sessions.get(sid, 0.0) + s
            else:
                sessions = conv.bm25("sessions", q)
            best_session = max(sessions.values(), default=0.0)
            if best_session > 0 and scaled:
                scores = {
                    rid: s * (1 + prior * sessions.get(conv.session_of[rid], 0.0) / best_session)
                    for rid, s in scores.items()
                }
            elif best_session > 0:
                lift = prior * max(scores.values()) / best_session
                scores = {
                    rid: s + lift * sessions.get(conv.session_of[rid], 0.0)
                    for rid, s in scores.items()
                }
        return [rid for rid, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))][:10]

    return rank


def probe_configurations() -> dict[str, Ranker]:
    """The probe's grid: context alone, the prior alone, both; indexed and from the hits."""
    out = {"probe:bm25": ranker()}
    for hits in (False, True):
        tag = "hits:" if hits else ""
        for k in WINDOWS:
            for w in CONTEXT_WEIGHTS:
                out[f"{tag}ctx±{k} w={w}"] = ranker(k, w, hits=hits)
        for p in PRIORS:
            out[f"{tag}prior p={p}"] = ranker(prior=p, hits=hits)
        for k in WINDOWS:
            for w in CONTEXT_WEIGHTS:
                for p in PRIORS:
                    out[f"{tag}ctx±{k} w={w} p={p}"] = ranker(k, w, p, hits=hits)
    for p in PRIORS:
        out[f"×prior p={p}"] = ranker(prior=p, scaled=True)
        for k in WINDOWS:
            for w in CONTEXT_WEIGHTS:
                out[f"ctx±{k} w={w} ×p={p}"] = ranker(k, w, p, scaled=True)
    return out


def probe(convs: Sequence[Conversation], rankers: dict[str, Ranker]) -> Scores:
    out: Scores = {name: [] for name in rankers}
    for conv in convs:
        for q in conv.queries:
            for name, rank in rankers.items():
                out[name].append((q, score(rank(conv, q), q.gold)))
    return out


_Part = tuple[list[dict[str, Any]], list[Query], str]  # records, queries, a name


def _eval_dataset(
    folder: Path, model: str | None, configs: dict[str, Options], work: Path
) -> tuple[Scores, list[_Part]]:
    """A `gitmem eval` dataset's per-query scores under each configuration, as `gitmem eval`
    ranks them, and the dataset for the probe."""
    lines = (folder / "records.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    queries = load_queries(folder / "queries.jsonl")
    store = store_of(records, model_ref(model) if model else None, work / "dataset")
    scores = {
        name: [
            (q, score(ranked, q.gold))
            for q, ranked in zip(queries, run_queries(store, queries, options), strict=True)
        ]
        for name, options in configs.items()
    }
    return scores, [(records, queries, "dataset")]


def with_plain(configs: dict[str, Options]) -> dict[str, Options]:
    """The product's configurations, "bm25" without context and prior, and each of
    "keyword" and "hybrid" also without them (as "... plain"): what context adds."""
    out = dict(configs)
    for name in ("bm25", "keyword", "hybrid"):
        if name in configs:
            plain = replace(configs[name], context_weight=0.0, source_prior=0.0)
            out[name if name == "bm25" else f"{name} plain"] = plain
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument(
        "--dataset", type=Path, help="a gitmem eval dataset folder instead of LoCoMo"
    )
    parser.add_argument("--model", help="an embedding model folder: adds semantic and hybrid")
    parser.add_argument("--baseline", default="bm25")
    parser.add_argument("--probe", action="store_true", help="measure context and a source prior")
    parser.add_argument(
        "--no-titles", action="store_true", help="with --probe: lend neighbours no titles"
    )
    parser.add_argument(
        "--context-cap", type=int, default=0, help="with --probe: words lent to each neighbour"
    )
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    global NO_TITLES, CAP
    NO_TITLES, CAP = args.no_titles, args.context_cap
    configs = with_plain(configurations(DEFAULTS, args.model is not None))
    with tempfile.TemporaryDirectory(prefix="gitmem-locomo-") as tmp:
        work = Path(tmp)
        if args.dataset:
            scores, parts = _eval_dataset(args.dataset, args.model, configs, work)
        else:
            samples = json.loads(args.data.read_text(encoding="utf-8"))
            parts = [(*dataset(sample), sample["sample_id"]) for sample in samples]
            scores = measure(samples, args.model, configs, work)
        if args.probe:
            convs = [conversation(r, q, work / f"probe-{name}") for r, q, name in parts]
            scores |= probe(convs, probe_configurations())
    if args.baseline not in scores:
        parser.error(f"no configuration {args.baseline!r}: one of {', '.join(scores)}")
    compared = set(configs)
    grid: dict[str, Any] = {}
    if args.probe:  # the grid by its means; the bootstrap for the best of each kind
        grid = report(scores, args.baseline, 0, set())
        for tag in ("", "hits:"):
            kinds = {
                "context": lambda n, t=tag: n.startswith(f"{t}ctx") and "p=" not in n,
                "prior": lambda n, t=tag: n.startswith(f"{t}prior"),
                "both": lambda n, t=tag: n.startswith(f"{t}ctx") and " p=" in n,
                "scaled prior": lambda n, t=tag: n.startswith(f"{t}×prior"),
                "both, scaled": lambda n, t=tag: n.startswith(f"{t}ctx") and "×p=" in n,
            }
            for member in kinds.values():
                named = [n for n in grid if member(n)]
                if named:
                    compared.add(max(named, key=lambda n: grid[n]["all"]["ndcg@10"]))
        compared.add(PROPOSED)
        print(show({n: {"all": g["all"]} for n, g in grid.items()}, args.baseline), "\n")
    figures = report(scores, args.baseline, args.resamples, compared)
    figures = {n: f for n, f in figures.items() if n in compared or n == args.baseline}
    print(show(figures, args.baseline))
    if args.json:
        out = {"compared": figures, "grid": {n: g["all"] for n, g in grid.items()}}
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
