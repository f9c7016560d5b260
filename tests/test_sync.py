"""Sync between clones through a bare remote: exchange, merge, private scope, status, CLI.

Real repositories in a temporary directory: a bare remote and several clones; no mocked git.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import assert_clean, git

from gitmem.api import Store
from gitmem.errors import GitmemError
from gitmem.store.git import GitRepo
from gitmem.sync.clone import clone
from gitmem.sync.merge import plan_merge
from gitmem.sync.sync import SyncResult, sync


def run_sync(store: Store, **kwargs: object) -> SyncResult:
    return sync(store, os.environ, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """A bare remote holding a new store's first commit."""
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "--quiet", "--bare", str(bare))
    seed, _ = Store.init(tmp_path / "seed")
    git(seed.root, "remote", "add", "origin", str(bare))
    assert run_sync(seed).outgoing == 1
    return bare


def make_clone(remote: Path, name: str) -> Store:
    path = clone(str(remote), remote.parent / name, os.environ)
    return Store.open(path)


def fact(store: Store, title: str, body: str = "", **kwargs: object) -> str:
    result = store.record("fact", body or f"{title} body text", title=title, **kwargs)  # type: ignore[arg-type]
    return result.record.id


def tree(store: Store) -> str:
    return git(store.root, "rev-parse", "HEAD^{tree}").strip()


def remote_objects(remote: Path) -> str:
    """The text of every object in the remote, for leak checks."""
    listing = git(remote, "cat-file", "--batch-all-objects", "--batch-check")
    texts = []
    for line in listing.splitlines():
        oid, kind, _ = line.split()
        texts.append(git(remote, "cat-file", "-p", oid) if kind != "tree" else "")
        if kind == "tree":
            texts.append(git(remote, "ls-tree", oid))
    return "\n".join(texts)


def test_two_clones_exchange_records_and_recall_finds_them(remote: Path) -> None:
    a, b = make_clone(remote, "a"), make_clone(remote, "b")
    ida = fact(a, "Webhooks retry with exponential backoff")
    idb = fact(b, "Payments run on Postgres fifteen")
    assert run_sync(a).outgoing == 1
    result = run_sync(b)
    assert result.merged and result.incoming == 1 and result.outgoing == 2
    first = run_sync(a)
    assert first.fast_forward and first.outgoing == 0
    assert tree(a) == tree(b)
    assert {ida, idb} <= set(a.catalog()) and {ida, idb} <= set(b.catalog())
    assert [h.id for h in a.recall("postgres payments", mode="keyword").hits] == [idb]
    assert [h.id for h in b.recall("webhooks backoff", mode="keyword").hits] == [ida]
    for store in (a, b):
        assert_clean(store.root)
    subprocess.run(["git", "fsck", "--strict"], cwd=remote, check=True, capture_output=True)


def test_sync_without_remote_says_so_and_changes_nothing(store_path: Path, gm) -> None:  # type: ignore[no-untyped-def]
    before = git(store_path, "rev-parse", "HEAD")
    done = gm("sync")
    assert done.code == 0
    assert "no remote origin configured" in done.out
    assert gm("sync", "--json").out.count('"state": "no-remote"') == 1
    assert git(store_path, "rev-parse", "HEAD") == before


def test_merge_commit_holds_only_the_other_sides_changes(remote: Path) -> None:
    a, b = make_clone(remote, "a"), make_clone(remote, "b")
    fact(a, "From a")
    run_sync(a)
    fact(b, "From b")
    run_sync(b)
    merge = b.repo.commit(b.head() or "")
    assert len(merge.parents) == 2
    assert merge.trailers()["Gitmem-Operation"] == "sync"
    # Each path the merge wrote equals one parent's version: no change of its own.
    for parent in merge.parents:
        other = next(p for p in merge.parents if p != parent)
        for change in b.repo.diff(parent, merge.id):
            assert change.new == b.repo.entry_id(other, change.path)


def both_edited(remote: Path) -> tuple[Store, Store, str]:
    a, b = make_clone(remote, "a"), make_clone(remote, "b")
    rid = fact(a, "Shared decision")
    run_sync(a)
    run_sync(b)
    from datetime import UTC, datetime

    a.amend(rid, {"title": "Edited on a"}, now=datetime(2030, 1, 1, tzinfo=UTC))
    b.amend(rid, {"title": "Edited on b"}, now=datetime(2030, 1, 2, tzinfo=UTC))
    return a, b, rid


def converge(first: Store, second: Store) -> None:
    run_sync(first)
    run_sync(second)
    run_sync(first)


def test_same_record_edited_on_both_sides_converges_whoever_syncs_first(
    remote: Path, tmp_path: Path
) -> None:
    a, b, rid = both_edited(remote)
    # The same starting point, twice: once a syncs first, once b does.
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("remote.git", "a", "b"):
        shutil.copytree(tmp_path / name, copy / name, symlinks=True)
    for name in ("a", "b"):
        git(copy / name, "remote", "set-url", "origin", str(copy / "remote.git"))
    a2, b2 = Store.open(copy / "a"), Store.open(copy / "b")
    converge(a, b)
    converge(b2, a2)
    assert tree(a) == tree(b) == tree(a2) == tree(b2)
    current = a.get(rid)
    assert current.title == "Edited on b"  # the later `updated` wins
    (variant,) = current.supersedes
    old = a.get(variant)
    assert old.title == "Edited on a" and old.status == "superseded"
    assert old.superseded_by == rid
    assert variant.startswith(rid + "-")
    for store in (a, b):
        assert_clean(store.root)
        for path in store.root.rglob("*.md"):
            assert "<<<<<<<" not in path.read_text()


def test_conflict_is_reported(remote: Path) -> None:
    a, b, rid = both_edited(remote)
    run_sync(a)
    result = run_sync(b)
    assert [c.key for c in result.conflicts] == [rid]
    assert "changed on both sides" in result.conflicts[0].note
    message = b.repo.commit(b.head() or "").message
    assert "Gitmem-Conflicts: 1" in message


def test_plan_is_symmetric(remote: Path) -> None:
    a, b, _ = both_edited(remote)
    run_sync(a)
    git(b.root, "fetch", "--quiet", "origin")
    theirs = b.repo.resolve("refs/remotes/origin/main") or ""
    ours = b.head() or ""
    base = b.repo.merge_base(ours, theirs) or ""
    one = plan_merge(b.repo, base, ours, theirs)
    two = plan_merge(b.repo, base, theirs, ours)
    merged_one = _apply(b.repo, ours, one.changes)
    merged_two = _apply(b.repo, theirs, two.changes)
    assert merged_one == merged_two


def _apply(repo: GitRepo, commit: str, changes: dict[str, bytes | None]) -> dict[str, bytes]:
    files = {path: repo.blob(blob) for path, blob in repo.files(commit, "")}
    for path, data in changes.items():
        if data is None:
            files.pop(path, None)
        else:
            files[path] = data
    return files


def test_edit_against_forget_keeps_the_edit(remote: Path) -> None:
    a, b = make_clone(remote, "a"), make_clone(remote, "b")
    rid = fact(a, "Keep me")
    run_sync(a)
    run_sync(b)
    a.forget(rid, reason="obsolete")
    b.amend(rid, {"title": "Kept by an edit"})
    run_sync(a)
    result = run_sync(b)
    assert [c.kind for c in result.conflicts] == ["edit-vs-forget"]
    run_sync(a)
    assert a.get(rid).title == "Kept by an edit" == b.get(rid).title
    assert tree(a) == tree(b)


def test_config_changed_on_both_sides_has_one_deterministic_winner(remote: Path) -> None:
    a, b = make_clone(remote, "a"), make_clone(remote, "b")
    for store, extra in ((a, "# from a\n"), (b, "# from b\n")):
        text = (store.root / "config.toml").read_text() + extra
        store.repo.commit_files(
            {"config.toml": text.encode()},
            "config\n",
            store.repo.config_identity(),  # type: ignore[arg-type]
            store.repo.config_identity(),  # type: ignore[arg-type]
            store.head(),
        )
    run_sync(a)
    result = run_sync(b)
    assert [c.kind for c in result.conflicts] == ["file"]
    run_sync(a)
    assert tree(a) == tree(b)
    assert "<<<<<<<" not in (a.root / "config.toml").read_text()
    assert_clean(a.root)


# --- private scope ------------------------------------------------------------------------

IMPORTED = {"type": "fact", "body": "text", "created": "2026-01-01T00:00:00Z", "scope": "shared"}


def test_private_records_never_reach_the_remote_yet_recall_finds_them(remote: Path) -> None:
    a, b = make_clone(remote, "a"), make_clone(remote, "b")
    shared = fact(a, "Deploys happen on Tuesdays")
    private = fact(a, "Zanzibar salary negotiation", "Quokka figures", scope="private")
    fact(a, "Another shared thing")
    a.import_records(
        [
            {**IMPORTED, "id": "imported-shared-aaaaaa", "title": "Imported shared"},
            {**IMPORTED, "id": "wombat-bbbbbb", "title": "Wombat secret", "scope": "private"},
        ]
    )
    run_sync(a)
    run_sync(b)
    everything = remote_objects(remote)
    for leak in ("Zanzibar", "zanzibar", "Quokka", private, "Wombat", "wombat"):
        assert leak not in everything
    assert shared in b.catalog() and private not in b.catalog()
    hits = [h.id for h in a.recall("zanzibar salary", mode="keyword").hits]
    assert hits == [private]
    # With private records, what is pushed is a twin of the local tip, never the tip itself.
    assert git(remote, "rev-parse", "main").strip() != a.head()
    assert_clean(a.root)
    subprocess.run(["git", "fsck", "--strict"], cwd=remote, check=True, capture_output=True)


def test_without_private_records_the_pushed_commit_is_the_local_one(remote: Path) -> None:
    a = make_clone(remote, "a")
    fact(a, "Plain")
    run_sync(a)
    assert git(remote, "rev-parse", "main").strip() == a.head()
    assert not (a.repo.git_dir / "gitmem-publish.json").read_text().count('"twins": {"')


def test_private_twins_survive_losing_the_memo(remote: Path) -> None:
    a = make_clone(remote, "a")
    fact(a, "Hidden thing", scope="private")
    fact(a, "Visible thing")
    run_sync(a)
    pushed = git(remote, "rev-parse", "main").strip()
    (a.repo.git_dir / "gitmem-publish.json").unlink()
    fact(a, "Visible again")
    run_sync(a)
    assert pushed in git(remote, "rev-list", "main")  # same twins: a fast-forward
    assert "Hidden" not in remote_objects(remote)


def test_private_cannot_supersede_shared(remote: Path) -> None:
    a = make_clone(remote, "a")
    rid = fact(a, "Shared one")
    before = a.head()
    with pytest.raises(GitmemError, match="private record cannot supersede"):
        a.supersede(rid, "new body", title="Private replacement", scope="private")
    assert a.head() == before


# --- status, clone, CLI -------------------------------------------------------------------


def test_status_shows_ahead_and_behind(remote: Path, gm) -> None:  # type: ignore[no-untyped-def]
    a, b = make_clone(remote, "a"), make_clone(remote, "b")
    fact(a, "One")
    fact(a, "Two")
    assert (
        gm("status", "--store", str(a.root))
        .out.splitlines()[-1]
        .startswith("sync      origin: 2 writes not pushed yet, 0 remote commits not merged yet")
    )
    run_sync(a)
    git(b.root, "fetch", "--quiet", "origin")
    from gitmem.sync.state import sync_status

    assert sync_status(a)["ahead"] == 0
    assert sync_status(b)["behind"] == 2
    run_sync(b)
    assert sync_status(b)["behind"] == 0 and sync_status(b)["ahead"] == 0


def test_cli_remote_clone_sync(tmp_path: Path, remote: Path, gm) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "laptop"
    done = gm("clone", str(remote), str(target))
    assert done.code == 0, done.err
    assert gm("record", "fact", "Body", "--title", "From laptop", "--store", str(target)).code == 0
    done = gm("sync", "--store", str(target))
    assert done.code == 0, done.err
    assert done.out.startswith(f"synced with origin ({remote}): received 0 change(s), sent 1")
    shown = gm("remote", "show", "--store", str(target))
    assert shown.out.splitlines()[0] == f"origin  {remote}"
    assert gm("remote", "add", "/elsewhere", "--store", str(target)).code == 1
    assert gm("remote", "set", "/elsewhere", "--store", str(target)).code == 0
    assert git(target, "remote", "get-url", "origin").strip() == "/elsewhere"
    found = gm("recall", "laptop", "--store", str(target))
    assert found.code == 0 and "From laptop" in found.out


def test_clone_of_an_empty_remote_is_refused(tmp_path: Path, gm) -> None:  # type: ignore[no-untyped-def]
    bare = tmp_path / "empty.git"
    git(tmp_path, "init", "--quiet", "--bare", str(bare))
    done = gm("clone", str(bare), str(tmp_path / "x"))
    assert done.code == 1 and "holds no gitmem store" in done.err


def test_first_sync_to_an_empty_remote_publishes(store_path: Path, tmp_path: Path, gm) -> None:  # type: ignore[no-untyped-def]
    bare = tmp_path / "empty.git"
    git(tmp_path, "init", "--quiet", "--bare", str(bare))
    assert gm("remote", "add", str(bare)).code == 0
    assert gm("sync").code == 0
    assert git(bare, "rev-parse", "main") == git(store_path, "rev-parse", "HEAD")


def test_shared_record_cannot_link_to_a_private_one(remote: Path) -> None:
    a = make_clone(remote, "a")
    secret = fact(a, "Private thing", scope="private")
    with pytest.raises(GitmemError, match="is private"):
        fact(a, "Shared pointer", links=[secret])
    assert fact(a, "Private pointer", links=[secret], scope="private")


def test_sync_brings_an_existing_index_up_to_date(remote: Path) -> None:
    a, b = make_clone(remote, "a"), make_clone(remote, "b")
    b.rebuild()
    fact(a, "Arrives by sync")
    run_sync(a)
    result = run_sync(b)
    assert result.index == "current"
    from gitmem.index.catalog import Catalog

    catalog = Catalog(b.cache_dir / "index" / "catalog.sqlite")
    try:
        assert catalog.meta("commit") == b.head()
    finally:
        catalog.close()
    assert run_sync(b).index == "unchanged"
    assert run_sync(make_clone(remote, "c")).index == "unchanged"


def test_sync_json_has_exactly_the_documented_keys(remote: Path, gm) -> None:  # type: ignore[no-untyped-def]
    import importlib.util
    import json

    script = Path(__file__).resolve().parents[1] / "scripts" / "gen_cli_docs.py"
    spec = importlib.util.spec_from_file_location("gen_cli_docs", script)
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    (documented,) = [rows for title, _, _, rows in gen.JSON_SCHEMAS if title == "Sync result"]
    a = make_clone(remote, "a")
    done = gm("sync", "--json", "--store", str(a.root))
    assert list(json.loads(done.out)) == [key for key, _, _ in documented]


def test_sync_packs_loose_objects(remote: Path) -> None:
    import time

    a = make_clone(remote, "a")
    git(a.root, "config", "gc.auto", "20")
    git(a.root, "config", "maintenance.auto", "false")  # so it is sync's gc, not fetch's
    for i in range(10):
        fact(a, f"Loose object maker {i}")
    in_17 = [n for n in range(3000) if _blob_id(str(n)).startswith("17")][:2]
    for n in in_17:  # git counts objects/17 and wants more than gc.auto / 256 there
        git_in(a.root, "hash-object", "-w", "--stdin", text=str(n))

    def loose() -> int:
        counts = dict(line.split(": ") for line in git(a.root, "count-objects", "-v").splitlines())
        return int(counts["count"])

    assert loose() > 20
    run_sync(a)
    deadline = time.monotonic() + 20
    while loose() > 20 and time.monotonic() < deadline:  # git packs in the background
        time.sleep(0.1)
    assert loose() <= 20
    assert_clean(a.root)


def _blob_id(text: str) -> str:
    import hashlib

    data = text.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def git_in(cwd: Path, *args: str, text: str) -> None:
    subprocess.run(["git", *args], input=text.encode(), cwd=cwd, check=True, capture_output=True)


def test_clone_of_a_bare_remote_whose_head_names_master(tmp_path: Path) -> None:
    # `git init --bare` on a git that still defaults to master: its HEAD names a branch that
    # gitmem never pushes, so a plain `git clone` checks out nothing.
    bare = tmp_path / "plain.git"
    git(tmp_path, "-c", "init.defaultBranch=master", "init", "--quiet", "--bare", str(bare))
    assert "master" in (bare / "HEAD").read_text()
    origin, _ = Store.init(tmp_path / "origin")
    git(origin.root, "remote", "add", "origin", str(bare))
    rid = fact(origin, "Releases are cut on Thursdays")
    run_sync(origin)
    copy = make_clone(bare, "copy")
    assert rid in copy.catalog()
    assert git(copy.root, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert_clean(copy.root)
