"""`gitmem --version` and `gitmem version [--json]`: what a user or a bug report needs to know
of the installed gitmem, with no store needed."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import gitmem
from gitmem.index.stamp import CATALOG_SCHEMA
from gitmem.store.config import STORE_FORMAT

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_says_the_version_the_project_declares() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert gitmem.__version__ == declared


def test_dash_dash_version_prints_one_line_without_a_store(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gitmem", "--version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"HOME": str(tmp_path), "GITMEM_STORE": str(tmp_path / "none"), "PATH": "/usr/bin"},
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"gitmem {gitmem.__version__}\n", "")


def test_version_json_names_the_formats_this_gitmem_reads_and_writes(gm) -> None:  # type: ignore[no-untyped-def]
    done = gm("version", "--json")
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert report["gitmem"] == gitmem.__version__
    assert report["store_format"] == STORE_FORMAT
    assert report["index_schema"] == CATALOG_SCHEMA
    assert report["python"] == ".".join(map(str, sys.version_info[:3]))
    assert report["libraries"]["pygit2"] and report["libraries"]["tantivy"]


def test_version_in_words(gm) -> None:  # type: ignore[no-untyped-def]
    done = gm("version")
    assert done.code == 0
    assert done.out.splitlines()[0] == f"gitmem {gitmem.__version__}"
    assert f"store format {STORE_FORMAT}" in done.out
