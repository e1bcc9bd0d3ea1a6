-- The expected runs of an hour come from the scheduling rule (a task's next
-- run is due an interval after its previous run ENDS; pkg/quotaplan), not
-- from 3600 / interval. The tracker keeps what the rule found, so the API
-- can say of a running hour how many runs are still possible:
-- next_due_at, when the run after the hour's last one is due (NULL: not
-- known) and cycle_ms, the step between two opportunities (interval + the
-- hour's mean run time), and quota_missed, the opportunities of the hour
-- (up to its end) no run took.
ALTER TABLE quota_tracker
    ADD COLUMN next_due_at timestamptz,
    ADD COLUMN cycle_ms bigint NOT NULL DEFAULT 0;

-- An assignment's last run (GET /api/v1/assignments last_run_at, the
-- console's "Last run") is the end of the latest run of the job on the OLT
-- that succeeded or failed, read from executions by this index.
CREATE INDEX executions_job_last_run ON executions (olt_id, job_id, finished_at DESC)
    WHERE status IN ('SUCCESS', 'FAILED') AND finished_at IS NOT NULL;
