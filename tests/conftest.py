"""Isolation for every test: a fake HOME with a pinned git identity, no inherited GIT_* or
GITMEM_* variables (but GITMEM_BACKGROUND_INDEX=off and GITMEM_CAPTURE=off), and helpers to
make stores and run the CLI as a user would."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# libgit2 reads HOME once, when it first loads: point it at a throwaway home before any test
# imports gitmem, so no developer's ~/.gitconfig leaks in.
_SESSION_HOME = Path(tempfile.mkdtemp(prefix="gitmem-home-"))
(_SESSION_HOME / ".gitconfig").write_text(
    "[user]\n\tname = Test User\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"
)
for _key in list(os.environ):
    if _key.startswith(("GIT_", "GITMEM_")) or _key in ("XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        del os.environ[_key]
os.environ["HOME"] = str(_SESSION_HOME)
os.environ["GIT_CONFIG_NOSYSTEM"] = "1"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("GITMEM_") or key in ("XDG_DATA_HOME", "EDITOR", "VISUAL"):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(_SESSION_HOME))
    # No detached index catch-up after a CLI write (gitmem.cli.background) unless a test asks:
    # it would race with what a test checks of the index. tests/test_background.py turns it on.
    monkeypatch.setenv("GITMEM_BACKGROUND_INDEX", "off")
    # No detached distillation after a session's hook (gitmem.hooks.events._distill_later)
    # unless a test asks: tests/test_capture*.py turn it on.
    monkeypatch.setenv("GITMEM_CAPTURE", "off")


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def gm(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Run the CLI in this process: gm("record", "fact", "body", input=b"...")."""
    from gitmem.cli.main import run

    def call(*args: str, input: bytes = b"") -> Result:
        capsys.readouterr()
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(input)))
        code = run(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return call


@pytest.fixture
def store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An initialised store, also set as GITMEM_STORE."""
    from gitmem.store.store import Store

    path = tmp_path / "store"
    Store.init(path)
    monkeypatch.setenv("GITMEM_STORE", str(path))
    return path


def git(cwd: Path, *args: str) -> str:
    """The real git command, for checking what gitmem did."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


def set_model(root: Path, spec: str) -> None:
    """Set index.model in the store's config.toml and commit it, as a user would: "none" for a
    test about keyword-only recall (every new store has the built-in model by default)."""
    config = root / "config.toml"
    text = config.read_text()
    start = text.index('model = "')
    end = text.index('"', start + len('model = "'))
    config.write_text(f'{text[:start]}model = "{spec}"{text[end + 1 :]}')
    git(root, "commit", "-qm", f"index.model = {spec}", "--", "config.toml")


def assert_clean(path: Path) -> None:
    """git status is clean and git fsck passes: what every gitmem write must leave."""
    assert git(path, "status", "--porcelain") == ""
    subprocess.run(["git", "fsck", "--strict"], cwd=path, capture_output=True, check=True)


def snapshot(path: Path) -> tuple[str, str, str]:
    """HEAD, the work tree's status and its files: to prove a refused write changed nothing."""
    head = git(path, "rev-parse", "HEAD")
    files = "\n".join(
        f"{p.relative_to(path)}:{p.stat().st_size}"
        for p in sorted(path.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(path).parts[:1]
    )
    return head, git(path, "status", "--porcelain"), files


@pytest.fixture
def store(store_path: Path) -> Iterator[object]:
    from gitmem.store.store import Store

    yield Store.open(store_path)
