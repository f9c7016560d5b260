"""Parallel writers all land; a writer killed half-way blocks nobody and loses nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import assert_clean, git

from gitmem.store.git import GitRepo
from gitmem.store.store import Store

WRITER = """
import sys
from gitmem.store.store import Store
store = Store.open(__import__("pathlib").Path(sys.argv[1]))
for i in range(int(sys.argv[3])):
    store.record("fact", f"body {i} from {sys.argv[2]}", title=f"{sys.argv[2]} fact {i}",
                 agent=sys.argv[2])
"""


def test_eight_processes_fifty_records_each_all_land(store_path: Path) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(store_path), f"agent{n}", "50"])
        for n in range(8)
    ]
    assert [p.wait(timeout=300) for p in procs] == [0] * 8
    store = Store.open(store_path)
    titles = {r.title for r in store.records()}
    assert titles == {f"agent{n} fact {i}" for n in range(8) for i in range(50)}
    assert int(git(store_path, "rev-list", "--count", "HEAD")) == 1 + 400
    assert_clean(store_path)


def test_killed_writers_never_block_the_next(store_path: Path) -> None:
    for attempt in range(6):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(store_path), f"victim{attempt}", "1000"]
        )
        time.sleep(1.0 + 0.13 * attempt)  # land somewhere inside a write
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    store = Store.open(store_path)
    started = time.monotonic()
    store.record("fact", "after the kills", title="Survivor")
    assert time.monotonic() - started < 5
    assert_clean(store_path)
    on_disk = {p.stem for p in (store_path / "records").rglob("*.md")}
    assert on_disk == set(store.catalog())


def test_half_done_write_is_finished_by_the_next_writer(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store.open(store_path)

    def die(self: GitRepo, files: object) -> None:
        raise KeyboardInterrupt  # as if killed after the branch moved

    original = GitRepo._sync_worktree
    monkeypatch.setattr(GitRepo, "_sync_worktree", die)
    with pytest.raises(KeyboardInterrupt):
        store.record("fact", "landed in git only", title="Half done")
    monkeypatch.setattr(GitRepo, "_sync_worktree", original)
    assert (store_path / ".git" / "gitmem-journal.json").exists()
    assert git(store_path, "status", "--porcelain") != ""
    Store.open(store_path).record("fact", "next", title="Next writer")
    assert_clean(store_path)
    assert {r.title for r in Store.open(store_path).records()} >= {"Half done", "Next writer"}


def test_a_dead_writers_temporary_files_are_removed_when_its_commit_landed(
    store_path: Path,
) -> None:
    """It died between its commit and the rename of a record file: the next writer checks the
    files out again and removes the temporary file it left beside them."""
    store = Store.open(store_path)
    parent = git(store_path, "rev-parse", "HEAD").strip()
    path = store.record("fact", "landed", title="Landed").record.path  # the writer's commit
    left = (store_path / path).parent / ".gitmem-4242-0a1b-landed.md"
    left.write_text("half a record")
    journal = store_path / ".git" / "gitmem-journal.json"
    journal.write_text(
        f'{{"parent": "{parent}", "paths": ["{path}"], "started": {time.time() - 1}}}'
    )
    Store.open(store_path).record("fact", "next", title="Next writer")
    assert not left.exists()
    assert_clean(store_path)


def test_stale_git_lock_of_a_dead_writer_is_cleared(store_path: Path) -> None:
    journal = store_path / ".git" / "gitmem-journal.json"
    head = git(store_path, "rev-parse", "HEAD").strip()
    journal.write_text(f'{{"parent": "{head}", "paths": [], "started": {time.time() - 1}}}')
    (store_path / ".git" / "index.lock").write_text("")
    Store.open(store_path).record("fact", "x", title="After a stale lock")
    assert not (store_path / ".git" / "index.lock").exists()
    assert_clean(store_path)


def test_someone_elses_git_lock_is_respected(store_path: Path) -> None:
    (store_path / ".git" / "index.lock").write_text("")
    with pytest.raises(Exception, match="git is busy"):
        Store.open(store_path).record("fact", "x", title="Blocked")
    assert (store_path / ".git" / "index.lock").exists()


def test_a_git_command_that_holds_the_lock_briefly_is_waited_for(store_path: Path) -> None:
    """A `git status` an editor runs holds index.lock for a moment: a write waits for it (as
    git's own lock waits), where it refused at once and a hook's capture was dropped."""
    lock = store_path / ".git" / "index.lock"
    lock.write_text("")
    timer = threading.Timer(0.5, lock.unlink)
    timer.start()
    try:
        Store.open(store_path).record("fact", "x", title="After a brief lock")
    finally:
        timer.join()
    assert_clean(store_path)


AMENDER = """
import sys
from pathlib import Path
from gitmem.store.store import Store
store = Store.open(Path(sys.argv[1]))
for i in range(int(sys.argv[4])):
    store.amend(sys.argv[2], {sys.argv[3]: f"{sys.argv[3]} {i}"})
"""


def test_concurrent_amends_of_one_record_lose_nothing(store_path: Path) -> None:
    rid = Store.open(store_path).record("fact", "x", title="Contended").record.id
    procs = [
        subprocess.Popen([sys.executable, "-c", AMENDER, str(store_path), rid, key, "25"])
        for key in ("abstract", "source")
    ]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    final = Store.open(store_path).get(rid)
    assert (final.abstract, final.source) == ("abstract 24", "source 24")
    assert len(Store.open(store_path).history(rid)) == 51
    assert_clean(store_path)


def test_an_old_journal_does_not_clear_a_live_git_lock(store_path: Path) -> None:
    journal = store_path / ".git" / "gitmem-journal.json"
    journal.write_text(f'{{"parent": null, "paths": [], "started": {time.time() - 3600}}}')
    (store_path / ".git" / "index.lock").write_text("")
    with pytest.raises(Exception, match="git is busy"):
        Store.open(store_path).record("fact", "x", title="Blocked")
    assert (store_path / ".git" / "index.lock").exists()
