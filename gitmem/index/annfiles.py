"""The vector graph's files in place (gitmem.index.ann): where they are, a prepared graph put in
place, checked against its stamp, removed. No usearch here: these are files and stamps
(gitmem.index.annstamp), read by their stat and checksum."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path

from gitmem.atomic import replace_file
from gitmem.index.annstamp import Stamp, describing, read_stamp

__all__ = ["Prepared", "check", "drop", "drop_others", "graph_paths", "install"]


def graph_paths(root: Path, vectors_name: str) -> tuple[Path, Path]:
    """The graph's file and its stamp, for the vector file named `vectors_name` in `root`."""
    stem = Path(vectors_name).stem
    return root / f"ann-{stem}.usearch", root / f"ann-{stem}.json"


@dataclass(frozen=True)
class Prepared:
    """A graph saved to a temporary file, waiting for `install`."""

    temporary: Path
    base: Stamp | None  # the stamp it was made from (None: made anew)
    made: Stamp
    notice: str | None
    in_place: Stamp | None = None  # what describes the graph it extends: base, or base's next


def install(root: Path, prepared: Prepared) -> bool:
    """Put a prepared graph in place, under the index lock; whether it was (not when its
    stamp changed since `prepare` read it: another builder's, or a writer removed it).
    The stamp is written first naming the new graph as `next`, so that a crash between the
    two leaves a graph its stamp describes."""
    path, stamp_path = graph_paths(root, prepared.made.vectors)
    try:
        if read_stamp(stamp_path) != prepared.base:
            return False
        made = prepared.made
        if prepared.base is not None:  # the graph in place stays described till the rename
            kept = prepared.in_place or prepared.base
            replace_file(stamp_path, json.dumps(replace(kept, next=made.saved()).record()))
        os.replace(prepared.temporary, path)
        replace_file(stamp_path, json.dumps(made.record()))
        return True
    finally:
        prepared.temporary.unlink(missing_ok=True)


def check(root: Path) -> list[str]:
    """What is wrong with the vector graphs in `root` (`gitmem doctor`, under the index lock):
    each graph its stamp does not describe, by its stat or by its checksum. Such a graph is
    removed (its stamp kept: the next write sees a graph that was there and builds it again);
    readers rank exactly meanwhile."""
    stems = {
        p.name.rsplit(".", 1)[0]
        for p in (*root.glob("ann-*.usearch"), *root.glob("ann-*.json"))
        if ".tmp-" not in p.name
    }
    problems = []
    for stem in sorted(stems):
        path = root / f"{stem}.usearch"
        stamp = read_stamp(root / f"{stem}.json")
        if stamp is None:
            why = "its stamp is missing, unreadable or from an earlier gitmem"
        elif not path.exists():
            problems.append(f"vector graph {path.name} is missing: {_UNTIL}")
            continue
        elif describing(path, stamp, checksum=False) is None:
            why = "the file was changed or replaced since it was saved"
        elif describing(path, stamp, checksum=True) is None:
            why = "its checksum does not match: it is damaged"
        else:
            continue
        path.unlink(missing_ok=True)
        problems.append(
            f"vector graph {path.name} does not match its stamp ({why}): removed; {_UNTIL}"
        )
    return problems


_UNTIL = "recalls rank exactly until the next write builds it again"


def drop(root: Path, err: Exception) -> str:
    """Remove every graph in `root` after a writer failed to bring it up to date with `err`
    (the index ranks exactly until the next writer builds one again); the notice to give."""
    for old in root.glob("ann-*"):
        old.unlink(missing_ok=True)
    return f"the search index's vector graph could not be updated ({err}); ranking exactly"


def drop_others(root: Path, keep: Path, keep_stamp: Path) -> bool:
    """Remove the graphs of vector files no longer in place (a compaction renamed it);
    whether there were any."""
    found = False
    for old in root.glob("ann-*"):
        if old not in (keep, keep_stamp) and ".tmp-" not in old.name:
            old.unlink(missing_ok=True)
            found = True
    return found
