"""A full rebuild with the code of two git revisions, alternated in one run (a ratio is what a
shared machine can measure honestly).

    .venv/bin/python benchmarks/ab_rebuild.py --base 683fa24 --records 20000 \
        --model benchmarks/.models/minilm-distilled-256

`--store DIR` rebuilds a store made earlier (its config must name the model) instead of
making one; `--json FILE` writes the times. Each rebuild's peak resident memory (MB, the
child's ru_maxrss) is printed beside its time, and the CPU seconds of the rebuilding process
("main") and of its worker processes ("workers"), which tell the two apart on a loaded host.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _common import checkout, machine, run_code, write_json
from bench_recall import store_for

TIMED = """
import resource, time
from pathlib import Path
from gitmem.api import Store
store = Store.open(Path({root!r}))
store.model().get()
start, cpu = time.perf_counter(), time.process_time()
store.rebuild()
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
      time.process_time() - cpu, kids.ru_utime + kids.ru_stime)
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
        peaks: dict[str, list[float]] = {"base": [], "head": []}
        cpus: dict[str, list[tuple[float, float]]] = {"base": [], "head": []}
        for _ in range(args.rounds):
            for name, source in sources.items():
                took, peak, main_cpu, workers_cpu = run_code(
                    source, TIMED.format(root=str(root))
                ).split()
                times[name].append(float(took))
                peaks[name].append(float(peak))
                cpus[name].append((float(main_cpu), float(workers_cpu)))
                print(
                    f"{name}: {float(took):.1f} s, CPU main {float(main_cpu):.1f} s, "
                    f"workers {float(workers_cpu):.1f} s",
                    flush=True,
                )
    for name, values in times.items():
        shown = (f"{v:.1f} s ({p:.0f} MB)" for v, p in zip(values, peaks[name], strict=True))
        print(f"{name} ({getattr(args, name)}): " + ", ".join(shown))
    ratios = [h / b for h, b in zip(times["head"], times["base"], strict=True)]
    print("head / base per round: " + ", ".join(f"{r:.2f}" for r in ratios))
    write_json(
        args.json,
        {
            "machine": machine(),
            "base": args.base,
            "head": args.head,
            **times,
            "ratios": ratios,
            "peak_mb": peaks,
            "cpu_main_workers": cpus,
        },
    )


if __name__ == "__main__":
    main()
