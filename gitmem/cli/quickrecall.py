"""`gitmem recall` without the full CLI, when the search index is current.

A recall as a whole process must finish within 0.4 s at 100k records (DESIGN.md), and the full
CLI spends most of that importing what a recall of a current index never uses: libgit2's
bindings (~100-160 ms), typer (~45 ms), the write side of the store, the index builder's
process pool. Reading a current index needs none of them: HEAD comes from .git's own files
(gitmem.store.gitfiles, gitmem.index.stamp), and the index says which commit it mirrors. So
`python -m gitmem recall`
comes here first (gitmem/__main__.py), and this module answers when it can:

- the arguments are ones it understands (any option of `gitmem recall` except --batch and
  --as-of, as `--opt VALUE` or `--opt=VALUE`, one query);
- the store is a plain git work tree, its HEAD readable from .git, and the index current:
  present, readable, built with the configured model and stamped with HEAD.

Anything else goes to the full CLI, in the same process and before anything is printed: an
index that is missing, behind HEAD or unusable (catching up needs the repository), a model not
on this machine, --help, an option or value this parser does not know, and every error, which
the full CLI reports as it always has. What is printed is the full CLI's, byte for byte: the
same search code and the same display functions; tests/test_quickrecall.py runs a matrix of
options both ways and compares stdout, stderr and exit codes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from gitmem.cli.argsplit import split
from gitmem.errors import EXIT_BUG, EXIT_OK, bug_message
from gitmem.index.model import configured_model
from gitmem.index.stamp import catalog_stamp
from gitmem.store.gitfiles import StoreTip, head_commit
from gitmem.store.location import is_store, model_cache, store_path

if TYPE_CHECKING:
    from gitmem.recall.recall import Result

__all__ = ["run"]

# Options of `gitmem recall` (gitmem/cli/app.py) this parser takes, by the name the CLI gives them.
_VALUED = {
    "--mode": "mode",
    "--limit": "limit",
    "-n": "limit",
    "--type": "type",
    "--tag": "tag",
    "--agent": "agent",
    "--scope": "scope",
    "--since": "since",
    "--until": "until",
    "--now": "now",
    "--fusion": "fusion",
    "--store": "store",
}
_FLAGS = {"--include-superseded": "include_superseded", "--explain": "explain", "--json": "json"}
_REPEATED = ("type", "tag")
_LIMIT = re.compile(r"[0-9]{1,4}")


@dataclass(frozen=True)
class Request:
    """A recall as the command line asked for it, with the CLI's defaults."""

    query: str
    values: dict[str, str] = field(default_factory=dict)  # the last of each valued option
    types: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    flags: frozenset[str] = frozenset()

    def arguments(self) -> dict[str, Any]:
        """What the CLI's recall command hands gitmem.recall.options.recall_options."""
        return dict(
            mode=self.values.get("mode", "hybrid"),
            limit=int(self.values.get("limit", "10")),
            type=list(self.types),
            tag=[t.strip() for v in self.tags for t in v.split(",") if t.strip()],
            agent=self.values.get("agent"),
            scope=self.values.get("scope"),
            since=self.values.get("since"),
            until=self.values.get("until"),
            include_superseded="include_superseded" in self.flags,
            now=self.values.get("now"),
            fusion=self.values.get("fusion", ""),
        )


def parse(argv: Sequence[str]) -> Request | None:
    """The request, or None where the CLI's parser might read `argv` otherwise or refuse it
    (it then does both itself). Stricter than the CLI on purpose: a value that starts with a
    dash, a limit written other than in plain digits, `-n5` — all left to the CLI."""
    parts = split(argv, _VALUED, _FLAGS, _REPEATED)
    if parts is None:
        return None  # --help, --batch, --as-of, a typo, a value starting with a dash: the CLI's
    values, repeated, positional = parts.values, parts.repeated, parts.positional
    if len(positional) != 1 or not positional[0].strip():
        return None
    if "limit" in values and not (
        _LIMIT.fullmatch(values["limit"]) and 1 <= int(values["limit"]) <= 1000
    ):
        return None
    return Request(
        positional[0], values, tuple(repeated["type"]), tuple(repeated["tag"]), parts.flags
    )


def run(argv: Sequence[str], env: Mapping[str, str]) -> int | None:
    """Answer `gitmem recall ARGV`: the exit code, or None when the full CLI must answer (then
    nothing has been printed and nothing written). An interrupt, and output that cannot be
    written, are left to gitmem.__main__, which ends the full CLI's commands the same way."""
    request = parse(argv)
    if request is None:
        return None
    try:
        result = _search(request, env)
    except Exception:  # _Declined, and any failure: the full CLI's to meet and to report
        return None
    from gitmem.cli import display

    flags = request.flags
    try:
        display.recall(request.query, result, as_json="json" in flags, explain="explain" in flags)
    except Exception as exc:  # printing failed (stdout that cannot encode a title): as the CLI
        display.error(bug_message(exc))
        return EXIT_BUG
    return EXIT_OK


def _search(request: Request, env: Mapping[str, str]) -> Result:
    """The recall; _Declined when the index cannot be read as it is, ModelUnavailable when the
    model is not on this machine (the full CLI says why)."""
    root = store_path(request.values.get("store"), env)
    if not is_store(root):
        raise _Declined
    head = head_commit(root / ".git")
    if head is None or catalog_stamp(root) != head:
        raise _Declined  # found before the imports below: a stale index costs the CLI little
    from gitmem.store.config import load_config
    from gitmem.store.schema import load_schemas

    # As opening the store does: a broken one fails every command.
    types = load_schemas(root / "schemas")
    model = configured_model(load_config(root).model, root, model_cache(env))
    # Only now the search: tantivy, SQLite, numpy.
    from gitmem.index.index import Index
    from gitmem.recall.options import RecordTypes, recall_options
    from gitmem.recall.recall import recall

    # One recall, then the process ends: ranking without numpy spares its import, which a
    # long-lived process would rather pay once. Never catching up: that needs the repository
    # (IndexNotCurrent, HEAD moved since the check above: the full CLI's).
    index = Index(StoreTip(root), model, catch_up=False, rank_without_numpy=True)
    known = RecordTypes(types, index.has_type)
    options = recall_options(request.arguments(), env, types=known)
    if "explain" in request.flags:
        options = replace(options, explain=True)
    result = recall(index, request.query, options)
    from gitmem.consolidate.recallstats import note_recall

    note_recall(root / ".gitmem", [hit.id for hit in result.hits])  # as Store.recall, for sleep
    return result


class _Declined(Exception):
    """Not for the fast path: the full CLI answers (the index is behind HEAD, say)."""
