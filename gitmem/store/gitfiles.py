"""HEAD, remotes and blobs of a store's repository, read from `.git` and the git command
without pygit2 (a light module: docs/architecture.md). Anything unusual (a reftable repository)
makes them answer None, and the caller falls back to gitmem.store.gitread."""

from __future__ import annotations

# A constant rather than typing's: the hook path must not import typing (~10 ms). mypy
# honours the name.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from gitmem.store.git import GitRepo

__all__ = ["StoreTip", "blobs", "changed_paths", "has_remote", "head_commit", "pack_loose_objects"]

_HEX = frozenset("0123456789abcdef")


def _commit_id(text: str) -> str | None:
    text = text.strip()
    return text if len(text) in (40, 64) and set(text) <= _HEX else None


def head_commit(git_dir: Path) -> str | None:
    """The commit HEAD points at, or None (unborn branch, or a layout we do not read)."""
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not head.startswith("ref: "):
        return _commit_id(head)
    ref = head[5:].strip()
    try:
        return _commit_id((git_dir / ref).read_text(encoding="utf-8"))
    except OSError:
        pass
    try:
        packed = (git_dir / "packed-refs").read_text(encoding="utf-8")
    except OSError:
        return None
    for line in packed.splitlines():
        commit, _, name = line.partition(" ")
        if name == ref:
            return _commit_id(commit)
    return None


class StoreTip:
    """A store as its files show it, without pygit2: its root, its cache directory and HEAD
    (read from .git). What reading a current index needs (gitmem.index.index.IndexedStore,
    opened with `catch_up=False`); the full store (gitmem.store.reader.Reader) has the same
    three. It has no repository: `repo` raises LookupError."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cache_dir = root / ".gitmem"  # gitmem.store.reader.CACHE_DIR

    def head(self) -> str | None:
        return head_commit(self.root / ".git")

    @property
    def repo(self) -> GitRepo:
        raise LookupError(f"{self.root} is read from its files here; open the store to write")


def has_remote(git_dir: Path) -> bool:
    """Whether .git/config names any remote with a URL (sync has somewhere to go)."""
    try:
        text = (git_dir / "config").read_text(encoding="utf-8")
    except OSError:
        return False
    in_remote = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            in_remote = line.startswith("[remote ")
        elif in_remote and line.replace(" ", "").startswith("url="):
            return True
    return False


def _git(root: Path, args: list[str], stdin: bytes = b"", timeout: float = 5.0) -> bytes | None:
    import subprocess

    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], input=stdin, capture_output=True, timeout=timeout
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def pack_loose_objects(root: Path) -> bool:
    """Pack the repository's loose objects with git's own `git repack -d` (one new pack of
    what is loose; the loose copies go); whether git did. A bulk write leaves one loose file
    per object otherwise: an import of 10k records left ~10.7k of them, `.git` 42 MB (5.6 MB
    packed). Readers and writers may go on meanwhile, as under git's own maintenance."""
    return _git(root, ["repack", "-d", "-q"], timeout=600.0) is not None


def changed_paths(root: Path, old: str, new: str, prefix: str) -> list[tuple[str, str | None]]:
    """(path, new blob id or None when deleted) under `prefix` between two commits, from
    `git diff-tree`: the git command starts in a few milliseconds where importing pygit2 takes
    a hundred. Raises OSError when git cannot answer (not installed, an unknown commit)."""
    out = _git(root, ["diff-tree", "-r", "-z", "--no-renames", old, new, "--", prefix])
    if out is None:
        raise OSError(f"git diff-tree {old[:10]} {new[:10]} failed in {root}")
    parts = out.split(b"\0")
    found: list[tuple[str, str | None]] = []
    for meta, path in zip(parts[0::2], parts[1::2], strict=False):
        fields = meta.decode("ascii").lstrip(":").split(" ")  # modes, ids, status
        if len(fields) != 5:
            break
        found.append((path.decode("utf-8"), None if fields[4] == "D" else fields[3]))
    return found


def blobs(root: Path, ids: list[str]) -> dict[str, bytes]:
    """The contents of blobs, from one `git cat-file --batch`. Raises OSError when git
    cannot answer."""
    if not ids:
        return {}
    out = _git(root, ["cat-file", "--batch"], "".join(f"{i}\n" for i in ids).encode())
    if out is None:
        raise OSError(f"git cat-file failed in {root}")
    found: dict[str, bytes] = {}
    at = 0
    while at < len(out):
        end = out.index(b"\n", at)
        header = out[at:end].decode("ascii").split(" ")
        at = end + 1
        if len(header) != 3:  # "<id> missing"
            continue
        size = int(header[2])
        found[header[0]] = out[at : at + size]
        at += size + 1
    return found
