-- Run environment values marked secret (or named like secrets: *TOKEN*, *SECRET*, *KEY*,
-- *PASSWORD*) are kept out of `env`: their names in `secret_env_names` (shown as ••••), their
-- values as one sealed JSON object in `secret_env` (ChaCha20-Poly1305 under the server's
-- secret key, see src/auth/secrets.rs); NULL when the run has none. `tranche serve` moves
-- secret-looking names of older runs out of `env` at start-up.
ALTER TABLE runs
    ADD COLUMN secret_env BYTEA,
    ADD COLUMN secret_env_names TEXT[] NOT NULL DEFAULT '{}',
    ADD CONSTRAINT runs_secret_env_sealed CHECK ((secret_env IS NULL) = (cardinality(secret_env_names) = 0));
