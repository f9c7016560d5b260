#!/usr/bin/env python3
"""Validate a retrieval dataset: records.jsonl + queries.jsonl in one directory.

    python3 benchmarks/retrieval/check_dataset.py [DIR] [--format-only] [--default-now TS]

DIR defaults to benchmarks/retrieval/coding-agent. Without --format-only the quotas of the
coding-agent dataset are enforced too (>= 320 records, >= 25 queries per category, bodies of
2-15 lines, the six built-in record types, id = slug + '-' + 6 characters). Exits 0 when the
files are valid, 1 with one line per problem otherwise. Stdlib only.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RECORD_KEYS = frozenset(
    {
        "id",
        "type",
        "title",
        "abstract",
        "body",
        "tags",
        "agent",
        "scope",
        "source",
        "created",
        "updated",
        "weight",
        "links",
        "supersedes",
        "superseded_by",
        "status",
    }
)
QUERY_KEYS = frozenset({"id", "query", "category", "gold"})
QUERY_OPTIONAL = frozenset({"now"})
TYPES = ("decision", "pattern", "context", "fact", "preference", "procedure", "lesson", "reference")
CATEGORIES = ("exact-id", "paraphrase", "temporal", "current", "multi", "old-fact")
SCOPES = ("shared", "agent", "private")
STATUSES = ("active", "superseded")
ID_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
STRICT_ID_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*-[0-9a-z]{6}$")
TYPE_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
QUERY_ID_RE = re.compile(r"^q[0-9]{3,}$")
TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
ABSTRACT_MAX = 240
MIN_RECORDS = 320
MIN_PER_CATEGORY = 25
DEFAULT_NOW = "2026-10-01T00:00:00Z"


class Problems:
    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.items.append(f"{where}: {message}")


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not TIME_RE.match(value):
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def read_jsonl(path: Path, problems: Problems) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if not path.is_file():
        problems.add(str(path), "missing")
        return rows
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                problems.add(f"{path.name}:{n}", "blank line")
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.add(f"{path.name}:{n}", f"not JSON ({exc.msg})")
                continue
            if not isinstance(row, dict):
                problems.add(f"{path.name}:{n}", "not a JSON object")
                continue
            row["_line"] = n
            rows.append(row)
    return rows


def is_text(value: Any, single_line: bool = True) -> bool:
    return isinstance(value, str) and (not single_line or ("\n" not in value and "\r" not in value))


def check_records(rows: list[dict[str, Any]], strict: bool, problems: Problems) -> dict[str, dict]:
    by_id: dict[str, dict[str, Any]] = {}
    for row in rows:
        where = f"records.jsonl:{row['_line']}"
        keys = set(row) - {"_line"}
        if keys != RECORD_KEYS:
            missing, extra = sorted(RECORD_KEYS - keys), sorted(keys - RECORD_KEYS)
            problems.add(where, f"keys differ (missing {missing}, unexpected {extra})")
        rid = row.get("id")
        if not isinstance(rid, str) or not ID_RE.match(rid) or len(rid) > 80:
            problems.add(where, f"id {rid!r} is not a lower-case slug of at most 80 characters")
            continue
        where = f"record {rid}"
        if strict and not STRICT_ID_RE.match(rid):
            problems.add(where, "id must be slug + '-' + 6 characters of [0-9a-z]")
        if rid in by_id:
            problems.add(where, "duplicate id")
            continue
        by_id[rid] = row

        type_ = row.get("type")
        if strict and type_ not in TYPES:
            problems.add(where, f"type {type_!r} is not one of {', '.join(TYPES)}")
        elif not isinstance(type_, str) or not TYPE_RE.match(type_):
            problems.add(where, f"type {type_!r} is not a lower-case word")
        if not is_text(row.get("title")) or not str(row.get("title")).strip():
            problems.add(where, "title must be non-empty single-line text")
        abstract = row.get("abstract")
        if not is_text(abstract):
            problems.add(where, "abstract must be single-line text")
        elif len(abstract) > ABSTRACT_MAX:
            problems.add(where, f"abstract has {len(abstract)} characters (max {ABSTRACT_MAX})")
        body = row.get("body")
        if not is_text(body, single_line=False) or not body.strip():
            problems.add(where, "body must be non-empty text")
        elif strict and not 2 <= len(body.splitlines()) <= 15:
            problems.add(where, f"body has {len(body.splitlines())} lines (want 2-15)")
        tags = row.get("tags")
        if not isinstance(tags, list) or not all(
            is_text(t) and t.strip() and "," not in t for t in tags
        ):
            problems.add(where, "tags must be a list of non-empty words without commas")
        for key in ("agent", "source"):
            if not is_text(row.get(key)):
                problems.add(where, f"{key} must be single-line text")
        scope = row.get("scope")
        if scope not in (("shared",) if strict else SCOPES):
            problems.add(where, f"scope {scope!r} is not allowed")
        created, updated = parse_time(row.get("created")), parse_time(row.get("updated"))
        if created is None:
            problems.add(where, f"created {row.get('created')!r} is not YYYY-MM-DDTHH:MM:SSZ")
        if updated is None:
            problems.add(where, f"updated {row.get('updated')!r} is not YYYY-MM-DDTHH:MM:SSZ")
        if created and updated and updated < created:
            problems.add(where, "updated is earlier than created")
        weight = row.get("weight")
        if (
            isinstance(weight, bool)
            or not isinstance(weight, int | float)
            or not math.isfinite(weight)
            or not 0 <= weight <= 10
        ):
            problems.add(where, f"weight {weight!r} is not a number in 0..10")
        for key in ("links", "supersedes"):
            value = row.get(key)
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                problems.add(where, f"{key} must be a list of ids")
                row[key] = []
        if not isinstance(row.get("superseded_by"), str):
            problems.add(where, "superseded_by must be an id or ''")
            row["superseded_by"] = ""
        if row.get("status") not in STATUSES:
            problems.add(where, f"status {row.get('status')!r} is not one of {STATUSES}")

    for rid, row in by_id.items():
        where = f"record {rid}"
        for link in row["links"]:
            if link == rid:
                problems.add(where, "links to itself")
            elif link not in by_id:
                problems.add(where, f"link to unknown id {link}")
        if len(set(row["supersedes"])) != len(row["supersedes"]):
            problems.add(where, "supersedes lists an id twice")
        for old_id in row["supersedes"]:
            old = by_id.get(old_id)
            if old is None:
                problems.add(where, f"supersedes unknown id {old_id}")
                continue
            if old.get("superseded_by") != rid:
                problems.add(where, f"supersedes {old_id}, whose superseded_by is not {rid}")
            if old.get("status") != "superseded":
                problems.add(where, f"supersedes {old_id}, which is not status superseded")
            a, b = parse_time(old.get("created")), parse_time(row.get("created"))
            if a and b and b < a:
                problems.add(where, f"is older than {old_id}, which it supersedes")
        successor = row["superseded_by"]
        if (row.get("status") == "superseded") != bool(successor):
            problems.add(where, "status superseded and a non-empty superseded_by go together")
        if successor:
            new = by_id.get(successor)
            if new is None:
                problems.add(where, f"superseded_by unknown id {successor}")
            elif rid not in new["supersedes"]:
                problems.add(where, f"superseded_by {successor}, which does not list it")
        seen = {rid}
        nxt = successor
        while nxt and nxt in by_id:
            if nxt in seen:
                problems.add(where, "superseded_by chain has a cycle")
                break
            seen.add(nxt)
            nxt = by_id[nxt]["superseded_by"]
    if strict and len(by_id) < MIN_RECORDS:
        problems.add("records.jsonl", f"{len(by_id)} records, want at least {MIN_RECORDS}")
    return by_id


def check_queries(
    rows: list[dict[str, Any]],
    by_id: dict[str, dict],
    strict: bool,
    default_now: datetime,
    problems: Problems,
) -> Counter[str]:
    seen: set[str] = set()
    categories: Counter[str] = Counter()
    for row in rows:
        where = f"queries.jsonl:{row['_line']}"
        keys = set(row) - {"_line"}
        if not keys >= QUERY_KEYS or keys - QUERY_KEYS - QUERY_OPTIONAL:
            missing = sorted(QUERY_KEYS - keys)
            extra = sorted(keys - QUERY_KEYS - QUERY_OPTIONAL)
            problems.add(where, f"keys differ (missing {missing}, unexpected {extra})")
        qid = row.get("id")
        if not isinstance(qid, str) or not qid or (strict and not QUERY_ID_RE.match(qid)):
            problems.add(where, f"query id {qid!r} is not valid")
        elif qid in seen:
            problems.add(where, f"duplicate query id {qid}")
        else:
            seen.add(qid)
            where = f"query {qid}"
        if not is_text(row.get("query")) or not str(row.get("query")).strip():
            problems.add(where, "query must be non-empty single-line text")
        category = row.get("category")
        if category not in CATEGORIES:
            problems.add(where, f"category {category!r} is not one of {', '.join(CATEGORIES)}")
        else:
            categories[category] += 1
        now = default_now
        if "now" in row:
            parsed = parse_time(row["now"])
            if parsed is None:
                problems.add(where, f"now {row['now']!r} is not YYYY-MM-DDTHH:MM:SSZ")
            else:
                now = parsed
        elif category in ("temporal", "old-fact"):
            problems.add(where, f"{category} queries need a now")
        gold = row.get("gold")
        if not isinstance(gold, list) or not gold or not all(isinstance(g, str) for g in gold):
            problems.add(where, "gold must be a non-empty list of record ids")
            continue
        if len(set(gold)) != len(gold):
            problems.add(where, "gold lists an id twice")
        if category == "multi" and len(set(gold)) < 2:
            problems.add(where, "multi queries need at least two gold records")
        for gid in gold:
            rec = by_id.get(gid)
            if rec is None:
                problems.add(where, f"gold id {gid} is not in records.jsonl")
                continue
            created = parse_time(rec.get("created"))
            if created and created > now:
                problems.add(where, f"gold {gid} is created after the query's now")
            if category == "current" and rec.get("status") != "active":
                problems.add(where, f"current query has superseded gold {gid}")
    if strict:
        for category in CATEGORIES:
            if categories[category] < MIN_PER_CATEGORY:
                problems.add(
                    "queries.jsonl",
                    f"{categories[category]} {category} queries, want at least {MIN_PER_CATEGORY}",
                )
    return categories


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", nargs="?", type=Path, default=HERE / "coding-agent")
    parser.add_argument(
        "--format-only",
        action="store_true",
        help="check the generic format only, not the coding-agent quotas",
    )
    parser.add_argument(
        "--default-now",
        default=DEFAULT_NOW,
        help=f"now for queries without one (default {DEFAULT_NOW})",
    )
    args = parser.parse_args(argv)
    default_now = parse_time(args.default_now)
    if default_now is None:
        parser.error("--default-now must look like 2026-10-01T00:00:00Z")
    strict = not args.format_only
    problems = Problems()
    records = read_jsonl(args.directory / "records.jsonl", problems)
    queries = read_jsonl(args.directory / "queries.jsonl", problems)
    by_id = check_records(records, strict, problems)
    categories = check_queries(queries, by_id, strict, default_now, problems)
    if problems.items:
        for item in problems.items[:200]:
            print(f"check_dataset: {item}", file=sys.stderr)
        if len(problems.items) > 200:
            print(f"check_dataset: ... and {len(problems.items) - 200} more", file=sys.stderr)
        print(f"check_dataset: FAILED with {len(problems.items)} problem(s)", file=sys.stderr)
        return 1
    per_category = ", ".join(f"{c} {categories[c]}" for c in CATEGORIES)
    print(f"check_dataset: OK: {len(by_id)} records, {len(queries)} queries ({per_category})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
