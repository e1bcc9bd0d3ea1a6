-- Every execution ends, and one whose readings were lost does not end in
-- SUCCESS (issue 6).

-- The states an execution may be in (seed 000, plus SKIPPED): PENDING,
-- RUNNING, then one final state. INTERRUPTED: the attempt's lease expired
-- without a terminal event (its poller died mid-run; execution.interrupted).
-- ABORTED: the coordinator cancelled it.
ALTER TABLE executions ADD CONSTRAINT executions_status_check
    CHECK (status IN ('PENDING', 'RUNNING', 'SUCCESS', 'FAILED', 'SKIPPED', 'ABORTED', 'INTERRUPTED'));
ALTER TABLE execution_attempts ADD CONSTRAINT execution_attempts_status_check
    CHECK (status IN ('RUNNING', 'SUCCESS', 'FAILED', 'ABORTED', 'INTERRUPTED'));

-- Varbind batches of an execution the projector could not apply, read from
-- the dead letters of projector-varbinds (consumer projector-dlq), one row
-- per original message. An execution with any is FAILED, whichever of the
-- dead letter and execution.succeeded is projected first;
-- dead_lettered_batches is their count.
CREATE TABLE execution_dead_letters (
    stream           text NOT NULL,
    stream_seq       bigint NOT NULL,
    execution_id     text NOT NULL,
    olt_id           text NOT NULL DEFAULT '',
    reason           text NOT NULL DEFAULT '',
    dead_lettered_at timestamptz NOT NULL,
    PRIMARY KEY (stream, stream_seq)
);
CREATE INDEX execution_dead_letters_execution ON execution_dead_letters (execution_id);

ALTER TABLE executions ADD COLUMN dead_lettered_batches integer NOT NULL DEFAULT 0;
