"""Turning what a caller typed (CLI flags, a JSONL batch line, MCP arguments) into recall
Options, and a recall Result into its documented JSON form."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from gitmem.errors import UsageError
from gitmem.index.entries import Filter
from gitmem.recall.recall import DEFAULTS, Options, Result
from gitmem.recall.timeparse import end_of_day, parse_duration, parse_moment
from gitmem.store.record import SCOPES, format_time

__all__ = [
    "FIELDS",
    "RecordTypes",
    "check_span",
    "check_types",
    "recall_options",
    "result_json",
]

_MODES = ("hybrid", "keyword", "semantic")
_FUSIONS = ("rrf", "linear")
# What a recall takes, by the names of a --batch line's fields and of recall_options' keys.
FIELDS = (
    "query", "mode", "limit", "type", "tag", "agent", "scope", "since", "until",
    "include_superseded", "now", "fusion",
)  # fmt: skip
_DAY = timedelta(days=1)


def _texts(name: str, value: Any) -> tuple[str, ...]:
    """Names given as "a,b" or as a list of names."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return tuple(v.strip() for each in value for v in each.split(",") if v.strip())
    raise UsageError(f"{name} must be a name or a list of names, not {value!r}")


def _text(name: str, value: Any) -> str:
    if value is None or isinstance(value, str):
        return (value or "").strip()
    raise UsageError(f"{name} must be text, not {value!r}")


def _choice(name: str, value: Any, allowed: tuple[str, ...], default: str) -> str:
    chosen = _text(name, value) or default
    if chosen not in allowed:
        raise UsageError(f'{name} must be one of {", ".join(allowed)}, not "{chosen}"')
    return chosen


def _limit(value: Any) -> int:
    if value is None:
        return DEFAULTS.limit
    whole_float = isinstance(value, float) and value.is_integer()  # JSON writers' 5.0
    if whole_float or (isinstance(value, str) and value.strip().isdigit()):
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise UsageError(f"limit must be a whole number from 1 to 1000, not {value!r}")
    if not 1 <= value <= 1000:
        raise UsageError(f"limit must be between 1 and 1000, not {value}")
    return value


def _flag(name: str, value: Any) -> bool:
    if value is None or isinstance(value, bool):
        return bool(value)
    raise UsageError(f"{name} must be true or false, not {value!r}")


def _moment(name: str, value: Any, *, end_of: bool = False) -> datetime | None:
    """A time as the CLI takes it, a datetime or a Unix time; with `end_of`, a bare date
    (or today, yesterday) is the end of that day, so that "until April 1" includes it."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC)
    if not isinstance(value, str):
        raise UsageError(f"{name} must be a time, not {value!r}")
    moment = parse_moment(value)
    whole_day = end_of_day(value) or value.strip().lower() in ("today", "yesterday")
    return moment + _DAY - timedelta(seconds=1) if end_of and whole_day else moment


def _half_life(env: Mapping[str, str]) -> float:
    raw = env.get("GITMEM_DECAY_WINDOW", "")
    window = raw.strip().lower()
    if window in ("0", "off", "none"):
        return 0.0
    if not window:
        return DEFAULTS.half_life_days
    try:
        return parse_duration(window).total_seconds() / 86400
    except UsageError as exc:
        raise UsageError(f"GITMEM_DECAY_WINDOW={raw!r}: {exc}; or off for no decay") from None


class RecordTypes(Collection[str]):
    """A store's record types: its schemas' (what a message lists) and any other that a
    record in the index has (its schema removed since), asked only about such a name."""

    def __init__(self, schemas: Collection[str], indexed: Callable[[str], bool]) -> None:
        self._schemas, self._indexed = sorted(schemas), indexed

    def __contains__(self, name: object) -> bool:
        return name in self._schemas or (isinstance(name, str) and self._indexed(name))

    def __iter__(self) -> Iterator[str]:
        return iter(self._schemas)

    def __len__(self) -> int:
        return len(self._schemas)


def check_types(wanted: Collection[str], types: Collection[str]) -> None:
    """Refuse a record type that is not among `types` (a RecordTypes: no schema and no
    record has it): it would match nothing, silently."""
    strange = [t for t in wanted if t not in types]
    if strange:
        raise UsageError(
            f"no record type {', '.join(strange)} in this store; its types are "
            f"{', '.join(sorted(types))}"
        )


def check_span(flt: Filter) -> None:
    """Refuse a `since` after the `until`: it would match nothing, silently."""
    if flt.since is not None and flt.until is not None and flt.since > flt.until:
        since, until = (datetime.fromtimestamp(t, UTC) for t in (flt.since, flt.until))
        raise UsageError(
            f"since ({format_time(since)}) is after until ({format_time(until)}): nothing "
            "could match; swap them"
        )


def recall_options(
    args: Mapping[str, Any],
    env: Mapping[str, str],
    *,
    types: Collection[str] | None = None,
) -> Options:
    """Options from loosely typed arguments (CLI flags, a --batch line, MCP arguments), each
    checked: a value of the wrong kind is refused, not read as a default. `types`: the
    store's record types (RecordTypes), which `type` must name; GITMEM_DECAY_WINDOW sets the
    half-life."""
    unknown = sorted(set(args) - set(FIELDS))
    if unknown:
        raise UsageError(f"unknown field {', '.join(unknown)}; a recall takes {', '.join(FIELDS)}")
    wanted = _texts("type", args.get("type"))
    if types is not None:
        check_types(wanted, types)
    scope = _text("scope", args.get("scope"))
    if scope and scope not in SCOPES:
        raise UsageError(f'scope must be one of {", ".join(SCOPES)}, not "{scope}"')
    since = _moment("since", args.get("since"))
    until = _moment("until", args.get("until"), end_of=True)
    flt = Filter(
        types=wanted,
        tags=_texts("tag", args.get("tag")),
        agent=_text("agent", args.get("agent")),
        scope=scope,
        since=None if since is None else int(since.timestamp()),
        until=None if until is None else int(until.timestamp()),
        include_superseded=_flag("include_superseded", args.get("include_superseded")),
    )
    check_span(flt)
    return replace(
        DEFAULTS,
        mode=_choice("mode", args.get("mode"), _MODES, DEFAULTS.mode),  # type: ignore[arg-type]
        fusion=_choice("fusion", args.get("fusion"), _FUSIONS, DEFAULTS.fusion),  # type: ignore[arg-type]
        limit=_limit(args.get("limit")),
        filter=flt,
        half_life_days=_half_life(env),
        now=_moment("now", args.get("now")),
    )


def result_json(query: str, result: Result) -> dict[str, Any]:
    return {
        "query": query,
        "mode": result.mode,
        "hits": [
            {
                "id": h.id,
                "type": h.type,
                "title": h.title,
                "abstract": h.abstract,
                "path": h.path,
                "created": format_time(datetime.fromtimestamp(h.created, UTC)),
                "updated": format_time(datetime.fromtimestamp(h.updated, UTC)),
                "status": h.status,
                "score": round(h.score, 8),
                "keyword_rank": h.keyword_rank,
                "semantic_rank": h.semantic_rank,
                "keyword_score": None if h.keyword is None else round(h.keyword, 8),
                "context_score": None if h.context is None else round(h.context, 8),
                "prior": round(h.prior, 8),
                "fused": round(h.fused, 8),
                "decay": round(h.decay, 6),
                "weight": round(h.weight, 6),
            }
            for h in result.hits
        ],
        "notices": list(result.notices),
    }
