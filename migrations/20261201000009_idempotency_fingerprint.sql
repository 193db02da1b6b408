-- The request an idempotency key was first used with: the SHA-256 of the submission as the
-- API read it (runs::NewRun::fingerprint, its normalised JSON). A repeat of the key with
-- another request is refused (422 idempotency_mismatch) instead of answering with a run the
-- client did not ask for. NULL for runs submitted before this column and for the run form's
-- one-time keys (a form's key is its own; its repeats are always the same form).
ALTER TABLE runs ADD COLUMN idempotency_sha256 BYTEA CHECK (length(idempotency_sha256) = 32);
