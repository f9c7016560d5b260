"""Cross-project working agreements: preferences, review rules, incident process."""

from __future__ import annotations

from .spec import Project

T = Project("team", ("alice", "claude-code"))
add = T.add

add(
    "x-ci-checks",
    "fact",
    "2026-03-02 08:40",
    "Required CI checks on every repository",
    "All repos run GitHub Actions with three required status checks on main: lint, test and build; "
    "a red check cannot be bypassed except by org admins.",
    """
    Branch protection (org ruleset 'default'): require PR, checks lint/test/build, linear history
    .github/workflows/ci.yml is copied from kestrel/.github templates
    """,
    tags="ci github-actions process",
    agent="alice",
)
add(
    "x-conventional-commits",
    "preference",
    "2026-03-02 09:00",
    "Use Conventional Commits for every commit",
    "Alice wants every commit message in Conventional Commits form, type(scope): summary in the "
    "imperative, with ! or a BREAKING CHANGE footer for breaking changes.",
    """
    feat(payouts): add GBP payouts
    fix(webhooks): stop retrying on 410 Gone
    chore(deps): bump pgx to v5.6.0
    refactor!: drop /v1/charges (BREAKING CHANGE footer explains migration)
    commitlint runs in CI (config-conventional).
    """,
    tags="git commits style",
    agent="alice",
    weight=2.0,
)
add(
    "x-small-prs",
    "preference",
    "2026-03-03 09:00",
    "Keep pull requests small",
    "Alice asks for pull requests under about 400 changed lines (generated files excluded); split "
    "refactors from behaviour changes and stack PRs when needed.",
    """
    Generated code (sqlc, schema.d.ts, lockfiles) does not count.
    A PR description says what, why, and how it was tested.
    """,
    tags="pull-requests review process",
    agent="alice",
    weight=1.5,
)
add(
    "x-squash-merge",
    "preference",
    "2026-03-04 09:00",
    "Squash-merge pull requests",
    "Pull requests are merged with squash so main has one commit per PR, titled with the PR title.",
    """
    Repository setting: allow squash only; default commit message = PR title
    Delete the branch after merge (auto-delete is on).
    """,
    tags="git merge process",
    agent="alice",
)
add(
    "x-review-one",
    "decision",
    "2026-03-04 10:00",
    "One approving review is enough to merge",
    "Any repository accepts a PR with one approval from a code owner and green checks.",
    """
    CODEOWNERS per repo; stale approvals are dismissed on new pushes.
    Authors merge their own PRs once approved.
    """,
    tags="review process",
    agent="alice",
)
add(
    "x-oncall",
    "fact",
    "2026-03-05 09:00",
    "On-call rotation and escalation",
    "Payments and platform share a weekly PagerDuty rotation that hands off on Mondays at 10:00 "
    "CET; the secondary is paged after 10 minutes, then the engineering manager.",
    """
    PagerDuty schedules: payments-primary, payments-secondary, platform-primary
    Handoff notes are written each Monday (see the on-call handoff records)
    Data on-call is business hours only.
    """,
    tags="oncall pagerduty process",
    agent="alice",
)
add(
    "x-adr",
    "pattern",
    "2026-03-06 09:30",
    "Record architecture decisions as ADRs",
    "Significant decisions get an ADR in docs/adr/NNNN-kebab-title.md using the MADR template; "
    "superseded ADRs stay in place with a pointer to the new one.",
    """
    docs/adr/0000-template.md (MADR 3)
    Status: proposed | accepted | superseded by NNNN
    Open the ADR PR before the implementation PR.
    """,
    tags="adr documentation process",
    agent="alice",
)
add(
    "x-style-guides-ref",
    "reference",
    "2026-03-07 10:00",
    "Language style guides we follow",
    "Go code follows the Google Go style guide, TypeScript follows the team ESLint config, Python "
    "follows ruff defaults plus our pyproject settings.",
    """
    https://google.github.io/styleguide/go/
    https://go.dev/doc/effective_go
    https://github.com/kestrel/eslint-config
    https://docs.astral.sh/ruff/rules/
    """,
    tags="style docs",
    agent="alice",
    weight=0.5,
)
add(
    "x-pref-terse",
    "preference",
    "2026-03-08 09:00",
    "Alice wants short answers that lead with the change",
    "When reporting back, state what changed and where in the first line, then the minimum "
    "context; no preamble, no restating the question, no celebratory summaries.",
    """
    Good: "Fixed: webhook retries now stop on 410 (internal/webhooks/dispatcher.go:88)."
    Bad:  "Great question! I've taken a look at..."
    """,
    tags="communication agents",
    agent="alice",
    weight=2.5,
)
add(
    "x-pref-british",
    "preference",
    "2026-03-10 09:00",
    "British English in docs and UI copy",
    "User-facing text and documentation use British spelling (colour, authorise, cancelled); code "
    "identifiers and API fields stay as they are.",
    """
    UI: "Authorise payout", docs: "organisation"
    API/JSON: keep `canceled` status values etc. for compatibility.
    """,
    tags="writing style",
    agent="alice",
)
add(
    "x-incident-process",
    "procedure",
    "2026-03-16 10:00",
    "Declare and run an incident",
    "Anyone can declare with /inc in Slack (incident.io); pick a severity, an incident lead takes "
    "comms, and a postmortem is due within 5 working days for SEV1/SEV2.",
    """
    SEV1: money movement or API down for all merchants; SEV2: degraded/partial; SEV3: internal
    Status page updates every 30 min for SEV1/2 (statuspage.io component "API")
    Postmortem template: docs/postmortems/TEMPLATE.md, blameless
    """,
    tags="incident process",
    agent="alice",
)
add(
    "x-pref-no-db-mocks",
    "preference",
    "2026-04-02 09:30",
    "Test against a real Postgres, not mocks",
    "Alice prefers integration tests that start Postgres with testcontainers over mocked "
    "repositories; mocks hid two SQL bugs in Q1.",
    """
    Go: testcontainers-go postgres module, one container per package, schema via migrations
    Python: pytest fixture `pg` in tests/conftest.py using testcontainers[postgres]
    """,
    tags="testing postgres",
    agent="alice",
)
add(
    "x-pref-failing-test-first",
    "preference",
    "2026-04-11 09:00",
    "Write a failing test before fixing a bug",
    "For any bug fix, agents first add a test that reproduces the bug and fails, then fix the "
    "code; the PR shows both.",
    """
    Commit order in the PR: test(...) failing test, then fix(...)
    If a reproduction is impossible, say why in the PR.
    """,
    tags="testing process agents",
    agent="alice",
    weight=1.5,
)
add(
    "x-pref-ask-deps",
    "preference",
    "2026-05-04 09:00",
    "Ask before adding a dependency",
    "Agents must ask before adding any new third-party dependency, with the reason, its "
    "maintenance state and licence; prefer the standard library.",
    """
    Applies to go.mod, package.json and pyproject.toml alike.
    Dev-only tooling pinned in tools/ is fine to bump without asking.
    """,
    tags="dependencies agents",
    agent="alice",
    weight=2.0,
)
add(
    "x-review-two",
    "decision",
    "2026-05-15 10:00",
    "Two approvals for payments-api and infra changes",
    "After the May incidents, PRs to payments-api and infra need two approvals, one from a code "
    "owner; other repositories still need one.",
    """
    Ruleset 'money-and-infra' on kestrel/payments-api and kestrel/infra: required_approvals = 2
    Agents' PRs count as authored by the human who started the session.
    """,
    tags="review process",
    agent="alice",
    supersedes="x-review-one",
)
add(
    "x-lesson-leaked-key",
    "lesson",
    "2026-05-26 11:00",
    "A Stripe test key was committed; gitleaks is now mandatory",
    "An sk_test key landed in a fixture file and was public in a fork for two days. It was rolled, "
    "and gitleaks now runs in pre-commit and CI for every repo.",
    """
    Found by GitHub secret scanning alert #14
    .pre-commit-config.yaml: gitleaks v8.18 ; CI job secrets-scan (required)
    Fixtures use sk_test_FAKE... placeholders only.
    """,
    tags="security secrets git",
    agent="alice",
    weight=2.0,
)
add(
    "x-rebase-merge",
    "preference",
    "2026-07-06 09:00",
    "Rebase-merge pull requests so conventional commits reach main",
    "Since release-please builds changelogs from individual commits, PRs are now rebase-merged "
    "instead of squashed; clean up commits before asking for review.",
    """
    Repository setting: allow rebase merge only
    Use git rebase -i to squash fixups ("fixup!" commits) before review.
    """,
    tags="git merge process",
    agent="alice",
    supersedes="x-squash-merge",
    links="pay-release-please",
)
add(
    "x-branch-names",
    "preference",
    "2026-06-16 09:00",
    "Branch names start with the ticket id",
    "Branches are named <ticket>-<short-slug> in lower case so the ticket links itself in GitHub "
    "and in the commit trailers.",
    """
    pay-1602-idempotency-retention, ops-131-require-pdb, dash-287-async-exports
    Agents create the branch before the first commit; never commit to main.
    """,
    tags="git process agents",
    agent="alice",
)
add(
    "x-lesson-agent-staging-migration",
    "lesson",
    "2026-08-07 15:45",
    "An agent session applied a migration to staging from a laptop",
    "While debugging, an agent ran the migration job's command against the staging database with "
    "credentials from a developer's shell; the schema then drifted from main for two days.",
    """
    Found when the next Helm pre-upgrade job failed on a checksum mismatch
    Rule now: agents never run migrations, seeds or backfills against shared environments;
    they write the command in the PR and a human runs it.
    Staging DB credentials are no longer readable by the developer role (OPS-168).
    """,
    tags="agents safety migrations",
    agent="alice",
    weight=2.5,
)

RECORDS = T.records
