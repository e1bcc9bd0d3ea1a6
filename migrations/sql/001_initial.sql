-- Facho read models. Every table here can be dropped and rebuilt by
-- replaying the streams (see streams/CATALOGUE.md); the streams hold the truth.

-- Projection checkpoints: the last stream sequence each consumer applied,
-- written in the same transaction as the rows it produced.
CREATE TABLE checkpoints (
    consumer   text PRIMARY KEY,
    last_seq   bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Configuration read model (projected from FACHO_CONFIG).
CREATE TABLE brands (
    id           text PRIMARY KEY,
    name         text NOT NULL,
    description  text NOT NULL DEFAULT '',
    index_scheme text NOT NULL,
    updated_at   timestamptz NOT NULL
);

CREATE TABLE oids (
    id         text PRIMARY KEY,
    brand_id   text NOT NULL,
    name       text NOT NULL,
    oid        text NOT NULL,
    field      text NOT NULL,
    decoder    jsonb NOT NULL,
    updated_at timestamptz NOT NULL
);

-- No community column: the sealed community lives in the config stream only.
CREATE TABLE olts (
    id          text PRIMARY KEY,
    name        text NOT NULL,
    ip          text NOT NULL,
    port        integer NOT NULL,
    brand_id    text NOT NULL,
    enabled     boolean NOT NULL,
    description text NOT NULL DEFAULT '',
    deleted     boolean NOT NULL DEFAULT false,
    updated_at  timestamptz NOT NULL
);

CREATE TABLE snmp_jobs (
    id                  text PRIMARY KEY,
    name                text NOT NULL,
    brand_id            text NOT NULL,
    kind                text NOT NULL,
    oid_ids             text[] NOT NULL,
    interval_seconds    integer NOT NULL,
    max_retries         integer NOT NULL,
    retry_delay_seconds integer NOT NULL,
    timeout_seconds     integer NOT NULL,
    priority            integer NOT NULL,
    enabled             boolean NOT NULL,
    deleted             boolean NOT NULL DEFAULT false,
    updated_at          timestamptz NOT NULL
);

CREATE TABLE snmp_job_olts (
    job_id      text NOT NULL,
    olt_id      text NOT NULL,
    enabled     boolean NOT NULL,
    last_run_at timestamptz,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (job_id, olt_id)
);

-- Current state of every ONU (seed 000 OnuData).
CREATE TABLE onu_data (
    olt_id           text NOT NULL,
    pon_index        bigint NOT NULL,
    onu_id           bigint NOT NULL,
    serial           text NOT NULL DEFAULT '',
    description      text NOT NULL DEFAULT '',
    status           text NOT NULL DEFAULT 'UNKNOWN',
    rx_power_dbm     double precision,
    first_seen       timestamptz NOT NULL,
    last_seen        timestamptz NOT NULL,
    last_execution_id text NOT NULL DEFAULT '',
    PRIMARY KEY (olt_id, pon_index, onu_id)
);
CREATE INDEX onu_data_serial ON onu_data (serial);

-- Executions (seed 000 Execution): PENDING, RUNNING, SUCCESS, FAILED,
-- ABORTED, INTERRUPTED.
CREATE TABLE executions (
    id           text PRIMARY KEY,
    job_id       text NOT NULL,
    olt_id       text NOT NULL,
    status       text NOT NULL,
    attempt      integer NOT NULL DEFAULT 0,
    poller_id    text NOT NULL DEFAULT '',
    scheduled_at timestamptz,
    started_at   timestamptz,
    finished_at  timestamptz,
    duration_ms  bigint,
    varbinds     integer NOT NULL DEFAULT 0,
    error        text NOT NULL DEFAULT '',
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX executions_olt ON executions (olt_id, scheduled_at DESC);
CREATE INDEX executions_status ON executions (status);

-- Every attempt of an execution with its error (seed 000 ExecutionAttempt).
CREATE TABLE execution_attempts (
    execution_id text NOT NULL,
    attempt      integer NOT NULL,
    poller_id    text NOT NULL DEFAULT '',
    status       text NOT NULL,
    started_at   timestamptz,
    finished_at  timestamptz,
    error        text NOT NULL DEFAULT '',
    PRIMARY KEY (execution_id, attempt)
);

-- Coordinator logs (seed 003 coordinator_logs). source_stream/source_seq
-- make the auditor idempotent.
CREATE TABLE coordinator_logs (
    id            bigserial PRIMARY KEY,
    olt_id        text,
    event_type    text NOT NULL,
    level         text NOT NULL,
    message       text NOT NULL,
    details       jsonb NOT NULL DEFAULT '{}'::jsonb,
    "timestamp"   timestamptz NOT NULL,
    source_stream text NOT NULL,
    source_seq    bigint NOT NULL,
    UNIQUE (source_stream, source_seq)
);
CREATE INDEX coordinator_logs_olt ON coordinator_logs (olt_id, "timestamp");
CREATE INDEX coordinator_logs_type ON coordinator_logs (event_type, "timestamp");
CREATE INDEX coordinator_logs_level ON coordinator_logs (level, "timestamp");
