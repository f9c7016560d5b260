"""Running the distiller: a command that reads the prompt on stdin and prints its answer.

It runs in its own process group, so that a timeout stops it and whatever it started; what it
prints is read up to ANSWER_LIMIT and no further (a command that prints without end is
stopped, not held in memory). One loop writes the prompt and reads both outputs, and stops at
the deadline whatever holds the pipes open: a process the distiller started in a session of
its own (out of reach of the group's kill) may keep its stdout open for ever; the pipes are
closed on it. Once the distiller itself has exited, its output is read for GRACE seconds more,
not until every such process has gone. Its environment says GITMEM_HOOKS=off and
GITMEM_CAPTURE=off, so that the host CLI's own session (`claude -p` runs the user's hooks)
neither records a session nor starts another distillation.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gitmem.capture.settings import HOST_COMMANDS

__all__ = ["ANSWER_LIMIT", "Ran", "distiller_command", "run_distiller"]

ANSWER_LIMIT = 8 << 20  # bytes of an answer read; beyond it the distiller is stopped
GRACE = 0.5  # seconds its output is still read after the distiller has exited
_ERR_KEPT = 2000


@dataclass(frozen=True)
class Ran:
    output: str
    problem: str  # "" when it exited 0 within the time


def distiller_command(
    configured: Sequence[str], host: str, env: Mapping[str, str]
) -> tuple[tuple[str, ...], str]:
    """(the command, "") or ((), why there is none)."""
    command = tuple(configured) or HOST_COMMANDS.get(host, ())
    if not command:
        return (), (
            f"no distiller for host {host or 'unknown'}: set capture.command in config.toml "
            '(e.g. command = "claude -p")'
        )
    found = shutil.which(command[0], path=env.get("PATH", os.defpath))
    if found is None:
        return (), (
            f"the distiller {command[0]!r} is not on PATH; install it, or set "
            "capture.command in config.toml to a command that reads a prompt on stdin"
        )
    return (found, *command[1:]), ""


def run_distiller(
    command: Sequence[str], prompt: str, env: Mapping[str, str], timeout: float
) -> Ran:
    child_env = {**env, "GITMEM_HOOKS": "off", "GITMEM_CAPTURE": "off"}
    try:
        process = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env,
            start_new_session=True,
            bufsize=0,
        )
    except OSError as exc:
        return Ran("", f"the distiller could not start ({exc})")
    deadline = time.monotonic() + timeout
    try:
        out, err, stopped = _exchange(process, prompt.encode("utf-8"), deadline)
        if not stopped:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                stopped = "timeout"
    finally:
        if process.poll() is None:
            _stop(process)
            process.wait()
    text = out.decode("utf-8", "replace")
    said = err.decode("utf-8", "replace").strip()[-_ERR_KEPT:]
    if stopped == "overflow":
        return Ran("", f"the distiller printed more than {ANSWER_LIMIT >> 20} MB; stopped")
    if stopped == "timeout":
        return Ran("", f"the distiller took longer than {timeout:g} s; stopped")
    if process.returncode != 0:
        tail = f": {' '.join(said.split())[-300:]}" if said else ""
        return Ran(text, f"the distiller exited {process.returncode}{tail}")
    return Ran(text, "")


def _exchange(
    process: subprocess.Popen[bytes], prompt: bytes, deadline: float
) -> tuple[bytes, bytes, str]:
    """Write the prompt and read stdout and stderr until both end, the distiller has exited
    GRACE seconds ago, or the deadline. (stdout, the end of stderr, "" or why it was
    stopped: "timeout" or "overflow"); the pipes are closed either way."""
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
    out: list[bytes] = []
    err = bytearray()  # its last 64 KB: where a failing command says why
    size = sent = 0
    exited: float | None = None
    stopped = ""
    selector = selectors.DefaultSelector()
    try:
        os.set_blocking(stdin.fileno(), False)
        selector.register(stdin, selectors.EVENT_WRITE)
        selector.register(stdout, selectors.EVENT_READ)
        selector.register(stderr, selectors.EVENT_READ)
        while selector.get_map():
            now = time.monotonic()
            if now >= deadline:
                stopped = "timeout"
                break
            if exited is None and process.poll() is not None:
                exited = now
            if exited is not None and now - exited > GRACE:
                break  # what is left holding the pipes is not the distiller
            for key, _ in selector.select(min(deadline - now, 0.1)):
                if key.fileobj is stdin:
                    try:
                        sent += os.write(key.fd, prompt[sent : sent + 65536])
                    except BlockingIOError:
                        continue
                    except OSError:  # it left without reading: its exit says why
                        sent = len(prompt)
                    if sent >= len(prompt):
                        selector.unregister(stdin)
                        stdin.close()
                    continue
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                elif key.fileobj is stdout:
                    size += len(chunk)
                    if size > ANSWER_LIMIT:
                        stopped = "overflow"
                        break
                    out.append(chunk)
                else:
                    err += chunk
                    del err[: max(0, len(err) - 65536)]
            if stopped:
                break
    finally:
        selector.close()
        for stream in (stdin, stdout, stderr):
            with contextlib.suppress(OSError):
                stream.close()
    if stopped:
        _stop(process)
    return b"".join(out), bytes(err), stopped


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):  # gone already
        os.killpg(process.pid, signal.SIGKILL)
