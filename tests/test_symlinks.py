"""Symbolic links in a store (issue 26): gitmem reads and writes regular files only. A link a
person puts under records/ is refused by `commit` and reported by `validate`, naming it; a
write through a linked directory is refused before anything is written; a link that arrives
from the remote is left out by the merge, named in the report, and the work tree stays clean.
Real repositories and a bare remote."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import assert_clean, git, snapshot
from test_sync import make_clone, run_sync

from gitmem.api import Store

pytest_plugins = ["test_sync"]  # its `remote` fixture


def _outside_record(tmp_path: Path, store: Store) -> tuple[Path, Path]:
    """A valid record file outside the store, and where a link to it would go inside."""
    written = store.record("fact", "Inside text.", title="Inside").record
    outside = tmp_path / "elsewhere" / "outside-aaaaaa.md"
    outside.parent.mkdir()
    text = (store.root / written.path).read_text()
    outside.write_text(text.replace(written.id, "outside-aaaaaa").replace("Inside", "Secretish"))
    return outside, (store.root / written.path).parent / "outside-aaaaaa.md"


def test_commit_refuses_a_record_link_pointing_outside(
    gm, store_path: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    outside, link = _outside_record(tmp_path, Store.open(store_path))
    link.symlink_to(outside)
    before = snapshot(store_path)
    run = gm("commit")
    assert run.code == 1
    shown = link.relative_to(store_path).as_posix()
    assert f"{shown}: a symbolic link; gitmem commits regular files only" in run.err
    assert snapshot(store_path) == before
    assert "Secretish" not in git(store_path, "log", "-p")
    run = gm("validate")
    assert run.code == 1 and f"{shown}: a symbolic link" in run.out
    run = gm("validate", str(link))  # a path given: the link, not its target
    assert run.code == 1 and f"{shown}: a symbolic link" in run.out


def test_commit_refuses_a_directory_link_instead_of_crashing(
    gm, store_path: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    outside, _ = _outside_record(tmp_path, Store.open(store_path))
    (store_path / "records" / "fact" / "2026-01").symlink_to(outside.parent)
    run = gm("commit")
    assert run.code == 1, run.err  # was 3: IsADirectoryError
    assert "records/fact/2026-01: a symbolic link" in run.err
    run = gm("validate")
    assert run.code == 1 and "records/fact/2026-01: a symbolic link" in run.out


def test_a_write_through_a_linked_directory_is_refused(
    gm, store_path: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    store = Store.open(store_path)
    month = store_path / store.record("fact", "First.", title="First").record.path
    elsewhere = tmp_path / "moved"
    month.parent.rename(elsewhere)
    month.parent.symlink_to(elsewhere)
    head = git(store_path, "rev-parse", "HEAD")
    listing = sorted(os.listdir(elsewhere))
    run = gm("record", "fact", "Second body.", "--title", "Second")
    assert run.code == 1
    shown = month.parent.relative_to(store_path).as_posix()
    assert f"{shown} is a symbolic link in the store's work tree" in run.err
    assert "nothing was written" in run.err
    assert git(store_path, "rev-parse", "HEAD") == head
    assert sorted(os.listdir(elsewhere)) == listing


def test_a_link_from_the_remote_is_left_out_and_the_work_tree_stays_clean(
    remote: Path, tmp_path: Path
) -> None:
    a, b, c = make_clone(remote, "a"), make_clone(remote, "b"), make_clone(remote, "c")
    rid = a.record("fact", "Shared text.", title="Shared").record.id
    run_sync(a)
    run_sync(b)
    run_sync(c)
    # Someone pushes a link with plain git (gitmem would refuse to commit it): b, with a
    # write of its own, merges; then c, with none, would fast-forward.
    month = Path(a.catalog()[rid]).parent
    b.record("fact", "Local text.", title="Local")
    for name, store in (("one", b), ("two", c)):
        link = f"{month}/evil-{name}.md"
        (a.root / link).symlink_to("/etc/hostname")
        git(a.root, "add", "-A")
        git(a.root, "commit", "-qm", "a link")
        git(a.root, "push", "-q", "origin", "main")
        result = run_sync(store)
        notes = [x.note for x in result.conflicts if x.kind == "link"]
        assert notes == [
            f"{link} is a symbolic link (or a submodule) on the remote: left out, and this "
            "merge removes it there — gitmem keeps regular files only; commit the file itself"
        ]
        assert_clean(store.root)
        assert not (store.root / link).is_symlink()
        assert "120000" not in git(store.root, "ls-tree", "-r", "HEAD")
        # The merge removed it from the remote; the clone that pushed it follows.
        assert "120000" not in git(remote, "ls-tree", "-r", "main")
        run_sync(a)
        assert_clean(a.root)
        assert not (a.root / link).is_symlink()
