"""The consolidation pass's thresholds: the `[sleep]` table of the store's config.toml.

Read here rather than in gitmem.store.config because only `gitmem sleep`, `proposals`, `decide`
and `feedback` use them; every value is optional and checked, and a bad one is refused with the
key it came from.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from gitmem.errors import UsageError

__all__ = ["SleepSettings", "load_settings"]


@dataclass(frozen=True)
class SleepSettings:
    duplicate_jaccard: float = 0.6  # word-set Jaccard at or above which two records are duplicates
    duplicate_cosine: float = 0.92  # embedding cosine at or above which they are (with a model)
    subject_jaccard: float = 0.6  # title Jaccard at or above which two records share a subject
    link_cosine: float = 0.8  # close in meaning, not duplicates: a link is proposed
    stale_days: float = 180.0  # not updated for this long ...
    stale_weight: float = 0.5  # ... weighing this or less, never recalled: archive is proposed
    co_recall_links: int = 3  # recalled together this often: linked unattended
    recall_settle: int = 5  # recalled this often with weight < 1: weight settled to 1 unattended
    max_actions: int = 20  # unattended commits per run
    max_proposals: int = 50  # new proposals per run
    max_pairs: int = 20_000  # alike pairs one word join keeps before it stops early ...
    max_comparisons: int = 5_000_000  # ... or candidate pairs it scores (a templated store)
    feedback_step: float = 1.25  # --useful multiplies the weight by this, --not-useful divides
    weight_floor: float = 0.25  # feedback and demotion never go below ...
    weight_ceiling: float = 4.0  # ... or above these (recall's weight factor clamps there too)


def load_settings(root: Path) -> SleepSettings:
    path = root / "config.toml"
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8")).get("sleep", {})
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return SleepSettings()  # the store's own open already reported a broken config
    if not isinstance(raw, dict):
        raise UsageError(f"{path}: [sleep] must be a table; fix the file")
    values: dict[str, float | int] = {}
    for spec in fields(SleepSettings):
        if spec.name not in raw:
            continue
        value = raw[spec.name]
        wanted = int if spec.type == "int" else float
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise UsageError(
                f"{path}: sleep.{spec.name} must be a number of zero or more, got {value!r}; "
                "fix the file (docs/consolidation.md lists the settings)"
            )
        values[spec.name] = wanted(value)
    unknown = sorted(set(raw) - {spec.name for spec in fields(SleepSettings)})
    if unknown:
        raise UsageError(
            f"{path}: unknown sleep setting {', '.join(unknown)}; "
            "docs/consolidation.md lists the settings"
        )
    return SleepSettings(**values)  # type: ignore[arg-type]
