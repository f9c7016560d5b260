"""`gitmem mcp`: the store as an MCP server over stdio (the `mcp` SDK is imported only here).

Tools: recall, read, record, supersede, forget, history, diff, context, trace, distill;
recall, read and history take `as_of` (the memory as it stood then). The work graph
(docs/graph.md): entity_index_file, entity_index_all, entity_reconcile, graph_search,
graph_related (from an entity or any record), graph_blockers, graph_diff. Coordination
(docs/coord.md): send, inbox, reply, ack, task_start, task_transition, tasks, task_current,
log, sessions, heartbeat, agents, handoff. Consolidation (docs/consolidation.md): sleep,
proposals, decide, feedback. Resource: `gitmem://context`, the block
SessionStart injects. Every tool answers with the same JSON as the matching `gitmem ... --json`
command, built from the same Python API calls; a refused call is a tool error carrying
gitmem's message (what is wrong, what to do next).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from gitmem.answers import history_json, record_json, write_json
from gitmem.api import Store
from gitmem.errors import EXIT_READER_LEFT, GitmemError, environment_error

if TYPE_CHECKING:
    from gitmem.coord.coord import Coord
    from gitmem.graph.indexer import Watched

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


def build_server(
    store: Store,
    *,
    agent: str = "",
    project: str = "",
    env: Mapping[str, str] | None = None,
    device: str = "",
    workdir: Path | None = None,
) -> MCPServer:
    """The server over an opened store. `agent` signs writes (default: git's user.name);
    `project` is the default project of `context`; `env` is the distiller's environment;
    `device` names this device in coordination (default: the host name); `workdir` is where
    the entity tools' relative paths and default project are read from (`gitmem mcp`: the
    directory the host started it in)."""
    from gitmem.index.entries import Filter
    from gitmem.recall.options import result_json

    server = MCPServer("gitmem", instructions=INSTRUCTIONS)
    env = dict(env or {})
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
    def read(id: str, as_of: str | None = None, level: str | None = None) -> dict[str, Any]:
        """A whole record (frontmatter fields and body) by id or unique id prefix; with
        `as_of`, as it stood then. `level` abstract, outline or full: {id, level, text}, the
        record as that much text (abstract: one line and the abstract), to read step by
        step; then `trace` for a captured record's messages."""
        from gitmem.store.views import LEVELS, level_json

        if level is not None and level not in LEVELS:
            raise ToolError(f'level must be one of {", ".join(LEVELS)}, not "{level}"')
        found = _answer(lambda: store.get(id, as_of=as_of))
        return record_json(found) if level is None else level_json(found, level)

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

    @server.tool()
    def trace(id: str) -> dict[str, Any]:
        """The archived transcript messages a captured record came from (provenance)."""
        from gitmem.capture.report import trace_json

        return trace_json(_answer(lambda: store.trace(id)))

    @server.tool()
    def distill(
        session: str | None = None, force: bool = False, dry_run: bool = False
    ) -> dict[str, Any]:
        """Distil archived session transcripts into records now (the hooks do it when a
        session ends); `dry_run` asks the distiller and writes nothing."""
        from gitmem.capture.report import distill_json

        return distill_json(
            _answer(lambda: store.distill(env, session, force=force, dry_run=dry_run))
        )

    # --- the work graph (issue 19; docs/graph.md): the answers of `gitmem graph ... --json`

    _entity_tools(server, store, agent, workdir)

    @server.tool()
    def graph_search(
        query: str, types: list[str] | None = None, days: float | None = None, limit: int = 10
    ) -> dict[str, Any]:
        """Search entities (plans, tasks, initiatives from watched Markdown files) only, by
        meaning first. `types`: entity types; `days`: updated within that many days."""
        graph = store.graph
        return _answer(
            lambda: graph.search(query, types=types or (), days=days, limit=limit)
        ).to_dict()

    @server.tool()
    def graph_related(
        id: str, depth: int = 1, rel_types: list[str] | None = None
    ) -> dict[str, Any]:
        """Entities (and records) within `depth` (1-3) edges of an entity or any record, both
        directions: a record's linked neighbours. Relations: parent, blocked_by, depends_on,
        links_to (and, from a record, supersedes, superseded_by)."""
        graph = store.graph
        return _answer(lambda: graph.related(id, depth, rel_types or ())).to_dict()

    @server.tool()
    def graph_blockers(stale_days: float = 0) -> dict[str, Any]:
        """Blocked or waiting entities not updated for `stale_days` days, each with its chain
        of blockers and how long it has been blocked."""
        return _answer(lambda: store.graph.blockers(stale_days)).to_dict()

    @server.tool()
    def graph_diff(start: str, end: str | None = None) -> dict[str, Any]:
        """How the work graph moved between two moments or commits: new entities, status
        changes, newly blocked, completed, removed."""
        return _answer(lambda: store.graph.diff(start, end)).to_dict()

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

    _coord_tools(server, store.coord(agent, device))
    return server


def _entity_tools(server: MCPServer, store: Store, agent: str, workdir: Path | None) -> None:
    """`gitmem entity index-file|index-all|reconcile` as tools: the same library calls, the
    same JSON. Paths are read against `workdir`; the project is the repository around
    `project_dir` (default: `workdir`; for one file, the file's directory)."""
    from gitmem.agents.entities import watched_around

    def place(path: str | None, what: str) -> Path:
        given = Path(path).expanduser() if path else None
        if given is not None and given.is_absolute():
            return Path(os.path.abspath(given))
        if workdir is None:
            raise ToolError(f"{what}: give an absolute path (this server has no directory)")
        return Path(os.path.abspath(workdir / (given or ".")))

    def where(start: Path) -> Watched:
        return watched_around(store.root, start)[0]

    @server.tool()
    def entity_index_file(path: str, project_dir: str | None = None) -> dict[str, Any]:
        """Index one watched Markdown file as an entity (one commit; nothing when unchanged).
        A file that cannot be an entity (outside the watched directories, binary, too large,
        a frontmatter bomb, ...) is refused and nothing is written."""
        file = place(path, "path")
        start = place(project_dir, "project_dir") if project_dir else file.parent
        done = _answer(lambda: store.graph.index_file(file, where(start), agent=agent))
        if done.refusal():
            raise ToolError(done.refusal())
        return done.to_dict()

    @server.tool()
    def entity_index_all(
        directory: str | None = None, project_dir: str | None = None
    ) -> dict[str, Any]:
        """Index every Markdown file of the project's watched directories (or only
        `directory`, inside one), in one commit; unchanged files are skipped, files that
        cannot be entities are reported and skipped."""
        start = place(project_dir, "project_dir")
        only = place(directory, "directory") if directory else None
        return _answer(lambda: store.graph.index_all(where(start), only, agent=agent)).to_dict()

    @server.tool()
    def entity_reconcile(prune: bool = False, project_dir: str | None = None) -> dict[str, Any]:
        """Forget entities whose file is gone and list the dangling edges (`prune`: remove
        them from the entity records). History keeps everything forgotten."""
        start = place(project_dir, "project_dir")
        return _answer(
            lambda: store.graph.reconcile(where(start), prune=prune, agent=agent)
        ).to_dict()


def _coord_tools(server: MCPServer, coord: Coord) -> None:
    """The coordination tools: each the same call and the same JSON as its CLI command."""
    from gitmem.coord import answers as coord_answers
    from gitmem.coord.records import utc_now
    from gitmem.recall.timeparse import parse_duration

    @server.tool()
    def send(
        to: str, type: str, body: str, subject: str = "", priority: str = "normal", thread: str = ""
    ) -> dict[str, Any]:
        """Leave a message for another agent (`to`: its name, or * for all). `type`: info,
        question, request, handoff, alert. `priority`: low, normal, high, urgent. One commit;
        it reaches other devices at the next sync."""
        sent = _answer(
            lambda: coord.send(to, type, body, subject=subject, priority=priority, thread=thread)
        )
        return coord_answers.message_json(sent)

    @server.tool()
    def inbox(unread: bool = False, sent: bool = False, limit: int = 0) -> dict[str, Any]:
        """Your messages, newest first (`unread`: only those not seen here nor acknowledged;
        `sent`: the ones you sent, with who acknowledged them). Those returned count as read."""
        found = _answer(lambda: coord.inbox(unread=unread, sent=sent, limit=limit))
        return coord_answers.inbox_json(coord.agent, found)

    @server.tool()
    def reply(id: str, body: str, priority: str = "normal") -> dict[str, Any]:
        """Answer a message: a new message to its sender, in its thread (one commit)."""
        return coord_answers.message_json(_answer(lambda: coord.reply(id, body, priority=priority)))

    @server.tool()
    def ack(id: str) -> dict[str, Any]:
        """Acknowledge a message for you (one commit; the sender sees it after a sync)."""
        return coord_answers.message_json(_answer(lambda: coord.ack(id)))

    @server.tool()
    def task_start(title: str, body: str = "", project: str = "") -> dict[str, Any]:
        """Start a task you hold, active (one commit)."""
        done = _answer(lambda: coord.task_start(title, body=body, project=project))
        return coord_answers.task_json(done.record, done.commit)

    @server.tool()
    def task_transition(id: str, action: str, note: str = "") -> dict[str, Any]:
        """Move a task: `action` update (note required), suspend, resume, done or fail. One
        commit; a transition its state does not allow is refused."""
        done = _answer(lambda: coord.task(action, id, note))
        return coord_answers.task_json(done.record, done.commit)

    @server.tool()
    def tasks(
        states: list[str] | None = None, owner: str = "", project: str = ""
    ) -> dict[str, Any]:
        """Tasks, most recently changed first; `states` default: active and suspended."""
        chosen = tuple(states) if states is not None else ("active", "suspended")
        found = _answer(lambda: coord.tasks(states=chosen, owner=owner, project=project))
        return coord_answers.tasks_json(found)

    @server.tool()
    def task_current() -> dict[str, Any]:
        """Your active task, the one you changed last (task: null when none)."""
        return coord_answers.current_json(coord.agent, _answer(coord.current_task))

    @server.tool()
    def log(
        action: str, summary: str, files: list[str] | None = None, project: str = ""
    ) -> dict[str, Any]:
        """Add an entry to the session log: `action` one word (fixed, reviewed, ...), what you
        did, the files it touched (one commit)."""
        entry, commit = _answer(
            lambda: coord.log(action, summary, files=files or (), project=project)
        )
        return coord_answers.log_json(entry, commit)

    @server.tool()
    def sessions(last: str = "7d", agent: str = "", limit: int = 0) -> dict[str, Any]:
        """Recent agent sessions and log entries, newest first (`last`: 7d, 12h, 2w)."""
        found = _answer(lambda: coord.sessions(last=parse_duration(last), agent=agent, limit=limit))
        return coord_answers.sessions_json(found)

    @server.tool()
    def heartbeat(project: str = "", note: str = "") -> dict[str, Any]:
        """Say you are active on this device now (no commit; sync shares it)."""
        seen = _answer(lambda: coord.heartbeat(project=project, note=note))
        return coord_answers.presence_json(seen, seen.last)

    @server.tool()
    def agents(agent: str = "") -> dict[str, Any]:
        """Who was active when, on which device (others as of the last sync)."""
        return coord_answers.agents_json(_answer(lambda: coord.agents(agent=agent)), utc_now())

    @server.tool()
    def handoff(hours: float = 24.0) -> dict[str, Any]:
        """What a new session needs: unread messages, open tasks, blockers, entities and
        decisions updated, recent sessions and agents, for the last `hours`."""
        return _answer(lambda: coord.handoff(hours=hours))


def serve(root: Path, env: Mapping[str, str], project: str = "") -> None:
    """Run over stdio until the client closes it. A client that stopped reading ends the
    server as a reader that left ends any command (gitmem.__main__): exit 141, in silence."""
    store = Store.open(root)
    cache = env.get("HF_HUB_CACHE") or (
        str(Path(env["HF_HOME"]) / "hub") if env.get("HF_HOME") else ""
    )
    if cache:
        store.model_cache = Path(cache)
    from gitmem.coord.presence import device_name

    agent = env.get("GITMEM_AGENT", "").strip()
    server = build_server(
        store, agent=agent, project=project, env=env, device=device_name(env), workdir=Path.cwd()
    )
    try:
        server.run("stdio")
    except BaseExceptionGroup as group:  # the SDK's task group: its stdout writer's EPIPE
        gone, rest = group.split(BrokenPipeError)
        if gone is None or rest is not None:
            raise
        raise SystemExit(EXIT_READER_LEFT) from None
