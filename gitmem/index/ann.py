"""Approximate nearest neighbours for the semantic half of a large index (issue 24).

Below `THRESHOLD` live vector rows the semantic half ranks every row exactly (gitmem.index.vectors),
and scores are the same to the last bit everywhere. Above it, where the product over every row
no longer fits a recall's budget (1M rows x 256 float32 is 1 GB read per query), an HNSW graph
from usearch (chosen by measurement: benchmarks/ann_choice.py, docs/scaling.md) proposes the
candidates, and their cosines are then computed exactly from the vector file.

The graph is a cache beside the vector file, like the rest of the index: `ann-<vectors>.usearch`
with a stamp `ann-<vectors>.json` saying which vector file it was built from, how many of its
rows it covers and how many dead rows it has removed. Its keys are vector row numbers. A writer
(the catch-up, a rebuild) brings it up to date from the vector file and the row facts: rows
appended since are added, rows that died since are removed; a compaction names a new vector
file and so starts a new graph. A reader never writes it: rows past what the graph covers are
ranked exactly beside it, and dead rows are filtered out by the row facts, so a graph behind
the index costs time, never answers. A graph that cannot be read (damaged, half-written, from
another usearch) is ignored by readers and built again by the next writer. Its stamp records
the graph file's size and CRC-32: a reader checks the size (a reader maps the graph, and
usearch does not check a mapped file, so a damaged one could crash it), a writer and `gitmem
doctor` the checksum.

The graph is built on one thread: usearch's parallel insertion makes a different graph from
run to run (and so, now and then, different candidates), and the index answers the same for
the same HEAD on any machine. It costs build time on a machine with more cores.

usearch is optional (`pip install 'gitmem[scale]'`): without it every store is ranked exactly,
as before. This module is its only importer.
"""

from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitmem.atomic import replace_file
from gitmem.index.verify import crc32

__all__ = [
    "THRESHOLD",
    "Graph",
    "available",
    "check",
    "drop",
    "graph_paths",
    "open_graph",
    "refresh",
]

# Live rows from which the graph answers: at 200k x 256 dims the exact product reads 200 MB,
# ~20 ms on one core (docs/scaling.md); below it exact is fast enough and bit-exact.
THRESHOLD = 200_000
_KEEP = 0.8  # a graph once built is kept down to this share of THRESHOLD live rows
_VERSION = 2  # 2: the graph file's size and CRC-32
_CONNECTIVITY = 16
_EXPANSION_ADD = 128
# How far the search looks. On the benchmark's vectors (docs/benchmarks.md, "A million
# records") recall@10 against exact at 128 / 256 / 512 was 0.981 / 0.996 / 0.999 for 50k rows
# and 0.953 / 0.981 / 0.991 for 200k (4.7 ms a query at 512, loaded host): it falls as rows grow.
_EXPANSION_SEARCH = 512


def available() -> bool:
    """Whether usearch is installed (the `scale` extra), found without importing it."""
    try:
        return importlib.util.find_spec("usearch") is not None
    except (ImportError, ValueError):
        return False


def graph_paths(root: Path, vectors_name: str) -> tuple[Path, Path]:
    """The graph's file and its stamp, for the vector file named `vectors_name` in `root`."""
    stem = Path(vectors_name).stem
    return root / f"ann-{stem}.usearch", root / f"ann-{stem}.json"


@dataclass(frozen=True)
class Stamp:
    vectors: str
    dim: int
    covered: int  # rows 0..covered-1 of the vector file were offered to the graph
    removed: int  # how many of those were dead, and removed, when it was saved
    size: int  # of the graph file, in bytes
    crc: int  # its CRC-32


def _read_stamp(path: Path) -> Stamp | None:
    try:
        data = json.loads(path.read_text())
        if data.get("version") != _VERSION:
            return None
        fields = ("dim", "covered", "removed", "size", "crc")
        return Stamp(str(data["vectors"]), *(int(data[f]) for f in fields))
    except (OSError, ValueError, KeyError, TypeError):
        return None


class Graph:
    """A graph opened for reading (memory-mapped: opening costs next to nothing)."""

    def __init__(self, index: Any, stamp: Stamp) -> None:
        self._index = index
        self.covered = stamp.covered

    def search(self, query: Any, k: int) -> Any:
        """Row numbers of (about) the `k` nearest rows to `query`, an array of uint64."""
        want = max(k, 1)
        found = self._index.search(query, want, threads=1, exact=False)
        return found.keys[: len(found)]


def open_graph(root: Path, vectors_name: str, dim: int) -> Graph | None:
    """The graph of the vector file `vectors_name`, mapped; None when there is none that can
    be read (not built yet, damaged, another version): the caller ranks exactly."""
    if not available():
        return None
    path, stamp_path = graph_paths(root, vectors_name)
    stamp = _read_stamp(stamp_path)
    if stamp is None or stamp.vectors != vectors_name or stamp.dim != dim:
        return None
    try:
        if path.stat().st_size != stamp.size:
            return None
    except OSError:
        return None
    index = _load(path, view=True)
    if index is None or index.ndim != dim:
        return None
    index.expansion_search = _EXPANSION_SEARCH
    return Graph(index, stamp)


def _load(path: Path, *, view: bool) -> Any:
    from usearch.index import Index

    try:
        return Index.restore(str(path), view=view)
    except (OSError, RuntimeError, ValueError):
        return None


def _new(dim: int) -> Any:
    from usearch.index import Index

    return Index(
        ndim=dim,
        metric="ip",
        dtype="f16",
        connectivity=_CONNECTIVITY,
        expansion_add=_EXPANSION_ADD,
        expansion_search=_EXPANSION_SEARCH,
    )


def refresh(root: Path, vectors_name: str, matrix: Any, dead: Any) -> str | None:
    """Bring the graph of the vector file `vectors_name` up to `matrix` (its live part, rows
    by number, numpy) with `dead` (a boolean array, True for each dead row): add the rows
    appended since, remove the rows that died since. A writer's step, under the index lock.
    Returns a notice when the graph was built anew because the one there could not be used.
    A graph is built from THRESHOLD live rows and removed below `_KEEP` x THRESHOLD, so that
    records come and go around the threshold without a whole graph built each time. Without
    usearch it leaves the graph as it is, for the install that built it (readers here rank
    exactly; rows it lags behind are ranked exactly beside it there)."""
    path, stamp_path = graph_paths(root, vectors_name)
    _drop_others(root, path, stamp_path)
    rows, dim = matrix.shape
    live = rows - int(dead.sum())
    if not available():
        return None
    if live < _KEEP * THRESHOLD or (live < THRESHOLD and not stamp_path.exists()):
        path.unlink(missing_ok=True)
        stamp_path.unlink(missing_ok=True)
        return None
    stamp = _read_stamp(stamp_path)
    intact = stamp is not None and _intact(path, stamp)
    if intact and stamp is not None and _lazy(path, stamp, rows, dead, dim):
        return None
    index, said = None, None
    if stamp is not None and stamp.vectors == vectors_name and stamp.dim == dim:
        index = _load(path, view=False) if intact else None
        if index is None or stamp.covered > rows or len(index) > rows:
            said = f"the search index's vector graph {path.name} is damaged; building it again"
            index = None
    elif path.exists() or stamp_path.exists():
        said = f"the search index's vector graph {path.name} is out of date; building it again"
    if index is None:
        index, stamp = _new(dim), Stamp(vectors_name, dim, 0, 0, 0, 0)
    assert stamp is not None
    gone = dead[: stamp.covered].nonzero()[0].astype("uint64")
    changed = False
    if len(gone) != stamp.removed:  # keys removed before are skipped by usearch
        index.remove(gone)
        changed = True
    for start in range(stamp.covered, rows, _ADD_BATCH):
        stop = min(start + _ADD_BATCH, rows)
        keys = ((~dead[start:stop]).nonzero()[0] + start).astype("uint64")
        if len(keys) and stamp.covered:  # a stamp behind its graph (not written after it)
            keys = keys[~index.contains(keys)]
        if len(keys):
            index.add(keys, matrix[keys], threads=1)  # one thread: the same graph everywhere
        changed = True
    if changed or not path.exists():
        size, crc = _save(index, path)
        record = {
            "version": _VERSION,
            "vectors": vectors_name,
            "dim": dim,
            "covered": rows,
            "removed": int(dead[:rows].sum()),
            "size": size,
            "crc": crc,
        }
        replace_file(stamp_path, json.dumps(record))
    return said


_ADD_BATCH = 65_536
# Rows a saved graph may lag behind (appended, or dead and not yet removed) before a writer
# loads, updates and saves it again: readers rank those appended rows exactly and filter the
# dead ones, ~2 ms at this many, while loading and saving the graph of a million rows is
# seconds, more than a catch-up's budget.
LAZY_ROWS = 16_384


def _lazy(path: Path, stamp: Stamp, rows: int, dead: Any, dim: int) -> bool:
    """Whether the saved graph is near enough (and readable, by its header) to leave as is."""
    if stamp.covered > rows or rows - stamp.covered > LAZY_ROWS:
        return False
    if int(dead[: stamp.covered].sum()) - stamp.removed > LAZY_ROWS:
        return False
    from usearch.index import Index

    try:
        header = Index.metadata(str(path))
    except (OSError, RuntimeError, ValueError):
        return False
    return header is not None and header.get("dimensions") == dim


def _save(index: Any, path: Path) -> tuple[int, int]:
    """Write the graph to `path` whole or not at all; its size and CRC-32."""
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        index.save(str(tmp))
        made = tmp.stat().st_size, crc32(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return made


def _intact(path: Path, stamp: Stamp) -> bool:
    """Whether the graph file is the one its stamp describes (size, then CRC-32)."""
    try:
        return path.stat().st_size == stamp.size and crc32(path) == stamp.crc
    except OSError:
        return False


def check(root: Path) -> list[str]:
    """What is wrong with the vector graphs in `root` (`gitmem doctor`): each graph its stamp
    does not describe, which readers ignore and the next write builds again."""
    stems = {
        p.name.rsplit(".", 1)[0]
        for p in (*root.glob("ann-*.usearch"), *root.glob("ann-*.json"))
        if ".tmp-" not in p.name
    }
    problems = []
    for stem in sorted(stems):
        path = root / f"{stem}.usearch"
        stamp = _read_stamp(root / f"{stem}.json")
        if stamp is None or not _intact(path, stamp):
            problems.append(
                f"vector graph {path.name} does not match its stamp (damaged, or from an earlier"
                " gitmem): it is ignored, and the next catch-up builds it again"
            )
    return problems


def drop(root: Path, err: Exception) -> str:
    """Remove every graph in `root` after a writer failed to bring it up to date with `err`
    (the index ranks exactly until the next writer builds one again); the notice to give."""
    for old in root.glob("ann-*"):
        old.unlink(missing_ok=True)
    return f"the search index's vector graph could not be updated ({err}); ranking exactly"


def _drop_others(root: Path, keep: Path, keep_stamp: Path) -> None:
    """Graphs of vector files no longer in place (a compaction renamed it)."""
    for old in root.glob("ann-*"):
        if old not in (keep, keep_stamp) and ".tmp-" not in old.name:
            old.unlink(missing_ok=True)
