-- The API's Idempotency-Key of a contract purchase, per buyer, with a SHA-256 of the request
-- it came with: a retry after a lost answer gets the contract it bought, not a second one, and
-- the key reused for another request is refused (as for runs, docs/api.md).
ALTER TABLE contracts ADD COLUMN idempotency_key TEXT, ADD COLUMN idempotency_sha256 BYTEA;
CREATE UNIQUE INDEX contracts_idempotency ON contracts (bought_by, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
