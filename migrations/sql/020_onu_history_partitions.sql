-- onu_history at scale: partitioned by time (native declarative
-- partitioning, one partition per UTC day), so retention drops whole days
-- instead of deleting rows; and hourly rollups of the numeric fields (min,
-- max and last value per ONU, field and hour) that serve charts over long
-- ranges without reading every change.
--
-- Daily partitions are named <table>_pYYYYMMDD and cover [day, day + 1)
-- in UTC. The projector holding the history maintenance lock creates them
-- ahead (services/projector/historypartitions.go), moves into a new day's
-- partition the rows the default partition took for it, and drops the
-- days older than the retention. The default partition takes any row no
-- daily partition covers (a replay of old history, a clock far ahead), so
-- no insert ever fails.

-- The existing table keeps its rows and becomes the partition of
-- everything before today (dropped once all of it is older than the
-- retention; rows of it older than that are deleted in batches meanwhile).
ALTER TABLE onu_history RENAME TO onu_history_legacy;
ALTER TABLE onu_history_legacy RENAME CONSTRAINT onu_history_pkey TO onu_history_legacy_pkey;
ALTER INDEX onu_history_onu_at RENAME TO onu_history_legacy_onu_at;
ALTER INDEX onu_history_at RENAME TO onu_history_legacy_at;

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
    -- A partitioned table's unique key includes the partition key; a
    -- message's changes all have the message's time, so this is as
    -- unique as the key without at.
    PRIMARY KEY (olt_id, pon_index, onu_id, stream_seq, field, at)
) PARTITION BY RANGE (at);
CREATE INDEX onu_history_onu_at ON onu_history (olt_id, pon_index, onu_id, at);
CREATE INDEX onu_history_at ON onu_history (at);
CREATE TABLE onu_history_default PARTITION OF onu_history DEFAULT;

-- Hourly rollups of the numeric fields (rx_power_dbm, tx_power_dbm,
-- olt_rx_power_dbm, distance_m, temperature_c, voltage_v, bias_ma): one
-- row per ONU, field and UTC hour in which the field changed. min_value
-- and max_value span the values the field held during the hour (the value
-- before its first change of the hour, old_value, included); last_value
-- is the value at the end of the hour (NULL: no reading), set by the
-- change of last_at / last_seq. An hour without a row held the previous
-- hour's last value throughout. Written by the varbind projection in the
-- transaction that writes the raw rows; `facho rebuild
-- onu_history_hourly` recomputes it from onu_history.
CREATE TABLE onu_history_hourly (
    olt_id     text NOT NULL,
    pon_index  bigint NOT NULL,
    onu_id     bigint NOT NULL,
    field      text NOT NULL,
    hour       timestamptz NOT NULL,
    min_value  double precision,
    max_value  double precision,
    last_value double precision,
    last_at    timestamptz NOT NULL,
    last_seq   bigint NOT NULL,
    PRIMARY KEY (olt_id, pon_index, onu_id, field, hour)
) PARTITION BY RANGE (hour);
CREATE TABLE onu_history_hourly_default PARTITION OF onu_history_hourly DEFAULT;

DO $$
DECLARE
    today timestamptz := date_trunc('day', now(), 'UTC');
    upper timestamptz;
    d timestamptz;
BEGIN
    IF EXISTS (SELECT 1 FROM onu_history_legacy) THEN
        SELECT greatest(today, date_trunc('day', max(at), 'UTC') + interval '24 hours') INTO upper FROM onu_history_legacy;
        -- The partitioned key (with at, built by the attach) replaces
        -- its key.
        ALTER TABLE onu_history_legacy DROP CONSTRAINT onu_history_legacy_pkey;
        EXECUTE format('ALTER TABLE onu_history ATTACH PARTITION onu_history_legacy FOR VALUES FROM (MINVALUE) TO (%L)', upper);
        -- Their hourly rollups, from the rows kept.
        INSERT INTO onu_history_hourly (olt_id, pon_index, onu_id, field, hour, min_value, max_value, last_value, last_at, last_seq)
        SELECT olt_id, pon_index, onu_id, field, date_trunc('hour', at, 'UTC'),
            min(least(o, n)), max(greatest(o, n)),
            (array_agg(n ORDER BY at DESC, stream_seq DESC))[1], max(at), (array_agg(stream_seq ORDER BY at DESC, stream_seq DESC))[1]
        FROM (SELECT olt_id, pon_index, onu_id, field, at, stream_seq,
                CASE WHEN old_value ~ '^-?[0-9.]+([eE][-+]?[0-9]+)?$' THEN old_value::double precision END o,
                CASE WHEN new_value ~ '^-?[0-9.]+([eE][-+]?[0-9]+)?$' THEN new_value::double precision END n
              FROM onu_history_legacy
              WHERE field IN ('rx_power_dbm', 'tx_power_dbm', 'olt_rx_power_dbm', 'distance_m', 'temperature_c', 'voltage_v', 'bias_ma')) c
        GROUP BY 1, 2, 3, 4, 5;
    ELSE
        DROP TABLE onu_history_legacy;
        upper := today;
    END IF;
    -- Today and the next week, for both tables.
    d := upper;
    WHILE d < today + interval '192 hours' LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF onu_history FOR VALUES FROM (%L) TO (%L)',
            'onu_history_p' || to_char(d AT TIME ZONE 'UTC', 'YYYYMMDD'), d, d + interval '24 hours');
        d := d + interval '24 hours';
    END LOOP;
    d := today;
    WHILE d < today + interval '192 hours' LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF onu_history_hourly FOR VALUES FROM (%L) TO (%L)',
            'onu_history_hourly_p' || to_char(d AT TIME ZONE 'UTC', 'YYYYMMDD'), d, d + interval '24 hours');
        d := d + interval '24 hours';
    END LOOP;
END
$$;
