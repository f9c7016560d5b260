"""A recall in a process that has not loaded numpy ranks through gitmem.index.literank (ctypes over
numpy's own OpenBLAS) and gitmem.index.embedding's numpy-free query encoder. It must answer exactly
as the numpy path does: the same ids, the same scores to the last bit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_index import (
    QUERIES,
    tiny_model_dir,  # noqa: F401  (a fixture of the fixture below)
)
from test_quickrecall import model_dir, searchable  # noqa: F401  (fixtures)
from test_rowfacts import edited  # noqa: F401  (a fixture)

from gitmem.api import Store
from gitmem.index import literank
from gitmem.index.entries import Filter

pytestmark = pytest.mark.skipif(
    not literank.available(), reason="numpy's bundled OpenBLAS is not on this machine"
)


@pytest.mark.parametrize("n", [1, 3, 10])
@pytest.mark.parametrize("include_superseded", [False, True])
def test_the_semantic_half_without_numpy_answers_as_with_it(
    edited: Store,  # noqa: F811
    n: int,
    include_superseded: bool,
) -> None:
    index = edited.index()
    index.ensure_current()
    flt = Filter(include_superseded=include_superseded)
    for query in QUERIES:
        lite = index._semantic_half().without_numpy(query, n, flt)
        assert lite is not None, query
        assert lite == index.semantic(query, n, flt)  # numpy is loaded here: its path


def test_without_row_facts_the_numpy_path_answers(edited: Store) -> None:  # noqa: F811
    index = edited.index()
    index.ensure_current()
    import sqlite3

    with sqlite3.connect(index.root / "catalog.sqlite") as db:
        db.execute("DELETE FROM row_facts")
    fresh = Store.open(edited.root)
    fresh.use_model(edited.model())
    other = fresh.index()
    other.ensure_current()
    assert other._semantic_half().without_numpy("webhook retry", 3, Filter()) is None


CHILD = """
import json, os, sys
if sys.argv[1] == "numpy":
    import numpy  # loaded first: the recall takes numpy's path
from gitmem.cli.quickrecall import run
code = run(sys.argv[2:], os.environ)
print(json.dumps([code, "numpy" in sys.modules]), file=sys.stderr)
"""


def quick(store: Path, first: str, *args: str) -> tuple[str, bool]:
    env = {**os.environ, "GITMEM_STORE": str(store)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, first, *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    code, numpy_loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert code == 0, done.stderr
    return done.stdout, numpy_loaded


@pytest.mark.parametrize(
    "args",
    [
        ["webhook retry deliveries", "--json", "--explain"],
        ["friday deploy", "--mode", "semantic", "--json"],
        ["postgres", "--include-superseded", "--json", "--limit", "3"],
        ["日本語", "--json"],
    ],
)
def test_a_recall_process_answers_alike_with_numpy_and_without(
    searchable: Path,  # noqa: F811
    args: list[str],
) -> None:
    now = ["--now", "2030-01-01"]
    without, loaded = quick(searchable, "plain", *args, *now)
    assert not loaded  # this process never imported numpy
    with_numpy, loaded = quick(searchable, "numpy", *args, *now)
    assert loaded
    assert without == with_numpy


def test_a_process_that_recalls_through_the_api_takes_numpys_path(
    searchable: Path,  # noqa: F811
) -> None:
    """numpy's path is the faster one per query: a long-lived process pays its import once
    rather than ranking without it at every recall."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from gitmem.api import Store\n"
        "assert Store.open(Path(sys.argv[1])).recall('webhook retry').hits\n"
        "print('numpy' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(searchable)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
