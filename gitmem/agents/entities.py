"""The PostToolUse hook's door into the work graph: Markdown an agent wrote under a watched
directory, handed to the one entity indexer (gitmem.graph.indexer) that `gitmem entity
index-file` and `index-all` use too.

Before the work graph this module wrote one `reference` record per document (tag `document`);
`gitmem entity reconcile` forgets those, since their files are entities now (docs/graph.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.agents.project import find_project, repository_root
from gitmem.graph.indexer import IndexReport, Watched, index_files

if TYPE_CHECKING:
    from gitmem.agents.settings import HookSettings
    from gitmem.store.store import Store

__all__ = ["index_written", "watched_around"]


def watched_around(store_root: Path, start: Path) -> tuple[Watched, list[str]]:
    """The project around `start` (an absolute directory) and its watched directories from
    the store's `[hooks]` settings, for `gitmem entity ...` and the MCP entity tools; and the
    settings' problems, for the caller to show."""
    from gitmem.agents.settings import hook_settings

    settings, problems = hook_settings(store_root)
    project = find_project(start)
    return Watched(repository_root(start) or start, project, settings.watched(project)), problems


def index_written(
    store: Store, cwd: Path, paths: Sequence[Path], settings: HookSettings, *, agent: str = ""
) -> IndexReport:
    """Index the written files (absolute) as entities of the project around `cwd` (its watched
    directories from `settings`), in one commit; files that cannot be entities are skipped
    (the report says why)."""
    root = repository_root(cwd) or cwd
    project = find_project(cwd)
    where = Watched(root, project, settings.watched(project))
    return index_files(store, paths, where, agent=agent)
