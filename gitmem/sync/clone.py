"""`gitmem clone`: a memory copied from its remote, checked out on its branch, with the cache
directory kept out of git. The index builds on the first recall."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from gitmem.errors import GitmemError
from gitmem.sync.gitcli import DEFAULT_TIMEOUT, Deadline, GitFailed, run_git, shown_url
from gitmem.sync.sshcause import explain_ssh

__all__ = ["clone"]

MEMORY_BRANCH = "main"  # the branch `gitmem init` makes


def clone(
    url: str, path: Path, env: Mapping[str, str], *, timeout: float = DEFAULT_TIMEOUT
) -> Path:
    """`git clone` a memory; the index builds on the first recall."""
    if path.exists() and any(path.iterdir()):
        raise GitmemError(f"{path} exists and is not empty; choose a new directory for the clone")
    shown = shown_url(url)
    try:
        run_git(
            ["clone", "--no-tags", "--quiet", "--", url, str(path)],  # a URL is never an option
            cwd=None,
            env=env,
            deadline=Deadline.after(timeout),
            what=f"cloning {shown}",
        )
    except GitFailed as exc:
        explained = explain_ssh(exc, shown, url, "clone again")
        if explained is None:
            raise
        raise explained from exc
    if not (path / "config.toml").exists():
        _check_out_memory_branch(path, env, timeout)
    if not (path / "config.toml").exists():
        raise GitmemError(
            f"{shown} holds no gitmem store (no config.toml; an empty remote?) — the clone at "
            f'{path} was left for you to inspect; to start a memory there, run "gitmem init '
            f'NEWPATH", then "gitmem remote add URL" and "gitmem sync"'
        )
    exclude = path / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    with exclude.open("a", encoding="utf-8") as handle:
        handle.write(".gitmem/\n")
    return path


def _check_out_memory_branch(path: Path, env: Mapping[str, str], timeout: float) -> None:
    """A bare repository made by `git init --bare` on a machine whose git still defaults to
    `master` names that as its HEAD, while gitmem pushes `main`: `git clone` then checks out
    nothing. Check out the remote's `main` when there is one."""
    deadline = Deadline.after(timeout)
    try:
        run_git(
            ["rev-parse", "--verify", "--quiet", f"refs/remotes/origin/{MEMORY_BRANCH}"],
            cwd=path,
            env=env,
            deadline=deadline,
            what="looking for the memory's branch",
        )
    except GitFailed:
        return
    run_git(
        ["checkout", "--quiet", "-B", MEMORY_BRANCH, f"origin/{MEMORY_BRANCH}"],
        cwd=path,
        env=env,
        deadline=deadline,
        what=f"checking out {MEMORY_BRANCH}",
    )
