-- Issue 10: the varbind projection writes an onu_data row only when the
-- ONU really changed. Until now every reading rewrote the row (last_seen,
-- last_execution_id, seen_by, rx_seen_by), so a fleet whose ONUs do not
-- change still cost one row version per ONU per execution.
--
-- What a walk saw is kept per walk instead of per row: onu_walk_seen holds,
-- for each attempt ("<execution_id>:<lease revision>") of a walk, the ONU
-- keys each transaction of it read, and whether it read their Rx power. At
-- the walk's Last batch they say which ONUs the walk did not read (removed)
-- and whose Rx power it did not read (cleared), then they are deleted.
CREATE TABLE onu_walk_seen (
    olt_id    text NOT NULL,
    attempt   text NOT NULL,
    seq       bigint NOT NULL, -- the stream sequence of the transaction's last batch of the attempt
    pon_index bigint[] NOT NULL,
    onu_id    bigint[] NOT NULL,
    rx_read   boolean[] NOT NULL,
    PRIMARY KEY (olt_id, attempt, seq)
);

-- The last complete walk of each OLT's ONU table: every ONU of the OLT not
-- marked removed was read by it, so an ONU's last_seen is the later of its
-- row's (the last change) and this walk's (the API answers that).
CREATE TABLE onu_walks (
    olt_id       text PRIMARY KEY,
    execution_id text NOT NULL,
    seen_at      timestamptz NOT NULL
);

-- A walk in progress at the upgrade marked what it read in seen_by and
-- rx_seen_by: carry that over, so its Last batch does not take the ONUs it
-- read before the upgrade for removed.
INSERT INTO onu_walk_seen (olt_id, attempt, seq, pon_index, onu_id, rx_read)
SELECT olt_id, seen_by, 0, array_agg(pon_index), array_agg(onu_id), array_agg(rx_seen_by IS NOT DISTINCT FROM seen_by)
FROM onu_data WHERE seen_by <> '' GROUP BY olt_id, seen_by;
INSERT INTO onu_walk_seen (olt_id, attempt, seq, pon_index, onu_id, rx_read)
SELECT olt_id, rx_seen_by, -1, array_agg(pon_index), array_agg(onu_id), array_agg(true)
FROM onu_data WHERE rx_seen_by IS NOT NULL AND rx_seen_by <> seen_by GROUP BY olt_id, rx_seen_by;

ALTER TABLE onu_data DROP COLUMN seen_by, DROP COLUMN rx_seen_by;

-- Rows are rewritten only when the ONU changed now: 10 % of each page is
-- room enough for those updates to stay HOT (pruned in place), where 30 %
-- kept for one rewrite per ONU per execution cost a third of the table.
ALTER TABLE onu_data SET (fillfactor = 90);
