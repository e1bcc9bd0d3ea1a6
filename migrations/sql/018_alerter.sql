-- The alerter's own state (services/alerter): its evaluation state (one
-- small row per ONU, PON, OLT, brand, silence and active alert), written
-- in the transaction that advances the consumer checkpoint of the event
-- that changed it; its outbox of alert events (published on FACHO_ALERT
-- with Nats-Msg-Id alert:<id>:<state>); and one delivery per receiver and
-- alert event, so each receiver is notified once whatever restarts or
-- replays happen.
CREATE TABLE IF NOT EXISTS alerter_state (
    kind  text NOT NULL,
    key   text NOT NULL,
    state jsonb NOT NULL,
    PRIMARY KEY (kind, key)
);

CREATE TABLE IF NOT EXISTS alerter_outbox (
    seq          bigserial PRIMARY KEY,
    msg_id       text NOT NULL UNIQUE,
    alert_id     text NOT NULL,
    state        text NOT NULL,
    subject      text NOT NULL,
    payload      bytea NOT NULL,
    notify       boolean NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz
);
CREATE INDEX IF NOT EXISTS alerter_outbox_unpublished ON alerter_outbox (seq) WHERE published_at IS NULL;

CREATE TABLE IF NOT EXISTS alerter_deliveries (
    msg_id          text NOT NULL REFERENCES alerter_outbox (msg_id) ON DELETE CASCADE,
    receiver        text NOT NULL,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    last_error      text NOT NULL DEFAULT '',
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz,
    PRIMARY KEY (msg_id, receiver)
);
CREATE INDEX IF NOT EXISTS alerter_deliveries_due ON alerter_deliveries (next_attempt_at) WHERE status = 'pending';
