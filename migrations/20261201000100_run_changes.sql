-- Incremental scheduling passes (docs/design.md section 7, "Incremental snapshot"): every
-- change to what the scheduling core reads of a run (its queue fields while queued, its
-- placement and protection while starting or running) leaves the run's id in `run_changes`,
-- in the same transaction. The pass consumes the rows it can see with one DELETE ... RETURNING
-- and re-reads those runs; a row of a transaction still open stays until that transaction
-- commits and is consumed by a later pass, so commit order cannot hide a change.
CREATE TABLE run_changes (
    id      BIGSERIAL PRIMARY KEY,
    run_id  BIGINT NOT NULL
);

-- Who holds the in-memory snapshot and how many passes it consumed: a pass whose process did
-- not write the current row (another replica, a restart, a rolled-back pass) reloads in full.
CREATE TABLE snapshot_cursor (
    id      BOOLEAN PRIMARY KEY DEFAULT true CHECK (id),
    holder  BIGINT,
    passes  BIGINT NOT NULL DEFAULT 0
);
INSERT INTO snapshot_cursor DEFAULT VALUES;

CREATE FUNCTION note_run_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO run_changes (run_id) VALUES (OLD.id);
    ELSE
        INSERT INTO run_changes (run_id) VALUES (NEW.id);
    END IF;
    RETURN NULL;
END $$;

-- The fields the snapshot reads; WHEN clauses keep other updates (waiting reasons, idle
-- marks) free of any extra write.
CREATE TRIGGER runs_changed_insert AFTER INSERT ON runs FOR EACH ROW
    WHEN (NEW.state IN ('queued', 'starting', 'running'))
    EXECUTE FUNCTION note_run_change();
CREATE TRIGGER runs_changed_update AFTER UPDATE ON runs FOR EACH ROW
    WHEN ((OLD.state IN ('queued', 'starting', 'running') OR NEW.state IN ('queued', 'starting', 'running'))
          AND ROW(OLD.state, OLD.project_id, OLD.cluster_id, OLD.gpu_model_id, OLD.gpus, OLD.queued_at,
                  OLD.min_runtime_s, OLD.time_limit_s, OLD.priority, OLD.started_at, OLD.contract_id, OLD.charged_s)
              IS DISTINCT FROM
              ROW(NEW.state, NEW.project_id, NEW.cluster_id, NEW.gpu_model_id, NEW.gpus, NEW.queued_at,
                  NEW.min_runtime_s, NEW.time_limit_s, NEW.priority, NEW.started_at, NEW.contract_id, NEW.charged_s))
    EXECUTE FUNCTION note_run_change();
CREATE TRIGGER runs_changed_delete AFTER DELETE ON runs FOR EACH ROW
    WHEN (OLD.state IN ('queued', 'starting', 'running'))
    EXECUTE FUNCTION note_run_change();

-- A running run's placement is its GPU holds: any change to them is a change of the run.
CREATE FUNCTION note_hold_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO run_changes (run_id) SELECT DISTINCT run_id FROM old_holds;
    ELSE
        INSERT INTO run_changes (run_id) SELECT DISTINCT run_id FROM new_holds;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER gpu_holds_inserted AFTER INSERT ON gpu_holds REFERENCING NEW TABLE AS new_holds
    FOR EACH STATEMENT EXECUTE FUNCTION note_hold_change();
CREATE TRIGGER gpu_holds_deleted AFTER DELETE ON gpu_holds REFERENCING OLD TABLE AS old_holds
    FOR EACH STATEMENT EXECUTE FUNCTION note_hold_change();
