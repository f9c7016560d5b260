"""Helpers for the hook, setup and MCP tests: projects, payload fixtures, running a hook."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures" / "hooks"


def make_project(base: Path, remote: str | None = "git@github.com:Acme/Widget.git") -> Path:
    """A git work tree, with an origin remote unless `remote` is None."""
    project = base / "widget"
    project.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    if remote:
        subprocess.run(["git", "-C", str(project), "remote", "add", "origin", remote], check=True)
    return project


def payload(name: str, project: Path, transcript: Path | None = None, **extra: Any) -> bytes:
    """A fixture payload (host/name.json) with {cwd} and {transcript} filled in."""
    text = (FIXTURES / f"{name}.json").read_text(encoding="utf-8")
    text = text.replace("{cwd}", str(project)).replace("{transcript}", str(transcript or ""))
    data = json.loads(text)
    data.update(extra)
    return json.dumps(data).encode("utf-8")


@dataclass
class HookRun:
    code: int
    out: str

    def context(self) -> str:
        if not self.out.strip():
            return ""
        data = json.loads(self.out)
        return str(data["hookSpecificOutput"]["additionalContext"])


def run_hook(
    event: str, stdin: bytes, store: Path | None, *args: str, home: Path | None = None
) -> HookRun:
    """`gitmem hook EVENT` in this process."""
    from gitmem.hooks.main import main

    env = {"HOME": str(home or os.environ["HOME"])}
    if "GITMEM_BACKGROUND_INDEX" in os.environ:  # "off" in tests (conftest): index in-process
        env["GITMEM_BACKGROUND_INDEX"] = os.environ["GITMEM_BACKGROUND_INDEX"]
    if store is not None:
        env["GITMEM_STORE"] = str(store)
    out = io.StringIO()
    code = main([event, *args], env, io.BytesIO(stdin), out)
    return HookRun(code, out.getvalue())


def hook_process(
    event: str,
    stdin: bytes,
    store: Path,
    *args: str,
    env: dict[str, str] | None = None,
    stdin_file: Any = None,
) -> subprocess.CompletedProcess[str]:
    """`python -m gitmem hook EVENT` as the host runs it: a new process."""
    full = {**os.environ, "GITMEM_STORE": str(store), **(env or {})}
    feed = {"stdin": stdin_file} if stdin_file is not None else {"input": stdin.decode("utf-8")}
    return subprocess.run(
        [sys.executable, "-m", "gitmem", "hook", event, *args],
        **feed,
        capture_output=True,
        text=True,
        env=full,
        timeout=60,
    )


def log_text(store: Path) -> str:
    path = store / ".gitmem" / "hooks.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""
