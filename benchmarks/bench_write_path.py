"""The write path's cost as the store grows: in-process `Store.record` at 1k and 100k records,
with the git index written the way it was before (libgit2 reads and rewrites the whole plain
index on every write) and the way it is now (gitmem.store.gitindex: git's split index, only
the changed entries rewritten), alternated write by write on two copies of one store so that
a busy machine weighs on both alike. Also what a fold costs (a `forget` of a record in the
shared index rewrites it whole) and that `git status` is clean after the writes.

    .venv/bin/python benchmarks/bench_write_path.py [--sizes 1000,100000] [--writes 41]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time
import types
from collections.abc import Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pygit2
from _common import machine, make_store, percentile, write_json

from gitmem.store.git import GitRepo, _atomic_write, _prune_empty_dirs, _size
from gitmem.store.store import Store


def _old_sync_worktree(self: GitRepo, files: Mapping[str, bytes | None]) -> None:
    """The write path before gitmem.store.gitindex: libgit2's whole index, read and written."""
    index = self._repo.index
    index.read(False)
    for path, data in files.items():
        target = self.root / path
        if data is None:
            if target.exists():
                target.unlink()
                _prune_empty_dirs(target.parent, self.root)
            if path in index:
                index.remove(path)
        else:
            _atomic_write(target, data)
            index.add(path)
    index_file = self.git_dir / "index"
    with self._writing(lambda: [(index_file, _size(index_file) + 4096)]):
        index.write()


def _old_is_dirty(self: GitRepo, path: str) -> bool:
    head = self.head()
    committed = None if head is None else self.entry_id(head, path)
    target = self.root / path
    try:
        on_disk: str | None = str(pygit2.hash(target.read_bytes()))
    except FileNotFoundError:
        on_disk = None
    if on_disk != committed:
        return True
    index = self._repo.index
    index.read(False)
    return (str(index[path].id) if path in index else None) != committed


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def before_copy(root: Path) -> Path:
    """A copy of the store with a plain index that only libgit2 writes."""
    copy = root.parent.parent / f"{root.parent.name}-before" / "store"
    shutil.copytree(root, copy, symlinks=True)
    _git(copy, "config", "core.splitIndex", "false")
    _git(copy, "update-index", "--no-split-index")
    _git(copy, "status", "--porcelain")  # a refreshed index, as after any use
    return copy


def opened(root: Path, old: bool) -> Store:
    store = Store.open(root)
    if old:
        store.repo._sync_worktree = types.MethodType(_old_sync_worktree, store.repo)  # type: ignore[method-assign]
        store.repo.is_dirty = types.MethodType(_old_is_dirty, store.repo)  # type: ignore[method-assign]
    store.record("fact", "warm up", title="Warm up", agent="bench")
    return store


def alternatives(before_root: Path, after_root: Path, runs: int = 9) -> dict[str, float]:
    """The other designs weighed (docs/architecture.md): any whole rewrite of the plain index
    costs at least reading, hashing and writing its bytes; git's own `git update-index` (a
    process) on the plain and on the split index, for one new file."""
    plain = before_root / ".git" / "index"
    spare = before_root / ".git" / "bench-index-copy"
    times: dict[str, list[float]] = {"whole_rewrite_floor": [], "git_plain": [], "git_split": []}
    for i in range(runs):
        t0 = time.perf_counter()
        data = plain.read_bytes()
        spare.write_bytes(data[:-20] + hashlib.sha1(data[:-20]).digest())
        times["whole_rewrite_floor"].append(time.perf_counter() - t0)
        for name, root in (("git_plain", before_root), ("git_split", after_root)):
            (root / f"by-git-{i}.txt").write_text(f"{i}\n")
            t0 = time.perf_counter()
            _git(root, "update-index", "--add", "--", f"by-git-{i}.txt")
            times[name].append(time.perf_counter() - t0)
    spare.unlink()
    return {f"{name}_p50_ms": percentile(v, 0.5) * 1000 for name, v in times.items()}


def alternated(size: int, writes: int) -> dict[str, float]:
    start = time.perf_counter()
    after_root = make_store(size)
    built = time.perf_counter() - start
    before_root = before_copy(after_root)
    stores = {"before": opened(before_root, True), "after": opened(after_root, False)}
    times: dict[str, list[float]] = {"before": [], "after": [], "before_cpu": [], "after_cpu": []}
    for i in range(writes):
        for name, store in stores.items() if i % 2 else reversed(stores.items()):
            t0, c0 = time.perf_counter(), time.process_time()
            store.record("decision", f"Body {i}.\n", title=f"Decision {i}", agent="bench")
            times[name].append(time.perf_counter() - t0)
            times[f"{name}_cpu"].append(time.process_time() - c0)
    for root in (before_root, after_root):
        assert _git(root, "status", "--porcelain") == "", root
    # A fold: forgetting a record that is in the shared index rewrites it whole.
    written = ("Decision ", "Warm up")
    victim = next(r for r in stores["after"].records() if not r.title.startswith(written))
    t0 = time.perf_counter()
    stores["after"].forget(victim.id, reason="bench", agent="bench")
    fold = time.perf_counter() - t0
    assert _git(after_root, "status", "--porcelain") == ""
    out = {"built_s": built, "fold_forget_ms": fold * 1000}
    for name, values in times.items():
        out[f"{name}_p50_ms"] = percentile(values, 0.5) * 1000
        out[f"{name}_p95_ms"] = percentile(values, 0.95) * 1000
    out.update(alternatives(before_root, after_root))
    out["index_bytes_after"] = (after_root / ".git" / "index").stat().st_size
    out["index_bytes_before"] = (before_root / ".git" / "index").stat().st_size
    for root in (before_root, after_root):
        shutil.rmtree(root.parent, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--writes", type=int, default=41)
    parser.add_argument("--json")
    args = parser.parse_args()
    results: dict[str, object] = {"machine": machine(), "load_before": os.getloadavg()[0]}
    for size in (int(s) for s in args.sizes.split(",")):
        figures = alternated(size, args.writes)
        results[str(size)] = figures
        print(
            f"{size:>6} records (built in {figures['built_s']:.0f} s): record p50 before "
            f"{figures['before_p50_ms']:.1f} ms (p95 {figures['before_p95_ms']:.1f}, CPU "
            f"{figures['before_cpu_p50_ms']:.1f}), after {figures['after_p50_ms']:.1f} ms (p95 "
            f"{figures['after_p95_ms']:.1f}, CPU {figures['after_cpu_p50_ms']:.1f}); a fold "
            f"(forget) {figures['fold_forget_ms']:.0f} ms; index {figures['index_bytes_before']}"
            f" -> {figures['index_bytes_after']} bytes; whole rewrite floor "
            f"{figures['whole_rewrite_floor_p50_ms']:.1f} ms, git update-index plain "
            f"{figures['git_plain_p50_ms']:.1f} / split {figures['git_split_p50_ms']:.1f} ms; "
            f"load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    write_json(args.json, results)


if __name__ == "__main__":
    main()
