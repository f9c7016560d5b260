"""The memory as it stood at a moment: recall, read, list and history `--as-of WHEN`.

WHEN is a moment (see gitmem.recall.timeparse) or a commit. At a moment the view holds, for each
record, its latest version written at or before it (gitmem.recall.timeline orders versions); a
record whose latest event is a deletion (forget) is absent, and superseded ones are filtered
as at HEAD. A moment at or after HEAD's effective time is the present: HEAD's own tree. A commit is
its own tree. Nothing is cached per moment on disk: a view is one pass over the timeline's
events, and the last few are kept in memory.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, TypeVar

from gitmem.errors import NotFound, RecordInvalid, UsageError
from gitmem.index.entries import Entry, Filter
from gitmem.recall.moment import MomentIndex, best_per_record
from gitmem.recall.pastcontext import PastText, Versions
from gitmem.recall.recall import Options, Result, Source, recall
from gitmem.recall.spans import Spans, spans_of
from gitmem.recall.timeline import Timeline
from gitmem.recall.timeparse import AS_OF_ACCEPTED, end_of_day, parse_moment
from gitmem.store.record import Record, format_time
from gitmem.store.recordfile import parse

if TYPE_CHECKING:
    from gitmem.index.index import Index
    from gitmem.index.model import ModelRef
    from gitmem.store.history import Version
    from gitmem.store.store import Store

__all__ = ["Moment", "PastIndex", "TimeTravel", "View"]

_T = TypeVar("_T")
# What a kept view or index is made for: HEAD, the timeline build opened, the moment (its time
# and commit), and which kind it is.
_Key = tuple[str, int, datetime, str | None, str]
_KEEP = 8  # views and rankers kept in memory: a session asks about one or two moments at a time


@dataclass(frozen=True)
class Moment:
    """A WHEN, resolved: the instant, and the commit when WHEN named one."""

    time: datetime
    commit: str | None = None

    @property
    def label(self) -> str:
        at = format_time(self.time)
        return at if self.commit is None else f"{self.commit[:10]} ({at})"


@dataclass(frozen=True)
class View:
    """Every record (superseded ones included) as it stood at `moment`."""

    moment: Moment
    entries: dict[str, Entry]
    present: bool  # the view is HEAD's tree
    notes: tuple[str, ...] = ()
    by_blob: dict[str, str] = field(default_factory=dict)  # blob -> id


class TimeTravel:
    """The time-travel reads of one store; keeps its timeline caught up with HEAD."""

    def __init__(self, store: Store, model: ModelRef | None, head: Index | None = None) -> None:
        """`head`: the store's search index, whose vectors the time-travel cache copies for the
        versions it holds (with the same model) instead of embedding them again."""
        self.store = store
        same = head is not None and model is not None and head.model_name == model.name
        self.timeline = Timeline(store, model, head.vectors_of if same and head else None)
        self._views: OrderedDict[_Key, object] = OrderedDict()
        self._versions = Versions(self.timeline.made)  # shared by the views' keyword indexes
        self._spans: Spans | None = None

    def spans(self) -> Spans:
        """The span index, caught up with the timeline (which is caught up first)."""
        self.timeline.ensure_current()
        self._spans = spans_of(self.timeline, self._spans)
        return self._spans

    # --- WHEN --------------------------------------------------------------------------------

    def moment(self, when: str | datetime, now: datetime | None = None) -> Moment:
        """A datetime, a time as the CLI takes it, or a commit id / ref reachable from HEAD."""
        if isinstance(when, datetime):
            moment = when if when.tzinfo else when.replace(tzinfo=UTC)
            return Moment(moment.astimezone(UTC).replace(microsecond=0))
        text = when.strip()
        try:
            parsed = parse_moment(text, now)
        except UsageError:
            parsed = None
        if parsed is not None:
            if end_of_day(text):
                parsed += timedelta(days=1, seconds=-1)
            return Moment(parsed)
        oid = self.store.repo.resolve(text) if text else None
        if oid is None:
            raise UsageError(
                f'"{when}" is not a time or a commit gitmem knows; use {AS_OF_ACCEPTED}'
            )
        head = self.store.head()
        # Refused before the cache is touched (bad input writes nothing), and again should
        # HEAD have moved away from it meanwhile.
        stamp = None
        if head is not None and self.store.repo.is_ancestor(oid, head):
            self.timeline.ensure_current()
            stamp = self.timeline.stamp(oid)
        if stamp is None:
            raise UsageError(
                f'commit {oid[:10]} ("{when}") is not in the history of HEAD; '
                'pick one that "git log" lists'
            )
        return Moment(datetime.fromtimestamp(stamp[0], UTC), oid)

    # --- views -------------------------------------------------------------------------------

    def view(self, moment: Moment) -> View:
        """Every record as it stood at `moment` (what list, read and diff show)."""
        key, found = self._cached(moment, "view")
        if isinstance(found, View):
            return found
        timeline = self.timeline
        head, t = key[0], int(moment.time.timestamp())
        span = timeline.span()
        if moment.commit is not None:
            entries, present = timeline.at_commit(moment.commit), moment.commit == head
        elif span is None or t < span[0]:
            entries, present = {}, False
        elif t >= span[1]:
            entries, present = timeline.at_commit(head), True
        else:
            entries, present = timeline.at_time(t), False
        notes = _before(moment, span)
        view = View(moment, entries, present, notes, {e.blob: rid for rid, e in entries.items()})
        return self._keep(key, view)

    def _past(self, moment: Moment) -> PastIndex | MomentIndex:
        """What recall ranks from: at a moment between the store's first commit and HEAD's
        written time, the span index searched then (nothing read per record of the view);
        otherwise (a commit, the present, before the store) the view, with its own index."""
        key, found = self._cached(moment, "recall")
        if isinstance(found, PastIndex | MomentIndex):
            return found
        span = self.timeline.span()
        t = int(moment.time.timestamp())
        if moment.commit is None and span is not None and span[0] <= t < span[1]:
            return self._keep(key, MomentIndex(self.timeline, self.spans, t))
        return self._keep(key, PastIndex(self.timeline, self.view(moment), self._versions))

    def _cached(self, moment: Moment, kind: str) -> tuple[_Key, object]:
        """The key of `kind` made at `moment` for the timeline as caught up now (HEAD, the
        build opened), and what is kept under it (None: nothing)."""
        timeline = self.timeline
        timeline.ensure_current()
        key = (timeline.meta("head") or "", timeline.opened, moment.time, moment.commit, kind)
        found = self._views.get(key)
        if found is not None:
            self._views.move_to_end(key)
        return key, found

    def _keep(self, key: _Key, made: _T) -> _T:
        self._views[key] = made
        if len(self._views) > _KEEP:
            # Dropped, not closed: another thread (the MCP server's) may still be searching
            # it; its temporary index goes when the last reference does (weakref.finalize).
            self._views.popitem(last=False)
        return made

    # --- reads -------------------------------------------------------------------------------

    def recall(self, head_index: Source, query: str, options: Options, when: Moment) -> Result:
        """Recall over the view at `when`, with decay measured from it, or from the present
        (`options.now`, else the clock) when WHEN is later. The present (and a WHEN in the
        future) is answered by the HEAD index itself."""
        past = self._past(when)
        present = options.now or datetime.now(UTC)
        present = present if present.tzinfo else present.replace(tzinfo=UTC)
        chosen = replace(options, now=min(when.time, present))
        if not past.present and chosen.mode != "semantic":
            past.prepare()  # here, not in recall's keyword thread: it may catch the cache up
        result = recall(head_index if past.present else past, query, chosen)
        said = (*self.timeline.notices, *past.notes)
        self.timeline.notices.clear()
        return replace(result, notices=(*said, *result.notices))

    def notes(self, when: Moment) -> tuple[str, ...]:
        """What a reader of the view at `when` should be told (a rebuilt cache, a moment
        before the store began), once."""
        self.timeline.ensure_current()
        said = (*self.timeline.notices, *_before(when, self.timeline.span()))
        self.timeline.notices.clear()
        return said

    def get(self, prefix: str, when: Moment) -> Record:
        view = self.view(when)
        rid = _resolve(view, prefix)
        return self._record(view, rid)

    def records(self, when: Moment) -> list[Record]:
        """Every record as it stood, superseded ones included, in id order."""
        view = self.view(when)
        return [self._record(view, rid) for rid in sorted(view.entries)]

    def history(self, versions: list[Version], when: Moment) -> list[Version]:
        """The versions written up to `when` (for a commit: in its history)."""
        self.timeline.ensure_current()
        if when.commit is not None:
            repo = self.store.repo
            out = [v for v in versions if repo.is_ancestor(v.commit, when.commit)]
        else:
            t = int(when.time.timestamp())
            stamps = [self.timeline.stamp(v.commit) for v in versions]
            out = [v for v, s in zip(versions, stamps, strict=True) if s and s[0] <= t]
        if versions and not out:
            raise NotFound(
                f"{_id_of(versions)} had no version yet as of {when.label}; its first was "
                f"written at {format_time(versions[0].time)}"
            )
        return out

    def _record(self, view: View, rid: str) -> Record:
        entry = view.entries[rid]
        try:
            return parse(self.store.repo.blob(entry.blob).decode("utf-8"))
        except (UnicodeDecodeError, RecordInvalid) as exc:  # the timeline only keeps valid ones
            raise RecordInvalid(f"{entry.path} at {view.moment.label}: {exc}") from exc


def _resolve(view: View, prefix: str) -> str:
    if prefix in view.entries:
        return prefix
    matches = sorted(rid for rid in view.entries if rid.startswith(prefix))
    if len(matches) > 1:
        shown = ", ".join(matches[:10]) + (" …" if len(matches) > 10 else "")
        raise UsageError(
            f'"{prefix}" is ambiguous as of {view.moment.label}; it matches {shown}'
            " — give more of the id"
        )
    if not matches:
        raise NotFound(
            f'no record "{prefix}" as of {view.moment.label}: it was written later, or '
            f'forgotten by then — "gitmem history {prefix}" lists its versions'
        )
    return matches[0]


def _id_of(versions: list[Version]) -> str:
    found = next((v.record for v in versions if v.record is not None), None)
    return "the record" if found is None else found.id


def _before(moment: Moment, span: tuple[int, int] | None) -> tuple[str, ...]:
    """The note for a moment before the store's first commit (none for a commit)."""
    if moment.commit is not None or (span is not None and moment.time.timestamp() >= span[0]):
        return ()
    first = "has no commits" if span is None else "begins at " + _iso(span[0])
    return (f"the store {first}; nothing was remembered as of {moment.label}",)


def _iso(t: int) -> str:
    return format_time(datetime.fromtimestamp(t, UTC))


class PastIndex:
    """What recall ranks from, for a view as of a commit: the view's own keyword index, with
    context and sources as they stood (gitmem.recall.pastcontext), so that it ranks exactly as
    a clone checked out there, and the timeline's vectors of every version, restricted to the
    view's blobs. The same fusion and decay as at HEAD run on top."""

    def __init__(self, timeline: Timeline, view: View, versions: Versions) -> None:
        self.timeline = timeline
        self._versions = versions
        self.present = view.present
        self.notes = view.notes
        self.view = view
        self.model = timeline.model
        self.notices: list[str] = []
        self._admitted: dict[Filter, tuple[frozenset[str], list[int]]] = {}
        self._past_text: PastText | None = None

    def ensure_current(self) -> None:
        """A view is fixed once made; the timeline caught up before it was."""

    def _allowed(self, flt: Filter, rows: bool = False) -> tuple[frozenset[str], list[int]]:
        found = self._admitted.get(flt)
        if found is None or (rows and not found[1]):
            blobs = frozenset(e.blob for e in self.view.entries.values() if flt.admits(e))
            numbers: list[int] = []
            if rows:
                by_blob, _ = self.timeline.vector_rows()
                numbers = sorted(r for blob in blobs for r in by_blob.get(blob, ()))
            found = self._admitted[flt] = (blobs, numbers)
        return found

    def keyword(
        self, query: str, n: int, flt: Filter, context: float = 0.0
    ) -> list[tuple[str, float]]:
        """The view's BM25 hits, each record with its context as it stood (see
        gitmem.recall.pastcontext)."""
        entries = self.view.entries
        admitted = frozenset(rid for rid, e in entries.items() if flt.admits(e))
        # The view's index holds only the view's records: all of them need no filter.
        return self._text().search(
            query, n, None if len(admitted) == len(entries) else admitted, context
        )

    def keyword_ceiling(self, query: str) -> float:
        return self._text().ceiling(query)

    def source_prior(self, query: str, ids: Sequence[str]) -> dict[str, float]:
        return self._text().source_prior(query, ids)

    def context_scores(self, query: str, ids: Sequence[str], weight: float) -> dict[str, float]:
        return self._text().context_scores(query, ids, weight)

    def prepare(self) -> None:
        """Nothing to open ahead: the view's index is made on its first keyword search."""

    def _text(self) -> PastText:
        """The view's keyword index, made on first use (a view asked only to list or read
        records never pays for it)."""
        if self._past_text is None:
            entries = sorted(self.view.entries.values(), key=lambda e: e.path)
            self._past_text = PastText(self._versions.get([e.blob for e in entries]))
        return self._past_text

    def close(self) -> None:
        if self._past_text is not None:
            self._past_text.close()
            self._past_text = None

    def semantic(self, query: str, n: int, flt: Filter) -> list[tuple[str, float]] | None:
        if self.model is None:
            return None
        from gitmem.index.vectors import Ranking, query_row

        _, subset = self._allowed(flt, rows=True)
        matrix = self.timeline.matrix()
        _, owner = self.timeline.vector_rows()
        q = query_row(self.model.encode_query(query))
        ids = self.view.by_blob
        ranking = Ranking(matrix, q, subset)  # the product once, however far `want` widens
        return best_per_record(ranking.top, n, lambda row: ids[owner[row]])

    def scoring(self, ids: Sequence[str]) -> dict[str, tuple[int, float]]:
        return {rid: (entry.updated, entry.weight) for rid, entry in self.entries(ids).items()}

    def entries(self, ids: Sequence[str]) -> dict[str, Entry]:
        found = self.view.entries
        return {rid: found[rid] for rid in ids if rid in found}
