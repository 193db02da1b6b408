-- A pass's charges (`charged_s` alone) no longer note the run in `run_changes`: the pass that
-- writes them sets them in its in-memory snapshot (docs/design.md section 7, "Charges from
-- memory"), so re-reading every charged run (1,000 at a time when runs fall due together) is
-- no longer needed. Every other writer of `charged_s` changes the run's state in the same
-- statement, which is still noted. Another replica's charges reach this one through the
-- cursor (`snapshot_cursor`): a pass of another process makes the next pass here reload.
DROP TRIGGER runs_changed_update ON runs;
CREATE TRIGGER runs_changed_update AFTER UPDATE ON runs FOR EACH ROW
    WHEN ((OLD.state IN ('queued', 'starting', 'running') OR NEW.state IN ('queued', 'starting', 'running'))
          AND ROW(OLD.state, OLD.project_id, OLD.cluster_id, OLD.gpu_model_id, OLD.gpus, OLD.queued_at,
                  OLD.min_runtime_s, OLD.time_limit_s, OLD.priority, OLD.started_at, OLD.contract_id)
              IS DISTINCT FROM
              ROW(NEW.state, NEW.project_id, NEW.cluster_id, NEW.gpu_model_id, NEW.gpus, NEW.queued_at,
                  NEW.min_runtime_s, NEW.time_limit_s, NEW.priority, NEW.started_at, NEW.contract_id))
    EXECUTE FUNCTION note_run_change();
