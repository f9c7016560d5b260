"""The grid behind recall's context settings (issue 21): LoCoMo's development half, or the
coding-agent set, under every combination of context weight, source prior and semantic share,
one store per conversation built once (benchmarks/locomo.py, bench_locomo.py). Prints each
configuration's overall means (no bootstrap: bench_locomo.py gives it for the chosen one).

    .venv/bin/python benchmarks/context_grid.py MODEL_DIR \
        [--dataset benchmarks/retrieval/coding-agent]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path

from bench_locomo import _eval_dataset
from locomo import DATA, measure

from gitmem.recall.recall import DEFAULTS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--dataset", type=Path)
    args = parser.parse_args()
    configs = {
        f"cw={cw} p={p} sw={sw}": replace(
            DEFAULTS, context_weight=cw, source_prior=p, semantic_weight=sw
        )
        for cw in (0.0, 0.25, 0.5, 0.75, 1.0)
        for p in (0.0, 0.5, 1.0)
        for sw in (0.2, 0.3)
    }
    with tempfile.TemporaryDirectory() as tmp:
        if args.dataset:
            scores, _ = _eval_dataset(args.dataset, args.model, configs, Path(tmp))
        else:
            samples = json.loads(DATA.read_text(encoding="utf-8"))
            scores = measure(samples, args.model, configs, Path(tmp))
    for name, rows in scores.items():
        means = {k: statistics.mean(r[k] for _, r in rows) for k in ("r@5", "r@10", "ndcg@10")}
        print(name, " ".join(f"{k}={v:.3f}" for k, v in means.items()), flush=True)


if __name__ == "__main__":
    main()
