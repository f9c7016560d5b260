"""Private scope: the public projection ("twin") of local history, which is what sync pushes.

Private records are ordinary commits on the local branch, so recall, history and `--as-of`
find them here like any other. What leaves the device is twin(local tip), where

    twin(c) = c's tree without its private records, c's author, committer and times,
              parents = the twins of c's parents (one that is an ancestor of another dropped).

A commit with no private record in its tree and with public parents twins to itself: the
same id, no new object, so a store that never uses private scope pays nothing. A commit whose
twin tree equals its single twin parent's tree (it touched only private records) twins to that
parent, so its message, which names the private title, never leaves either. A commit that
touched private and shared records at once (an import, a sync merge) gets a neutral message.

The twins are deterministic, so the memo in `.git/gitmem-publish.json` (local -> twin for the
commits that differ, and the private paths at the last tip) is only a cache: deleting it costs
one recomputation, never a different answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gitmem.atomic import replace_file
from gitmem.errors import RecordInvalid
from gitmem.store.git import GitRepo
from gitmem.store.gitread import Commit
from gitmem.store.recordfile import parse

__all__ = ["Publisher", "is_private"]

MEMO_NAME = "gitmem-publish.json"
_RECORDS = "records/"


# A `scope: private` line as a person or a YAML emitter might write it.
_PRIVATE_LINE = re.compile(rb"^scope:[ \t]*[\"']?private[\"']?[ \t]*(#.*)?\r?$", re.MULTILINE)


def is_private(data: bytes) -> bool:
    """Whether a record file says `scope: private`. A file that does not parse (a person's
    edit the format refuses) is private if any line says so: what cannot be read is never
    published on a guess."""
    if b"private" not in data:  # most records: no parse at all
        return False
    try:
        return parse(data.decode("utf-8")).scope == "private"
    except (RecordInvalid, UnicodeDecodeError):
        return _PRIVATE_LINE.search(data) is not None


class Publisher:
    """Computes twins for one repository, remembering them in the memo."""

    def __init__(self, repo: GitRepo) -> None:
        self.repo = repo
        self._path = repo.git_dir / MEMO_NAME
        memo = _load(self._path)
        tip_twin = memo.get("twins", {}).get(memo.get("tip"))
        if tip_twin is not None and not self._known(tip_twin):
            # A twin never pushed is unreachable, and `git gc` prunes it in time (it and its
            # ancestors go together): start again, which makes the same twins.
            memo = {}
        self._twins: dict[str, str] = memo.get("twins", {})
        self._tip: str | None = memo.get("tip")
        self._private: dict[str, frozenset[str]] = {}
        if self._tip is not None:
            self._private[self._tip] = frozenset(memo.get("private", ()))
        self.created = 0  # twin commits made by this object

    def twin(self, tip: str, public: Sequence[str]) -> str:
        """The public commit for `tip`. `public`: commits known to be public (the remote's
        tip): they and their ancestors twin to themselves."""
        hidden = [c for c in (*public, self._tip) if c is not None and self._known(c)]
        todo = [
            c
            for c in self.repo.between(tip, hidden)
            if c not in self._twins and c not in self._private
        ]
        withheld = self._withheld(tip, todo)
        for commit_id in todo:
            self._project(self.repo.commit(commit_id), withheld)
        return self._twins.get(tip, tip)

    def _withheld(self, tip: str, todo: Sequence[str]) -> frozenset[str]:
        """Ids of records that these unpublished commits wrote and that are private at `tip`:
        a record written as shared and made private before it was ever pushed must not leave
        in the commits that still hold it as shared."""
        paths: set[str] = set()
        for commit_id in todo:
            parents = self.repo.commit(commit_id).parents
            for change in self.repo.diff(parents[0] if parents else None, commit_id):
                if change.path.startswith(_RECORDS) and change.path.endswith(".md"):
                    paths.add(change.path)
        return frozenset(
            _stem(path)
            for path in paths
            if (data := self.repo.blob_at(tip, path)) is not None and is_private(data)
        )

    def save(self, tip: str) -> None:
        """Remember the twins and `tip`'s private paths (under the store's write lock)."""
        data = {
            "tip": tip,
            "private": sorted(self._private_at(tip)),
            "twins": self._twins,
        }
        replace_file(self._path, json.dumps(data))
        self._tip = tip

    def _known(self, commit_id: str) -> bool:
        return self.repo.resolve(commit_id) is not None

    def _project(self, c: Commit, withheld: frozenset[str]) -> None:
        # Diff against the parent with the fewest changes to look at: for a sync's merge that
        # is the remote's tip (public, so no private paths), which differs only by our side's
        # few writes, where the first parent differs by everything the remote brought.
        public_parents = [p for p in c.parents[1:] if not self._private_at(p)]
        first = public_parents[-1] if public_parents else (c.parents[0] if c.parents else None)
        private, touched = self._private_step(c, first, withheld)
        self._private[c.id] = private
        parents = self._twin_parents(c.parents)
        if not private and parents == list(c.parents):
            return  # public already: twins to itself, nothing stored
        tree = self.repo.without(c.id, sorted(private))
        if len(parents) == 1 and self.repo.tree_of(parents[0]) == tree:
            self._twins[c.id] = parents[0]
            return
        message = _neutral(c) if touched else c.message
        self._twins[c.id] = self.repo.recommit(c.id, tree, parents, message)
        self.created += 1

    def _twin_parents(self, parents: Sequence[str]) -> list[str]:
        twins = list(dict.fromkeys(self._twins.get(p, p) for p in parents))
        if len(twins) < 2 or twins == list(parents):
            # Every parent public already: kept as they are. Only a parent that twinned to
            # another commit can have become an ancestor of a sibling, and the check is one
            # ancestry walk per pair (a sync's merge of twenty devices has twenty parents).
            return twins
        return [t for t in twins if not any(o != t and self.repo.is_ancestor(t, o) for o in twins)]

    def _private_step(
        self, c: Commit, first: str | None, withheld: frozenset[str]
    ) -> tuple[frozenset[str], bool]:
        """The private paths in c's tree (records private there, or withheld: private at the
        tip being published), and whether c changed any of them."""
        if first is None:
            found = self._scan(c.id, withheld)
            return found, bool(found)
        before = self._private_at(first)
        private = set(before)
        touched = False
        for change in self.repo.diff(first, c.id):
            if not change.path.startswith(_RECORDS):
                continue
            if change.new is not None and (
                _stem(change.path) in withheld or is_private(self.repo.blob(change.new))
            ):
                private.add(change.path)
            else:
                private.discard(change.path)
            touched = touched or change.path in private or change.path in before
        return frozenset(private), touched

    def _private_at(self, commit_id: str) -> frozenset[str]:
        if commit_id not in self._private:
            if commit_id not in self._twins:
                # An ancestor of a public or already-projected commit with an identity twin
                # has no private record; others (a memo lost half-way) are scanned.
                return frozenset()
            self._private[commit_id] = self._scan(commit_id)
        return self._private[commit_id]

    def _scan(self, commit_id: str, withheld: frozenset[str] = frozenset()) -> frozenset[str]:
        return frozenset(
            path
            for path, blob in self.repo.files(commit_id, _RECORDS.rstrip("/"))
            if path.endswith(".md")
            and (_stem(path) in withheld or is_private(self.repo.blob(blob)))
        )


def _stem(path: str) -> str:
    """A record's id from its path (records/<type>/<YYYY-MM>/<id>.md)."""
    return path.rsplit("/", 1)[-1].removesuffix(".md")


def _neutral(c: Commit) -> str:
    """A message for the public part of a commit that also wrote private records: the
    original subject may name a private title, so only the operation and agent go out."""
    trailers = c.trailers()
    operation = trailers.get("Gitmem-Operation", "write")
    agent = trailers.get("Gitmem-Agent", "unknown")
    return (
        f"{operation}: shared records (private ones stay on the device that wrote them)\n\n"
        f"Gitmem-Operation: {operation}\nGitmem-Agent: {agent}\n"
    )


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
