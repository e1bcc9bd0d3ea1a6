-- People of the console and the API (issue 12). Not a read model: the API
-- owns these tables (they hold no pipeline state and are not rebuilt from
-- the streams). No secret in plaintext: passwords are argon2id hashes,
-- session ids and API tokens are stored as their SHA-256.

CREATE TABLE users (
    id            bigserial PRIMARY KEY,
    username      text NOT NULL UNIQUE,
    role          text NOT NULL CHECK (role IN ('admin', 'operator', 'viewer')),
    password_hash text NOT NULL,
    disabled      boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- A console login. id_hash = sha256(cookie value); csrf is the form token
-- of the session (not a credential on its own: it is useless without the
-- cookie).
CREATE TABLE sessions (
    id_hash    bytea PRIMARY KEY,
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    csrf       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expires ON sessions (expires_at);

-- API tokens of a user; their scope is the user's role.
CREATE TABLE api_tokens (
    id           text PRIMARY KEY,
    user_id      bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         text NOT NULL,
    token_hash   bytea NOT NULL UNIQUE,
    prefix       text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_tokens_user ON api_tokens (user_id);
