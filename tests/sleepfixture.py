# ruff: noqa: E501  (planted texts: one sentence a line reads better than split strings)
"""A store with planted consolidation truth: exact and paraphrased duplicates, contradictions,
stale records, and clean records that `gitmem sleep` must leave alone. Test scaffolding."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from gitmem.store.store import Store

__all__ = ["NOW", "Planted", "Score", "plant", "score"]

NOW = datetime.now(UTC).replace(microsecond=0)  # the CLI runs at the real time

EXACT = [
    (
        "fact",
        "Staging database port",
        "The staging database runs PostgreSQL 15 on port 5433 behind pgbouncer.",
    ),
    (
        "procedure",
        "Release checklist",
        "Tag the release, build the wheel, upload it to PyPI, then announce it in the channel.",
    ),
    (
        "lesson",
        "Flaky clock tests",
        "Tests that read the wall clock fail around midnight; inject the time instead.",
    ),
    (
        "preference",
        "Commit message style",
        "Commit subjects are imperative, under 72 characters, and explain why in the body.",
    ),
    (
        "reference",
        "Billing API docs",
        "The billing service API is documented in the internal wiki under payments/billing-v2.",
    ),
]
PARAPHRASED = [
    (
        "fact",
        (
            "Cache directory location",
            "Build artifacts are cached in .cache/build at the repository root; delete it to force a clean build.",
        ),
        (
            "Where the build cache lives",
            "At the repository root, .cache/build holds the cached build artifacts; to force a clean build, delete it.",
        ),
    ),
    (
        "lesson",
        (
            "Retry webhooks with backoff",
            "Webhook deliveries to the partner endpoint fail under load, so retry them with exponential backoff and jitter.",
        ),
        (
            "Webhook retries need backoff",
            "Under load the partner endpoint fails webhook deliveries; retry them using exponential backoff plus jitter.",
        ),
    ),
    (
        "procedure",
        (
            "Rotating the signing key",
            "To rotate the signing key, generate a new key pair, publish the public key, wait a day, then retire the old key.",
        ),
        (
            "Signing key rotation steps",
            "Generate a new key pair, publish its public key, wait one day, and then retire the old signing key.",
        ),
    ),
    (
        "fact",
        (
            "Frontend dev server port",
            "The frontend dev server listens on port 5173 and proxies API calls to localhost 8000.",
        ),
        (
            "Port of the frontend dev server",
            "On port 5173 the frontend dev server listens, proxying the API calls to localhost 8000.",
        ),
    ),
]
CONTRADICTIONS = [
    (
        "decision",
        "Primary database engine",
        "We store application data in MySQL 8 with row-based replication.",
        "Application data moves to PostgreSQL 16; MySQL is retired after the migration.",
    ),
    (
        "decision",
        "Frontend framework choice",
        "The dashboard is written in Angular with NgRx for state.",
        "New dashboard screens use React and Zustand; Angular code is frozen.",
    ),
    (
        "preference",
        "Indentation for YAML files",
        "Indent YAML files with four spaces so nested keys stand out.",
        "Use two spaces in YAML: linters and every upstream chart expect it.",
    ),
]
STALE = [
    ("context", "Old sprint goal", "Sprint 14 aimed to finish the onboarding wizard."),
    (
        "fact",
        "Legacy VPN hostname",
        "The legacy VPN answered at vpn-old.example.net until it was switched off.",
    ),
    ("context", "Hackathon team list", "Team Orca for the spring hackathon: Ana, Bo and Chen."),
]
CLEAN = [
    ("fact", "Logging library", "Services log through structlog with JSON output in production."),
    (
        "fact",
        "Metrics endpoint",
        "Every service exposes Prometheus metrics on /metrics at port 9100.",
    ),
    (
        "decision",
        "Queue technology",
        "Background jobs run on Redis streams consumed by a small worker pool.",
    ),
    (
        "lesson",
        "Timezone bugs in reports",
        "Monthly reports summed days in local time; store UTC and convert on display.",
    ),
    (
        "procedure",
        "Onboarding a new engineer",
        "Create their accounts, pair them with a buddy, and have them ship a fix in week one.",
    ),
    (
        "preference",
        "Type hints everywhere",
        "Public functions carry full type hints and mypy runs in strict mode.",
    ),
    (
        "reference",
        "Design system Figma",
        "The design system components live in the shared Figma file named Atlas.",
    ),
    (
        "fact",
        "Feature flag service",
        "Feature flags are served by Unleash; flags older than a quarter get removed.",
    ),
    (
        "decision",
        "Monorepo layout",
        "Code lives in one monorepo with apps under apps/ and libraries under libs/.",
    ),
    (
        "lesson",
        "Large migrations in batches",
        "Backfilling forty million rows in one transaction locked the table; batch by ten thousand.",
    ),
    (
        "procedure",
        "Restoring a backup",
        "Fetch the latest snapshot from object storage, restore to a scratch host, verify checksums.",
    ),
    (
        "fact",
        "Search cluster size",
        "Elasticsearch runs as three data nodes with two replicas per index.",
    ),
    (
        "preference",
        "Code review turnaround",
        "Reviews are answered within one working day; larger changes get a call.",
    ),
    (
        "reference",
        "Incident runbook",
        "The on-call runbook with escalation contacts is pinned in the incidents channel.",
    ),
    (
        "decision",
        "Authentication provider",
        "Single sign-on goes through Okta using OIDC; passwords are never stored.",
    ),
    (
        "lesson",
        "Docker layer caching",
        "Copy the lock file before the sources so dependency layers stay cached.",
    ),
    (
        "fact",
        "Mobile release cadence",
        "The mobile apps ship every second Tuesday after a staged rollout.",
    ),
    (
        "procedure",
        "Adding a new locale",
        "Add the locale code to i18n config, extract strings, send them to translators.",
    ),
    (
        "context",
        "Current quarter focus",
        "This quarter the team focuses on checkout latency and payment errors.",
    ),
    (
        "fact",
        "Object storage bucket",
        "User uploads go to the S3 bucket acme-uploads with lifecycle rules after ninety days.",
    ),
]


@dataclass
class Planted:
    duplicates: set[frozenset[str]] = field(default_factory=set)
    contradictions: set[frozenset[str]] = field(default_factory=set)
    stale: set[str] = field(default_factory=set)
    clean: set[str] = field(default_factory=set)


def plant(store: Store) -> Planted:
    """Write the planted records (dated before NOW) into `store`."""
    truth = Planted()
    at = NOW - timedelta(days=30)

    def put(type_: str, title: str, body: str, when: datetime, weight: float = 1.0) -> str:
        fields = {"url": "https://wiki.example.net/" + title.split()[0].lower()}
        extra = fields if type_ == "reference" else None
        written = store.record(type_, body, title=title, weight=weight, fields=extra, now=when)
        return written.record.id

    for type_, title, body in EXACT:
        a = put(type_, title, body, at)
        b = put(type_, title, body, at + timedelta(days=3))
        truth.duplicates.add(frozenset((a, b)))
    for type_, (t1, b1), (t2, b2) in PARAPHRASED:
        a = put(type_, t1, b1, at)
        b = put(type_, t2, b2, at + timedelta(days=5))
        truth.duplicates.add(frozenset((a, b)))
    for type_, title, old, new in CONTRADICTIONS:
        a = put(type_, title, old, at - timedelta(days=60))
        b = put(type_, title, new, at)
        truth.contradictions.add(frozenset((a, b)))
    for type_, title, body in STALE:
        truth.stale.add(put(type_, title, body, NOW - timedelta(days=400), weight=0.3))
    for type_, title, body in CLEAN:
        truth.clean.add(put(type_, title, body, at))
    return truth


@dataclass(frozen=True)
class Score:
    """Proposals against the planted truth."""

    duplicates: int  # planted duplicate pairs proposed as merges
    planted: int  # planted duplicate pairs
    proposals: int
    wrong: int  # proposals that are not planted truth (any naming a clean record among them)
    clean_named: frozenset[str]  # clean records some proposal names

    @property
    def found(self) -> float:
        return self.duplicates / self.planted

    @property
    def wrong_share(self) -> float:
        return self.wrong / max(1, self.proposals)


def score(proposed: Iterable[Mapping[str, Any]], truth: Planted) -> Score:
    """Score proposals (as `gitmem sleep --json` lists them): a merge is right when it names a
    planted duplicate pair, a supersede a planted contradiction, an archive or a demotion a
    planted stale record; anything naming a clean record, and any other kind, is wrong."""
    wrong = 0
    count = 0
    merged: set[frozenset[str]] = set()
    clean: set[str] = set()
    for p in proposed:
        count += 1
        ids = frozenset(p["records"])
        clean |= ids & truth.clean
        if ids & truth.clean:
            wrong += 1
        elif p["kind"] == "merge":
            merged.add(ids)
            wrong += ids not in truth.duplicates
        elif p["kind"] == "supersede":
            wrong += ids not in truth.contradictions
        elif p["kind"] in ("archive", "demote"):
            wrong += not ids <= truth.stale
        else:
            wrong += 1
    found = len(merged & truth.duplicates)
    return Score(found, len(truth.duplicates), count, wrong, frozenset(clean))
