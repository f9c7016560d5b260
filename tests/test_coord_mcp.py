"""The coordination tools of `gitmem mcp`: the same answers as the CLI's --json and the
Python API for the same calls, writes that are commits, refusals that are tool errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from test_mcp import call

from gitmem.api import Store
from gitmem.coord import answers
from gitmem.mcp_server import build_server


def cli(gm, *args: str) -> Any:  # type: ignore[no-untyped-def]
    done = gm(*args, "--json")
    assert done.code == 0, done.err
    return json.loads(done.out)


def timeless(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in ("since", "until")}


def test_cli_api_and_mcp_give_the_same_coordination_answers(  # type: ignore[no-untyped-def]
    gm, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITMEM_DEVICE", "laptop")
    alice = build_server(Store.open(store_path), agent="alice", device="laptop")
    bob = build_server(Store.open(store_path), agent="bob", device="laptop")
    api = Store.open(store_path).coord("bob", "laptop")

    sent = call(alice, "send", {"to": "bob", "type": "request", "body": "Review PR 7 please"})
    assert (
        sent["from"] == "alice" and sent["commit"] == git(store_path, "rev-parse", "HEAD").strip()
    )
    task = call(alice, "task_start", {"title": "Ship PR 7", "project": "pay"})
    call(alice, "task_transition", {"id": task["id"], "action": "update", "note": "tests green"})
    call(alice, "log", {"action": "reviewed", "summary": "Reviewed PR 6", "files": ["a.py"]})
    call(alice, "heartbeat", {"note": "shipping"})

    api.inbox()  # now read: the answers below agree on "read"
    monkeypatch.setenv("GITMEM_AGENT", "bob")
    assert call(bob, "inbox", {}) == cli(gm, "inbox") == answers.inbox_json("bob", api.inbox())
    assert call(bob, "tasks", {}) == cli(gm, "task", "list") == answers.tasks_json(api.tasks())
    monkeypatch.setenv("GITMEM_AGENT", "alice")
    assert call(alice, "task_current", {}) == cli(gm, "task", "current")
    assert call(alice, "task_current", {})["task"]["note"] == "tests green"
    assert call(bob, "sessions", {}) == cli(gm, "sessions") == answers.sessions_json(api.sessions())
    assert call(bob, "agents", {})["agents"] == cli(gm, "agents")["agents"]
    assert [a["note"] for a in call(bob, "agents", {})["agents"]] == ["shipping"]
    monkeypatch.setenv("GITMEM_AGENT", "bob")
    mcp_handoff = call(bob, "handoff", {"hours": 12})
    assert timeless(mcp_handoff) == timeless(cli(gm, "graph", "handoff", "--hours", "12"))
    assert timeless(mcp_handoff) == timeless(api.handoff(hours=12))
    assert [t["id"] for t in mcp_handoff["tasks"]] == [task["id"]]
    assert mcp_handoff["messages"] == []  # read by now

    acked = call(bob, "ack", {"id": sent["id"]})
    assert acked["acked_by"] == ["bob"]
    answer = call(bob, "reply", {"id": sent["id"], "body": "Done, one nit."})
    assert answer["to"] == "alice" and answer["thread"] == sent["id"]


@pytest.mark.parametrize(
    ("tool", "args", "says"),
    [
        ("send", {"to": "bob", "type": "gossip", "body": "hi"}, 'unknown message type "gossip"'),
        ("send", {"to": "bob", "type": "info", "body": " "}, "a message needs a body"),
        ("ack", {"id": "nope-123456"}, 'no message with id "nope-123456"'),
        (
            "task_transition",
            {"id": "nope-123456", "action": "done"},
            'no task with id "nope-123456"',
        ),
        ("task_transition", {"id": "x", "action": "finish"}, 'unknown task transition "finish"'),
        ("sessions", {"last": "soon"}, '"soon" is not a duration'),
        ("handoff", {"hours": -1}, "hours must be more than 0"),
    ],
)
def test_coordination_refusals_are_tool_errors(
    store_path: Path, tool: str, args: dict[str, Any], says: str
) -> None:
    server = build_server(Store.open(store_path), agent="alice", device="laptop")
    head = git(store_path, "rev-parse", "HEAD")
    found = call(server, tool, args)
    assert says in found["error"]
    assert git(store_path, "rev-parse", "HEAD") == head
