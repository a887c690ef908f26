-- lakegate demo schema: an application database of users, their transactions and per-transaction metadata.
-- Idempotent: `lakegate demo` runs it on every start.

CREATE TABLE IF NOT EXISTS users (
    id            bigserial PRIMARY KEY,
    email         text NOT NULL UNIQUE,
    full_name     text NOT NULL,
    country       char(2) NOT NULL,
    profile       jsonb NOT NULL DEFAULT '{}',          -- plan, marketing consent, preferences
    registered_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS transactions (
    id          bigserial PRIMARY KEY,
    user_id     bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    amount      numeric(12,2) NOT NULL,
    currency    char(3) NOT NULL,
    status      text NOT NULL CHECK (status IN ('pending', 'completed', 'failed', 'refunded')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS transactions_user_id ON transactions (user_id);
CREATE INDEX IF NOT EXISTS transactions_created_at ON transactions (created_at);

CREATE TABLE IF NOT EXISTS transaction_metadata (
    transaction_id bigint PRIMARY KEY REFERENCES transactions (id) ON DELETE CASCADE,
    channel        text NOT NULL,                       -- web, ios, android, api, pos
    ip             inet,
    device         text,
    flagged        boolean NOT NULL DEFAULT false,
    reason         text                                 -- why it was flagged, e.g. 'suspicious activity'
);
