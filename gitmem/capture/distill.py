"""Distilling archived sessions into records: from each session's watermark, a span of its
transcript at a time, sent with the memories it most likely touches to the distiller; the
answer validated (retried once with the problems), guarded against secrets, de-duplicated,
upserted by key, and written as one commit per span (docs/capture.md).

A failed span (a timeout, an exit that is not 0, an answer refused twice, a write refused)
leaves the watermark where it was: the transcript is still archived, and an automatic run
tries again once capture.retry_after has passed (a boundary's sweep, gitmem.capture.sweep),
up to MAX_ATTEMPTS, after which the span is skipped, logged. No distiller on PATH waits the
same way but is no try: it never makes a span skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from gitmem.capture import queue
from gitmem.capture.answer import parse_answer
from gitmem.capture.dedup import Seen
from gitmem.capture.prompt import build_prompt, prompt_text, retry_prompt
from gitmem.capture.runner import distiller_command, run_distiller
from gitmem.capture.screen import Related, found, screen
from gitmem.capture.settings import CaptureSettings, capture_settings
from gitmem.capture.sweep import due, retry_due
from gitmem.capture.transcript import Span, read_span
from gitmem.capture.upsert import Keys
from gitmem.errors import GitmemError, NotFound
from gitmem.store.batch import Draft
from gitmem.store.store import Store

__all__ = ["MAX_ATTEMPTS", "DistillReport", "Related", "SpanReport", "distill"]

MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class SpanReport:
    session: str
    lines: str  # "first-last" of the archive
    source: str  # what the records' source says
    written: tuple[str, ...] = ()  # new record ids (planned titles with --dry-run)
    superseded: tuple[str, ...] = ()
    duplicates: int = 0
    dropped: tuple[str, ...] = ()  # why each dropped record was dropped
    commit: str | None = None
    problem: str = ""  # why the span failed ("": it did not)
    no_distiller: bool = False  # failed for want of a distiller: does not count as a try


@dataclass(frozen=True)
class DistillReport:
    spans: tuple[SpanReport, ...]
    notes: tuple[str, ...]  # sessions left alone, and why
    waiting: tuple[str, ...] = ()  # sessions a turn's end left for more messages (not logged)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def distill(
    store: Store,
    related: Related,
    env: Mapping[str, str],
    *,
    session: str | None = None,
    force: bool = False,
    dry_run: bool = False,
    trigger: str = "",
    sweep: bool = False,
) -> DistillReport:
    """Distill one session (`session`), or every session with transcript left to distill.
    `trigger` (the hook event that started the run: an automatic run) leaves a failed span
    alone until its retry is due, and "stop" (a turn ended) waits for capture.min_messages
    new messages; `sweep` then takes the other sessions whose turn has come
    (gitmem.capture.sweep), up to capture.spans_per_run spans in all, instead of every
    waiting one; `force` starts again from the beginning of the archive; `dry_run` writes
    nothing and moves no watermark. `env` is the distiller's environment (PATH finds it)."""
    settings = capture_settings(store.root)
    if not settings.enabled:
        return DistillReport((), ("capture is off (capture.enabled = false in config.toml)",))
    cache = store.cache_dir
    states: list[queue.SessionQueue] = []
    if session is not None:
        found = queue.find(cache, session)
        if found is None:
            raise NotFound(
                f"no archived transcript for session {session} — the hooks archive one at "
                'Stop and SessionEnd; "gitmem status" lists the sessions waiting'
            )
        states = [found]
    elif not sweep:
        states = [s for s in queue.load_all(cache) if force or s.waiting(cache)]
    run = _Run(Keys(store), Seen(), {}, settings, related, env, force, dry_run, [], [], [])
    for state in states:
        _session(store, run, state, trigger, settings.spans_per_run, swept=False)
    if sweep:
        now = datetime.now(UTC)
        others = [s for s in queue.load_all(cache) if s.session != session]
        left = settings.spans_per_run
        for state in due(cache, others, settings, now):
            if left <= 0:
                run.notes.append("more sessions waiting for the next boundary")
                break
            left -= _session(store, run, state, "", left, swept=True)
    return DistillReport(tuple(run.spans), tuple(run.notes), tuple(run.waiting))


@dataclass
class _Run:
    """What one run shares across its spans and sessions, and what it has to say."""

    keys: Keys
    seen: Seen  # records to compare with: the related ones found, and those of this run
    replaced: dict[str, str]  # old id -> the id of the record of this run that replaced it
    settings: CaptureSettings
    related: Related
    env: Mapping[str, str]
    force: bool
    dry_run: bool
    spans: list[SpanReport]
    notes: list[str]  # sessions left alone, and why
    waiting: list[str]  # sessions an automatic run left to wait (DistillReport.waiting)


def _session(
    store: Store,
    run: _Run,
    state: queue.SessionQueue,
    trigger: str,
    limit: int,
    *,
    swept: bool,
) -> int:
    """Distil a session's spans first (up to `limit`), then write them, one commit each:
    every recall of the run then reads the index as it was (caught up once, not after each
    span's commit), and what this run wrote is compared with through `run.seen`. Returns how
    many spans were asked about. A `swept` session another run holds is passed over silently."""
    settings, notes, waiting = run.settings, run.notes, run.waiting
    cache = store.cache_dir
    with queue.held(cache, state) as mine:
        if not mine:
            if not swept:
                notes.append(f"{state.session}: another distillation of it is running")
            return 0
        state = queue.find(cache, state.session) or state  # as it is now that the lock is held
        if run.force and not swept:  # --force is for the sessions asked for, not the sweep's
            state = replace(state, offset=0, line=0, attempts=0, retry="")
        # Checked again under the lock: the sweep chose its sessions before it ran any, and
        # a run that failed meanwhile may have set a retry that is not due yet.
        if (trigger or swept) and not retry_due(state, datetime.now(UTC)):
            if not swept:
                waiting.append(
                    f"{state.session}: a failed span waits for its retry at {state.retry}"
                )
            return 0
        archive = state.archive_path(cache)
        if not archive.is_file():
            notes.append(f"{state.session}: its archive {state.archive} is gone")
            return 0
        planned: list[tuple[Span, SpanReport, list[Draft]]] = []
        failed: SpanReport | None = None
        offset, line = state.offset, state.line
        asked = 0
        for number in range(limit):
            span = read_span(
                archive,
                offset,
                line,
                max_chars=settings.span_chars,
                message_chars=settings.message_chars,
            )
            if span.last == line:
                break  # nothing new
            few = len(span.messages) < settings.min_messages
            if trigger == "stop" and number == 0 and span.complete and few:
                few_said = f"{len(span.messages)} new messages; waits for more"
                waiting.append(f"{state.session}: {few_said}")
                break
            asked += 1
            report, drafts = _plan(store, state, span, run)
            if report.problem:
                failed = report
                break
            planned.append((span, report, drafts))
            offset, line = span.end, span.last
            if run.dry_run:
                break
        if run.dry_run:
            run.spans.extend(report for _, report, _ in planned)
            if failed is not None:
                run.spans.append(failed)
            return asked
        for span, report, drafts in planned:
            report = _write(store, state, report, drafts, settings, run)
            run.spans.append(report)
            if report.problem:
                failed = None
                state = _failed(state, report, notes, settings)
                if state.attempts < MAX_ATTEMPTS:
                    queue.save(cache, replace(state, more=False))
                    return asked
                state = replace(state, attempts=0, retry="")  # skipped: go past it
            else:  # resolved: the failures before it are no longer news
                state = replace(state, attempts=0, retry="", failures=())
            state = replace(
                state,
                offset=span.end,
                line=span.last,
                spans=state.spans + (1 if report.commit else 0),
                records=state.records + (len(report.written) if report.commit else 0),
            )
            queue.save(cache, state)
        if failed is not None:
            run.spans.append(failed)
            state = _failed(state, failed, notes, settings)
            if state.attempts >= MAX_ATTEMPTS:  # skipped: the watermark goes past it
                end = read_span(
                    archive,
                    state.offset,
                    state.line,
                    max_chars=settings.span_chars,
                    message_chars=settings.message_chars,
                )
                state = replace(state, offset=end.end, line=end.last, attempts=0, retry="")
            queue.save(cache, replace(state, more=False))
        else:
            more = len(planned) == limit and state.waiting(cache) > 0
            if more:
                notes.append(f"{state.session}: more left for the next run")
            if more != state.more:
                queue.save(cache, replace(state, more=more))
        return asked


def _failed(
    state: queue.SessionQueue, report: SpanReport, notes: list[str], settings: CaptureSettings
) -> queue.SessionQueue:
    """The state with the span's failure noted and its next automatic try set: after
    capture.retry_after, doubled for each earlier failure of the span. No distiller on PATH
    does not count toward MAX_ATTEMPTS: the span was never tried."""
    counts = not report.no_distiller
    wait = settings.retry_after * 2 ** (state.attempts if counts else 0)
    retry = (datetime.now(UTC) + timedelta(seconds=wait)).strftime("%Y-%m-%dT%H:%M:%SZ")
    state = state.failed(
        queue.Failure(_now(), report.lines, report.problem), counts=counts, retry=retry
    )
    if state.attempts >= MAX_ATTEMPTS:
        notes.append(
            f"{state.session}: lines {report.lines} skipped after {state.attempts} failures"
        )
    return state


def _query(span: Span) -> str:
    said = [m.text for m in span.messages if m.role == "user"] or [m.text for m in span.messages]
    return " ".join(" ".join(said).split())[:1000]


def _plan(
    store: Store, state: queue.SessionQueue, span: Span, run: _Run
) -> tuple[SpanReport, list[Draft]]:
    """Ask the distiller about one span: the report (titles as `written`) and the drafts."""
    lines = f"{span.first}-{span.last}"
    source = f"transcript:{state.session}#{lines}"
    base = SpanReport(state.session, lines, source)
    if not span.messages:
        why = f"{span.unreadable} lines not JSON" if span.unreadable else "no messages"
        return replace(base, dropped=(f"nothing to distill ({why})",)), []
    settings, related, env = run.settings, run.related, run.env
    command, why = distiller_command(settings.command, state.host, env)
    if why:  # before the recall: a missing distiller costs the run nothing
        return replace(base, problem=why, no_distiller=True), []
    existing = found(store, related, _query(span), settings.related)
    prompt = build_prompt(
        prompt_text(store.root, settings.prompt), store.schemas, existing, span.messages
    )
    parsed = None
    for attempt in (prompt, None):
        ran = run_distiller(
            command,
            attempt or retry_prompt(prompt, parsed.problems if parsed else ()),
            env,
            settings.timeout,
        )
        if ran.problem:
            return replace(base, problem=ran.problem), []
        parsed = parse_answer(
            ran.output, store, cap=settings.max_records, source=source, scope=settings.scope
        )
        if not parsed.problems:
            break
    assert parsed is not None
    if parsed.problems:
        shown = "; ".join(parsed.problems[:3])
        return replace(base, problem=f"the answer was refused twice: {shown}"), []
    for record in existing:
        run.seen.add_record(record)
    drafts, duplicates, dropped = screen(
        store, parsed.drafts, related, run.seen, run.keys, settings.secrets
    )
    if parsed.dropped:
        dropped = (*dropped, f"{parsed.dropped} records past the cap of {settings.max_records}")
    superseded = tuple(d.supersedes for d in drafts if d.supersedes)
    titles = tuple(d.title for d in drafts)
    report = replace(
        base, written=titles, superseded=superseded, duplicates=duplicates, dropped=dropped
    )
    return report, drafts


def _write(
    store: Store,
    state: queue.SessionQueue,
    report: SpanReport,
    drafts: list[Draft],
    settings: CaptureSettings,
    run: _Run,
) -> SpanReport:
    """One span's drafts as one commit (a record an earlier span of this run replaced is
    superseded in its new form)."""
    if not drafts:
        return replace(report, written=())
    drafts = [replace(d, supersedes=run.replaced.get(d.supersedes, d.supersedes)) for d in drafts]
    count = len(drafts)
    subject = (
        f"capture: {count} record{'s' if count != 1 else ''} from session {state.session[:12]}"
    )
    try:
        result = store.write_batch(
            drafts,
            subject=subject,
            agent=state.host or "capture",
            trailers={"Gitmem-Source": report.source},
            secrets="redact" if settings.secrets == "redact" else "refuse",
        )
    except GitmemError as exc:
        return replace(report, written=(), problem=f"the write was refused: {exc}")
    for record in result.records:
        run.keys.taken(record.type, run.keys.key_of(record.type, record.extra), record)
        for old in record.supersedes:
            run.replaced[old] = record.id
    return replace(
        report,
        written=tuple(r.id for r in result.records),
        superseded=tuple(d.supersedes for d in drafts if d.supersedes),
        commit=result.commit,
    )
