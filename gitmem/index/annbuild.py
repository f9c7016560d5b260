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

No request is lost to a builder at work: a writer appends to `.gitmem/graph.want` before it
looks whether one runs, and a builder empties it before it reads its snapshot and looks at it
again after releasing its lock (a rebuild or a compaction meanwhile makes the snapshot stale:
it then goes again, at most `_ROUNDS` times; it stops a stale build between batches of rows).
A builder that fails (or dies: it notes the attempt before it starts) leaves a record,
`.gitmem/graph.failure` (time, count, message), shown by `gitmem rebuild --json` and
`gitmem doctor`; writers start it again only after 1 minute x 2^(count-1), at most a day.
Its output goes to the hook log when there is one.

`gitmem rebuild --wait-graph` runs `build` in its own process and waits (gitmem.api).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.atomic import replace_file
from gitmem.detach import start_detached
from gitmem.index import ann
from gitmem.index.catalog import Catalog, CatalogCorrupt
from gitmem.index.opening import same_generation
from gitmem.store.lock import cache_lock

if TYPE_CHECKING:
    from gitmem.index.vectors import VectorFile

__all__ = [
    "FAILURE",
    "LOCK",
    "THREADS",
    "WANT",
    "Failure",
    "build",
    "failure",
    "main",
    "plan",
    "reported_failure",
    "running",
    "start",
    "state",
]

LOCK = "graph.lock"  # in the store's .gitmem/, beside index.lock: the index directory is swapped
WANT = "graph.want"  # ... appended to by each write that wants the builder
FAILURE = "graph.failure"  # ... the last attempts that failed: {"time", "count", "message"}
_HOOK_LOG = "hooks.log"  # gitmem.hooks.events.LOG_NAME (a higher layer): the builder's output
_OFF = ("off", "0", "no", "false")  # GITMEM_BACKGROUND_INDEX values, as gitmem.cli.background
_ROUNDS = 3  # builds a builder does, at most, for requests that came while it was at work
_BACKOFF, _BACKOFF_CAP = 60.0, 86_400.0  # seconds before a failed builder is started again
# Insertion threads. Two halve the wall time of one on a 2-core host for 11% more CPU and the
# same recall@10 (docs/benchmarks.md, "The graph built outside the lock"), making a different
# graph each run (gitmem.index.ann says why that is accepted); more were never measured. The
# builder runs at a lower priority (nice 10), so the agent's own work still comes first.
THREADS = max(1, min(2, os.cpu_count() or 1))
_INDEX_LOCK_TIMEOUT = 300.0


def plan(root: Path, vectors: VectorFile, catalog: Catalog) -> ann.Outcome:
    """A writer's look at the graph of the index at `root` (ann.plan), under the index lock:
    whether to start the builder once the lock is released, and a notice. Nothing is read for
    a small index that never had a graph. The dead rows are counted in the catalog's tables,
    which the row facts just written with them agree with: two counts, the live rows and
    those past the graph (~40 ms at a million rows, where reading the facts took 0.35 s:
    docs/benchmarks.md, "Session 15: the catch-up's diff at a million records"); none
    without usearch. Never raises: a cache must not fail a recall."""
    live = catalog.live_rows()
    if live < ann.THRESHOLD and not any(root.glob("ann-*")):
        return ann.Outcome()

    def dead(rows: int) -> int:  # among the first `rows`: all but the live ones before it
        return rows - live + catalog.live_rows(since=rows)

    try:
        return ann.plan(root, vectors.path.name, catalog.next_row(), dead, vectors.dim)
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
    """The graph of the index at `root`, for `gitmem rebuild --json`: "building" (a builder at
    work, or `wanted` by the last write), "failed" (the last attempt did; `failure` says how),
    "built", or "none" (ranked exactly)."""
    if running(root):
        return "building"
    if failure(root) is not None:
        return "failed"
    if wanted:
        return "building"
    return "built" if any(root.glob("ann-*.json")) and ann.available() else "none"


@dataclass(frozen=True)
class Failure:
    """The builder's last failed attempts on an index: when (Unix seconds), how many in a row."""

    time: float
    count: int
    message: str

    def retry_at(self) -> float:
        """When writers may start the builder again: 1 minute x 2^(count-1), at most a day."""
        return self.time + min(_BACKOFF * 2.0 ** (self.count - 1), _BACKOFF_CAP)


def failure(root: Path) -> Failure | None:
    """The record of the builder's last failed attempts on the index at `root`; None when the
    last one did not fail."""
    try:
        data = json.loads((root.parent / FAILURE).read_text())
        return Failure(float(data["time"]), int(data["count"]), str(data["message"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def reported_failure(root: Path) -> Failure | None:
    """`failure`, for `gitmem rebuild --json` and `gitmem doctor`: None while a builder is at
    work (its own attempt is noted as failed until it ends)."""
    return None if running(root) else failure(root)


def _note_failure(root: Path, message: str, count: int) -> None:
    with contextlib.suppress(OSError):
        replace_file(
            root.parent / FAILURE, json.dumps(asdict(Failure(time.time(), count, message)))
        )


def _request(root: Path) -> None:
    """Note that a write wants the builder (one byte appended: never lost to a builder at
    work, which empties the file before its snapshot and looks at it again after)."""
    with contextlib.suppress(OSError):
        root.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(root.parent / WANT, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, b".")
        finally:
            os.close(fd)


def _requested(root: Path) -> bool:
    try:
        return (root.parent / WANT).stat().st_size > 0
    except OSError:
        return False


def start(root: Path, dim: int) -> bool:
    """Ask for the builder of the index at `root` (vectors of `dim` dimensions) and start it,
    detached, unless one is at work (it builds again for this request) or the last attempts
    failed recently (backing off); whether one is now. It inherits this process's environment
    and writes to the hook log when there is one. With GITMEM_BACKGROUND_INDEX=off it builds
    here instead, before returning."""
    _request(root)
    if running(root):
        return True
    if os.environ.get("GITMEM_BACKGROUND_INDEX", "").strip().lower() in _OFF:
        build(root, dim, wait=True)  # no background process: here, as the hooks index then
        return False
    failed = failure(root)
    if failed is not None and time.time() < failed.retry_at():
        return False
    log = root.parent / _HOOK_LOG
    output = str(log) if log.exists() else os.devnull
    args = [sys.executable, "-P", "-m", "gitmem.index.annbuild", str(root.absolute()), str(dim)]
    return start_detached(args, os.environ, output)


def build(root: Path, dim: int, *, wait: bool) -> str:
    """Bring the graph of the index at `root` up to the index as it is now; one line saying
    what was done (each round's, joined). With `wait`, waits for a builder at work to finish
    first. Builds again (at most `_ROUNDS` in all) while writes asked for it meanwhile."""
    said: list[str] = []
    for _ in range(_ROUNDS):
        done, held = _round(root, dim, wait=wait)
        said.append(done)
        if not held or not _requested(root):  # looked at with the lock released
            break
        wait = False  # a builder that took the lock meanwhile serves the request
    return "; then ".join(said)


def _round(root: Path, dim: int, *, wait: bool) -> tuple[str, bool]:
    with _held(root, wait=wait) as held:
        if not held:
            return "another process is building the vector graph", False
        with contextlib.suppress(OSError):
            os.truncate(root.parent / WANT, 0)  # before the snapshot: it serves these
        failed = failure(root)
        count = 1 if failed is None else failed.count + 1
        _note_failure(root, "the builder stopped before it finished (killed, or crashed)", count)
        said, ok = _attempt(root, dim)
        if ok:
            (root.parent / FAILURE).unlink(missing_ok=True)
        else:
            _note_failure(root, said, count)
        return said, True


def _attempt(root: Path, dim: int) -> tuple[str, bool]:
    """One build, holding the builder's lock: what was done, and whether it did not fail."""
    for left in root.glob("ann-*.tmp-*"):  # of builders that died: none other runs
        left.unlink(missing_ok=True)
    try:
        generation = (root / "catalog.sqlite").stat().st_ino
        catalog = Catalog(root / "catalog.sqlite")
    except (OSError, CatalogCorrupt):
        return "no search index to build a vector graph for", True
    try:  # open till the end: no other build can take the catalog's inode meanwhile
        if not same_generation(root, generation):
            return _MEANWHILE, True
        return _build(root, catalog, generation, dim), True
    except ann.Stale:
        return _MEANWHILE, True
    except (OSError, RuntimeError, ValueError) as err:  # a full disk, a usearch error
        return f"the vector graph could not be built ({err}); the search index ranks exactly", False
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

    def current() -> bool:  # between batches of rows: a stale build stops early
        return same_generation(root, generation) and (root / name).exists()

    try:
        matrix = VectorFile(root / name, dim).matrix(rows)
    except (OSError, ValueError):  # gone or short: a compaction renamed it since the facts?
        if current() and catalog.vectors_name() == name:
            raise
        raise ann.Stale(name) from None
    prepared = ann.prepare(root, name, matrix, facts.dead, threads=THREADS, current=current)
    if prepared is None:
        return f"the vector graph covers all {rows} rows"
    with cache_lock(root.parent / "index.lock", _INDEX_LOCK_TIMEOUT, "the search index"):
        if not (current() and catalog.vectors_name() == name):
            prepared.temporary.unlink(missing_ok=True)
            return _MEANWHILE
        if not ann.install(root, prepared):
            return "the vector graph changed meanwhile: the next write looks again"
    said = f"{prepared.notice}; " if prepared.notice else ""
    return f"{said}built the vector graph of {rows} rows"


def _no_ids(rows: list[int]) -> list[str]:
    return []


def main(argv: list[str]) -> int:
    """`python -m gitmem.index.annbuild ROOT DIM`: the detached builder; always 0. It says
    what it did in one line shaped as the hook log's (gitmem.hooks.events.log)."""
    with contextlib.suppress(OSError):
        os.nice(10)  # the agent's own work comes first
    with contextlib.suppress(Exception):
        said = build(Path(argv[0]), int(argv[1]), wait=False)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        print(f"{stamp} vector graph builder: {said}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
