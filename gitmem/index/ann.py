"""Approximate nearest neighbours for the semantic half of a large index (issue 24).

Below `THRESHOLD` live vector rows the semantic half ranks every row exactly (gitmem.index.vectors),
and scores are the same to the last bit everywhere. Above it, where the product over every row
no longer fits a recall's budget (1M rows x 256 float32 is 1 GB read per query), an HNSW graph
from usearch (chosen by measurement: benchmarks/ann_choice.py, docs/scaling.md) proposes the
candidates, and their cosines are then computed exactly from the vector file.

The graph is a cache beside the vector file, like the rest of the index: `ann-<vectors>.usearch`
with a stamp `ann-<vectors>.json` saying which vector file it was built from, how many of its
rows it covers and how many dead rows it has removed. Its keys are vector row numbers. A reader
never writes it: rows past what the graph covers are ranked exactly beside it, and dead rows are
filtered out by the row facts, so a graph behind the index costs time, never answers. A graph
that cannot be read (damaged, half-written, from another usearch) is ignored by readers.

Who writes it. A writer of the index (a catch-up, a rebuild, under the index lock) only decides
(`plan`): the graph is near enough (at most `LAZY_ROWS` behind, checked by its stat and header,
no checksum: ~0.2 s at 1M for every catch-up otherwise), or it is wanted anew or further along,
and the writer's caller starts the builder (gitmem.index.annbuild) once the lock is released.
Building is seconds a thousand rows (~30 CPU-minutes at 1M), far beyond any write's budget; a
writer that held the index lock for it held every recall with it. The builder loads the graph
(checksum first) or makes a new one, adds and removes rows (`prepare`), saves it to a
temporary file, and installs it under the index lock (`install`) only if the stamp is still the
one it started from.

Built on several threads: usearch's parallel insertion makes a different graph from run to run,
so two machines may propose a different candidate now and then (the scores stay the vector
file's exact cosines). Keeping one thread would not make the graph the same everywhere anyway:
it depends on the vector file's row order, which differs between a store caught up write by
write and one rebuilt, or two clones that caught up at different commits; the test that
matters (tests/test_ann.py) is that answers match exact ranking, and recall@10 against exact
(docs/benchmarks.md, "The graph built outside the lock") is the same at one thread and at two.
One thread would double the time readers rank exactly after a rebuild or a compaction.
Parallel insertion may also leave a node that no link leads to (seen on a 30-row graph in CI:
one row missing from a search for more rows than the graph holds); a search that returns fewer
rows than asked and than the graph holds says so, and GraphRanking then ranks every row exactly.

The stamp (gitmem.index.annstamp) records the graph file's identity (one stat: inode, mtime,
size) and its CRC-32: readers and writers compare the identity, so a graph changed in place is
never mapped (usearch does not check a mapped file: a damaged one could crash a recall) and is
built again by the next write; the builder and `gitmem doctor` compare the checksum too.

usearch is optional (`pip install 'gitmem[scale]'`): without it every store is ranked exactly,
as before. This module is its only importer; the graph's files in place (where they are,
installed, checked, removed) are gitmem.index.annfiles'.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitmem.index.annfiles import Prepared, check, drop, drop_others, graph_paths, install
from gitmem.index.annstamp import Stamp, describing, identity, newer, read_stamp
from gitmem.index.extension import load_alone
from gitmem.index.verify import crc32

__all__ = [
    "LAZY_ROWS",
    "THRESHOLD",
    "Graph",
    "Outcome",
    "Prepared",
    "Stale",
    "available",
    "check",
    "drop",
    "graph_paths",
    "install",
    "open_graph",
    "plan",
    "prepare",
    "search_width",
]

# Live rows from which the graph answers: at 200k x 256 dims the exact product reads 200 MB,
# ~20 ms on one core (docs/scaling.md); below it exact is fast enough and bit-exact.
THRESHOLD = 200_000
KEEP = 0.8  # a graph once built is kept down to this share of THRESHOLD live rows
# Build parameters, measured at 200k rows (docs/benchmarks.md, "The graph built outside the
# lock"): 64 candidates a node at insertion instead of 128 is 0.59x the build's CPU, for
# recall@10 against exact (candidates rescored) of 0.989 instead of 0.997 at 200k rows of the
# benchmark's vectors; 40 candidates, or 12 links a node, fall to 0.98. The storage and the
# links, on the million-record store's own vectors (sessions 14 and 15, "The graph's
# configuration at a million"): int8 (under the cosine, as session 14 measured it) with 24
# links reaches a given recall at ~0.75x float16 with 16 links' width, for ~0.87x its search
# time (0.988 at 1536 wide in 18.7 ms against 2048 wide in 21.4 ms, 300 queries at a million),
# 0.71x the graph's size, 1.1x the build's CPU. Its own order is poorer (0.90 of the top 10):
# the product rescores the candidates exactly anyway.
_DTYPE, _METRIC = "i8", "cos"
_CONNECTIVITY = 24
_EXPANSION_ADD = 64
# How far the search looks. Recall@10 against exact falls as rows grow at a fixed width; for
# this build on the million-record store's own vectors: 0.983 at 512 wide and 0.994 at 1024
# for its first 150k rows; 0.985 at 768 and 0.992 at 1024 for 300k; 0.980 at 1024, 0.988 at
# 1536, 0.993 at 2048 for the million (the benchmark's stand-in vectors are easier). So the
# width grows with the graph's rows, as a power through `_NARROWEST` at `_WIDTH_ROWS` rows
# and `_WIDTH_AT_1M` at a million (915 at 300k, 1,536 at 1M, 2,069 at 2M).
_NARROWEST = 768
_WIDTH_ROWS = 200_000
_WIDTH_AT_1M = 1536
_WIDEST = 8192
# Rows a saved graph may lag behind (appended, or dead and not yet removed) before a writer
# starts the builder to bring it further: readers rank those appended rows exactly and filter
# the dead ones, ~2 ms at this many.
LAZY_ROWS = 16_384


def available() -> bool:
    """Whether usearch is installed (the `scale` extra), found without importing it."""
    try:
        return importlib.util.find_spec("usearch") is not None
    except (ImportError, ValueError):
        return False


def search_width(rows: int) -> int:
    """How wide a search of a graph of `rows` rows looks (usearch's expansion_search):
    `_NARROWEST` up to `_WIDTH_ROWS` rows, then growing as a power of the rows that reaches
    `_WIDTH_AT_1M` at a million, at most `_WIDEST`."""
    if rows <= _WIDTH_ROWS:
        return _NARROWEST
    power = math.log(_WIDTH_AT_1M / _NARROWEST) / math.log(1_000_000 / _WIDTH_ROWS)
    return min(_WIDEST, math.ceil(_NARROWEST * math.pow(rows / _WIDTH_ROWS, power)))


class Graph:
    """A graph opened for reading: memory-mapped through usearch's compiled index, without
    usearch's Python wrapper (its import loads tqdm and more, ~50-100 ms of a `gitmem recall`)
    and without the key look-up table (a reader never asks for a row by key: mapping 1M rows
    with it built a hash table of every key, ~half of the ~0.2-0.5 s that opening took)."""

    def __init__(self, index: Any, stamp: Stamp) -> None:
        self._index = index
        self._any_dtype = _compiled().ScalarKind.Unknown
        self.covered = stamp.covered
        self.size = len(index)  # rows in the graph: removed ones are not

    def search(self, query: Any, k: int) -> Any:
        """Row numbers of (about) the `k` nearest rows to `query`, an array of uint64: fewer
        than `k` only when the graph holds fewer rows, or when some of its rows cannot be
        reached from its entry (a graph built on several threads may leave a few unlinked;
        GraphRanking then ranks exactly); None when usearch's compiled calls failed."""
        want = max(k, 1)
        # As usearch.index.Index.search does for one query (its dtype taken from the array).
        # These are usearch's compiled internals, not its documented API: a version that
        # changed them raises here (of any kind), and None makes GraphRanking rank every row
        # exactly, as for rows the graph cannot reach.
        try:
            keys, _, counts, _, _ = self._index.search_many(
                query.reshape(1, -1), count=want, exact=False, threads=1, dtype=self._any_dtype
            )
            return keys[0][: counts[0]]
        except Exception:  # any change of the internals: rank exactly
            return None


def open_graph(root: Path, vectors_name: str, dim: int) -> Graph | None:
    """The graph of the vector file `vectors_name`, mapped; None when there is none that can
    be read (not built yet, damaged, another version): the caller ranks exactly. Checked by
    its stamp and one stat (gitmem.index.annstamp), never read whole: what mapping costs is
    usearch walking the nodes' headers (docs/benchmarks.md, "Session 14: `gitmem recall` at a
    million, whole process")."""
    if not available():
        return None
    path, stamp_path = graph_paths(root, vectors_name)
    stamp = read_stamp(stamp_path)
    if stamp is None or stamp.vectors != vectors_name or stamp.dim != dim:
        return None
    described = describing(path, stamp, checksum=False)
    if described is None:
        return None
    index = _view(path, dim)
    if index is None:
        return None
    try:  # usearch's compiled internals (see Graph.search): ranked exactly if they changed
        index.expansion_search = search_width(len(index))
        return Graph(index, described)
    except Exception:  # as Graph.search
        return None


def _view(path: Path, dim: int) -> Any:
    """The compiled index mapped from `path`, configured from its own header (as usearch's
    Index.restore does); None when it cannot be read or is not of `dim` dimensions."""
    try:
        compiled = _compiled()
        header = compiled.index_dense_metadata_from_path(str(path))
        if header.get("dimensions") != dim:
            return None
        index = compiled.Index(
            ndim=dim,
            dtype=header["kind_scalar"],
            metric_kind=header["kind_metric"],
            enable_key_lookups=False,
        )
        index.view_index_from_path(str(path))
    except Exception:  # unreadable, or internals a newer usearch changed
        return None
    return index


def _compiled() -> Any:
    """usearch's compiled module (the index itself), loaded without usearch's package imports
    where it can (gitmem.index.extension: NumKong's library first, as usearch's `__init__`
    loads it); otherwise the ordinary import."""
    with _LOADING:  # two threads' recalls (an MCP server) must not initialise it twice
        loaded = sys.modules.get("usearch.compiled") or load_alone(
            "usearch.compiled", needs=("numkong._numkong",)
        )
        if loaded is None:
            from usearch import compiled

            loaded = compiled
        return loaded


_LOADING = threading.Lock()


def _load(path: Path, *, view: bool) -> Any:
    from usearch.index import Index

    try:
        index = Index.restore(str(path), view=view)
        if index is not None:
            # Not saved in the file: usearch's default (128) would extend it unlike a graph
            # built whole. (The property has a setter that type checkers do not see.)
            index.expansion_add = _EXPANSION_ADD  # type: ignore[misc]
        return index
    except (OSError, RuntimeError, ValueError):
        return None


def _new(dim: int) -> Any:
    from usearch.index import Index

    return Index(
        ndim=dim,
        metric=_METRIC,
        dtype=_DTYPE,
        connectivity=_CONNECTIVITY,
        expansion_add=_EXPANSION_ADD,
        expansion_search=_NARROWEST,
    )


Dead = Callable[[int], int]  # the number of dead rows among the first n


@dataclass(frozen=True)
class Outcome:
    """What a writer's `plan` found: a notice to give, and whether the builder is wanted."""

    notice: str | None = None
    build: bool = False


def plan(root: Path, vectors_name: str, rows: int, dead: Dead, dim: int) -> Outcome:
    """A writer's step, under the index lock, for the vector file `vectors_name` of `rows` rows
    with `dead` (the dead rows among the first n): remove graphs that must go, and say
    whether the builder should bring the graph up (none yet, unusable, or more than
    `LAZY_ROWS` behind). It reads the graph's stat and header, never the whole graph.
    A graph is wanted from THRESHOLD live rows and kept down to `KEEP` x THRESHOLD, so that
    records come and go around the threshold without a whole graph built each time; a
    compaction's new vector file keeps that (the graph of the old one counts). Without usearch
    it leaves the graph as it is, for the install that built it (readers here rank exactly)."""
    path, stamp_path = graph_paths(root, vectors_name)
    had = drop_others(root, path, stamp_path) or stamp_path.exists()
    if not available():  # `dead` is not asked then
        return Outcome()
    live = rows - dead(rows)
    if live < KEEP * THRESHOLD or (live < THRESHOLD and not had):
        path.unlink(missing_ok=True)
        stamp_path.unlink(missing_ok=True)
        return Outcome()
    stamp = read_stamp(stamp_path)
    if stamp is not None and stamp.vectors == vectors_name and stamp.dim == dim:
        described = describing(path, stamp, checksum=False)
        if described is not None and described.covered <= rows and _header(path, dim):
            return Outcome(build=not _near(described, rows, dead))
        said = f"the search index's vector graph {path.name} is damaged"
    elif newer(stamp_path):  # a newer gitmem's graph (another install on this store): its own
        return Outcome()  # to keep; readers here rank exactly
    elif path.exists() or stamp_path.exists():
        said = f"the search index's vector graph {path.name} is out of date"
    else:
        return Outcome(build=True)
    path.unlink(missing_ok=True)  # never mapped by a reader again
    stamp_path.unlink(missing_ok=True)
    return Outcome(f"{said}; building it again in the background", build=True)


def _near(stamp: Stamp, rows: int, dead: Dead) -> bool:
    """Whether a graph saved as `stamp` is near enough to `rows` rows to leave as is."""
    if rows - stamp.covered > LAZY_ROWS:
        return False
    return dead(stamp.covered) - stamp.removed <= LAZY_ROWS


def _header(path: Path, dim: int) -> bool:
    from usearch.index import Index

    try:
        header = Index.metadata(str(path))
    except (OSError, RuntimeError, ValueError):
        return False
    return header is not None and header.get("dimensions") == dim


class Stale(Exception):
    """The index a build read was replaced meanwhile (a rebuild, a compaction)."""


def prepare(
    root: Path,
    vectors_name: str,
    matrix: Any,
    dead: Any,
    *,
    threads: int,
    current: Callable[[], bool] = lambda: True,
) -> Prepared | None:
    """The builder's step, outside the index lock: the graph of `vectors_name` brought up to
    `matrix` (its rows by number, numpy) and `dead`, saved to a temporary file; None when the
    graph in place is already there. Loads the graph in place when its stat and checksum
    hold, else makes one anew from every live row. Raises Stale when `current`, asked
    between batches of rows, says the index read is no longer the one in place."""
    path, stamp_path = graph_paths(root, vectors_name)
    rows, dim = matrix.shape
    base = read_stamp(stamp_path)
    index, notice = None, None
    described = None if base is None else describing(path, base, checksum=True)
    if base is not None and base.vectors == vectors_name and base.dim == dim:
        index = None if described is None or described.covered > rows else _load(path, view=False)
        if index is None or len(index) > rows:
            notice = f"the search index's vector graph {path.name} is damaged; built it again"
            index, described = None, None
    in_place = described if index is not None else None
    if index is None:
        index, described = _new(dim), Stamp(vectors_name, dim, 0, 0, 0, 0, 0, 0)
    assert described is not None
    removed = int(dead[:rows].sum())
    if described.covered == rows and described.removed == removed and described.size:
        return None
    gone = dead[: described.covered].nonzero()[0].astype("uint64")
    if len(gone) != described.removed:  # keys removed before are skipped by usearch
        index.remove(gone)
    for start in range(described.covered, rows, _ADD_BATCH):
        if not current():
            raise Stale(vectors_name)
        stop = min(start + _ADD_BATCH, rows)
        keys = ((~dead[start:stop]).nonzero()[0] + start).astype("uint64")
        if len(keys):
            index.add(keys, matrix[keys], threads=threads)
    temporary = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        index.save(str(temporary))
        crc = crc32(temporary)
        inode, mtime_ns, size = identity(temporary.stat())  # a rename keeps all three
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    made = Stamp(vectors_name, dim, rows, removed, size, crc, inode, mtime_ns)
    return Prepared(temporary, base, made, notice, in_place)


_ADD_BATCH = 65_536
