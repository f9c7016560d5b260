"""Entity files' frontmatter in every shape (gitmem.graph.frontmatter), and its bombs refused
by the record reader's own check."""

from __future__ import annotations

import pytest

from gitmem.errors import RecordInvalid
from gitmem.graph.entity import edge_key, read_entity
from gitmem.graph.frontmatter import read_frontmatter


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("---\ntitle: Plan\nstatus: active\nn: 3\nwhen: 2026-01-02\n---\nBody\n", "yaml"),
        ('+++\ntitle = "Plan"\nstatus = "active"\nn = 3\nwhen = 2026-01-02\n+++\nBody\n', "toml"),
        ('{\n"title": "Plan", "status": "active", "n": 3, "when": "2026-01-02"\n}\nBody\n', "json"),
    ],
)
def test_every_shape_reads_the_same_fields_as_text(text: str, shape: str) -> None:
    front = read_frontmatter(text)
    assert front.format == shape and front.problem == ""
    assert front.fields == {"title": "Plan", "status": "active", "n": "3", "when": "2026-01-02"}
    assert front.body.strip() == "Body"


def test_no_frontmatter_is_all_body() -> None:
    front = read_frontmatter("# Just a note\n\ntext\n")
    assert (front.format, front.fields, front.body) == ("none", {}, "# Just a note\n\ntext\n")


@pytest.mark.parametrize(
    "text",
    [
        "---\na: &x [1, 2]\nb: *x\n---\nbody\n",  # anchors and aliases
        "---\nb: *x\n---\nbody\n",
        "---\na: " + "[" * 20 + "]" * 20 + "\n---\nbody\n",  # deeper than records allow
        '{\n"a": ' + "[" * 20 + "]" * 20 + "\n}\nbody\n",
        "+++\na = " + "[" * 20 + "]" * 20 + "\n+++\nbody\n",
    ],
)
def test_bombs_are_refused(text: str) -> None:
    with pytest.raises(RecordInvalid, match="frontmatter"):
        read_frontmatter(text)


def test_a_bomb_is_refused_before_it_expands() -> None:
    """Nine aliases of nine aliases ... ten deep: 9^10 values if a reader expanded them."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    with pytest.raises(RecordInvalid, match="anchor"):
        read_frontmatter("---\n" + "\n".join(lines) + "\n---\nbody\n")


def test_edges_from_scalars_lists_and_wiki_links() -> None:
    text = (
        "---\ntitle: Fix login\ntype: Task\nstatus: Blocked\n"
        "blocked_by: [[Auth Service]]\ndepends_on: a, tasks/b.md\ninitiative: '[[Q1 Auth|q1]]'\n"
        "links: [c]\n---\n# Fix\nSee [[Plan X|the plan]].\n\n```\n[[not a link]]\n```\n"
    )
    entity = read_entity(text.encode(), "docs/fix-login.md", project="p", namespace="p")
    assert (entity.type, entity.state, entity.key) == ("task", "blocked", "fix-login")
    assert entity.blocked_by == ("auth-service",)
    assert entity.depends_on == ("a", "b")
    assert entity.parent == "q1-auth"
    assert entity.links_to == ("c", "plan-x")
    again = read_entity(text.encode(), "docs/fix-login.md", project="p", namespace="p")
    assert again.id == entity.id and entity.id.startswith("task-fix-login-")
    other = read_entity(text.encode(), "docs/fix-login.md", project="q", namespace="q")
    assert other.id != entity.id  # another project, another entity


@pytest.mark.parametrize(
    ("target", "key"),
    [
        ("[[Fix login|the fix]]", "fix-login"),
        ("tasks/fix-login.md", "fix-login"),
        ("Fix login", "fix-login"),
        ("fix-login#part", "fix-login"),
        ("  ", ""),
    ],
)
def test_edge_keys(target: str, key: str) -> None:
    assert edge_key(target) == key
