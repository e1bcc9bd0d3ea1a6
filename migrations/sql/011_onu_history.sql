-- ONU history (issue 11): one row per change of an ONU field, written by
-- the varbind projection in the transaction that changed onu_data. The
-- first reading of an ONU is its first history rows (old_value NULL).
-- field is the ONUState JSON key (serial, status, rx_power_dbm, ...) or
-- removed_at (an ONU a complete walk did not find; back to NULL when it is
-- found again). Values are text: numbers as Go's strconv 'g' format,
-- times RFC 3339 UTC; NULL is "no value".
CREATE TABLE onu_history (
    olt_id       text NOT NULL,
    pon_index    bigint NOT NULL,
    onu_id       bigint NOT NULL,
    field        text NOT NULL,
    old_value    text,
    new_value    text,
    at           timestamptz NOT NULL,
    execution_id text NOT NULL DEFAULT '',
    -- stream_seq: the FACHO_VARBINDS message that made the change.
    stream_seq   bigint NOT NULL,
    PRIMARY KEY (olt_id, pon_index, onu_id, stream_seq, field)
);
CREATE INDEX onu_history_onu_at ON onu_history (olt_id, pon_index, onu_id, at);
CREATE INDEX onu_history_at ON onu_history (at);

-- Per-OLT checkpoints of partitioned projections: the varbind projection
-- applies each OLT's messages in stream order, in parallel across OLTs, so
-- its "already applied" test is per OLT.
CREATE TABLE olt_checkpoints (
    consumer   text NOT NULL,
    olt_id     text NOT NULL,
    last_seq   bigint NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, olt_id)
);

-- Events a projection transaction produced, published after commit, then
-- cleared: one row per projection worker, overwritten by each transaction,
-- so it does not grow the database as the per-event outbox did. A row left
-- non-empty by a crash is published at start (msg ids make that safe).
CREATE TABLE pending_events (
    consumer  text NOT NULL,
    worker    integer NOT NULL,
    events    bytea,
    PRIMARY KEY (consumer, worker)
);

-- onu_data rows are rewritten once per execution (last_seen, seen_by):
-- room in each page keeps those updates HOT, so dead rows are pruned in
-- place instead of bloating the table.
ALTER TABLE onu_data SET (fillfactor = 70);
