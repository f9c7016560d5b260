"""Sync edge cases: a private record a person broke by hand, a write that lands while a sync
pushes, a memo whose twins git pruned, git holding the index or a ref lock, the write lock
held past --timeout, a remote hook that does not speak UTF-8. Real clones and a bare remote,
no mocked git."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import assert_clean, git
from test_sync import fact, make_clone, remote_objects, run_sync

from gitmem.api import Store
from gitmem.errors import GitmemError
from gitmem.sync.gitcli import GitFailed
from gitmem.sync.state import sync_status

pytest_plugins = ["test_sync"]  # its `remote` fixture


def test_a_private_record_broken_by_hand_stays_private(remote: Path) -> None:
    a = make_clone(remote, "a")
    rid = fact(a, "Okapi lawsuit notes", "Pangolin settlement", scope="private")
    path = a.root / a.catalog()[rid]
    # A person's edit that the format refuses (a tag with a comma), committed with plain git.
    text = path.read_text().replace("tags: []", 'tags: ["legal, personal"]')
    assert text != path.read_text()
    path.write_text(text)
    git(a.root, "commit", "--quiet", "-am", "tidy tags")
    fact(a, "Something shared")
    run_sync(a)
    everything = remote_objects(remote)
    for leak in ("Okapi", "okapi", "Pangolin"):
        assert leak not in everything


def _hook(remote: Path, script: str) -> None:
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\n" + script)
    hook.chmod(0o755)


WRITE = (
    "from pathlib import Path; from gitmem.api import Store; "
    "Store.open(Path({root!r})).record('fact', 'body', title='Written during the push')"
)


def test_a_write_that_lands_during_the_push_still_counts_as_not_pushed(remote: Path) -> None:
    a = make_clone(remote, "a")
    fact(a, "Pushed by this sync")
    # The remote's hook runs while sync pushes (the write lock is free then): another agent
    # of this clone writes a record at that moment.
    code = WRITE.format(root=str(a.root))
    _hook(remote, f'env -u GIT_DIR -u GIT_QUARANTINE_PATH {sys.executable} -c "{code}"\n')
    run_sync(a)
    (remote / "hooks" / "pre-receive").unlink()
    assert len(a.repo.between(a.head() or "", [git(remote, "rev-parse", "main").strip()])) == 1
    assert sync_status(a)["ahead"] == 1
    assert run_sync(a).outgoing == 1
    assert sync_status(a)["ahead"] == 0
    assert_clean(a.root)


def test_twins_pruned_by_git_are_made_again(remote: Path) -> None:
    a = make_clone(remote, "a")
    fact(a, "Hidden thing", scope="private")
    fact(a, "Visible thing")
    _hook(remote, "exit 1\n")  # the push fails: the twins stay unreferenced here
    with pytest.raises(GitFailed):
        run_sync(a)
    (remote / "hooks" / "pre-receive").unlink()
    # What `git gc --auto` does to unreachable objects once they are old enough.
    subprocess.run(["git", "prune", "--expire=now"], cwd=a.root, check=True)
    assert run_sync(Store.open(a.root)).outgoing >= 1
    assert "Hidden" not in remote_objects(remote)
    subprocess.run(["git", "fsck", "--strict"], cwd=remote, check=True, capture_output=True)


def test_fast_forward_while_git_holds_the_index_refuses_and_changes_nothing(
    remote: Path,
) -> None:
    a, b = make_clone(remote, "a"), make_clone(remote, "b")
    fact(a, "Arrives later")
    run_sync(a)
    head = b.head()
    lock = b.repo.git_dir / "index.lock"
    lock.write_bytes(b"")  # a person's `git add -p` in progress
    with pytest.raises(GitmemError, match="git is busy"):
        run_sync(b)
    assert b.head() == head
    lock.unlink()
    assert run_sync(b).fast_forward
    assert_clean(b.root)


def test_a_write_lock_held_past_the_timeout_says_how_to_sync_again(remote: Path) -> None:
    a = make_clone(remote, "a")
    fact(a, "Waits for the lock")
    head = a.head()
    with Store.open(a.root)._exclusive(), pytest.raises(GitmemError) as caught:
        run_sync(a, timeout=2)
    assert "--timeout" in str(caught.value) and "--lock-timeout" not in str(caught.value)
    assert a.head() == head and sync_status(a)["ahead"] == 1


def test_a_hook_message_that_is_not_utf8_is_still_shown(remote: Path) -> None:
    a = make_clone(remote, "a")
    fact(a, "Refused in Latin-1")
    _hook(remote, "printf 'politique: refus\\351e\\n' >&2\nexit 1\n")
    with pytest.raises(GitFailed) as caught:
        run_sync(a)
    assert caught.value.kind == "rejected" and "politique: refus" in str(caught.value)


def test_a_tracking_ref_lock_left_by_a_killed_fetch_does_not_block_sync(remote: Path) -> None:
    a, b = make_clone(remote, "a"), make_clone(remote, "b")
    fact(b, "Arrives past the lock")
    run_sync(b)
    lock = a.repo.git_dir / "refs" / "remotes" / "origin" / "main.lock"
    lock.write_text("")  # what a fetch killed while writing the ref leaves
    old = time.time() - 600
    os.utime(lock, (old, old))
    result = run_sync(a, timeout=30)
    assert result.fast_forward and not lock.exists()
    assert any("lock" in note for note in result.notes)


def test_the_users_core_ssh_command_is_used(remote: Path, tmp_path: Path) -> None:
    a = make_clone(remote, "a")
    used = tmp_path / "used"
    ssh = tmp_path / "my-ssh.sh"
    ssh.write_text(f'#!/bin/sh\ntouch "{used}"\necho "no key for you" >&2\nexit 255\n')
    ssh.chmod(0o755)
    git(a.root, "config", "core.sshCommand", str(ssh))
    point = "ssh://git@memory.example.invalid/me/memory.git"
    git(a.root, "remote", "set-url", "origin", point)
    with pytest.raises(GitFailed):
        run_sync(a, timeout=10)
    assert used.exists()


def test_a_record_made_private_before_its_first_sync_never_leaves(remote: Path) -> None:
    a = make_clone(remote, "a")
    shared = fact(a, "Deploys happen on Tuesdays")
    secret = fact(a, "Okapi budget", "Okapi figures for the next quarter")
    a.amend(secret, {"scope": "private"})  # shared when written, private before any sync
    fact(a, "Another shared thing")
    run_sync(a)
    everything = remote_objects(remote)
    for leak in ("Okapi", "okapi", secret):
        assert leak not in everything
    b = make_clone(remote, "b")
    assert shared in b.catalog() and secret not in b.catalog()
    assert secret in a.catalog()
    subprocess.run(["git", "fsck", "--strict"], cwd=remote, check=True, capture_output=True)
