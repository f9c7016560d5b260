"""The tour behind `make demo`: the real `gitmem` CLI on a throwaway store, as a user types it.

Everything happens in a temporary directory with its own HOME, git identity and GITMEM_STORE,
so the tour needs no set-up and leaves nothing behind (--keep keeps the store). Each step is a
function in STEPS; later features append theirs. A step that does not end as expected stops
the tour with exit code 1.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from subprocess import PIPE, STDOUT


class Tour:
    def __init__(self, root: Path) -> None:
        home = root / "home"
        home.mkdir()
        (home / ".gitconfig").write_text(
            "[user]\n\tname = Demo User\n\temail = demo@example.com\n"
            "[init]\n\tdefaultBranch = main\n"
        )
        self.root = root
        self.store = root / "store"
        inherited = ("GIT_", "GITMEM_", "XDG_")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(inherited)}
        self.env.update(
            HOME=str(home),
            GIT_CONFIG_NOSYSTEM="1",
            GITMEM_STORE=str(self.store),
            GITMEM_AGENT="claude-code",
            PYTHONUNBUFFERED="1",  # keeps the CLI's stdout and stderr in order in one pipe
        )

    def section(self, title: str) -> None:
        print(f"\n\033[1m## {title}\033[0m\n" if sys.stdout.isatty() else f"\n## {title}\n")

    def run(self, command: str, argv: list[str], stdin: str | None = None, expect: int = 0) -> str:
        """Show `command` as typed in a shell (stdin as a here-document), run `argv`, show
        what it printed, and stop the tour unless it exits with `expect`."""
        print(f"$ {command}" + (f" <<'EOF'\n{stdin}EOF" if stdin is not None else ""), flush=True)
        done = subprocess.run(
            argv, input=stdin, cwd=self.root, env=self.env, text=True, stdout=PIPE, stderr=STDOUT
        )
        print(done.stdout, end="" if done.stdout.endswith("\n") or not done.stdout else "\n")
        if done.returncode != expect:
            sys.exit(f"demo: expected exit {expect}, got {done.returncode}: {command}")
        return done.stdout

    def gitmem(self, args: str, stdin: str | None = None, expect: int = 0) -> str:
        argv = [sys.executable, "-m", "gitmem", *shlex.split(args)]
        return self.run(f"gitmem {args}", argv, stdin, expect)

    def git(self, args: str) -> str:
        argv = ["git", "-C", str(self.store), *shlex.split(args)]
        return self.run(f'git -C "$GITMEM_STORE" {args}', argv)

    def head(self) -> str:
        argv = ["git", "-C", str(self.store), "rev-parse", "HEAD"]
        return subprocess.run(argv, env=self.env, capture_output=True, text=True).stdout.strip()


def init_store(t: Tour) -> None:
    t.section("A new store: a git repository with a config, schemas and a README")
    t.gitmem("init")


def record_memories(t: Tour) -> None:
    t.section("Remember things: each record is one Markdown file and one commit")
    t.gitmem(
        "record decision - --title 'Use SQLite for the local cache' --tags cache,storage"
        " -f 'alternatives=Redis, plain JSON files' -f 'rationale=No server to run.'",
        stdin="The CLI caches API responses in SQLite at ~/.cache/acme/cache.db.\n\n"
        "## Why\nIt ships with Python and survives crashes.\n",
    )
    t.gitmem(
        "record pattern - --title 'Services return errors as values' --tags errors,python"
        " -f applies_to=src/services/",
        stdin="Service functions return `Result[T, ServiceError]` and never raise for expected\n"
        "failures; only the HTTP layer turns them into status codes.\n",
    )
    t.gitmem(
        "record preference 'Write commit subjects in the imperative, under 60 characters.'"
        " --title 'Imperative commit subjects' --agent dana -f strength=strong"
    )
    t.gitmem(
        "record lesson - --title 'Pin the Postgres image tag in CI'"
        " -f 'trigger=Adding a service container to CI'"
        " -f 'incident=postgres:latest jumped a major version and broke migrations'",
        stdin="Always pin `postgres:16.4`, never `latest`; bump it on purpose in its own PR.\n",
    )
    t.gitmem(
        "record fact 'The staging database is read-only on Sundays (backup window).'"
        " --title 'Staging DB is read-only on Sundays' --tags staging,database"
        " -f confidence=high -f valid_until=2027-06-30"
    )


def supersede_one(t: Tour) -> None:
    t.section("Change your mind: the old record is kept, marked superseded, in the same commit")
    # "use-sqlite" is a prefix of the record's id, accepted the way git accepts a short hash.
    t.gitmem(
        "supersede use-sqlite - --title 'Use DuckDB for the local cache'"
        " -f 'alternatives=SQLite, Redis' -f 'rationale=The analytics commands query it directly.'",
        stdin="The cache moved from SQLite to DuckDB at ~/.cache/acme/cache.duckdb.\n",
    )


def read_back(t: Tour) -> None:
    t.section("Read a record: the abstract first, the whole file when it is needed")
    t.gitmem("read use-duckdb --level abstract")
    t.gitmem("read use-duckdb")


def history_of_old(t: Tour) -> None:
    t.section("History: every version of a record, from git")
    t.gitmem("history use-sqlite")


def list_all(t: Tour) -> None:
    t.section("List what is remembered (superseded records only when asked for)")
    t.gitmem("list")
    t.gitmem("list --status superseded")


def recall_memories(t: Tour) -> None:
    t.section("Recall: a short ranked list first; open what is needed with gitmem read")
    # Hybrid: keywords and meaning (the embedding model built into gitmem: no download).
    out = t.gitmem("recall 'where do we cache API responses' --limit 3")
    if "use-duckdb" not in out.split("\n", 2)[0] + out:
        sys.exit("demo: recall did not find the current cache decision")
    t.gitmem("recall 'postgres ci' --explain --limit 2")
    t.gitmem("recall 'cache' --include-superseded --type decision")


def recall_by_meaning(t: Tour) -> None:
    t.section("Recall by meaning: a question that shares no word with the record it finds")
    query = "exception handling convention"
    t.gitmem(f"recall '{query}' --mode keyword")  # keywords alone: no match
    out = t.gitmem(f"recall '{query}' --explain --limit 2")
    first = out.split("\n", 2)[:2]
    if "services-return-errors" not in first[0] or "keyword -" not in first[1]:
        sys.exit("demo: recall did not find the error-handling pattern by meaning")


def refuse_secret(t: Tour) -> None:
    t.section("A credential is refused before it reaches git, where it would stay forever")
    before = t.head()
    token = "ghp_" + "R8x2kq9ZLmT4vN7pW3sY6bC1dF5gH0jK2aQe"  # made up; split so scanners pass
    body = f"The deploy job authenticates with {token}\n"
    t.gitmem("record fact - --title 'CI deploy token'", stdin=body, expect=1)
    if t.head() != before:
        sys.exit("demo: the refused record changed HEAD")
    print("(HEAD is where it was: nothing was committed)")


def git_log(t: Tour) -> None:
    t.section("The store is a plain git repository: its log is the audit trail")
    t.git("log --oneline")


def store_status(t: Tour) -> None:
    t.section("Status")
    t.gitmem("status")


def time_travel(t: Tour) -> None:
    t.section("Time travel: the memory as it stood before the supersede, and what changed since")
    log = ["git", "log", "-1", "--format=%h", "--grep=Use DuckDB for the local cache"]
    found = subprocess.run(log, cwd=t.store, env=t.env, capture_output=True, text=True)
    before = found.stdout.strip() + "~1"  # the commit before the supersede: a ref works as WHEN
    out = t.gitmem(f"recall 'local cache' --as-of {before} --limit 3")
    if "use-sqlite" not in out:
        sys.exit("demo: --as-of did not return the old decision")
    t.gitmem(f"read use-sqlite --as-of {before} --level abstract")
    t.gitmem(f"diff {before}")


def sync_two_clones(t: Tour) -> None:
    t.section("Two devices, one memory: clone, write on each, sync through any git remote")
    remote = t.root / "memory.git"
    t.run("git init --bare memory.git", ["git", "init", "--quiet", "--bare", str(remote)])
    t.gitmem(f"remote add {remote}")
    t.gitmem("sync")
    t.gitmem(f"clone {remote} laptop")
    t.gitmem(
        "record fact 'CI runs on the self-hosted runners since March.' --title 'CI runners'"
        " --store laptop"
    )
    t.gitmem("record fact 'Staging is reset every night at 02:00 UTC.' --title 'Staging reset'")
    t.gitmem("status --store laptop")  # its sync line: one write not pushed yet
    t.gitmem("sync --store laptop")
    t.gitmem("sync")  # merges the laptop's record, pushes its own
    t.gitmem("sync --store laptop")
    here = t.gitmem("recall 'CI runners' --limit 1")
    there = t.gitmem("recall 'staging reset' --limit 1 --store laptop")
    if "CI runners" not in here or "Staging reset" not in there:
        sys.exit("demo: each clone should recall the other's record")
    t.gitmem("status")


def agent_hooks(t: Tour) -> None:
    t.section("Agents: one command wires gitmem into Claude Code; sessions start with memory")
    t.gitmem("setup --host claude-code --command gitmem")
    t.gitmem("setup --check --host claude-code")
    project = t.root / "widget"
    subprocess.run(["git", "init", "-q", str(project)], check=True, env=t.env)
    start = {
        "session_id": "demo",
        "cwd": str(project),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    out = t.gitmem("hook session-start --host claude-code", stdin=json.dumps(start) + "\n")
    if "additionalContext" not in out:
        sys.exit("demo: SessionStart injected no context")
    t.gitmem("context --budget 1200")
    t.gitmem("hook post-tool-use", stdin="this is not JSON\n")  # fails open: exit 0, silent
    t.gitmem("setup --host claude-code --uninstall")


def work_graph(t: Tour) -> None:
    t.section("Work graph and coordination: plans as Markdown, blockers, a handoff")
    docs = t.root / "widget" / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "launch.md").write_text("---\ntype: initiative\nstatus: active\n---\n# Launch v2\n")
    (docs / "certs.md").write_text(
        "---\ntype: task\nstatus: todo\ninitiative: launch\n---\n# Renew the TLS certs\n"
    )
    (docs / "deploy.md").write_text(
        "---\ntype: task\nstatus: blocked\ninitiative: launch\nblocked_by: certs\n---\n"
        "# Deploy v2 to production\n\nWaits for [[certs]].\n"
    )
    t.gitmem("entity index-all --project-dir widget")
    if "Deploy v2 to production" not in t.gitmem("graph blockers"):
        sys.exit("demo: the blocked task is not among the blockers")
    t.gitmem('send codex handoff "The deploy is yours once the certs are renewed"')
    t.gitmem('task start "Renew the TLS certs"')
    t.env["GITMEM_AGENT"] = "codex"
    try:
        if "The deploy is yours" not in t.gitmem("graph handoff --hours 1"):
            sys.exit("demo: the handoff lacks the message for codex")
    finally:
        t.env["GITMEM_AGENT"] = "claude-code"


def consolidate(t: Tour) -> None:
    t.section("Consolidation: gitmem sleep proposes, a person decides")
    for _ in range(2):
        t.gitmem('record fact "Staging Postgres listens on port 6543." --title "Staging DB port"')
    if "merge" not in t.gitmem("sleep"):
        sys.exit("demo: sleep proposed no merge of the two identical facts")
    t.gitmem("proposals")


def insight(t: Tour) -> None:
    t.section("Insight: the memory at a glance, and a report to open in a browser")
    t.gitmem("stats")
    # Outside the throwaway directory, so that it outlives the tour.
    report = Path(tempfile.gettempdir()) / "gitmem-demo-report.html"
    t.gitmem(f"report --html {report}")
    page = report.read_text(encoding="utf-8")
    for section in ("Latest decisions", "Work graph", "Waiting for review"):
        if section not in page:
            sys.exit(f"demo: the report has no {section!r} section")
    print(f"The report stays at {report}: open {report.as_uri()} in a browser.")


STEPS = [
    init_store,
    record_memories,
    supersede_one,
    read_back,
    history_of_old,
    list_all,
    recall_memories,
    recall_by_meaning,
    time_travel,
    refuse_secret,
    git_log,
    store_status,
    sync_two_clones,
    agent_hooks,
    work_graph,
    consolidate,
    insight,
]


def main(argv: list[str]) -> int:
    root = Path(tempfile.mkdtemp(prefix="gitmem-demo-"))
    keep = "--keep" in argv
    try:
        tour = Tour(root)
        print(f"A throwaway store at {tour.store} (GITMEM_STORE points there).")
        for step in STEPS:
            step(tour)
        print("\nThe tour is done." + (f" The store is kept at {tour.store}." if keep else ""))
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
