"""Recurring records written from small hand-written tables (light templating).

Releases, on-call handoffs, cost reviews, load tests, dependency bumps and per-object
reference cards: families of records that look alike on purpose, so ranking has to use the
details (dates, versions, names) to pick the right one.
"""

from __future__ import annotations

from .spec import Project

PAY = Project("payments-api", ("claude-code", "codex", "alice"))
DASH = Project("ops-dashboard", ("claude-code", "cursor", "bob"))
DATA = Project("ingest-pipeline", ("codex", "claude-code", "priya"))
INFRA = Project("infra", ("claude-code", "mateo", "codex"))
TEAM = Project("team", ("alice", "claude-code"))


def _bullets(items: list[str]) -> str:
    """Markdown bullets, indented to sit inside the 8-space-indented f-string bodies below."""
    return "\n        ".join(f"* {item}" for item in items)


# --- payments-api releases (release-please style changelog) ---------------------------------

PAY_RELEASES = [
    (
        "1.8.0",
        "2026-03-10 16:00",
        "Idempotency-Key support, signed merchant webhooks and list filters",
        [
            "**idempotency:** store responses per Idempotency-Key on POSTs (#212) (a41c9e0)",
            "**webhooks:** sign deliveries with Kestrel-Signature (#215) (5be07d2)",
            "**payments:** created[gte]/created[lt] filters on GET /v1/payments (#219) (c3d8a11)",
        ],
    ),
    (
        "1.9.0",
        "2026-03-31 15:30",
        "PgBouncer-ready connection settings and 3DS return_url checks",
        [
            "**db:** DATABASE_URL may point at PgBouncer; pool sizes configurable (#241) (e9f1b72)",
            "**3ds:** reject return_url outside the merchant's allowed domains (#244) (17ac3d5)",
            "**ids:** ERR_INVALID_ID for ids with an unknown prefix (#247) (9d02e6c)",
        ],
    ),
    (
        "1.10.0",
        "2026-04-21 15:00",
        "Idempotency keys required, Adyen routing for EUR cards, tracing",
        [
            "**payments:** Idempotency-Key is required on POST /v1/payments (#268) (3f9c2ab)",
            "**psp:** route EUR card payments to Adyen (#272) (b7e4410)",
            "**obs:** OpenTelemetry traces for HTTP and pgx (#275) (0c5d9e8)",
        ],
    ),
    (
        "1.11.0",
        "2026-05-12 15:00",
        "Webhook backoff, disputes API and the KYB gate",
        [
            "**webhooks:** exponential backoff, 15 attempts, dead letters (#301) (6a1f0c4)",
            "**disputes:** dsp_ objects and evidence upload endpoint (#305) (d84b2e9)",
            "**merchants:** block live writes unless kyb_status is approved (#308) (41e7c0a)",
        ],
    ),
    (
        "1.12.0",
        "2026-06-02 14:30",
        "slog logging and captures no longer hold transactions over PSP calls",
        [
            "**log:** replace zerolog with log/slog (#322) (8b3e5f1)",
            "**captures:** split the DB transaction around the PSP call (#327) (f20c6a9)",
            "**payouts:** TARGET2 holiday calendar for payout dates (#330) (2d9a7b3)",
        ],
    ),
    (
        "1.13.0",
        "2026-06-23 14:00",
        "Sessions in Postgres, 7-day idempotency, longer capture timeout",
        [
            "**sessions:** move merchant sessions to Postgres (#351) (7c4e1d0)",
            "**idempotency:** keep keys for 7 days, partition by day (#354) (e03b8f6)",
            "**psp:** capture timeout 15s for Adyen (#356) (5f6d2a8)",
        ],
    ),
    (
        "1.14.0",
        "2026-07-14 14:00",
        "First release-please release; migrations on Atlas",
        [
            "**migrations:** manage schema with Atlas and lint in CI (#372) (c19e7b4)",
            "**tests:** replace testify with go-cmp in internal/ledger (#375) (0a8f3c2)",
            "**refunds:** currency must match the payment (#378) (94d1e5b)",
        ],
    ),
    (
        "1.15.0",
        "2026-08-04 14:00",
        "Edge rate limiting, PgBouncer prepared statements, Kafka dual publish",
        [
            "**ratelimit:** remove in-process limiter, Envoy enforces limits (#394) (2e7b9d1)",
            "**db:** drop simple_protocol, rely on PgBouncer 1.22 (#397) (b5c0f38)",
            "**events:** publish to Kafka payments.events.v1 alongside NATS (#401) (7d3a6e2)",
        ],
    ),
    (
        "1.16.0",
        "2026-08-25 14:00",
        "Go 1.23, fail-fast config parsing, NATS publisher removed",
        [
            "**build:** Go 1.23 toolchain (#418) (4c8e2f7)",
            "**config:** abort startup on invalid integers like WEBHOOK_WORKERS (#421) (e6b19a3)",
            "**events:** stop publishing to NATS (#424) (1f7d0c9)",
        ],
    ),
    (
        "1.17.0",
        "2026-09-15 14:00",
        "Stripe basil API version, GBP and SEK payouts, per-currency balance",
        [
            "**stripe:** stripe-go v82 and API version 2025-03-31.basil (#440) (9a2c4e6)",
            "**payouts:** pay out GBP and SEK balances in their own currency (#443) (3b8f1d7)",
            "**balance:** GET /v1/balance returns one entry per currency (#446) (c7e5a02)",
        ],
    ),
]

for version, when, summary, items in PAY_RELEASES:
    PAY.add(
        f"pay-release-{version}",
        "context",
        when,
        f"payments-api v{version} released",
        f"payments-api v{version} is tagged and rolled out to prod: {summary}.",
        f"""
        ## v{version} ({when[:10]})
        ### Features
        {_bullets(items)}
        Image: ghcr.io/kestrel/payments-api:v{version}
        """,
        tags="release changelog",
        agent="claude-code",
        source="CHANGELOG.md",
    )

# --- ops-dashboard monthly releases ---------------------------------------------------------

DASH_RELEASES = [
    (
        "2026.3.0",
        "2026-03-27 15:00",
        ["Overview charts (Chart.js)", "Payout list with status filters", "German translations"],
    ),
    (
        "2026.4.0",
        "2026-04-24 15:00",
        ["Vitest replaces Jest (no user change)", "date-fns dates", "Fix DASH-212 day shift"],
    ),
    (
        "2026.5.0",
        "2026-05-29 15:00",
        ["Cookie-based session via BFF", "Recharts charts", "TanStack Query data layer"],
    ),
    (
        "2026.6.0",
        "2026-06-26 15:00",
        ["Tailwind styling", "Playwright e2e", "Virtualised payouts table", "size-limit budget"],
    ),
    (
        "2026.7.0",
        "2026-07-31 15:00",
        ["Hosted on CloudFront", "Payouts v2 behind flag", "Async CSV exports over 10k rows"],
    ),
    (
        "2026.8.0",
        "2026-08-28 15:00",
        ["ECharts for ledger balance chart", "Disputes screen beta", "Refund currency locked"],
    ),
    (
        "2026.9.0",
        "2026-09-25 15:00",
        ["React 19", "Payouts v2 for everyone, legacy page removed", "Playwright timezone pin"],
    ),
]

for version, when, items in DASH_RELEASES:
    DASH.add(
        f"dash-release-{version}",
        "context",
        when,
        f"ops-dashboard {version} deployed",
        f"Monthly ops-dashboard release {version}: " + "; ".join(items) + ".",
        f"""
        Release {version} ({when[:10]}), deployed by the release workflow
        {_bullets(items)}
        Rollback: redeploy the previous build artefact from the release page.
        """,
        tags="release changelog",
        agent="bob",
        source="CHANGELOG.md",
    )

# --- on-call handoffs (payments + platform rotation) ----------------------------------------

HANDOFFS = [
    (
        "2026-03-09",
        "alice",
        [
            "RDS connections peaked at 380/400 during Thursday's deploy; PgBouncer work is planned",
            "Staging Stripe webhooks returned 400 after someone pasted the prod secret; fixed",
            "No pages overnight",
        ],
    ),
    (
        "2026-03-23",
        "alice",
        [
            "PgBouncer rolled out Wednesday; watch for SQLSTATE 42P05 errors in the API logs",
            "Recon flagged 3 Adyen fee mismatches, all rounding on JPY; ticket open",
            "MWAA scheduler restarted itself twice (data team aware)",
        ],
    ),
    (
        "2026-04-06",
        "mateo",
        [
            "Adyen test environment was down Saturday 09:00-13:00 UTC; staging checkout red",
            "NAT gateway bytes look high in Cost Explorer, investigating",
            "cert-manager renewed all certificates fine",
        ],
    ),
    (
        "2026-04-20",
        "alice",
        [
            "INC-2026-004 follow-ups: all duplicate charges refunded, SDK 4.2.1 released",
            "notifications crashlooped on new arm64 nodes (exec format error); pinned amd64",
            "Two pages for Stripe latency, both resolved by Stripe within 10 min",
        ],
    ),
    (
        "2026-05-04",
        "mateo",
        [
            "ndots change rolled out; outbound PSP p99 down ~40 ms",
            "Webhook backoff release goes out Tuesday; expect dead-letter emails to merchants",
            "Snowflake spend alert fired (TRANSFORM_WH auto-suspend), data team fixed",
        ],
    ),
    (
        "2026-05-18",
        "alice",
        [
            "Checkout stalled 25 min on Wednesday: Adyen slow + transactions held open (PAY-1560)",
            "EKS 1.30 upgrade finished without incident",
            "Recon clean all week",
        ],
    ),
    (
        "2026-06-01",
        "mateo",
        [
            "Sessions Redis eviction follow-ups: eviction alerts in place, sessions move next",
            "Karpenter now provisions all new nodes; keep an eye on consolidation events",
            "dbt nightly run creeping towards 3 h, data team moving models to incremental",
        ],
    ),
    (
        "2026-06-15",
        "alice",
        [
            "Karpenter consolidation took down all payments-api pods for 70 s; PDBs added",
            "Adyen APAC captures timing out at 5 s; timeout raised, 312 captures reconciled",
            "fct_payments double-counted 9 June in finance report; fixed and backfilled",
        ],
    ),
    (
        "2026-06-29",
        "mateo",
        [
            "ALB controller migration done; the old NLBs are scheduled for deletion Friday",
            "ARC runners live; self-hosted-linux label still works until 10 July",
            "Quiet week for payments",
        ],
    ),
    (
        "2026-07-13",
        "mateo",
        [
            "OpenTofu switch done, Atlantis plans look identical",
            "Snowpipe goes live next week; hourly COPY job stays as fallback for a week",
            "Dashboard moved to CloudFront, invalidations take ~2 min",
        ],
    ),
    (
        "2026-07-27",
        "alice",
        [
            "Postgres 16 blue/green switchover Tuesday 22:00 UTC, expect ~1 min of write errors",
            "OIDC trust policy tightened; other repos' deploy workflows may need updating",
            "Datadog to Grafana migration starts, dashboards duplicated for two weeks",
        ],
    ),
    (
        "2026-08-10",
        "alice",
        [
            "Kafka dual publish running; consumer lag panel on the payments dashboard",
            "Datadog agent removed from staging, prod next week",
            "One page: MSK broker disk at 80%, retention lowered to 14 days",
        ],
    ),
    (
        "2026-08-24",
        "alice",
        [
            "INC-2026-019 webhook backlog (WEBHOOK_WORKERS typo) - postmortem Thursday",
            "mTLS CA expiry broke BFF -> payments-admin for 50 min on Saturday; new CA issued",
            "NATS publisher removal ships in v1.16.0 this week",
        ],
    ),
    (
        "2026-09-07",
        "mateo",
        [
            "EKS 1.31 upgrade Wednesday night, staging has soaked 10 days",
            "Stripe basil migration: new webhook endpoint live, old one disabled on the 10th",
            "Snowpipe lag alerts added after last week's noisy false alarm",
        ],
    ),
    (
        "2026-09-21",
        "alice",
        [
            "PCI assessment Monday/Tuesday; keep prod changes frozen until Wednesday",
            "DR drill passed (47 min restore), TTL of api.kestrel.dev lowered to 60 s",
            "Snowpipe outage from the S3 notification overwrite is fixed (DATA-395)",
        ],
    ),
]

for day, author, items in HANDOFFS:
    TEAM.add(
        f"x-handoff-{day}",
        "context",
        f"{day} 09:30",
        f"On-call handoff, week of {day}",
        f"Monday on-call handoff for payments and platform ({day}): {items[0]}.",
        f"""
        Outgoing: {author}. Notable since last handoff:
        {_bullets(items)}
        """,
        tags="oncall handoff",
        agent=author,
        source=f"slack:#oncall-handoff/{day}",
    )

# --- monthly cost reviews: AWS (infra) and Snowflake (pipeline) -----------------------------

AWS_COSTS = [
    (
        "March",
        "2026-04-03",
        "41,280",
        "+6%",
        ["EC2 nodes 38%", "RDS 17%", "NAT gateway 14%", "Datadog agent hosts not in AWS bill"],
        "NAT gateway bytes doubled; investigate VPC endpoints (OPS-102)",
    ),
    (
        "April",
        "2026-05-05",
        "47,910",
        "+16%",
        ["NAT gateway 31%", "EC2 nodes 33%", "RDS 15%"],
        "S3/ECR endpoints added 6 May; Graviton migration under way",
    ),
    (
        "May",
        "2026-06-03",
        "39,640",
        "-17%",
        ["EC2 nodes 36% (Karpenter consolidation)", "RDS 18%", "NAT gateway 7%"],
        "Biggest drop from VPC endpoints and Graviton; spot for batch NodePool next",
    ),
    (
        "June",
        "2026-07-03",
        "37,150",
        "-6%",
        ["EC2 nodes 33%", "RDS 19%", "ALB 5%", "MSK 4% (new)"],
        "ALB replaced NLB + ingress-nginx pods; MSK cluster added for events",
    ),
    (
        "July",
        "2026-08-04",
        "38,820",
        "+4%",
        ["EC2 nodes 32%", "RDS 22% (blue/green doubled cost for 3 days)", "MSK 7%"],
        "Delete the old blue RDS instance promptly after switchover next time",
    ),
    (
        "August",
        "2026-09-03",
        "36,400",
        "-6%",
        ["EC2 nodes 34%", "RDS 18%", "MSK 8%", "CloudWatch logs 6%"],
        "Datadog gone from 31 Aug; CloudWatch log retention review for PCI (365 d) pending",
    ),
]

for month, day, total, delta, drivers, action in AWS_COSTS:
    INFRA.add(
        f"infra-cost-{month.lower()}",
        "context",
        f"{day} 11:00",
        f"AWS cost review for {month} 2026",
        f"AWS spend for {month} 2026 was USD {total} ({delta} month over month). {action}.",
        f"""
        Total: USD {total} ({delta} MoM), source Cost Explorer grouped by service
        Top drivers:
        {_bullets(drivers)}
        Action: {action}
        """,
        tags="cost aws finops",
        agent="mateo",
    )

SNOWFLAKE_COSTS = [
    ("March", "2026-04-02", "1,840", ["TRANSFORM_WH 61%", "LOADER_WH 22%", "REPORTING_WH 17%"]),
    ("April", "2026-05-02", "2,540", ["TRANSFORM_WH 68% (idle, auto_suspend 3600)", "LOADER 18%"]),
    ("May", "2026-06-02", "1,910", ["TRANSFORM_WH 57%", "REPORTING_WH 24%", "LOADER_WH 19%"]),
    ("June", "2026-07-02", "1,620", ["TRANSFORM_WH 49% (incremental models)", "REPORTING 30%"]),
    ("July", "2026-08-03", "1,570", ["TRANSFORM_WH 47%", "REPORTING_WH 31%", "Snowpipe 8% (new)"]),
    ("August", "2026-09-02", "1,690", ["TRANSFORM_WH 45%", "REPORTING_WH 33%", "Snowpipe 10%"]),
]

for month, day, credits, drivers in SNOWFLAKE_COSTS:
    DATA.add(
        f"data-credits-{month.lower()}",
        "context",
        f"{day} 10:00",
        f"Snowflake credit usage for {month} 2026",
        f"Snowflake consumed {credits} credits in {month} 2026; breakdown by warehouse below.",
        f"""
        Credits: {credits} (query: SNOWFLAKE.ACCOUNT_USAGE.WAREHOUSE_METERING_HISTORY)
        {_bullets(drivers)}
        Budget: 2,000 credits/month (resource monitor monthly_quota)
        """,
        tags="cost snowflake finops",
        agent="priya",
    )

# --- payments-api load tests -----------------------------------------------------------------

LOAD_TESTS = [
    ("1.10.0", "2026-04-23", "800", "41", "310", "0.02%", "baseline after tracing was enabled"),
    ("1.12.0", "2026-06-04", "1,200", "38", "240", "0.01%", "capture tx split removed lock waits"),
    ("1.14.0", "2026-07-16", "1,200", "35", "205", "0.00%", "PgBouncer prepared statements off"),
    ("1.16.0", "2026-08-27", "1,500", "31", "180", "0.00%", "Go 1.23 + prepared statements"),
    ("1.17.0", "2026-09-17", "1,500", "33", "195", "0.03%", "Stripe basil client adds ~10 ms"),
]

for version, day, rps, p50, p99, errors, note in LOAD_TESTS:
    PAY.add(
        f"pay-loadtest-{version}",
        "fact",
        f"{day} 13:00",
        f"Load test of payments-api v{version} on staging",
        f"k6 checkout scenario against v{version}: {rps} req/s sustained, p50 {p50} ms, p99 {p99} "
        f"ms, error rate {errors}. Note: {note}.",
        f"""
        Script: loadtest/checkout.js (k6), 20 min ramp to {rps} req/s, stripe-mock PSPs
        Result: p50 {p50} ms, p99 {p99} ms, errors {errors}
        Note: {note}
        Run: k6 run -e BASE_URL=https://api.staging.kestrel.dev loadtest/checkout.js
        """,
        tags="loadtest performance k6",
        agent="codex",
    )

# --- dependency bumps -------------------------------------------------------------------------

BUMPS = [
    (
        PAY,
        "pay-bump-pgx-560",
        "2026-04-08",
        "pgx",
        "v5.5.5",
        "v5.6.0",
        "go.mod",
        "Fixes pgxpool health check leak; no API changes",
    ),
    (
        PAY,
        "pay-bump-chi-510",
        "2026-05-27",
        "chi",
        "v5.0.12",
        "v5.1.0",
        "go.mod",
        "Adds r.Pattern-like route context helpers; middleware order unchanged",
    ),
    (
        PAY,
        "pay-bump-pgx-571",
        "2026-08-26",
        "pgx",
        "v5.6.0",
        "v5.7.1",
        "go.mod",
        "Needed for Go 1.23 iterators in rows helpers; QueryExecMode defaults unchanged",
    ),
    (
        PAY,
        "pay-bump-xnet",
        "2026-06-19",
        "golang.org/x/net",
        "v0.25.0",
        "v0.26.0",
        "go.mod",
        "Security fix GO-2026-2963 in http2 header handling; govulncheck was red",
    ),
    (
        DASH,
        "dash-bump-vite-54",
        "2026-05-10",
        "vite",
        "5.2.11",
        "5.4.0",
        "package.json",
        "Faster HMR; no config changes",
    ),
    (
        DASH,
        "dash-bump-ts-55",
        "2026-06-24",
        "typescript",
        "5.4.5",
        "5.5.4",
        "package.json",
        "Inferred type predicates removed two manual type guards",
    ),
    (
        DASH,
        "dash-bump-tanstack",
        "2026-07-18",
        "@tanstack/react-query",
        "5.40.0",
        "5.51.1",
        "package.json",
        "Devtools panel moved to @tanstack/react-query-devtools/production",
    ),
    (
        DASH,
        "dash-bump-vite-6",
        "2026-08-30",
        "vite",
        "5.4.0",
        "6.0.3",
        "package.json",
        "Environment API unused; had to bump @vitejs/plugin-react to 4.3.4 and vitest to 2.1",
    ),
    (
        DATA,
        "data-bump-dbt-18",
        "2026-05-15",
        "dbt-core",
        "1.7.11",
        "1.8.2",
        "pyproject.toml",
        "Unit tests for models now possible; tests: renamed to data_tests: in yml",
    ),
    (
        DATA,
        "data-bump-polars-1",
        "2026-07-02",
        "polars",
        "0.20.31",
        "1.0.0",
        "pyproject.toml",
        "Breaking: str.strip -> str.strip_chars, groupby -> group_by finished; streaming flag kept",
    ),
    (
        DATA,
        "data-bump-sf-connector",
        "2026-08-08",
        "snowflake-connector-python",
        "3.10.1",
        "3.12.1",
        "pyproject.toml",
        "Key-pair auth via private_key_file now supported natively",
    ),
    (
        DATA,
        "data-bump-polars-16",
        "2026-09-04",
        "polars",
        "1.0.0",
        "1.6.0",
        "pyproject.toml",
        "New streaming engine opt-in via collect(engine='streaming'); 20% faster segment job",
    ),
    (
        INFRA,
        "infra-bump-aws-provider",
        "2026-06-05",
        "hashicorp/aws provider",
        "5.40.0",
        "5.60.0",
        ".terraform.lock.hcl",
        "Needed for aws_eks_access_entry; plan showed no changes elsewhere",
    ),
    (
        INFRA,
        "infra-bump-karpenter-11",
        "2026-08-19",
        "karpenter",
        "1.0.6",
        "1.1.1",
        "Helm values",
        "Disruption budgets per reason (Underutilized/Drifted) now used",
    ),
]

for proj, key, day, name, old, new, where, note in BUMPS:
    proj.add(
        key,
        "fact",
        f"{day} 10:00",
        f"Bumped {name} from {old} to {new}",
        f"{name} upgraded from {old} to {new} in {where}. {note}.",
        f"""
        Renovate PR merged {day}: {name} {old} -> {new} ({where})
        Notes: {note}
        Tests green; no follow-up needed.
        """,
        tags="dependencies upgrade",
        agent="codex",
    )

# --- dbt model cards ----------------------------------------------------------------------------

DBT_MODELS = [
    (
        "fct_payments",
        "2026-03-19",
        "one row per payment",
        "incremental, unique_key payment_id",
        "stg_payments__events",
        "finance revenue, take rate",
    ),
    (
        "fct_refunds",
        "2026-03-26",
        "one row per refund",
        "incremental, unique_key refund_id",
        "stg_payments__events",
        "refund rate by merchant",
    ),
    (
        "fct_payouts",
        "2026-05-26",
        "one row per payout",
        "table",
        "stg_payments__events",
        "bank reconciliation of po_ payouts",
    ),
    (
        "fct_disputes",
        "2026-06-10",
        "one row per dispute",
        "table",
        "stg_payments__events",
        "dispute rate and win rate",
    ),
    (
        "dim_merchants",
        "2026-03-21",
        "one row per merchant (SCD2)",
        "snapshot + table",
        "stg_hubspot__companies, stg_payments__events",
        "merchant attributes for all marts",
    ),
    (
        "stg_segment__tracks",
        "2026-03-17",
        "one row per Segment track event",
        "incremental, unique_key event_id",
        "RAW.SEGMENT.EVENTS",
        "product analytics",
    ),
    (
        "stg_hubspot__deals",
        "2026-04-13",
        "one row per deal",
        "view",
        "RAW.HUBSPOT.DEALS",
        "sales pipeline reporting",
    ),
    (
        "int_payments__captures_joined",
        "2026-05-11",
        "one row per capture with payment attrs",
        "ephemeral",
        "stg_payments__events",
        "input to fct_payments and fct_settlements",
    ),
]

for model, day, grain, materialization, upstream, used_for in DBT_MODELS:
    DATA.add(
        f"data-model-{model.replace('_', '-')}",
        "reference",
        f"{day} 12:00",
        f"dbt model {model}",
        f"{model}: {grain}; materialised as {materialization}; built from {upstream}.",
        f"""
        Grain: {grain}
        Materialisation: {materialization}
        Upstream: {upstream}
        Used for: {used_for}
        Tests: unique + not_null on the key, relationships to dim_merchants where relevant
        """,
        tags="dbt models",
        agent="priya",
    )

# --- Terraform stack cards ----------------------------------------------------------------------

STACKS = [
    ("network", "2026-03-02", "VPC 10.20.0.0/16, 3 AZs, NAT per AZ, VPC endpoints", "vpc"),
    ("eks", "2026-03-03", "eks-prod-euw1 control plane, add-ons, IRSA roles", "eks"),
    (
        "rds-payments",
        "2026-03-04",
        "payments-prod Postgres, parameter group, SG payments_db",
        "rds-postgres",
    ),
    ("msk", "2026-07-24", "MSK cluster events-prod (3 x kafka.m7g.large), IAM auth", "msk"),
    (
        "redis-cache",
        "2026-03-06",
        "ElastiCache Redis 7 replication group payments-cache",
        "elasticache-redis",
    ),
    (
        "static-site-dashboard",
        "2026-07-08",
        "S3 bucket + CloudFront + OAC for ops-dashboard",
        "static-site",
    ),
    (
        "backup",
        "2026-04-07",
        "AWS Backup vault, plan kestrel-daily, copy to eu-central-1",
        "backup",
    ),
    (
        "snowflake",
        "2026-05-03",
        "Snowflake warehouses, resource monitors, RAW schemas and stages",
        "snowflake-account",
    ),
]

for stack, day, contents, module in STACKS:
    INFRA.add(
        f"infra-stack-{stack}",
        "reference",
        f"{day} 16:00",
        f"Terraform stack live/prod/eu-west-1/{stack}",
        f"The {stack} stack manages: {contents}. Built on modules/{module}.",
        f"""
        Path: live/prod/eu-west-1/{stack}
        Module: modules/{module}
        Manages: {contents}
        Atlantis project: prod-{stack}
        """,
        tags="terraform stacks",
        agent="mateo",
    )

# --- ops-dashboard page cards -------------------------------------------------------------------

PAGES = [
    (
        "payments-search",
        "2026-03-13",
        "/payments",
        "payments:read",
        "search by pay_ id, merchant, amount range; detail drawer with timeline",
    ),
    (
        "merchant-detail",
        "2026-03-19",
        "/merchants/:id",
        "payments:read",
        "KYB status, balances, webhook endpoints, recent payments",
    ),
    (
        "payouts",
        "2026-03-24",
        "/payouts",
        "payouts:read",
        "payout list by status and currency; hold/release for finance",
    ),
    (
        "reconciliation",
        "2026-05-07",
        "/recon",
        "recon:read",
        "recon_mismatches from the nightly job with resolve/ignore actions",
    ),
    (
        "users-admin",
        "2026-04-30",
        "/admin/users",
        "users:write",
        "invite users, assign support/finance/admin roles",
    ),
    (
        "disputes",
        "2026-08-20",
        "/disputes",
        "disputes:read",
        "open disputes sorted by evidence deadline, evidence upload drawer",
    ),
]

for page, day, route, permission, what in PAGES:
    DASH.add(
        f"dash-page-{page}",
        "reference",
        f"{day} 14:00",
        f"Dashboard page {route}",
        f"The {route} page ({permission}): {what}.",
        f"""
        Route: {route}  (src/pages/{page}/index.tsx)
        Permission: {permission}
        Shows: {what}
        Data: src/api/queries/{page.split("-")[0]}.ts
        """,
        tags="pages routing",
        agent="bob",
    )

RECORDS = PAY.records + DASH.records + DATA.records + INFRA.records + TEAM.records
