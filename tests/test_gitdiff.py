"""GitReader.diff and .changed, the tree diffs every catch-up, sync step and history walk reads,
against the real `git diff-tree` and libgit2's own tree diff (which `diff` replaced: it read
every entry of both trees) on random trees: files of either mode, links, submodules, a name
that is a file on one side and a directory on the other, empty trees; and proof that a subtree
whose id did not change is never read."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pygit2  # the reference only: libgit2's diff, as gitmem.store.gitread used it before
import pytest
from conftest import git
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem.store import treediff
from gitmem.store.gitread import Change, GitReader

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
NAMES = ["a", "a.b", "a-b", "a0", "b"]  # "a.b" < "a/" < "a0" in git's order: dirs sort with "/"
MODES = ["100644", "100755", "120000", "160000"]
SUBMODULES = ["1" * 40, "2" * 40]  # a gitlink names a commit of another repository
Entry = tuple[str, str]  # mode, content (a submodule's: its commit)
Tree = dict[str, Entry]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("diff")
    git(root, "init", "-q")
    return root


def commit(root: Path, ref: str, files: Tree) -> str:
    """A root commit of exactly `files`, written by `git fast-import`."""
    lines = [f"commit refs/heads/{ref}", "committer T <t@example.com> 0 +0000", "data 0"]
    for path, (mode, content) in sorted(files.items()):
        if mode == "160000":
            lines.append(f"M 160000 {content} {path}")
        else:
            data = content.encode()
            lines += [f"M {mode} inline {path}", f"data {len(data)}", content]
    feed = ("\n".join(lines) + "\n\n").encode()
    subprocess.run(["git", "fast-import", "--quiet", "--force"], cwd=root, input=feed, check=True)
    return git(root, "rev-parse", f"refs/heads/{ref}").strip()


def put(files: Tree, path: str, entry: Entry | None) -> None:
    """Set or remove `path`, as a work tree would: a file where a directory was replaces the
    directory, a file inside what was a file replaces that file."""
    for other in [p for p in files if p.startswith(path + "/")]:
        del files[other]
    parts = path.split("/")
    for depth in range(1, len(parts)):
        files.pop("/".join(parts[:depth]), None)
    if entry is None:
        files.pop(path, None)
    else:
        files[path] = entry


paths = st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map("/".join)
entries = st.one_of(
    st.tuples(st.sampled_from(MODES[:3]), st.sampled_from(["x", "y"])),
    st.tuples(st.just("160000"), st.sampled_from(SUBMODULES)),
)
edits = st.lists(st.tuples(paths, st.none() | entries), max_size=12)


def tree_of(edits: list[tuple[str, Entry | None]], files: Tree | None = None) -> Tree:
    out = dict(files or {})
    for path, entry in edits:
        put(out, path, entry)
    return out


def libgit2_diff(root: Path, old: str | None, new: str | None) -> list[Change]:
    """What GitReader.diff returned before: libgit2's tree diff, whole."""
    repo = pygit2.Repository(str(root))
    old_tree = repo[old].peel(pygit2.Tree) if old else None
    new_tree = repo[new].peel(pygit2.Tree) if new else None
    if old_tree is None and new_tree is None:
        return []
    if old_tree is None:
        assert new_tree is not None
        diff = new_tree.diff_to_tree(swap=True)
    elif new_tree is None:
        diff = old_tree.diff_to_tree()
    else:
        diff = old_tree.diff_to_tree(new_tree)
    zero = "0" * 40
    links = {pygit2.enums.FileMode.LINK, pygit2.enums.FileMode.COMMIT}
    out = []
    for delta in diff.deltas:
        old_id, new_id = str(delta.old_file.id), str(delta.new_file.id)
        out.append(
            Change(
                path=delta.new_file.path or delta.old_file.path,
                old=None if old_id == zero else old_id,
                new=None if new_id == zero else new_id,
                link=new_id != zero and delta.new_file.mode in links,
            )
        )
    return out


def raw(root: Path, old: str | None, new: str | None) -> list[tuple[str, str, str, str, str]]:
    """`git diff-tree -r` between two commits: (old mode, new mode, old id, new id, path)."""
    out = git(root, "diff-tree", "-r", "-z", "--no-renames", old or EMPTY_TREE, new or EMPTY_TREE)
    fields = out.split("\0")
    found = []
    for meta, path in zip(fields[0:-1:2], fields[1::2], strict=True):
        old_mode, new_mode, old_id, new_id, _ = meta.lstrip(":").split(" ")
        found.append((old_mode, new_mode, old_id, new_id, path))
    return found


def git_diff(root: Path, old: str | None, new: str | None) -> list[Change]:
    """`git diff-tree` in diff's terms: a change of kind (file, link, submodule) is a deletion
    and an addition, as libgit2 gives it without its type-change option."""
    out = []
    for old_mode, new_mode, old_id, new_id, path in raw(root, old, new):
        link = new_mode in ("120000", "160000")
        if old_mode != "000000" and new_mode != "000000" and _kind(old_mode) != _kind(new_mode):
            out += [Change(path, old_id, None), Change(path, None, new_id, link)]
        else:
            out.append(Change(path, _id(old_mode, old_id), _id(new_mode, new_id), link))
    return out


def git_changed(root: Path, old: str | None, new: str | None, prefix: str) -> list[Change]:
    """`git diff-tree` in changed's terms: files and links under `prefix`, submodules as absent,
    a change of mode alone as none."""
    out = []
    for old_mode, new_mode, old_id, new_id, path in raw(root, old, new):
        before = None if old_mode in ("000000", "160000") else old_id
        after = None if new_mode in ("000000", "160000") else new_id
        if path.startswith(prefix + "/") and before != after:
            out.append(Change(path, before, after))
    return out


def _kind(mode: str) -> str:
    return mode[:2] if mode.startswith("1") else mode


def _id(mode: str, oid: str) -> str | None:
    return None if mode == "000000" else oid


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(first=edits, data=st.data())
def test_diff_is_libgit2s_and_gits(repo: Path, first: list, data: st.DataObject) -> None:  # type: ignore[type-arg]
    old_files = tree_of(first)
    # Half the second side's edits touch a path of the first: a new mode, kind or content.
    touched = st.sampled_from(sorted(old_files)) if old_files else paths
    then = data.draw(st.lists(st.tuples(touched | paths, st.none() | entries), max_size=8))
    new_files = tree_of(then, old_files)
    old, new = commit(repo, "old", old_files), commit(repo, "new", new_files)
    reader = GitReader.open(repo)
    for a, b in [(old, new), (new, old), (None, new), (old, None)]:
        found = reader.diff(a, b)
        assert found == libgit2_diff(repo, a, b)
        assert found == git_diff(repo, a, b)
    assert reader.diff(old, old) == [] == reader.diff(None, None)
    for prefix in NAMES[:2]:
        assert reader.changed(old, new, prefix) == git_changed(repo, old, new, prefix)
        assert reader.changed(None, new, prefix) == git_changed(repo, None, new, prefix)


def test_each_kind_of_change(repo: Path) -> None:
    """The cases named one by one (the random test above finds them by chance)."""
    old_files: Tree = {
        "keep/x.md": ("100644", "x"),
        "mode.md": ("100644", "m"),
        "gone.md": ("100644", "g"),
        "was-file": ("100644", "f"),
        "was-dir/in.md": ("100644", "i"),
        "link": ("100644", "l"),
        "sub": ("160000", SUBMODULES[0]),
        "renamed-from.md": ("100644", "r"),
    }
    new_files: Tree = {
        "keep/x.md": ("100644", "x"),
        "mode.md": ("100755", "m"),
        "was-file/now.md": ("100644", "n"),
        "was-dir": ("100644", "d"),
        "link": ("120000", "target"),
        "sub": ("160000", SUBMODULES[1]),
        "renamed-to.md": ("100644", "r"),
        "added/deep/new.md": ("100644", "a"),
    }
    old, new = commit(repo, "old", old_files), commit(repo, "new", new_files)
    found = GitReader.open(repo).diff(old, new)
    assert found == libgit2_diff(repo, old, new) == git_diff(repo, old, new)
    summary = [(c.path, c.old is not None, c.new is not None, c.link) for c in found]
    assert summary == [
        ("added/deep/new.md", False, True, False),  # a directory on one side only
        ("gone.md", True, False, False),
        ("link", True, False, False),  # a file that becomes a link: deleted, then added
        ("link", False, True, True),
        ("mode.md", True, True, False),  # the mode alone: the same blob on both sides
        ("renamed-from.md", True, False, False),  # a rename: a deletion and an addition
        ("renamed-to.md", False, True, False),
        ("sub", True, True, True),
        ("was-dir", False, True, False),  # "was-dir" sorts before "was-dir/in.md"
        ("was-dir/in.md", True, False, False),
        ("was-file", True, False, False),
        ("was-file/now.md", False, True, False),
    ]
    (mode,) = [c for c in found if c.path == "mode.md"]
    assert mode.old == mode.new


def test_an_unchanged_subtree_is_never_read(tmp_path: Path) -> None:
    """The catch-up's cost follows what changed: a subtree whose id is the same on both sides
    is not read, shown by deleting its object, which libgit2's whole diff then cannot find."""
    root = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(root))
    for n in range(50):
        (root / "big").mkdir(exist_ok=True)
        (root / "big" / f"{n}.md").write_text(f"text {n}")
    (root / "small").mkdir()
    (root / "small" / "a.md").write_text("one")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "old")
    (root / "small" / "a.md").write_text("two")
    (root / "small" / "b.md").write_text("b")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "new")
    old, new = git(root, "rev-parse", "HEAD~1", "HEAD").split()
    before = [(c.path, c.old is None, c.new is None) for c in GitReader.open(root).diff(old, new)]
    assert before == [("small/a.md", False, False), ("small/b.md", True, False)]
    big = git(root, "rev-parse", f"{old}:big").strip()
    (root / ".git" / "objects" / big[:2] / big[2:]).unlink()  # loose: written by `git add`
    reader = GitReader.open(root)
    assert [(c.path, c.old is None, c.new is None) for c in reader.diff(old, new)] == before
    assert [c.path for c in reader.changed(old, new, "small")] == ["small/a.md", "small/b.md"]
    with pytest.raises((KeyError, pygit2.GitError)):
        libgit2_diff(root, old, new)


def _blob(root: Path, data: bytes) -> bytes:
    command = ["git", "hash-object", "-w", "--stdin"]
    done = subprocess.run(command, cwd=root, input=data, capture_output=True, check=True)
    return bytes.fromhex(done.stdout.decode().strip())


def _tree(root: Path, *entries: tuple[bytes, bytes, bytes]) -> str:
    """A tree object written as given (mode, name, raw id), in the order given: git's order
    (bytes, a directory's name with a slash) is the caller's to keep."""
    data = b"".join(mode + b" " + name + b"\0" + oid for mode, name, oid in entries)
    command = ["git", "hash-object", "-t", "tree", "--literally", "-w", "--stdin"]
    done = subprocess.run(command, cwd=root, input=data, capture_output=True, check=True)
    return done.stdout.decode().strip()


def test_modes_as_written(tmp_path: Path) -> None:
    """Trees another tool wrote: a file's mode "100664" or "100775" is a change from
    "100644" (libgit2 does not normalise it), a tree's "040000" is its "40000"."""
    git(tmp_path, "init", "-q")
    blob = _blob(tmp_path, b"hi")

    def tree(*entries: tuple[bytes, bytes, bytes]) -> str:
        return _tree(tmp_path, *entries)

    sub = bytes.fromhex(tree((b"100644", b"x", blob)))
    trees = [
        tree((b"100664", b"a", blob), (b"100644", b"c", blob)),
        tree((b"100644", b"a", blob), (b"100775", b"c", blob)),
        tree((b"040000", b"d", sub)),
        tree((b"40000", b"d", sub), (b"100644", b"e", blob)),
    ]
    reader = GitReader.open(tmp_path)
    for old in trees:
        for new in trees:
            assert reader.diff(old, new) == libgit2_diff(tmp_path, old, new), (old, new)
    assert [c.path for c in reader.diff(trees[0], trees[1])] == ["a", "c"]
    assert [c.path for c in reader.diff(trees[2], trees[3])] == ["e"]


def test_a_tree_pruned_while_held_is_diffed_from_what_libgit2_holds(tmp_path: Path) -> None:
    """`gitmem purge` rewrites history and prunes the old objects while another Store of the
    same repository still holds the old commit's trees parsed (libgit2's object cache): its
    next diff from that commit reads them from there, as libgit2's whole diff always did,
    rather than failing on the object database (tests/test_purge.py met this)."""
    root = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(root))
    (root / "dir").mkdir()
    (root / "dir" / "a.md").write_text("one")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "old")
    (root / "dir" / "a.md").write_text("two")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "new")
    old, new = git(root, "rev-parse", "HEAD~1", "HEAD").split()
    reader = GitReader.open(root)
    expected = reader.diff(old, new)
    assert [c.path for c in expected] == ["dir/a.md"]
    assert list(reader.files(old, "dir")) == [("dir/a.md", expected[0].old)]  # now held
    for oid in git(root, "rev-parse", f"{old}^{{tree}}", f"{old}:dir").split():
        (root / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    assert reader.diff(old, new) == expected


def test_names_that_are_not_utf8_stay_apart_and_in_gits_order(tmp_path: Path) -> None:
    """Names are compared as git keeps them, bytes: two names that are not UTF-8 are two
    files (a rename between them is a deletion and an addition, not nothing), their paths
    are pygit2's (os.fsdecode), and their order is the bytes' ("\\x80" before "é", 0xC3)."""
    git(tmp_path, "init", "-q")
    x, y = _blob(tmp_path, b"x"), _blob(tmp_path, b"y")
    keep = (b"100644", b"keep", _blob(tmp_path, b"k"))
    accent = "\u00e9".encode()
    cases = [
        (_tree(tmp_path, (b"100644", b"\x80", x)), _tree(tmp_path, (b"100644", b"\x81", x))),
        (
            _tree(tmp_path, (b"100644", b"\x80", x), (b"100644", b"\x81", x)),
            _tree(tmp_path, (b"100644", b"\x80", y), (b"100644", b"\x81", y)),
        ),
        (
            _tree(tmp_path, keep),
            _tree(tmp_path, keep, (b"100644", b"\x80", x), (b"100644", accent, x)),
        ),
        (
            _tree(tmp_path, (b"40000", b"d\xff", bytes.fromhex(_tree(tmp_path, keep)))),
            _tree(tmp_path, (b"40000", b"d\xfe", bytes.fromhex(_tree(tmp_path, keep)))),
        ),
    ]
    reader = GitReader.open(tmp_path)
    for old, new in cases:
        assert reader.diff(old, new) == libgit2_diff(tmp_path, old, new), (old, new)
    assert [c.path for c in reader.diff(*cases[0])] == ["\udc80", "\udc81"]
    assert len(reader.diff(*cases[1])) == 2
    assert [c.path for c in reader.diff(*cases[2])] == ["\udc80", "\u00e9"]


def test_a_large_tree_is_diffed_by_libgit2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pair of trees over treediff.LARGE bytes goes to libgit2 (faster there than splitting
    them in Python), with the same answer; an unchanged subtree is still never read."""
    git(tmp_path, "init", "-q")
    blobs = [_blob(tmp_path, f"text {n}".encode()) for n in range(40)]
    names = [f"{n:03}.md".encode() for n in range(40)]
    big_old = _tree(tmp_path, *[(b"100644", n, b) for n, b in zip(names, blobs, strict=True)])
    changed = [*blobs[:7], blobs[8], *blobs[8:]]
    big_new = _tree(tmp_path, *[(b"100644", n, b) for n, b in zip(names, changed, strict=True)])
    small = bytes.fromhex(_tree(tmp_path, (b"100644", b"a.md", blobs[0])))
    old = _tree(tmp_path, (b"40000", b"big", bytes.fromhex(big_old)), (b"40000", b"s", small))
    new = _tree(tmp_path, (b"40000", b"big", bytes.fromhex(big_new)), (b"40000", b"s", small))
    reader = GitReader.open(tmp_path)
    expected = reader.diff(old, new)
    assert [c.path for c in expected] == ["big/007.md"]
    asked: list[tuple[bytes | None, bytes | None, str]] = []
    whole = reader._whole

    def counted(a: bytes | None, b: bytes | None, base: str) -> Iterator[treediff.Pair]:
        asked.append((a, b, base))
        return whole(a, b, base)

    monkeypatch.setattr(reader, "_whole", counted)
    assert reader.diff(old, new) == expected and asked == []  # 40 entries: split here
    monkeypatch.setattr(treediff, "LARGE", 40 * 30)  # ~40 bytes an entry: "big" is large now
    assert reader.diff(old, new) == expected == libgit2_diff(tmp_path, old, new)
    assert [base for _, _, base in asked] == ["big"]
