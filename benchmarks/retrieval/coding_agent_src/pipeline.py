"""ingest-pipeline: Python ingestion into Snowflake plus dbt transformations."""

from __future__ import annotations

from .spec import Project

C = Project("ingest-pipeline", ("codex", "claude-code", "priya"))
add = C.add

add(
    "data-py311",
    "fact",
    "2026-03-01 09:30",
    "ingest-pipeline runs on Python 3.11",
    "The pipeline package and its container images target Python 3.11 (python:3.11-slim-bookworm); "
    "requires-python is >=3.11,<3.12.",
    """
    pyproject.toml: requires-python = ">=3.11,<3.12"
    Dockerfile: FROM python:3.11-slim-bookworm
    """,
    tags="python versions",
    agent="priya",
)
add(
    "data-s3-layout",
    "fact",
    "2026-03-02 10:00",
    "Raw landing layout in S3",
    "Raw files land in s3://kestrel-raw-events/<source>/dt=YYYY-MM-DD/hour=HH/ as gzipped JSON "
    "lines and move to Glacier Instant Retrieval after 90 days.",
    """
    s3://kestrel-raw-events/segment/dt=2026-03-02/hour=07/part-00000.json.gz
    Sources: payments_events, segment, hubspot, zendesk
    Writers never overwrite: part files are named by uuid4; reprocessing writes a new part.
    Lifecycle rule raw-to-glacier-ir (90 d), expiry after 3 years.
    """,
    tags="s3 storage layout",
    agent="priya",
    weight=1.5,
)
add(
    "data-sources",
    "fact",
    "2026-03-02 14:30",
    "What the pipeline ingests",
    "Four sources: payment domain events from payments-api, Segment product analytics, a nightly "
    "HubSpot CRM export and the Zendesk tickets API.",
    """
    payments_events  streaming from payments-api (see events decision), ~2M/day
    segment          S3 destination files, ~30M events/day
    hubspot          nightly export API, companies + deals
    zendesk          incremental tickets API every 15 min, cursor stored in state table
    """,
    tags="sources ingestion",
    agent="priya",
)
add(
    "data-poetry",
    "decision",
    "2026-03-02 16:00",
    "Manage pipeline dependencies with Poetry",
    "The ingest-pipeline repo uses Poetry 1.8 with poetry.lock committed; CI installs with poetry "
    "install --no-root --sync.",
    """
    poetry add polars@^0.20
    poetry install --with dev --sync
    Docker: poetry export -f requirements.txt | pip install -r /dev/stdin
    """,
    tags="packaging dependencies",
    agent="codex",
)
add(
    "data-black",
    "decision",
    "2026-03-02 16:20",
    "Format with black and isort, lint with flake8",
    "Pipeline code is formatted by black (line length 100) and isort (profile black) and linted by "
    "flake8 with bugbear, all run from pre-commit.",
    """
    .pre-commit-config.yaml: black 24.2, isort 5.13, flake8 7.0 + flake8-bugbear
    setup.cfg [flake8] max-line-length = 100, extend-ignore = E203
    """,
    tags="lint formatting tooling",
    agent="codex",
)
add(
    "data-snowflake-layout",
    "fact",
    "2026-03-03 11:00",
    "Snowflake databases, roles and warehouses",
    "Snowflake has RAW (loaded as-is), STAGING and ANALYTICS databases; the LOADER role writes "
    "RAW, TRANSFORMER runs dbt into STAGING/ANALYTICS, REPORTER is read-only for BI.",
    """
    Warehouses: LOADER_WH (XS), TRANSFORM_WH (M), REPORTING_WH (S, multi-cluster 1-3)
    Service users: SVC_LOADER (key-pair auth), SVC_DBT, SVC_LOOKER
    Account: kestrel-eu.eu-west-1 (Snowflake on AWS)
    """,
    tags="snowflake warehouse roles",
    agent="priya",
    weight=1.5,
)
add(
    "data-airflow",
    "decision",
    "2026-03-03 15:00",
    "Orchestrate pipeline jobs with Airflow on MWAA",
    "Ingestion and dbt runs are scheduled as Airflow 2.8 DAGs on Amazon MWAA; DAG files live in "
    "dags/ and sync to the MWAA S3 bucket on merge.",
    """
    MWAA environment kestrel-data-prod (mw1.medium)
    dags/ingest_segment.py, dags/dbt_nightly.py; sync: aws s3 sync dags/ s3://kestrel-mwaa/dags/
    Connections via MWAA secrets backend (Secrets Manager prefix airflow/connections/)
    """,
    tags="orchestration airflow",
    agent="priya",
)
add(
    "data-utc-partitions",
    "decision",
    "2026-03-04 10:10",
    "Partition raw data by UTC event time",
    "dt= and hour= partitions come from the event's occurred_at converted to UTC, never from load "
    "time or a local timezone; late events go to their true partition.",
    """
    dt = occurred_at.astimezone(timezone.utc).strftime('%Y-%m-%d')
    Events without occurred_at are rejected into s3://kestrel-raw-events/_rejects/
    Downstream daily models therefore need a lookback window for late data.
    """,
    tags="partitioning timezone s3",
    agent="priya",
)
add(
    "data-pandas",
    "decision",
    "2026-03-05 10:00",
    "Transform ingested data with pandas",
    "Python-side transforms (flattening, PII hashing, type coercion) are written with pandas 2.2 "
    "before files are loaded into Snowflake.",
    """
    pipeline/transforms/segment.py: df = pd.json_normalize(records, sep='_')
    dtype_backend='pyarrow' for reads
    """,
    tags="pandas transforms",
    agent="codex",
)
add(
    "data-event-id",
    "fact",
    "2026-03-05 15:40",
    "event_id is the dedupe key for every event",
    "Every event carries a UUIDv7 event_id; staging models keep the latest loaded row per "
    "event_id, so re-delivered or reprocessed events never double count.",
    """
    stg models end with:
      qualify row_number() over (partition by event_id order by _loaded_at desc) = 1
    dbt test: unique + not_null on event_id in every stg_* model
    """,
    tags="dedupe dbt events",
    agent="priya",
    weight=1.5,
)
add(
    "data-pii-hashing",
    "decision",
    "2026-03-06 11:30",
    "Hash emails and phone numbers before they reach Snowflake",
    "PII columns listed in pii_columns.yaml are replaced by salted SHA-256 hashes in the Python "
    "step; raw values never land in RAW. The salt is in Secrets Manager (pipeline/pii-salt).",
    """
    pipeline/transforms/pii.py: hash_pii(value) = sha256(salt + normalise(value)).hexdigest()
    normalise: lower-case + strip for emails, E.164 for phones
    pii_columns.yaml: segment.context_traits_email, hubspot.email, zendesk.requester_phone, ...
    Data deletion requests: see the GDPR procedure (hash lookup by normalised value).
    """,
    tags="pii privacy gdpr",
    agent="priya",
    weight=2.5,
)
add(
    "data-copy-into",
    "decision",
    "2026-03-08 10:00",
    "Load raw files into Snowflake with hourly COPY INTO",
    "An hourly job runs COPY INTO RAW.<source>.EVENTS from the S3 external stage for the previous "
    "hour's prefix; file load metadata prevents duplicates.",
    """
    COPY INTO RAW.SEGMENT.EVENTS FROM @RAW.STAGES.S3_RAW/segment/dt=2026-03-08/hour=09/
      FILE_FORMAT = (TYPE = JSON COMPRESSION = GZIP) ON_ERROR = CONTINUE;
    Runs as SVC_LOADER on LOADER_WH.
    """,
    tags="snowflake loading",
    agent="codex",
)
add(
    "data-pref-typing",
    "preference",
    "2026-03-09 09:15",
    "Priya wants full type hints and mypy --strict in the pipeline",
    "Every function in ingest-pipeline has annotated parameters and return types and the package "
    "passes mypy --strict; Any needs a comment explaining why.",
    """
    mypy.ini: strict = True, plugins = pandera.mypy (later: none)
    Prefer TypedDict / dataclasses for records over dict[str, Any].
    """,
    tags="typing mypy style",
    agent="priya",
    weight=2.0,
)
add(
    "data-gx",
    "decision",
    "2026-03-10 13:00",
    "Data quality checks with Great Expectations",
    "Batches are validated with Great Expectations 0.18 expectation suites before loading; "
    "failures stop the load and post to #data-alerts.",
    """
    great_expectations/expectations/segment_events.json
    checkpoint: gx checkpoint run segment_events_checkpoint
    """,
    tags="data-quality validation",
    agent="codex",
)
add(
    "data-dbt-full-refresh",
    "decision",
    "2026-03-12 09:40",
    "Rebuild all dbt models nightly",
    "Every dbt model is materialised as a table and rebuilt from scratch by the nightly dbt build "
    "at 01:00 UTC; simple and correct while data is small.",
    """
    dbt build --target prod --full-refresh   (about 25 min on TRANSFORM_WH M)
    dbt 1.7, project dir transform/, profiles from env (DBT_SNOWFLAKE_*)
    """,
    tags="dbt modelling",
    agent="priya",
)
add(
    "data-dbt-ref",
    "reference",
    "2026-03-12 10:00",
    "dbt docs: incremental models and tests",
    "dbt documentation pages for incremental materialisation, merge strategies and data tests.",
    """
    https://docs.getdbt.com/docs/build/incremental-models
    https://docs.getdbt.com/docs/build/incremental-strategy
    https://docs.getdbt.com/docs/build/data-tests
    """,
    tags="dbt docs",
    agent="priya",
)
add(
    "data-pure-transforms",
    "pattern",
    "2026-03-14 14:00",
    "Transforms are pure functions from frame to frame",
    "A transform takes a frame and returns a new one with no I/O; reading S3 and writing to "
    "Snowflake happen only in the job layer, which keeps transforms unit-testable.",
    """
    def flatten_segment(df: pl.LazyFrame) -> pl.LazyFrame: ...
    Tests: tests/transforms/test_segment.py with fixtures in tests/fixtures/*.parquet
    No network in unit tests (pytest-socket --disable-socket).
    """,
    tags="transforms testing architecture",
    agent="claude-code",
    updated="2026-05-18 12:00",
)
add(
    "data-dbt-naming",
    "pattern",
    "2026-03-16 10:30",
    "dbt model naming: stg_, int_, fct_, dim_",
    "Staging models are stg_<source>__<entity> (one per raw table, renames and casts only); "
    "intermediate int_, then fct_ for events/transactions and dim_ for entities.",
    """
    models/staging/segment/stg_segment__tracks.sql
    models/intermediate/int_payments__captures_joined.sql
    models/marts/finance/fct_payments.sql, dim_merchants.sql
    sources.yml per source folder; one yml per model with tests and descriptions.
    """,
    tags="dbt naming conventions",
    agent="priya",
)
add(
    "data-airflow-backfill",
    "procedure",
    "2026-03-20 11:00",
    "Backfill a date range in Airflow",
    "Clear the task instances for the date range in the MWAA UI or run airflow dags backfill "
    "through the MWAA CLI token; never run two backfills of the same DAG at once.",
    """
    aws mwaa create-cli-token --name kestrel-data-prod
    airflow dags backfill ingest_segment -s 2026-03-10 -e 2026-03-12 --reset-dagruns
    Keep max_active_runs=2 so Snowflake is not flooded.
    """,
    tags="backfill airflow operations",
    agent="codex",
)
add(
    "data-lesson-dst",
    "lesson",
    "2026-03-30 10:20",
    "A DAG scheduled in Europe/Berlin skipped the DST night",
    "ingest_hubspot was scheduled at 02:30 Europe/Berlin and silently did not run on 2026-03-29 "
    "when clocks jumped from 02:00 to 03:00. All schedules are UTC now.",
    """
    DATA-301
    Airflow: start_date=pendulum.datetime(2026, 1, 1, tz='UTC') everywhere
    Audit: grep -rn "tz=" dags/  should only show UTC
    """,
    tags="timezone scheduling airflow",
    agent="priya",
)
add(
    "data-ruff",
    "decision",
    "2026-04-02 10:00",
    "Use ruff for lint and format in the pipeline repo",
    "black, isort and flake8 are replaced by ruff (lint + format) in pre-commit and CI; one tool, "
    "same style, about 100x faster.",
    """
    DATA-305
    pyproject.toml [tool.ruff] line-length = 100, select = ["E","F","W","I","B","UP"]
    pre-commit: ruff-pre-commit v0.4.4 (ruff, ruff-format)
    """,
    tags="lint formatting tooling",
    agent="codex",
    supersedes="data-black",
)
add(
    "data-lesson-late-events",
    "lesson",
    "2026-04-04 15:30",
    "Late Segment events missed the daily partition",
    "Mobile clients buffer events offline for up to 72 h, so daily models built once at 01:00 "
    "undercounted yesterday by ~4%. Daily aggregates now reprocess the last 3 days.",
    """
    DATA-310
    Measured: 96.1% of events arrive within 1 h, 99.7% within 72 h
    The 3-day window is the same lookback later used by incremental dbt models.
    """,
    tags="late-data segment",
    agent="priya",
)
add(
    "data-freshness-sla",
    "fact",
    "2026-04-09 09:00",
    "Analytics tables must be fresh by 07:00 UTC",
    "Finance reads ANALYTICS.FINANCE.* at 07:30 UTC each weekday, so the nightly build must finish "
    "and pass tests by 07:00 UTC.",
    """
    Agreed with finance in DATA-312
    Alert: Dagster/Airflow sensor pages data on-call if fct_payments is not updated by 06:30
    """,
    tags="sla freshness finance",
    agent="priya",
)
add(
    "data-lesson-on-error-continue",
    "lesson",
    "2026-04-17 16:50",
    "COPY INTO with ON_ERROR = CONTINUE silently dropped rows",
    "1.2% of Segment rows with invalid UTF-8 were skipped by COPY INTO for three weeks and nobody "
    "noticed. Loads now abort on error and bad files go to a quarantine prefix.",
    """
    DATA-318
    Error in load history: Invalid UTF8 detected in string '0xFF0x3C'
    Now: ON_ERROR = ABORT_STATEMENT; a pre-load step re-encodes with errors='replace'
    Check: SELECT * FROM TABLE(VALIDATE(RAW.SEGMENT.EVENTS, JOB_ID => '_last'))
    """,
    tags="snowflake loading data-quality",
    agent="codex",
    weight=2.0,
)
add(
    "data-snowflake-copy-ref",
    "reference",
    "2026-04-17 17:00",
    "Snowflake COPY INTO and Snowpipe docs",
    "Snowflake reference pages for COPY INTO options (ON_ERROR, VALIDATION_MODE) and Snowpipe "
    "auto-ingest from S3.",
    """
    https://docs.snowflake.com/en/sql-reference/sql/copy-into-table
    https://docs.snowflake.com/en/sql-reference/functions/validate
    https://docs.snowflake.com/en/user-guide/data-load-snowpipe-auto-s3
    """,
    tags="snowflake docs",
    agent="codex",
)
add(
    "data-rotate-snowflake-key",
    "procedure",
    "2026-04-21 10:00",
    "Rotate the Snowflake key pair for SVC_LOADER",
    "Generate a new RSA key, set it as RSA_PUBLIC_KEY_2, switch the secret, verify loads, then "
    "unset the old key; Snowflake allows two keys so there is no downtime.",
    """
    openssl genrsa 2048 | openssl pkcs8 -topk8 -v2 des3 -inform PEM -out rsa_key.p8
    openssl rsa -in rsa_key.p8 -pubout -out rsa_key.pub
    ALTER USER SVC_LOADER SET RSA_PUBLIC_KEY_2='MIIBIjANBgkqh...';
    aws secretsmanager put-secret-value --secret-id pipeline/snowflake/svc_loader ...
    After one successful hourly load: ALTER USER SVC_LOADER UNSET RSA_PUBLIC_KEY;
    """,
    tags="snowflake secrets rotation",
    agent="priya",
)
add(
    "data-uv",
    "decision",
    "2026-04-28 14:00",
    "Switch pipeline packaging from Poetry to uv",
    "Dependencies are now managed with uv and uv.lock; CI installs in ~40 s instead of ~4 min and "
    "the Docker build uses uv sync --frozen.",
    """
    DATA-322
    uv add polars ; uv sync --frozen --no-dev (Docker) ; uv run pytest
    poetry.lock and [tool.poetry] removed; PEP 621 [project] table in pyproject.toml
    """,
    tags="packaging dependencies uv",
    agent="codex",
    supersedes="data-poetry",
)
add(
    "data-lesson-snowflake-autosuspend",
    "lesson",
    "2026-05-02 12:00",
    "TRANSFORM_WH burned credits idling with auto_suspend = 3600",
    "A warehouse created by hand kept running an hour after each short job; April credits were 38% "
    "over budget. Every warehouse now has AUTO_SUSPEND = 60 and is managed in Terraform.",
    """
    DATA-327
    ALTER WAREHOUSE TRANSFORM_WH SET AUTO_SUSPEND = 60 AUTO_RESUME = TRUE;
    Resource monitor monthly_quota notifies at 80%, suspends REPORTING_WH at 110%.
    """,
    tags="snowflake cost",
    agent="priya",
)
add(
    "data-new-source",
    "procedure",
    "2026-05-05 10:30",
    "Add a new source to the pipeline",
    "A source needs a connector class, a schema, a raw table and stage prefix, a dbt staging model "
    "with tests, and an entry in the sources docs.",
    """
    1. pipeline/sources/<name>.py implementing Source (extract(since) -> Iterator[dict])
    2. register in pipeline/sources/__init__.py SOURCES
    3. schema in pipeline/schemas/<name>.py (validation at the boundary)
    4. Terraform: RAW.<NAME> schema + stage prefix (infra repo, snowflake module)
    5. dbt: models/staging/<name>/stg_<name>__<entity>.sql + unique/not_null tests
    6. docs/sources.md row with owner and SLA
    """,
    tags="sources onboarding",
    agent="claude-code",
    updated="2026-06-20 12:00",
)
add(
    "data-lesson-pandas-oom",
    "lesson",
    "2026-05-09 19:00",
    "pandas merge of 40M rows OOMKilled the worker",
    "Joining Segment tracks to identifies in pandas needed ~27 GB and the 16 GB worker was killed "
    "(exit code 137). Large joins belong in Snowflake or a lazy engine.",
    """
    DATA-331
    kubectl describe pod ... -> Last State: Terminated, Reason: OOMKilled, Exit Code: 137
    Short-term: moved the join into dbt (int_segment__tracks_identified)
    Led to the polars decision.
    """,
    tags="pandas memory incident",
    agent="codex",
)
add(
    "data-polars",
    "decision",
    "2026-05-18 10:00",
    "Move Python transforms from pandas to polars",
    "New and heavy transforms use polars LazyFrames with streaming collect; the join that OOMed in "
    "pandas runs in 2.1 GB. pandas stays only where a library demands it.",
    """
    DATA-335
    pl.scan_ndjson('s3://kestrel-raw-events/segment/dt=2026-05-18/**/*.json.gz',
                   storage_options={'aws_region': 'eu-west-1'})
    .collect(streaming=True)
    Convert at the edge with df.to_pandas() only if unavoidable.
    """,
    tags="polars transforms performance",
    agent="claude-code",
    supersedes="data-pandas",
)
add(
    "data-pandera",
    "decision",
    "2026-05-25 14:00",
    "Replace Great Expectations with pandera schemas",
    "Validation moved into code: each source has a pandera DataFrameModel checked at the transform "
    "boundary; GX suites and the checkpoint config were deleted.",
    """
    DATA-338
    class SegmentTrack(pa.DataFrameModel):
        event_id: str = pa.Field(unique=True)
        occurred_at: pl.Datetime = pa.Field(nullable=False)
    Works natively with polars (pandera[polars] 0.19); failures raise SchemaErrors with row indexes.
    """,
    tags="data-quality validation pandera",
    agent="claude-code",
    supersedes="data-gx",
)
add(
    "data-freshness-tests",
    "pattern",
    "2026-05-27 10:00",
    "dbt source freshness on every source",
    "Each source in sources.yml declares loaded_at_field _loaded_at with warn after 2 h and error "
    "after 6 h; dbt source freshness runs hourly.",
    """
    freshness:
      warn_after: {count: 2, period: hour}
      error_after: {count: 6, period: hour}
    loaded_at_field: _loaded_at
    """,
    tags="dbt freshness monitoring",
    agent="priya",
)
add(
    "data-dbt-incremental",
    "decision",
    "2026-06-01 10:00",
    "Make large dbt models incremental with a 3-day lookback",
    "The nightly full refresh hit 2 h 40 min, so event-grain models are incremental (merge on "
    "unique_key) and reprocess the last 3 days to absorb late events.",
    """
    DATA-340
    {{ config(materialized='incremental', unique_key='event_id', incremental_strategy='merge') }}
    {% if is_incremental() %}
      where occurred_at >= (select dateadd(day, -3, max(occurred_at)) from {{ this }})
    {% endif %}
    Weekly full refresh on Sunday 04:00 UTC.
    """,
    tags="dbt modelling incremental",
    agent="priya",
    supersedes="data-dbt-full-refresh",
)
add(
    "data-pref-polars-exprs",
    "preference",
    "2026-06-02 14:00",
    "Prefer polars expressions over map_elements",
    "Priya wants transforms written as native polars expressions; map_elements/apply with Python "
    "lambdas is only acceptable with a comment and a benchmark.",
    """
    Good: df.with_columns(pl.col('email').str.to_lowercase().str.strip_chars())
    Bad:  df.with_columns(pl.col('email').map_elements(lambda s: s.lower().strip()))
    """,
    tags="polars style performance",
    agent="priya",
)
add(
    "data-lesson-incremental-dupes",
    "lesson",
    "2026-06-11 09:30",
    "Incremental fct_payments duplicated a day of rows",
    "fct_payments was switched to incremental without unique_key, so the 3-day lookback appended "
    "instead of merging and 2026-06-09 counted twice in the finance report.",
    """
    DATA-402
    Fix: unique_key='payment_id' + incremental_strategy='merge', then --full-refresh once
    Guard: dbt test unique on fct_payments.payment_id now has severity error
    """,
    tags="dbt incremental incident",
    agent="codex",
    weight=2.0,
)
add(
    "data-dagster",
    "decision",
    "2026-06-15 10:00",
    "Move orchestration from Airflow to Dagster",
    "Dagster (software-defined assets, dagster-dbt) replaces MWAA Airflow: every dbt model becomes "
    "an asset with lineage, and daily partitions map onto our dt= layout.",
    """
    DATA-350
    Dagster+ hybrid: agent runs in EKS namespace dagster, code location ingest_pipeline
    definitions.py: Definitions(assets=[*source_assets, dbt_assets], schedules=[...])
    MWAA environment kestrel-data-prod decommissioned 2026-07-31.
    """,
    tags="orchestration dagster",
    agent="priya",
    supersedes="data-airflow",
)
add(
    "data-dagster-ref",
    "reference",
    "2026-06-15 10:30",
    "Dagster docs: dbt integration and partitions",
    "Dagster documentation for dagster-dbt assets, partitioned assets and backfills.",
    """
    https://docs.dagster.io/integrations/libraries/dbt
    https://docs.dagster.io/guides/build/partitions-and-backfills
    """,
    tags="dagster docs",
    agent="priya",
    weight=0.5,
)
add(
    "data-dagster-backfill",
    "procedure",
    "2026-06-20 15:00",
    "Backfill a date range in Dagster",
    "Select the asset and the partition range in the Dagster UI and launch a backfill, or use "
    "the CLI; partitions older than 30 days must be backfilled outside business hours.",
    """
    UI: Assets -> stg_segment__tracks -> Materialize -> partition range 2026-06-01...2026-06-07
    CLI: dagster asset materialize --select stg_segment__tracks --partition 2026-06-03 \\
           -m ingest_pipeline.definitions
    Backfill policy: max 5 partitions per run (BackfillPolicy.multi_run(5))
    """,
    tags="backfill dagster operations",
    agent="claude-code",
    supersedes="data-airflow-backfill",
)
add(
    "data-py312",
    "fact",
    "2026-07-09 10:00",
    "ingest-pipeline moved to Python 3.12",
    "The pipeline now targets Python 3.12 (python:3.12-slim-bookworm) after dagster and "
    "snowflake-connector-python both supported it.",
    """
    DATA-361
    pyproject.toml: requires-python = ">=3.12,<3.13"
    ruff target-version = "py312"; datetime.utcnow() calls removed (deprecated in 3.12)
    """,
    tags="python versions",
    agent="codex",
    supersedes="data-py311",
)
add(
    "data-snowpipe",
    "decision",
    "2026-07-20 11:00",
    "Load raw events with Snowpipe auto-ingest",
    "Hourly COPY INTO jobs are replaced by Snowpipe: S3 event notifications go to the pipe's SQS "
    "queue and files load within ~2 minutes of landing.",
    """
    DATA-367
    CREATE PIPE RAW.SEGMENT.EVENTS_PIPE AUTO_INGEST = TRUE AS
      COPY INTO RAW.SEGMENT.EVENTS FROM @RAW.STAGES.S3_RAW/segment/ FILE_FORMAT = RAW.JSON_GZ;
    S3 bucket notification -> arn:aws:sqs:eu-west-1:...:sf-snowpipe-... (from SHOW PIPES)
    Monitor: SYSTEM$PIPE_STATUS('RAW.SEGMENT.EVENTS_PIPE')
    """,
    tags="snowflake loading snowpipe",
    agent="codex",
    supersedes="data-copy-into",
)
add(
    "data-fct-settlements",
    "context",
    "2026-07-30 14:00",
    "fct_settlements model",
    "fct_settlements has one row per PSP settlement line (Stripe balance transaction or Adyen SDR "
    "row) joined to the ledger posting; finance uses it to tie bank deposits to payments.",
    """
    DATA-372, owner priya
    models/marts/finance/fct_settlements.sql (incremental, unique_key settlement_line_id)
    Sources: stg_stripe__balance_transactions, stg_adyen__settlement_details, stg_payments__ledger
    """,
    tags="dbt finance settlement",
    agent="priya",
)
add(
    "data-kafka-connect",
    "decision",
    "2026-08-05 10:30",
    "Consume payment events from MSK with Kafka Connect",
    "The pipeline reads payments.events.v1 with a Kafka Connect S3 sink (MSK Connect) into the "
    "usual raw layout, instead of the NATS consumer process.",
    """
    DATA-380
    Connector: io.confluent.connect.s3.S3SinkConnector, flush.size 10000, rotate.interval.ms 300000
    partitioner: TimeBasedPartitioner on occurred_at -> dt=YYYY-MM-DD/hour=HH
    NATS consumer (pipeline/sources/nats_payments.py) deleted on 2026-08-24.
    """,
    tags="kafka ingestion events",
    agent="codex",
)
add(
    "data-semantic-layer",
    "decision",
    "2026-08-27 15:00",
    "Define revenue metrics in the dbt semantic layer",
    "gross_volume, net_revenue and take_rate are defined once as MetricFlow metrics on top of "
    "fct_payments and fct_settlements; BI tools query them instead of re-deriving.",
    """
    DATA-388
    models/semantic/payments.yml: semantic_models + metrics
    dbt sl query --metrics net_revenue --group-by metric_time__month
    """,
    tags="dbt metrics finance",
    agent="priya",
)
add(
    "data-gdpr-delete",
    "procedure",
    "2026-08-29 11:00",
    "Handle a GDPR deletion request in the warehouse",
    "Hash the subject's normalised email/phone the same way hash_pii does, delete matching rows "
    "from RAW and STAGING tables listed in pii_columns.yaml, then rebuild affected marts.",
    """
    python -m pipeline.tools.gdpr_delete --email someone@example.com --dry-run
    Writes an audit row to ANALYTICS.GOVERNANCE.DELETION_LOG (request id, tables, row counts)
    S3 raw files are handled by the 3-year expiry plus a tombstone list read at load time.
    SLA: 30 days from request.
    """,
    tags="gdpr privacy pii",
    agent="claude-code",
)
add(
    "data-lesson-snowpipe-notifications",
    "lesson",
    "2026-09-16 10:00",
    "Snowpipe stopped loading after the S3 notification was overwritten",
    "A Terraform change to kestrel-raw-events replaced the bucket's notification configuration, "
    "dropping the Snowpipe SQS target; no files loaded for 9 hours.",
    """
    DATA-395
    aws_s3_bucket_notification is one resource per bucket - all targets must be declared together
    SYSTEM$PIPE_STATUS showed lastReceivedMessageTimestamp 9 h old
    Recovery: ALTER PIPE RAW.SEGMENT.EVENTS_PIPE REFRESH PREFIX = 'segment/dt=2026-09-15/';
    """,
    tags="snowpipe incident terraform",
    agent="codex",
    weight=2.0,
)
add(
    "data-lesson-dagster-run-queue",
    "lesson",
    "2026-07-08 17:10",
    "A backfill queued 4,000 Dagster runs and starved the daily jobs",
    "Launching a 6-month backfill as single-partition runs flooded the run queue; the daily "
    "finance assets missed the 07:00 UTC freshness target. Queues now have per-tag limits.",
    """
    DATA-364
    dagster.yaml run_coordinator QueuedRunCoordinator:
      max_concurrent_runs: 10
      tag_concurrency_limits: [{key: "dagster/backfill", limit: 3}]
    Daily schedules carry priority tag dagster/priority: "10".
    """,
    tags="dagster backfill incident",
    agent="priya",
)
add(
    "data-asset-checks",
    "pattern",
    "2026-08-18 10:30",
    "Dagster asset checks for volume and freshness",
    "Every daily asset has asset checks comparing today's row count with the trailing 7-day median "
    "(fail below 50%) plus a freshness check; failures block downstream assets.",
    """
    @asset_check(asset=stg_segment__tracks, blocking=True)
    def tracks_volume(context) -> AssetCheckResult: ...
    Thresholds in pipeline/checks/thresholds.yaml; alerts go to #data-alerts.
    """,
    tags="dagster data-quality monitoring",
    agent="claude-code",
)
add(
    "data-q4-roadmap",
    "context",
    "2026-09-24 11:00",
    "Data team plans for Q4 2026",
    "Q4: reverse ETL of merchant health scores into HubSpot, retiring the last pandas code, and "
    "moving REPORTING_WH users to the semantic layer.",
    """
    DATA-401 reverse ETL (Hightouch evaluation), DATA-405 pandas removal,
    DATA-409 Looker explores on MetricFlow metrics
    """,
    tags="planning roadmap",
    agent="priya",
)

RECORDS = C.records
