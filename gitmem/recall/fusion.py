"""Fusing the keyword and the semantic candidates of a recall into one score each.

Methods:
- "rrf": reciprocal-rank fusion, sum of w / (k + rank) with k = 60;
- "linear": each half's scores scaled to [0, 1], then a weighted sum.
A query that names an identifier (PAY-1423, a path) gives the semantic half a smaller share:
there keywords know best.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["RRF_K", "Fusion", "Mode", "Scaling", "fuse", "has_identifier"]

Mode = Literal["hybrid", "keyword", "semantic"]
Fusion = Literal["rrf", "linear"]
Scaling = Literal["minmax", "max", "ceiling"]
RRF_K = 60

_IDENTIFIER = re.compile(
    r"[A-Za-z]+[-_][A-Za-z0-9_-]*\d|\d+[-_][A-Za-z]"  # PAY-1423, E_11000, v2-beta
    r"|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b"  # DATABASE_URL
    r"|\w+/[\w./-]+|\w+\.(?:go|py|ts|tsx|js|rs|md|yaml|yml|toml|json|sql|tf)\b"  # paths
    r"|\b[0-9a-f]{7,40}\b|\bv?\d+\.\d+(?:\.\d+)?\b"  # hashes, versions
    r"|\b[a-z]+[A-Z]\w*\b|\b(?=\w*\d)(?=\w*[A-Za-z])\w{4,}\b"  # camelCase, E11000, 42P05
)


def has_identifier(query: str) -> bool:
    """Whether the query names something exact, where keywords know best."""
    return _IDENTIFIER.search(query) is not None


def fuse(
    query: str,
    keyword: list[tuple[str, float]],
    semantic: list[tuple[str, float]],
    mode: Mode,
    *,
    fusion: Fusion,
    scaling: Scaling,
    semantic_weight: float,
    identifier_weight: float,
) -> dict[str, float]:
    """id -> fused score of the candidates of either half. The weights are the semantic half's
    share in a hybrid recall (the keyword half has the rest), for a query in plain words and
    for one that names an identifier."""
    # Keyword scores already divided by the ceiling are absolute: leave them as they are.
    k_scale: Scaling | None = None if scaling == "ceiling" else scaling
    s_scale: Scaling = "max" if scaling == "ceiling" else scaling
    if mode == "keyword":
        return _normalised(keyword, k_scale) if fusion == "linear" else _rrf(keyword, 1.0)
    if mode == "semantic":
        return _normalised(semantic, s_scale) if fusion == "linear" else _rrf(semantic, 1.0)
    w = identifier_weight if has_identifier(query) else semantic_weight
    out: dict[str, float] = {}
    if fusion == "rrf":
        parts = [_rrf(keyword, 1.0 - w), _rrf(semantic, w)]
    else:
        parts = [
            {k: v * (1.0 - w) for k, v in _normalised(keyword, k_scale).items()},
            {k: v * w for k, v in _normalised(semantic, s_scale).items()},
        ]
    for part in parts:
        for rid, score in part.items():
            out[rid] = out.get(rid, 0.0) + score
    return out


def _rrf(ranked: list[tuple[str, float]], weight: float) -> dict[str, float]:
    return {rid: weight / (RRF_K + rank) for rank, (rid, _) in enumerate(ranked, start=1)}


def _normalised(ranked: list[tuple[str, float]], scaling: Scaling | None) -> dict[str, float]:
    """Scores to [0, 1]; the best maps to 1 (a list of equal scores maps to 1). None: the
    scores are already on an absolute scale."""
    if not ranked:
        return {}
    if scaling is None:
        return dict(ranked)
    scores = [s for _, s in ranked]
    low = min(scores) if scaling == "minmax" else 0.0
    high = max(scores)
    if scaling == "max":
        scores = [max(s, 0.0) for s in scores]
        ranked = [(rid, max(s, 0.0)) for rid, s in ranked]
    span = high - low
    return {rid: (1.0 if span <= 0 else (s - low) / span) for rid, s in ranked}
