-- Sign-in throttling by client address and account name together (issue 11, finding 5): an
-- attacker's failures slow only their own address's tries for that name, with growing
-- delays instead of a lock, and a name that does not exist is throttled like one that does.
-- Replaces the per-account lock (users.failed_logins, users.locked_until).
CREATE TABLE sign_in_throttle (
    -- The client's address as the server sees it (or as a trusted proxy says).
    client          TEXT NOT NULL CHECK (length(client) <= 100),
    -- The user name as typed, trimmed and lower-cased, whether or not such a user exists.
    account         TEXT NOT NULL CHECK (length(account) <= 200),
    -- Tries since the last success (a try counts when it starts; a success deletes the row).
    failures        INTEGER NOT NULL CHECK (failures > 0),
    -- No try from this client for this name is checked before then.
    blocked_until   TIMESTAMPTZ NOT NULL,
    last_failure_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (client, account)
);
CREATE INDEX sign_in_throttle_age ON sign_in_throttle (last_failure_at);

ALTER TABLE users DROP COLUMN failed_logins, DROP COLUMN locked_until;
