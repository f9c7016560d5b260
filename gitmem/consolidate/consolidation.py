"""The consolidation part of the Python API, one object over a store (`Store.consolidation()`):
sleep, proposals, decide, feedback. The CLI and the MCP server both call it, and both answer
with gitmem.consolidate.answers' JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from gitmem.consolidate.decide import Decision, Feedback, decide, feedback
from gitmem.consolidate.proposals import Proposal, load_proposals
from gitmem.consolidate.settings import load_settings
from gitmem.consolidate.sleep import SleepReport, sleep

if TYPE_CHECKING:
    from gitmem.index.index import Index
    from gitmem.store.store import Store

__all__ = ["Consolidation"]


def _now(now: datetime | None) -> datetime:
    return (now or datetime.now(UTC)).replace(microsecond=0)


class Consolidation:
    """`index` gives the store's search index caught up with HEAD, None without a model
    (similarity in meaning needs one); it is asked for only by `sleep`, after its settings
    are read, so a refused setting leaves even the cache as it was."""

    def __init__(self, store: Store, index: Callable[[], Index | None]) -> None:
        self._store = store
        self._index = index

    def sleep(
        self,
        *,
        dry_run: bool = False,
        since: datetime | None = None,
        now: datetime | None = None,
    ) -> SleepReport:
        settings = load_settings(self._store.root)
        return sleep(
            self._store,
            _now(now),
            index=self._index(),
            dry_run=dry_run,
            since=since,
            settings=settings,
        )

    def proposals(self, *, every: bool = False) -> list[Proposal]:
        """Pending proposals (with `every`, decided ones too), oldest first."""
        found = [p for p in load_proposals(self._store) if every or p.status == "pending"]
        return sorted(found, key=lambda p: (p.created, p.id))

    def decide(
        self,
        proposal: str,
        *,
        accept: bool,
        note: str = "",
        agent: str = "",
        now: datetime | None = None,
    ) -> Decision:
        return decide(self._store, proposal, accept=accept, note=note, agent=agent, now=_now(now))

    def feedback(
        self, record: str, *, useful: bool, agent: str = "", now: datetime | None = None
    ) -> Feedback:
        return feedback(self._store, record, useful=useful, agent=agent, now=_now(now))
