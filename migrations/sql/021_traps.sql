-- The traps read model (services/projector traps.go): the last traps of
-- each OLT from FACHO_TRAP, raw (varbinds as received) and, where the
-- vendor profile maps the trap OID, decoded. One row per trap (trap_id is
-- the trap.received's Nats-Msg-Id; its trap.decoded fills the decoded
-- columns of the same row, whichever comes first). Bounded: the projector
-- keeps the newest FACHO_TRAPS_KEEP rows of each OLT.
CREATE TABLE IF NOT EXISTS traps (
    trap_id     text PRIMARY KEY,
    olt_id      text NOT NULL,
    received_at timestamptz NOT NULL,
    version     text NOT NULL DEFAULT '',
    source      text NOT NULL DEFAULT '',
    trap_oid    text NOT NULL DEFAULT '',
    varbinds    jsonb,
    kind        text,
    rule        text,
    pon_index   bigint,
    onu_id      bigint,
    onu_index   text,
    port_name   text,
    -- applied: the decoded trap changed the ONU's status in onu_data.
    applied     boolean NOT NULL DEFAULT false,
    stream_seq  bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS traps_olt_seq ON traps (olt_id, stream_seq DESC);

-- What made an onu_history row: a poll (stream_seq is the FACHO_VARBINDS
-- message) or a trap (source 'trap', stream_seq is minus the FACHO_TRAP
-- message's sequence, so the two never collide in the primary key).
ALTER TABLE onu_history ADD COLUMN IF NOT EXISTS source text NOT NULL DEFAULT 'poll';
