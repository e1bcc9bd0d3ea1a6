-- Alerts read model: one row per firing of an alert (alert.firing and
-- alert.resolved share an id), rebuilt from FACHO_ALERT like every read
-- model. Incidents are the outage alerts (pon_outage, olt_outage) that
-- group the per-ONU alerts carrying their id. Silences are configuration
-- (facho.config.silence.<id>).
CREATE TABLE IF NOT EXISTS alerts (
    id           text PRIMARY KEY,
    key          text NOT NULL,
    rule         text NOT NULL,
    severity     text NOT NULL,
    state        text NOT NULL CHECK (state IN ('firing', 'resolved')),
    olt_id       text,
    olt_name     text,
    pon_index    bigint,
    pon          text,
    onu_id       bigint,
    serial       text,
    description  text,
    summary      text NOT NULL DEFAULT '',
    cause        text,
    value        double precision,
    unit         text,
    incident_id  text,
    inhibited    boolean NOT NULL DEFAULT false,
    labels       jsonb,
    starts_at    timestamptz NOT NULL,
    ends_at      timestamptz,
    acked_at     timestamptz,
    acked_by     text,
    ack_comment  text,
    stream_seq   bigint NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS alerts_state_idx ON alerts (state, severity, starts_at DESC);
CREATE INDEX IF NOT EXISTS alerts_olt_idx ON alerts (olt_id, state);
CREATE INDEX IF NOT EXISTS alerts_key_idx ON alerts (key, starts_at DESC);
CREATE INDEX IF NOT EXISTS alerts_incident_idx ON alerts (incident_id) WHERE incident_id IS NOT NULL;

CREATE OR REPLACE VIEW incidents AS
SELECT a.id, a.rule, a.severity, a.state, a.olt_id, a.olt_name, a.pon_index, a.pon,
       a.summary, a.starts_at, a.ends_at, a.acked_at, a.acked_by,
       (SELECT count(*) FROM alerts m WHERE m.incident_id = a.id AND m.id <> a.id) AS alerts
FROM alerts a
WHERE a.rule IN ('pon_outage', 'olt_outage');

CREATE TABLE IF NOT EXISTS alert_silences (
    id          text PRIMARY KEY,
    olt_id      text,
    pon         text,
    rule        text,
    starts_at   timestamptz NOT NULL,
    ends_at     timestamptz NOT NULL,
    created_by  text NOT NULL,
    comment     text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    deleted_at  timestamptz,
    stream_seq  bigint NOT NULL
);
