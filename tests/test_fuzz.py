"""Fuzzing what gitmem reads from disk (issue 26): random bytes in every file of a real
index, and random YAML in a record's frontmatter. Property: a clear answer or a clear refusal,
never a crash, a hang or memory blowing up. Example counts are modest (two shared cores)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_index_damage import QUERY

from gitmem.api import Store
from gitmem.errors import RecordInvalid
from gitmem.store.record import Record
from gitmem.store.recordfile import parse

pytest_plugins = ["test_index_damage"]  # its `built` fixture: a store indexed with the tiny model


def _index_files(root: Path) -> list[str]:
    """The index's files that stay: not tantivy's lock files, nor SQLite's `-wal`/`-shm`,
    which come and go with its connections (the baseline recall's store closing at a garbage
    collection removed one between the listing and the copy, and hypothesis called the test
    flaky)."""
    index = root / ".gitmem" / "index"
    return sorted(
        p.relative_to(index).as_posix()
        for p in index.rglob("*")
        if p.is_file()
        and not p.name.startswith(".tantivy-")
        and not p.name.endswith(("-wal", "-shm"))
    )


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_random_bytes_in_any_index_file_give_an_answer(built: Path, data: st.DataObject) -> None:
    baseline = [h.id for h in Store.open(built).recall(QUERY).hits]
    names = _index_files(built)
    target = data.draw(st.sampled_from(names), label="file")
    how = data.draw(st.sampled_from(["overwrite", "truncate", "append"]), label="how")
    where = data.draw(st.floats(0, 1), label="where")
    junk = data.draw(st.binary(min_size=1, max_size=256), label="bytes")
    scratch = Path(tempfile.mkdtemp(prefix="gitmem-fuzz-"))
    try:
        root = scratch / "store"
        shutil.copytree(built, root, symlinks=True)
        path = root / ".gitmem" / "index" / target
        size = path.stat().st_size
        at = min(int(size * where), size)
        if how == "truncate":
            os.truncate(path, at)
        else:
            with path.open("r+b") as handle:
                handle.seek(size if how == "append" else at)
                handle.write(junk)
        store = Store.open(root)
        store.check_index()  # doctor's check says what it finds; it never fails itself
        result = store.recall(QUERY)
        healed = [n for n in result.notices if n.startswith("search index ")]
        assert all(n.endswith("; rebuilding it from git") for n in healed)
        if healed:
            assert [h.id for h in result.hits] == baseline
        assert store.check_index() == [] or not healed
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# --- random YAML in a record's frontmatter ---------------------------------------------------

_TOKENS = st.sampled_from(
    [
        "&a ",
        "*a",
        "&b ",
        "*b",
        "[",
        "]",
        "{",
        "}",
        ", ",
        ": ",
        "- ",
        "? ",
        "!!str ",
        "!x ",
        "|",
        ">",
        "'",
        '"',
        "#",
        "%YAML 1.1",
        "---",
        "...",
        "<<: ",
        "\n",
        "\n  ",
        "\t",
        "~",
        "null",
        "yes",
        "1e3",
        "2026-01-01",
        "\\",
        "\x00",
        "\x1b",
        "\u202e",
        "\ufeff",
        "é",
        "id",
        "type",
        "title",
        "tags",
        "links",
        "created",
        "note",
        "x",
        "fact",
    ]
)
_YAMLISH = st.lists(_TOKENS | st.text(max_size=4), max_size=40).map("".join)
_BASE = "id: fuzz-aaaaaa\ntype: fact\ntitle: Fuzz\ncreated: 2026-01-01T00:00:00Z\n"


@settings(max_examples=300, deadline=None)
@given(front=_YAMLISH, keep_base=st.booleans())
def test_random_yaml_in_frontmatter_is_read_or_refused(front: str, keep_base: bool) -> None:
    text = f"---\n{_BASE if keep_base else ''}{front}\n---\n\nbody\n"
    try:
        record = parse(text)
    except RecordInvalid as exc:
        assert str(exc)  # a refusal says what is wrong
    else:
        assert isinstance(record, Record)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=600))
def test_random_bytes_as_a_record_file_are_read_or_refused(data: bytes) -> None:
    with contextlib.suppress(RecordInvalid):
        parse(data.decode("utf-8", "surrogateescape"))
