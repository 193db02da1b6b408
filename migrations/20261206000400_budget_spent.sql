-- A running run whose project's balance ran out goes on as unallocated (docs/design.md
-- section 2: free, never protected, preemptible by any allocated run): `budget_spent` says so
-- for the current attempt. It is set with the charge that could not be paid in full and
-- cleared when the run starts again. Unlike `charged_s` it notes the run in `run_changes`,
-- so the core sees the run as unallocated from the next pass (it changes once an attempt).
ALTER TABLE runs ADD COLUMN budget_spent BOOLEAN NOT NULL DEFAULT false;

DROP TRIGGER runs_changed_update ON runs;
CREATE TRIGGER runs_changed_update AFTER UPDATE ON runs FOR EACH ROW
    WHEN ((OLD.state IN ('queued', 'starting', 'running') OR NEW.state IN ('queued', 'starting', 'running'))
          AND ROW(OLD.state, OLD.project_id, OLD.cluster_id, OLD.gpu_model_id, OLD.gpus, OLD.queued_at,
                  OLD.min_runtime_s, OLD.time_limit_s, OLD.priority, OLD.started_at, OLD.contract_id,
                  OLD.budget_spent)
              IS DISTINCT FROM
              ROW(NEW.state, NEW.project_id, NEW.cluster_id, NEW.gpu_model_id, NEW.gpus, NEW.queued_at,
                  NEW.min_runtime_s, NEW.time_limit_s, NEW.priority, NEW.started_at, NEW.contract_id,
                  NEW.budget_spent))
    EXECUTE FUNCTION note_run_change();
