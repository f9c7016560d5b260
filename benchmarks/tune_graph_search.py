"""The semantic share of `gitmem graph search`, measured on the work-graph test fixture
(tests/graphfixture.py: 54 entity files) with a real static model.

    .venv/bin/python benchmarks/tune_graph_search.py \
        --model benchmarks/.models/minilm-distilled-256 \
        [--json benchmarks/results/graph_search.json]

Each query names the entities it should find (all the tasks of one topic, or one initiative):
paraphrases, where meaning matters, and queries with the files' own words, some naming an
identifier (`task-12`), for which recall uses its second weight. For each weight from 0 to 1
the script reports MRR and recall@5 of the plain queries (ranked with `semantic_weight` = w)
and of those naming an identifier (`identifier_weight` = w); the best of each (MRR + R@5,
ties to the nearer of 0.7 and 0.5, the starting points) is what `gitmem/graph/search.py`
ships.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from _common import machine, write_json  # noqa: E402

QUERIES: list[tuple[str, str, str]] = [
    # (kind, query, the topic or initiative key it should find)
    ("paraphrase", "users are signed out after a short time", "login sessions expire too early"),
    ("paraphrase", "forgot my password mail never arrives", "password reset emails"),
    ("paraphrase", "throttle how many requests clients can make", "rate limiting the public API"),
    ("paraphrase", "download receipts as documents", "billing invoices in PDF"),
    ("paraphrase", "order of hits when looking things up", "search results ranking"),
    ("paraphrase", "alerts on phones", "mobile push notifications"),
    ("paraphrase", "upgrade the SQL server version", "database migration to Postgres 16"),
    ("paraphrase", "night theme for the admin screens", "dark mode for the dashboard"),
    ("paraphrase", "rework how people log in", "auth-revamp"),
    ("paraphrase", "payments, taxes and receipts", "billing-v2"),
    ("paraphrase", "keep the site up and fast", "platform-health"),
    ("words", "password reset", "password reset emails"),
    ("words", "PDF invoices", "billing invoices in PDF"),
    ("words", "Postgres 16 migration", "database migration to Postgres 16"),
    ("words", "push notifications", "mobile push notifications"),
    ("words", "rate limiting", "rate limiting the public API"),
    ("words", "billing v2", "billing-v2"),
    ("words", "task-12", "task-12"),  # the rest name an identifier (recall's fusion.has_identifier)
    ("words", "what blocks task-31", "task-31"),
    ("words", "auth-revamp initiative", "auth-revamp"),
    ("words", "platform-health", "platform-health"),
    ("paraphrase", "is task-20 about notifications on phones", "task-20"),
]
WEIGHTS = [round(w / 10, 1) for w in range(11)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--json", default="benchmarks/results/graph_search.json")
    args = parser.parse_args()
    os.environ.setdefault("HOME", tempfile.mkdtemp())
    from graphfixture import INITIATIVES, PROJECT, TASKS, TOPICS, write_project

    from gitmem.api import Store
    from gitmem.graph.indexer import Watched
    from gitmem.graph.search import graph_search, search_options
    from gitmem.index.model import configured_model
    from gitmem.recall.fusion import has_identifier

    base = Path(tempfile.mkdtemp(prefix="gitmem-graph-search-"))
    project = write_project(base / "work")
    store, _ = Store.init(base / "store")
    store = Store.open(base / "store")
    model = configured_model(str(Path(args.model).resolve()), store.root, None)
    store.use_model(model)
    store.graph.index_all(Watched(project, PROJECT, ("docs", "notes")))
    store.index()
    graph = store.graph.graph()
    by_path = {e.path: e.id for e in graph.entities.values()}
    relevant: dict[str, set[str]] = {}
    for i in range(1, TASKS + 1):
        relevant.setdefault(TOPICS[i % len(TOPICS)], set()).add(by_path[f"docs/tasks/task-{i}.md"])
    for key, _, _ in INITIATIVES:
        relevant[key] = {by_path[f"docs/initiatives/{key}.md"]}
    for i in range(1, TASKS + 1):
        relevant[f"task-{i}"] = {by_path[f"docs/tasks/task-{i}.md"]}

    rows: list[dict[str, Any]] = []
    for weight in WEIGHTS:
        options = search_options(weight, weight)
        scores: dict[str, list[tuple[float, float]]] = {}
        for kind, query, target in QUERIES:
            hits, _ = graph_search(
                store.recall, graph, query, limit=10, now=graph_now(), options=options
            )
            ids = [h["id"] for h in hits]
            wanted = relevant[target]
            rank = next((n for n, rid in enumerate(ids, 1) if rid in wanted), None)
            mrr = 1 / rank if rank else 0.0
            recall5 = len(wanted & set(ids[:5])) / min(5, len(wanted))
            scores.setdefault(kind, []).append((mrr, recall5))
            group = "identifier" if has_identifier(query) else "plain"
            scores.setdefault(group, []).append((mrr, recall5))
            scores.setdefault("all", []).append((mrr, recall5))
        row: dict[str, Any] = {"semantic_weight": weight}
        for kind, values in scores.items():
            row[f"{kind}_mrr"] = round(sum(v[0] for v in values) / len(values), 3)
            row[f"{kind}_recall5"] = round(sum(v[1] for v in values) / len(values), 3)
        rows.append(row)
        print(
            f"w={weight:.1f}  plain MRR {row['plain_mrr']:.3f} R@5 {row['plain_recall5']:.3f}  "
            f"identifier MRR {row['identifier_mrr']:.3f} R@5 {row['identifier_recall5']:.3f}  "
            f"(paraphrase MRR {row['paraphrase_mrr']:.3f}, words MRR {row['words_mrr']:.3f})"
        )
    for group, start in (("plain", 0.7), ("identifier", 0.5)):
        best = max(
            rows,
            key=lambda r: (
                r[f"{group}_mrr"] + r[f"{group}_recall5"],
                -abs(r["semantic_weight"] - start),
            ),
        )
        print(f"best weight for {group} queries: {best['semantic_weight']}")
    write_json(
        args.json,
        {"machine": machine(), "model": args.model, "queries": len(QUERIES), "rows": rows},
    )


def graph_now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


if __name__ == "__main__":
    main()
