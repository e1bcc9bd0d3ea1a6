-- Hourly rollups per PON (charts of a PON over long ranges): one row per
-- PON, numeric field and UTC hour in which one of its ONUs had a row in
-- onu_history_hourly. min_value and max_value are the least and greatest
-- of its ONUs' rows of the hour, onus how many ONUs have a row in it: the
-- rows of onu_history_hourly aggregated by PON, so a 30-day chart of a
-- PON reads 720 rows instead of one per ONU and hour. Written by the
-- varbind projection in the statement that writes onu_history_hourly;
-- `facho rebuild onu_history_hourly` recomputes it with that table.
-- Partitioned by UTC day like onu_history_hourly, with the same days,
-- retention and maintenance (pon_history_hourly_pYYYYMMDD, a default
-- partition for any row no day covers).
CREATE TABLE pon_history_hourly (
    olt_id     text NOT NULL,
    pon_index  bigint NOT NULL,
    field      text NOT NULL,
    hour       timestamptz NOT NULL,
    min_value  double precision,
    max_value  double precision,
    onus       bigint NOT NULL,
    -- The values in the key's index: a chart reads the index only (on
    -- the pages vacuum marked all-visible), not a heap page per hour (a
    -- PON's rows of a day are spread among every other PON's).
    PRIMARY KEY (olt_id, pon_index, field, hour) INCLUDE (min_value, max_value, onus)
) PARTITION BY RANGE (hour);
CREATE TABLE pon_history_hourly_default PARTITION OF pon_history_hourly DEFAULT;

DO $$
DECLARE
    p record;
    d timestamptz;
BEGIN
    -- The days onu_history_hourly has partitions of (today and the next
    -- week at least, made by migration 020 or the maintenance since).
    FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'onu_history_hourly'::regclass AND c.relname ~ '^onu_history_hourly_p[0-9]{8}$' LOOP
        d := to_date(right(p.relname, 8), 'YYYYMMDD')::timestamp AT TIME ZONE 'UTC';
        EXECUTE format('CREATE TABLE %I PARTITION OF pon_history_hourly FOR VALUES FROM (%L) TO (%L)',
            'pon_history_hourly_p' || right(p.relname, 8), d, d + interval '24 hours');
    END LOOP;
END
$$;

-- The rollups already there.
INSERT INTO pon_history_hourly (olt_id, pon_index, field, hour, min_value, max_value, onus)
SELECT olt_id, pon_index, field, hour, min(min_value), max(max_value), count(*)
FROM onu_history_hourly GROUP BY 1, 2, 3, 4;

-- The same for an ONU's chart: onu_history_hourly's key carries the
-- values a chart reads, so 30 days of an ONU read about 30 index pages
-- instead of 720 heap pages (an ONU's rows of a day are spread among
-- every other ONU's, written as the hours go by). Rebuilds the key's
-- index of every partition.
ALTER TABLE onu_history_hourly DROP CONSTRAINT onu_history_hourly_pkey,
    ADD PRIMARY KEY (olt_id, pon_index, onu_id, field, hour) INCLUDE (min_value, max_value, last_value);
