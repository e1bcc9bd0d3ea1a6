-- Issue 10: onu_walk_seen's arrays (about 17 KB for a transaction that read
-- 1,000 ONUs) went through pglz, TOAST's default compression: 2.4 ms of
-- Postgres CPU per insert, the second statement of a steady cycle. lz4
-- compresses them about as well (2.1 MB against 1.3 MB for 1,000 such rows)
-- 15x faster. A server built without lz4 (or older than 14) stores them
-- uncompressed instead (EXTERNAL: about as fast, 18 MB for those rows; the
-- table holds only the walks in progress).
DO $$
BEGIN
    ALTER TABLE onu_walk_seen
        ALTER COLUMN pon_index SET COMPRESSION lz4,
        ALTER COLUMN onu_id SET COMPRESSION lz4,
        ALTER COLUMN rx_read SET COMPRESSION lz4;
EXCEPTION WHEN others THEN
    ALTER TABLE onu_walk_seen
        ALTER COLUMN pon_index SET STORAGE EXTERNAL,
        ALTER COLUMN onu_id SET STORAGE EXTERNAL,
        ALTER COLUMN rx_read SET STORAGE EXTERNAL;
END
$$;
