"""How long a writer of a large index holds the index lock for the vector graph, before and
after the graph was built outside it (issue 24), and what the builder then costs.

    nice python benchmarks/ann_lock.py --vectors V.npy [--rows N] [--json OUT]
    PYTHONPATH=/path/to/older/checkout nice python benchmarks/ann_lock.py ...   # before

Lays the first N vectors out as an index's vector file in a temporary directory, then times
the graph step of the first write that needs a graph (a rebuild, or the catch-up that
crosses the threshold), and of the next write that finds it there, one row behind. With the
gitmem that builds in the writer (`ann.refresh`) the first is the whole build, on one thread;
with the one that leaves it to the builder (`ann.plan`), it is the plan, and the builder's
own time (gitmem.index.annbuild: `ann.prepare` on `annbuild.THREADS` threads, `ann.install`)
is reported beside it. Wall and CPU seconds (this process, all threads).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from ann_build import emit

from gitmem.index import ann
from gitmem.index.vectors import VectorFile


def timed(step: Callable[[], Any]) -> tuple[Any, float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    out = step()
    return out, round(time.perf_counter() - wall, 3), round(time.process_time() - cpu, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", required=True)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--json", help="Append the result as one JSON line to this file.")
    args = parser.parse_args()
    vectors = np.ascontiguousarray(np.load(args.vectors)[: args.rows + 1], dtype=np.float32)
    if vectors.shape[0] < 2:
        parser.error(f"{args.vectors} has fewer than two vectors")
    rows, dim = min(args.rows, vectors.shape[0] - 1), vectors.shape[1]  # one more: the next write
    ann.THRESHOLD = min(ann.THRESHOLD, rows)
    out: dict[str, Any] = {"rows": rows, "gitmem": ann.__file__, "load": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        file = VectorFile(root / "vectors.f32", dim)
        file.append(vectors[:rows])
        dead = np.zeros(rows + 1, dtype=bool)
        if hasattr(ann, "refresh"):  # the writer builds the graph, in the lock
            _, out["first_write_s"], out["first_write_cpu_s"] = timed(
                lambda: ann.refresh(root, file.path.name, file.matrix(rows), dead[:rows])
            )
            file.append(vectors[rows:])
            _, out["next_write_s"], out["next_write_cpu_s"] = timed(
                lambda: ann.refresh(root, file.path.name, file.matrix(rows + 1), dead)
            )
        else:  # the writer plans, the builder builds
            from gitmem.index import annbuild

            plan, out["first_write_s"], out["first_write_cpu_s"] = timed(
                lambda: ann.plan(root, file.path.name, rows, dead[:rows], dim)
            )
            assert plan.build, plan
            threads = annbuild.THREADS
            prepared, out["builder_prepare_s"], out["builder_prepare_cpu_s"] = timed(
                lambda: ann.prepare(
                    root, file.path.name, file.matrix(rows), dead[:rows], threads=threads
                )
            )
            _, out["builder_install_s"], _ = timed(lambda: ann.install(root, prepared))
            out["builder_threads"] = threads
            file.append(vectors[rows:])
            plan, out["next_write_s"], out["next_write_cpu_s"] = timed(
                lambda: ann.plan(root, file.path.name, rows + 1, dead, dim)
            )
            assert not plan.build, plan
    emit(out, args.json)


if __name__ == "__main__":
    main()
