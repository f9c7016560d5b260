"""Record files written to hurt: a YAML alias bomb on every path that reads frontmatter, a
byte-order mark, bidirectional controls that spoof `list`, control characters (issue 26).

The bomb tests run the real ten-level bomb (~600 bytes, 9^10 values once expanded) in a child
process with its address space capped at 2 GB and its CPU time at 120 s: without the refusal
the child dies of MemoryError (the test fails), and the machine running the tests is never at
risk. The refusal happens while the YAML is composed, so the child finishes at once.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git
from hookkit import make_project, payload
from test_sync import make_clone, run_sync

from gitmem.api import Store
from gitmem.errors import RecordInvalid
from gitmem.store.recordfile import parse

pytest_plugins = ["test_sync"]  # its `remote` fixture

REFUSED = "record frontmatter refuses anchors and aliases"


def bomb_front(levels: int = 10, width: int = 9) -> str:
    """Anchors nested `levels` deep, each a list of `width` aliases of the one before."""
    lines = [f"a0: &a0 [{', '.join(['x'] * width)}]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]")
    lines.append(f"tags: [*a{levels - 1}]")
    return "\n".join(lines)


def bomb_file(record_id: str, created: str = "2026-03-02T09:15:00Z", **kw: int) -> str:
    return (
        f"---\nid: {record_id}\ntype: fact\ntitle: Harmless looking\ncreated: {created}\n"
        f"{bomb_front(**kw)}\n---\n\nboom\n"
    )


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    resource.setrlimit(resource.RLIMIT_CPU, (120, 120))


def bounded(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    """`python -m gitmem ARGS` with at most 2 GB of address space and 120 s of CPU."""
    return subprocess.run(
        [sys.executable, "-m", "gitmem", *args],
        input=stdin.decode(),
        capture_output=True,
        text=True,
        preexec_fn=_capped,
        env={**os.environ, "GITMEM_AGENT": "tester"},
        check=False,
    )


def test_the_bomb_is_about_six_hundred_bytes() -> None:
    assert 550 <= len(bomb_file("bomb-aaaaaa").encode()) <= 700


@pytest.mark.parametrize("libyaml", [True, False])
@pytest.mark.parametrize(
    ("front", "what"),
    [
        (bomb_front(levels=3, width=3), "anchor (&a0) at line 6, column 5"),
        ("tags: *nothing", "alias (*nothing) at line 6, column 7"),
        ("tags: &t [a]", "anchor (&t) at line 6"),
        ("note: &n text", "anchor (&n)"),
        ("? &k key\n: value", "anchor (&k)"),
    ],
)
def test_the_reader_refuses_anchors_and_aliases(libyaml: bool, front: str, what: str) -> None:
    import yaml

    from gitmem.store.recordfile import _loader

    text = f"---\nid: a-aaaaaa\ntype: fact\ntitle: t\ncreated: 2026-01-01\n{front}\n---\n\nbody\n"
    with pytest.raises(RecordInvalid, match=REFUSED) as refused:
        parse(text)
    assert what in str(refused.value)
    with pytest.raises(RecordInvalid, match=REFUSED):  # both parsers, the same refusal
        yaml.load(text.split("---\n")[1], Loader=_loader(libyaml))


@pytest.mark.parametrize("libyaml", [True, False])
def test_deep_nesting_is_refused_not_a_recursion_error(libyaml: bool) -> None:
    import yaml

    from gitmem.store.recordfile import _loader

    deep = "note: " + "[" * 900 + "]" * 900
    with pytest.raises(RecordInvalid, match="nested more than 16 levels deep at line 2"):
        yaml.load(deep, Loader=_loader(libyaml))
    shallow = "note: " + "[" * 15 + "]" * 15
    assert yaml.load(shallow, Loader=_loader(libyaml))["note"]


def test_an_ampersand_or_star_in_text_is_still_text() -> None:
    text = (
        '---\nid: a-aaaaaa\ntype: fact\ntitle: "Tom & Jerry *x"\ncreated: 2026-01-01\n'
        "tags: ['&a', \"*b\"]\nnote: R&D * 2\n---\n\nbody\n"
    )
    record = parse(text)
    assert (record.title, record.tags, record.extra["note"]) == (
        "Tom & Jerry *x",
        ("&a", "*b"),
        "R&D * 2",
    )


# --- the bomb on every path, in a capped child -----------------------------------------------


def _place(store: Path, record_id: str = "bomb-aaaaaa") -> Path:
    path = store / "records" / "fact" / "2026-03" / f"{record_id}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(bomb_file(record_id))
    return path


def test_validate_and_commit_refuse_the_bomb(store_path: Path) -> None:
    _place(store_path)
    done = bounded("validate", "--store", str(store_path))
    assert done.returncode == 1, done.stderr
    assert "bomb-aaaaaa.md: frontmatter: a YAML anchor (&a0)" in done.stdout + done.stderr
    head = git(store_path, "rev-parse", "HEAD")
    done = bounded("commit", "--store", str(store_path))
    assert done.returncode == 1 and REFUSED in done.stderr, done.stderr
    assert git(store_path, "rev-parse", "HEAD") == head


def test_recall_and_list_leave_out_a_bomb_committed_with_plain_git(store_path: Path) -> None:
    Store.open(store_path).record("fact", "Apples are red and crisp.", title="Apples are red")
    _place(store_path)
    git(store_path, "add", "-A")
    git(store_path, "commit", "-qm", "by hand")
    told = "records/fact/2026-03/bomb-aaaaaa.md is not a valid record; left out of search"
    done = bounded("recall", "apples", "--store", str(store_path))  # the index catches up
    assert done.returncode == 0 and told in done.stderr, done.stderr
    assert "Apples are red" in done.stdout
    for args in (("list",), ("recall", "harmless looking"), ("read", "bomb-aaaaaa")):
        done = bounded(*args, "--store", str(store_path))
        assert "MemoryError" not in done.stderr and "internal error" not in done.stderr
        assert "bomb-aaaaaa" not in done.stdout
    assert "Apples are red" in bounded("list", "--store", str(store_path)).stdout


def test_a_sync_that_merges_the_bomb_survives(remote: Path) -> None:
    a, b = make_clone(remote, "a"), make_clone(remote, "b")
    rid = a.record("fact", "Shared text.", title="Shared thing").record.id
    run_sync(a)
    run_sync(b)
    path = a.root / a.catalog()[rid]
    # Both sides change the same record: a person puts the bomb in it by hand on one side...
    text = bomb_file(rid, created=parse(path.read_text()).created.strftime("%Y-%m-%dT%H:%M:%SZ"))
    path.write_text(text)
    git(a.root, "commit", "-qam", "by hand")
    done = bounded("sync", "--store", str(a.root))  # the publish step reads it
    assert done.returncode == 0, done.stderr
    # ...and the other side amends it: the merge must read both versions.
    b.amend(rid, {"title": "Shared thing, amended"})
    done = bounded("sync", "--store", str(b.root))
    assert done.returncode == 0, done.stderr
    assert git(b.root, "status", "--porcelain") == ""


def test_the_session_start_hook_survives_the_bomb(store_path: Path, tmp_path: Path) -> None:
    store = Store.open(store_path)
    store.record("fact", "Pears are green.", title="Pears are green")
    store.index()  # then the hook reads what changed since from git: the bomb
    _place(store_path)
    git(store_path, "add", "-A")
    git(store_path, "commit", "-qm", "by hand")
    project = make_project(tmp_path / "p")
    done = bounded(
        "hook",
        "session-start",
        stdin=payload("claude-code/session_start", project),
    )
    assert done.returncode == 0, done.stderr
    # Hooks fail open: without the refusal the child dies quietly, and the context is lost.
    assert "Pears are green" in done.stdout and "Harmless looking" not in done.stdout


# --- byte-order mark, bidirectional controls, control characters ----------------------------


def test_a_file_starting_with_a_byte_order_mark_is_refused(store_path: Path) -> None:
    store = Store.open(store_path)
    written = store.record("fact", "Plain text body.", title="Plain").record
    path = store_path / written.path
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    done = bounded("validate", "--store", str(store_path))
    assert done.returncode == 1
    assert "byte-order mark (U+FEFF)" in done.stdout and "without a BOM" in done.stdout
    done = bounded("commit", "--store", str(store_path))
    assert done.returncode == 1 and "without a BOM" in done.stderr


@pytest.mark.parametrize("char", ["\u202e", "\u202a", "\u2066", "\u2069"])
def test_bidirectional_controls_are_refused_in_titles(gm, store_path: Path, char: str) -> None:  # type: ignore[no-untyped-def]
    head = git(store_path, "rev-parse", "HEAD")
    run = gm("record", "fact", "body text", "--title", f"invoice{char}fdp.exe")
    assert run.code == 1
    assert f"title: the bidirectional control U+{ord(char):04X}" in run.err
    assert "at character 8" in run.err and "remove it" in run.err
    assert git(store_path, "rev-parse", "HEAD") == head
    run = gm("record", "fact", "body text", "--title", "ok", "--tags", f"a{char}b")
    assert run.code == 1 and "tags: the bidirectional control" in run.err


def test_right_to_left_prose_in_a_body_is_kept(store: Store) -> None:
    body = "\u202bשלום עולם\u202c and marks \u200f stay."
    assert store.record("fact", body, title="Hebrew note").record.body == body  # type: ignore[attr-defined]


def test_the_control_character_refusal_says_where_and_what_to_do(gm, store_path: Path) -> None:  # type: ignore[no-untyped-def]
    run = gm("record", "fact", "line one\nline \x07two", "--title", "ok")
    assert run.code == 1
    assert "body: a control character (U+0007) at line 2, column 6; remove it" in run.err
    run = gm("record", "fact", "body", "--title", "bad\x1b[31m title")
    assert "title: a control character (U+001B) at character 4; remove it" in run.err
