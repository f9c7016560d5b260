"""Running the `git` command for the network half of sync: fetch, push, clone, remotes.

Transport goes through git itself so that ssh config, credential helpers, proxies and the
remote's hooks behave as the user expects. Every call is non-interactive (no terminal
prompt, an askpass that fails, ssh in batch mode) and bounded in time: on timeout the whole
process group is killed, so a hung ssh or http helper goes too. Failures are classified from
git's stderr into the few cases a user can act on, each with its next step.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gitmem.errors import GitmemError

__all__ = [
    "DEFAULT_TIMEOUT",
    "Deadline",
    "GitFailed",
    "classify",
    "git_env",
    "remote_url",
    "run_git",
    "set_remote",
]

DEFAULT_TIMEOUT = 60.0  # seconds a sync or a clone may take, network included

# What each failure kind tells the user to do next.
_NEXT = {
    "unreachable": "check the URL and the network (gitmem remote show), then sync again; "
    "writes stay local commits until then",
    "authentication": "check your credentials for this remote (ssh key, credential helper "
    "or token), then sync again",
    "rejected": "the remote refused the push (a hook, or a branch checked out there); fix "
    "what it says, then sync again",
    "non-fast-forward": "the remote moved meanwhile; sync again",
    "busy": "another git command is updating this store's refs; sync again",
    "timeout": "the remote is slow or unreachable; sync again later, or raise --timeout",
    "not-found": "check the URL: no repository there (gitmem remote set URL)",
    "failed": "fix what git says, then try again",
}

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "authentication",
        re.compile(
            r"Authentication failed|could not read (Username|Password)|"
            r"Permission denied \(publickey|terminal prompts disabled|"
            r"HTTP Basic: Access denied|returned error: 40[13]|Host key verification failed",
            re.IGNORECASE,
        ),
    ),
    ("busy", re.compile(r"cannot lock ref|Unable to create '.*\.lock'|unable to lock")),
    ("rejected", re.compile(r"\[remote rejected\]|pre-receive hook declined|hook declined")),
    ("non-fast-forward", re.compile(r"non-fast-forward|\[rejected\].*fetch first|stale info")),
    (
        "not-found",
        re.compile(r"does not appear to be a git repository|Repository not found|not found", re.I),
    ),
    (
        "unreachable",
        re.compile(
            r"Could not resolve host|Connection refused|unable to connect|"
            r"Could not read from remote repository|Network is unreachable|"
            r"No route to host|Connection timed out|unable to access|does not exist",
            re.IGNORECASE,
        ),
    ),
)


class GitFailed(GitmemError):
    """A git command failed; `kind` says how (one of the keys of _NEXT, or host-key /
    ssh-missing from gitmem.sync.sshcause for ssh remotes)."""

    def __init__(self, message: str, kind: str, stderr: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.stderr = stderr


@dataclass(frozen=True)
class Deadline:
    """A point in monotonic time that every step of one sync shares."""

    at: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds)

    def left(self) -> float:
        return self.at - time.monotonic()


def git_env(
    base: Mapping[str, str], connect_timeout: int = 10, *, own_ssh: bool = False
) -> dict[str, str]:
    """The caller's environment made non-interactive: git never waits on a person.
    `own_ssh`: git config names an ssh command (core.sshCommand), which GIT_SSH_COMMAND
    would override; it runs as configured (without a terminal, ssh cannot prompt anyway)."""
    env = dict(base)
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_ASKPASS"] = "false"  # an askpass that answers nothing, at once
    env["SSH_ASKPASS"] = "false"
    env.setdefault("GCM_INTERACTIVE", "never")
    env["LC_ALL"] = "C"  # stderr in English, so failures can be classified
    if not own_ssh and "GIT_SSH_COMMAND" not in env and "GIT_SSH" not in env:
        env["GIT_SSH_COMMAND"] = (
            f"ssh -o BatchMode=yes -o ConnectTimeout={connect_timeout} "
            "-o StrictHostKeyChecking=accept-new"
        )
    return env


# The commands that may open a connection, so that an ssh command matters.
_NETWORK = frozenset({"clone", "fetch", "ls-remote", "push"})


def classify(stderr: str) -> str:
    # A remote hook's words ("remote: ...") may quote a failure of its own (its ssh to a
    # mirror refused): they say why the remote refused, never what our credentials are.
    own = "\n".join(line for line in stderr.splitlines() if not line.startswith("remote:"))
    for kind, pattern in _PATTERNS:
        if pattern.search(own if kind == "authentication" else stderr):
            return kind
    return "failed"


def run_git(
    args: Sequence[str],
    *,
    cwd: Path | None,
    env: Mapping[str, str],
    deadline: Deadline,
    what: str,
) -> str:
    """Run `git <args>` with what is left of the deadline; return stdout or raise GitFailed."""
    left = deadline.left()
    if left <= 0:
        raise GitFailed(f"{what}: out of time before starting — {_NEXT['timeout']}", "timeout")
    cmd = ["git", "-c", "credential.interactive=never", "-c", "core.askPass=false", *args]
    own_ssh = args[0] in _NETWORK and _configured_ssh(cwd, env)
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=git_env(env, own_ssh=own_ssh),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        encoding="utf-8",
        errors="replace",  # a remote hook may speak Latin-1: its words are shown, not a crash
        start_new_session=True,  # its own process group: a timeout kills ssh/http helpers too
    )
    try:
        out, err = proc.communicate(timeout=left)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise GitFailed(
            f"{what}: no answer from the remote within the time allowed — {_NEXT['timeout']}",
            "timeout",
        ) from None
    except BaseException:
        _kill_group(proc)
        raise
    if proc.returncode != 0:
        kind = classify(err)
        raise GitFailed(f"{what} failed ({kind}): {_summary(err)} — {_NEXT[kind]}", kind, err)
    return out


def _configured_ssh(cwd: Path | None, env: Mapping[str, str]) -> bool:
    """Whether git config sets core.sshCommand (a clone has no repository config yet)."""
    scope = ["--global"] if cwd is None else []
    try:
        done = subprocess.run(
            ["git", "config", *scope, "--get", "core.sshCommand"],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and bool(done.stdout.strip())


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def _summary(stderr: str) -> str:
    """The lines of git's stderr worth showing: the remote's own words (a hook's message)
    first, then git's fatal/error lines; progress chatter dropped."""
    remote = [
        line.removeprefix("remote:").strip()
        for line in stderr.splitlines()
        if line.startswith("remote:") and line.removeprefix("remote:").strip()
    ]
    errors = [
        line.strip()
        for line in stderr.splitlines()
        if line.startswith(("fatal:", "error:", " ! ")) or "rejected" in line
    ]
    picked = remote + errors or [line.strip() for line in stderr.splitlines() if line.strip()]
    return "; ".join(dict.fromkeys(picked[:6])) or "no message"


# --- remotes ------------------------------------------------------------------------------


def remote_url(root: Path, name: str, env: Mapping[str, str]) -> str | None:
    """The URL of a configured remote, or None."""
    try:
        out = run_git(
            ["config", "--get", f"remote.{name}.url"],
            cwd=root,
            env=env,
            deadline=Deadline.after(10),
            what="reading the remote",
        )
    except GitFailed:
        return None
    return out.strip() or None


_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/?#]*)@")
_SSH_SCHEMES = ("ssh://", "git+ssh://", "ssh+git://")


def shown_url(url: str) -> str:
    """`url` as a message, a result or a log may show it: without a password or a token,
    which would stay in a terminal's scrollback, an agent's transcript and the hook log. As
    git shows URLs, an https URL (any but ssh) loses its whole user part, where hosting
    services take a token as the user name; an ssh URL keeps its user name, which says whose
    key ssh offers (`ssh -T git@host`), and loses any password."""
    match = _USERINFO.match(url)
    if match is None:
        return url
    scheme, rest = match["scheme"], url[match.end() :]
    user = match["info"].partition(":")[0]
    if scheme.lower() in _SSH_SCHEMES and user:
        return f"{scheme}{user}@{rest}"
    return f"{scheme}{rest}"


def set_remote(root: Path, name: str, url: str, env: Mapping[str, str], *, add: bool) -> None:
    known = remote_url(root, name, env)
    if add and known is not None:
        raise GitmemError(
            f'the store already has a remote "{name}" ({shown_url(known)}) — change it with '
            f'"gitmem remote set {shown_url(url)}"'
        )
    verb = ["remote", "add", name, url] if known is None else ["remote", "set-url", name, url]
    run_git(verb, cwd=root, env=env, deadline=Deadline.after(10), what="setting the remote")
