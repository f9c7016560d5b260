"""`gitmem setup`: merging into Claude Code's and Codex's settings, on files with unrelated
content, and taking back out exactly what was added."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest
from hookkit import FIXTURES, make_project

from gitmem.agents import hostfiles, hostsetup
from gitmem.errors import GitmemError

COMMAND = ["/opt/gitmem/bin/gitmem"]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home with the hosts' settings already full of the user's own things."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".codex").mkdir()
    shutil.copy(FIXTURES / "claude-code" / "settings.json", home / ".claude" / "settings.json")
    shutil.copy(FIXTURES / "claude-code" / "claude.json", home / ".claude.json")
    for name in ("config.toml", "hooks.json", "AGENTS.md"):
        shutil.copy(FIXTURES / "codex" / name, home / ".codex" / name)
    return home


def files(home: Path) -> dict[str, str]:
    return {
        str(p.relative_to(home)): p.read_text()
        for p in sorted(home.rglob("*"))
        if p.is_file() and not p.name.endswith(hostfiles.BACKUP_SUFFIX)
    }


def test_claude_code_hooks_merge_beside_the_users_own(home: Path, tmp_path: Path) -> None:
    before = json.loads((home / ".claude" / "settings.json").read_text())
    target = hostsetup.target("claude-code", "user", home, tmp_path)
    changes = hostsetup.install(target, COMMAND)
    assert [c.action for c in changes] == ["updated", "updated", "created"]
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    # Unrelated settings are untouched; the user's own hooks stay first.
    assert {k: v for k, v in settings.items() if k != "hooks"} == {
        k: v for k, v in before.items() if k != "hooks"
    }
    assert settings["hooks"]["Notification"] == before["hooks"]["Notification"]
    post = settings["hooks"]["PostToolUse"]
    assert post[0] == before["hooks"]["PostToolUse"][0]
    assert post[1] == {
        "matcher": "Write|Edit|MultiEdit",
        "hooks": [
            {
                "type": "command",
                "command": "/opt/gitmem/bin/gitmem hook post-tool-use --host claude-code",
                "timeout": 10,
            }
        ],
    }
    start = settings["hooks"]["SessionStart"]
    assert start == [
        {
            "hooks": [
                {
                    "type": "command",
                    "command": "/opt/gitmem/bin/gitmem hook session-start --host claude-code",
                    "timeout": 10,
                }
            ]
        }
    ]
    assert set(settings["hooks"]) == {
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "PreCompact",
        "Stop",
        "SessionEnd",
        "Notification",
    }
    claude = json.loads((home / ".claude.json").read_text())
    assert claude["numStartups"] == 42 and "github" in claude["mcpServers"]
    assert claude["mcpServers"]["gitmem"] == {
        "type": "stdio",
        "command": "/opt/gitmem/bin/gitmem",
        "args": ["mcp"],
    }
    skill = (home / ".claude" / "skills" / "gitmem" / "SKILL.md").read_text()
    assert skill.startswith("---\nname: gitmem\ndescription: ") and "When to record" in skill
    # Backups hold the files as they were.
    backup = home / ".claude" / ("settings.json" + hostfiles.BACKUP_SUFFIX)
    assert json.loads(backup.read_text()) == before


@pytest.mark.parametrize("host", ["claude-code", "codex"])
def test_setup_twice_changes_nothing_and_uninstall_restores(
    home: Path, tmp_path: Path, host: str
) -> None:
    original = files(home)
    target = hostsetup.target(host, "user", home, tmp_path)
    hostsetup.install(target, COMMAND)
    installed = files(home)
    assert installed != original
    again = hostsetup.install(target, COMMAND)
    assert {c.action for c in again} == {"unchanged"}
    assert files(home) == installed
    assert hostsetup.check(target).complete
    hostsetup.uninstall(target)
    after = files(home)
    for name, text in original.items():
        if name.endswith(".json"):
            assert json.loads(after[name]) == json.loads(text), name
        else:
            assert after[name] == text, name
    assert set(after) == set(original)  # the skill file gitmem created is gone
    assert not (home / ".claude" / "skills").exists() or not any(
        (home / ".claude" / "skills").iterdir()
    )
    status = hostsetup.check(target)
    assert not status.hooks and not status.mcp and not status.guide


def test_codex_config_stays_valid_toml(home: Path, tmp_path: Path) -> None:
    target = hostsetup.target("codex", "user", home, tmp_path)
    hostsetup.install(target, ["/usr/bin/python3", "-m", "gitmem"], Path("/data/memory"))
    config = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert config["model"] == "gpt-5.4" and config["profiles"]["fast"]["model"] == "gpt-5.4-mini"
    assert config["mcp_servers"]["docs"]["command"] == "docs-server"
    assert config["mcp_servers"]["gitmem"] == {
        "command": "/usr/bin/python3",
        "args": ["-m", "gitmem", "mcp", "--store", "/data/memory"],
    }
    hooks = json.loads((home / ".codex" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "PostToolUse", "PreCompact", "Stop"}
    assert hooks["PostToolUse"][0]["matcher"] == "apply_patch"
    assert hooks["Stop"][0]["hooks"][0]["command"] == "python3 ~/.codex/hooks/notify.py"
    assert hooks["Stop"][1]["hooks"][0]["command"] == (
        "/usr/bin/python3 -m gitmem hook stop --store /data/memory --host codex"
    )
    agents = (home / ".codex" / "AGENTS.md").read_text()
    assert agents.startswith("# My global instructions\n") and "## Memory (gitmem)" in agents


def test_project_scope_writes_into_the_project(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    home = tmp_path / "home"
    for host in ("claude-code", "codex"):
        hostsetup.install(hostsetup.target(host, "project", home, project), COMMAND)
    assert not home.exists()
    assert (project / ".claude" / "settings.json").exists()
    assert "gitmem" in json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert (project / ".codex" / "hooks.json").exists()
    assert "[mcp_servers.gitmem]" in (project / ".codex" / "config.toml").read_text()
    assert "## Memory (gitmem)" in (project / "AGENTS.md").read_text()


@pytest.mark.parametrize("name", [".claude/settings.json", ".claude.json"])
def test_a_broken_settings_file_is_refused_and_nothing_changes(
    home: Path, tmp_path: Path, name: str
) -> None:
    (home / name).write_text('{"model": "opus",')
    before = files(home)
    with pytest.raises(GitmemError, match="not valid JSON"):
        hostsetup.install(hostsetup.target("claude-code", "user", home, tmp_path), COMMAND)
    assert files(home) == before


def test_a_gitmem_server_the_user_wrote_is_left_alone(home: Path, tmp_path: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.write_text(config.read_text() + '\n[mcp_servers.gitmem]\ncommand = "mine"\n')
    before = config.read_text()
    target = hostsetup.target("codex", "user", home, tmp_path)
    hostsetup.install(target, COMMAND)
    assert config.read_text() == before
    assert hostsetup.check(target).mcp


def test_cli_setup_check_and_uninstall(gm, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HOME", str(home))
    missing = gm("setup", "--check", "--host", "codex")
    assert missing.code == 1 and "codex (user): not installed" in missing.out
    done = gm("setup", "--host", "codex", "--command", "gitmem", "--json")
    assert done.code == 0
    assert {c["action"] for c in json.loads(done.out)} == {"updated"}
    report = gm("setup", "--check", "--host", "codex", "--json")
    assert report.code == 0 and json.loads(report.out)[0]["complete"] is True
    assert gm("setup", "--host", "codex", "--uninstall").code == 0
    assert gm("setup", "--check", "--host", "codex").code == 1
    wrong = gm("setup", "--host", "vscode")
    assert wrong.code == 2 and "--host must be one of claude-code, codex" in wrong.err


def test_a_store_path_with_a_space_is_still_recognised(home: Path, tmp_path: Path) -> None:
    """The quoted --store must not hide gitmem's own hooks: no duplicates, a clean uninstall."""
    original = files(home)
    target = hostsetup.target("claude-code", "user", home, tmp_path)
    hostsetup.install(target, COMMAND, Path("/data/my memory"))
    assert {c.action for c in hostsetup.install(target, COMMAND, Path("/data/my memory"))} == {
        "unchanged"
    }
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert len(settings["hooks"]["SessionStart"]) == 1
    assert (
        "--store '/data/my memory'" in settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    )
    assert hostsetup.check(target).complete
    hostsetup.uninstall(target)
    after = files(home)
    assert json.loads(after[".claude/settings.json"]) == json.loads(
        original[".claude/settings.json"]
    )


def test_an_inline_mcp_servers_table_is_refused_not_broken(home: Path, tmp_path: Path) -> None:
    """Appending [mcp_servers.gitmem] after `mcp_servers = {...}` would be invalid TOML."""
    config = home / ".codex" / "config.toml"
    config.write_text('model = "gpt-5.4"\nmcp_servers = { docs = { command = "docs-server" } }\n')
    before = files(home)
    with pytest.raises(GitmemError, match=r"cannot add \[mcp_servers.gitmem\]"):
        hostsetup.install(hostsetup.target("codex", "user", home, tmp_path), COMMAND)
    assert files(home) == before


def test_the_default_command_keeps_the_symlink_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A versioned install behind a PATH symlink (Homebrew's Cellar) goes away on upgrade."""
    from gitmem.cli.agents import _command

    cellar = tmp_path / "Cellar" / "gitmem" / "1.0" / "bin"
    cellar.mkdir(parents=True)
    (cellar / "gitmem").write_text("#!/bin/sh\n")
    (cellar / "gitmem").chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gitmem").symlink_to(cellar / "gitmem")
    monkeypatch.setenv("PATH", str(bin_dir))
    assert _command(None) == [str(bin_dir / "gitmem")]


def test_check_names_a_broken_codex_config(home: Path, tmp_path: Path) -> None:
    (home / ".codex" / "config.toml").write_text("model = [unclosed\n")
    status = hostsetup.check(hostsetup.target("codex", "user", home, tmp_path))
    assert not status.mcp and not status.complete
    assert len(status.problems) == 1 and "config.toml is not valid TOML" in status.problems[0]
