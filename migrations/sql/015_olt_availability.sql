-- OLT availability read model: the last availability of each OLT
-- (olt.availability on facho.olt.<olt_id>.availability), projected by the
-- projector (consumer projector-olt). stream_seq is the FACHO_OLT sequence
-- of the event the row holds, written in the same transaction: an older or
-- redelivered event changes nothing. An OLT never probed has no row.
CREATE TABLE IF NOT EXISTS olt_availability (
    olt_id        text PRIMARY KEY,
    state         text NOT NULL CHECK (state IN ('available', 'unreachable', 'unavailable')),
    previous      text NOT NULL DEFAULT '',
    since         timestamptz NOT NULL,
    last_error    text NOT NULL DEFAULT '',
    source        text NOT NULL DEFAULT '',
    execution_id  text NOT NULL DEFAULT '',
    failed_checks integer NOT NULL DEFAULT 0,
    observed_at   timestamptz,
    updated_at    timestamptz NOT NULL,
    stream_seq    bigint NOT NULL
);

CREATE INDEX IF NOT EXISTS olt_availability_state ON olt_availability (state);
