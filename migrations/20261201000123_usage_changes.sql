-- Incremental fair-share usage (docs/design.md section 7, "Usage window"): every usage posting
-- leaves a copy of what the sums need in `usage_changes`, in the same transaction. The pass
-- consumes the rows it can see in the same statement that reads the postings that left the
-- window since its last pass, so its usage sums follow the ledger without summing a week of
-- postings each pass; a row of a transaction still open stays for a later pass.
CREATE TABLE usage_changes (
    posting_id   BIGINT NOT NULL,
    project_id   BIGINT NOT NULL,
    gpu_model_id BIGINT NOT NULL,
    gpu_seconds  BIGINT NOT NULL,
    at           TIMESTAMPTZ NOT NULL
);

CREATE FUNCTION note_usage_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO usage_changes (posting_id, project_id, gpu_model_id, gpu_seconds, at)
    SELECT id, project_id, gpu_model_id, gpu_seconds, at FROM new_postings
    WHERE kind = 'usage' AND gpu_model_id IS NOT NULL AND project_id IS NOT NULL;
    RETURN NULL;
END $$;
CREATE TRIGGER ledger_usage_noted AFTER INSERT ON ledger_postings REFERENCING NEW TABLE AS new_postings
    FOR EACH STATEMENT EXECUTE FUNCTION note_usage_postings();

-- The postings leaving the window are found by their instant.
CREATE INDEX ledger_usage_at ON ledger_postings (at) WHERE kind = 'usage';
