"""Choose recall's defaults by measurement on two datasets: the coding-agent set
(benchmarks/retrieval/coding-agent) and LoCoMo's development half (benchmarks/locomo.py).

Stage 1: fusion method and semantic weight, decay and weight factors off.
Stage 2: decay half-life and floor, and the weight factor, on the best fusion; a setting is
admissible only if it costs old-fact R@5 at most 1 point against decay off and keeps
Options.close (the share of a record's relevance that recency and weight may overturn) at
0.75 or more. The objective of both stages is the mean of the coding-agent set's macro
NDCG@10 (over its six query kinds) and LoCoMo's NDCG@10: neither set alone decides.

    .venv/bin/python benchmarks/tune_recall.py --model benchmarks/.models/minilm-distilled-256
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
from dataclasses import replace
from pathlib import Path

from locomo import DATA, stores

from gitmem.evaluate import load_queries, model_ref, run_queries, score, store_for
from gitmem.recall.recall import DEFAULTS, Options

CLOSE = 0.75  # the least Options.close a setting may have


def measure(store, queries, options: Options) -> dict[str, float]:  # type: ignore[no-untyped-def]
    rankings = run_queries(store, queries, options)
    per = [score(r, q.gold) for q, r in zip(queries, rankings, strict=True)]
    cats = sorted({q.category for q in queries})
    out = {"ndcg@10": sum(p["ndcg@10"] for p in per) / len(per)}
    out["macro_ndcg@10"] = sum(
        sum(p["ndcg@10"] for p, q in zip(per, queries, strict=True) if q.category == c)
        / sum(q.category == c for q in queries)
        for c in cats
    ) / len(cats)
    for c in cats:
        members = [p for p, q in zip(per, queries, strict=True) if q.category == c]
        out[f"{c}:r@5"] = sum(p["r@5"] for p in members) / len(members)
        out[f"{c}:ndcg@10"] = sum(p["ndcg@10"] for p in members) / len(members)
    return out


class LoCoMo:
    """LoCoMo's development half, one store per conversation, kept for every setting."""

    def __init__(self, data: Path, model: str, work: Path) -> None:
        self.stores = stores(json.loads(data.read_text(encoding="utf-8")), model, work)

    def ndcg(self, options: Options) -> float:
        per = [
            score(ranked, q.gold)["ndcg@10"]
            for store, queries in self.stores
            for q, ranked in zip(queries, run_queries(store, queries, options), strict=True)  # type: ignore[arg-type]
        ]
        return sum(per) / len(per)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", default="benchmarks/retrieval/coding-agent")
    parser.add_argument("--model", required=True)
    parser.add_argument("--locomo", type=Path, default=DATA)
    parser.add_argument("--json")
    args = parser.parse_args()
    folder = Path(args.dataset)
    queries = load_queries(folder / "queries.jsonl")
    with tempfile.TemporaryDirectory() as tmp:
        store = store_for(folder, model_ref(args.model), Path(tmp) / "coding-agent")
        locomo = LoCoMo(args.locomo, args.model, Path(tmp))

        def both(options: Options) -> dict[str, float]:
            figures = measure(store, queries, options)
            figures["locomo:ndcg@10"] = locomo.ndcg(options)
            figures["objective"] = (figures["macro_ndcg@10"] + figures["locomo:ndcg@10"]) / 2
            return figures

        flat = replace(DEFAULTS, half_life_days=0.0, weight_strength=0.0)
        stage1 = []
        grid = [("rrf", "minmax")] + [("linear", s) for s in ("minmax", "max", "ceiling")]
        for (fusion, scaling), w, iw in itertools.product(
            grid, (0.2, 0.3, 0.4, 0.5, 0.6), (0.1, 0.2, 0.3)
        ):
            settings = {
                "fusion": fusion,
                "scaling": scaling,
                "semantic_weight": w,
                "identifier_weight": iw,
            }
            figures = both(replace(flat, mode="hybrid", **settings))
            stage1.append((settings, figures))
            print(
                f"{fusion:<6} {scaling:<6} w={w:.1f} id-w={iw:.1f}  "
                f"objective {figures['objective']:.3f}  macro {figures['macro_ndcg@10']:.3f}  "
                f"locomo {figures['locomo:ndcg@10']:.3f}  "
                f"paraphrase {figures['paraphrase:ndcg@10']:.3f}  "
                f"exact-id {figures['exact-id:ndcg@10']:.3f}",
                flush=True,
            )
        best1 = max(stage1, key=lambda item: item[1]["objective"])[0]
        base = replace(flat, mode="hybrid", **best1)
        reference = both(base)
        stage2 = []
        for half, floor, strength in itertools.product(
            (7.0, 14.0, 30.0), (0.8, 0.85, 0.9, 0.95), (0.0, 0.025, 0.05, 0.1)
        ):
            opts = replace(base, half_life_days=half, decay_floor=floor, weight_strength=strength)
            if opts.close < CLOSE:
                continue
            figures = both(opts)
            cost = reference["old-fact:r@5"] - figures["old-fact:r@5"]
            stage2.append(
                (
                    {"half_life_days": half, "decay_floor": floor, "weight_strength": strength},
                    figures,
                    cost,
                )
            )
            print(
                f"half-life {half:>5.0f} floor {floor:.2f} weight {strength:.2f}  "
                f"objective {figures['objective']:.3f}  macro {figures['macro_ndcg@10']:.3f}  "
                f"locomo {figures['locomo:ndcg@10']:.3f}  "
                f"temporal {figures['temporal:ndcg@10']:.3f}"
                f"  old-fact R@5 cost {cost * 100:+.1f} pts",
                flush=True,
            )
        admissible = [s for s in stage2 if s[2] <= 0.01]
        best2 = max(admissible, key=lambda item: item[1]["objective"])
        print("best fusion:", best1, "best decay:", best2[0])
        if args.json:
            Path(args.json).write_text(
                json.dumps(
                    {
                        "stage1": stage1,
                        "stage2": stage2,
                        "reference": reference,
                        "best": {**best1, **best2[0]},
                    },
                    indent=2,
                )
                + "\n"
            )


if __name__ == "__main__":
    main()
