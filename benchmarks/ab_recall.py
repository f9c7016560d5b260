"""Recall in-process with the code of two git revisions, alternated process by process on one
store (a ratio is what a shared machine can measure honestly). Each process warms up with one
recall and then times the 200 queries of bench_recall.py, as bench_recall.py does.

    .venv/bin/python benchmarks/ab_recall.py --base 6499ec2 --store STORE [--rounds 8] \
        [--json benchmarks/results/recall_ab.json]

STORE is a store with a current index whose config names the model (e.g. one bench_recall.py
made); neither revision may change the index format, or the first would rebuild it. When
the head's format differs, give it a copy of the store whose index it has built:
`--head-store COPY` (then each revision reads its own copy of the same records).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

from _common import checkout, machine, run_code, write_json
from bench_recall import IN_PROCESS


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True, help="The revision to compare with.")
    parser.add_argument("--head", default="HEAD")
    parser.add_argument("--store", required=True)
    parser.add_argument("--head-store", help="The head's copy of STORE (default: STORE).")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--json", help="Write the figures here.")
    args = parser.parse_args()
    figures: dict[str, list[dict[str, float]]] = {"base": [], "head": []}
    with tempfile.TemporaryDirectory() as tmp:
        sources = {}
        for name, revision in (("base", args.base), ("head", args.head)):
            (Path(tmp) / name).mkdir()
            sources[name] = checkout(revision, Path(tmp) / name)
        for round_ in range(args.rounds):
            order = ("base", "head") if round_ % 2 == 0 else ("head", "base")
            for name in order:
                store = args.head_store if name == "head" and args.head_store else args.store
                out = run_code(sources[name], IN_PROCESS, str(Path(store).resolve()))
                figure = json.loads(out.strip().splitlines()[-1])
                figure["load_average"] = os.getloadavg()[0]
                figures[name].append(figure)
                print(
                    f"{name}: p50 {figure['p50_ms']:.1f} ms, p95 {figure['p95_ms']:.1f} ms, "
                    f"CPU p50 {figure['cpu_p50_ms']:.1f} ms (load {figure['load_average']:.2f})",
                    flush=True,
                )
    summary = {
        name: {
            key: statistics.median(f[key] for f in values)
            for key in ("p50_ms", "p95_ms", "cpu_p50_ms", "max_rss_mb")
        }
        for name, values in figures.items()
    }
    ratios = [
        h["p50_ms"] / b["p50_ms"] for h, b in zip(figures["head"], figures["base"], strict=True)
    ]
    for name, values in summary.items():
        print(
            f"{name} ({getattr(args, name)}), median of {args.rounds} processes: "
            f"p50 {values['p50_ms']:.1f} ms, p95 {values['p95_ms']:.1f} ms"
        )
    print("head / base p50 per round: " + ", ".join(f"{r:.2f}" for r in ratios))
    print(f"median ratio {statistics.median(ratios):.2f}")
    write_json(
        args.json,
        {
            "machine": machine(),
            "base": args.base,
            "head": args.head,
            "store": args.store,
            "head_store": args.head_store or args.store,
            "summary": summary,
            "ratios": ratios,
            **figures,
        },
    )


if __name__ == "__main__":
    main()
