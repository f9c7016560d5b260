"""The split part gitmem writes without a fold (gitmem.store.splitpart) is in git's own form:
a change of a shared path is a replacement (replace bitmap, path left empty), never an entry
of the same name, which git 2.39 reads into memory it frees before a `git commit -- path`,
`git reset --hard` or `git checkout` writes the index (a use after free; it crashed
`git commit` in session 13). After each kind of gitmem write, the real git reads, changes and
commits the index; where valgrind is installed, without reading freed memory."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import git, set_model
from test_gitindex import assert_agree, assert_no_shadowing, blob_id, gitmem_writes, ours

from gitmem.store import gitindex, splitpart
from gitmem.store.indexfile import NO_BITMAPS, encode, entry_for, with_entries
from gitmem.store.store import Store

OLD = [f"old/{n:02}.md" for n in range(12)]  # enough that git keeps the shared index as it is
VALGRIND = shutil.which("valgrind")


def old_writes(root: Path, changes: dict[str, bytes]) -> None:
    """A gitmem write of files dated a minute back: a fold puts them in the shared index."""
    for path, data in changes.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
        back = time.time() - 60
        os.utime(root / path, (back, back))
        subprocess.run(["git", "hash-object", "-w", path], cwd=root, check=True, stdout=-3)
    entries = {p: entry_for(p, blob_id(d), (root / p).lstat()) for p, d in changes.items()}
    gitindex.stage(root / ".git", entries)


def committed(root: Path) -> None:
    """HEAD made to say what the index says, as gitmem's commit does, without git writing
    the index (`git commit` would rewrite it in its own form): through a scratch index."""
    scratch = {**os.environ, "GIT_INDEX_FILE": str(root / ".git" / "scratch-index")}
    listing = "".join(f"{line}\n" for line in ours(root))
    for args, given in (
        (["read-tree", "--empty"], None),
        (["update-index", "--index-info"], listing),
    ):
        subprocess.run(["git", *args], cwd=root, env=scratch, input=given, text=True, check=True)
    tree = subprocess.run(
        ["git", "write-tree"], cwd=root, env=scratch, capture_output=True, text=True, check=True
    ).stdout.strip()
    (root / ".git" / "scratch-index").unlink()
    head = subprocess.run(["git", "rev-parse", "-q", "--verify", "HEAD"], cwd=root, stdout=-3)
    parent = ["-p", "HEAD"] if head.returncode == 0 else []
    git(root, "update-ref", "HEAD", git(root, "commit-tree", tree, *parent, "-m", "gitmem").strip())


def folded(root: Path) -> None:
    git(root, "init", "-q")
    old_writes(root, {p: p.encode() for p in OLD})


def added(root: Path) -> None:
    folded(root)
    committed(root)
    gitmem_writes(root, {"new/one.md": b"one"})


def amended(root: Path) -> None:
    folded(root)
    committed(root)
    gitmem_writes(root, {OLD[3]: b"amended", "new/one.md": b"one"})
    index = gitindex.read(root / ".git" / "index")
    assert index is not None and index.bitmaps()[1]  # the amend is a replacement


def after_gits_replacement(root: Path) -> None:
    folded(root)
    committed(root)
    (root / OLD[5]).write_bytes(b"by hand")
    git(root, "add", OLD[5])
    gitmem_writes(root, {OLD[6]: b"amended six"})


def removed(root: Path) -> None:
    folded(root)
    committed(root)
    gitmem_writes(root, {OLD[7]: None})


def removed_after_amends(root: Path) -> None:
    """A fold of a split part that holds replacements: spliced as bytes, their names first."""
    amended(root)
    committed(root)
    gitmem_writes(root, {OLD[8]: None})
    assert gitindex.staged_id(root / ".git", OLD[3]) == blob_id(b"amended")


def from_older_code(root: Path) -> None:
    """An index as gitmem wrote it before session 14: an amend shadowing the shared entry by
    name, no marker; the next write folds it once."""
    folded(root)
    (root / ".git" / splitpart.REPLACES).unlink()
    shadow_by_name(root, OLD[2], b"amended")
    committed(root)
    gitmem_writes(root, {"new/one.md": b"one"})


WRITES: dict[str, Callable[[Path], None]] = {
    "fold": folded,
    "new path": added,
    "amend": amended,
    "after git's replacement": after_gits_replacement,
    "removal": removed,
    "removal after amends": removed_after_amends,
    "index of older code": from_older_code,
}


def git_checked(root: Path, *args: str) -> None:
    """A git command that must succeed and, under valgrind where it is installed, read no
    memory it has freed."""
    command = ["git", *args]
    if VALGRIND:
        command = [VALGRIND, "-q", "--error-exitcode=99", *command]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True)
    assert done.returncode == 0 and "Invalid read" not in done.stderr, done.stderr[-2000:]


def shadow_by_name(root: Path, path: str, content: bytes) -> None:
    """`path`, a path of the shared index, written with `content` and staged as an entry of
    its name in the split part, no bitmaps: the form gitmem wrote before session 14."""
    index = gitindex.read(root / ".git" / "index")
    assert index is not None and index.base is not None
    (root / path).write_bytes(content)
    subprocess.run(["git", "hash-object", "-w", path], cwd=root, check=True, stdout=-3)
    shadow = entry_for(path, blob_id(content), (root / path).lstat())
    entries = with_entries(list(index.entries), [shadow])
    (root / ".git" / "index").write_bytes(encode(entries, index.base + NO_BITMAPS))


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(WRITES))
def test_git_reads_changes_and_commits_the_index_after_each_kind_of_write(
    tmp_path: Path, kind: str
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    WRITES[kind](root)
    committed(root)
    assert_no_shadowing(root)
    assert_agree(root)
    assert (root / ".git" / splitpart.REPLACES).exists()
    for n, args in enumerate(
        [
            ("commit", "-qm", "by hand", "--", OLD[0]),
            ("reset", "-q", "--hard"),
            ("read-tree", "-m", "HEAD"),  # rewrites the index (checkout -b to the same
            ("stash", "-q"),  # commit would not, so it never read the freed memory)
        ]
    ):
        copy = tmp_path / f"copy{n}"
        shutil.copytree(root, copy, symlinks=True)
        (copy / OLD[0]).write_bytes(b"edited by hand, longer")
        git_checked(copy, *args)
        git(copy, "fsck", "--no-progress")
    (root / "by-hand.md").write_bytes(b"by hand")
    git(root, "add", "by-hand.md")
    assert git(root, "status", "--porcelain").split() == ["A", "by-hand.md"]
    git_checked(root, "commit", "-qm", "by hand", "--", "by-hand.md")
    gitmem_writes(root, {"new/two.md": b"two", OLD[9]: b"amended nine"})  # over git's index
    committed(root)
    assert_no_shadowing(root)
    assert git(root, "status", "--porcelain") == ""
    assert_agree(root)


def test_the_store_that_crashed_git_commit(store_path: Path) -> None:
    """Session 13's crash (test_builtin_model): a new store, `git commit -- config.toml`
    (git writes a shared index whose entries are racily clean), a record (the write holds
    them in the split part), then `git commit -- config.toml` again."""
    set_model(store_path, "none")
    Store.open(store_path).record("fact", "The battery was flat", title="Flat battery")
    assert_no_shadowing(store_path)
    config = store_path / "config.toml"
    config.write_text(config.read_text().replace('model = "none"', 'model = "other"'))
    git_checked(store_path, "commit", "-qm", "model", "--", "config.toml")
    assert git(store_path, "status", "--porcelain") == ""


def test_a_name_an_older_gitmem_left_beside_the_marker_goes_with_the_next_change(
    tmp_path: Path,
) -> None:
    """An older gitmem sharing the store after the upgrade shadows a shared entry by name
    though the marker is there; gitmem's next change of that path writes the replacement and
    drops the named entry, which git would otherwise read over it."""
    folded(tmp_path)
    shadow_by_name(tmp_path, OLD[4], b"older gitmem")
    gitmem_writes(tmp_path, {OLD[4]: b"this gitmem"})
    assert_no_shadowing(tmp_path)
    assert gitindex.staged_id(tmp_path / ".git", OLD[4]) == blob_id(b"this gitmem")
    assert_agree(tmp_path)
