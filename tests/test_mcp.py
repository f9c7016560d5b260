"""`gitmem mcp`: driven through the MCP SDK's client, over stdio and in process; and the same
answers from the CLI, the Python API and the MCP server."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_clean
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from gitmem.answers import history_json, record_json
from gitmem.api import Store
from gitmem.mcp_server import build_server

LONG_AGO = datetime(2020, 3, 1, tzinfo=UTC)  # recency decay is at its floor: scores stay put


def fill(store_path: Path) -> dict[str, str]:
    store = Store.open(store_path)
    ids = {}
    for n, (type_, title, body) in enumerate(
        [
            ("decision", "Retry webhooks with backoff", "We retry webhook deliveries for 24 h."),
            ("fact", "Payments database", "Postgres 15 behind pgbouncer."),
            ("lesson", "No Friday deploys", "A Friday deploy broke checkout (PAY-1423)."),
        ]
    ):
        moment = LONG_AGO + timedelta(days=n)
        ids[title] = store.record(type_, body, title=title, now=moment).record.id
    old = ids["Payments database"]
    ids["before supersede"] = store.head() or ""
    ids["Payments database v2"] = store.supersede(
        old, "Postgres 16 behind pgbouncer.", title="Payments database v2"
    ).record.id
    return ids


def call(server: Any, name: str, args: dict[str, Any]) -> Any:
    async def go() -> Any:
        async with Client(server) as client:
            result = await client.call_tool(name, args)
            if result.is_error:
                return {"error": result.content[0].text}
            return result.structured_content

    return asyncio.run(go())


def run(coro: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    return asyncio.run(coro())


def test_cli_api_and_mcp_give_the_same_answers(gm, store_path: Path) -> None:  # type: ignore[no-untyped-def]
    from gitmem.recall.options import result_json

    ids = fill(store_path)
    api = Store.open(store_path)
    assert gm("rebuild").code == 0  # built here: the first recall to build it would say so
    server = build_server(Store.open(store_path))
    webhook, payments = ids["Retry webhooks with backoff"], ids["Payments database"]

    def cli(*args: str) -> Any:
        done = gm(*args, "--json")
        assert done.code == 0, done.err
        return json.loads(done.out)

    # recall
    mcp_recall = call(server, "recall", {"query": "webhook deliveries", "mode": "keyword"})
    cli_recall = cli("recall", "webhook deliveries", "--mode", "keyword")
    api_recall = result_json("webhook deliveries", api.recall("webhook deliveries", mode="keyword"))
    assert mcp_recall == cli_recall == api_recall
    assert mcp_recall["hits"][0]["id"] == webhook
    # read, now and as of a moment in the past
    assert (
        call(server, "read", {"id": webhook})
        == cli("read", webhook)
        == record_json(api.get(webhook))
    )
    when = ids["before supersede"]
    then = call(server, "read", {"id": payments, "as_of": when})
    assert (
        then == cli("read", payments, "--as-of", when) == record_json(api.get(payments, as_of=when))
    )
    assert then["status"] == "active"  # before it was superseded
    # history
    versions = call(server, "history", {"id": payments})["versions"]
    assert versions == cli("history", payments) == history_json(api.history(payments))
    assert [v["operation"] for v in versions][-1] in ("record", "supersede")
    # diff, to an explicit end: "now" is read by each of the three calls, and two of them may
    # fall on either side of a second's boundary
    start, end = ids["before supersede"], api.head() or ""
    changes = call(server, "diff", {"start": start, "end": end})
    assert changes == cli("diff", start, end) == api.diff(start, end).to_dict()
    assert [i["id"] for i in changes["superseded"]] == [payments]
    # context
    assert (
        call(server, "context", {"project": ""})
        == cli("context", "--project", "")
        == (api.context(project="").to_dict())
    )


@pytest.mark.parametrize("level", ["abstract", "outline", "full"])
def test_read_at_a_level_is_the_clis_text(gm, store_path: Path, level: str) -> None:  # type: ignore[no-untyped-def]
    made = Store.open(store_path).record(
        "decision",
        "## Why\nWebhook receivers go down for hours.\n\n## How\nExponential backoff, 24 h.",
        title="Retry webhooks with backoff",
        abstract="Retry failed webhook deliveries for 24 h with backoff.",
        tags=("webhooks",),
    )
    ident = made.record.id
    server = build_server(Store.open(store_path))
    answer = call(server, "read", {"id": ident, "level": level})
    shown = gm("read", ident, "--level", level)
    assert shown.code == 0 and answer == {"id": ident, "level": level, "text": shown.out}
    assert answer == json.loads(gm("read", ident, "--level", level, "--json").out)
    assert ("## How" in answer["text"]) == (level != "abstract")
    assert ("Exponential backoff" in answer["text"]) == (level != "abstract")
    assert ("tags: webhooks" in answer["text"]) == (level == "outline")
    assert answer["text"].startswith("---\n") == (level == "full")
    wrong = call(server, "read", {"id": ident, "level": "summary"})
    assert wrong["error"].endswith('level must be one of abstract, outline, full, not "summary"')


def test_writes_through_mcp_are_commits(store_path: Path) -> None:
    server = build_server(Store.open(store_path), agent="claude-code")
    made = call(
        server,
        "record",
        {
            "type": "decision",
            "title": "Use tabs",
            "body": "We indent with tabs.",
            "tags": ["style"],
        },
    )
    assert made["operation"] == "record" and made["commit"]
    rid = made["ids"][0]
    record = Store.open(store_path).get(rid)
    assert (record.agent, record.tags) == ("claude-code", ("style",))
    new = call(server, "supersede", {"old_id": rid, "title": "Use spaces", "body": "Spaces."})
    assert Store.open(store_path).get(rid).superseded_by == new["ids"][0]
    gone = call(server, "forget", {"id": new["ids"][0], "reason": "we have a formatter"})
    assert gone["operation"] == "forget"
    assert_clean(store_path)


def test_refusals_are_tool_errors_with_the_next_step(store_path: Path) -> None:
    server = build_server(Store.open(store_path))
    missing = call(server, "read", {"id": "nothing-here"})
    assert missing["error"].endswith(
        'no record with id "nothing-here" — list ids with "gitmem list"'
    )
    token = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
    secret = call(server, "record", {"type": "fact", "title": "Token", "body": f"it is {token}"})
    assert "possible secret" in secret["error"]
    assert (
        "unknown record type"
        in call(server, "record", {"type": "nope", "title": "x", "body": "y"})["error"]
    )


def test_a_write_the_machine_refuses_is_a_tool_error_naming_the_file(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk while the server records: the agent reads what happened and what to do, as
    on the command line (gitmem.errors.environment_error), not an internal error."""
    import errno

    from gitmem.store import git

    def full(target: object, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(target))

    server = build_server(Store.open(store_path))
    monkeypatch.setattr(git, "_atomic_write", full)
    told = call(server, "record", {"type": "fact", "title": "Full", "body": "no room"})["error"]
    assert "No space left on device — free some space" in told
    assert "records/fact/" in told


def test_the_server_over_stdio(store_path: Path) -> None:
    ids = fill(store_path)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "gitmem", "mcp", "--store", str(store_path), "--project", ""],
    )

    async def session() -> tuple[set[str], Any, str]:
        async with Client(params) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            hits = await client.call_tool("recall", {"query": "Friday deploy", "mode": "keyword"})
            resource = await client.read_resource("gitmem://context")
            return tools, hits.structured_content, resource.contents[0].text  # type: ignore[union-attr]

    tools, hits, context = run(session)
    assert tools == {
        "recall",
        "read",
        "record",
        "supersede",
        "forget",
        "history",
        "diff",
        "context",
        "trace",
        "distill",
        # coordination (issue 19, docs/coord.md)
        *("send", "inbox", "reply", "ack", "task_start", "task_transition", "tasks"),
        *("task_current", "log", "sessions", "heartbeat", "agents", "handoff"),
        # the work graph (tests/test_graph.py)
        *("entity_index_file", "entity_index_all", "entity_reconcile"),
        "graph_search",
        "graph_related",
        "graph_blockers",
        "graph_diff",
        # consolidation (tests/test_consolidate*.py)
        "sleep",
        "proposals",
        "decide",
        "feedback",
    }
    assert hits["hits"][0]["id"] == ids["No Friday deploys"]
    assert f"[{ids['No Friday deploys']}]" in context


@pytest.mark.parametrize("mode", ["fuzzy"])
def test_bad_arguments_are_tool_errors(store_path: Path, mode: str) -> None:
    server = build_server(Store.open(store_path))
    assert "mode must be hybrid" in call(server, "recall", {"query": "x", "mode": mode})["error"]


def test_the_context_tool_uses_the_configured_budget(gm, store_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Like SessionStart and `gitmem context`: hooks.context_bytes, not a fixed 8 KB."""
    store = Store.open(store_path)
    for n in range(40):
        store.record("fact", f"Fact {n} about the widget. " * 4, title=f"Widget fact {n}")
    config = store_path / "config.toml"
    config.write_text(config.read_text() + "\n[hooks]\ncontext_bytes = 700\n")
    server = build_server(Store.open(store_path))
    answer = call(server, "context", {"project": ""})
    assert 0 < answer["bytes"] <= 700
    done = gm("context", "--project", "", "--json")
    assert answer == json.loads(done.out)
