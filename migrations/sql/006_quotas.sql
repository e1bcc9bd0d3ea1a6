-- Hourly quotas, violations and notifications (seeds 002, 003; issue 11).
-- Written by the auditor. quota_executions, quota_tracker,
-- quota_interruptions, quota_watermarks and failure_streaks are
-- projections of FACHO_SCHEDULE, FACHO_EXEC, FACHO_CONFIG and FACHO_AUDIT
-- (facho rebuild quotas), quota_violations of FACHO_NOTIFY (facho rebuild
-- quota_violations); the hourly check's verdicts (status after the hour,
-- checked_at) come from its timer.

-- One row per execution (NodeDue), the fact the trackers are counted from.
-- task_type is the job's id (seed 003: 'discovery', 'get_descripcion', ...:
-- one task per job); period_start the hour of scheduled_at. A row may exist
-- before its NodeDue is projected (execution events come on another
-- consumer): scheduled_at and period_start are then NULL and the row counts
-- nowhere until its NodeDue arrives.
CREATE TABLE quota_executions (
    execution_id     text PRIMARY KEY,
    olt_id           text NOT NULL,
    task_type        text NOT NULL,
    job_kind         text NOT NULL DEFAULT '',
    job_name         text NOT NULL DEFAULT '',
    interval_seconds integer,
    scheduled_at     timestamptz,
    period_start     timestamptz,
    -- PENDING, RUNNING (started, or failed with a retry to come),
    -- SUCCESS, FAILED, SKIPPED, INTERRUPTED.
    outcome          text NOT NULL DEFAULT 'PENDING',
    attempt          integer NOT NULL DEFAULT 0,
    duration_ms      bigint,
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX quota_executions_period ON quota_executions (olt_id, task_type, period_start);

-- An OLT disabled or deleted during an hour: its trackers of that hour are
-- INTERRUPTED and raise no violation (seed 002, scenario 3).
CREATE TABLE quota_interruptions (
    olt_id         text NOT NULL,
    period_start   timestamptz NOT NULL,
    interrupted_at timestamptz NOT NULL,
    reason         text NOT NULL,
    PRIMARY KEY (olt_id, period_start)
);

-- The event time of the latest message each quota consumer applied
-- (auditor-schedule, -exec, -config, -audit). The hourly check closes an hour only
-- once every consumer that is still behind has applied events past the end
-- of that hour plus the grace: after an outage, the trackers are complete
-- before they are judged.
CREATE TABLE quota_watermarks (
    consumer   text PRIMARY KEY,
    event_time timestamptz NOT NULL
);

-- seed 003 quota_tracker: per OLT x task type x hour.
CREATE TABLE quota_tracker (
    id                bigserial PRIMARY KEY,
    olt_id            text NOT NULL,
    task_type         varchar(64) NOT NULL,
    job_kind          text NOT NULL DEFAULT '',
    job_name          text NOT NULL DEFAULT '',
    interval_seconds  integer NOT NULL,
    period_start      timestamptz NOT NULL,
    period_end        timestamptz NOT NULL,
    quota_required    integer NOT NULL,
    quota_completed   integer NOT NULL DEFAULT 0,
    quota_failed      integer NOT NULL DEFAULT 0,
    quota_skipped     integer NOT NULL DEFAULT 0,
    quota_pending     integer NOT NULL DEFAULT 0,
    total_duration_ms bigint NOT NULL DEFAULT 0,
    avg_duration_ms   integer NOT NULL DEFAULT 0,
    -- IN_PROGRESS until the hourly check; then COMPLETED (all required
    -- runs succeeded), PARTIAL (at least the threshold), QUOTA_NOT_MET
    -- (below it); INTERRUPTED when the OLT was disabled or deleted in the
    -- hour.
    status            varchar(20) NOT NULL DEFAULT 'IN_PROGRESS'
        CHECK (status IN ('IN_PROGRESS', 'COMPLETED', 'PARTIAL', 'QUOTA_NOT_MET', 'INTERRUPTED')),
    -- When the hourly check looked at the tracker (NULL: not yet).
    checked_at        timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (olt_id, task_type, period_start)
);
CREATE INDEX quota_tracker_olt_period ON quota_tracker (olt_id, period_start);
CREATE INDEX quota_tracker_status ON quota_tracker (status);
CREATE INDEX quota_tracker_unchecked ON quota_tracker (period_end) WHERE checked_at IS NULL;

-- seed 003 quota_violations: one per tracker below the threshold,
-- projected from its notification (facho.notify.quota_violation.<olt>);
-- notified and notified_at follow its webhook deliveries.
CREATE TABLE quota_violations (
    id              bigserial PRIMARY KEY,
    olt_id          text NOT NULL,
    task_type       varchar(64) NOT NULL,
    period_start    timestamptz NOT NULL,
    period_end      timestamptz NOT NULL,
    compliance      double precision NOT NULL,
    report          jsonb NOT NULL,
    severity        varchar(20) NOT NULL CHECK (severity IN ('LOW', 'MEDIUM', 'HIGH', 'CRITICAL')),
    notified        boolean NOT NULL DEFAULT false,
    notified_at     timestamptz,
    notification_id text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (olt_id, task_type, period_start)
);
CREATE INDEX quota_violations_olt_created ON quota_violations (olt_id, created_at);
CREATE INDEX quota_violations_severity ON quota_violations (severity);
CREATE INDEX quota_violations_notified ON quota_violations (notified);

-- Consecutive final failures of each OLT's executions (repeated failures
-- notification); a success resets it.
CREATE TABLE failure_streaks (
    olt_id               text PRIMARY KEY,
    consecutive_failures integer NOT NULL,
    last_execution_id    text NOT NULL,
    last_error           text NOT NULL DEFAULT '',
    updated_at           timestamptz NOT NULL
);

-- Webhooks (configured through the API, which owns this table like the
-- users: operational settings, not pipeline state). secret_enc is sealed
-- with pkg/secret (FACHO_SECRET_KEY), never plaintext.
CREATE TABLE webhooks (
    id         text PRIMARY KEY,
    url        text NOT NULL,
    secret_enc text NOT NULL,
    events     text[] NOT NULL,
    enabled    boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Notifications (outbox): written in the transaction that decided them,
-- with one pending webhook_deliveries row per subscribed webhook, then
-- published on subject (Nats-Msg-Id notify:<id>).
CREATE TABLE notifications (
    id           text PRIMARY KEY,
    kind         text NOT NULL,
    olt_id       text NOT NULL DEFAULT '',
    subject      text NOT NULL,
    payload      bytea NOT NULL,
    created_at   timestamptz NOT NULL,
    published_at timestamptz
);
CREATE INDEX notifications_unpublished ON notifications (created_at) WHERE published_at IS NULL;

-- One delivery of a notification to a webhook, with its attempts: it ends
-- delivered, or failed after the maximum attempts.
CREATE TABLE webhook_deliveries (
    id              bigserial PRIMARY KEY,
    notification_id text NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
    webhook_id      text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    last_error      text NOT NULL DEFAULT '',
    last_status_code integer,
    next_attempt_at timestamptz NOT NULL,
    locked_until    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    last_attempt_at timestamptz,
    delivered_at    timestamptz,
    UNIQUE (notification_id, webhook_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at);
