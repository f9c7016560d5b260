"""Why git could not reach an ssh remote, in ssh's own words.

Over ssh, git says only "Could not read from remote repository"; the cause is in what ssh
printed before it. The three causes a person fixes on their own machine (no ssh program, a
host key not trusted, a key refused) are told with the command that checks the fix. The
patterns are OpenSSH's messages (9.x) and those of sh and git when a program is missing.
"""

from __future__ import annotations

import re

from gitmem.sync.gitcli import GitFailed

__all__ = ["explain_ssh"]

# A password in the URL (user:password@) is never part of the login the message shows.
_SSH_URL = re.compile(
    r"(?:git\+)?ssh(?:\+git)?://(?:(?P<user>[^@/:]+)(?::[^@/]*)?@)?(?P<host>[^:/]+)"
    r"(?::(?P<port>\d+))?/"
)
_SCP_URL = re.compile(r"(?:(?P<user>[^@/:]+)@)?(?P<host>[^@/:]+):(?!//)")
# git runs an ssh command with arguments as `sh -c 'COMMAND "$@"' COMMAND ...`, so the shell
# names itself after the command (its $0), which holds the program: "ssh -o ...: 1: ssh: not
# found". The same words from the server's shell (a ~/.bashrc that runs a tool it lacks:
# "bash: pyenv: command not found") come once ssh is in, and name another program than it.
_NO_PROGRAM = re.compile(
    r"^(?!fatal:|error:)(?P<shell>.*?): (?:\d+: |line \d+: )?(?P<program>\S+): "
    r"(?:command )?not found$"
    r"|^(?:fatal|error): cannot run (?P<run>\S+): No such file or directory$",
    re.MULTILINE,
)
_HOST_KEY = re.compile(
    r"^(Host key for \S+ has changed.*?|No \S+ host key is known for .*?|"
    r"Host key verification failed)\.?$",
    re.MULTILINE,
)
_DENIED = re.compile(r"Permission denied \([^)]*\)")
_KEY_TROUBLE = re.compile(
    r"^(Load key .*?|Warning: Identity file .*?|Permissions .*? are too open)\.?$", re.MULTILINE
)


def explain_ssh(exc: GitFailed, target: str, url: str, again: str) -> GitFailed | None:
    """`exc` told in ssh's words when ssh could not start, trust the host or log in; None
    for any other failure. `target` is what the message names (the remote and its URL),
    `again` the step that follows the fix ("sync again")."""
    match = _SSH_URL.match(url) or (None if "://" in url else _SCP_URL.match(url))
    if match is None:
        return None
    host, port = match["host"], match.groupdict().get("port")
    login = f"{match['user']}@{host}" if match["user"] else host
    check = f'"ssh -T {f"-p {port} " if port else ""}{login}"'
    # ssh's own lines and the local shell's; not the remote's ("remote: ..."), whose hook
    # may run an ssh of its own that fails in the same words.
    stderr = "\n".join(
        line for line in exc.stderr.replace("\r", "").split("\n") if not line.startswith("remote:")
    )
    missing = _missing_program(stderr)
    if missing is not None:
        return GitFailed(
            f'ssh could not start for {target}: "{missing}" was not found — '
            f"install an OpenSSH client, or point git's core.sshCommand at one, then {again}",
            "ssh-missing",
            exc.stderr,
        )
    if found := _HOST_KEY.search(stderr):
        if found[1].startswith("Host key for"):
            step = (
                "if the host's owner changed its key, remove the old one with "
                f'"ssh-keygen -R {f"[{host}]:{port}" if port else host}" and accept the new one '
                f"with {check}; otherwise someone may be intercepting the connection: do not "
                "connect"
            )
        else:
            step = f"check its key's fingerprint and accept it with {check}, then {again}"
        return GitFailed(
            f"ssh could not verify the host of {target}: {found[1]} — {step}",
            "host-key",
            exc.stderr,
        )
    if found := _DENIED.search(stderr):
        cause = "; ".join(dict.fromkeys([found[0], *_KEY_TROUBLE.findall(stderr)]))
        return GitFailed(
            f"ssh could not authenticate to {target}: {cause} — check your key with {check} "
            f"(gitmem never prompts: a key with a passphrase must be in ssh-agent), then {again}",
            "authentication",
            exc.stderr,
        )
    return None


def _missing_program(stderr: str) -> str | None:
    """The ssh program that could not be run, as the local shell or git said it."""
    for found in _NO_PROGRAM.finditer(stderr):
        program = found["run"] or found["program"]
        if found["program"] and program not in found["shell"].split():
            continue  # not the shell git started for ssh: the server's, once ssh was in
        # git-upload-pack and git-receive-pack missing are the far side's shell speaking.
        if not program.rpartition("/")[2].startswith("git-"):
            return program
    return None
