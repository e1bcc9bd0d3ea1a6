-- OLT health read models (olt.health on facho.olt.<olt_id>.health, projected
-- by the projector's consumer projector-health): the last reading of each
-- OLT (olt_health: chassis, fans, power supplies, uplinks), one row per PON
-- port (olt_pon_health) and the history of their state changes
-- (olt_health_history). stream_seq is the FACHO_OLT sequence of the reading
-- olt_health holds, written in the same transaction as everything the
-- reading changed: an older or redelivered reading changes nothing.
CREATE TABLE IF NOT EXISTS olt_health (
    olt_id         text PRIMARY KEY,
    execution_id   text NOT NULL DEFAULT '',
    job_id         text NOT NULL DEFAULT '',
    observed_at    timestamptz NOT NULL,
    tables         text[] NOT NULL DEFAULT '{}',
    cpu_percent    double precision,
    memory_percent double precision,
    temperature_c  double precision,
    boards         integer NOT NULL DEFAULT 0,
    fans           jsonb NOT NULL DEFAULT '[]',
    psus           jsonb NOT NULL DEFAULT '[]',
    uplinks        jsonb NOT NULL DEFAULT '[]',
    fans_failed    integer NOT NULL DEFAULT 0,
    psus_failed    integer NOT NULL DEFAULT 0,
    pons_down      integer NOT NULL DEFAULT 0,
    updated_at     timestamptz NOT NULL,
    stream_seq     bigint NOT NULL
);

-- One row per PON port the OLT's health tables report; idx is the row
-- index, pon_index the same as an integer (the ONU tables' pon_index where
-- the profile reads a table indexed like them, else -1). A port no longer
-- reported by a reading of the pons table is deleted (a history row says so).
CREATE TABLE IF NOT EXISTS olt_pon_health (
    olt_id        text NOT NULL,
    idx           text NOT NULL,
    pon_index     bigint NOT NULL,
    name          text NOT NULL DEFAULT '',
    admin_state   text NOT NULL DEFAULT '',
    oper_state    text NOT NULL DEFAULT '',
    tx_power_dbm  double precision,
    rx_power_dbm  double precision,
    temperature_c double precision,
    onu_count     bigint,
    observed_at   timestamptz NOT NULL,
    changed_at    timestamptz NOT NULL,
    PRIMARY KEY (olt_id, idx)
);

CREATE INDEX IF NOT EXISTS olt_pon_health_pon ON olt_pon_health (olt_id, pon_index);

-- State changes: a fan, power supply, PON port or uplink whose status or
-- admin/oper state changed, appeared or disappeared (old_value or
-- new_value empty). Numbers (CPU, temperature, optics) are in olt_health and
-- olt_pon_health as last read, not in the history.
CREATE TABLE IF NOT EXISTS olt_health_history (
    id          bigserial PRIMARY KEY,
    olt_id      text NOT NULL,
    component   text NOT NULL CHECK (component IN ('fan', 'psu', 'pon', 'uplink')),
    idx         text NOT NULL,
    name        text NOT NULL DEFAULT '',
    field       text NOT NULL,
    old_value   text NOT NULL DEFAULT '',
    new_value   text NOT NULL DEFAULT '',
    observed_at timestamptz NOT NULL,
    stream_seq  bigint NOT NULL
);

CREATE INDEX IF NOT EXISTS olt_health_history_olt ON olt_health_history (olt_id, observed_at DESC, id DESC);
