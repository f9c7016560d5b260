"""The tree diff a catch-up reads, and the catch-up, two code trees alternated on one store:
libgit2's whole-tree diff (before) against the walk that skips equal subtrees
(gitmem.store.gitread.GitReader.diff, after).

    nice -n 5 .venv/bin/python benchmarks/ab_diff.py STORE --trees BEFORE AFTER \
        [--rounds 3] [--json OUT]

Each round runs, for each tree in turn (ABBA order across rounds), one process with
`PYTHONPATH` that tree, which catches the index up (untimed), then twice: 100 new records
(`store.record`, one commit each), and once: 100 edits of records picked at random
(`store.amend`, their months all over the store). After each batch it times the diff from the
index's commit to HEAD alone (`store.repo.diff`, median of 3 calls) and, in the same process,
libgit2's whole-tree diff (what `diff` was before; its changes must be the same), then the
catch-up (`store.index()`).
The store is written to: use a copy.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from _common import ab_parser, ab_report, alternated, median
from ab_rowfacts import write_batch


def _batch(store: Any, kind: str) -> dict[str, Any]:
    start = store.head()
    write_batch(store, kind)
    end = store.head()
    times, whole, changes, reference = [], [], [], []
    for _ in range(3):
        began = time.perf_counter()
        changes = store.repo.diff(start, end)
        times.append(time.perf_counter() - began)
        began = time.perf_counter()
        reference = _libgit2(store.root, start, end)
        whole.append(time.perf_counter() - began)
    began = time.perf_counter()
    store.index()
    catch_up = time.perf_counter() - began
    found = [(c.path, c.old, c.new, c.link) for c in changes]
    return {
        "kind": kind,
        "diff_s": median(times),
        "libgit2_diff_s": median(whole),
        "changes": len(changes),
        "same_as_libgit2": found == reference,
        "catch_up_s": catch_up,
    }


def _libgit2(root: Path, old: str, new: str) -> list[tuple[str, str | None, str | None, bool]]:
    """libgit2's whole-tree diff (what GitReader.diff was before), in the same terms."""
    import pygit2

    repo = pygit2.Repository(str(root))
    diff = repo[old].peel(pygit2.Tree).diff_to_tree(repo[new].peel(pygit2.Tree))
    zero, links = "0" * 40, {pygit2.enums.FileMode.LINK, pygit2.enums.FileMode.COMMIT}
    out = []
    for d in diff.deltas:
        a, b = str(d.old_file.id), str(d.new_file.id)
        path = d.new_file.path or d.old_file.path
        out.append(
            (
                path,
                a if a != zero else None,
                b if b != zero else None,
                b != zero and d.new_file.mode in links,
            )
        )
    return out


def one(root: Path) -> dict[str, Any]:
    from gitmem.api import Store

    store = Store.open(root)
    store.index()
    batches = [_batch(store, kind) for kind in ("new", "edits", "new")]
    return {"batches": batches, "load": os.getloadavg()[0]}


def main() -> None:
    parser = ab_parser(__doc__)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.store)))
        return
    runs = alternated(__file__, args.store, args.trees, args.rounds)
    summary = {
        tree: {
            f"{kind}_{figure}_median": median(
                [b[figure] for r in got for b in r["batches"] if b["kind"] == kind]
            )
            for kind in ("new", "edits")
            for figure in ("diff_s", "libgit2_diff_s", "catch_up_s")
        }
        for tree, got in runs.items()
        if got
    }
    ab_report(args.json, runs, summary)


if __name__ == "__main__":
    main()
