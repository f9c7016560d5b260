"""Messages, acknowledgements, tasks and presence exchanged between two clones through a bare
remote, as two devices do: each sees the other's after both have synced, concurrent edits of
one task converge without conflict markers (both versions kept), and heartbeats travel beside
the branch without a commit on it. Real repositories; no mocked git."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import assert_clean, git

from gitmem.api import Store
from gitmem.coord import tasks
from gitmem.coord.coord import Coord
from gitmem.sync.clone import clone
from gitmem.sync.sync import SyncResult, sync

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def on(store: Store, device: str) -> SyncResult:
    return sync(store, {**os.environ, "GITMEM_DEVICE": device})


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "--quiet", "--bare", str(bare))
    seed, _ = Store.init(tmp_path / "seed")
    git(seed.root, "remote", "add", "origin", str(bare))
    on(seed, "seed")
    return bare


@pytest.fixture
def pair(remote: Path) -> tuple[Store, Store]:
    a = Store.open(clone(str(remote), remote.parent / "a", os.environ))
    b = Store.open(clone(str(remote), remote.parent / "b", os.environ))
    return a, b


def exchange(a: Store, b: Store) -> None:
    """Both devices sync, then the first again: each has everything."""
    on(a, "a")
    on(b, "b")
    on(a, "a")
    assert git(a.root, "rev-parse", "HEAD^{tree}") == git(b.root, "rev-parse", "HEAD^{tree}")


def test_a_message_and_its_ack_travel_between_devices(pair: tuple[Store, Store]) -> None:
    a, b = pair
    alice, bob = Coord(a, "alice", "a"), Coord(b, "bob", "b")
    sent = alice.send("bob", "request", "Please review the webhook PR", priority="high")
    assert bob.inbox() == []  # not before a sync
    exchange(a, b)
    (got,) = bob.inbox(unread=True)
    assert (got.id, got.record.agent, got.field("priority")) == (sent.id, "alice", "high")
    bob.ack(sent.id)
    bob.reply(sent.id, "Looked at it: two nits, otherwise fine.")
    assert alice.inbox(sent=True)[0].acked_by == ()  # the ack has not travelled yet
    exchange(a, b)
    assert alice.inbox(sent=True)[0].acked_by == ("bob",)
    (answer,) = alice.inbox(unread=True)
    assert answer.thread == sent.id and answer.field("reply_to") == sent.id
    for store in (a, b):
        assert_clean(store.root)


def test_concurrent_acks_of_a_broadcast_both_count(pair: tuple[Store, Store]) -> None:
    a, b = pair
    sent = Coord(a, "alice", "a").send("*", "alert", "Deploys are frozen until Monday")
    exchange(a, b)
    Coord(a, "carol", "a").ack(sent.id)  # carol on one device, bob on the other, at once
    Coord(b, "bob", "b").ack(sent.id)
    exchange(a, b)
    for store in (a, b):
        (mine,) = Coord(store, "alice").inbox(sent=True)
        assert sorted(mine.acked_by) == ["bob", "carol"]
        assert "<<<<<<<" not in (store.root / mine.record.path).read_text(encoding="utf-8")


def test_a_task_edited_on_two_devices_converges_and_keeps_both_versions(
    pair: tuple[Store, Store],
) -> None:
    a, b = pair
    started = tasks.start(a, "alice", "Migrate webhooks to v2", device="a", now=T0)
    tid = started.record.id
    exchange(a, b)
    tasks.transition(
        a, "alice", tid, "update", note="half moved", device="a", now=T0 + timedelta(hours=1)
    )
    tasks.transition(
        b, "bob", tid, "suspend", note="infra is down", device="b", now=T0 + timedelta(hours=2)
    )
    exchange(a, b)
    for store in (a, b):
        (task,) = tasks.list_tasks(store)  # one task, the later version current
        assert task.id == tid and tasks.state_of(task) == "suspended"
        assert task.extra["note"] == "infra is down"
        text = (store.root / task.path).read_text(encoding="utf-8")
        assert "<<<<<<<" not in text and ">>>>>>>" not in text
        kept = [r for r in store.records() if r.superseded_by == tid]
        assert [r.extra["note"] for r in kept] == ["half moved"]  # the other edit, kept
        # Both transitions are in the task's history, and the merge that chose between them.
        operations = sorted(v.operation for v in store.history(tid))
        assert operations == ["record", "sync", "task-suspend", "task-update"]
        assert_clean(store.root)


def test_presence_travels_on_its_own_ref_without_a_commit_on_the_branch(
    pair: tuple[Store, Store], remote: Path
) -> None:
    a, b = pair
    head = a.head()
    Coord(a, "alice", "a").heartbeat(project="pay", note="reviewing")
    Coord(a, "alice", "a").heartbeat()
    assert a.head() == head and git(a.root, "status", "--porcelain") == ""
    assert Coord(b, "bob", "b").agents() == []
    on(a, "a")
    assert a.head() == head  # the sync made no commit for it either
    assert git(remote, "for-each-ref", "--format=%(refname)", "refs/gitmem/presence/").split() == [
        "refs/gitmem/presence/a"
    ]
    remote_log = git(remote, "rev-list", "--count", "refs/heads/main")
    on(b, "b")
    (seen,) = Coord(b, "bob", "b").agents()
    assert (seen.agent, seen.device, seen.project, seen.note, seen.local) == (
        "alice",
        "a",
        "pay",
        "reviewing",
        False,
    )
    Coord(b, "bob", "b").heartbeat()
    on(b, "b")
    on(a, "a")
    assert {(p.agent, p.device) for p in Coord(a, "alice", "a").agents()} == {
        ("alice", "a"),
        ("bob", "b"),
    }
    assert git(remote, "rev-list", "--count", "refs/heads/main") == remote_log
    first = git(remote, "rev-parse", "refs/gitmem/presence/a")
    on(a, "a")  # nothing new: nothing pushed
    assert git(remote, "rev-parse", "refs/gitmem/presence/a") == first
