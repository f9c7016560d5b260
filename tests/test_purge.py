"""`gitmem purge`: a leaked text or a record removed from every object of history, on real
repositories (a store, a bare remote and clones of it), with the CLI run as a user would.

The leaked value is built at run time, so this file holds no literal credential.
"""

from __future__ import annotations

import json
import os
import random
import string
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
import test_sync
from conftest import assert_clean, git
from test_sync import make_clone

from gitmem.api import Store
from gitmem.errors import GitmemError
from gitmem.sync.purge import PENDING_NAME
from gitmem.sync.sync import sync

CONFIRM = "--yes-rewrite-history"
remote = test_sync.remote  # the fixture: a bare remote holding a new store's first commit


def token(seed: int = 7) -> str:
    rng = random.Random(seed)
    return "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))


def when(day: int) -> datetime:
    return datetime(2030, 3, day, 9, 0, tzinfo=UTC)  # after the store's first commit (now)


def all_objects(root: Path) -> bytes:
    """Every object in the repository, reachable or not, as `git cat-file` gives them."""
    done = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=root,
        capture_output=True,
        check=True,
    )
    return done.stdout


def state(root: Path) -> tuple[str, str, str]:
    """HEAD, the work tree's status and the refs: what a refused purge must leave alone."""
    return (
        git(root, "rev-parse", "HEAD"),
        git(root, "status", "--porcelain", "--untracked-files=all"),
        git(root, "for-each-ref"),
    )


def blobs(root: Path) -> dict[str, set[str]]:
    """Each path's blob ids across all of history."""
    found: dict[str, set[str]] = {}
    for line in git(root, "rev-list", "--all", "--objects").splitlines():
        oid, _, path = line.partition(" ")
        if path.endswith(".md"):
            found.setdefault(path, set()).add(oid)
    return found


def log(root: Path) -> list[str]:
    """Every commit's subject, body, author and dates: what purge must keep."""
    return git(root, "log", "--format=%s%n%b%n%an <%ae> %aI %cI%n--").split("--\n")


@pytest.fixture
def leaky(store_path: Path) -> tuple[Store, dict[str, str]]:
    """A store where one record let a token in (--allow-secret), then was superseded, among
    records that never held it."""
    store = Store.open(store_path)
    ids = {
        "before": store.record(
            "fact", "Deploys run from the release branch.", title="Deploys", now=when(1)
        ).record.id,
        "leak": store.record(
            "fact",
            f"CI pushes with GITHUB_TOKEN={token()} from the runner.",
            title="CI token",
            secrets="allow",
            now=when(2),
        ).record.id,
        "after": store.record(
            "fact", "The cache is redis on port 6379.", title="Cache", now=when(3)
        ).record.id,
    }
    store.supersede(ids["leak"], "CI pushes with the runner's own token.", title="CI", now=when(4))
    return store, ids


def test_purge_refuses_without_the_confirmation_and_changes_nothing(leaky, gm) -> None:  # type: ignore[no-untyped-def]
    store, _ids = leaky
    before = state(store.root)
    result = gm("purge", "--text", token())
    assert result.code == 1
    assert CONFIRM in result.err and "cannot be undone" in result.err
    assert token() not in result.out + result.err
    assert state(store.root) == before
    assert token().encode() in all_objects(store.root)


def test_purge_removes_the_text_from_every_object_and_keeps_everything_else(leaky, gm) -> None:  # type: ignore[no-untyped-def]
    store, ids = leaky
    old_blobs, old_log = blobs(store.root), log(store.root)
    untouched = {p: b for p, b in old_blobs.items() if ids["leak"] not in p}
    as_of = {
        (rid, day): store.get(rid, as_of=when(day).isoformat())
        for rid in (ids["before"], ids["after"])
        for day in (3, 5)
    }
    result = gm("purge", "--text", token(), CONFIRM)
    assert result.code == 0, result.err
    assert token() not in result.out + result.err
    assert "purged the text from history: 2 version(s)"  # written, then superseded in result.out
    assert "revoke or rotate the credential" in result.out
    assert token().encode() not in all_objects(store.root)
    assert not (store.root / ".git" / "ORIG_HEAD").exists()
    # Every other record keeps every version's bytes; commits keep messages, authors, dates.
    assert {p: b for p, b in blobs(store.root).items() if ids["leak"] not in p} == untouched
    assert log(store.root) == old_log
    reopened = Store.open(store.root)
    for (rid, day), text in as_of.items():
        assert reopened.get(rid, as_of=when(day).isoformat()) == text
    old = reopened.get(ids["leak"], as_of=when(3).isoformat())
    assert "GITHUB_TOKEN=[PURGED]" in old.body
    # The index was rebuilt from the new history: recall finds the purged version's words.
    hits = reopened.recall("CI pushes runner", mode="keyword").hits
    assert hits and hits[0].id != ids["leak"]
    assert_clean(store.root)
    assert not (store.root / ".git" / "filter-repo").exists()


def test_purge_of_a_record_drops_every_version_of_it(leaky, gm) -> None:  # type: ignore[no-untyped-def]
    store, ids = leaky
    others = {p: b for p, b in blobs(store.root).items() if ids["leak"] not in p}
    result = gm("purge", "--record", ids["leak"], CONFIRM, "--json")
    assert result.code == 0, result.err
    answer = json.loads(result.out)  # the schema docs/cli.md gives
    assert set(answer) == {
        "head_before", "head_after", "blobs_changed", "paths", "remote", "url", "push_pending"
    }  # fmt: skip
    assert answer["blobs_changed"] == 2 and answer["remote"] is None
    assert ids["leak"] not in "".join(blobs(store.root))
    assert token().encode() not in all_objects(store.root)
    assert blobs(store.root) == others
    # The commit that only wrote the record is gone; the others keep their messages (the
    # superseding record stays, naming an id that history no longer has).
    assert [s.split("\n")[0] for s in log(store.root)[:-1]] == [
        "supersede(fact): CI",
        "record(fact): Cache",
        "record(fact): Deploys",
        "init: a new gitmem store",
    ]
    assert_clean(store.root)


def test_purge_refuses_what_it_cannot_find_without_printing_it(leaky, gm) -> None:  # type: ignore[no-untyped-def]
    store, _ids = leaky
    before = state(store.root)
    missing = token(seed=99)
    result = gm("purge", "--text", missing, CONFIRM)
    assert result.code == 1 and "nothing to purge" in result.err
    assert missing not in result.err
    assert gm("purge", "--record", "no-such-record", CONFIRM).code == 1
    assert gm("purge", "--text", "abc", CONFIRM).code == 2  # too short to be anyone's secret
    assert gm("purge", CONFIRM).code == 2  # nothing named
    assert state(store.root) == before


def test_purge_refuses_a_dirty_work_tree(leaky, gm) -> None:  # type: ignore[no-untyped-def]
    store, _ids = leaky
    path = next((store.root / "records").rglob("*.md"))
    path.write_text(path.read_text() + "\nan edit git does not have yet\n")
    before = state(store.root)
    result = gm("purge", "--text", token(), CONFIRM)
    assert result.code == 1 and "changes git does not have" in result.err
    assert state(store.root) == before


def test_purge_reads_the_text_from_a_file_or_stdin(leaky, gm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store, _ids = leaky
    result = gm("purge", "--text-file", "-", CONFIRM, input=f"{token()}\n".encode())
    assert result.code == 0, result.err
    assert token().encode() not in all_objects(store.root)


# --- with a remote ----------------------------------------------------------------------


def reachable(bare: Path) -> str:
    """The content of every object the remote's branches reach."""
    listing = git(bare, "rev-list", "--all", "--objects").split()
    oids = [word for word in listing if len(word) == 40]
    return "".join(git(bare, "cat-file", "-p", oid) for oid in oids)


def test_purge_then_sync_replaces_the_remote_history(remote: Path, gm) -> None:  # type: ignore[no-untyped-def]
    a = make_clone(remote, "a")
    a.record("fact", f"Deploy with {token()} today.", title="Deploy", secrets="allow")
    a.record("fact", "The queue is rabbitmq.", title="Queue")
    sync(a, os.environ)
    assert token() in reachable(remote)
    result = gm("purge", "--text", token(), CONFIRM, "--store", str(a.root))
    assert result.code == 0, result.err
    assert 'run "gitmem sync" here next' in result.out and "gitmem clone" in result.out
    assert (a.root / ".git" / PENDING_NAME).exists()
    a.record("fact", "Written after the purge.", title="Later")
    done = sync(Store.open(a.root), os.environ)
    assert any("forced push" in note for note in done.notes)
    assert token() not in reachable(remote)
    assert token().encode() not in all_objects(a.root)  # the fetch did not bring it back
    assert "Written after the purge." in reachable(remote)
    assert not (a.root / ".git" / PENDING_NAME).exists()
    assert_clean(a.root)
    # A new clone has the purged history and every record.
    fresh = make_clone(remote, "fresh")
    assert sorted(fresh.catalog()) == sorted(Store.open(a.root).catalog())


def test_purge_refuses_while_the_remote_has_work_not_integrated(remote: Path, gm) -> None:  # type: ignore[no-untyped-def]
    a = make_clone(remote, "a")
    b = make_clone(remote, "b")
    a.record("fact", f"Deploy with {token()} today.", title="Deploy", secrets="allow")
    sync(a, os.environ)
    b.record("fact", "Another device's note.", title="Other device")
    sync(b, os.environ)
    git(a.root, "fetch", "--quiet", "origin", "+refs/heads/main:refs/remotes/origin/main")
    before = state(a.root)
    result = gm("purge", "--text", token(), CONFIRM, "--store", str(a.root))
    assert result.code == 1 and '"gitmem sync" first' in result.err
    assert state(a.root) == before


def test_sync_after_purge_never_overwrites_another_devices_push(remote: Path, gm) -> None:  # type: ignore[no-untyped-def]
    a = make_clone(remote, "a")
    b = make_clone(remote, "b")
    a.record("fact", f"Deploy with {token()} today.", title="Deploy", secrets="allow")
    sync(a, os.environ)
    sync(b, os.environ)
    assert gm("purge", "--text", token(), CONFIRM, "--store", str(a.root)).code == 0
    b.record("fact", "Pushed after the purge, elsewhere.", title="Elsewhere")
    sync(b, os.environ)
    tip = git(remote, "rev-parse", "main")
    result = gm("sync", "--store", str(a.root))
    assert result.code == 1 and "moved since the purge" in result.err
    assert git(remote, "rev-parse", "main") == tip  # nothing of b's was overwritten
    assert (a.root / ".git" / PENDING_NAME).exists()


def test_a_sync_that_fetched_before_a_purge_finished_merges_nothing(remote: Path, gm) -> None:  # type: ignore[no-untyped-def]
    from gitmem.sync.gitcli import Deadline
    from gitmem.sync.integrate import integrate

    a = make_clone(remote, "a")
    a.record("fact", f"Deploy with {token()} today.", title="Deploy", secrets="allow")
    sync(a, os.environ)
    old_tip = git(remote, "rev-parse", "main").strip()
    assert gm("purge", "--text", token(), CONFIRM, "--store", str(a.root)).code == 0
    head = git(a.root, "rev-parse", "HEAD")
    # What a sync that fetched the old history just before the purge would integrate.
    with pytest.raises(GitmemError, match="purged while this sync fetched"):
        integrate(Store.open(a.root), "origin", old_tip, Deadline.after(10))
    assert git(a.root, "rev-parse", "HEAD") == head


def test_purge_keeps_private_records_on_the_device(remote: Path, gm) -> None:  # type: ignore[no-untyped-def]
    a = make_clone(remote, "a")
    a.record("fact", "Only on this laptop: the home router.", title="Home", scope="private")
    a.record("fact", f"Deploy with {token()} today.", title="Deploy", secrets="allow")
    sync(a, os.environ)
    assert "home router" not in reachable(remote)
    assert gm("purge", "--text", token(), CONFIRM, "--store", str(a.root)).code == 0
    a.record("fact", "After the purge.", title="After")
    sync(Store.open(a.root), os.environ)
    shared = reachable(remote)
    assert token() not in shared and "home router" not in shared and "After the purge." in shared
    assert "home router" in git(a.root, "log", "-p")  # still here, in local history
    fresh = make_clone(remote, "fresh")
    assert sorted(fresh.catalog()) == sorted(
        rid for rid in Store.open(a.root).catalog() if not rid.startswith("home-")
    )
