"""Recall on LoCoMo's development half: turn-level evidence retrieval, no LLM.

One store per conversation, one record per dialog turn (body "<speaker>: <text>", plus
" [shares <caption>]" when the turn shared an image; title "<speaker>, session N"), created at
its session's date and time plus 30 s per turn; each question is a query, asked after the last
session; a hit is a turn its evidence lists. Category 5 (adversarial: nothing to find) is left
out, as in most follow-up work. The dataset's README (../shared/datasets/locomo-dev/) says
where it comes from and its license: it is read from there and never copied into the project.

    .venv/bin/python benchmarks/locomo.py --model benchmarks/.models/minilm-distilled-256 \
        [--data ../shared/datasets/locomo-dev/locomo-dev.json] [--json OUT]

Prints R@5, R@10 and NDCG@10 per mode, overall and per category, for plain BM25 (keyword
mode with decay and weight off), keyword, semantic and hybrid recall with the defaults.
benchmarks/bench_locomo.py builds on this module: paired bootstraps against a baseline, and
the probe of context and a source prior (issue 21).
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gitmem.api import Store
from gitmem.evaluate import Query, model_ref, run_queries, score, store_for
from gitmem.index.model import ModelRef
from gitmem.recall.recall import DEFAULTS, Options

DATA = Path(__file__).resolve().parents[2] / "shared/datasets/locomo-dev/locomo-dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")


def turn_id(dia: str) -> str | None:
    """A record id for a dialog id: `D3:12`, `D:3:12` and `D3:012` all name turn d3-12."""
    m = _EVIDENCE.fullmatch(dia.strip())
    return f"d{int(m[1])}-{int(m[2])}" if m else None


def _when(text: str) -> datetime:
    """LoCoMo's session stamps: "1:56 pm on 8 May, 2023"."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def _sessions(conversation: dict[str, Any]) -> Iterator[tuple[int, datetime, list[Any]]]:
    numbers = sorted(
        int(k.split("_")[1])
        for k in conversation
        if re.fullmatch(r"session_\d+", k) and conversation[k]
    )
    for n in numbers:
        yield n, _when(conversation[f"session_{n}_date_time"]), conversation[f"session_{n}"]


def dataset(sample: dict[str, Any]) -> tuple[list[dict[str, Any]], list[Query]]:
    """One conversation as records and queries (gitmem.evaluate's dataset shape)."""
    records: list[dict[str, Any]] = []
    last = datetime(1970, 1, 1, tzinfo=UTC)
    for number, start, turns in _sessions(sample["conversation"]):
        for i, turn in enumerate(turns):
            rid = turn_id(turn["dia_id"])
            if rid is None:
                continue
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares {turn['blip_caption']}]"
            stamp = (start + timedelta(seconds=30 * i)).strftime("%Y-%m-%dT%H:%M:%SZ")
            records.append(
                {
                    "id": rid,
                    "type": "turn",
                    "title": f"{turn['speaker']}, session {number}",
                    "body": text,
                    "source": f"session:{number}",
                    "created": stamp,
                    "updated": stamp,
                }
            )
            last = max(last, start + timedelta(seconds=30 * i))
    known = {r["id"] for r in records}
    now = (last + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    queries = []
    for n, qa in enumerate(sample["qa"]):
        category = CATEGORIES.get(int(qa.get("category", 5)))
        evidence = [e for part in qa.get("evidence") or [] for e in str(part).split(";")]
        gold = tuple(sorted({g for e in evidence if (g := turn_id(e)) in known}))
        if category is None or not gold:
            continue
        queries.append(
            Query(f"{sample['sample_id']}-{n}", str(qa["question"]), category, gold, now)
        )
    return records, queries


def configurations(options: Options, with_model: bool) -> dict[str, Options]:
    flat = replace(options, half_life_days=0.0, weight_strength=0.0)
    out = {"bm25": replace(flat, mode="keyword"), "keyword": replace(options, mode="keyword")}
    if with_model:
        out["semantic"] = replace(options, mode="semantic")
        out["hybrid"] = replace(options, mode="hybrid")
    return out


def store_of(records: Sequence[dict[str, Any]], ref: ModelRef | None, folder: Path) -> Store:
    """An indexed store of `records`, made through the product in a new `folder`."""
    folder.mkdir()
    (folder / "records.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8"
    )
    return store_for(folder, ref, folder)


def stores(samples: Sequence[dict[str, Any]], model: str | None, work: Path) -> list[Any]:
    """One indexed store per conversation, with its queries: [(store, queries)]."""
    ref = model_ref(model) if model else None
    out = []
    for sample in samples:
        records, queries = dataset(sample)
        out.append((store_of(records, ref, work / sample["sample_id"]), queries))
    return out


def measure(
    samples: Sequence[dict[str, Any]], model: str | None, configs: dict[str, Options], work: Path
) -> dict[str, list[tuple[Query, dict[str, float]]]]:
    """Each configuration's per-query scores over every conversation."""
    out: dict[str, list[tuple[Query, dict[str, float]]]] = {name: [] for name in configs}
    for store, queries in stores(samples, model, work):
        for name, options in configs.items():
            for q, ranked in zip(queries, run_queries(store, queries, options), strict=True):
                out[name].append((q, score(ranked, q.gold)))
    return out


def table(scores: dict[str, list[tuple[Query, dict[str, float]]]]) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for name, rows in scores.items():
        groups: dict[str, list[dict[str, float]]] = {"all": [s for _, s in rows]}
        for q, s in rows:
            groups.setdefault(q.category, []).append(s)
        report[name] = {
            group: {"n": len(ss)}
            | {m: round(sum(s[m] for s in ss) / len(ss), 4) for m in ("r@5", "r@10", "ndcg@10")}
            for group, ss in groups.items()
        }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--model")
    parser.add_argument("--json")
    args = parser.parse_args()
    samples = json.loads(args.data.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="gitmem-locomo-") as tmp:
        scores = measure(
            samples, args.model, configurations(DEFAULTS, args.model is not None), Path(tmp)
        )
    report = table(scores)
    for name, groups in report.items():
        for group, figures in groups.items():
            print(f"{name:9} {group:12} " + " ".join(f"{k}={v}" for k, v in figures.items()))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
