"""The JSON answers shared by `gitmem ... --json` and the MCP server's tools, so that both give
the same result for the same call (schemas in docs/cli.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gitmem.store.record import Record
from gitmem.store.store import WriteResult

if TYPE_CHECKING:
    from gitmem.store.history import Version  # loaded where history is read, not on every write

__all__ = ["history_json", "record_json", "write_json"]


def record_json(record: Record) -> dict[str, Any]:
    """`gitmem read --json`."""
    return {**record.to_dict(), "path": record.path}


def history_json(versions: list[Version]) -> list[dict[str, Any]]:
    """`gitmem history --json`."""
    return [
        {
            "commit": v.commit,
            "time": v.time.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "operation": v.operation,
            "agent": v.agent,
            "changed": list(v.changed),
            "record": None if v.record is None else v.record.to_dict(),
        }
        for v in versions
    ]


def write_json(result: WriteResult) -> dict[str, Any]:
    """`gitmem record/supersede/forget/amend/import --json`."""
    return {
        "operation": result.operation,
        "commit": result.commit,
        "ids": [r.id for r in result.records],
        "paths": [r.path for r in result.records],
        "redacted": list(result.redactions),
    }
