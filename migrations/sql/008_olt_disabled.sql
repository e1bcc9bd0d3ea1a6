-- Why and when the planner disabled an OLT itself (consecutive failed
-- executions, seed 001); empty and NULL when a person set enabled.
ALTER TABLE olts ADD COLUMN disabled_reason text NOT NULL DEFAULT '';
ALTER TABLE olts ADD COLUMN disabled_at timestamptz;
