"""Which project a session works on: an id that is the same on every clone of it.

The id comes from the repository's remote (`origin`, else the first one), normalised so that
`git@github.com:o/r.git`, `ssh://git@github.com/o/r` and `https://github.com/O/r/` all give
`github.com/o/r`; without a remote it is the repository directory's name. Never the absolute
path: the same project cloned at two paths, on two laptops, must share its memories.

Memories carry it as a tag, `project:<id>` (docs/hooks.md argues why a tag). Stdlib only: the
hook path calls it.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["TAG_PREFIX", "find_project", "normalise_remote", "project_tag", "repository_root"]

TAG_PREFIX = "project:"
_SCP = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>(?!//).+)$")  # git@host:o/r.git


def normalise_remote(url: str) -> str:
    """A remote URL as `host/owner/repo`, lower case, without scheme, user, port or `.git`.
    A local path remote gives its last two components."""
    text = url.strip()
    if "://" in text:
        rest = text.split("://", 1)[1]
        host, _, path = rest.partition("/")
        host = host.rsplit("@", 1)[-1].split(":", 1)[0]
        if text.startswith("file://"):
            host, path = "", rest
    else:
        match = _SCP.match(text)
        if match and not text.startswith(("/", ".", "~")):
            host, path = match["host"], match["path"]
        else:
            host, path = "", text
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    if not host:
        parts = parts[-2:]
    return "/".join([host.lower(), *parts] if host else parts).lower()


def repository_root(start: Path) -> Path | None:
    """The work tree that contains `start` (the directory with `.git`), or None."""
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _git_dir(root: Path) -> Path:
    dot_git = root / ".git"
    if dot_git.is_file():  # a worktree or submodule: "gitdir: <path>"
        text = dot_git.read_text(encoding="utf-8").strip()
        if text.startswith("gitdir:"):
            target = Path(text[7:].strip())
            git_dir = target if target.is_absolute() else root / target
            common = git_dir / "commondir"
            if common.is_file():
                shared = Path(common.read_text(encoding="utf-8").strip())
                return shared if shared.is_absolute() else git_dir / shared
            return git_dir
    return dot_git


def _remotes(config: str) -> dict[str, str]:
    found: dict[str, str] = {}
    name = None
    for raw in config.splitlines():
        line = raw.strip()
        header = re.match(r'^\[remote\s+"([^"]+)"\]', line)
        if line.startswith("["):
            name = header.group(1) if header else None
        elif name is not None:
            key, sep, value = line.partition("=")
            if sep and key.strip().lower() == "url" and name not in found:
                found[name] = value.strip()
    return found


def find_project(cwd: Path) -> str:
    """The project id for a working directory (outside any repository: the directory's name,
    "" for /)."""
    root = repository_root(cwd)
    if root is None:
        return cwd.name.lower()
    try:
        remotes = _remotes((_git_dir(root) / "config").read_text(encoding="utf-8"))
    except OSError:
        remotes = {}
    url = remotes.get("origin") or next(iter(remotes.values()), "")
    normalised = normalise_remote(url) if url else ""
    return normalised or root.name.lower()


def project_tag(project: str) -> str:
    return f"{TAG_PREFIX}{project}" if project else ""
