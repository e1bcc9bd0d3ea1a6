-- Why an execution failed, machine readable (execution.failed's cause:
-- timeout, snmp_error, oid_not_increasing, empty_read, no_onus_known,
-- profile_mismatch, lease_lost, shutdown, config, publish); error keeps the
-- operator's text. NULL unless the execution's last attempt failed with a
-- cause (a success, a skip or an abort clears it; failures recorded before
-- the column, and readings dead-lettered after a success, have none).
ALTER TABLE executions ADD COLUMN cause text;
CREATE INDEX executions_cause ON executions (olt_id, cause) WHERE cause IS NOT NULL;
