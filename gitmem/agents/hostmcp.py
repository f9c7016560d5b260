"""gitmem's MCP server in a host's settings: an `mcpServers` entry in Claude Code's JSON, a
marked `[mcp_servers.gitmem]` block in Codex's config.toml. Only the entry named gitmem is
ever touched."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from pathlib import Path

from gitmem.agents.hostfiles import NAME, dump_json, read, read_json, strip_block
from gitmem.errors import GitmemError

__all__ = ["has_server", "mcp_file"]

TOML_BEGIN = "# >>> gitmem: managed by `gitmem setup`; remove with `gitmem setup --uninstall`"
TOML_END = "# <<< gitmem"


def mcp_file(
    path: Path, host: str, command: Sequence[str] | None, store: Path | None
) -> str | None:
    """The file's new text: without gitmem's server, then (with a `command`) with it; None for
    a file that does not exist and would hold nothing."""
    return (_mcp_toml if host == "codex" else _mcp_json)(path, command, store)


def has_server(path: Path, host: str) -> bool:
    if host != "codex":
        return NAME in read_json(path).get("mcpServers", {})
    try:
        servers = tomllib.loads(read(path) or "").get("mcp_servers", {})
    except tomllib.TOMLDecodeError as exc:
        raise GitmemError(f"{path} is not valid TOML ({exc}); Codex cannot read it") from exc
    return isinstance(servers, dict) and NAME in servers


def _mcp_args(command: Sequence[str], store: Path | None) -> list[str]:
    return [*command[1:], "mcp", *(["--store", str(store)] if store else [])]


def _mcp_json(path: Path, command: Sequence[str] | None, store: Path | None) -> str | None:
    data = read_json(path)
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise GitmemError(f'{path}: "mcpServers" is not an object; gitmem changes nothing in it')
    servers = {k: v for k, v in servers.items() if k != NAME}
    if command is not None:
        args = _mcp_args(command, store)
        servers[NAME] = {"type": "stdio", "command": command[0], "args": args}
    if servers:
        data["mcpServers"] = servers
    else:
        data.pop("mcpServers", None)
    if not data and read(path) is None:
        return None
    return dump_json(data)


def _mcp_toml(path: Path, command: Sequence[str] | None, store: Path | None) -> str | None:
    old = read(path)
    text = strip_block(old or "", TOML_BEGIN, TOML_END)
    if text.strip() == "":
        text = ""
    if command is not None:
        try:
            existing = tomllib.loads(text).get("mcp_servers", {})
        except tomllib.TOMLDecodeError as exc:
            raise GitmemError(
                f"{path} is not valid TOML ({exc}); gitmem changes nothing in it"
            ) from exc
        if NAME not in existing:
            args = ", ".join(json.dumps(a) for a in _mcp_args(command, store))
            block = (
                f"{TOML_BEGIN}\n[mcp_servers.{NAME}]\n"
                f"command = {json.dumps(command[0])}\nargs = [{args}]\n{TOML_END}\n"
            )
            text = (text.rstrip("\n") + "\n\n" if text.strip() else "") + block
            try:
                tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:  # e.g. `mcp_servers = { ... }`, inline
                raise GitmemError(
                    f"{path}: cannot add [mcp_servers.{NAME}] beside how the file writes "
                    f"mcp_servers ({exc}); write mcp_servers as [mcp_servers.NAME] tables, or "
                    "add the gitmem server yourself, then run setup again"
                ) from exc
    if old is None and not text:
        return None
    return text
