-- Workflows (seed 004): on one OLT, a master job and its chained jobs run
-- as one composite node under one lease.
CREATE TABLE workflows (
    id              text PRIMARY KEY,
    name            text NOT NULL,
    olt_id          text NOT NULL,
    master_job_id   text NOT NULL,
    chain_job_ids   text[] NOT NULL,
    stop_on_failure boolean NOT NULL,
    enabled         boolean NOT NULL,
    deleted         boolean NOT NULL DEFAULT false,
    updated_at      timestamptz NOT NULL
);
CREATE INDEX workflows_olt ON workflows (olt_id);
