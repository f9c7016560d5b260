"""What context costs the index at scale (issue 21): a store whose records have sources and
links, and the catch-up after a run of commits on it.

    .venv/bin/python benchmarks/bench_context.py make --records 100000 \
        --model benchmarks/.models/minilm-distilled-256 --out DIR
    .venv/bin/python benchmarks/bench_context.py catchup --store DIR --commits 100 --rounds 3

`make` imports bench_recall.py's synthetic records (one commit), each source holding
`--per-source` of them in time order (a working session) and every tenth record linking the
one before it, configures the model and builds the index. Its full rebuild and its recall
are timed by ab_rebuild.py and ab_recall.py (`--store DIR`). `catchup` makes `--commits`
records in a row (each its own commit, in one source, the first linking an old record),
then times the catch-up of the index in this process; rounds alternate on one store.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _common import machine, median, synthetic_items, write_json
from bench_recall import configure_model

from gitmem.api import Store


def make(records: int, per_source: int, model: str, out: Path) -> None:
    items = list(synthetic_items(records))
    for n, item in enumerate(items):
        item["source"] = f"session:{n // per_source}"
        if n % 10 == 9:
            item["links"] = [items[n - 1]["id"]]
    store, _ = Store.init(out)
    store.import_records(iter(items), agent="bench")
    configure_model(out, model)
    start = time.perf_counter()
    Store.open(out).recall("warm up")
    print(f"made {out}: {records} records, index built in {time.perf_counter() - start:.1f} s")


def catchup(root: Path, commits: int, rounds: int) -> dict[str, float]:
    store = Store.open(root)
    store.recall("warm up")  # current
    old = next(iter(store.records())).id
    times = []
    for r in range(rounds):
        at = datetime(2027, 1, 1, tzinfo=UTC) + timedelta(days=r)
        for n in range(commits):
            store.record(
                "fact",
                f"catch-up round {r} note {n}: the ingest worker retried the batch",
                title=f"note {n}",
                agent="bench",
                source=f"bench-session-{r}",
                links=[old] if n == 0 else [],
                now=at + timedelta(seconds=n),
            )
        start = time.perf_counter()
        store.index().ensure_current()
        times.append(time.perf_counter() - start)
    return {"median_s": median(times), "runs_s": times}  # type: ignore[dict-item]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    m = sub.add_parser("make")
    m.add_argument("--records", type=int, default=100_000)
    m.add_argument("--per-source", type=int, default=25)
    m.add_argument("--model", required=True)
    m.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("catchup")
    c.add_argument("--store", type=Path, required=True)
    c.add_argument("--commits", type=int, default=100)
    c.add_argument("--rounds", type=int, default=3)
    c.add_argument("--json")
    args = parser.parse_args()
    if args.what == "make":
        make(args.records, args.per_source, args.model, args.out)
        return
    figures = {"machine": machine(), **catchup(args.store, args.commits, args.rounds)}
    print(json.dumps(figures, indent=2))
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
