"""Why git could not reach an ssh remote, in ssh's own words.

Over ssh, git says only "Could not read from remote repository"; the cause is in what ssh
printed before it. The three causes a person fixes on their own machine (no ssh program, a
host key not trusted, a key refused) are told with the command that checks the fix. The
patterns are OpenSSH's messages (9.x) and those of sh and git when a program is missing.
"""

from __future__ import annotations

import re

from gitmem.gitcli import GitFailed

__all__ = ["explain_ssh"]

_SSH_URL = re.compile(
    r"(?:git\+)?ssh(?:\+git)?://(?:(?P<user>[^@/]+)@)?(?P<host>[^:/]+)(?::(?P<port>\d+))?/"
)
_SCP_URL = re.compile(r"(?:(?P<user>[^@/:]+)@)?(?P<host>[^@/:]+):(?!//)")
_NO_PROGRAM = re.compile(
    r"^(?!fatal:|error:|remote:).*?: (?:\d+: |line \d+: )?(\S+): (?:command )?not found$"
    r"|^(?:fatal|error): cannot run (\S+): No such file or directory$",
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
    stderr = exc.stderr.replace("\r", "")
    found = _NO_PROGRAM.search(stderr)
    # git-upload-pack and git-receive-pack missing are the far side's shell speaking.
    if found and not (found[1] or found[2]).rpartition("/")[2].startswith("git-"):
        return GitFailed(
            f'ssh could not start for {target}: "{found[1] or found[2]}" was not found — '
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
