-- The attempt that last read an Rx power value (or an explicit "no
-- reading") for the ONU, as "<execution_id>:<lease_revision>". When the
-- last batch of a walk of the Rx column arrives, every ONU of the OLT not
-- read by that attempt has no optical row any more (FiberHome and V-SOL
-- omit it for an offline ONU) and its rx_power_dbm is cleared. The lease
-- revision tells the attempts of one execution apart: a row read by a
-- failed first attempt and missing from the successful retry is cleared.
ALTER TABLE onu_data ADD COLUMN rx_seen_by text;
