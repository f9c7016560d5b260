"""`gitmem mcp`: the store as an MCP server over stdio (the `mcp` SDK is imported only here).

Tools: recall, read, record, supersede, forget, history, diff, context, and consolidation's
sleep, proposals, decide, feedback; recall, read and
history take `as_of` (the memory as it stood then). Resource: `gitmem://context`, the block
SessionStart injects. Every tool answers with the same JSON as the matching `gitmem ... --json`
command, built from the same Python API calls; a refused call is a tool error carrying
gitmem's message (what is wrong, what to do next).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from gitmem.answers import history_json, record_json, write_json
from gitmem.api import Store
from gitmem.errors import EXIT_READER_LEFT, GitmemError, environment_error

__all__ = ["build_server", "serve"]

INSTRUCTIONS = (
    "gitmem is long-term memory shared by agent sessions and devices. Recall before working "
    "on something (decisions, conventions, lessons); record what you learn, one idea per "
    "record; supersede a memory that became wrong. Record ids in answers open with `read`."
)
_T = TypeVar("_T")


def _answer(call: Callable[[], _T]) -> _T:
    """Run a call; gitmem's refusals, and writes the machine refused (a full disk), become
    tool errors the agent can read."""
    try:
        return call()
    except GitmemError as exc:
        raise ToolError(str(exc)) from exc
    except OSError as exc:
        told = environment_error(exc)
        if told is None:
            raise
        raise ToolError(told) from exc


def build_server(store: Store, *, agent: str = "", project: str = "") -> MCPServer:
    """The server over an opened store. `agent` signs writes (default: git's user.name);
    `project` is the default project of `context`."""
    from gitmem.index.entries import Filter
    from gitmem.recall.options import result_json

    server = MCPServer("gitmem", instructions=INSTRUCTIONS)
    default_project = project

    @server.tool()
    def recall(
        query: str,
        limit: int = 10,
        mode: str = "hybrid",
        types: list[str] | None = None,
        tags: list[str] | None = None,
        as_of: str | None = None,
    ) -> dict[str, Any]:
        """Find memories: a ranked list of {id, type, title, abstract, score}. `mode`: hybrid,
        keyword or semantic. `as_of`: a date, time, "3 days ago" or commit — the memory as it
        stood then. Open a hit with `read`."""
        if mode not in ("hybrid", "keyword", "semantic"):
            raise ToolError(f'mode must be hybrid, keyword or semantic, not "{mode}"')
        flt = Filter(types=tuple(types or ()), tags=tuple(tags or ()))
        found = _answer(
            lambda: store.recall(query, limit=limit, mode=mode, filter=flt, as_of=as_of)
        )
        return result_json(query, found)

    @server.tool()
    def read(id: str, as_of: str | None = None) -> dict[str, Any]:
        """A whole record (frontmatter fields and body) by id or unique id prefix; with
        `as_of`, as it stood then."""
        return record_json(_answer(lambda: store.get(id, as_of=as_of)))

    @server.tool()
    def record(
        type: str,
        title: str,
        body: str,
        abstract: str = "",
        tags: list[str] | None = None,
        scope: str = "shared",
        weight: float = 1.0,
        links: list[str] | None = None,
        fields: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Remember something new (one record, one commit). Types: decision, pattern, fact,
        lesson, preference, procedure, context, reference. Credentials are refused."""
        result = _answer(
            lambda: store.record(
                type,
                body,
                title=title,
                abstract=abstract,
                tags=tags or (),
                agent=agent,
                scope=scope,
                weight=weight,
                links=links or (),
                fields=fields,
            )
        )
        return write_json(result)

    @server.tool()
    def supersede(
        old_id: str,
        title: str,
        body: str,
        abstract: str = "",
        tags: list[str] | None = None,
    ) -> dict[str, Any]:
        """Replace a record that became wrong or outdated with a new one; the old one is kept,
        marked superseded, and history shows both."""
        result = _answer(
            lambda: store.supersede(
                store.get(old_id).id, body, title=title, abstract=abstract, tags=tags, agent=agent
            )
        )
        return write_json(result)

    @server.tool()
    def forget(id: str, reason: str) -> dict[str, Any]:
        """Remove a record from current memory (git history keeps it); say why."""
        return write_json(_answer(lambda: store.forget(id, reason=reason, agent=agent)))

    @server.tool()
    def history(id: str, as_of: str | None = None) -> dict[str, Any]:
        """Every version of a record: commit, time, operation, agent, changed fields."""
        return {"versions": history_json(_answer(lambda: store.history(id, as_of=as_of)))}

    @server.tool()
    def diff(start: str, end: str | None = None) -> dict[str, Any]:
        """What changed in memory between two moments or commits (`end`: default now):
        records added, superseded, forgotten and changed."""
        return _answer(lambda: store.diff(start, end)).to_dict()

    @server.tool()
    def context(project: str | None = None, budget: int | None = None) -> dict[str, Any]:
        """The block a session starts with: the last session, the latest writes and the most
        important memories of a project, within `budget` bytes (default: the store's
        hooks.context_bytes, 8192 unless configured)."""
        chosen = project if project is not None else default_project
        return _answer(lambda: store.context(project=chosen, budget=budget)).to_dict()

    # --- consolidation (docs/consolidation.md): the same answers as the CLI's --json ---

    @server.tool()
    def sleep(dry_run: bool = True) -> dict[str, Any]:
        """Consolidate the memory: find duplicates, contradictions, stale records and missing
        links; with dry_run false, make the safe changes and write proposals for a person."""
        from gitmem.consolidate.answers import sleep_json

        return sleep_json(_answer(lambda: store.consolidation().sleep(dry_run=dry_run)))

    @server.tool()
    def proposals(every: bool = False) -> dict[str, Any]:
        """Proposals waiting for a decision (merge, supersede, demote, archive, link) with
        their evidence; `every`: decided ones too."""
        from gitmem.consolidate.answers import proposals_json

        return proposals_json(_answer(lambda: store.consolidation().proposals(every=every)))

    @server.tool()
    def decide(id: str, accept: bool, note: str = "") -> dict[str, Any]:
        """Accept (apply, one commit) or reject (never proposed again) a proposal."""
        from gitmem.consolidate.answers import decision_json

        made = store.consolidation()
        return decision_json(
            _answer(lambda: made.decide(id, accept=accept, note=note, agent=agent))
        )

    @server.tool()
    def feedback(id: str, useful: bool) -> dict[str, Any]:
        """Say a recalled record was useful or not: its weight moves one step within bounds."""
        from gitmem.consolidate.answers import feedback_json

        made = store.consolidation()
        return feedback_json(_answer(lambda: made.feedback(id, useful=useful, agent=agent)))

    @server.resource("gitmem://context", name="context", mime_type="text/markdown")
    def context_resource() -> str:
        """The context block for this server's project."""
        return store.context(project=default_project).text

    return server


def serve(root: Path, env: Mapping[str, str], project: str = "") -> None:
    """Run over stdio until the client closes it. A client that stopped reading ends the
    server as a reader that left ends any command (gitmem.__main__): exit 141, in silence."""
    store = Store.open(root)
    cache = env.get("HF_HUB_CACHE") or (
        str(Path(env["HF_HOME"]) / "hub") if env.get("HF_HOME") else ""
    )
    if cache:
        store.model_cache = Path(cache)
    server = build_server(store, agent=env.get("GITMEM_AGENT", "").strip(), project=project)
    try:
        server.run("stdio")
    except BaseExceptionGroup as group:  # the SDK's task group: its stdout writer's EPIPE
        gone, rest = group.split(BrokenPipeError)
        if gone is None or rest is not None:
            raise
        raise SystemExit(EXIT_READER_LEFT) from None
