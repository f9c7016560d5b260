"""The vector graph's builder: outside the index lock, in a detached low-priority process.

A writer of the index that finds the graph missing, unusable or far behind (gitmem.index.ann's
`plan`) has its caller start `python -m gitmem.index.annbuild ROOT DIM` once the index lock is
released (`start`, with gitmem.detach, as the background catch-up of gitmem.cli.background),
and returns. Readers rank exactly meanwhile, as they do for any index without a graph.

The builder (`build`) takes its own lock (`.gitmem/graph.lock`: two builders never run at once;
a second one leaves at once, or waits when asked to), reads a snapshot of the index (the
catalog's row facts, in one transaction, and the vector file they describe), builds or extends
the graph on `THREADS` threads, saves it to a temporary file, and then, under the index lock,
puts it in place only if the build it read is still the one there (a rebuild swaps the whole
index directory, a compaction renames the vector file) and the graph's stamp is the one it
started from. The rows appended meanwhile are the next writer's to hand it again.

`gitmem rebuild --wait-graph` runs `build` in its own process and waits (gitmem.api).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.detach import start_detached
from gitmem.index import ann
from gitmem.index.catalog import VECTORS, Catalog, CatalogCorrupt
from gitmem.index.opening import same_generation
from gitmem.store.lock import cache_lock

if TYPE_CHECKING:
    from gitmem.index.vectors import VectorFile

__all__ = ["LOCK", "THREADS", "build", "main", "plan", "running", "start", "state"]

LOCK = "graph.lock"  # in the store's .gitmem/, beside index.lock: the index directory is swapped
# Insertion threads. Two halve the wall time of one on a 2-core host for 11% more CPU and the
# same recall@10 (docs/benchmarks.md, "The graph built outside the lock"), making a different
# graph each run (gitmem.index.ann says why that is accepted); the builder runs at a lower
# priority (nice 10), so the agent's own work still comes first.
THREADS = max(1, min(4, os.cpu_count() or 1))
_INDEX_LOCK_TIMEOUT = 300.0


def plan(root: Path, vectors: VectorFile, catalog: Catalog) -> ann.Outcome:
    """A writer's look at the graph of the index at `root` (ann.plan), under the index lock:
    whether to start the builder once the lock is released, and a notice. Nothing is read for
    a small index that never had a graph, and without row facts (an older gitmem's catalog)
    none is wanted: exact until they are. Never raises: a cache must not fail a recall."""
    if catalog.live_rows() < ann.THRESHOLD and not any(root.glob("ann-*")):
        return ann.Outcome()
    from gitmem.index.vectors import RowArrays

    try:
        stored = catalog.row_facts()
        rows = catalog.next_row()
        facts = None if stored is None else RowArrays.of(stored.facts.parts, rows, _no_ids)
        if facts is None:
            return ann.Outcome()
        return ann.plan(root, vectors.path.name, rows, facts.dead, vectors.dim)
    except Exception as err:
        return ann.Outcome(ann.drop(root, err))


def _lock_path(root: Path) -> Path:
    return root.parent / LOCK


@contextlib.contextmanager
def _held(root: Path, *, wait: bool) -> Iterator[bool]:
    """The builder's lock on the index at `root`: yields whether it is held."""
    root.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(_lock_path(root), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def running(root: Path) -> bool:
    """Whether a builder is at work on the index at `root` now."""
    try:
        with _held(root, wait=False) as held:
            return not held
    except OSError:
        return False


def state(root: Path, wanted: bool) -> str:
    """The graph of the index at `root`, for `gitmem rebuild --json`: "building" (`wanted` by
    the last write, or a builder at work), "built", or "none" (ranked exactly)."""
    if wanted or running(root):
        return "building"
    return "built" if any(root.glob("ann-*.json")) and ann.available() else "none"


def start(root: Path, dim: int) -> bool:
    """Start the detached builder of the index at `root` (vectors of `dim` dimensions) unless
    one is at work; whether one is now. It inherits this process's environment."""
    if running(root):
        return True
    args = [sys.executable, "-m", "gitmem.index.annbuild", str(root.absolute()), str(dim)]
    return start_detached(args, os.environ)


def build(root: Path, dim: int, *, wait: bool) -> str:
    """Bring the graph of the index at `root` up to the index as it is now; one line saying
    what was done. With `wait`, waits for a builder at work to finish first."""
    with _held(root, wait=wait) as held:
        if not held:
            return "another process is building the vector graph"
        for left in root.glob("ann-*.tmp-*"):  # of builders that died: none other runs
            left.unlink(missing_ok=True)
        try:
            generation = (root / "catalog.sqlite").stat().st_ino
            catalog = Catalog(root / "catalog.sqlite")
        except (OSError, CatalogCorrupt):
            return "no search index to build a vector graph for"
        try:  # open till the end: no other build can take the catalog's inode meanwhile
            if not same_generation(root, generation):
                return _MEANWHILE
            return _build(root, catalog, generation, dim)
        except (OSError, RuntimeError, ValueError) as err:  # a full disk, a usearch error
            return f"the vector graph could not be built ({err}); the search index ranks exactly"
        finally:
            catalog.close()


_MEANWHILE = "the search index was rebuilt or compacted meanwhile: the next write starts again"


def _build(root: Path, catalog: Catalog, generation: int, dim: int) -> str:
    from gitmem.index.vectors import RowArrays, VectorFile

    stored = catalog.row_facts()
    facts = None if stored is None else RowArrays.of(stored.facts.parts, stored.rows, _no_ids)
    if stored is None or facts is None or not ann.available():
        return "the search index ranks exactly (no row facts, or no usearch)"
    rows, name = stored.rows, stored.vectors  # wanted: the writer that started it said so
    matrix = VectorFile(root / name, dim).matrix(rows)
    prepared = ann.prepare(root, name, matrix, facts.dead, threads=THREADS)
    if prepared is None:
        return f"the vector graph covers all {rows} rows"
    with cache_lock(root.parent / "index.lock", _INDEX_LOCK_TIMEOUT, "the search index"):
        current = same_generation(root, generation) and (catalog.meta("vectors") or VECTORS) == name
        if not current:
            prepared.temporary.unlink(missing_ok=True)
            return _MEANWHILE
        if not ann.install(root, prepared):
            return "the vector graph changed meanwhile: the next write looks again"
    said = f"{prepared.notice}; " if prepared.notice else ""
    return f"{said}built the vector graph of {rows} rows"


def _no_ids(rows: list[int]) -> list[str]:
    return []


def main(argv: list[str]) -> int:
    """`python -m gitmem.index.annbuild ROOT DIM`: the detached builder; always 0."""
    with contextlib.suppress(OSError):
        os.nice(10)  # the agent's own work comes first
    with contextlib.suppress(Exception):
        print(build(Path(argv[0]), int(argv[1]), wait=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
