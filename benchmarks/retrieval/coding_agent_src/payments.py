"""payments-api: a Go service (chi, pgx, sqlc) in front of Stripe and Adyen."""

from __future__ import annotations

from .spec import Project

P = Project("payments-api", ("claude-code", "codex", "alice"))
add = P.add

# --- long-lived facts from the first weeks -------------------------------------------------

add(
    "pay-repo-layout",
    "fact",
    "2026-03-01 10:12",
    "payments-api repository layout",
    "Binaries live in cmd/ (api, worker, webhookctl), all packages under internal/, SQL "
    "migrations in migrations/ and the Helm chart in deploy/helm/payments-api.",
    """
    cmd/api         HTTP server (chi router, internal/httpx/router.go)
    cmd/worker      background jobs: recon, payouts, webhook dispatcher, purges
    cmd/webhookctl  operator CLI for merchant webhook endpoints and replays
    internal/       ledger, money, psp/{stripe,adyen}, store, session, webhooks, apierr
    migrations/     versioned SQL, applied before every deploy
    deploy/helm/payments-api/  values-staging.yaml, values-prod.yaml
    Make targets: make dev, make test, make lint, make sqlc
    """,
    tags="layout go onboarding",
    agent="claude-code",
    source="README.md",
)
add(
    "pay-envs",
    "fact",
    "2026-03-01 14:40",
    "payments-api environments and base URLs",
    "Three environments: dev (docker compose), staging (api.staging.kestrel.dev, Stripe test "
    "mode, Adyen test) and prod (api.kestrel.dev, live keys, eu-west-1).",
    """
    | env     | base URL                          | PSP mode        | k8s namespace |
    |---------|-----------------------------------|-----------------|---------------|
    | dev     | http://localhost:8080             | stripe-mock     | -             |
    | staging | https://api.staging.kestrel.dev   | test keys       | payments-stg  |
    | prod    | https://api.kestrel.dev           | live keys       | payments      |
    Staging is wiped of merchant data every Sunday 03:00 UTC by the seed job.
    """,
    tags="environments urls",
    agent="alice",
)
add(
    "pay-go-122",
    "fact",
    "2026-03-01 16:05",
    "payments-api builds with Go 1.22",
    "go.mod declares go 1.22.1 and CI uses the golang:1.22-bookworm image; do not use language "
    "features newer than 1.22 in payments-api.",
    """
    go.mod:
        go 1.22.1
    CI: .github/workflows/ci.yml -> container: golang:1.22-bookworm
    golangci-lint v1.57.2 pinned in tools/go.mod
    """,
    tags="go toolchain versions",
    agent="codex",
)
add(
    "pay-amounts-minor-units",
    "fact",
    "2026-03-02 09:30",
    "Money amounts are int64 minor units, never floats",
    "Every amount in payments-api is an int64 in the currency's minor unit (cents); "
    "zero-decimal currencies such as JPY use exponent 0. Floats are rejected at the API edge.",
    """
    - Type: `money.Amount{Value int64, Currency string}` in internal/money/amount.go
    - Exponents: internal/money/iso4217.go (JPY, KRW, CLP = 0; BHD, KWD, JOD = 3)
    - JSON `{"amount": 1999, "currency": "EUR"}` means EUR 19.99
    - A client sending `19.99` gets 422 ERR_AMOUNT_NOT_INTEGER
    - Never convert through float64, not even for display; use money.Format(a, locale)
    """,
    tags="money amounts currency api",
    agent="alice",
    weight=2.0,
)
add(
    "pay-id-prefixes",
    "fact",
    "2026-03-02 11:02",
    "Public object ids are prefixed KSUIDs",
    "Objects exposed by the API use a type prefix plus a 27-char KSUID (mer_, pay_, ref_, po_, "
    "evt_, we_); internal bigint primary keys never leave the service.",
    """
    Generate with `ids.New(ids.Payment)` from internal/ids/ids.go.
    Prefixes: mer_ merchant, pay_ payment, ref_ refund, po_ payout, dsp_ dispute,
              evt_ event, we_ webhook endpoint.
    KSUIDs sort by creation time, so list endpoints can page on id alone.
    Parsing an id with the wrong prefix returns 400 ERR_INVALID_ID.
    """,
    tags="ids api",
    agent="claude-code",
)
add(
    "pay-api-versioning",
    "decision",
    "2026-03-02 15:20",
    "Version the public API in the URL path",
    "The public API is versioned by path prefix (/v1); additive changes ship in place, breaking "
    "changes need /v2. Date-based version headers were rejected as too heavy for our size.",
    """
    Router: internal/httpx/router.go mounts `r.Route("/v1", v1.Routes)`.
    Additive = new optional fields, new endpoints, new enum values behind a flag.
    Breaking = removed/renamed fields, changed types, new required params.
    ADR: docs/adr/0003-url-path-versioning.md
    """,
    tags="api versioning adr",
    agent="alice",
    source="docs/adr/0003-url-path-versioning.md",
)
add(
    "pay-pg15",
    "fact",
    "2026-03-02 17:45",
    "Payments database runs RDS Postgres 15.5",
    "The payments database is RDS for PostgreSQL 15.5 on db.r6g.xlarge, Multi-AZ, in the prod "
    "account; the parameter group is payments-pg15.",
    """
    Instance: payments-prod (db.r6g.xlarge, gp3 500 GiB, Multi-AZ)
    Parameter group: payments-pg15 (max_connections=400, log_min_duration_statement=500)
    Extensions: pgcrypto, pg_stat_statements, btree_gist
    """,
    tags="postgres database versions",
    agent="alice",
)
add(
    "pay-ledger-append-only",
    "fact",
    "2026-03-03 10:15",
    "The ledger is append-only double-entry",
    "ledger_entries rows are never updated or deleted: corrections are posted as reversing "
    "entries, and every posting must balance to zero per currency.",
    """
    - Post with `ledger.Post(ctx, tx, entries...)` in internal/ledger/post.go
    - Post() returns ErrUnbalanced if sum(amount) != 0 for any currency in the batch
    - DB guard: `CREATE TRIGGER ledger_no_update BEFORE UPDATE OR DELETE ON ledger_entries
      FOR EACH ROW EXECUTE FUNCTION raise_immutable();`
    - Accounts: merchant_available, merchant_pending, psp_clearing, fees, disputes_hold
    """,
    tags="ledger accounting database",
    agent="alice",
    weight=2.0,
)
add(
    "pay-logging-zerolog",
    "decision",
    "2026-03-03 13:40",
    "Use zerolog for structured logging",
    "payments-api logs JSON to stdout through zerolog, wrapped in internal/log so the request "
    "id and merchant id are attached from the context.",
    """
    logger := log.Ctx(ctx).With().Str("merchant_id", m.ID).Logger()
    logger.Info().Str("payment_id", p.ID).Msg("captured")
    Level from LOG_LEVEL (debug|info|warn), default info.
    """,
    tags="logging observability",
    agent="codex",
)
add(
    "pay-local-dev",
    "procedure",
    "2026-03-03 16:22",
    "Run payments-api locally",
    "make dev starts Postgres, Redis and stripe-mock in docker compose; copy .env.example to "
    ".env and run the API with go run ./cmd/api on port 8080.",
    """
    1. cp .env.example .env   # DATABASE_URL=postgres://pay:pay@localhost:5433/pay?sslmode=disable
    2. make dev               # docker compose up -d postgres redis stripe-mock
    3. make migrate           # applies migrations/ to the local DB
    4. PSP_MODE=mock go run ./cmd/api
    5. curl -H 'Authorization: Bearer sk_dev_local' localhost:8080/v1/health
    Postgres listens on 5433 (not 5432) so it does not clash with a system install.
    """,
    tags="dev onboarding docker",
    agent="claude-code",
)
add(
    "pay-sessions-redis",
    "decision",
    "2026-03-04 09:50",
    "Use Redis for merchant dashboard sessions",
    "Merchant dashboard sessions live in ElastiCache Redis 7 under sess:<token> with a 24h "
    "sliding TTL; chosen for delivery speed, durability was not a goal.",
    """
    - Store: internal/session/redis_store.go, configured by SESSION_REDIS_URL
    - Every authenticated request refreshes the TTL with GETEX sess:<token> EX 86400
    - Logout = DEL; "log out everywhere" scans sess:* by merchant index set
    """,
    tags="sessions redis auth",
    agent="claude-code",
)
add(
    "pay-pci-scope",
    "context",
    "2026-03-04 12:10",
    "PCI scope: payments-api never touches raw card numbers",
    "Cards are tokenised in the browser by Stripe Elements or Adyen Drop-in, so payments-api "
    "only sees PSP tokens and stays in SAQ A-EP scope. Keep it that way.",
    """
    - Never add an endpoint that accepts PAN/CVC fields, even for testing
    - Request bodies of /v1/payment_methods are excluded from logs (internal/httpx/redact.go)
    - Annual PCI assessment is in September; evidence lives in the compliance drive
    """,
    tags="pci security compliance",
    agent="alice",
    weight=2.5,
)
add(
    "pay-runbooks-ref",
    "reference",
    "2026-03-04 15:30",
    "payments-api runbooks on the wiki",
    "Operational runbooks for payments-api (PSP outage, webhook backlog, recon mismatch, DB "
    "failover) live on the internal wiki.",
    """
    https://wiki.kestrel.dev/payments/runbooks
    - /psp-outage        switch routing, status page template
    - /webhook-backlog   scaling the dispatcher, replays
    - /recon-mismatch    triage of recon_mismatches rows
    - /db-failover       RDS Multi-AZ failover drill
    """,
    tags="runbooks wiki oncall",
    agent="alice",
)
add(
    "pay-migrate-golang-migrate",
    "decision",
    "2026-03-05 10:00",
    "Use golang-migrate for schema migrations",
    "Schema changes are numbered up/down SQL files in migrations/, applied by golang-migrate from "
    "a Helm pre-upgrade hook job before the new pods roll out.",
    """
    migrations/000123_add_payout_batches.up.sql / .down.sql
    migrate -path migrations -database "$DATABASE_URL" up
    Helm hook: deploy/helm/payments-api/templates/migrate-job.yaml
    A dirty state (`error: Dirty database version 123. Fix and force version.`) needs
    `migrate force 122` after fixing the SQL by hand.
    """,
    tags="migrations database postgres",
    agent="codex",
)
add(
    "pay-recon-schedule",
    "fact",
    "2026-03-05 14:15",
    "Settlement reconciliation runs nightly at 02:00 UTC",
    "cmd/worker recon compares Stripe balance transactions and the Adyen settlement detail "
    "report with our ledger every night at 02:00 UTC and writes differences to recon_mismatches.",
    """
    CronJob: payments-recon, schedule "0 2 * * *"
    Inputs: Stripe /v1/balance_transactions (created >= yesterday),
            Adyen SDR CSV from the report download API
    Output: recon_mismatches(psp, psp_reference, ledger_amount, psp_amount, kind)
    Non-empty result posts a summary to #payments-recon.
    """,
    tags="reconciliation settlement cron",
    agent="alice",
)
add(
    "pay-testify",
    "decision",
    "2026-03-06 09:10",
    "Use testify for assertions in Go tests",
    "payments-api tests use stretchr/testify: require for preconditions that must stop the test, "
    "assert for value checks.",
    """
    require.NoError(t, err)
    assert.Equal(t, int64(1999), got.Amount.Value)
    Mocks: none - use the real Postgres from testcontainers instead.
    """,
    tags="testing go",
    agent="codex",
)
add(
    "pay-release-manual",
    "procedure",
    "2026-03-06 16:45",
    "Release payments-api by tagging manually",
    "Write CHANGELOG.md by hand, create a signed v-tag, let CI build the image, then bump "
    "image.tag in values-prod.yaml so Argo CD rolls it out.",
    """
    1. Update CHANGELOG.md (Added / Changed / Fixed) and open a PR
    2. After merge: git tag -s v1.8.0 -m 'v1.8.0' && git push origin v1.8.0
    3. .github/workflows/release.yml pushes ghcr.io/kestrel/payments-api:v1.8.0
    4. PR to deploy/helm/payments-api/values-prod.yaml: image.tag: v1.8.0
    5. Argo CD app payments-prod syncs; watch the deploy dashboard for 15 minutes
    """,
    tags="release deploy",
    agent="alice",
)
add(
    "pay-stripe-api-2024",
    "fact",
    "2026-03-07 11:25",
    "Stripe API version pinned to 2024-06-20",
    "payments-api uses stripe-go v79, which pins Stripe API version 2024-06-20; webhook endpoints "
    "in the Stripe dashboard are created with the same version.",
    """
    go.mod: github.com/stripe/stripe-go/v79 v79.12.0
    stripe.APIVersion == "2024-06-20"
    Mismatched endpoint versions produce payloads our structs cannot decode.
    """,
    tags="stripe psp versions",
    agent="codex",
)
add(
    "pay-idempotency-24h",
    "decision",
    "2026-03-08 10:40",
    "Keep idempotency keys for 24 hours",
    "POST requests carrying an Idempotency-Key are stored with a request hash and the response "
    "for 24h; a replay returns the stored response.",
    """
    - Middleware: internal/idempotency/middleware.go
    - Table: idempotency_keys(merchant_id, key, request_sha256, status, response, created_at)
    - Same key with a different body -> 409 ERR_IDEMPOTENCY_CONFLICT
    - Purge: DELETE ... WHERE created_at < now() - interval '24 hours' (hourly)
    """,
    tags="idempotency api",
    agent="claude-code",
)
add(
    "pay-errors-pattern",
    "pattern",
    "2026-03-09 09:35",
    "Map domain errors to problem+json in one place",
    "Handlers return Go errors; internal/httpx/errors.go WriteError maps them with errors.Is/As to "
    "an HTTP status and an application/problem+json body. Never write error JSON by hand.",
    """
    func (h *Handler) Create(w http.ResponseWriter, r *http.Request) {
        p, err := h.svc.Create(r.Context(), req)
        if err != nil {
            httpx.WriteError(w, r, err)
            return
        }
        httpx.JSON(w, http.StatusCreated, p)
    }
    type URL: https://docs.kestrel.dev/errors/<code>
    """,
    tags="errors http go",
    agent="claude-code",
)
add(
    "pay-error-catalogue",
    "reference",
    "2026-03-09 14:00",
    "API error code catalogue",
    "All public error codes are declared in internal/apierr/codes.go with status and message; the "
    "docs site renders the table from that file.",
    """
    ERR_INVALID_REQUEST        400
    ERR_INVALID_ID             400
    ERR_UNAUTHENTICATED        401
    ERR_MERCHANT_SUSPENDED     403  merchant KYB rejected or suspended
    ERR_NOT_FOUND              404
    ERR_IDEMPOTENCY_CONFLICT   409  same Idempotency-Key, different request body
    ERR_CURRENCY_MISMATCH      422  refund/capture currency differs from the payment
    ERR_PSP_UNAVAILABLE        503  both PSPs failed or timed out
    Adding a code: edit codes.go, run `go generate ./internal/apierr`, update docs.
    """,
    tags="errors api docs",
    agent="codex",
    updated="2026-05-02 10:00",
)
add(
    "pay-webhook-retry-fixed",
    "decision",
    "2026-03-10 10:20",
    "Retry merchant webhooks every 30 seconds, five times",
    "The dispatcher retries a failed merchant webhook delivery every 30 s, at most 5 times, then "
    "marks the event failed. Simple first version; revisit once volume grows.",
    """
    internal/webhooks/dispatcher.go:
        for attempt := 1; attempt <= 5; attempt++ { ...; time.Sleep(30 * time.Second) }
    Retries happen inside the worker goroutine, so a pod restart loses them.
    Non-2xx and timeouts (10 s) both count as failures.
    """,
    tags="webhooks retries",
    agent="codex",
)
add(
    "pay-sqlc",
    "pattern",
    "2026-03-11 11:05",
    "Database access through sqlc-generated queries",
    "No ORM: every query is hand-written SQL in internal/store/queries/*.sql and compiled to typed "
    "Go by sqlc; the generated code is committed.",
    """
    -- name: GetPaymentForUpdate :one
    SELECT * FROM payments WHERE public_id = $1 FOR UPDATE;
    Regenerate: make sqlc  (sqlc v1.26, config sqlc.yaml, engine postgresql, sql_package pgx/v5)
    CI fails if `sqlc diff` reports drift.
    """,
    tags="database sqlc go",
    agent="claude-code",
)
add(
    "pay-nats-events",
    "decision",
    "2026-03-12 10:00",
    "Publish payment events on NATS JetStream",
    "Domain events (payment.captured, refund.succeeded, ...) are published to the JetStream stream "
    "PAYMENTS on subjects payments.events.<type>, retained for 7 days.",
    """
    Stream PAYMENTS: subjects payments.events.>, retention limits, max_age 168h, 3 replicas
    Publisher: internal/events/nats.go using nats.go v1.34
    Consumers: notifications service (durable notif), ingest-pipeline (durable pipeline)
    """,
    tags="events nats messaging",
    agent="alice",
)
add(
    "pay-webhook-signing",
    "pattern",
    "2026-03-12 15:45",
    "Sign outgoing merchant webhooks with HMAC-SHA256",
    "Each webhook we send carries Kestrel-Signature: t=<unix>,v1=<hex hmac> computed over "
    "'<t>.<raw body>' with the endpoint's whsec_ secret; merchants should reject t older than "
    "5 min.",
    """
    mac := hmac.New(sha256.New, endpoint.Secret)
    fmt.Fprintf(mac, "%d.%s", ts, body)
    req.Header.Set("Kestrel-Signature", fmt.Sprintf("t=%d,v1=%x", ts, mac.Sum(nil)))
    Secrets are generated per endpoint (whsec_ + 32 random bytes, base64url) and shown once.
    """,
    tags="webhooks security hmac",
    agent="claude-code",
)
add(
    "pay-stripe-verify",
    "pattern",
    "2026-03-16 10:30",
    "Verify incoming Stripe webhook signatures",
    "Stripe events hitting /psp/stripe/webhook are verified with webhook.ConstructEvent against "
    "STRIPE_WEBHOOK_SECRET before anything is parsed; read the raw body first.",
    """
    payload, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<16))
    ev, err := webhook.ConstructEvent(payload, r.Header.Get("Stripe-Signature"), secret)
    if err != nil { // e.g. "webhook had no valid signature"
        http.Error(w, "bad signature", http.StatusBadRequest); return
    }
    Handler: internal/psp/stripe/webhook.go. Do not decode JSON before verifying.
    """,
    tags="stripe webhooks security",
    agent="codex",
)
add(
    "pay-stripe-docs-ref",
    "reference",
    "2026-03-16 11:00",
    "Stripe webhook and signature docs",
    "Stripe's own pages on receiving webhooks, verifying signatures and event types.",
    """
    https://docs.stripe.com/webhooks
    https://docs.stripe.com/webhooks#verify-events
    https://docs.stripe.com/api/events/types
    https://docs.stripe.com/upgrades  (API version changelog)
    """,
    tags="stripe docs webhooks",
    agent="codex",
)
add(
    "pay-pgbouncer",
    "decision",
    "2026-03-18 09:15",
    "Put PgBouncer in front of the payments Postgres",
    "Run PgBouncer in transaction pooling mode between the 30 API pods and RDS to stop connection "
    "storms during deploys from exhausting max_connections.",
    """
    Symptom: FATAL: remaining connection slots are reserved for non-replication superuser
    connections (during rolling deploys, 30 pods x pgxpool MaxConns 20 = 600 > 400)
    Chart: deploy/helm/pgbouncer (bitnami image), 2 replicas, Service pgbouncer.payments:6432
    pool_mode = transaction, default_pool_size = 40, max_client_conn = 2000
    """,
    tags="postgres pgbouncer database connections",
    agent="alice",
    weight=1.5,
)
add(
    "pay-pgbouncer-simple-protocol",
    "decision",
    "2026-03-25 14:30",
    "Use pgx simple protocol behind PgBouncer",
    "Transaction pooling breaks pgx's automatic prepared-statement cache, so DATABASE_URL sets "
    "default_query_exec_mode=simple_protocol for every service going through PgBouncer.",
    """
    Error seen right after the PgBouncer rollout:
      ERROR: prepared statement "stmtcache_5f2a9c" already exists (SQLSTATE 42P05)
    Fix: postgres://...@pgbouncer.payments:6432/pay?default_query_exec_mode=simple_protocol
    Cost: ~6% more DB CPU (no plan reuse). Revisit when PgBouncer supports prepared statements.
    """,
    tags="postgres pgbouncer pgx",
    agent="claude-code",
    links="pay-pgbouncer",
)
add(
    "pay-pgx-ref",
    "reference",
    "2026-03-26 09:00",
    "pgx v5 documentation",
    "Go driver docs we keep coming back to: pgxpool configuration and the QueryExecMode options.",
    """
    https://pkg.go.dev/github.com/jackc/pgx/v5
    https://pkg.go.dev/github.com/jackc/pgx/v5/pgxpool#Config
    https://pkg.go.dev/github.com/jackc/pgx/v5#QueryExecMode
    """,
    tags="pgx go docs",
    agent="claude-code",
    weight=0.5,
)
add(
    "pay-ratelimit-redis",
    "decision",
    "2026-04-01 10:00",
    "Rate limit merchants with a Redis token bucket",
    "Each merchant gets 100 requests/s with a burst of 200, enforced in-process by a Lua token "
    "bucket in Redis; over the limit returns 429 with Retry-After.",
    """
    internal/ratelimit/redis.go, script internal/ratelimit/bucket.lua
    Key: rl:{merchant_id}, EVALSHA per request (~0.3 ms)
    Headers: X-RateLimit-Limit, X-RateLimit-Remaining, Retry-After
    """,
    tags="ratelimit redis api",
    agent="codex",
)
add(
    "pay-adyen-hmac",
    "pattern",
    "2026-04-02 13:20",
    "Verify Adyen notification HMAC signatures",
    "Adyen standard notifications are checked item by item with the HMAC key from ADYEN_HMAC_KEY; "
    "the endpoint must still answer [accepted] or Adyen keeps retrying.",
    """
    Handler: internal/psp/adyen/notifications.go
    for _, item := range req.NotificationItems {
        if !hmacvalidator.ValidateHmac(item.NotificationRequestItem, hmacKey) { reject++; continue }
        ...
    }
    w.Write([]byte("[accepted]"))   // always, even when some items were rejected
    ADYEN_HMAC_KEY is hex; decode before use.
    """,
    tags="adyen webhooks security hmac",
    agent="claude-code",
)
add(
    "pay-adyen-docs-ref",
    "reference",
    "2026-04-02 13:40",
    "Adyen webhook documentation",
    "Adyen pages on standard notifications, HMAC verification and the capture/refund APIs.",
    """
    https://docs.adyen.com/development-resources/webhooks/
    https://docs.adyen.com/development-resources/webhooks/verify-hmac-signatures/
    https://docs.adyen.com/online-payments/capture/
    https://docs.adyen.com/api-explorer/Checkout/71/overview
    """,
    tags="adyen docs webhooks",
    agent="claude-code",
)
add(
    "pay-expand-contract",
    "pattern",
    "2026-04-03 10:10",
    "Expand and contract for payments schema changes",
    "Never change a hot table in one step: add nullable, backfill in batches, switch readers, then "
    "enforce; indexes are always built CONCURRENTLY outside a transaction.",
    """
    1. ALTER TABLE payments ADD COLUMN settlement_id bigint;          -- nullable, instant
    2. backfill: UPDATE ... WHERE id BETWEEN $1 AND $2  (5k rows per batch, sleep 200ms)
    3. deploy code that reads and writes the column
    4. ALTER TABLE payments ADD CONSTRAINT ... CHECK (settlement_id IS NOT NULL) NOT VALID;
       ALTER TABLE payments VALIDATE CONSTRAINT ...;
    5. CREATE INDEX CONCURRENTLY payments_settlement_id_idx ON payments (settlement_id);
    payments has ~180M rows; a table rewrite would block checkout for minutes.
    """,
    tags="migrations postgres database",
    agent="alice",
    weight=1.5,
)
add(
    "pay-outbox",
    "pattern",
    "2026-04-06 11:30",
    "Transactional outbox for payment events",
    "State changes and the event describing them are written in the same DB transaction (outbox "
    "table); a relay publishes rows afterwards, so events are at-least-once and never lost.",
    """
    INSERT INTO outbox (event_id, type, payload) VALUES ($1, 'payment.captured', $2);  -- same tx
    Relay: internal/outbox/relay.go
      SELECT ... FROM outbox WHERE published_at IS NULL ORDER BY id LIMIT 500 FOR UPDATE SKIP LOCKED
    Consumers must dedupe on event_id.
    """,
    tags="events outbox database",
    agent="claude-code",
)
add(
    "pay-lesson-double-charge",
    "lesson",
    "2026-04-09 18:20",
    "Incident: double charges from retried requests without an idempotency key",
    "The iOS SDK 4.2 retried POST /v1/payments on a read timeout without an Idempotency-Key and "
    "212 customers were charged twice (EUR 18,430). Keys are now mandatory on creates.",
    """
    Ticket: PAY-1499, incident INC-2026-004, SEV2, 2026-04-08 19:10-21:45 UTC
    Root cause: SDK timeout 15 s < our p99 for 3DS-heavy payments (19 s)
    Fix: POST /v1/payments without Idempotency-Key -> 400 ERR_IDEMPOTENCY_KEY_REQUIRED
    Cleanup: scripts/refund_duplicates.go --incident INC-2026-004 --dry-run first
    Lesson: every money-moving POST must be idempotent at the server, never trust clients.
    """,
    tags="incident idempotency postmortem",
    agent="alice",
    weight=3.0,
)
add(
    "pay-otel",
    "decision",
    "2026-04-11 10:45",
    "Trace payments-api with OpenTelemetry",
    "payments-api exports OTLP traces to the cluster otel-collector (Tempo backend); HTTP and pgx "
    "are auto-instrumented, head sampling 10%, errors kept by tail sampling in the collector.",
    """
    OTEL_EXPORTER_OTLP_ENDPOINT=http://otel-collector.observability:4317
    OTEL_TRACES_SAMPLER=parentbased_traceidratio  OTEL_TRACES_SAMPLER_ARG=0.1
    Instrumentation: otelhttp.NewHandler(router, "payments-api"), github.com/exaring/otelpgx
    Span names for PSP calls: psp.<provider>.<op>, e.g. psp.adyen.capture
    """,
    tags="tracing observability opentelemetry",
    agent="codex",
)
add(
    "pay-rotate-stripe-secret",
    "procedure",
    "2026-04-14 15:00",
    "Rotate the Stripe webhook signing secret",
    "Roll the endpoint secret in Stripe with a 24h overlap, deploy it as "
    "STRIPE_WEBHOOK_SECRET_NEXT so both verify, then promote it and delete the old value.",
    """
    1. Stripe dashboard -> Developers -> Webhooks -> endpoint -> Roll secret (expire old in 24h)
    2. aws secretsmanager put-secret-value --secret-id payments/prod/stripe \
         (add key STRIPE_WEBHOOK_SECRET_NEXT=whsec_...)
    3. Restart payments-api; internal/psp/stripe/webhook.go tries both secrets
    4. Next day: copy NEXT into STRIPE_WEBHOOK_SECRET, remove NEXT, restart again
    """,
    tags="stripe secrets rotation webhooks",
    agent="alice",
)
add(
    "pay-psp-timeouts",
    "pattern",
    "2026-04-15 11:15",
    "Every outbound PSP call gets its own deadline",
    "PSP calls go through psp.Call, which derives a context with a per-operation timeout from "
    "internal/psp/timeouts.go instead of relying on the inbound request's deadline.",
    """
    var Timeouts = map[Op]time.Duration{
        OpAuthorize: 10 * time.Second,
        OpCapture:   15 * time.Second, // was 5s until the June Adyen timeouts
        OpRefund:    10 * time.Second,
    }
    ctx, cancel := context.WithTimeout(ctx, Timeouts[op]); defer cancel()
    """,
    tags="psp timeouts go",
    agent="claude-code",
    updated="2026-06-16 17:00",
)
add(
    "pay-psp-retry",
    "pattern",
    "2026-04-16 10:05",
    "Retry PSP API calls on 5xx with short backoff",
    "Calls to Stripe/Adyen are retried at most 3 times (200 ms, 400 ms, 800 ms plus jitter) and "
    "only when safe: GETs, or POSTs sent with the PSP's own idempotency key.",
    """
    internal/psp/retry.go: retry.Do(ctx, retry.Attempts(3), retry.Base(200*time.Millisecond))
    Retry on: 429, 500, 502, 503, 504, connection reset. Never on 402 card_declined.
    Stripe: Idempotency-Key header = our payment id + op; Adyen: Idempotency-Key likewise.
    """,
    tags="psp retries stripe adyen",
    agent="codex",
)
add(
    "pay-psp-routing",
    "decision",
    "2026-04-18 14:00",
    "Route EUR card payments to Adyen, the rest to Stripe",
    "internal/psp/router.go sends EUR card payments to Adyen (lower interchange in EEA) and "
    "everything else, including wallets, to Stripe; merchants can be pinned with psp_override.",
    """
    rules (first match wins):
      merchant.psp_override != ""            -> that PSP
      currency == EUR && method == card      -> adyen
      default                                -> stripe
    Failover to the other PSP only for authorizations, never for captures/refunds.
    PAY-1530
    """,
    tags="psp routing adyen stripe",
    agent="alice",
)
add(
    "pay-lesson-clock",
    "lesson",
    "2026-04-22 09:40",
    "Inject a clock instead of calling time.Now",
    "TestExpireAuthorizations failed only when CI ran near midnight UTC because the code called "
    "time.Now() directly. Business logic now takes a clock.Clock.",
    """
    internal/clock: type Clock interface { Now() time.Time }
    prod:  clock.System{}
    tests: clk := clock.NewFake(time.Date(2026, 4, 1, 23, 59, 0, 0, time.UTC))
    lint: forbidigo forbids time.Now outside internal/clock and main packages
    """,
    tags="testing flaky go time",
    agent="claude-code",
)
add(
    "pay-refund-flow",
    "pattern",
    "2026-04-24 10:30",
    "How refunds flow through payments-api",
    "POST /v1/payments/{id}/refunds creates a pending refund, calls the PSP, and posts reversing "
    "ledger entries only when the PSP confirms via webhook (refund.succeeded / REFUND).",
    """
    states: pending -> succeeded | failed
    Partial refunds allowed until sum(refunds) == captured amount.
    Ledger on success: debit merchant_available, credit psp_clearing.
    Handler: internal/refunds/service.go; PSP confirm: internal/psp/*/webhook.go
    """,
    tags="refunds ledger api",
    agent="codex",
)
add(
    "pay-3ds",
    "context",
    "2026-04-28 16:10",
    "3-D Secure 2 challenge flow",
    "When the issuer wants a challenge the payment goes to requires_action with a redirect URL; "
    "the customer returns to return_url and we confirm. Low-value EEA payments request an "
    "exemption.",
    """
    status: requires_action, next_action.redirect_url
    return_url must be https and on the merchant's allowed domains list
    Exemption: amount < 3000 EUR minor units -> request low_value exemption (Adyen: sca_exemption)
    3DS payments are the slow tail: p99 19 s end to end.
    """,
    tags="3ds sca cards",
    agent="alice",
)
add(
    "pay-kyb-gate",
    "context",
    "2026-05-02 11:20",
    "Merchant KYB status gates live payments",
    "merchants.kyb_status must be approved before a merchant can create live payments; rejected or "
    "suspended merchants get 403 ERR_MERCHANT_SUSPENDED on every write.",
    """
    kyb_status: pending | approved | rejected | suspended (set by the compliance team's tool)
    Test-mode keys work while pending.
    Check lives in internal/auth/merchant.go RequireLive(); PAY-1552
    """,
    tags="merchants kyb compliance",
    agent="codex",
)
add(
    "pay-webhook-retry-backoff",
    "decision",
    "2026-05-05 10:00",
    "Retry webhook deliveries with exponential backoff",
    "Failed merchant webhook deliveries are rescheduled with exponential backoff and full jitter "
    "(1 min doubling to a 6 h cap, 15 attempts over ~3 days), then dead-lettered.",
    """
    PAY-1511. Attempts are rows in webhook_attempts(next_attempt_at), so restarts lose nothing.
    Dispatcher loop: SELECT ... WHERE next_attempt_at <= now() FOR UPDATE SKIP LOCKED LIMIT 100
    delay = rand(0, min(6h, 1m * 2^attempt))
    2xx = delivered; 410 Gone = disable the endpoint; anything else = retry
    After attempt 15: row moves to webhook_dead_letters, merchant gets an email.
    """,
    tags="webhooks retries",
    agent="claude-code",
    supersedes="pay-webhook-retry-fixed",
    weight=1.5,
)
add(
    "pay-replay-dead-letters",
    "procedure",
    "2026-05-06 14:30",
    "Replay dead-lettered merchant webhooks",
    "Use cmd/webhookctl to re-enqueue dead-lettered deliveries for one endpoint and time window, "
    "always with --dry-run first.",
    """
    kubectl -n payments exec deploy/payments-worker -- \
      webhookctl replay --endpoint we_2Jd8... --since 2026-05-01T00:00:00Z --dry-run
    # check the count, then repeat without --dry-run
    Replays keep the original event id, so merchants can dedupe.
    """,
    tags="webhooks operations",
    agent="alice",
)
add(
    "pay-dispute-flow",
    "pattern",
    "2026-05-08 15:15",
    "How disputes and chargebacks are handled",
    "A PSP dispute notification (charge.dispute.created / Adyen CHARGEBACK) opens a dsp_ object "
    "and moves the disputed amount to disputes_hold in the ledger until it is won or lost.",
    """
    Evidence: POST /v1/disputes/{id}/evidence before evidence_due_by (usually 7-21 days)
    Won: move disputes_hold back to merchant_available. Lost: debit merchant plus EUR 15 fee.
    Handler: internal/disputes/service.go; PAY-1558
    """,
    tags="disputes chargebacks ledger",
    agent="codex",
)
add(
    "pay-lesson-tx-http",
    "lesson",
    "2026-05-14 20:05",
    "Never hold a DB transaction open across a PSP HTTP call",
    "When Adyen slowed to 8 s, captures holding a transaction during the HTTP call used up every "
    "PgBouncer server connection and checkout stalled for 25 minutes.",
    """
    PAY-1560. pgbouncer SHOW POOLS: cl_waiting 912, sv_active 40/40
    Old: BEGIN; SELECT ... FOR UPDATE; call Adyen; UPDATE; COMMIT
    New: tx1 mark capture pending -> commit -> call PSP -> tx2 record result
    A crash between steps is repaired by the capture-sweeper job (cmd/worker sweep-captures).
    """,
    tags="incident postgres pgbouncer psp",
    agent="alice",
    weight=2.0,
)
add(
    "pay-partial-capture",
    "fact",
    "2026-05-19 10:25",
    "Partial and multiple captures",
    "An authorization can be captured in several parts up to the authorized amount on Adyen; on "
    "Stripe only one capture is possible and the remainder is released automatically.",
    """
    POST /v1/payments/{id}/captures {"amount": 500}
    Adyen: multiple partial captures supported (captureDelayHours=manual on the merchant account)
    Stripe: amount_to_capture once; uncaptured remainder is refunded to the card
    """,
    tags="captures psp adyen stripe",
    agent="codex",
)
add(
    "pay-logging-slog",
    "decision",
    "2026-05-20 13:00",
    "Standardise payments-api logging on log/slog",
    "zerolog is replaced by the standard library's log/slog JSON handler, dropping a dependency "
    "and letting a context handler add trace_id and span_id to every line.",
    """
    PAY-1544.
    h := slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel})
    slog.SetDefault(slog.New(otelctx.Wrap(h)))   // internal/log/handler.go
    slog.InfoContext(ctx, "captured", "payment_id", p.ID)
    depguard now forbids github.com/rs/zerolog.
    """,
    tags="logging observability",
    agent="claude-code",
    supersedes="pay-logging-zerolog",
)
add(
    "pay-payout-schedule",
    "fact",
    "2026-05-22 09:00",
    "Merchant payouts run daily at 06:00 UTC on T+2",
    "cmd/worker payouts groups each merchant's available balance from two business days earlier "
    "into one payout at 06:00 UTC; minimum EUR 1.00, otherwise it rolls over.",
    """
    CronJob: payments-payouts, schedule "0 6 * * 1-5"
    Creates po_ objects, sends SEPA credit transfers through the bank partner API
    Holidays: TARGET2 calendar in internal/calendar/target2.go
    """,
    tags="payouts cron settlement",
    agent="alice",
)
add(
    "pay-lesson-redis-eviction",
    "lesson",
    "2026-05-27 17:30",
    "Redis eviction logged every merchant out",
    "The sessions Redis hit maxmemory and the allkeys-lru policy evicted sess:* keys, logging out "
    "38% of dashboard users at once. State you cannot lose does not belong in an LRU cache.",
    """
    PAY-1580, 2026-05-27 14:05 UTC. cache.t4g.medium, used_memory 3.09 GB of 3.09 GB
    The rate-limit keys (rl:*) grew after the April change and pushed sessions out.
    Alerts added: evicted_keys > 0, used_memory > 80%.
    Follow-up: move sessions to Postgres (decided 2026-06-10).
    """,
    tags="incident redis sessions",
    agent="alice",
    weight=2.0,
)
add(
    "pay-idempotency-7d",
    "decision",
    "2026-06-03 11:00",
    "Retain idempotency keys for 7 days",
    "Adyen and some merchant integrations retry for up to 3 days, so stored idempotency responses "
    "are now kept 7 days instead of 24 hours; the purge runs nightly in batches.",
    """
    PAY-1602
    Purge: cmd/worker purge-idempotency, 03:30 UTC, DELETE ... LIMIT 10000 in a loop
    Table grows to ~45M rows; partitioned by day (idempotency_keys_p20260603 ...)
    Lookups stay on (merchant_id, key) primary key.
    """,
    tags="idempotency api database",
    agent="claude-code",
    supersedes="pay-idempotency-24h",
)
add(
    "pay-lesson-migration-lock",
    "lesson",
    "2026-06-05 19:45",
    "A column default with gen_random_uuid() locked the payments table",
    "ALTER TABLE payments ADD COLUMN trace_uuid uuid DEFAULT gen_random_uuid() rewrote 180M rows "
    "under an ACCESS EXCLUSIVE lock; checkout returned 503s for four minutes.",
    """
    PAY-1611. Volatile defaults force a table rewrite (constant defaults do not since PG 11).
    Now every migration starts with: SET lock_timeout = '3s'; SET statement_timeout = '15min';
    Review checklist item: "does this ALTER rewrite or lock a hot table?"
    """,
    tags="incident migrations postgres",
    agent="alice",
    weight=2.0,
)
add(
    "pay-sessions-postgres",
    "decision",
    "2026-06-10 10:30",
    "Move merchant sessions to Postgres",
    "After the May eviction incident sessions live in a Postgres table keyed by token hash with an "
    "expiry index; Redis is only used as a cache that may be dropped.",
    """
    CREATE TABLE merchant_sessions (
      token_hash bytea PRIMARY KEY,     -- sha256(token)
      merchant_id bigint NOT NULL, expires_at timestamptz NOT NULL);
    CREATE INDEX ON merchant_sessions (expires_at);
    GC: cmd/worker sessions-gc every 10 min. p99 auth overhead +1.8 ms, accepted.
    Code: internal/session/pg_store.go; SESSION_REDIS_URL removed.
    """,
    tags="sessions postgres auth",
    agent="claude-code",
    supersedes="pay-sessions-redis",
    links="pay-lesson-redis-eviction",
)
add(
    "pay-lesson-adyen-timeout",
    "lesson",
    "2026-06-16 16:40",
    "Adyen capture timeouts at 5 seconds",
    "APAC captures on Adyen take up to 7 s at p99, so our 5 s capture deadline gave up on captures "
    "that then succeeded. Capture timeout is now 15 s and late results reconcile via webhook.",
    """
    Error: Post "https://checkout-live.adyenpayments.com/checkout/v71/payments/.../captures":
           context deadline exceeded
    PAY-1620. 312 captures marked failed that Adyen had actually accepted.
    Reconciled by the CAPTURE notification handler; OpCapture timeout 5s -> 15s.
    """,
    tags="incident adyen timeouts psp",
    agent="codex",
    links="pay-psp-timeouts",
)
add(
    "pay-release-please",
    "procedure",
    "2026-06-24 10:00",
    "Release payments-api with release-please",
    "Releases are cut by merging the release-please PR, which bumps the version, writes "
    "CHANGELOG.md from conventional commits and tags; prod rollout is still a values-prod.yaml "
    "bump.",
    """
    1. Merge feature PRs with conventional commit titles (feat:, fix:, feat!:)
    2. release-please keeps PR "chore(main): release 1.13.0" up to date - review and merge it
    3. The tag triggers .github/workflows/release.yml -> ghcr.io/kestrel/payments-api:v1.13.0
    4. Bump image.tag in deploy/helm/payments-api/values-prod.yaml, Argo CD syncs
    Config: release-please-config.json, .release-please-manifest.json
    """,
    tags="release deploy",
    agent="claude-code",
    supersedes="pay-release-manual",
)
add(
    "pay-go-cmp",
    "decision",
    "2026-06-30 15:20",
    "Drop testify; use the standard library and go-cmp in tests",
    "New and touched tests use plain comparisons with t.Errorf and cmp.Diff for structs; testify "
    "is removed package by package.",
    """
    PAY-1745
    if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
        t.Errorf("Create() mismatch (-want +got):\\n%s", diff)
    }
    Reason: clearer failure output, one less dependency, matches the Go style guide.
    """,
    tags="testing go",
    agent="alice",
    supersedes="pay-testify",
)
add(
    "pay-q3-goals",
    "context",
    "2026-07-01 09:00",
    "Payments team goals for Q3 2026",
    "Q3 focus: move events to Kafka, upgrade the database to Postgres 16, multi-currency payouts "
    "for GBP and SEK, and pass the September PCI assessment.",
    """
    - PAY-1790 events to MSK Kafka (data team needs Kafka Connect)
    - PAY-1801 Postgres 16 via RDS blue/green
    - PAY-1815 payouts in GBP and SEK
    - PCI evidence collection from Aug 15
    """,
    tags="planning roadmap",
    agent="alice",
)
add(
    "pay-migrate-atlas",
    "decision",
    "2026-07-02 11:10",
    "Switch schema migrations to Atlas",
    "Versioned migrations are now managed by Atlas (atlas.hcl) with migrate lint in CI, replacing "
    "golang-migrate; lint catches destructive changes and non-concurrent index builds.",
    """
    PAY-1702
    Import once: atlas migrate import --from "file://migrations?format=golang-migrate" --to file://migrations
    New migration: atlas migrate diff add_payout_currency --env local
    CI: atlas migrate lint --env ci --latest 1   (blocks DS103, MF101, PG110)
    atlas.sum conflicts after a rebase: atlas migrate hash
    Still applied by the Helm pre-upgrade job, now running `atlas migrate apply`.
    """,
    tags="migrations database postgres",
    agent="claude-code",
    supersedes="pay-migrate-golang-migrate",
)
add(
    "pay-lesson-currency-mismatch",
    "lesson",
    "2026-07-07 12:00",
    "Refunds on FX payments must use the settlement currency",
    "Refunding a USD payment that settled in EUR with currency=EUR returned ERR_CURRENCY_MISMATCH; "
    "refunds always use the payment's presentment currency and the PSP handles FX.",
    """
    PAY-1760. Support had been retrying refunds from the dashboard with the merchant currency.
    Dashboard now pre-fills currency from payment.currency and disables the field.
    """,
    tags="refunds currency fx",
    agent="codex",
)
add(
    "pay-pgbouncer-prepared",
    "decision",
    "2026-07-15 10:20",
    "Enable PgBouncer prepared statement support",
    "PgBouncer 1.22 tracks protocol-level prepared statements (max_prepared_statements = 200), so "
    "pgx runs in its default statement-cache mode again and simple_protocol is gone.",
    """
    PAY-1733. Image bitnami/pgbouncer:1.22.1, pool_mode still transaction
    pgbouncer.ini: max_prepared_statements = 200
    DATABASE_URL no longer has default_query_exec_mode=simple_protocol
    Result: DB CPU -7%, p50 query latency -11%
    """,
    tags="postgres pgbouncer pgx",
    agent="claude-code",
    supersedes="pay-pgbouncer-simple-protocol",
    links="pay-pgbouncer",
)
add(
    "pay-ratelimit-envoy",
    "decision",
    "2026-07-21 14:00",
    "Move API rate limiting to Envoy's global rate limit service",
    "Per-merchant limits are enforced at the edge by Envoy with envoyproxy/ratelimit (descriptors "
    "merchant_id and route); the in-process Redis token bucket was deleted.",
    """
    Config: deploy/envoy/ratelimit-config.yaml
      - key: merchant_id  rate_limit: {unit: second, requests_per_unit: 100}
      - key: tier=enterprise -> 500/s
    x-merchant-id is set by the ext_authz filter; 429 keeps Retry-After.
    Removed internal/ratelimit (PAY-1768).
    """,
    tags="ratelimit envoy api",
    agent="codex",
    supersedes="pay-ratelimit-redis",
)
add(
    "pay-pg16",
    "fact",
    "2026-07-28 22:30",
    "Payments database upgraded to Postgres 16.3",
    "The payments RDS instance was moved to PostgreSQL 16.3 with an RDS blue/green deployment "
    "(52 s of write downtime at switchover); parameter group is now payments-pg16.",
    """
    PAY-1801. Switchover 2026-07-28 22:04 UTC.
    Parameter group payments-pg16 copies pg15 settings plus io_combine_limit defaults.
    Run ANALYZE on all tables after a major upgrade (done by the runbook script).
    """,
    tags="postgres database versions",
    agent="alice",
    supersedes="pay-pg15",
)
add(
    "pay-kafka-events",
    "decision",
    "2026-08-03 10:00",
    "Move payment domain events to Kafka on MSK",
    "Domain events now go from the outbox relay to Amazon MSK (Kafka 3.6), topic "
    "payments.events.v1 keyed by payment id, so the data team can consume them with Kafka Connect.",
    """
    PAY-1790. Client: github.com/twmb/franz-go; producer acks=all, idempotent
    Topic payments.events.v1: 12 partitions, RF 3, retention 14 days
    Dual-published to NATS 2026-08-03..2026-08-24, then the PAYMENTS stream was deleted.
    Envelope: {event_id, type, occurred_at, payload} - CloudEvents-like, JSON
    """,
    tags="events kafka messaging",
    agent="claude-code",
    supersedes="pay-nats-events",
)
add(
    "pay-lesson-webhook-backlog",
    "lesson",
    "2026-08-18 21:10",
    "Incident: webhook backlog after a config typo",
    "A typo in WEBHOOK_WORKERS (value 'l6') made the dispatcher fall back to one worker; 46k "
    "deliveries queued up and merchants saw events up to 3 hours late.",
    """
    PAY-1822, INC-2026-019, 2026-08-18 12:30-15:40 UTC
    config parsing now fails fast: strconv.Atoi error aborts startup
    New alert: webhook_pending_total > 5000 for 10m pages payments on-call
    Drained by scaling payments-worker to 6 replicas.
    """,
    tags="incident webhooks config",
    agent="alice",
    weight=2.0,
)
add(
    "pay-go-123",
    "fact",
    "2026-08-20 11:00",
    "payments-api upgraded to Go 1.23",
    "go.mod now declares go 1.23.0 with toolchain go1.23.2 and CI builds on golang:1.23-bookworm; "
    "range-over-func iterators are allowed in new code.",
    """
    PAY-1811
    go.mod:  go 1.23.0 / toolchain go1.23.2
    golangci-lint bumped to v1.61.0 (older versions panic on range-over-func)
    """,
    tags="go toolchain versions",
    agent="codex",
    supersedes="pay-go-122",
)
add(
    "pay-stripe-api-basil",
    "fact",
    "2026-09-08 10:40",
    "Stripe API version bumped to 2025-03-31.basil",
    "payments-api moved to stripe-go v82 and Stripe API version 2025-03-31.basil; webhook "
    "endpoints were recreated on the new version and charges are read via latest_charge.",
    """
    PAY-1840
    go.mod: github.com/stripe/stripe-go/v82 v82.1.0
    Breaking for us: PaymentIntent.charges list removed -> use latest_charge (expand it)
    New webhook endpoint we_stripe_basil created; old one disabled 2026-09-10.
    """,
    tags="stripe psp versions",
    agent="claude-code",
    supersedes="pay-stripe-api-2024",
)
add(
    "pay-multicurrency-payouts",
    "context",
    "2026-09-14 15:00",
    "Multi-currency payouts for GBP and SEK",
    "Merchants with GBP or SEK balances are now paid out in that currency via the bank partner's "
    "Faster Payments and Bankgirot rails instead of being converted to EUR.",
    """
    PAY-1815. merchants.payout_currencies text[] (default {EUR})
    Payout cut-off per rail: FPS 14:00 UTC, Bankgirot 11:00 UTC
    Ledger: separate merchant_available accounts per currency
    """,
    tags="payouts currency",
    agent="alice",
)
add(
    "pay-pci-2026",
    "context",
    "2026-09-22 09:30",
    "PCI DSS 4.0 assessment, September 2026",
    "The QSA reviewed payments-api on 2026-09-21/22; two findings: log retention for the webhook "
    "service must be 12 months, and the break-glass role needs quarterly access reviews.",
    """
    Findings tracked as PAY-1851 (CloudWatch retention 365d) and OPS-188 (access reviews)
    Evidence folder: compliance drive / PCI-2026 / payments-api
    Next assessment: September 2027
    """,
    tags="pci compliance audit",
    agent="alice",
)
add(
    "pay-advisory-lock-jobs",
    "pattern",
    "2026-06-22 10:15",
    "Money-moving jobs hold a Postgres advisory lock",
    "Payout, recon and capture-sweeper jobs take pg_try_advisory_lock on a per-job key before "
    "doing anything, so a rescheduled or duplicated pod can never run the same job twice in "
    "parallel.",
    """
    internal/jobs/lock.go:
      jobs.WithLock(ctx, pool, "payouts", func(ctx context.Context) error { ... })
      SELECT pg_try_advisory_lock(hashtext('payouts'))  -- false => log and exit 0
    The lock is session-level, so the job keeps one dedicated connection (not via PgBouncer:
    DATABASE_URL_DIRECT).
    Added after Karpenter moved a payouts pod mid-run (PAY-1627).
    """,
    tags="jobs postgres concurrency",
    agent="claude-code",
)
add(
    "pay-pref-errors",
    "preference",
    "2026-07-09 09:20",
    "Return errors with context; never log and return",
    "Alice wants Go errors wrapped once with context (fmt.Errorf with %w) and handled in exactly "
    "one place: either log it or return it, never both; panics only for programmer errors.",
    """
    Good: return fmt.Errorf("capture %s: %w", p.ID, err)
    Bad:  slog.Error("capture failed", "err", err); return err   // logged twice upstream
    Sentinel errors live next to the package API (ErrUnbalanced, ErrNotCapturable).
    """,
    tags="errors go style",
    agent="alice",
    weight=1.5,
)
add(
    "pay-restricted-keys",
    "context",
    "2026-09-03 14:20",
    "Restricted API keys for merchants",
    "Merchants can now create restricted keys (rk_live_/rk_test_) limited to a list of scopes, "
    "e.g. a reporting tool that may only read payouts and balance.",
    """
    PAY-1830. Table api_keys(kind secret|restricted, scopes text[])
    Scope check happens in internal/auth/scopes.go before the handler; missing scope -> 403
    Dashboard: merchant detail page lists keys with last-used time.
    """,
    tags="auth api-keys",
    agent="codex",
)
add(
    "pay-lesson-basil-webhooks",
    "lesson",
    "2026-09-11 16:30",
    "Old-version Stripe webhook payloads failed to decode after the basil upgrade",
    "For 40 minutes after deploying stripe-go v82 the old webhook endpoint (API 2024-06-20) was "
    "still enabled, and its payloads failed to decode in the new structs; 1,900 events retried.",
    """
    PAY-1844
    Log: stripe webhook: json: cannot unmarshal array into Go struct field PaymentIntent.charges
    Fix: disable the old endpoint before deploying, or keep a decoder per API version
    Stripe retried every event, so nothing was lost; recon was clean the next night.
    """,
    tags="incident stripe webhooks",
    agent="claude-code",
    weight=1.5,
    links="pay-stripe-api-basil",
)

# --- API endpoint references: a family of near-identical records ---------------------------

ENDPOINTS = [
    # key, date, method+path, handler, scope, notes
    (
        "pay-ep-create-payment",
        "2026-03-09",
        "POST /v1/payments",
        "internal/payments/handler.go",
        "payments:write",
        "Idempotency-Key required (since PAY-1499); returns 201 with status requires_action or "
        "authorized",
    ),
    (
        "pay-ep-capture",
        "2026-04-24",
        "POST /v1/payments/{id}/captures",
        "internal/captures/handler.go",
        "payments:write",
        "Body {amount}; partial amounts allowed on Adyen only; 409 if already fully captured",
    ),
    (
        "pay-ep-refund",
        "2026-04-24",
        "POST /v1/payments/{id}/refunds",
        "internal/refunds/handler.go",
        "refunds:write",
        "Body {amount, reason}; currency must equal the payment currency",
    ),
    (
        "pay-ep-list-payouts",
        "2026-05-22",
        "GET /v1/payouts",
        "internal/payouts/handler.go",
        "payouts:read",
        "Cursor pagination with starting_after=po_...; limit 1-100, default 20",
    ),
    (
        "pay-ep-webhook-endpoints",
        "2026-03-12",
        "POST /v1/webhook_endpoints",
        "internal/webhooks/endpoints_handler.go",
        "webhooks:write",
        "Body {url, events[]}; url must be https; the whsec_ secret is returned only once",
    ),
    (
        "pay-ep-dispute-evidence",
        "2026-05-08",
        "POST /v1/disputes/{id}/evidence",
        "internal/disputes/handler.go",
        "disputes:write",
        "multipart/form-data, files up to 4 MB each, PDF/PNG/JPEG; 422 after evidence_due_by",
    ),
    (
        "pay-ep-balance",
        "2026-06-12",
        "GET /v1/balance",
        "internal/balance/handler.go",
        "balance:read",
        "Returns available and pending per currency, computed from ledger_entries",
    ),
]

for key, day, route, handler, scope, notes in ENDPOINTS:
    method, path = route.split(" ", 1)
    add(
        key,
        "reference",
        day,
        f"API endpoint {route}",
        f"{route}: handled in {handler}, requires the {scope} API key scope.",
        f"""
        Handler: {handler}
        Auth scope: {scope}
        {notes}
        OpenAPI: api/openapi.yaml paths["{path}"].{method.lower()}
        """,
        tags="api endpoints",
        agent="codex",
    )

RECORDS = P.records
