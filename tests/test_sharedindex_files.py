"""Folds of git's split index in real repositories: what goes into the shared index (an
import's files but its last seconds'), and the shared index's files (gitmem.store.sharedindex:
`write_shared`, `remove_unused`): a shared index a fold rebuilds is touched as git touches
it, and what a fold that died left behind is removed by the next fold, but nothing a live
writer holds."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import git
from test_gitindex import assert_agree, blob_id, gitmem_writes

from gitmem.store import gitindex

HOUR_AGO = time.time() - 3600


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose index gitmem wrote (a fold: an empty shared index, a.md split)."""
    git(tmp_path, "init", "-q")
    gitmem_writes(tmp_path, {"a.md": b"a"})
    return tmp_path


def test_a_fold_that_rebuilds_an_existing_shared_index_touches_it(repo: Path) -> None:
    """Git's write_shared_index freshens a shared index it names again, so that its expiry
    (gitmem's own after five minutes, git's splitIndex.sharedIndexExpire) counts from now."""
    tmp_path = repo
    git_dir = tmp_path / ".git"
    (empty,) = git_dir.glob("sharedindex.*")
    git(tmp_path, "update-index", "--no-split-index")  # a plain index: the next write folds
    os.utime(empty, (HOUR_AGO, HOUR_AGO))
    gitmem_writes(tmp_path, {"a.md": b"again"})  # the same empty shared index, rebuilt
    index = gitindex.read(git_dir / "index")
    assert index is not None and index.base == bytes.fromhex(empty.name.split(".")[1])
    assert time.time() - empty.stat().st_mtime < 60
    assert_agree(tmp_path)


def test_a_dead_folds_temporary_files_are_removed_by_the_next_fold(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp_path = repo
    monkeypatch.setattr(gitindex, "FOLD_AT", 1)
    git_dir = tmp_path / ".git"
    dead = subprocess.Popen(["true"])
    dead.wait()
    name = "0" * 40
    left = {
        f"sharedindex.{name}.tmp-{dead.pid}": True,  # its writer is gone
        f"gitmem-offsets.{name}.tmp-{dead.pid}": True,
        f"gitmem-offsets.{name}.tmp-{os.getpid()}-old": False,  # not a name we make
        f"sharedindex.{name}.tmp-{os.getppid()}": False,  # a live writer's, just made
    }
    for file in left:
        (git_dir / file).write_bytes(b"half a file")
    old_but_alive = git_dir / f"gitmem-offsets.{name}.tmp-{os.getppid()}"
    old_but_alive.write_bytes(b"a pid reused since")
    os.utime(old_but_alive, (HOUR_AGO, HOUR_AGO))
    left[old_but_alive.name] = True

    gitmem_writes(tmp_path, {"b.md": b"b"})  # a fold: its split part over FOLD_AT

    assert {f for f in left if not (git_dir / f).exists()} == {f for f, go in left.items() if go}
    assert_agree(tmp_path)
    git(tmp_path, "fsck", "--no-dangling")


def test_a_write_that_does_not_fold_leaves_temporary_files_alone(repo: Path) -> None:
    """Only a fold looks at the directory: a write's cost does not follow what lies in .git."""
    tmp_path = repo
    dead = subprocess.Popen(["true"])
    dead.wait()
    tmp = tmp_path / ".git" / f"sharedindex.{'0' * 40}.tmp-{dead.pid}"
    tmp.write_bytes(b"half a file")
    gitmem_writes(tmp_path, {"b.md": b"b"})
    assert tmp.exists()
    assert_agree(tmp_path)


def written(root: Path, files: dict[str, bytes], old: bool) -> dict[str, gitindex.Entry | None]:
    """Write these files (their mtime an hour ago if `old`) and their objects: the entries a
    write stages for them."""
    entries: dict[str, gitindex.Entry | None] = {}
    for path, data in files.items():
        target = root / path
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(data)
        if old:
            os.utime(target, (HOUR_AGO, HOUR_AGO))
        subprocess.run(["git", "hash-object", "-w", path], cwd=root, check=True, stdout=-3)
        entries[path] = gitindex.entry_for(path, blob_id(data), target.lstat())
    return entries


@pytest.mark.parametrize("first", [True, False])
def test_a_fold_puts_files_older_than_two_seconds_in_the_shared_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: bool
) -> None:
    """A fold keeps in the split part only what may still be racily clean (`_fresh`): after
    an import of thousands of files, the next write must not rewrite them all again."""
    monkeypatch.setattr(gitindex, "FOLD_AT", 5)
    git(tmp_path, "init", "-q")
    git_dir = tmp_path / ".git"
    if not first:  # a shared index there already, which the fold splices
        gitindex.stage(git_dir, written(tmp_path, {"a.md": b"a"}, old=True))
    imported = written(tmp_path, {f"old/{n}.md": f"old {n}\n".encode() for n in range(20)}, True)
    gitindex.stage(git_dir, {**imported, **written(tmp_path, {"new.md": b"now\n"}, False)})
    index = gitindex.read(git_dir / "index")
    assert index is not None and index.base is not None
    assert [e.path for e in index.entries] == [b"new.md"]
    assert_agree(tmp_path)


def test_a_fold_from_a_plain_index_decides_each_entry_once_across_a_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review (session 13): a fold from a plain index asked `_fresh` before splicing the whole
    index and again after; a second's tick in between left a just-written file in neither the
    shared index nor the split part, so `git status` saw it deleted and untracked. Here the
    file is written in one second, the write starts in the next and its splice ends in the
    one after, always."""
    git(tmp_path, "init", "-q")
    (tmp_path / "old.md").write_bytes(b"old")
    git(tmp_path, "add", "old.md")  # a plain index: an existing store, or after `git read-tree`
    real = gitindex.sharedindex.splice

    def slow(*args, **kwargs):  # type: ignore[no-untyped-def]
        out = real(*args, **kwargs)
        time.sleep(1.05 - time.time() % 1)
        return out

    monkeypatch.setattr(gitindex.sharedindex, "splice", slow)
    while time.time() % 1 < 0.6:  # the file is written late in a second
        time.sleep(0.01)
    (tmp_path / "a.md").write_bytes(b"A")
    git(tmp_path, "hash-object", "-w", "a.md")
    entry = gitindex.entry_for("a.md", blob_id(b"A"), (tmp_path / "a.md").lstat())
    while time.time() % 1 > 0.3:  # the write begins early in the next second...
        time.sleep(0.01)
    gitindex.stage(tmp_path / ".git", {"a.md": entry})  # ...and its splice ends in the one after
    assert git(tmp_path, "ls-files").split() == ["a.md", "old.md"]
    assert_agree(tmp_path)
