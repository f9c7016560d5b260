"""A full rebuild with the code of two git revisions, alternated in one run (a ratio is what a
shared machine can measure honestly).

    .venv/bin/python benchmarks/ab_rebuild.py --base 683fa24 --records 20000 \
        --model benchmarks/.models/minilm-distilled-256

`--store DIR` rebuilds a store made earlier (its config must name the model) instead of
making one; `--json FILE` writes the times.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _common import checkout, machine, run_code, write_json
from bench_recall import store_for

TIMED = """
import time
from pathlib import Path
from gitmem.api import Store
store = Store.open(Path({root!r}))
store.model().get()
start = time.perf_counter()
store.rebuild()
print(time.perf_counter() - start)
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True, help="The revision to compare with.")
    parser.add_argument("--head", default="HEAD")
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--model", required=True)
    parser.add_argument("--store", help="Rebuild this store (a copy of one made before).")
    parser.add_argument("--json", help="Write the figures here.")
    args = parser.parse_args()
    root = store_for(args.store, args.records, args.model)
    with tempfile.TemporaryDirectory() as tmp:
        sources = {}
        for name, revision in (("base", args.base), ("head", args.head)):
            (Path(tmp) / name).mkdir()
            sources[name] = checkout(revision, Path(tmp) / name)
        times: dict[str, list[float]] = {"base": [], "head": []}
        for _ in range(args.rounds):
            for name, source in sources.items():
                times[name].append(float(run_code(source, TIMED.format(root=str(root)))))
    for name, values in times.items():
        print(f"{name} ({getattr(args, name)}): " + ", ".join(f"{v:.1f} s" for v in values))
    ratios = [h / b for h, b in zip(times["head"], times["base"], strict=True)]
    print("head / base per round: " + ", ".join(f"{r:.2f}" for r in ratios))
    write_json(
        args.json,
        {"machine": machine(), "base": args.base, "head": args.head, **times, "ratios": ratios},
    )


if __name__ == "__main__":
    main()
