"""Running the distiller: a command that reads the prompt on stdin and prints its answer.

It runs in its own process group, so that a timeout stops it and whatever it started; what it
prints is read up to ANSWER_LIMIT and no further (a command that prints without end is
stopped, not held in memory). Its environment says GITMEM_HOOKS=off and GITMEM_CAPTURE=off,
so that the host CLI's own session (`claude -p` runs the user's hooks) neither records a
session nor starts another distillation.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from gitmem.capture.settings import HOST_COMMANDS

__all__ = ["ANSWER_LIMIT", "Ran", "distiller_command", "run_distiller"]

ANSWER_LIMIT = 8 << 20  # bytes of an answer read; beyond it the distiller is stopped
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
        )
    except OSError as exc:
        return Ran("", f"the distiller could not start ({exc})")
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    errors: list[bytes] = []
    feeder = threading.Thread(target=_feed, args=(process.stdin, prompt), daemon=True)
    drain = threading.Thread(target=_drain, args=(process.stderr, errors), daemon=True)
    feeder.start()
    drain.start()
    late = threading.Event()

    def too_late() -> None:
        late.set()
        _stop(process)

    timer = threading.Timer(timeout, too_late)
    timer.start()
    chunks: list[bytes] = []
    size = 0
    overflow = False
    try:
        while chunk := os.read(process.stdout.fileno(), 65536):
            size += len(chunk)
            if size > ANSWER_LIMIT:
                overflow = True
                _stop(process)
                break
            chunks.append(chunk)
        code = process.wait()
    finally:
        timer.cancel()
        process.stdout.close()
    timed_out = late.is_set()
    drain.join(1.0)
    text = b"".join(chunks).decode("utf-8", "replace")
    said = b"".join(errors).decode("utf-8", "replace").strip()[-_ERR_KEPT:]
    if overflow:
        return Ran("", f"the distiller printed more than {ANSWER_LIMIT >> 20} MB; stopped")
    if timed_out:
        return Ran("", f"the distiller took longer than {timeout:g} s; stopped")
    if code != 0:
        tail = f": {' '.join(said.split())[-300:]}" if said else ""
        return Ran(text, f"the distiller exited {code}{tail}")
    return Ran(text, "")


def _feed(stream: IO[bytes], prompt: str) -> None:
    try:
        stream.write(prompt.encode("utf-8"))
        stream.close()
    except OSError:  # it left without reading: its exit says why
        pass


def _drain(stream: IO[bytes], into: list[bytes]) -> None:
    kept = 0
    while chunk := os.read(stream.fileno(), 65536):
        if kept < 65536:
            into.append(chunk)
            kept += len(chunk)
    stream.close()


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):  # gone already
        os.killpg(process.pid, signal.SIGKILL)
