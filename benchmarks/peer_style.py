"""Recall on the corpus shape of the side-by-side with basic-memory (issue 25): many short
coding-agent notes with similar titles, and three kinds of query.

Each note is about one library and two problems, of one kind ("anyio gotcha: cors
headers"), a unique combination, so titles share most of their words with many others; its
body says what happened in two sentences and carries four identifiers: a task id, a path, a
short commit sha and an environment variable. Query kinds, one target note each:
- keyword: the target's four title words (library, kind, problems) in another order, which
  only the target holds all of;
- paraphrase: the library's name and the problems in other words ("cross-origin requests"
  for cors), which the note does not contain;
- identifier: one of its identifiers alone.

    .venv/bin/python benchmarks/peer_style.py --sizes 1000,10000 \
        --model benchmarks/.models/minilm-distilled-256 [--queries 100] [--json OUT]

Reports hit@1, hit@10 and MRR per kind for plain BM25 (keyword mode, decay and weight off),
keyword, semantic and hybrid recall with the defaults.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import machine, write_json
from locomo import configurations

from gitmem.evaluate import Query, model_ref, run_queries, store_for
from gitmem.recall.recall import DEFAULTS

LIBRARIES = (
    "anyio fastapi pydantic celery redis postgres sqlalchemy httpx pytest docker nginx "
    "terraform react vite webpack kafka grpc boto3 django flask"
).split()
# Each problem word, and what a person who forgot the word might say instead.
PROBLEMS = {
    "cors": "cross-origin browser requests",
    "headers": "http response fields",
    "timeout": "calls taking too long",
    "leak": "memory keeps growing",
    "deadlock": "threads stuck waiting on each other",
    "retry": "trying again after a failure",
    "migration": "schema change rollout",
    "cache": "stored results going stale",
    "pool": "reusing database connections",
    "race": "concurrent updates clobbering each other",
    "encoding": "garbled unicode characters",
    "upload": "sending large files",
    "pagination": "splitting results into pages",
    "auth": "logging users in",
    "token": "expired access credentials",
    "cookie": "browser session storage",
    "batch": "processing many items at once",
    "lock": "exclusive access to a resource",
    "queue": "jobs waiting to be processed",
    "serialization": "turning objects into json",
    "logging": "log lines missing",
    "startup": "slow boot of the service",
    "shutdown": "stopping the process cleanly",
    "dns": "hostname resolution failures",
}
KINDS = ("gotcha", "fix", "workaround", "decision", "lesson", "pattern")
OUTCOMES = (
    "requests failed in staging until we changed it",
    "the tests passed locally but broke in CI",
    "it only showed up under load",
    "the default setting was wrong for us",
    "the upgrade changed the behaviour silently",
)
RESOLUTIONS = (
    "pinned the version and added a regression test",
    "moved the setting into configuration",
    "wrapped the call and logged the failure",
    "rewrote the handler to do it explicitly",
    "documented it in the runbook",
)


def corpus(count: int, seed: int = 11) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    combos = [
        (lib, kind, *pair)
        for lib in LIBRARIES
        for kind in KINDS
        for pair in itertools.combinations(sorted(PROBLEMS), 2)
    ]
    rng.shuffle(combos)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    notes = []
    for i, (lib, kind, a, b) in enumerate(combos[:count]):
        if rng.random() < 0.5:
            a, b = b, a
        stamp = (start + timedelta(minutes=53 * i)).strftime("%Y-%m-%dT%H:%M:%SZ")
        sha = f"{rng.getrandbits(28):07x}"
        task = f"TASK-{1000 + i}"
        path = f"src/{lib}/{a}_{b}.py"
        env = f"{lib.upper()}_{a.upper()}_{i}"
        body = (
            f"With {lib}, {a} and {b}: {rng.choice(OUTCOMES)}. "
            f"We {rng.choice(RESOLUTIONS)}.\n\n{task}, {path}, commit {sha}, {env}.\n"
        )
        notes.append(
            {
                "id": f"{lib}-{a}-{b}-{i:05x}",
                "type": "note",
                "title": f"{lib} {kind}: {a} {b}",
                "body": body,
                "tags": [lib],
                "created": stamp,
                "updated": stamp,
                "_identifiers": (task, path, sha, env),
                "_words": (lib, kind, a, b),
            }
        )
    return notes


def queries(notes: list[dict[str, Any]], per_kind: int, seed: int = 5) -> list[Query]:
    rng = random.Random(seed)
    out = []
    now = "2026-12-01T00:00:00Z"
    for n, note in enumerate(rng.sample(notes, min(per_kind, len(notes)))):
        words = list(note["_words"])  # the target alone holds all four
        rng.shuffle(words)
        text = " ".join(words)
        out.append(Query(f"kw{n}", text, "keyword", (note["id"],), now))
    for n, note in enumerate(rng.sample(notes, min(per_kind, len(notes)))):
        lib, _, a, b = note["_words"]
        out.append(
            Query(
                f"pp{n}", f"{lib} {PROBLEMS[a]} and {PROBLEMS[b]}", "paraphrase", (note["id"],), now
            )
        )
    for n, note in enumerate(rng.sample(notes, min(per_kind, len(notes)))):
        out.append(
            Query(f"id{n}", rng.choice(note["_identifiers"]), "identifier", (note["id"],), now)
        )
    return out


def reciprocal_ranks(rankings: list[list[str]], qs: list[Query], kind: str) -> list[float]:
    rows = [(r, q) for r, q in zip(rankings, qs, strict=True) if q.category == kind]
    ranks = [next((i for i, rid in enumerate(r) if rid in q.gold), None) for r, q in rows]
    return [0.0 if k is None else 1 / (k + 1) for k in ranks]


def against(mine: list[float], base: list[float], resamples: int = 2000) -> list[float]:
    """The mean paired difference of MRR and its 95% bootstrap interval."""
    rng = random.Random(0)
    diffs = [a - b for a, b in zip(mine, base, strict=True)]
    means = sorted(sum(rng.choice(diffs) for _ in diffs) / len(diffs) for _ in range(resamples))
    mean = sum(diffs) / len(diffs)
    return [
        round(mean, 3),
        round(means[int(0.025 * resamples)], 3),
        round(means[int(0.975 * resamples)], 3),
    ]


def figures(rankings: list[list[str]], qs: list[Query]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for kind in ("keyword", "paraphrase", "identifier"):
        rows = [(r, q) for r, q in zip(rankings, qs, strict=True) if q.category == kind]
        ranks = [next((i for i, rid in enumerate(r) if rid in q.gold), None) for r, q in rows]
        out[kind] = {
            "n": len(rows),
            "hit@1": round(sum(k == 0 for k in ranks) / len(rows), 3),
            "hit@10": round(sum(k is not None and k < 10 for k in ranks) / len(rows), 3),
            "mrr": round(sum(1 / (k + 1) for k in ranks if k is not None) / len(rows), 3),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--queries", type=int, default=100, help="per kind")
    parser.add_argument("--model")
    parser.add_argument("--json")
    args = parser.parse_args()
    report: dict[str, Any] = {"machine": machine(), "sizes": {}}
    for size in (int(s) for s in args.sizes.split(",")):
        notes = corpus(size)
        qs = queries(notes, args.queries)
        with tempfile.TemporaryDirectory(prefix="gitmem-peer-") as tmp:
            folder = Path(tmp)
            lines = "".join(
                json.dumps({k: v for k, v in n.items() if not k.startswith("_")}) + "\n"
                for n in notes
            )
            (folder / "records.jsonl").write_text(lines, encoding="utf-8")
            store = store_for(folder, model_ref(args.model) if args.model else None, folder)
            report["sizes"][size] = {}
            base: list[list[str]] = []
            for name, options in configurations(DEFAULTS, args.model is not None).items():
                rankings = run_queries(store, qs, options)
                base = base or rankings  # plain BM25 comes first
                got: dict[str, Any] = figures(rankings, qs)
                for kind in got:
                    got[kind]["mrr_minus_bm25"] = against(
                        reciprocal_ranks(rankings, qs, kind), reciprocal_ranks(base, qs, kind)
                    )
                report["sizes"][size][name] = got
                for kind, f in got.items():
                    print(
                        f"{size:>6} {name:9} {kind:11} "
                        + " ".join(f"{k}={v}" for k, v in f.items()),
                        flush=True,
                    )
    write_json(args.json, report)


if __name__ == "__main__":
    main()
