-- Projector additions: fencing tokens and queue fields on executions,
-- soft deletes of assignments, and the outbox of ONU-change events.

-- lease_revision is the fencing token of the latest event applied to the
-- execution: events carrying an older one come from a stale poller and are
-- ignored. node_id, kind, priority and delay_seconds come from NodeDue, for
-- the queue views.
ALTER TABLE executions
    ADD COLUMN lease_revision bigint NOT NULL DEFAULT 0,
    ADD COLUMN node_id        text NOT NULL DEFAULT '',
    ADD COLUMN kind           text NOT NULL DEFAULT '',
    ADD COLUMN priority       integer NOT NULL DEFAULT 0,
    ADD COLUMN delay_seconds  double precision NOT NULL DEFAULT 0;

ALTER TABLE execution_attempts
    ADD COLUMN lease_revision bigint NOT NULL DEFAULT 0,
    ADD COLUMN duration_ms    bigint;

ALTER TABLE snmp_job_olts
    ADD COLUMN deleted boolean NOT NULL DEFAULT false;

-- ONU-change events written in the transaction that changed onu_data and
-- published after commit (then deleted), so a crash between commit and
-- publish cannot lose them. msg_id is the Nats-Msg-Id: a re-publish inside
-- the stream's duplicate window is dropped by JetStream.
CREATE TABLE onu_event_outbox (
    id         bigserial PRIMARY KEY,
    msg_id     text NOT NULL UNIQUE,
    subject    text NOT NULL,
    payload    bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
