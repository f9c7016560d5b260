"""CLI commands for agents: `gitmem setup`, `gitmem context`, `gitmem mcp`.

`gitmem hook` is dispatched by __main__ before typer loads. See docs/hooks.md.

Commands register on the shared `app` of gitmem.cli.app; gitmem.cli.main imports this module.
"""

import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from gitmem.agents import hostsetup
from gitmem.cli import display
from gitmem.cli.app import JsonOpt, StoreOpt, app, open_store
from gitmem.errors import UsageError
from gitmem.store.config import resolve_store_path

__all__ = ["app"]

ProjectOpt = Annotated[
    str | None,
    typer.Option(
        "--project",
        help="Project id (as in the project:ID tags). Default: from the current repository's "
        "remote, else its directory name.",
        show_default=False,
    ),
]


def _cwd_project() -> str:
    from gitmem.agents.project import find_project

    return find_project(Path.cwd())


def _command(flag: str | None) -> list[str]:
    """How the host should run gitmem: --command, else the gitmem on PATH (absolute), else
    this Python with -m gitmem."""
    if flag:
        parts = shlex.split(flag)
        if not parts:
            raise UsageError("--command is empty; give the command that runs gitmem")
        return parts
    found = shutil.which("gitmem")
    # absolute() and not resolve(): a symlink on PATH (Homebrew, pipx) outlives its versioned
    # target, which an upgrade deletes.
    return [str(Path(found).absolute())] if found else [sys.executable, "-m", "gitmem"]


@app.command()
def setup(
    host: Annotated[
        str | None, typer.Option("--host", help="claude-code | codex (--check: default both).")
    ] = None,
    scope: Annotated[
        str, typer.Option("--scope", help="user (your home) | project (this repository).")
    ] = "user",
    uninstall: Annotated[
        bool, typer.Option("--uninstall", help="Remove exactly what setup added.")
    ] = False,
    check: Annotated[bool, typer.Option("--check", help="Report what is installed.")] = False,
    command: Annotated[
        str | None,
        typer.Option("--command", help="How the host runs gitmem; default: the one on PATH."),
    ] = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Install gitmem's hooks, MCP server and guide into Claude Code or Codex settings.

    Merges into the host's files (a backup of each changed file is kept as
    FILE.gitmem-backup) and never touches unrelated settings; running it again changes
    nothing. --uninstall takes out exactly what it added; --check reports (exit 1 when
    something is missing). Paths: docs/hooks.md.
    """
    if uninstall and check:
        raise UsageError("choose one of --uninstall and --check")
    home = Path(os.environ.get("HOME") or Path.home())
    from gitmem.agents.project import repository_root

    project = repository_root(Path.cwd()) or Path.cwd()
    if check:
        _check([host] if host else list(hostsetup.HOSTS), scope, home, project, as_json)
        return
    if host is None:
        raise UsageError("setup needs --host claude-code or --host codex")
    target = hostsetup.target(host, scope, home, project)
    if uninstall:
        changes = hostsetup.uninstall(target)
    else:
        where = resolve_store_path(store, os.environ).resolve() if store else None
        changes = hostsetup.install(target, _command(command), where)
    if as_json:
        display.json_out(
            [
                {
                    "path": str(c.path),
                    "action": c.action,
                    "backup": None if c.backup is None else str(c.backup),
                }
                for c in changes
            ]
        )
        return
    for change in changes:
        kept = f" (previous version: {change.backup})" if change.backup else ""
        display.say(f"{change.action}: {change.path}{kept}")
    if not uninstall and host == "claude-code":
        display.say("restart Claude Code (or run /hooks) to load the hooks")


def _check(hosts: list[str], scope: str, home: Path, project: Path, as_json: bool) -> None:
    reports = []
    for name in hosts:
        target = hostsetup.target(name, scope, home, project)
        status = hostsetup.check(target)
        reports.append((target, status))
    if as_json:
        display.json_out(
            [
                {
                    "host": t.host,
                    "scope": t.scope,
                    "complete": s.complete,
                    "hooks": list(s.hooks),
                    "missing_hooks": list(s.missing_hooks),
                    "mcp": s.mcp,
                    "guide": s.guide,
                    "files": {"hooks": str(t.hooks), "mcp": str(t.mcp), "guide": str(t.guide)},
                    "problems": list(s.problems),
                }
                for t, s in reports
            ]
        )
    else:
        for t, s in reports:
            state = "installed" if s.complete else "not installed" if not s.hooks else "partial"
            display.say(f"{t.host} ({t.scope}): {state}")
            display.say(f"  hooks ({t.hooks}): {', '.join(s.hooks) or 'none'}")
            if s.missing_hooks and s.hooks:
                display.say(f"  missing hooks: {', '.join(s.missing_hooks)}")
            display.say(f"  MCP server ({t.mcp}): {'yes' if s.mcp else 'no'}")
            display.say(f"  guide ({t.guide}): {'yes' if s.guide else 'no'}")
            for problem in s.problems:
                display.notice(problem)
        if not all(s.complete for _, s in reports):
            display.say(f'install with "gitmem setup --host HOST --scope {scope}"')
    if not all(s.complete for _, s in reports):
        raise typer.Exit(1)


@app.command()
def context(
    budget: Annotated[
        int | None,
        typer.Option("--budget", min=256, help="Bytes; default: hooks.context_bytes (8192)."),
    ] = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Print the context block SessionStart injects: the last session, the latest writes and
    the most important memories of the project, each line naming its record id."""
    from gitmem.agents.settings import hook_settings

    opened = open_store(store)
    for problem in hook_settings(opened.root)[1]:
        display.notice(problem)
    chosen = _cwd_project() if project is None else project
    block = opened.context(project=chosen, budget=budget)
    if as_json:
        display.json_out(block.to_dict())
        return
    if not block.text:
        display.say(f"nothing to show for project {chosen or '(any)'}: no memories yet")
        return
    display.raw(block.text)


@app.command()
def mcp(project: ProjectOpt = None, store: StoreOpt = None) -> None:
    """Serve the store over MCP on stdio: recall, read, record, supersede, forget, history,
    diff and context; trace and distill; the work graph, entities, coordination and handoff;
    sleep, proposals, decide and feedback (docs/hooks.md lists every tool); resource
    gitmem://context. Agent hosts start it; see `gitmem setup`."""
    from gitmem.mcp_server import serve

    root = open_store(store).root
    serve(root, os.environ, _cwd_project() if project is None else project)


@app.command(context_settings={"ignore_unknown_options": True})
def hook(
    event: Annotated[
        str,
        typer.Argument(
            metavar="EVENT",
            help="session-start | user-prompt-submit | post-tool-use | pre-compact | stop | "
            "session-end (or the host's spelling, e.g. SessionStart).",
        ),
    ],
    host: Annotated[
        str | None,
        typer.Option("--host", help="claude-code | codex; default: told by the payload."),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Run an agent host's lifecycle hook: the host's JSON on stdin, its JSON answer on stdout.

    Always exits 0; problems go to <store>/.gitmem/hooks.log. `gitmem setup` installs the
    hooks; docs/hooks.md says what each event does.
    """
    from gitmem.hooks.main import main

    argv = [event, *(["--host", host] if host else []), *(["--store", store] if store else [])]
    main(argv, os.environ, sys.stdin.buffer, sys.stdout)
