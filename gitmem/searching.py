"""Turning what a caller typed (CLI flags, a JSONL batch line, MCP arguments) into recall
Options, and a recall Result into its documented JSON form."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from gitmem.catalog import Filter
from gitmem.errors import UsageError
from gitmem.recall import DEFAULTS, Options, Result
from gitmem.record import format_time
from gitmem.timeparse import parse_duration, parse_moment

__all__ = ["recall_options", "result_json"]

_MODES = ("hybrid", "keyword", "semantic")
_FUSIONS = ("rrf", "linear")


def _texts(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return tuple(str(v) for v in value)


def _moment(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    if isinstance(value, datetime):
        return value
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    return parse_moment(str(value))


def recall_options(args: Mapping[str, Any], env: Mapping[str, str]) -> Options:
    """Options from loosely typed arguments; GITMEM_DECAY_WINDOW sets the half-life."""
    mode = str(args.get("mode") or DEFAULTS.mode)
    if mode not in _MODES:
        raise UsageError(f'mode must be one of {", ".join(_MODES)}, not "{mode}"')
    fusion = str(args.get("fusion") or DEFAULTS.fusion)
    if fusion not in _FUSIONS:
        raise UsageError(f'fusion must be rrf or linear, not "{fusion}"')
    try:
        limit = int(args.get("limit") or DEFAULTS.limit)
    except (TypeError, ValueError):
        raise UsageError(f"limit must be a whole number, not {args.get('limit')!r}") from None
    if not 1 <= limit <= 1000:
        raise UsageError("limit must be between 1 and 1000")
    half_life = DEFAULTS.half_life_days
    window = env.get("GITMEM_DECAY_WINDOW", "").strip().lower()
    if window in ("0", "off", "none"):
        half_life = 0.0
    elif window:
        half_life = parse_duration(window).total_seconds() / 86400
    since, until = _moment(args.get("since")), _moment(args.get("until"))
    flt = Filter(
        types=_texts(args.get("type")),
        tags=_texts(args.get("tag")),
        agent=str(args.get("agent") or ""),
        scope=str(args.get("scope") or ""),
        since=None if since is None else int(since.timestamp()),
        until=None if until is None else int(until.timestamp()),
        include_superseded=bool(args.get("include_superseded")),
    )
    return replace(
        DEFAULTS,
        mode=mode,  # type: ignore[arg-type]
        fusion=fusion,  # type: ignore[arg-type]
        limit=limit,
        filter=flt,
        half_life_days=half_life,
        now=_moment(args.get("now")),
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
                "score": round(h.score, 8),
                "keyword_rank": h.keyword_rank,
                "semantic_rank": h.semantic_rank,
                "fused": round(h.fused, 8),
                "decay": round(h.decay, 6),
                "weight": round(h.weight, 6),
            }
            for h in result.hits
        ],
        "notices": list(result.notices),
    }
