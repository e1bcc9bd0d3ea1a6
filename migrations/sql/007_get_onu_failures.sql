-- What a get read and could not read (issue 8): onus is how many ONUs it
-- read (the OLT's discovered set); failed_onus and failed_varbinds count
-- what failed even one OID per request (progressive subdivision);
-- onu_failures lists the first 100 such ONUs as execution.succeeded
-- carries them: [{"instance", "pon_index", "onu_id", "oids", "error"}].
ALTER TABLE executions
    ADD COLUMN onus integer NOT NULL DEFAULT 0,
    ADD COLUMN failed_onus integer NOT NULL DEFAULT 0,
    ADD COLUMN failed_varbinds integer NOT NULL DEFAULT 0,
    ADD COLUMN onu_failures jsonb;
