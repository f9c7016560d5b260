"""Reading the moments users type: ISO dates and datetimes, and relative times.

Accepted: `2026-04-01` (midnight UTC), `2026-04-01T09:30`, `2026-04-01T09:30:00+02:00`,
`...Z`; `now`, `today`, `yesterday`; `3 days ago`, `2 weeks ago`, `5h ago`; `7d`, `2w`, `12h`
(meaning that long ago). A datetime without a zone is UTC.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from gitmem.errors import UsageError

__all__ = ["ACCEPTED", "AS_OF_ACCEPTED", "end_of_day", "parse_duration", "parse_moment"]

ACCEPTED = (
    "an ISO date or datetime (2026-04-01, 2026-04-01T09:30Z, 2026-04-01T09:30+02:00; "
    'UTC when no zone is given), "now", "today", "yesterday", "N days ago" '
    "(minutes, hours, days, weeks, months, years), or a span like 7d, 12h, 2w"
)
# What --as-of and `gitmem diff` take besides a moment (docs/time-travel.md).
AS_OF_ACCEPTED = (
    ACCEPTED.replace(
        "UTC when no zone is given",
        "UTC when no zone is given; a bare date means the end of that day",
    )
    + ", or a commit id or ref (a1b2c3d, HEAD~3, main)"
)
_UNITS = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
    "w": 604800,
    "week": 604800,
    "month": 2592000,
    "y": 31536000,
    "year": 31536000,
}
_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([a-z]+?)s?(?:\s+ago)?$")


def parse_duration(text: str) -> timedelta:
    """`7d`, `12h`, `2 weeks`, `90` (days). Raises UsageError."""
    value = text.strip().lower()
    if re.fullmatch(r"\d+(?:\.\d+)?", value):
        return timedelta(days=float(value))
    match = _RELATIVE.match(value)
    if match is None or match.group(2) not in _UNITS:
        raise UsageError(f'"{text}" is not a duration; use e.g. 90d, 12h, 2w or 30 (days)')
    try:
        return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])
    except OverflowError:
        raise UsageError(f'"{text}" is too long a duration; use e.g. 90d, 12h or 2w') from None


def parse_moment(text: str, now: datetime | None = None) -> datetime:
    """A point in time, UTC, to the second. Raises UsageError listing the accepted forms."""
    current = (now or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    value = text.strip()
    lowered = value.lower()
    if lowered == "now":
        return current
    if lowered in ("today", "yesterday"):
        day = current.replace(hour=0, minute=0, second=0)
        return day - timedelta(days=1) if lowered == "yesterday" else day
    match = _RELATIVE.match(lowered)
    if match and match.group(2) in _UNITS:
        try:
            return current - timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])
        except OverflowError:  # before the year 1: no memory is that old
            raise UsageError(f'"{text}" reaches back before the year 1; use {ACCEPTED}') from None
    try:
        iso = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
        moment = datetime.fromisoformat(iso)
    except ValueError:
        raise UsageError(f'"{text}" is not a time gitmem understands; use {ACCEPTED}') from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).replace(microsecond=0)


def end_of_day(text: str) -> bool:
    """Whether `text` is a bare date in any ISO form (2026-04-01, 20260401, 2026-W14-3), which
    --as-of reads as the end of that day: "what did we know as of April 1" includes what was
    written on April 1."""
    try:
        date.fromisoformat(text.strip())
    except ValueError:
        return False
    return True
