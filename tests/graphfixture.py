"""A work-graph fixture: a project repository whose watched `docs/` holds 54 entity files with
frontmatter of every shape (YAML, TOML, JSON, none), a blocked_by cycle, edges to entities
that do not exist, malformed frontmatter of each kind, and a history of status changes
(`advance`), each step indexed as its own commit with its own time."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hookkit import make_project

PROJECT = "github.com/acme/widget"
T0 = datetime(2026, 11, 1, 9, tzinfo=UTC)
TASKS = 40

# Malformed frontmatter, one file per kind: each still indexes and is reported.
MALFORMED = {
    "bad-yaml.md": "---\ntitle: [unclosed\nstatus: active\n---\n# Bad YAML\n\nStill an entity.\n",
    "bad-toml.md": '+++\ntitle = "no closing quote\n+++\n# Bad TOML\n\nStill an entity.\n',
    "bad-json.md": '{\n"title": "Bad JSON",\n"status": \n}\n# Bad JSON\n\nStill an entity.\n',
    "unclosed.md": "---\ntitle: Never closed\n# Unclosed\n\nThe frontmatter never ends.\n",
    "not-a-mapping.md": "---\n- just\n- a list\n---\n# Not a mapping\n\nA list up there.\n",
    "nested.md": "---\ntitle:\n  nested: mapping\ntype: task\n---\n# Nested title\n\nOdd.\n",
}


def yaml_file(title: str, type_: str, status: str, **edges: object) -> str:
    lines = ["---", f"title: {json.dumps(title)}", f"type: {type_}", f"status: {status}"]
    for key, value in edges.items():
        if isinstance(value, list):
            lines.append(f"{key}: [{', '.join(map(str, value))}]")
        elif value:
            lines.append(f"{key}: {value}")
    return "\n".join(lines) + "\n---\n"


def task_text(i: int, status: str) -> str:
    """Task i: part of initiative i % 3, depends on task i-1, in one of four shapes."""
    title = f"Task {i}: {TOPICS[i % len(TOPICS)]}"
    initiative = INITIATIVES[i % 3][0]
    depends = f"task-{i - 1}" if i > 1 else ""
    body = f"# {title}\n\nWork on {TOPICS[i % len(TOPICS)]}. See [[{initiative}]].\n"
    shape = i % 4
    if shape == 0:
        return yaml_file(title, "task", status, initiative=initiative, depends_on=depends) + body
    if shape == 1:
        dep = f'depends_on = "{depends}"\n' if depends else ""
        return (
            f'+++\ntitle = "{title}"\ntype = "task"\nstatus = "{status}"\n'
            f'initiative = "{initiative}"\n{dep}+++\n' + body
        )
    if shape == 2:
        data = {"title": title, "type": "task", "status": status, "initiative": initiative}
        if depends:
            data["depends_on"] = [depends]
        return json.dumps(data, indent=1) + "\n" + body
    return body + f"\nStatus: {status}\n"  # no frontmatter: a document, named by its file


TOPICS = [
    "login sessions expire too early",
    "password reset emails",
    "rate limiting the public API",
    "billing invoices in PDF",
    "search results ranking",
    "mobile push notifications",
    "database migration to Postgres 16",
    "dark mode for the dashboard",
]
INITIATIVES = [
    ("auth-revamp", "Auth revamp", "Rework how users sign in and stay signed in."),
    ("billing-v2", "Billing v2", "New invoices, taxes and payment providers."),
    ("platform-health", "Platform health", "Reliability, migrations and performance."),
]


def write_project(base: Path) -> Path:
    """The project at its first state: 3 initiatives, 40 tasks, a cycle, dangling edges,
    malformed files, a meeting note; 54 Markdown files in all."""
    project = make_project(base)
    docs = project / "docs"
    (docs / "initiatives").mkdir(parents=True)
    (docs / "tasks").mkdir()
    (docs / "notes").mkdir()
    for key, title, about in INITIATIVES:
        (docs / "initiatives" / f"{key}.md").write_text(
            yaml_file(title, "initiative", "active") + f"# {title}\n\n{about}\n"
        )
    for i in range(1, TASKS + 1):
        (docs / "tasks" / f"task-{i}.md").write_text(task_text(i, "todo"))
    # A cycle of blockers, and edges to nothing.
    for name, blocker in (("cycle-a", "cycle-b"), ("cycle-b", "cycle-c"), ("cycle-c", "cycle-a")):
        (docs / "tasks" / f"{name}.md").write_text(
            yaml_file(name.replace("-", " ").title(), "task", "blocked", blocked_by=[blocker])
            + f"# {name}\n\nGoes round in circles.\n"
        )
    (docs / "tasks" / "ghost-blocked.md").write_text(
        yaml_file("Waits for a ghost", "task", "waiting", blocked_by=["ghost-task"])
        + "# Ghost\n\nBlocked by a task nobody wrote. Links [[Nowhere Page]].\n"
    )
    for name, text in MALFORMED.items():
        (docs / "notes" / name).write_text(text)
    (docs / "notes" / "meeting.md").write_text("# Weekly meeting\n\nWe talked about [[task-3]].\n")
    return project


def advance(project: Path, step: int) -> None:
    """Step 1: task 1 done, task 2 in progress, task 5 blocked by task 2. Step 2: task 2 done,
    task 5 still blocked (by task 2 and task 6), task 7 blocked. Step 3: task 5 done."""
    tasks = project / "docs" / "tasks"
    if step == 1:
        (tasks / "task-1.md").write_text(task_text(1, "done"))
        (tasks / "task-2.md").write_text(task_text(2, "in-progress"))
        (tasks / "task-5.md").write_text(
            yaml_file("Task 5: blocked", "task", "blocked", blocked_by=["task-2"])
            + "# Task 5\n\nNeeds task 2.\n"
        )
    elif step == 2:
        (tasks / "task-2.md").write_text(task_text(2, "done"))
        (tasks / "task-5.md").write_text(
            yaml_file("Task 5: blocked", "task", "blocked", blocked_by=["task-2", "task-6"])
            + "# Task 5\n\nNeeds task 2 and task 6.\n"
        )
        (tasks / "task-7.md").write_text(
            yaml_file("Task 7: waiting", "task", "waiting", blocked_by=["task-8"])
            + "# Task 7\n\nWaits for task 8.\n"
        )
    elif step == 3:
        (tasks / "task-5.md").write_text(task_text(5, "done"))


def moment(step: int) -> datetime:
    """When step `step` was indexed (step 0: the first index): ten days apart."""
    return T0 + timedelta(days=10 * step)
