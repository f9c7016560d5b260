"""Device refs: each clone pushes refs/gitmem/devices/<id>, every clone merges them all, and the
branch stays current for plain git and older gitmem. Real clones of a real bare remote."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import assert_clean, git
from test_sync import fact, make_clone, run_sync, tree

from gitmem.api import Store
from gitmem.sync.devices import ID_NAME

pytest_plugins = ["test_sync"]  # its `remote` fixture

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def device_refs(remote: Path) -> dict[str, str]:
    out = git(remote, "for-each-ref", "--format=%(refname) %(objectname)", "refs/gitmem/devices/")
    return dict(line.split() for line in out.splitlines())


def device_of(store: Store) -> str:
    return (store.root / ".git" / ID_NAME).read_text().strip()


def records(root: Path, rev: str = "HEAD") -> set[str]:
    names = git(root, "ls-tree", "-r", "--name-only", rev, "records").split()
    return {n.rsplit("/", 1)[-1].removesuffix(".md") for n in names}


def test_three_clones_converge_through_their_own_refs(remote: Path) -> None:
    a, b, c = (make_clone(remote, name) for name in "abc")
    ids = {fact(s, f"{s.root.name} decided the queue is {i}") for s in (a, b, c) for i in (1, 2)}
    pushed = {}
    for store in (a, b, c):
        result = run_sync(store)
        assert result.attempts == 1 and result.device == device_of(store)
        pushed[f"refs/gitmem/devices/{result.device}"] = result.pushed
    # Each clone's tip is on its own ref, which no other clone wrote (and the seed's).
    assert {r: t for r, t in device_refs(remote).items() if r in pushed} == pushed
    for store in (a, b):  # a second round: a and b merge what came after them
        run_sync(store)
    assert tree(a) == tree(b) == tree(c)
    assert ids <= records(a.root)
    assert len({device_of(s) for s in (a, b, c)}) == 3
    for store in (a, b, c):
        assert_clean(store.root)
    subprocess.run(["git", "fsck", "--strict"], cwd=remote, check=True, capture_output=True)
    hits = {h.id for h in c.recall("queue decided", mode="keyword", limit=10).hits}
    assert ids <= hits


def test_tips_of_several_devices_are_merged_in_one_commit(remote: Path) -> None:
    a, b, c = (make_clone(remote, name) for name in "abc")
    for store in (a, b):
        fact(store, f"Written on {store.root.name} before c syncs")
        run_sync(store)
    # The branch holds b's merge of a (b advanced it), yet a's and b's refs are both new to c.
    fact(c, "Written on c")
    before = git(c.root, "rev-parse", "HEAD").strip()
    result = run_sync(c)
    assert result.merged and result.incoming == 2
    new = git(c.root, "rev-list", f"{before}..HEAD", "--first-parent").split()
    assert len(new) == 1  # one merge commit, not one per device
    assert len(records(c.root)) == 3
    for line in git(c.root, "log", "--format=%B", "-1").splitlines():
        assert "<<<<<<<" not in line


def test_a_device_on_an_older_gitmem_that_pushes_only_the_branch(remote: Path) -> None:
    """An older gitmem (or plain git) publishes only to the branch: a new device merges the
    branch as one more input, and advances it with its own work for the old one to fetch."""
    old, new = make_clone(remote, "old"), make_clone(remote, "new")
    old_id = fact(old, "Pushed by an older gitmem to the branch only")
    git(old.root, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    new_id = fact(new, "Written on a device with device refs")
    result = run_sync(new)
    assert result.branch == "advanced" and {old_id, new_id} <= set(new.catalog())
    git(old.root, "fetch", "--quiet", "origin", "main")  # what the older sync fetches
    assert {old_id, new_id} <= records(old.root, "origin/main")
    assert f"refs/gitmem/devices/{device_of(new)}" in device_refs(remote)
    assert not (old.root / ".git" / ID_NAME).exists()


def test_the_first_sync_of_an_existing_store_creates_its_device_ref(remote: Path) -> None:
    a = make_clone(remote, "a")
    assert not (a.root / ".git" / ID_NAME).exists()
    assert run_sync(a).outgoing == 0  # nothing new, yet the ref appears
    assert device_refs(remote)[f"refs/gitmem/devices/{device_of(a)}"] == a.head()
    again = run_sync(a)  # nothing to push the second time
    assert again.branch == "current" and again.device == device_of(a)


def test_a_deleted_device_ref_is_pushed_again(remote: Path) -> None:
    a = make_clone(remote, "a")
    fact(a, "Kept when the ref goes")
    run_sync(a)
    ref = f"refs/gitmem/devices/{device_of(a)}"
    git(remote, "update-ref", "-d", ref)
    run_sync(a)
    assert device_refs(remote)[ref] == a.head()


def test_a_device_ref_force_pushed_elsewhere_is_merged_then_fast_forwarded(remote: Path) -> None:
    a, b = make_clone(remote, "a"), make_clone(remote, "b")
    run_sync(a)
    ref = f"refs/gitmem/devices/{device_of(a)}"
    stray = fact(b, "Someone pushed this onto a's ref by hand")
    git(b.root, "push", "--quiet", "--force", "origin", f"HEAD:{ref}")
    mine = fact(a, "a's own work")
    result = run_sync(a)
    assert result.attempts == 1 and {stray, mine} <= set(a.catalog())
    assert device_refs(remote)[ref] == a.head()  # a fast-forward over what was pushed there


def test_a_device_ref_with_unrelated_history_is_left_out_with_a_note(
    remote: Path, tmp_path: Path
) -> None:
    a = make_clone(remote, "a")
    other = tmp_path / "other"  # plain git, so that no commit can equal the store's first one
    git(tmp_path, "init", "--quiet", str(other))
    (other / "notes.md").write_text("A different history altogether\n")
    git(other, "add", "notes.md")
    git(other, "commit", "--quiet", "-m", "unrelated")
    git(other, "push", "--quiet", str(remote), "HEAD:refs/gitmem/devices/stranger")
    mine = fact(a, "Still syncs")
    result = run_sync(a)
    assert any(
        "refs/gitmem/devices/stranger" in note and "left out" in note for note in result.notes
    )
    assert set(a.catalog()) >= {mine} and len(records(a.root)) == 1
    assert_clean(a.root)


def test_only_the_branch_and_gitmem_refs_are_fetched(remote: Path) -> None:
    a, b = make_clone(remote, "a"), make_clone(remote, "b")
    fact(b, "On a side branch")
    for ref in ("refs/heads/other", "refs/gitmem/elsewhere/x", "refs/pull/1/head", "refs/tags/v1"):
        git(b.root, "push", "--quiet", "origin", f"HEAD:{ref}")
    run_sync(a)
    refs = git(a.root, "for-each-ref", "--format=%(refname)").split()
    fetched = [r for r in refs if r.startswith("refs/remotes/origin/")]
    assert sorted(fetched) == sorted(
        ["refs/remotes/origin/HEAD", "refs/remotes/origin/main"]
        + [f"refs/remotes/origin/devices/{d.rsplit('/', 1)[1]}" for d in device_refs(remote)]
    )
    assert not any("other" in r or "pull" in r or "tags" in r or "elsewhere" in r for r in refs)


def test_a_protected_branch_refuses_devices_yet_they_sync(remote: Path) -> None:
    """A remote whose branch only people may move (an update hook refuses it): the devices'
    refs still carry every record, and sync says the branch was refused, not an error."""
    hook = remote / "hooks" / "update"
    hook.write_text(
        '#!/bin/sh\ncase "$1" in refs/heads/*) echo "main is protected"; exit 1;; esac\n'
    )
    hook.chmod(0o755)
    a, b = make_clone(remote, "a"), make_clone(remote, "b")
    ida, idb = fact(a, "From a, past a protected branch"), fact(b, "From b as well")
    first = run_sync(a)
    assert first.branch == "refused" and first.attempts == 1
    run_sync(b)
    run_sync(a)
    assert {ida, idb} <= set(a.catalog()) and {ida, idb} <= set(b.catalog())
    assert tree(a) == tree(b)
    assert records(remote, "main") == set()  # the branch never moved


def test_a_plain_git_clone_sees_current_main(remote: Path, tmp_path: Path) -> None:
    stores = [make_clone(remote, name) for name in "abc"]
    ids = {fact(s, f"Shared from {s.root.name}") for s in stores}
    for _ in range(2):
        for store in stores:
            run_sync(store)
    plain = tmp_path / "plain"
    git(tmp_path, "clone", "--quiet", str(remote), str(plain))
    assert git(plain, "rev-parse", "HEAD^{tree}").strip() == tree(stores[0])
    assert ids <= records(plain)


@pytest.mark.slow
def test_the_simulation_of_many_devices_holds_its_checks() -> None:
    """A short run of benchmarks/sim_devices.py: the checks it reports hold."""
    done = subprocess.run(
        [sys.executable, str(BENCH / "sim_devices.py"), "--clones", "3", "--duration", "4"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=BENCH.parent,
    )
    assert done.returncode == 0, done.stderr
    import json

    result = json.loads(done.stdout)
    assert result["records"] >= 3 and result["records_lost"] == 0
    assert result["conflict_markers"] == 0 and result["clone_trees"] == 1
    assert result["fsck_remote"] and result["fsck_clones"] and result["branch_current"]
    assert result["push_rejections"] == 0 and result["failed_syncs"] == 0
    assert result["device_refs"] == 4  # three clones and the seed


def test_status_counts_another_devices_work_not_integrated_yet(remote: Path) -> None:
    """With a protected branch, other devices' work arrives only on their refs: `behind`
    (gitmem status, and what purge checks) counts it as of the last fetch."""
    from gitmem.sync.state import sync_status

    hook = remote / "hooks" / "update"
    hook.write_text('#!/bin/sh\ncase "$1" in refs/heads/*) exit 1;; esac\n')
    hook.chmod(0o755)
    a, b = make_clone(remote, "a"), make_clone(remote, "b")
    run_sync(a)
    fact(b, "Only on b's ref")
    run_sync(b)
    git(
        a.root, "fetch", "--quiet", "origin", "+refs/gitmem/devices/*:refs/remotes/origin/devices/*"
    )
    assert sync_status(a)["behind"] == 1
    run_sync(a)
    assert sync_status(a)["behind"] == 0
