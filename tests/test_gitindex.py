"""gitmem's split git index (gitmem.store.gitindex) against the real `git`: after any sequence
of gitmem writes and a person's git commands, git reads the index gitmem wrote as the entries
gitmem meant (`git ls-files -s`), with stat data that match the files (`git diff-files` needs
no content check), and gitmem reads what git wrote."""

from __future__ import annotations

import errno
import hashlib
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import assert_clean, git
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem.errors import GitmemError
from gitmem.store import gitindex, sharedindex
from gitmem.store.record import record_path, slugify
from gitmem.store.store import Store

PATHS = ["a.md", "b/c.md", "b/d.md", "b/e/f.md", "g.md"]


def blob_id(data: bytes) -> bytes:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).digest()


def gitmem_writes(root: Path, changes: dict[str, bytes | None], split: bool = True) -> None:
    """A write as GitRepo._sync_worktree does it: the files, then their entries staged."""
    entries: dict[str, gitindex.Entry | None] = {}
    for path, data in changes.items():
        target = root / path
        if data is None:
            target.unlink(missing_ok=True)
            entries[path] = None
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            subprocess.run(["git", "hash-object", "-w", path], cwd=root, check=True, stdout=-3)
            entries[path] = gitindex.entry_for(path, blob_id(data), target.lstat())
    gitindex.stage(root / ".git", entries, split=split)


def ours(root: Path) -> list[str]:
    """`git ls-files -s` as gitmem reads the index."""
    index = gitindex.read(root / ".git" / "index")
    return [
        f"{int.from_bytes(e.fixed[24:28]):o} {e.oid.hex()} {e.stage}\t{e.path.decode()}"
        for e in gitindex.merged(root / ".git", index)
    ]


def assert_agree(root: Path) -> None:
    listed = git(root, "ls-files", "-s").splitlines()
    assert ours(root) == listed
    assert git(root, "diff-files", "--name-only") == ""  # stat data that match the files
    for line in listed:
        oid, path = line.split()[1], line.split("\t")[1]
        found = gitindex.staged_id(root / ".git", path)
        assert found is not None and found.hex() == oid
    assert gitindex.staged_id(root / ".git", "not/there.md") is None


def assert_no_shadowing(root: Path) -> None:
    """No entry of the split part has the path of a shared entry it does not delete: git
    reads such an entry into memory it later frees (gitmem.store.splitpart)."""
    index = gitindex.read(root / ".git" / "index")
    if index is None or index.base is None or index.base == bytes(20):
        return
    shared = gitindex.read(root / ".git" / f"sharedindex.{index.base.hex()}")
    assert shared is not None
    deleted = set(index.bitmaps()[0])
    kept = {e.path for i, e in enumerate(shared.entries) if i not in deleted}
    assert not kept & {e.path for e in index.entries if e.path}


OPS = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(PATHS), st.binary(max_size=40)),
    st.tuples(st.just("delete"), st.sampled_from(PATHS), st.none()),
    st.tuples(st.just("git add"), st.sampled_from(PATHS), st.binary(max_size=40)),
    st.tuples(st.just("git rm"), st.sampled_from(PATHS), st.none()),
    st.tuples(st.sampled_from(["split", "no-split", "commit"]), st.none(), st.none()),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(OPS, min_size=1, max_size=10), fold_at=st.sampled_from([1, 3, 1000]))
def test_any_sequence_of_writes_and_git_commands_agrees_with_git(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    ops: list[tuple[str, str | None, bytes | None]],
    fold_at: int,
) -> None:
    monkeypatch.setattr(gitindex, "FOLD_AT", fold_at)
    root = tmp_path_factory.mktemp("repo")
    git(root, "init", "-q")
    gitmem_writes(root, {"a.md": b"first\n", "b/c.md": b"second\n"})
    assert_agree(root)
    for op, path, data in ops:
        tracked = set(git(root, "ls-files").split())
        if op == "write":
            assert path is not None and data is not None
            gitmem_writes(root, {path: data})
            assert_no_shadowing(root)
        elif op == "delete" and path in tracked:
            gitmem_writes(root, {path: None})
            assert_no_shadowing(root)
        elif op == "git add":
            assert path is not None and data is not None
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(data + b"by hand")
            git(root, "add", path)
        elif op == "git rm" and path in tracked:
            git(root, "rm", "-q", "--cached", path)
            (root / path).unlink()
        elif op in ("split", "no-split"):
            git(root, "update-index", f"--{op}-index")
        elif op == "commit":
            git(root, "commit", "-q", "--allow-empty", "-m", "by hand")
        assert_agree(root)


def test_a_missing_shared_index_is_named_with_the_way_out(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    gitmem_writes(tmp_path, {"a.md": b"x"})
    gitmem_writes(tmp_path, {"b.md": b"y"})
    for shared in (tmp_path / ".git").glob("sharedindex.*"):
        shared.unlink()
    with pytest.raises(gitindex.IndexUnreadable, match="git read-tree HEAD"):
        gitmem_writes(tmp_path, {"a.md": None})
    assert not (tmp_path / ".git" / "index.lock").exists()


def test_git_busy_with_the_index_is_waited_for_then_named(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    gitmem_writes(tmp_path, {"a.md": b"x"})
    before = (tmp_path / ".git" / "index").read_bytes()
    (tmp_path / ".git" / "index.lock").write_bytes(b"")
    with pytest.raises(GitmemError, match="git is busy"):
        gitmem_writes(tmp_path, {"a.md": b"y"})
    assert (tmp_path / ".git" / "index.lock").exists()  # not ours to remove
    assert (tmp_path / ".git" / "index").read_bytes() == before


# --- the store --------------------------------------------------------------------------------


def test_writes_keep_a_small_index_and_git_usable_by_hand(store_path: Path) -> None:
    time.sleep(1.1)  # the store's files no longer racily clean: not held in the split part
    store = Store.open(store_path)
    for n in range(5):
        store.record("fact", f"body {n}", title=f"Fact {n}")
        assert_clean(store_path)
    index = gitindex.read(store_path / ".git" / "index")
    assert index is not None and index.link is not None and len(index.entries) <= 6
    (store_path / "notes.txt").write_text("by hand\n")
    git(store_path, "add", "notes.txt")
    git(store_path, "commit", "-q", "-m", "a note by hand")
    store.record("fact", "after git", title="After git")
    assert_clean(store_path)
    assert "notes.txt" in git(store_path, "ls-files")


def test_a_plain_index_is_migrated_and_a_user_can_go_back(store_path: Path) -> None:
    store = Store.open(store_path)
    store.record("fact", "one", title="One")
    git(store_path, "update-index", "--no-split-index")  # an existing store's plain index
    assert gitindex.read(store_path / ".git" / "index").link is None  # type: ignore[union-attr]
    listed = git(store_path, "ls-files")
    store.record("fact", "two", title="Two")  # migrated silently
    assert gitindex.read(store_path / ".git" / "index").link is not None  # type: ignore[union-attr]
    assert_clean(store_path)
    assert set(listed.split()) < set(git(store_path, "ls-files").split())
    git(store_path, "config", "core.splitIndex", "false")  # the way back
    git(store_path, "update-index", "--no-split-index")
    rid = store.record("fact", "three", title="Three").record.id
    store.forget(rid, reason="test")
    assert gitindex.read(store_path / ".git" / "index").link is None  # type: ignore[union-attr]
    assert_clean(store_path)


def test_uncommitted_edits_are_found_in_a_split_index(store_path: Path) -> None:
    store = Store.open(store_path)
    path = store.record("fact", "one", title="One").record.path
    (store_path / path).write_text((store_path / path).read_text() + "\nEdited by hand.\n")
    (store_path / "records" / "fact" / "new.md").write_text("---\ntitle: x\n---\n")
    assert {(p.path, p.state) for p in store.pending()} == {
        (path, "modified"),
        ("records/fact/new.md", "added"),
    }
    assert store.repo.is_dirty(path)


def test_an_edit_in_the_second_of_a_record_is_pending_after_the_next(store_path: Path) -> None:
    store = Store.open(store_path)
    while time.time() % 1 > 0.2:  # the start of a second, so that what follows shares it
        time.sleep(0.01)
    path = store.record("fact", "one", title="One").record.path
    text = (store_path / path).read_bytes()
    (store_path / path).write_bytes(text.replace(b"one", b"two"))  # the same size
    time.sleep(1.1)
    store.record("fact", "another", title="Another")
    assert {(p.path, p.state) for p in store.pending()} == {(path, "modified")}
    assert store.repo.is_dirty(path)


CRASH = """
import os, sys
from pathlib import Path
from gitmem.errors import GitmemError
from gitmem.store import gitindex
from gitmem.store.store import Store
def die(*args, **kwargs):
    os._exit(9)
gitindex.stage = die  # killed after the commit and the files, before the index
Store.open(Path(sys.argv[1])).record("fact", "landed in git", title="Crashed")
"""


def test_a_crash_before_the_index_is_written_loses_nothing(store_path: Path) -> None:
    Store.open(store_path).record("fact", "one", title="One")
    done = subprocess.run([sys.executable, "-c", CRASH, str(store_path)], check=False)
    assert done.returncode == 9
    assert "Crashed" in git(store_path, "log", "-1", "--format=%s")
    assert git(store_path, "diff", "--cached", "--name-only") != ""  # the index is behind
    store = Store.open(store_path)
    store.record("fact", "next", title="Next")  # recovers from the dead writer's journal
    assert_clean(store_path)
    assert {r.title for r in store.records()} >= {"One", "Crashed", "Next"}
    assert not any(name.startswith("sharedindex") for name in os.listdir(store_path))


@settings(max_examples=5, deadline=None)
@given(
    names=st.sets(
        st.from_regex(r"[a-z]{1,3}(/[a-z0-9.-]{1,12}){0,3}", fullmatch=True).filter(
            # paths git accepts: no ".", ".." or ".git" component (verify_path)
            lambda n: (
                not any(c in (".", "..") or c.lower().rstrip(".") == ".git" for c in n.split("/"))
            )
        ),
        min_size=1,
    ),
    seed=st.integers(0, 2**32),
)
def test_the_shared_index_is_searched_and_spliced_as_git_reads_it(
    tmp_path_factory: pytest.TempPathFactory, names: set[str], seed: int
) -> None:
    """Hundreds of entries, so that the search bisects: every path and some absent ones are
    found as `git ls-files -s` says, and folds that remove and add entries agree with git."""
    import random

    rng = random.Random(seed)
    root = tmp_path_factory.mktemp("big")
    git(root, "init", "-q")
    paths = sorted({f"{n}/{i:03d}-{rng.randrange(10**6)}.md" for n in names for i in range(60)})
    paths = [p for p in paths if not any(q.startswith(p + "/") for q in paths)]
    gitmem_writes(root, {p: p.encode() for p in paths})  # folds: one shared index
    assert_agree(root)
    gone = rng.sample(paths, min(len(paths), 5))
    gitmem_writes(root, {p: None for p in gone})  # removes shared paths: a spliced fold
    assert_agree(root)
    gitmem_writes(root, {f"zz/{seed}.md": b"new", gone[0]: b"back"})
    git(root, "update-index", "--split-index")  # git's bitmaps, read and folded
    gitmem_writes(root, {paths[-1]: b"changed"})
    assert_agree(root)
    for missing in ("a", "zzz/none.md", paths[0] + "x", paths[-1][:-1]):
        assert gitindex.staged_id(root / ".git", missing) is None


def realistic_paths(count: int) -> list[str]:
    """Record paths as gitmem names them (record_path: records/<type>/<yyyy-mm>/<slug>-<6
    letters>.md), titles of various lengths: a path's bytes can read as a well-formed entry
    where none starts (a month's "0/" as the flags of a 47-byte path)."""
    rng = random.Random(12)
    types = ["context", "decision", "fact", "preference", "procedure"]
    words = ["fix", "cache", "index", "v2", "sync", "merge", "auth", "retry", "log", "42", "db"]
    letters = "0123456789abcdefghjkmnpqrstvwxyz"
    paths: set[str] = set()
    while len(paths) < count:
        title = " ".join(rng.choices(words, k=rng.randint(1, 12)))
        record_id = f"{slugify(title)}-{''.join(rng.choices(letters, k=6))}"
        month = datetime(rng.randint(2024, 2026), rng.randint(1, 12), 1, tzinfo=UTC)
        paths.add(record_path(rng.choice(types), month, record_id))
    return sorted(paths)


def test_every_path_of_a_big_index_is_found_and_no_other(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    paths = realistic_paths(100_000)
    oid = blob_id(b"x").hex()
    lines = "".join(f"100644 {oid}\t{p}\n" for p in paths[::2])
    subprocess.run(["git", "update-index", "--index-info"], cwd=tmp_path, input=lines.encode())
    raw = (tmp_path / ".git" / "index").read_bytes()
    starts = sharedindex.plain(raw)
    assert starts is not None
    listed = set(git(tmp_path, "ls-files").splitlines())
    assert listed == set(paths[::2])
    for path in paths:  # a plain index: over the starts of its one walk
        assert (sharedindex.find(raw, path.encode(), starts) is not None) == (path in listed)
    git(tmp_path, "update-index", "--split-index")  # a shared index git wrote: no sidecar yet
    git_dir = tmp_path / ".git"
    (shared,) = git_dir.glob("sharedindex.*")
    data = shared.read_bytes()
    for attempt in ("walked", "from its sidecar"):
        with sharedindex.starts_of(git_dir, data) as found_starts:
            found = {p for p in paths if sharedindex.find(data, p.encode(), found_starts)}
        assert found == listed, attempt
        assert list(git_dir.glob("gitmem-offsets.*")), attempt
    for path in paths[:3000]:  # as gitmem asks
        assert (gitindex.staged_id(git_dir, path) is not None) == (path in listed)


def test_a_sidecar_that_does_not_match_is_not_trusted(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    gitmem_writes(tmp_path, {p: p.encode() for p in realistic_paths(50)})
    git_dir = tmp_path / ".git"
    (sidecar,) = git_dir.glob("gitmem-offsets.*")
    sidecar.write_bytes(sidecar.read_bytes()[:20] + bytes(len(sidecar.read_bytes()) - 20))
    assert_agree(tmp_path)


def test_a_fold_that_fails_leaves_the_index_git_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gitindex, "FOLD_AT", 1)
    git(tmp_path, "init", "-q")
    gitmem_writes(tmp_path, {"a.md": b"a"})
    gitmem_writes(tmp_path, {"b.md": b"b", "c.md": b"c"})  # folds: a shared index in use
    git_dir = tmp_path / ".git"
    for shared in git_dir.glob("sharedindex.*"):  # in use for an hour
        os.utime(shared, (time.time() - 3600, time.time() - 3600))

    def full(fd: int, data: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patched:
        patched.setattr(os, "write", full)
        with pytest.raises(OSError, match="No space left"):
            gitmem_writes(tmp_path, {"d.md": b"d", "e.md": b"e"})  # a fold, its index refused
    assert git(tmp_path, "ls-files").split() == ["a.md", "b.md", "c.md"]
    git(tmp_path, "status")
    left = gitindex.read(git_dir / "index")
    assert left is not None and left.base is not None
    gitmem_writes(tmp_path, {"f.md": b"f", "g.md": b"g"})  # folds again
    assert_agree(tmp_path)
    kept = git_dir / f"sharedindex.{left.base.hex()}"  # a git command may still read it
    assert time.time() - kept.stat().st_mtime < 60


def in_one_second(
    tmp_path: Path, before: Callable[[Path], None], then: Callable[[Path], None], edited: str
) -> Path:
    """A new repository where `before` ran, then `then` and an in-place, same-size edit of
    `edited` all in one second (tried again where a loaded machine crossed a second)."""
    for attempt in range(5):
        root = tmp_path / str(attempt)
        root.mkdir()
        git(root, "init", "-q")
        before(root)
        while time.time() % 1 > 0.2:  # the start of a second, so that what follows shares it
            time.sleep(0.01)
        then(root)
        target = root / edited
        size = target.stat().st_size
        with open(target, "r+b") as f:  # in place, the same size, other bytes
            f.write(b"#" * size)
        seconds = {int(p.stat().st_mtime) for p in (root / ".git" / "index", target)}
        seconds.add(int(target.stat().st_ctime))
        if len(seconds) == 1:
            return root
    raise AssertionError("five tries crossed a second")


@pytest.mark.parametrize(("fold_at", "split"), [(1000, True), (1, True), (1000, False)])
def test_an_edit_in_the_second_of_a_write_is_seen_after_the_next_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fold_at: int, split: bool
) -> None:
    """In the split part; written by a fold (1: each write folds); in a plain index."""
    monkeypatch.setattr(gitindex, "FOLD_AT", fold_at)
    root = in_one_second(
        tmp_path,
        lambda root: gitmem_writes(root, {"old.md": b"old"}, split),
        lambda root: gitmem_writes(root, {"a.md": b"first\n", "c.md": b"c"}, split),  # 1: a fold
        "a.md",
    )
    time.sleep(1.1)
    gitmem_writes(root, {"b.md": b"b"}, split)  # the index rewritten a second later
    assert "AM a.md" in git(root, "status", "--porcelain").splitlines()  # edited since
    assert git(root, "diff-files", "--name-only").split() == ["a.md"]


def test_an_edit_in_the_second_of_a_fold_that_moved_it_is_seen_after_the_next_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written, then folded by the next write in the same second, then edited in place in that
    second: the fold must keep it in the split part, where the next write still checks it."""
    monkeypatch.setattr(gitindex, "FOLD_AT", 1)

    def write_then_fold(root: Path) -> None:
        gitmem_writes(root, {"e.md": b"AAAA\n"})
        gitmem_writes(root, {"f.md": b"ffff\n", "h.md": b"h"})  # a fold: e.md was in the split part

    root = in_one_second(
        tmp_path,
        lambda root: gitmem_writes(root, {"old.md": b"old", "older.md": b"older"}),
        write_then_fold,
        "e.md",
    )
    time.sleep(1.1)
    gitmem_writes(root, {"g.md": b"g"})  # the index rewritten a second later
    assert git(root, "diff-files", "--name-only").split() == ["e.md"]
    assert ours(root) == git(root, "ls-files", "-s").splitlines()


@pytest.mark.parametrize("damage", ["missing", "empty"])
def test_a_lookup_in_a_missing_or_empty_shared_index_names_the_way_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    monkeypatch.setattr(gitindex, "FOLD_AT", 1)
    git(tmp_path, "init", "-q")
    gitmem_writes(tmp_path, {"a.md": b"x", "b.md": b"y"})
    time.sleep(1.1)  # a.md no longer racily clean: the next fold but one moves it
    gitmem_writes(tmp_path, {"c.md": b"z"})
    gitmem_writes(tmp_path, {"d.md": b"w"})  # folds a.md into the shared index
    named = gitindex.read(tmp_path / ".git" / "index")
    assert named is not None and named.base is not None
    shared = tmp_path / ".git" / f"sharedindex.{named.base.hex()}"
    if damage == "missing":
        shared.unlink()
    else:
        shared.write_bytes(b"")
    with pytest.raises(gitindex.IndexUnreadable, match=f"{damage}.*git read-tree HEAD"):
        gitindex.staged_id(tmp_path / ".git", "a.md")


@pytest.mark.parametrize("damage", ["truncated", "garbled"])
@pytest.mark.parametrize("change", [{"e.md": b"v"}, {"a.md": b"x2"}, {"a.md": None}])
def test_a_write_over_a_damaged_shared_index_names_it_and_writes_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    damage: str,
    change: dict[str, bytes | None],
) -> None:
    """A new path, a change and a deletion, each over a shared index cut short or garbled
    past its header (its sidecar of entry starts gone): a clear error, not a traceback."""
    monkeypatch.setattr(gitindex, "FOLD_AT", 1)
    git(tmp_path, "init", "-q")
    gitmem_writes(tmp_path, {f"{n}.md": n.encode() for n in "abcdfgh"})
    time.sleep(1.1)  # no longer racily clean: the next fold but one moves them
    gitmem_writes(tmp_path, {"c1.md": b"z"})
    gitmem_writes(tmp_path, {"d1.md": b"w"})
    named = gitindex.read(tmp_path / ".git" / "index")
    assert named is not None and named.base is not None
    shared = tmp_path / ".git" / f"sharedindex.{named.base.hex()}"
    for sidecar in (tmp_path / ".git").glob("gitmem-offsets.*"):
        sidecar.unlink()
    data = shared.read_bytes()
    if damage == "truncated":
        shared.write_bytes(data[: len(data) // 2])
    else:  # the header and the trailer kept, the entries' path lengths broken
        shared.write_bytes(data[:12] + b"\xff" * (len(data) - 32) + data[-20:])
    index_before = (tmp_path / ".git" / "index").read_bytes()
    with pytest.raises(gitindex.IndexUnreadable, match="git"):
        gitmem_writes(tmp_path, change)
    assert (tmp_path / ".git" / "index").read_bytes() == index_before


@pytest.mark.parametrize("damage", ["truncated", "garbled"])
def test_a_lookup_through_a_split_part_without_bitmaps_names_a_damaged_shared_index(
    tmp_path: Path, damage: str
) -> None:
    """A split part with empty bitmaps (as git's read-tree writes it) looks a path up in the
    shared index by name (every write's dirty check does): damage there is named too."""
    from gitmem.store import splitpart
    from gitmem.store.indexfile import link

    git(tmp_path, "init", "-q")
    (tmp_path / "d").mkdir()
    for n in range(8):
        (tmp_path / "d" / f"f{n}").write_bytes(f"{n}".encode())
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "files")
    git(tmp_path, "update-index", "--split-index")  # its 8 entries, each a replacement
    git_dir = tmp_path / ".git"
    raw = (git_dir / "index").read_bytes()
    starts, linked = sharedindex.layout(raw)
    base = linked[:20]
    rest, rest_starts = splitpart.after_replacements(raw, starts, 8)
    ext = link(base, [])  # no bitmaps: every entry read from the shared index
    ext = b"link" + len(ext).to_bytes(4, "big") + ext
    (git_dir / "index").write_bytes(sharedindex.splice(rest, {}, rest_starts, ext))
    assert gitindex.staged_id(git_dir, "d/f1") is not None
    shared = git_dir / f"sharedindex.{base.hex()}"
    for sidecar in git_dir.glob("gitmem-offsets.*"):
        sidecar.unlink()
    data = shared.read_bytes()
    shared.chmod(0o644)
    if damage == "truncated":
        shared.write_bytes(data[: len(data) // 2])
    else:  # the header and the trailer kept, the entries' path lengths broken
        shared.write_bytes(data[:12] + b"\xff" * (len(data) - 32) + data[-20:])
    with pytest.raises(gitindex.IndexUnreadable, match=r"damaged.*git read-tree HEAD"):
        gitindex.staged_id(git_dir, "d/f1")


def test_an_edit_in_the_second_of_gits_replacement_of_a_shared_entry_is_seen(
    tmp_path: Path,
) -> None:
    """`git add` of a file in the shared index, then an in-place edit in that second: git
    writes the entry as a replacement (its path left empty, a replace bitmap), racily clean;
    the next write keeps git's replacement (splitpart.within), checks it under its name and
    holds it, so the edit is still seen."""

    def migrated(root: Path) -> None:
        gitmem_writes(root, {"a.md": b"a", "b.md": b"b"})
        git(root, "update-index", "--no-split-index")
        time.sleep(2.1)
        gitmem_writes(root, {"c.md": b"c"})  # the migration: a.md and b.md in the shared index

    def added(root: Path) -> None:
        (root / "a.md").write_bytes(b"AAAA\n")
        git(root, "add", "a.md")

    root = in_one_second(tmp_path, migrated, added, "a.md")
    index = gitindex.read(root / ".git" / "index")
    assert index is not None and index.bitmaps()[1]  # git's replacement, as the case needs
    time.sleep(1.1)
    gitmem_writes(root, {"d.md": b"d"})  # the index rewritten a second later
    assert git(root, "diff-files", "--name-only").split() == ["a.md"]
    assert ours(root) == git(root, "ls-files", "-s").splitlines()
    git(root, "fsck", "--no-progress")


def test_an_edit_in_the_second_of_a_migration_that_took_it_is_seen_after_the_next_write(
    tmp_path: Path,
) -> None:
    """A plain index's racily clean entry, unchanged by the write that migrates the index to
    the split form, then edited in place in that second: the migration must hold it in the
    split part, where the next write checks it, not move it into the shared index."""

    def plain(root: Path) -> None:
        gitmem_writes(root, {"a.md": b"a"})
        git(root, "update-index", "--no-split-index")  # an existing store's plain index
        time.sleep(1.1)

    def added_then_migrated(root: Path) -> None:
        (root / "x.md").write_bytes(b"AAAA\n")
        git(root, "add", "x.md")
        gitmem_writes(root, {"b.md": b"b"})

    root = in_one_second(tmp_path, plain, added_then_migrated, "x.md")
    time.sleep(1.1)
    gitmem_writes(root, {"c.md": b"c"})  # the index rewritten a second later
    assert git(root, "diff-files", "--name-only").split() == ["x.md"]
    assert ours(root) == git(root, "ls-files", "-s").splitlines()


def test_gits_replacements_are_written_without_a_fold(tmp_path: Path) -> None:
    """A `git add` (or a `git status` after a write replaced a shared entry) leaves a replace
    bitmap; the next write keeps git's replacements and adds its own change of a shared path
    as one more replacement, in git's form, instead of folding the whole shared index again
    or shadowing the shared entry by name (which git reads into freed memory)."""
    git(tmp_path, "init", "-q")
    gitmem_writes(tmp_path, {"a.md": b"a", "b.md": b"b", "e.md": b"e"})
    git(tmp_path, "update-index", "--no-split-index")
    time.sleep(2.1)
    gitmem_writes(tmp_path, {"c.md": b"c"})  # the migration: a, b and e.md in the shared index
    (tmp_path / "a.md").write_bytes(b"by hand\n")
    git(tmp_path, "add", "a.md")
    index = gitindex.read(tmp_path / ".git" / "index")
    assert index is not None and index.bitmaps()[1]  # git's replacement of a racy entry
    assert not index.bitmaps()[0] and index.entries[0].path == b""
    assert_agree(tmp_path)  # staged_id looks at the replacement under its name
    gitmem_writes(tmp_path, {"d.md": b"d", "b.md": b"bb"})
    after = gitindex.read(tmp_path / ".git" / "index")
    assert after is not None and after.base == index.base  # the same shared index: no fold
    deleted, replaced = after.bitmaps()
    assert not deleted and len(replaced) >= 2  # a.md's (git's) and b.md's (this write's)
    assert [e.path for e in after.entries] == [b""] * len(replaced) + [b"d.md"]
    assert_no_shadowing(tmp_path)
    assert_agree(tmp_path)
    assert gitindex.staged_id(tmp_path / ".git", "a.md") == blob_id(b"by hand\n")
    assert gitindex.staged_id(tmp_path / ".git", "b.md") == blob_id(b"bb")
    git(tmp_path, "fsck", "--no-progress")
