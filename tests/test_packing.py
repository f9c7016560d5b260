"""A bulk write packs the objects it made: an import of thousands of records must not leave a
loose file per object in .git (issue 25), and a single write stays as cheap as it was."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gitmem.store.commit import PACK_AFTER
from gitmem.store.store import Store


def _loose(root: Path) -> int:
    out = subprocess.run(
        ["git", "-C", str(root), "count-objects", "-v"], capture_output=True, text=True, check=True
    ).stdout
    return int(dict(line.split(": ") for line in out.splitlines())["count"])


def _items(n: int) -> list[dict[str, object]]:
    return [
        {
            "id": f"fact-number-{i}-{i:06x}",
            "type": "fact",
            "title": f"Fact number {i}",
            "body": f"Body {i}.\n",
            "created": "2026-01-01T00:00:00Z",
        }
        for i in range(n)
    ]


def test_an_import_leaves_its_objects_packed_and_the_repository_sound(tmp_path: Path) -> None:
    store, _ = Store.init(tmp_path / "store")
    store.import_records(_items(PACK_AFTER + 44), agent="test")
    assert _loose(store.root) == 0
    fsck = subprocess.run(["git", "-C", str(store.root), "fsck", "--strict"], capture_output=True)
    assert fsck.returncode == 0, fsck.stderr
    status = subprocess.run(
        ["git", "-C", str(store.root), "status", "--porcelain"], capture_output=True, text=True
    )
    assert status.stdout == ""
    assert len(list(store.records())) == PACK_AFTER + 44


def test_a_small_write_does_not_repack(tmp_path: Path) -> None:
    store, _ = Store.init(tmp_path / "store")
    before = _loose(store.root)
    store.import_records(_items(3), agent="test")
    assert _loose(store.root) > before  # its blobs, trees and commit, loose as git leaves them
